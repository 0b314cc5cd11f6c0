//! What the command line asks of a registry besides loading: what it
//! publishes for a reference (`airlock inspect oci://…`, from the manifest
//! alone) and pushing a publication (`airlock publish`).

use bytes::Bytes;

use super::layout::{MANIFEST_MEDIA_TYPE, Manifest, Publication};
use super::reference::OciReference;
use super::registry::{RegistryError, block_on};
use super::resolve::{Cause, Net, Published, Resolver, SourceError};
use super::signature::PublicKey;
use super::store::digest_of;

impl Resolver {
    /// What the registry publishes for `oci` (manifest and annotations),
    /// without fetching the component; with `key`, whether its signature
    /// passes.
    pub fn published(
        &self,
        oci: &OciReference,
        key: Option<&PublicKey>,
    ) -> Result<Published, SourceError> {
        let wrap = |cause| SourceError {
            reference: oci.to_string(),
            cause,
        };
        let net = Net::new(self, oci);
        let tag = oci.manifest_ref();
        let (bytes, digest) = net.manifest(tag).map_err(wrap)?.ok_or_else(|| {
            wrap(Cause::Registry(RegistryError::NotFound {
                what: format!("manifest {tag}"),
                url: oci.to_string(),
            }))
        })?;
        let manifest = Manifest::parse(&bytes).map_err(|e| wrap(Cause::Invalid(e)))?;
        let locked = match oci.digest {
            Some(_) => None,
            None => self.lock_entry(&oci.to_string()).map_err(wrap)?,
        };
        let signature = key.map(|key| self.verify(&net, &digest, key).map(|_| ()));
        Ok(Published {
            digest,
            manifest,
            locked,
            signature,
        })
    }

    /// Pushes a publication to `oci` (its tag, or its digest, which must
    /// then be the manifest's); returns the manifest's digest.
    pub fn publish(
        &self,
        oci: &OciReference,
        publication: &Publication,
    ) -> Result<String, SourceError> {
        let wrap = |cause| SourceError {
            reference: oci.to_string(),
            cause,
        };
        let artifact = publication.artifact();
        let manifest_digest = digest_of(&artifact.manifest);
        if let Some(digest) = &oci.digest
            && *digest != manifest_digest
        {
            return Err(wrap(Cause::Invalid(format!(
                "the manifest to publish is {manifest_digest}, not {digest}; publish to a tag"
            ))));
        }
        let net = Net::new(self, oci);
        let registry = &net.registry;
        let component = Bytes::copy_from_slice(publication.component);
        let work = async {
            registry
                .push_blob(
                    &digest_of(&artifact.config),
                    Bytes::from(artifact.config.clone()),
                )
                .await?;
            registry
                .push_blob(&digest_of(publication.component), component)
                .await?;
            registry
                .push_manifest(
                    oci.manifest_ref(),
                    Bytes::from(artifact.manifest.clone()),
                    MANIFEST_MEDIA_TYPE,
                )
                .await
        };
        block_on(work)
            .map_err(|e| wrap(Cause::Network(e.to_string())))?
            .map_err(|e| wrap(Cause::Registry(e)))
    }
}
