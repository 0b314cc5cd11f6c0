//! Hot reload cannot be hijacked: a file that appears beside served ones
//! never takes over a tool name they serve, whatever the order of the file
//! names, and a pinned component is replaced only by a file matching its pin.

use crate::support;

use std::path::{Path, PathBuf};

use airlock::Runtime;
use airlock::catalog::sha256_hex;
use airlock::runtime::reload::Watcher;
use support::component;

/// A runtime serving `dir` with `policy`, and its watcher.
fn serving(dir: &Path, policy: &str) -> (Runtime, Watcher) {
    let paths = vec![dir.to_path_buf()];
    let runtime = support::runtime(policy, &paths);
    let watcher = Watcher::new(&runtime, &paths);
    (runtime, watcher)
}

/// Which file serves each tool, sorted by tool name.
fn served(runtime: &Runtime) -> Vec<(String, PathBuf)> {
    let mut tools: Vec<_> = runtime
        .catalog()
        .tools()
        .map(|t| (t.info.name.clone(), t.component.path.clone()))
        .collect();
    tools.sort();
    tools
}

/// Polls until the watcher has looked at settled files (two polls).
fn settle(watcher: &mut Watcher, runtime: &Runtime) -> airlock::runtime::reload::Changes {
    let first = watcher.poll(runtime);
    assert_eq!(
        first,
        Default::default(),
        "nothing is loaded before it settles"
    );
    watcher.poll(runtime)
}

#[test]
fn a_newcomer_declaring_a_served_name_is_refused_whatever_its_file_name() {
    // "a" sorts before the served "m", "z" after it.
    for newcomer in ["a.wasm", "z.wasm"] {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::copy(component("catalog"), dir.path().join("m.wasm")).expect("copy");
        std::fs::copy(component("export"), dir.path().join("other.wasm")).expect("copy");
        let (runtime, mut watcher) = serving(dir.path(), "");
        let before = served(&runtime);
        assert!(before.iter().any(|(name, _)| name == "lookup_price"));

        // The same tools as m.wasm, under another file name.
        let intruder = dir.path().join(newcomer);
        std::fs::copy(component("catalog"), &intruder).expect("copy");
        let changes = settle(&mut watcher, &runtime);
        assert_eq!(changes.refused, vec![intruder.clone()], "{newcomer}");
        assert!(changes.loaded.is_empty(), "{newcomer}: {changes:?}");
        assert_eq!(served(&runtime), before, "{newcomer} changed what serves");

        // Still refused on later polls, and the served file can still be
        // replaced by a new version of itself.
        assert_eq!(watcher.poll(&runtime), Default::default());
        std::fs::remove_file(dir.path().join("m.wasm")).expect("remove");
        std::fs::copy(component("catalog"), dir.path().join("m.wasm")).expect("copy");
        let _ = watcher.poll(&runtime);
        let _ = watcher.poll(&runtime);
        assert!(
            served(&runtime)
                .iter()
                .filter(|(name, _)| name == "lookup_price")
                .all(|(_, file)| file.ends_with("m.wasm")),
            "{newcomer}"
        );
    }
}

#[test]
fn two_newcomers_with_the_same_names_are_both_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(component("export"), dir.path().join("m.wasm")).expect("copy");
    let (runtime, mut watcher) = serving(dir.path(), "");
    let before = served(&runtime);
    let (a, z) = (dir.path().join("a.wasm"), dir.path().join("z.wasm"));
    std::fs::copy(component("catalog"), &a).expect("copy");
    std::fs::copy(component("catalog"), &z).expect("copy");
    let changes = settle(&mut watcher, &runtime);
    assert_eq!(changes.refused, vec![a, z]);
    assert_eq!(served(&runtime), before);
}

#[test]
fn a_pinned_component_is_replaced_only_by_a_file_matching_its_pin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("catalog.wasm");
    std::fs::copy(component("catalog"), &file).expect("copy");
    let digest = sha256_hex(&std::fs::read(&file).expect("read"));
    let policy = format!("[components.catalog]\nsha256 = \"{digest}\"\n");
    let (runtime, mut watcher) = serving(dir.path(), &policy);
    let before = served(&runtime);

    // Another component under the pinned name: refused, the pinned serves.
    std::fs::remove_file(&file).expect("remove");
    std::fs::copy(component("export"), &file).expect("copy");
    let changes = settle(&mut watcher, &runtime);
    assert_eq!(changes.refused, vec![file.clone()]);
    assert_eq!(served(&runtime), before, "the unpinned file serves");

    // The pinned bytes again (a new stamp): accepted.
    std::fs::remove_file(&file).expect("remove");
    std::fs::copy(component("catalog"), &file).expect("copy");
    let changes = settle(&mut watcher, &runtime);
    assert_eq!(changes.loaded, vec![file]);
    assert_eq!(served(&runtime), before);
}
