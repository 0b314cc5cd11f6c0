//! `airlock publish`'s `--server-*` flags: what a publisher gives to list
//! the component in the official MCP Registry, checked before anything is
//! pushed (a refusal pushes nothing), and the `server.json` written once
//! the push succeeded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::listing::{self, Listing, NAME_ANNOTATION};
use crate::source::OciReference;

/// Listing in the official MCP Registry (registry.modelcontextprotocol.io).
#[derive(clap::Args)]
#[command(next_help_heading = "Listing in the MCP Registry")]
pub struct ListingArgs {
    /// List it in the MCP Registry under NAME (reverse-DNS NAMESPACE/NAME:
    /// io.github.USER/NAME after `mcp-publisher login github`, or
    /// com.example/NAME for a domain you prove). Adds the ownership
    /// annotation io.modelcontextprotocol.server.name=NAME (also as a config
    /// label) and writes server.json.
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
    /// Where to write server.json [default: server.json beside FILE.wasm].
    #[arg(long, value_name = "PATH", requires = "server_name")]
    server_json: Option<PathBuf>,
    /// server.json's version, a semantic version [default: the tag of REF].
    #[arg(long, value_name = "VERSION", requires = "server_name")]
    server_version: Option<String>,
    /// server.json's description, at most 100 characters [default: the
    /// manifest's org.opencontainers.image.description: "airlock tools: …"
    /// or what --annotation set].
    #[arg(long, value_name = "TEXT", requires = "server_name")]
    server_description: Option<String>,
}

/// What the flags asked for, checked.
pub struct Plan {
    pub name: String,
    version: String,
    description: Option<String>,
    path: PathBuf,
}

impl ListingArgs {
    /// The listing asked for, if any, checked against the registry's rules
    /// before anything is loaded or pushed; adds the ownership annotation
    /// to `annotations`. A warning says when the registry will not take a
    /// package from `oci`'s registry.
    pub fn plan(
        &self,
        file: &Path,
        oci: &OciReference,
        annotations: &mut BTreeMap<String, String>,
    ) -> Result<Option<Plan>, String> {
        let Some(name) = &self.server_name else {
            return Ok(None);
        };
        listing::check_name(name)?;
        if let Some(other) = annotations.get(NAME_ANNOTATION)
            && other != name
        {
            return Err(format!(
                "--annotation {NAME_ANNOTATION}={other} names another server than \
                 --server-name {name}: drop the annotation, --server-name sets it"
            ));
        }
        let version = match &self.server_version {
            Some(version) => {
                listing::check_version(version, false)?;
                version.clone()
            }
            None => {
                let tag = oci.tag.as_deref().unwrap_or("latest");
                listing::check_version(tag, true)?;
                tag.to_string()
            }
        };
        if let Some(description) = &self.server_description {
            listing::check_description(description, true)?;
        }
        if oci.plain_http || !listing::accepted_registry(&oci.registry) {
            eprintln!(
                "warning: the MCP Registry takes oci packages only over HTTPS from {}; \
                 `mcp-publisher publish` will refuse a server.json naming {}",
                listing::accepted_registries(),
                oci.registry
            );
        }
        annotations.insert(NAME_ANNOTATION.to_string(), name.clone());
        let path = self
            .server_json
            .clone()
            .unwrap_or_else(|| file.parent().unwrap_or(Path::new("")).join("server.json"));
        Ok(Some(Plan {
            name: name.clone(),
            version,
            description: self.server_description.clone(),
            path,
        }))
    }
}

impl Plan {
    /// The labels the config carries: the registry reads the ownership
    /// mark from the config's labels, as from a container image's.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(NAME_ANNOTATION.to_string(), self.name.clone())])
    }

    /// The listing of the manifest with `annotations` (its final ones) and
    /// `digest`, checked against the pinned schema: an error says what to
    /// change, before anything is pushed.
    pub fn listing(
        &self,
        oci: &OciReference,
        digest: &str,
        annotations: &BTreeMap<String, String>,
    ) -> Result<Listing, String> {
        let annotation = |key: &str| annotations.get(key).map(String::as_str);
        let description = match &self.description {
            Some(description) => description.clone(),
            None => {
                let description = annotation("org.opencontainers.image.description")
                    .unwrap_or_default()
                    .to_string();
                listing::check_description(&description, false)?;
                description
            }
        };
        let listing = Listing {
            name: self.name.clone(),
            title: annotation("org.opencontainers.image.title").and_then(listing::title),
            description,
            version: self.version.clone(),
            reference: oci.clone(),
            digest: digest.to_string(),
            source: annotation("org.opencontainers.image.source").and_then(listing::repository_url),
        };
        listing::validate(&listing.document()).map_err(|errors| {
            format!(
                "the server.json for {} does not validate against the MCP Registry's schema \
                 ({}):\n  {}",
                self.name,
                listing::SCHEMA_URL,
                errors.join("\n  ")
            )
        })?;
        Ok(listing)
    }

    /// Writes `listing`'s server.json; the lines `airlock publish` prints
    /// about it, with what to run next.
    pub fn write(&self, listing: &Listing) -> Result<String, String> {
        let text = serde_json::to_string_pretty(&listing.document()).unwrap_or_default() + "\n";
        std::fs::write(&self.path, text).map_err(|err| {
            format!(
                "published, but cannot write {}: {err}; pass --server-json PATH to write it \
                 elsewhere (publishing again gives the same digest with SOURCE_DATE_EPOCH set)",
                self.path.display()
            )
        })?;
        let folder = match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => format!(" in {}", parent.display()),
            _ => String::new(),
        };
        let login = match self.name.strip_prefix("io.github.") {
            Some(_) => "mcp-publisher login github".to_string(),
            None => {
                let namespace = self.name.split('/').next().unwrap_or_default();
                let domain: Vec<&str> = namespace.rsplit('.').collect();
                format!("mcp-publisher login dns --domain {}", domain.join("."))
            }
        };
        Ok(format!(
            "  listing    {} ({NAME_ANNOTATION} on the manifest and the config)\n  \
             server.json {} (valid against the MCP Registry's schema 2025-12-11)\n  \
             next       {login}, then `mcp-publisher publish`{folder}\n",
            self.name,
            self.path.display(),
        ))
    }
}
