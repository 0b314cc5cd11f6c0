//! The library's modules form a one-way graph: no module reaches, through
//! `crate::` paths, a module that reaches it back. Read from the sources
//! (test code and comments left out), so a new import circle fails here
//! with the circle named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the top-level modules its non-test code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("src folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !name.ends_with(".rs") || name.ends_with("tests.rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).expect("under src");
            let first = relative.components().next().expect("a component");
            let module = first
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            if matches!(module.as_str(), "lib" | "main") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source");
            let code = text.split("\n#[cfg(test)]").next().unwrap_or("");
            let uses = graph.entry(module.clone()).or_default();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (at, _) in line.match_indices("crate::") {
                    let rest = &line[at + "crate::".len()..];
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    // The crate root re-exports `Runtime` and `LoadReport`.
                    let target = match name.as_str() {
                        "Runtime" | "LoadReport" => "runtime".to_string(),
                        _ => name,
                    };
                    if !target.is_empty() && target != module {
                        uses.insert(target);
                    }
                }
            }
        }
    }
    graph
}

/// A circle through `from`, if there is one.
fn circle(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|m| m == from) {
        let mut found = path[at..].to_vec();
        found.push(from.to_string());
        return Some(found);
    }
    if done.contains(from) {
        return None;
    }
    path.push(from.to_string());
    for next in graph.get(from).into_iter().flatten() {
        if let Some(found) = circle(graph, next, path, done) {
            return Some(found);
        }
    }
    path.pop();
    done.insert(from.to_string());
    None
}

#[test]
fn the_module_graph_has_no_circle() {
    let graph = graph();
    assert!(graph.contains_key("call") && graph.contains_key("protocol"));
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        if let Some(found) = circle(&graph, module, &mut Vec::new(), &mut done) {
            panic!("an import circle: {}", found.join(" → "));
        }
    }
}

#[test]
fn the_sandbox_and_the_policy_need_nothing_that_runs_them() {
    let graph = graph();
    for low in ["sandbox", "policy", "catalog", "args", "tool", "observe"] {
        for high in ["call", "runtime", "protocol", "transport", "cli"] {
            assert!(
                !graph[low].contains(high),
                "{low} uses {high}: {:?}",
                graph[low]
            );
        }
    }
}
