//! Hot reload cannot be hijacked: a file that appears beside served ones
//! never takes over a name they serve — a tool's, a resource's URI (a UI
//! page among them), a template, a prompt's — whatever the order of the
//! file names, and a pinned component is replaced only by a file matching
//! its pin.

use crate::support;

use std::path::{Path, PathBuf};

use airlock::Runtime;
use airlock::catalog::sha256_hex;
use airlock::runtime::reload::Watcher;
use support::{component, test_component};

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

/// Which file serves each resource, template and prompt, sorted.
fn offered(runtime: &Runtime) -> Vec<(String, PathBuf)> {
    let catalog = runtime.catalog();
    let mut offered: Vec<_> = catalog
        .resources()
        .map(|(r, c)| (r.uri.clone(), c.path.clone()))
        .chain(
            catalog
                .templates()
                .map(|(t, c)| (t.info.uri_template.clone(), c.path.clone())),
        )
        .chain(
            catalog
                .prompts()
                .map(|(p, c)| (format!("prompt {}", p.name), c.path.clone())),
        )
        .collect();
    offered.sort();
    offered
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
        assert_eq!(refused(&changes), [&intruder], "{newcomer}");
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

/// The files a poll refused.
fn refused(changes: &airlock::runtime::reload::Changes) -> Vec<&PathBuf> {
    changes.refused.iter().map(|(file, _)| file).collect()
}

/// The one refusal of a poll: its file and why.
fn refusal(changes: &airlock::runtime::reload::Changes) -> (&PathBuf, &str) {
    match &changes.refused[..] {
        [(file, why)] => (file, why.as_str()),
        other => panic!("not one refusal: {other:?} ({changes:?})"),
    }
}

/// Resources, templates, prompts and a tool's UI page are names as a
/// tool's is: a newcomer that declares one a served component has is
/// refused, the reason naming the served file and the name, whatever the
/// file names; the served component keeps everything it has (its tools
/// too: a component is served whole or not at all).
#[test]
fn a_newcomer_declaring_a_served_uri_template_prompt_or_page_is_refused() {
    // "a" sorts before the served "m" and "n", "z" after them.
    for newcomer in ["a.wasm", "z.wasm"] {
        let dir = tempfile::tempdir().expect("tempdir");
        // A resource, a template and a prompt, and no tool.
        let only = dir.path().join("m.wasm");
        std::fs::copy(test_component("offers_only"), &only).expect("copy");
        // Tools, and the UI page ui://offers/app of one of them.
        let offers = dir.path().join("n.wasm");
        std::fs::copy(test_component("offers"), &offers).expect("copy");
        let (runtime, mut watcher) = serving(dir.path(), "");
        let (tools, pages) = (served(&runtime), offered(&runtime));
        assert!(tools.iter().any(|(name, _)| name == "bump"), "{tools:?}");
        assert!(pages.contains(&("prompt summarize".to_string(), only.clone())));

        // The same resource, template and prompt as m.wasm.
        let intruder = dir.path().join(newcomer);
        std::fs::copy(test_component("offers_only"), &intruder).expect("copy");
        let changes = settle(&mut watcher, &runtime);
        let (file, why) = refusal(&changes);
        assert_eq!(file, &intruder);
        assert!(changes.loaded.is_empty(), "{newcomer}: {changes:?}");
        assert_eq!(
            why,
            format!(
                "resource \"only://readme\" is declared by both {} and {} (it is unique among \
                 the components served: rename it in one of them, or serve them from separate \
                 airlock processes); refusing {}, {} keeps it",
                only.display(),
                intruder.display(),
                intruder.display(),
                only.display()
            )
        );
        assert_eq!(offered(&runtime), pages, "{newcomer} changed what serves");
        assert_eq!(served(&runtime), tools, "{newcomer} changed what serves");
        assert_eq!(watcher.poll(&runtime), Default::default(), "still refused");

        // offers' UI page, declared for a tool of the newcomer's own.
        std::fs::remove_file(&intruder).expect("remove");
        std::fs::copy(test_component("offers_impostor"), &intruder).expect("copy");
        let changes = settle(&mut watcher, &runtime);
        let (file, why) = refusal(&changes);
        assert_eq!(file, &intruder);
        assert!(
            why.starts_with(&format!(
                "resource \"ui://offers/app\" is declared by both {} and {}",
                offers.display(),
                intruder.display()
            )) && why.ends_with(&format!("{} keeps it", offers.display())),
            "{newcomer}: {why}"
        );
        assert_eq!(
            served(&runtime),
            tools,
            "{newcomer}: the page's tools vanished"
        );
        assert_eq!(offered(&runtime), pages, "{newcomer} took the page");
        let catalog = runtime.catalog();
        let (page_of, _) = catalog.resource_for("ui://offers/app").expect("served");
        assert_eq!(page_of.path, offers);
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
    assert_eq!(refused(&changes), [&a, &z]);
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
    assert_eq!(refused(&changes), [&file]);
    assert_eq!(served(&runtime), before, "the unpinned file serves");

    // The pinned bytes again (a new stamp): accepted.
    std::fs::remove_file(&file).expect("remove");
    std::fs::copy(component("catalog"), &file).expect("copy");
    let changes = settle(&mut watcher, &runtime);
    assert_eq!(changes.loaded, vec![file]);
    assert_eq!(served(&runtime), before);
}
