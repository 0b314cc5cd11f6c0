//! Cosign-compatible key-based signatures: the public key (`cosign.pub`,
//! ECDSA P-256 in a PEM `PUBLIC KEY` block), the simple-signing payload
//! that names the signed manifest digest, and the check that one of an
//! artifact's signatures is by the key and over this artifact.
//!
//! Cosign keeps the signatures of manifest `sha256:HEX` in the same
//! repository under the tag `sha256-HEX.sig`: a manifest whose layers are
//! payloads (`application/vnd.dev.cosign.simplesigning.v1+json`), each with
//! its signature (base64 DER ECDSA over the payload's SHA-256) in the
//! annotation `dev.cosignproject.cosign/signature`. Pure: fetching them is
//! the registry's part. Keyless signatures (Fulcio certificates, Rekor
//! entries) are not verified: a policy names a key.

use std::path::Path;

use base64::Engine as _;
use ring::signature::{ECDSA_P256_SHA256_ASN1, UnparsedPublicKey};
use serde::Deserialize;

/// The media type of a cosign signature payload layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `critical.type` of a cosign payload.
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// The DER header of a P-256 `SubjectPublicKeyInfo`: SEQUENCE { SEQUENCE {
/// id-ecPublicKey, prime256v1 }, BIT STRING }, before the 65-byte point.
const P256_SPKI_HEADER: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A cosign public key and where it came from (for messages).
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// The uncompressed point (0x04, X, Y).
    point: Vec<u8>,
    /// The key file as the policy names it.
    pub label: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublicKey")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl PublicKey {
    /// Reads a key file (`cosign.pub`).
    pub fn read(path: &Path) -> Result<PublicKey, String> {
        let text =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        PublicKey::from_pem(&text, &path.display().to_string())
    }

    /// A PEM `PUBLIC KEY` holding an ECDSA P-256 key (what `cosign
    /// generate-key-pair` writes to `cosign.pub`).
    pub fn from_pem(pem: &[u8], label: &str) -> Result<PublicKey, String> {
        use rustls::pki_types::SubjectPublicKeyInfoDer;
        use rustls::pki_types::pem::PemObject as _;
        let spki = SubjectPublicKeyInfoDer::from_pem_slice(pem).map_err(|e| {
            format!("{label} holds no PEM PUBLIC KEY block ({e}); expected a cosign.pub")
        })?;
        let der: &[u8] = spki.as_ref();
        match der.strip_prefix(&P256_SPKI_HEADER[..]) {
            Some(point) if point.len() == 65 && point[0] == 0x04 => Ok(PublicKey {
                point: point.to_vec(),
                label: label.to_string(),
            }),
            _ => Err(format!(
                "{label} is not an ECDSA P-256 public key; airlock verifies cosign's \
                 key-based signatures (cosign generate-key-pair)"
            )),
        }
    }

    /// Whether `signature` (base64 DER) is this key's over `payload`.
    fn verifies(&self, payload: &[u8], signature: &str) -> bool {
        let Ok(der) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
            return false;
        };
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(payload, &der)
            .is_ok()
    }
}

/// One signature found for an artifact: a payload and its signature.
#[derive(Debug, Clone)]
pub struct Signature {
    pub payload: Vec<u8>,
    /// Base64 DER, from the layer's annotation.
    pub signature: String,
}

/// Why an artifact's signatures do not satisfy a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "it is unsigned: the registry has no cosign signature for {digest} (tag {tag}); \
         sign it with `cosign sign --key KEY`, or stop requiring a signature for it (the \
         policy's `verify`, or --key on the command line)"
    )]
    Unsigned { digest: String, tag: String },
    #[error(
        "it is signed, but not by {key}: none of its {count} signature(s) verifies with that key"
    )]
    OtherKey { key: String, count: usize },
    #[error(
        "the signature by {key} is over {signed}, not over this artifact ({digest}); \
         someone copied another artifact's signature"
    )]
    OtherDigest {
        key: String,
        signed: String,
        digest: String,
    },
    #[error(
        "a signature by {key} verifies, but what it signs is not a cosign image signature \
         ({why}); sign the artifact with `cosign sign --key KEY`, not `cosign sign-blob` or \
         another tool's payload"
    )]
    NotImagePayload { key: String, why: String },
}

/// The tag cosign keeps the signatures of manifest `digest` under.
pub fn signature_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

/// Checks that one of `signatures` is by `key` and names manifest
/// `digest`. A payload naming another digest is refused even when the
/// signature is good: it signs another artifact.
pub fn verify(key: &PublicKey, digest: &str, signatures: &[Signature]) -> Result<(), Refusal> {
    // Its span (when exporting) names the key's label and how many
    // signatures were weighed; refused: error.type `refused`.
    let checking = crate::telemetry::phase(
        "airlock.signature.verify",
        crate::telemetry::SpanKind::Internal,
        || {
            vec![
                crate::telemetry::KeyValue::new("airlock.signature.key", key.label.clone()),
                crate::telemetry::KeyValue::new("airlock.signature.count", signatures.len() as i64),
            ]
        },
    );
    let verdict = weigh(key, digest, signatures);
    if verdict.is_err() {
        checking.failed("refused");
    }
    verdict
}

/// [`verify`]'s verdict.
fn weigh(key: &PublicKey, digest: &str, signatures: &[Signature]) -> Result<(), Refusal> {
    let mut other_digest = None;
    // A signature by the key over something else than an image signature:
    // said as such, not as "not signed by that key".
    let mut not_image = None;
    for signature in signatures {
        if !key.verifies(&signature.payload, &signature.signature) {
            continue;
        }
        let payload = match serde_json::from_slice::<Payload>(&signature.payload) {
            Ok(payload) => payload,
            Err(err) => {
                not_image = Some(format!(
                    "its payload is not a simple-signing document: {err}"
                ));
                continue;
            }
        };
        if payload.critical.kind != PAYLOAD_TYPE {
            // The registry's text: escaped and clipped.
            let kind: String = payload.critical.kind.chars().take(80).collect();
            not_image = Some(format!(
                "its payload type is \"{}\", expected \"{PAYLOAD_TYPE}\"",
                crate::logtext::GuestText(&kind)
            ));
            continue;
        }
        if payload.critical.image.digest == digest {
            return Ok(());
        }
        other_digest = Some(payload.critical.image.digest);
    }
    match (other_digest, not_image) {
        (Some(signed), _) => Err(Refusal::OtherDigest {
            key: key.label.clone(),
            signed,
            digest: digest.to_string(),
        }),
        (None, Some(why)) => Err(Refusal::NotImagePayload {
            key: key.label.clone(),
            why,
        }),
        (None, None) if signatures.is_empty() => Err(Refusal::Unsigned {
            digest: digest.to_string(),
            tag: signature_tag(digest),
        }),
        (None, None) => Err(Refusal::OtherKey {
            key: key.label.clone(),
            count: signatures.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};

    const DIGEST: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    const OTHER: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

    struct Signer {
        pair: EcdsaKeyPair,
        public: PublicKey,
    }

    /// A key pair made with ring (the signing half only exists in tests;
    /// the integration tests sign with an independent implementation).
    fn signer(label: &str) -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).expect("key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .expect("pair");
        let mut spki = P256_SPKI_HEADER.to_vec();
        spki.extend_from_slice(pair.public_key().as_ref());
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(&spki)
        );
        let public = PublicKey::from_pem(pem.as_bytes(), label).expect("public key");
        Signer { pair, public }
    }

    fn payload(digest: &str) -> Vec<u8> {
        serde_json::json!({
            "critical": {
                "identity": { "docker-reference": "registry.example/acme/x" },
                "image": { "docker-manifest-digest": digest },
                "type": PAYLOAD_TYPE,
            },
            "optional": null,
        })
        .to_string()
        .into_bytes()
    }

    fn sign(signer: &Signer, digest: &str) -> Signature {
        sign_payload(signer, payload(digest))
    }

    /// `payload`, whatever it holds, signed by `signer`.
    fn sign_payload(signer: &Signer, payload: Vec<u8>) -> Signature {
        let sig = signer
            .pair
            .sign(&SystemRandom::new(), &payload)
            .expect("sign");
        Signature {
            payload,
            signature: base64::engine::general_purpose::STANDARD.encode(sig.as_ref()),
        }
    }

    #[test]
    fn a_signature_by_the_key_over_the_digest_passes() {
        let acme = signer("keys/acme.pub");
        let other = signer("keys/other.pub");
        let sigs = [sign(&other, DIGEST), sign(&acme, DIGEST)];
        assert_eq!(verify(&acme.public, DIGEST, &sigs), Ok(()));
    }

    #[test]
    fn each_refusal_says_which() {
        let acme = signer("keys/acme.pub");
        let other = signer("keys/other.pub");
        let err = verify(&acme.public, DIGEST, &[]).expect_err("unsigned");
        assert!(matches!(err, Refusal::Unsigned { .. }), "{err}");
        assert!(err.to_string().contains(&signature_tag(DIGEST)), "{err}");
        assert!(err.to_string().contains("`verify`, or --key"), "{err}");

        let err = verify(&acme.public, DIGEST, &[sign(&other, DIGEST)]).expect_err("other key");
        assert!(err.to_string().contains("not by keys/acme.pub"), "{err}");

        let err = verify(&acme.public, DIGEST, &[sign(&acme, OTHER)]).expect_err("other digest");
        assert!(
            matches!(err, Refusal::OtherDigest { ref signed, .. } if signed == OTHER),
            "{err}"
        );

        // A payload changed after signing no longer verifies.
        let mut tampered = sign(&acme, OTHER);
        tampered.payload = payload(DIGEST);
        let err = verify(&acme.public, DIGEST, &[tampered]).expect_err("tampered payload");
        assert!(matches!(err, Refusal::OtherKey { count: 1, .. }), "{err}");

        let mut garbage = sign(&acme, DIGEST);
        garbage.signature = "not base64!".into();
        assert!(verify(&acme.public, DIGEST, &[garbage]).is_err());
    }

    /// The right key over the wrong kind of payload is said as such, not
    /// as "not signed by that key".
    #[test]
    fn the_right_key_over_another_payload_type_says_so() {
        let acme = signer("keys/acme.pub");
        let signed = |payload: Vec<u8>| sign_payload(&acme, payload);
        let other_type = String::from_utf8(payload(DIGEST))
            .expect("text")
            .replace(PAYLOAD_TYPE, "https://in-toto.io/Statement/v1")
            .into_bytes();
        let err = verify(&acme.public, DIGEST, &[signed(other_type)]).expect_err("other type");
        assert!(matches!(err, Refusal::NotImagePayload { .. }), "{err}");
        assert!(err.to_string().contains("in-toto.io/Statement/v1"), "{err}");
        assert!(!err.to_string().contains("not by"), "{err}");
        let blob = signed(b"just a file".to_vec());
        let err = verify(&acme.public, DIGEST, &[blob]).expect_err("a blob");
        assert!(matches!(err, Refusal::NotImagePayload { .. }), "{err}");
    }

    #[test]
    fn only_p256_public_keys_are_accepted() {
        assert_eq!(
            signature_tag(DIGEST),
            format!("sha256-{}.sig", &DIGEST[7..])
        );
        let err = PublicKey::from_pem(b"not pem", "k.pub").expect_err("not pem");
        assert!(err.contains("no PEM PUBLIC KEY"), "{err}");
        // An Ed25519 SubjectPublicKeyInfo.
        let mut ed = vec![
            0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
        ];
        ed.extend_from_slice(&[7u8; 32]);
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(&ed)
        );
        let err = PublicKey::from_pem(pem.as_bytes(), "ed.pub").expect_err("ed25519");
        assert!(err.contains("not an ECDSA P-256"), "{err}");
    }
}
