//! Where a component comes from, as written on the command line or in a
//! policy's `source`: a local file, an OCI artifact
//! (`oci://REGISTRY/NAMESPACE/NAME:TAG`, `…@sha256:DIGEST`) or a URL
//! (`https://…/tool.wasm`). Parsing only; nothing here touches the network.
//!
//! `oci+http://` says the registry speaks plain HTTP (a local test
//! registry); otherwise registries and URLs need HTTPS unless the operator
//! names the host with `--insecure-registry`.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a reference was refused; the text says what a valid one looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reference:?}: {reason}")]
pub struct ReferenceError {
    pub reference: String,
    pub reason: String,
}

/// A component's origin.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    File(PathBuf),
    Oci(OciReference),
    Url(UrlSource),
}

/// An artifact in an OCI registry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OciReference {
    /// `host` or `host:port`, as written.
    pub registry: String,
    /// `namespace/name`, lower case.
    pub repository: String,
    /// The tag; `None` when the reference names only a digest.
    pub tag: Option<String>,
    /// `sha256:` and 64 lower-case hex digits: the manifest's digest.
    pub digest: Option<String>,
    /// The reference said `oci+http://`.
    pub plain_http: bool,
}

/// A `.wasm` file at an HTTP(S) URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UrlSource {
    pub url: url::Url,
}

impl Source {
    /// A command-line argument or a policy's `source`: a reference when it
    /// starts with a scheme airlock knows, else a path (`base` resolves a
    /// relative one; the caller passes the policy's folder or nothing).
    pub fn parse(text: &str) -> Result<Source, ReferenceError> {
        let refuse = |reason: &str| ReferenceError {
            reference: text.to_string(),
            reason: reason.to_string(),
        };
        if let Some(rest) = text.strip_prefix("oci://") {
            return OciReference::parse(rest, false)
                .map(Source::Oci)
                .map_err(|r| refuse(&r));
        }
        if let Some(rest) = text.strip_prefix("oci+http://") {
            return OciReference::parse(rest, true)
                .map(Source::Oci)
                .map_err(|r| refuse(&r));
        }
        if text.starts_with("https://") || text.starts_with("http://") {
            let url = url::Url::parse(text).map_err(|e| refuse(&format!("not a URL: {e}")))?;
            if url.host_str().is_none_or(str::is_empty) {
                return Err(refuse("a URL source needs a host"));
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err(refuse(
                    "credentials do not belong in a source URL (it is printed and written to \
                     the lock); use AIRLOCK_REGISTRY_AUTH",
                ));
            }
            return Ok(Source::Url(UrlSource { url }));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(refuse(&format!(
                "unknown scheme {scheme}://; a source is a file path, oci://REGISTRY/NAME:TAG, \
                 oci://REGISTRY/NAME@sha256:DIGEST or https://…/tool.wasm"
            )));
        }
        Ok(Source::File(PathBuf::from(text)))
    }

    /// Like [`Source::parse`] for a path given as one (a command-line
    /// argument): a path that is not valid UTF-8 is a file.
    pub fn from_path(path: &Path) -> Result<Source, ReferenceError> {
        match path.to_str() {
            Some(text) => Source::parse(text),
            None => Ok(Source::File(path.to_path_buf())),
        }
    }

    /// Whether it is fetched (from a registry or a URL) rather than read.
    pub fn is_remote(&self) -> bool {
        !matches!(self, Source::File(_))
    }

    /// The component's name when no policy section names it: the file
    /// stem, the repository's last part, or the URL's file stem.
    pub fn default_name(&self) -> String {
        match self {
            Source::File(path) => stem(path),
            Source::Oci(oci) => oci
                .repository
                .rsplit('/')
                .next()
                .unwrap_or(&oci.repository)
                .to_string(),
            Source::Url(source) => source
                .url
                .path_segments()
                .and_then(|mut s| s.next_back())
                .map(|last| stem(Path::new(last)))
                .unwrap_or_default(),
        }
    }

    /// How messages and listings name it (a path for a file, the reference
    /// otherwise); also the key of a component in a hot reload.
    pub fn label(&self) -> PathBuf {
        match self {
            Source::File(path) => path.clone(),
            other => PathBuf::from(other.to_string()),
        }
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Oci(oci) => oci.fmt(f),
            Source::Url(source) => source.url.fmt(f),
        }
    }
}

impl fmt::Display for OciReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.plain_http { "oci+http" } else { "oci" };
        write!(f, "{scheme}://{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl OciReference {
    /// `REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]` (after the scheme); no
    /// tag and no digest means `:latest`.
    fn parse(text: &str, plain_http: bool) -> Result<OciReference, String> {
        let usage = "expected oci://REGISTRY/NAMESPACE/NAME:TAG or …@sha256:DIGEST";
        let (registry, rest) = text
            .split_once('/')
            .ok_or_else(|| format!("no repository after the registry; {usage}"))?;
        check_registry(registry)?;
        let (rest, digest) = match rest.split_once('@') {
            Some((rest, digest)) => (rest, Some(check_digest(digest)?)),
            None => (rest, None),
        };
        // A tag follows the last `:` after the last `/`.
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => (
                &rest[..last_slash + i],
                Some(rest[last_slash + i + 1..].to_string()),
            ),
            None => (rest, None),
        };
        check_repository(repository)?;
        if let Some(tag) = &tag {
            check_tag(tag)?;
        }
        let tag = match (&tag, &digest) {
            (None, None) => Some("latest".to_string()),
            _ => tag,
        };
        Ok(OciReference {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
            plain_http,
        })
    }

    /// The same artifact by its manifest digest (no tag).
    pub fn with_digest(&self, digest: &str) -> OciReference {
        OciReference {
            tag: None,
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }

    /// The host the registry's API answers on (Docker Hub's is not its name).
    pub fn api_host(&self) -> &str {
        match self.registry.as_str() {
            "docker.io" | "index.docker.io" => "registry-1.docker.io",
            other => other,
        }
    }

    /// The tag or digest to ask the registry for.
    pub fn manifest_ref(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }
}

fn check_registry(registry: &str) -> Result<(), String> {
    let ok = !registry.is_empty()
        && registry
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        && !registry.starts_with(['.', '-', ':']);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{registry:?} is not a registry host (HOST or HOST:PORT)"
        ))
    }
}

/// The distribution spec's repository grammar: lower-case parts of
/// `[a-z0-9]` joined by `.`, `_`, `__` or `-` runs, separated by `/`.
fn check_repository(repository: &str) -> Result<(), String> {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let part_ok = |part: &str| {
        let bytes = part.as_bytes();
        bytes.first().is_some_and(alnum)
            && bytes.last().is_some_and(alnum)
            && bytes.iter().all(|b| alnum(b) || b"._-".contains(b))
    };
    if repository.len() <= 255 && repository.split('/').all(part_ok) {
        Ok(())
    } else {
        Err(format!(
            "{repository:?} is not a repository name (lower-case letters, digits and . _ - \
             in parts separated by /)"
        ))
    }
}

fn check_tag(tag: &str) -> Result<(), String> {
    let bytes = tag.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 128
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{tag:?} is not a tag (letters, digits, . _ -; at most 128)"
        ))
    }
}

/// `sha256:` and 64 hex digits, returned in lower case.
pub fn check_digest(digest: &str) -> Result<String, String> {
    let hex = digest
        .strip_prefix("sha256:")
        .ok_or_else(|| format!("{digest:?} is not a sha256:… digest"))?;
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
    } else {
        Err(format!(
            "{digest:?} is not a digest: sha256: and 64 hexadecimal digits"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn oci(text: &str) -> OciReference {
        match Source::parse(text) {
            Ok(Source::Oci(oci)) => oci,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn oci_references_with_tags_digests_and_ports() {
        let r = oci("oci://ghcr.io/acme/tools/catalog:1.2.0");
        assert_eq!(r.registry, "ghcr.io");
        assert_eq!(r.repository, "acme/tools/catalog");
        assert_eq!(r.tag.as_deref(), Some("1.2.0"));
        assert_eq!(r.digest, None);
        assert!(!r.plain_http);

        let r = oci(&format!(
            "oci+http://127.0.0.1:5000/acme/catalog@sha256:{HEX}"
        ));
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.tag, None);
        assert_eq!(r.digest, Some(format!("sha256:{HEX}")));
        assert!(r.plain_http);
        assert_eq!(r.manifest_ref(), format!("sha256:{HEX}"));

        let both = format!("oci://localhost:5000/a/b:v1@sha256:{}", HEX.to_uppercase());
        let r = oci(&both);
        assert_eq!(r.tag.as_deref(), Some("v1"));
        assert_eq!(r.digest, Some(format!("sha256:{HEX}")), "lower-cased");
        assert_eq!(
            r.to_string(),
            format!("oci://localhost:5000/a/b:v1@sha256:{HEX}")
        );

        let r = oci("oci://docker.io/library/x");
        assert_eq!(r.tag.as_deref(), Some("latest"));
        assert_eq!(r.api_host(), "registry-1.docker.io");
        assert_eq!(Source::Oci(r).default_name(), "x");
    }

    #[test]
    fn malformed_references_say_what_is_wrong() {
        for (text, what) in [
            ("oci://ghcr.io", "no repository"),
            ("oci://ghcr.io/Acme/x:1", "not a repository name"),
            ("oci://ghcr.io/acme//x:1", "not a repository name"),
            ("oci://ghcr.io/acme/x:-1", "not a tag"),
            ("oci://ghcr.io/acme/x@sha256:abc", "64 hexadecimal"),
            ("oci://ghcr.io/acme/x@md5:abc", "not a sha256"),
            ("oci://gh cr.io/acme/x", "not a registry"),
            ("ftp://example.com/x.wasm", "unknown scheme ftp://"),
            ("https://exa mple.com/x.wasm", "not a URL"),
            ("https://user:pw@example.com/x.wasm", "credentials"),
        ] {
            let err = Source::parse(text).expect_err(text).to_string();
            assert!(err.contains(what), "{text}: {err}");
        }
    }

    #[test]
    fn urls_and_files_and_their_names() {
        let url = Source::parse("https://example.com/dl/catalog.wasm?x=1").expect("url");
        assert!(url.is_remote());
        assert_eq!(url.default_name(), "catalog");
        assert_eq!(
            url.label(),
            PathBuf::from("https://example.com/dl/catalog.wasm?x=1")
        );
        let file = Source::parse("tools/export.wasm").expect("file");
        assert_eq!(file, Source::File(PathBuf::from("tools/export.wasm")));
        assert!(!file.is_remote());
        assert_eq!(file.default_name(), "export");
        // A Windows-style or odd path is still a path.
        assert!(matches!(
            Source::parse("C:tools/x.wasm"),
            Ok(Source::File(_))
        ));
    }

    #[test]
    fn with_digest_drops_the_tag() {
        let r = oci("oci://ghcr.io/acme/x:1").with_digest(&format!("sha256:{HEX}"));
        assert_eq!(r.to_string(), format!("oci://ghcr.io/acme/x@sha256:{HEX}"));
    }
}
