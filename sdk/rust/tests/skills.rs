//! `#[skills("folder")]`: every skill of the folder is bundled, each file
//! once with its path inside the skill, and listed by the toolbox the
//! contract's `skills.describe` exports.

use airlock_sdk::{Skills, skills, toolbox};

/// The skills the tests bundle.
#[skills("tests/skills")]
struct Bundled;

#[test]
fn a_folder_of_skills_is_bundled_file_by_file() {
    let files: Vec<(&str, &str)> = Bundled::FILES.iter().map(|f| (f.skill, f.path)).collect();
    assert_eq!(
        files,
        [
            ("order-help", "SKILL.md"),
            ("order-help", "references/steps.md")
        ]
    );
    let skill_md = Bundled::FILES[0].bytes;
    assert_eq!(
        skill_md,
        include_bytes!("skills/order-help/SKILL.md").as_slice()
    );
}

#[test]
fn the_toolbox_lists_each_skill_with_its_files() {
    let tools = toolbox![Bundled];
    let skills = tools.skills();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].path, "order-help");
    let paths: Vec<&str> = skills[0].files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["SKILL.md", "references/steps.md"]);
    assert!(tools.describe().is_empty());
}
