//! Listing a published component in the official MCP Registry
//! (registry.modelcontextprotocol.io): the registry's rules for a server's
//! name and version, the ownership mark it looks for on an `oci` package
//! ([`NAME_ANNOTATION`]), and the `server.json` that lists the package —
//! its reference, and how a client runs it (`airlock serve --stdio` with
//! the digest-pinned reference) — checked against the registry's schema,
//! pinned beside this file (`server.schema.json`; README.md here says
//! where it comes from and how to update it).

use serde_json::{Value, json};

use crate::source::OciReference;

/// The annotation (and config label) whose value the MCP Registry compares
/// with `server.json`'s `name` to accept an `oci` package as the
/// publisher's.
pub const NAME_ANNOTATION: &str = "io.modelcontextprotocol.server.name";

/// The `$id` of the pinned schema, written as `server.json`'s `$schema`.
pub const SCHEMA_URL: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

/// The pinned schema, byte for byte as the registry serves it at
/// [`SCHEMA_URL`].
const SCHEMA: &str = include_str!("server.schema.json");

/// The registries whose `oci` packages the MCP Registry accepts (its
/// package-types page); `*.` is any subdomain.
const ACCEPTED_REGISTRIES: &[&str] = &[
    "docker.io",
    "ghcr.io",
    "quay.io",
    "*.pkg.dev",
    "*.azurecr.io",
    "mcr.microsoft.com",
];

/// What the schema allows for `description` and `title`.
const MAX_TEXT: usize = 100;

/// The example every name error shows.
const NAME_EXAMPLE: &str = "io.github.USER/catalog (signed in with GitHub) or \
     com.example/catalog (a domain you prove by DNS or HTTP)";

/// What goes into `server.json`, each value checked.
pub struct Listing {
    /// `NAMESPACE/NAME`, reverse-DNS ([`check_name`]).
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    /// Semantic version ([`check_version`]).
    pub version: String,
    /// Where it was published, by tag.
    pub reference: OciReference,
    /// The manifest's digest: what a client runs.
    pub digest: String,
    /// `org.opencontainers.image.source`, if a GitHub or GitLab URL.
    pub source: Option<String>,
}

/// Checks a server name against the registry's rule: `NAMESPACE/NAME`, the
/// namespace a reverse-DNS name (`io.github.user`, `com.example`), letters,
/// digits, `.` and `-` in it, and `.`, `_`, `-` in the name.
pub fn check_name(name: &str) -> Result<(), String> {
    let wrong = |why: &str| {
        format!(
            "--server-name {name}: {why}; the MCP Registry names a server \
             NAMESPACE/NAME with a reverse-DNS namespace, e.g. {NAME_EXAMPLE}"
        )
    };
    let Some((namespace, server)) = name.split_once('/') else {
        return Err(wrong("no `/` between the namespace and the name"));
    };
    if server.contains('/') {
        return Err(wrong("more than one `/`"));
    }
    if !(3..=200).contains(&name.len()) {
        return Err(wrong("it must be 3 to 200 characters long"));
    }
    let labels: Vec<&str> = namespace.split('.').collect();
    if labels.len() < 2 {
        return Err(wrong(&format!(
            "the namespace `{namespace}` is not reverse-DNS (it has no `.`)"
        )));
    }
    for label in labels {
        let letters = label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if label.is_empty() || label.starts_with('-') || label.ends_with('-') || !letters {
            return Err(wrong(&format!(
                "`{label}` in the namespace is not a DNS label (letters, digits and \
                 inner `-`, separated by single dots)"
            )));
        }
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if server.is_empty() || !server.chars().all(allowed) {
        return Err(wrong(&format!(
            "the name `{server}` may hold only letters, digits, `.`, `_` and `-`"
        )));
    }
    Ok(())
}

/// Checks that `version` is a semantic version (`1.2.0`, `2.0.0-rc.1`):
/// the registry orders a server's versions by it. `from_tag` says it was
/// taken from the reference's tag, so the error says how to give one.
pub fn check_version(version: &str, from_tag: bool) -> Result<(), String> {
    if semver::Version::parse(version).is_ok() {
        return Ok(());
    }
    let example = match version.strip_prefix('v') {
        Some(rest) if semver::Version::parse(rest).is_ok() => rest,
        _ => "1.2.0",
    };
    Err(match from_tag {
        true => format!(
            "the tag `{version}` is not a semantic version (MAJOR.MINOR.PATCH), which the \
             MCP Registry needs as server.json's version: pass --server-version {example}, \
             or publish to a tag like :{example}"
        ),
        false => format!(
            "--server-version {version}: not a semantic version (MAJOR.MINOR.PATCH, \
             e.g. {example}), which the MCP Registry needs to order a server's versions"
        ),
    })
}

/// Checks a description: 1 to 100 characters. `from_flag` says the user
/// wrote it; otherwise it came from the manifest's description.
pub fn check_description(description: &str, from_flag: bool) -> Result<(), String> {
    let chars = description.chars().count();
    if (1..=MAX_TEXT).contains(&chars) {
        return Ok(());
    }
    let what = match from_flag {
        true => "--server-description",
        false => "the description (the manifest's org.opencontainers.image.description)",
    };
    Err(format!(
        "{what} has {chars} characters; the MCP Registry takes 1 to {MAX_TEXT}: \
         pass --server-description \"what the tools do\""
    ))
}

/// Whether the MCP Registry takes `oci` packages from `registry`.
pub fn accepted_registry(registry: &str) -> bool {
    let host = registry.split(':').next().unwrap_or(registry);
    ACCEPTED_REGISTRIES
        .iter()
        .any(|accepted| match accepted.strip_prefix('*') {
            Some(suffix) => host.ends_with(suffix),
            None => host == *accepted || (*accepted == "docker.io" && host == "index.docker.io"),
        })
}

/// The registries [`accepted_registry`] takes, for messages.
pub fn accepted_registries() -> String {
    ACCEPTED_REGISTRIES.join(", ")
}

impl Listing {
    /// The package's `identifier`: `REGISTRY/NAMESPACE/NAME:TAG`, as the
    /// registry resolves it (no scheme).
    pub fn identifier(&self) -> String {
        let oci = &self.reference;
        match &oci.tag {
            Some(tag) => format!("{}/{}:{tag}", oci.registry, oci.repository),
            None => format!("{}/{}", oci.registry, oci.repository),
        }
    }

    /// The reference a client runs: the digest this publication got, so
    /// a tag moved later does not change what runs.
    pub fn pinned(&self) -> String {
        self.reference.with_digest(&self.digest).to_string()
    }

    /// The `server.json` document, its keys in the order the registry's
    /// own examples write them.
    pub fn document(&self) -> Value {
        let positional = |value: &str| json!({ "type": "positional", "value": value });
        let package = json!({
            "registryType": "oci",
            "identifier": self.identifier(),
            "runtimeHint": "airlock",
            "runtimeArguments": [
                positional("serve"),
                positional("--stdio"),
                {
                    "type": "named",
                    "name": "--policy",
                    "description": "The airlock policy (airlock.toml) granting the tools \
                        folders, hosts and environment values; without one they get none.",
                    "format": "filepath",
                    "isRequired": false,
                },
                positional(&self.pinned()),
            ],
            "transport": { "type": "stdio" },
        });
        let mut doc = serde_json::Map::new();
        doc.insert("$schema".into(), json!(SCHEMA_URL));
        doc.insert("name".into(), json!(self.name));
        if let Some(title) = &self.title {
            doc.insert("title".into(), json!(title));
        }
        doc.insert("description".into(), json!(self.description));
        if let Some(url) = &self.source {
            let forge = if url.contains("gitlab.com") {
                "gitlab"
            } else {
                "github"
            };
            doc.insert("repository".into(), json!({ "url": url, "source": forge }));
        }
        doc.insert("version".into(), json!(self.version));
        doc.insert("packages".into(), json!([package]));
        Value::Object(doc)
    }
}

/// The repository URL `server.json` may name: a GitHub or GitLab one.
pub fn repository_url(source: &str) -> Option<String> {
    let url = source.trim_end_matches(".git");
    ["https://github.com/", "https://gitlab.com/"]
        .iter()
        .any(|forge| url.starts_with(forge))
        .then(|| url.to_string())
}

/// A title the schema takes (1 to 100 characters), or none.
pub fn title(text: &str) -> Option<String> {
    (1..=MAX_TEXT)
        .contains(&text.chars().count())
        .then(|| text.to_string())
}

/// Checks `doc` against the pinned schema (formats asserted, as the
/// registry's validator does); every error, with where it is.
pub fn validate(doc: &Value) -> Result<(), Vec<String>> {
    let schema: Value = match serde_json::from_str(SCHEMA) {
        Ok(schema) => schema,
        Err(err) => return Err(vec![format!("the pinned schema is not JSON: {err}")]),
    };
    let validator = match jsonschema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .should_validate_formats(true)
        .offline()
        .build(&schema)
    {
        Ok(validator) => validator,
        Err(err) => return Err(vec![format!("the pinned schema does not compile: {err}")]),
    };
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    match errors.is_empty() {
        true => Ok(()),
        false => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;

    fn listing() -> Listing {
        let Ok(Source::Oci(reference)) = Source::parse("oci://ghcr.io/acme/catalog:1.2.0") else {
            panic!("a reference");
        };
        Listing {
            name: "io.github.acme/catalog".into(),
            title: title("catalog"),
            description: "airlock tools: lookup_price, restock".into(),
            version: "1.2.0".into(),
            reference,
            digest: format!("sha256:{}", "a".repeat(64)),
            source: repository_url("https://github.com/acme/tools.git"),
        }
    }

    #[test]
    fn the_pinned_schema_is_the_published_2025_12_11_file() {
        use sha2::{Digest, Sha256};
        // sha256 of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json
        assert_eq!(
            hex::encode(Sha256::digest(SCHEMA.as_bytes())),
            "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"
        );
        let schema: Value = serde_json::from_str(SCHEMA).expect("JSON");
        assert_eq!(schema["$id"], SCHEMA_URL);
    }

    #[test]
    fn a_listing_validates_and_runs_airlock_on_the_pinned_digest() {
        let doc = listing().document();
        assert_eq!(validate(&doc), Ok(()));
        let package = &doc["packages"][0];
        assert_eq!(package["registryType"], "oci");
        assert_eq!(package["identifier"], "ghcr.io/acme/catalog:1.2.0");
        assert_eq!(package["transport"]["type"], "stdio");
        let values: Vec<&str> = package["runtimeArguments"]
            .as_array()
            .expect("arguments")
            .iter()
            .filter_map(|a| a["value"].as_str())
            .collect();
        let pinned = format!("oci://ghcr.io/acme/catalog@sha256:{}", "a".repeat(64));
        assert_eq!(values, ["serve", "--stdio", pinned.as_str()]);
        assert_eq!(doc["repository"]["url"], "https://github.com/acme/tools");
        assert_eq!(doc["title"], "catalog");
    }

    /// The pinned schema is what refuses: a name the registry's pattern
    /// refuses, a description over 100 characters, a package without its
    /// transport.
    #[test]
    fn the_schema_refuses_what_the_registry_refuses() {
        let mut doc = listing().document();
        doc["name"] = json!("acme catalog");
        doc["description"] = json!("x".repeat(101));
        doc["packages"][0]
            .as_object_mut()
            .expect("package")
            .remove("transport");
        let errors = validate(&doc).expect_err("refused");
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors.iter().any(|e| e.starts_with("/name")), "{errors:?}");
        assert!(
            errors.iter().any(|e| e.starts_with("/description")),
            "{errors:?}"
        );
    }

    #[test]
    fn names_follow_the_registrys_reverse_dns_rule() {
        for good in ["io.github.acme/catalog", "com.example/my_tools-2.0"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for (bad, why) in [
            ("catalog", "no `/`"),
            ("acme/catalog", "not reverse-DNS"),
            ("io.github.acme/tools/catalog", "more than one `/`"),
            ("io..acme/catalog", "not a DNS label"),
            ("io.-acme/catalog", "not a DNS label"),
            ("io.github.acme/cat alog", "only letters"),
            ("io.github.acme/", "only letters"),
        ] {
            let err = check_name(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
            assert!(err.contains("io.github.USER/catalog"), "{err}");
        }
    }

    #[test]
    fn versions_must_be_semantic_and_the_error_says_which_to_give() {
        assert_eq!(check_version("1.2.0", true), Ok(()));
        assert_eq!(check_version("2.0.0-rc.1", false), Ok(()));
        let err = check_version("latest", true).expect_err("latest");
        assert!(err.contains("pass --server-version 1.2.0"), "{err}");
        let err = check_version("v1.4.2", true).expect_err("v-prefixed");
        assert!(err.contains("--server-version 1.4.2"), "{err}");
        let err = check_version("1.0", false).expect_err("two parts");
        assert!(
            err.starts_with("--server-version 1.0: not a semantic"),
            "{err}"
        );
    }

    #[test]
    fn descriptions_fit_the_registrys_hundred_characters() {
        assert_eq!(check_description("Looks up prices", true), Ok(()));
        let err = check_description(&"x".repeat(101), false).expect_err("long");
        assert!(err.contains("101 characters"), "{err}");
        assert!(err.contains("pass --server-description"), "{err}");
    }

    #[test]
    fn only_the_registries_the_mcp_registry_reads_are_accepted() {
        for host in [
            "ghcr.io",
            "docker.io",
            "us-docker.pkg.dev",
            "acme.azurecr.io",
        ] {
            assert!(accepted_registry(host), "{host}");
        }
        for host in ["127.0.0.1:5000", "registry.example.com", "pkg.dev.evil.com"] {
            assert!(!accepted_registry(host), "{host}");
        }
    }
}
