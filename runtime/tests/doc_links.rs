//! Every relative link in `README.md` and `docs/**/*.md` resolves: the file
//! or folder exists, and a `#anchor` names a heading of the page it points
//! to (GitHub's heading ids). Links to other sites are not fetched.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The guide's pages: the README and every Markdown file under `docs/`.
fn pages(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a folder entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                out.push(path);
            }
        }
    }
    let mut pages = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut pages);
    pages
}

/// The lines of a page outside fenced code blocks, with their numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let ticks = trimmed.len() - trimmed.trim_start_matches('`').len();
        let tildes = trimmed.len() - trimmed.trim_start_matches('~').len();
        let marker = if ticks >= 3 {
            Some(&trimmed[..ticks])
        } else if tildes >= 3 {
            Some(&trimmed[..tildes])
        } else {
            None
        };
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m))
                if m.starts_with(open) && trimmed[m.len()..].trim().is_empty() =>
            {
                fence = None
            }
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// A line without its inline code spans (`[a](b)` inside backticks is not a link).
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let run = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let delimiter = &rest[start..start + run];
        match rest[start + run..].find(delimiter) {
            Some(end) => rest = &rest[start + run + end + run..],
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links `[text](target)` and images of a line.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].split_whitespace().next().unwrap_or("");
        if !target.is_empty() {
            targets.push(target.to_string());
        }
        rest = &after[end.min(after.len())..];
    }
    targets
}

/// GitHub's id for a heading: lower case, punctuation dropped (but `-` and
/// `_`), spaces as `-`; a repeated id gets `-1`, `-2`, ….
fn heading_ids(text: &str) -> HashSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = HashSet::new();
    for (_, line) in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        // The text of links, not their targets.
        let mut plain = String::new();
        let mut rest = heading.trim();
        while let Some(at) = rest.find("](") {
            plain.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            rest = &after[after.find(')').map_or(after.len(), |i| i + 1)..];
        }
        plain.push_str(rest);
        let id: String = plain
            .trim()
            .trim_end_matches('#')
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                '-' | '_' => Some(c),
                c if c.is_alphanumeric() => Some(c),
                _ => None,
            })
            .collect();
        let n = seen.entry(id.clone()).or_insert(0);
        ids.insert(if *n == 0 {
            id.clone()
        } else {
            format!("{id}-{n}")
        });
        *n += 1;
    }
    ids
}

/// What is wrong with the links of the given pages, one line each.
fn broken_links(root: &Path, pages: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for page in pages {
        let text =
            std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        let shown = page
            .strip_prefix(root)
            .unwrap_or(page)
            .display()
            .to_string();
        for (number, line) in prose(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    page.parent().expect("a page's folder").join(path)
                };
                if !file.exists() {
                    broken.push(format!(
                        "{shown}:{number}: {target}: no such file or folder"
                    ));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if file.extension().is_none_or(|ext| ext != "md") {
                    broken.push(format!(
                        "{shown}:{number}: {target}: an anchor into a file that is not Markdown"
                    ));
                    continue;
                }
                let target_text = std::fs::read_to_string(&file).expect("the linked page");
                if !heading_ids(&target_text).contains(anchor) {
                    broken.push(format!(
                        "{shown}:{number}: {target}: no heading with the id `{anchor}` in {}",
                        file.strip_prefix(root).unwrap_or(&file).display()
                    ));
                }
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = root();
    let pages = pages(&root);
    assert!(pages.len() > 5, "the guide's pages: {pages:?}");
    let broken = broken_links(&root, &pages);
    assert!(
        broken.is_empty(),
        "{} broken link(s) in README.md and docs/:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn a_broken_link_or_anchor_is_found() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let page = dir.path().join("page.md");
    std::fs::write(
        dir.path().join("other.md"),
        "# Other page\n\n## The `/rpc` door: plain\n",
    )
    .unwrap();
    std::fs::write(
        &page,
        "# A page\n\n[fine](other.md#the-rpc-door-plain) [self](#a-page) [code `x`](other.md)\n\
         [gone](missing.md) [bad anchor](other.md#nowhere) `[not a link](missing.md)`\n\
         ```text\n[in a block](missing.md)\n```\n",
    )
    .unwrap();
    let broken = broken_links(dir.path(), &[page]);
    assert_eq!(
        broken,
        [
            "page.md:4: missing.md: no such file or folder",
            "page.md:4: other.md#nowhere: no heading with the id `nowhere` in other.md",
        ],
        "{broken:#?}"
    );
}
