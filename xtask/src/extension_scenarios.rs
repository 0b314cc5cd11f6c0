//! The conformance suite's scenarios of the extensions airlock serves that
//! no requirement set runs (today the MCP Skills extension's three,
//! SEP-2640), run one by one at each revision and counted from their
//! checks: a scenario passes only when some check ran and passed and none
//! failed; one whose checks were all skipped (the extension undeclared, no
//! skill served) is a failure here, never a pass.

use std::path::Path;
use std::process::Command;

use crate::Tally;

/// The scenarios, each run at 2026-07-28 (the extension's revision) and
/// at 2025-11-25 (`--force`: an extension scenario is on no timeline).
const SCENARIOS: [&str; 3] = [
    "sep-2640-skills-directory",
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
];
const REVISIONS: [(&str, &[&str]); 2] = [
    ("2026-07-28", &[]),
    ("2025-11-25", &["--spec-version", "2025-11-25", "--force"]),
];

/// What one scenario's checks came to.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Counted {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub warnings: u64,
}

impl Counted {
    /// Counts the statuses of a `checks.json` the suite wrote, leaving out
    /// the checks the suite adds to every scenario (`wire-*`: the messages
    /// were valid), which pass even when the scenario's own all skipped.
    pub(crate) fn of(checks: &str) -> Counted {
        let checks: Vec<serde_json::Value> = serde_json::from_str(checks).unwrap_or_default();
        let mut counted = Counted::default();
        for check in &checks {
            let id = check["id"].as_str().unwrap_or_default();
            if id.starts_with("wire-") {
                continue;
            }
            match check["status"].as_str() {
                Some("SUCCESS") => counted.passed += 1,
                Some("FAILURE") => counted.failed += 1,
                Some("SKIPPED") => counted.skipped += 1,
                Some("WARNING") => counted.warnings += 1,
                _ => {}
            }
        }
        counted
    }

    /// Ran and passed: some check passed, none failed.
    pub(crate) fn verdict(&self) -> Result<(), String> {
        match (self.failed, self.passed) {
            (0, 0) => Err(format!(
                "no check ran ({} skipped): is the extension declared, and something served?",
                self.skipped
            )),
            (0, _) => Ok(()),
            (n, _) => Err(format!("{n} check(s) failed")),
        }
    }
}

/// Runs each scenario against `url` (a server of the conformance fixtures
/// and the first-party components) and counts it into `tally`.
pub(crate) fn run(node: &Path, suite: &Path, url: &str, results: &Path, tally: &mut Tally) {
    for (revision, args) in REVISIONS {
        for scenario in SCENARIOS {
            let label = format!("conformance {scenario} ({revision})");
            let out = results.join(format!("{scenario}-{revision}"));
            let _ = std::fs::remove_dir_all(&out);
            let mut cmd = Command::new(node);
            cmd.arg(suite)
                .args(["server", "--url", url, "--scenario", scenario])
                .args(args)
                .arg("-o")
                .arg(&out);
            eprintln!("+ {cmd:?}");
            let verdict = match cmd.output() {
                Ok(_) => match checks_in(&out) {
                    Some(checks) => {
                        let counted = Counted::of(&checks);
                        println!(
                            "{label}: {} checks passed, {} failed, {} skipped, {} warnings",
                            counted.passed, counted.failed, counted.skipped, counted.warnings
                        );
                        tally.ignored += counted.skipped;
                        counted.verdict()
                    }
                    None => Err(format!("no checks.json under {}", out.display())),
                },
                Err(err) => Err(format!("cannot run: {err}")),
            };
            match verdict {
                Ok(()) => tally.passed += 1,
                Err(why) => {
                    println!("{label}: FAILED: {why}");
                    tally.failed += 1;
                    tally.failures.push(format!("{label}: {why}"));
                }
            }
        }
    }
}

/// The scenarios of a whole run whose own checks all skipped: their
/// results under `dir` (`server-<scenario>-<timestamp>/checks.json`) have
/// no check passed or failed, the suite's wire checks aside.
pub(crate) fn skipped_scenarios(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut skipped = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // The timestamp is six `-`-separated parts: 2026-12-06T04-30-19-531Z.
        let Some(scenario) = name
            .strip_prefix("server-")
            .and_then(|rest| rest.rsplitn(7, '-').nth(6))
        else {
            continue;
        };
        let Ok(checks) = std::fs::read_to_string(entry.path().join("checks.json")) else {
            continue;
        };
        let counted = Counted::of(&checks);
        if counted.passed == 0 && counted.failed == 0 {
            skipped.push(scenario.to_string());
        }
    }
    skipped.sort();
    skipped
}

/// The text of the one `checks.json` the suite wrote under `dir`.
fn checks_in(dir: &Path) -> Option<String> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(text) = checks_in(&path) {
                return Some(text);
            }
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            return std::fs::read_to_string(&path).ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_whose_checks_all_skipped_is_not_a_pass() {
        // The suite's wire check passes whatever the scenario did.
        let skipped = r#"[{"id": "a", "status": "SKIPPED"}, {"id": "b", "status": "SKIPPED"},
            {"id": "wire-schema-valid", "status": "SUCCESS"}]"#;
        let counted = Counted::of(skipped);
        assert_eq!((counted.passed, counted.skipped), (0, 2));
        assert!(counted.verdict().is_err());
        let ran = r#"[{"id": "a", "status": "SUCCESS"}, {"id": "b", "status": "SKIPPED"},
            {"id": "c", "status": "WARNING"}]"#;
        let counted = Counted::of(ran);
        assert_eq!(
            (counted.passed, counted.skipped, counted.warnings),
            (1, 1, 1)
        );
        assert!(counted.verdict().is_ok());
        let failed = r#"[{"id": "a", "status": "SUCCESS"}, {"id": "b", "status": "FAILURE"}]"#;
        assert!(Counted::of(failed).verdict().is_err());
        assert!(Counted::of("not json").verdict().is_err());
    }

    #[test]
    fn a_run_names_its_scenarios_that_only_skipped() {
        let dir = std::env::temp_dir().join(format!("xtask-skipped-{}", std::process::id()));
        let write = |scenario: &str, checks: &str| {
            let at = dir.join(format!("server-{scenario}-2026-12-06T04-30-19-531Z"));
            std::fs::create_dir_all(&at).expect("dir");
            std::fs::write(at.join("checks.json"), checks).expect("write");
        };
        write("tools-list", r#"[{"id": "a", "status": "SUCCESS"}]"#);
        write(
            "sep-2640-skills-manifest",
            r#"[{"id": "a", "status": "SKIPPED"}, {"id": "wire-schema-valid", "status": "SUCCESS"}]"#,
        );
        assert_eq!(skipped_scenarios(&dir), ["sep-2640-skills-manifest"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
