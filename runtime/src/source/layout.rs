//! The CNCF Wasm OCI artifact layout (as `wkg oci push` writes it and
//! wassette, Spin and hyper-mcp read it): an OCI image manifest with a
//! config of type `application/vnd.wasm.config.v0+json` and one layer of
//! type `application/wasm`, the component.
//!
//! What airlock adds when it publishes: the `org.opencontainers.image.*`
//! annotations, and what the tools are before anything runs — the tools as
//! MCP lists them (names, descriptions, schemas, hints) in the manifest
//! annotation [`TOOLS_ANNOTATION`] and the component's imports (what it
//! can ask for) in [`IMPORTS_ANNOTATION`] and in the config; and, when
//! asked, labels in the config (`config.Labels`, where an image's labels
//! are: the MCP Registry reads its ownership label there).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The tools as MCP `tools/list` lists them, a JSON array.
pub const TOOLS_ANNOTATION: &str = "dev.airlock.tools";
/// The interfaces the component imports, a JSON array.
pub const IMPORTS_ANNOTATION: &str = "dev.airlock.imports";

/// What a manifest request accepts.
pub const ACCEPT_MANIFESTS: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json";

/// A content descriptor: what a manifest says of a blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image manifest (the fields airlock reads and writes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Manifest {
    /// Parses a manifest, refusing an index (a multi-platform image) and
    /// anything else that is not one image manifest.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("the manifest is not JSON ({e})"))?;
        if value.get("mediaType").and_then(Value::as_str) == Some(INDEX_MEDIA_TYPE)
            || value.get("manifests").is_some()
        {
            return Err("it is an image index (several platforms), not a Wasm component".into());
        }
        let manifest: Manifest = serde_json::from_value(value)
            .map_err(|e| format!("the manifest is not an OCI image manifest ({e})"))?;
        if manifest.schema_version != 2 {
            return Err(format!(
                "manifest schemaVersion {} is not 2",
                manifest.schema_version
            ));
        }
        Ok(manifest)
    }

    /// The component layer of a Wasm artifact: the one `application/wasm`
    /// layer. Anything else (a container image, several components) is
    /// refused with what it is.
    pub fn component(&self) -> Result<&Descriptor, String> {
        let wasm: Vec<&Descriptor> = self
            .layers
            .iter()
            .filter(|l| l.media_type == WASM_LAYER_MEDIA_TYPE)
            .collect();
        match wasm.as_slice() {
            [one] => Ok(one),
            [] => Err(format!(
                "it has no {WASM_LAYER_MEDIA_TYPE} layer (layers: {}; config {}); \
                 is it a Wasm component artifact?",
                self.layers
                    .iter()
                    .map(|l| l.media_type.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                self.config.media_type
            )),
            more => Err(format!(
                "it has {} {WASM_LAYER_MEDIA_TYPE} layers; airlock serves one component per artifact",
                more.len()
            )),
        }
    }

    /// The tools the publisher listed (annotation [`TOOLS_ANNOTATION`]).
    pub fn published_tools(&self) -> Option<Vec<Value>> {
        serde_json::from_str(self.annotations.get(TOOLS_ANNOTATION)?).ok()
    }

    /// The imports the publisher listed (annotation [`IMPORTS_ANNOTATION`]).
    pub fn published_imports(&self) -> Option<Vec<String>> {
        serde_json::from_str(self.annotations.get(IMPORTS_ANNOTATION)?).ok()
    }
}

/// What goes into a published artifact besides the component.
pub struct Publication<'a> {
    pub component: &'a [u8],
    /// The component's name (`org.opencontainers.image.title`).
    pub name: &'a str,
    /// The tag, if any (`org.opencontainers.image.version`).
    pub version: Option<&'a str>,
    /// The tools as MCP lists them.
    pub tools: Vec<Value>,
    pub imports: Vec<String>,
    /// The component's top-level exports.
    pub exports: Vec<String>,
    /// `org.opencontainers.image.created`, RFC 3339.
    pub created: String,
    /// More annotations (`--annotation KEY=VALUE`); they win.
    pub annotations: BTreeMap<String, String>,
    /// Labels in the config's `config.Labels`, as an image's `LABEL`s are
    /// (none: the config has no `config` object, as before).
    pub labels: BTreeMap<String, String>,
}

/// The blobs and the manifest of a publication.
pub struct Artifact {
    pub config: Vec<u8>,
    pub manifest: Vec<u8>,
}

impl Publication<'_> {
    /// The config and manifest, in the CNCF Wasm layout.
    pub fn artifact(&self) -> Artifact {
        let layer = Descriptor {
            media_type: WASM_LAYER_MEDIA_TYPE.into(),
            digest: super::store::digest_of(self.component),
            size: self.component.len() as u64,
            annotations: BTreeMap::from([(
                "org.opencontainers.image.title".to_string(),
                format!("{}.wasm", self.name),
            )]),
        };
        let mut config = serde_json::json!({
            "created": self.created,
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer.digest],
            "component": {
                "exports": self.exports,
                "imports": self.imports,
                "target": null,
            },
        });
        if !self.labels.is_empty() {
            config["config"] = serde_json::json!({ "Labels": self.labels });
        }
        let config = crate::json::to_string(&config).into_bytes();
        let names: Vec<&str> = self
            .tools
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .collect();
        let mut annotations = BTreeMap::from([
            (
                "org.opencontainers.image.created".to_string(),
                self.created.clone(),
            ),
            (
                "org.opencontainers.image.title".to_string(),
                self.name.to_string(),
            ),
            (
                "org.opencontainers.image.description".to_string(),
                format!("airlock tools: {}", names.join(", ")),
            ),
            (
                TOOLS_ANNOTATION.to_string(),
                crate::json::to_string(&Value::Array(self.tools.clone())),
            ),
            (
                IMPORTS_ANNOTATION.to_string(),
                crate::json::to_string(&serde_json::json!(self.imports)),
            ),
        ]);
        if let Some(version) = self.version {
            annotations.insert(
                "org.opencontainers.image.version".to_string(),
                version.to_string(),
            );
        }
        annotations.extend(self.annotations.clone());
        let manifest = Manifest {
            schema_version: 2,
            media_type: Some(MANIFEST_MEDIA_TYPE.into()),
            config: Descriptor {
                media_type: WASM_CONFIG_MEDIA_TYPE.into(),
                digest: super::store::digest_of(&config),
                size: config.len() as u64,
                annotations: BTreeMap::new(),
            },
            layers: vec![layer],
            annotations,
        };
        let manifest = serde_json::to_vec(&manifest).unwrap_or_default();
        Artifact { config, manifest }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publication_round_trips_with_its_tools() {
        let publication = Publication {
            component: b"\0asm component",
            name: "catalog",
            version: Some("1.0"),
            tools: vec![serde_json::json!({"name": "lookup", "description": "Looks up"})],
            imports: vec!["wasi:http/outgoing-handler@0.2.6".into()],
            exports: vec!["airlock:tool/tools@0.1.0".into()],
            created: "2026-01-01T00:00:00Z".into(),
            annotations: BTreeMap::from([(
                "org.opencontainers.image.source".to_string(),
                "https://example.com/acme".to_string(),
            )]),
            labels: BTreeMap::new(),
        };
        let artifact = publication.artifact();
        let manifest = Manifest::parse(&artifact.manifest).expect("manifest");
        assert_eq!(manifest.config.media_type, WASM_CONFIG_MEDIA_TYPE);
        assert_eq!(
            manifest.config.digest,
            crate::source::store::digest_of(&artifact.config)
        );
        let layer = manifest.component().expect("component layer");
        assert_eq!(layer.size, 14);
        assert_eq!(
            manifest.published_tools().expect("tools")[0]["name"],
            "lookup"
        );
        assert_eq!(
            manifest.published_imports().expect("imports"),
            vec!["wasi:http/outgoing-handler@0.2.6"]
        );
        assert_eq!(
            manifest.annotations["org.opencontainers.image.description"],
            "airlock tools: lookup"
        );
        assert_eq!(
            manifest.annotations["org.opencontainers.image.version"],
            "1.0"
        );
        assert_eq!(
            manifest.annotations["org.opencontainers.image.source"],
            "https://example.com/acme"
        );
        let config: Value = serde_json::from_slice(&artifact.config).expect("config");
        assert_eq!(config["layerDigests"][0], layer.digest.as_str());
        assert_eq!(
            config["component"]["imports"][0],
            "wasi:http/outgoing-handler@0.2.6"
        );
    }

    /// Labels go where an image's `LABEL`s are (`config.Labels`), which is
    /// where the MCP Registry reads its ownership label; without labels
    /// the config is what it was, so earlier publications keep their digest.
    #[test]
    fn labels_go_into_the_configs_labels_and_only_when_asked() {
        let mut publication = Publication {
            component: b"\0asm component",
            name: "catalog",
            version: None,
            tools: Vec::new(),
            imports: Vec::new(),
            exports: Vec::new(),
            created: "2026-01-01T00:00:00Z".into(),
            annotations: BTreeMap::new(),
            labels: BTreeMap::new(),
        };
        let bare: Value = serde_json::from_slice(&publication.artifact().config).expect("config");
        assert!(bare.get("config").is_none(), "{bare}");
        publication.labels.insert(
            "io.modelcontextprotocol.server.name".into(),
            "io.github.acme/catalog".into(),
        );
        let labelled: Value =
            serde_json::from_slice(&publication.artifact().config).expect("config");
        assert_eq!(
            labelled["config"]["Labels"]["io.modelcontextprotocol.server.name"],
            "io.github.acme/catalog"
        );
    }

    #[test]
    fn what_is_not_one_component_is_refused_with_what_it_is() {
        let index = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
        assert!(
            Manifest::parse(index)
                .expect_err("index")
                .contains("image index")
        );
        assert!(
            Manifest::parse(b"<html>")
                .expect_err("html")
                .contains("not JSON")
        );
        let image = br#"{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:00","size":1},
            "layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:01","size":2}]}"#;
        let manifest = Manifest::parse(image).expect("image manifest");
        let err = manifest.component().expect_err("no wasm layer");
        assert!(err.contains("tar+gzip"), "{err}");
    }
}
