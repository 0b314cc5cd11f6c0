use std::path::Path;

use super::*;
use crate::policy::{FolderMode, Policy};

fn converted(yaml: &str, base: &Path) -> Imported {
    import(yaml, "weather", base).unwrap_or_else(|e| panic!("{e}"))
}

fn has_note(imported: &Imported, start: &str) -> bool {
    imported.notes.iter().any(|n| n.starts_with(start))
}

/// wassette's documented example (its permissions guide): a network host
/// and an environment key.
#[test]
fn the_documented_weather_policy_converts_exactly() {
    let yaml = r#"
version: "1.0"
description: "Permission policy for wassette weather demo"
permissions:
  network:
    allow:
      - host: "api.openweathermap.org"
  environment:
    allow:
      - key: "OPENWEATHER_API_KEY"
"#;
    let imported = converted(yaml, Path::new("/srv"));
    assert_eq!(
        imported.toml,
        "# The component `weather`, converted from a wassette policy by `airlock policy \
         import`\n# (what it tightened or left out is on its stderr; check the result with \
         `airlock check`).\n\
         # wassette: Permission policy for wassette weather demo\n\
         \n\
         [components.weather]\n\
         network = [\"api.openweathermap.org\"]\n\
         env = { OPENWEATHER_API_KEY = { from = \"OPENWEATHER_API_KEY\" } }\n"
    );
    assert!(has_note(&imported, "tightened: only open-world tools"));
    assert!(has_note(
        &imported,
        "tightened: wassette sets no time limit"
    ));
    assert!(has_note(
        &imported,
        "tightened: wassette sets no memory limit"
    ));

    let policy = Policy::parse_with_env(&imported.toml, Path::new("/srv"), |name| {
        assert_eq!(name, "OPENWEATHER_API_KEY");
        Ok("secret".into())
    })
    .expect("airlock reads what it wrote");
    let settings = policy.settings_for("weather", "get-weather");
    assert_eq!(settings.network[0].to_string(), "api.openweathermap.org");
    assert_eq!(
        settings.env,
        vec![("OPENWEATHER_API_KEY".to_string(), "secret".to_string())]
    );
}

/// Storage in each form wassette's docs and examples use, memory as a
/// Kubernetes quantity, and what cannot be carried over.
#[test]
fn storage_memory_and_what_is_left_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for sub in ["workspace", "cache", "data/inner", "out"] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    std::fs::write(root.join("app.yaml"), "x: 1").expect("file");
    let yaml = format!(
        r#"# file system access policy
version: "1.0"
description: "Everything a component can ask for"
permissions:
  storage:
    allow:
      - uri: "fs://workspace/**"
        access: ["read", "write"]
      - uri: "fs://{root}/cache"
        access: [read]
      - uri: "fs://{root}/data"
        access: ["read"]
      - uri: "fs://{root}/data/inner"
        access: ["read", "write"]
      - uri: "fs://{root}/out"
        access: ["write"]
      - uri: "fs://app.yaml"
        access: ["read"]
      - uri: "fs://logs/*.txt"
        access: ["read"]
    deny:
      - uri: "fs://workspace/secrets"
        access: ["read"]
  network:
    allow:
      - host: "https://rss.nytimes.com/services/xml"
      - cidr: "10.0.0.0/8"
      - defaults: true
  resources:
    limits:
      memory: "512Mi"
      cpu: "500m"
      execution_time: "30s"
  runtime:
    docker:
      security:
        privileged: false
"#,
        root = root.display()
    );
    let imported = converted(&yaml, root);
    let policy = Policy::parse(&imported.toml, root).unwrap_or_else(|e| {
        panic!("{e}\n{}", imported.toml);
    });
    let settings = policy.settings_for("weather", "any");
    let folders: Vec<(String, String, FolderMode)> = settings
        .folders
        .iter()
        .map(|f| (f.host.display().to_string(), f.guest.clone(), f.mode))
        .collect();
    let at = |sub: &str| root.join(sub).display().to_string();
    assert_eq!(
        folders,
        vec![
            (at("workspace"), "/workspace".into(), FolderMode::ReadWrite),
            (
                at("cache"),
                format!("{}/cache", root.display()),
                FolderMode::ReadOnly
            ),
            (
                at("data"),
                format!("{}/data", root.display()),
                FolderMode::ReadOnly
            ),
        ]
    );
    let hosts: Vec<String> = settings.network.iter().map(|h| h.to_string()).collect();
    assert_eq!(hosts, ["https://rss.nytimes.com", "10.0.0.0/8"]);
    assert_eq!(settings.limits.memory, 512 << 20);
    assert_eq!(settings.limits.time, std::time::Duration::from_secs(30));

    for start in [
        "note: storage fs://workspace/** is relative",
        "tightened: storage fs://",
        "left out: storage fs://",
        "left out: storage.deny fs://workspace/secrets",
        "tightened: network https://rss.nytimes.com/services/xml",
        "left out: network defaults",
        "left out: a CPU limit",
        "left out: permissions.runtime",
        "tightened: a read-write folder is read-write only for a destructive tool",
        "note: airlock does not serve https requests yet",
    ] {
        assert!(has_note(&imported, start), "{start}: {:#?}", imported.notes);
    }
    let left_out = |what: &str| {
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("left out") && n.contains(what))
    };
    assert!(left_out("(write-only)"));
    assert!(left_out("app.yaml is a file"));
    assert!(left_out("logs/*.txt: airlock grants whole folders"));
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.starts_with("tightened") && n.contains("data/inner lies inside")),
        "{:#?}",
        imported.notes
    );
    assert!(!has_note(
        &imported,
        "tightened: wassette sets no time limit"
    ));
}

#[test]
fn memory_in_every_unit_wassette_reads() {
    let memory = |value: &str| {
        let yaml = format!("version: \"1.0\"\npermissions:\n  resources:\n    {value}\n");
        let imported = converted(&yaml, Path::new("/"));
        let policy = Policy::parse(&imported.toml, Path::new("/")).expect("policy");
        policy.settings_for("weather", "t").limits.memory
    };
    assert_eq!(memory("limits: { memory: \"256Ki\" }"), 256 << 10);
    assert_eq!(memory("limits: { memory: \"1Gi\" }"), 1 << 30);
    assert_eq!(memory("limits: { memory: \"128M\" }"), 128_000_000);
    assert_eq!(memory("memory: 512"), 512 << 20);
    // More than an instance can hold is narrowed to what it can.
    assert_eq!(memory("limits: { memory: \"4Gi\" }"), 1 << 30);
}

#[test]
fn errors_point_at_the_line_and_column() {
    let err = import(
        "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs:///x\"\n        access: [\"execute\"]\n",
        "x",
        Path::new("/"),
    )
    .expect_err("refused");
    assert_eq!(
        err.to_string(),
        "6:18: access \"execute\": expected \"read\" or \"write\""
    );
    let err = import(
        "version: \"1.0\"\npermission:\n  network: {}\n",
        "x",
        Path::new("/"),
    )
    .expect_err("refused");
    assert_eq!(
        err.to_string(),
        "2:1: unknown key \"permission\" (expected version, description, permissions, $schema)"
    );
    let err = import("version: \"2.0\"\n", "x", Path::new("/")).expect_err("refused");
    assert!(err.message.contains("only wassette's version 1.x"), "{err}");
    let err = import("permissions: [\n", "x", Path::new("/")).expect_err("refused");
    assert_eq!(err.line, 2, "{err}");
}

#[test]
fn names_that_are_not_bare_keys_are_quoted() {
    let imported = import(
        "version: \"1.0\"\npermissions:\n  environment:\n    allow:\n      - key: \"API.KEY\"\n",
        "fetch.rs",
        Path::new("/"),
    )
    .expect("import");
    assert!(
        imported.toml.contains(
            "[components.\"fetch.rs\"]\nenv = { \"API.KEY\" = { from = \"API.KEY\" } }\n"
        ),
        "{}",
        imported.toml
    );
    let policy =
        Policy::parse_with_env(&imported.toml, Path::new("/"), |_| Ok("v".into())).expect("policy");
    assert_eq!(
        policy.settings_for("fetch.rs", "t").env,
        vec![("API.KEY".to_string(), "v".to_string())]
    );
}

/// wassette's and policy-mcp's published example policies, copied as they
/// are (see `runtime/tests/fixtures/wassette/README.md`): each imports, and
/// so does each with the `$schema` key a schema-aware editor adds.
#[test]
fn the_published_example_policies_import() {
    let examples = [
        (
            "get-weather-js",
            include_str!("../../../tests/fixtures/wassette/get-weather-js.policy.yaml"),
        ),
        (
            "fetch-rs",
            include_str!("../../../tests/fixtures/wassette/fetch-rs.policy.yaml"),
        ),
        (
            "wasmtime-wasi",
            include_str!("../../../tests/fixtures/wassette/wasmtime-wasi.yaml"),
        ),
        (
            "comprehensive",
            include_str!("../../../tests/fixtures/wassette/comprehensive.yaml"),
        ),
        (
            "storage-only",
            include_str!("../../../tests/fixtures/wassette/storage-only.yaml"),
        ),
        (
            "minimal",
            include_str!("../../../tests/fixtures/wassette/minimal.yaml"),
        ),
    ];
    let schema =
        "$schema: \"https://raw.githubusercontent.com/microsoft/policy-mcp/main/schema/v1.json\"\n";
    for (name, yaml) in examples {
        for text in [yaml.to_string(), format!("{schema}{yaml}")] {
            let imported = import(&text, name, Path::new("/nonexistent"))
                .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert!(
                imported.toml.contains(&format!("[components.{name}]")),
                "{name}: {}",
                imported.toml
            );
        }
    }
    let weather = import(
        &format!("{schema}{}", examples[0].1),
        "weather",
        Path::new("/srv"),
    )
    .expect("imports");
    assert!(
        weather
            .toml
            .contains("network = [\"api.openweathermap.org\"]"),
        "{}",
        weather.toml
    );
}
