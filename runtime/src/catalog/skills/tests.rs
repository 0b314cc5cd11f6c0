use super::*;

const SKILL_MD_TEXT: &str = "---\nname: order-help\ndescription: Answers questions about orders.\nlicense: MIT\nmetadata:\n  version: \"1.2\"\n---\n\n# Order help\n";

fn described(path: &str, files: &[(&str, &str)]) -> DescribedSkill {
    DescribedSkill {
        path: path.into(),
        files: files
            .iter()
            .map(|(p, text)| (p.to_string(), text.as_bytes().to_vec()))
            .collect(),
    }
}

fn one(skill: DescribedSkill) -> Result<Skill, String> {
    check(Path::new("c.wasm"), vec![skill])
        .map(|mut skills| skills.remove(0))
        .map_err(|e| e.to_string())
}

fn refused(skill: DescribedSkill) -> String {
    one(skill).expect_err("refused")
}

#[test]
fn a_skill_is_served_with_its_front_matter_verbatim_and_digests_computed_here() {
    let skill = one(described(
        "order-help",
        &[
            ("references/steps.md", "1. Look"),
            ("SKILL.md", SKILL_MD_TEXT),
        ],
    ))
    .expect("accepted");
    assert_eq!(skill.uri, "skill://order-help/SKILL.md");
    assert_eq!(skill.root, "skill://order-help");
    assert_eq!(skill.name, "order-help");
    assert_eq!(
        Value::Object(skill.frontmatter.clone()),
        serde_json::json!({
            "name": "order-help",
            "description": "Answers questions about orders.",
            "license": "MIT",
            "metadata": {"version": "1.2"}
        })
    );
    let paths: Vec<&str> = skill.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["SKILL.md", "references/steps.md"]);
    let steps = skill
        .file("skill://order-help/references/steps.md")
        .expect("file");
    assert_eq!(
        steps.digest,
        format!("sha256:{}", crate::catalog::sha256_hex(b"1. Look"))
    );
    assert_eq!(steps.mime_type, "text/markdown");
    let entry = skill.entry();
    assert_eq!(entry["resources"][1]["size"], 7);
    assert_eq!(entry["resources"][0]["uri"], "skill://order-help/SKILL.md");
    assert!(skill.is_directory("skill://order-help"));
    assert!(skill.is_directory("skill://order-help/references"));
    assert!(!skill.is_directory("skill://order-help/references/steps.md"));
    assert!(!skill.is_directory("skill://order-help/ref"));
    let resources: Vec<ResourceInfo> = skill.resources().collect();
    assert_eq!(resources[0].name, "order-help");
    assert_eq!(
        resources[0].description.as_deref(),
        Some("Answers questions about orders.")
    );
    assert_eq!(resources[1].name, "steps.md");
}

#[test]
fn a_prefix_may_come_before_the_skills_folder() {
    let text = SKILL_MD_TEXT;
    let skill = one(described("acme/billing/order-help", &[("SKILL.md", text)])).expect("ok");
    assert_eq!(skill.uri, "skill://acme/billing/order-help/SKILL.md");
}

#[test]
fn the_agent_skills_rules_refuse_a_bad_skill_with_the_reason() {
    let with = |front: &str| format!("---\n{front}\n---\nbody\n");
    for (path, text, reason) in [
        (
            "order-help",
            with("name: orders\ndescription: x"),
            "`name` is \"orders\" but its folder is \"order-help\"",
        ),
        (
            "Order-Help",
            with("name: Order-Help\ndescription: x"),
            "its folder \"Order-Help\": a skill's name is 1 to 64 lowercase",
        ),
        (
            "order--help",
            with("name: order--help\ndescription: x"),
            "single hyphens",
        ),
        (
            "order-help",
            with("name: order-help"),
            "the front matter has no `description`",
        ),
        (
            "order-help",
            with("name: order-help\ndescription: \"\""),
            "`description` must say what the skill does",
        ),
        (
            "order-help",
            with(&format!(
                "name: order-help\ndescription: {}",
                "x".repeat(1025)
            )),
            "in 1 to 1024 characters (it has 1025)",
        ),
        (
            "order-help",
            "# no front matter\n".to_string(),
            "SKILL.md must begin with YAML front matter",
        ),
        (
            "order-help",
            with("name: order-help\ndescription: [unclosed"),
            "its front matter is not YAML",
        ),
        (
            "order-help",
            with("name: order-help\ndescription: x\ncompatibility: 3"),
            "`compatibility` in the front matter must be text",
        ),
        (
            "order help",
            with("name: order help\ndescription: x"),
            "which a skill:// URI cannot carry",
        ),
    ] {
        let err = refused(described(path, &[("SKILL.md", &text)]));
        assert!(err.contains(reason), "{path} {text:?}: {err}");
        assert!(
            err.starts_with(&format!("c.wasm: skill {path:?}: ")),
            "{err}"
        );
    }
    let err = refused(described("order-help", &[("README.md", "x")]));
    assert!(err.contains("it has no SKILL.md at its root"), "{err}");
    let err = refused(described(
        "order-help",
        &[("SKILL.md", SKILL_MD_TEXT), ("../escape.md", "x")],
    ));
    assert!(err.contains("file \"../escape.md\""), "{err}");
    let err = refused(described(
        "order-help",
        &[("SKILL.md", SKILL_MD_TEXT), ("SKILL.md", SKILL_MD_TEXT)],
    ));
    assert!(err.contains("listed twice"), "{err}");
}

#[test]
fn the_extensions_limits_bound_a_skill() {
    let mut many = described("order-help", &[("SKILL.md", SKILL_MD_TEXT)]);
    for i in 0..MAX_FILES {
        many.files.push((format!("f{i}.txt"), Vec::new()));
    }
    assert!(refused(many).contains("513 files, more than the 512"));
    let mut big = described("order-help", &[("SKILL.md", SKILL_MD_TEXT)]);
    big.files.push(("big.bin".into(), vec![0; MAX_BYTES]));
    assert!(refused(big).contains("more than the 16 MiB a skill may"));
}

#[test]
fn a_skill_declared_twice_is_refused() {
    let skill = described("order-help", &[("SKILL.md", SKILL_MD_TEXT)]);
    let err = check(Path::new("c.wasm"), vec![skill.clone(), skill])
        .expect_err("twice")
        .to_string();
    assert!(err.contains("declared twice in this component"), "{err}");
}
