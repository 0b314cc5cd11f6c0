//! The components of a start that are still loading, and what each waits
//! on: fetching (with the bytes received so far), a place to compile, or
//! compiling. A component named by reference starts as fetching, a file as
//! compiling (reading it is part of that), so a start that is asked at
//! once does not see a phase that lasts a microsecond. `/readyz` says how many are in each phase; the log names
//! them (see [`super::loading`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use crate::source::{Progress, Source, human_bytes};

/// What a component still loading waits on.
#[derive(Debug, Clone)]
pub enum Phase {
    /// Its bytes are coming from a registry or URL.
    Fetching(Progress),
    /// Its bytes are here; the places to compile are all taken.
    WaitingToCompile,
    /// Compiling, linking and listing its tools.
    Compiling,
}

impl Phase {
    /// The phase's name, as `/readyz` counts it.
    pub fn name(&self) -> &'static str {
        match self {
            Phase::Fetching(_) => "fetching",
            Phase::WaitingToCompile => "waiting to compile",
            Phase::Compiling => "compiling",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Phase::Fetching(progress) => {
                write!(f, "fetching, {} so far", human_bytes(progress.received()))
            }
            other => f.write_str(other.name()),
        }
    }
}

/// One component still loading.
#[derive(Debug, Clone)]
pub struct Pending {
    pub file: PathBuf,
    pub phase: Phase,
    /// When it entered its phase.
    since: Instant,
}

impl Pending {
    /// How long it has been in its phase.
    pub fn waited(&self) -> Duration {
        self.since.elapsed()
    }
}

impl fmt::Display for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.file.display(), self.phase)
    }
}

/// The components still loading, in file order.
#[derive(Debug)]
pub struct PendingList {
    entries: RwLock<Vec<Pending>>,
    /// How many there are, for those who wait for none ([`PendingList::settled`]),
    /// and when the list was last set (the start).
    count: tokio::sync::watch::Sender<(usize, Instant)>,
}

impl Default for PendingList {
    fn default() -> Self {
        PendingList {
            entries: RwLock::default(),
            count: tokio::sync::watch::Sender::new((0, Instant::now())),
        }
    }
}

impl PendingList {
    /// Replaces the list: `files`, each fetching or compiling.
    pub fn set(&self, files: &[PathBuf]) {
        let now = Instant::now();
        let first = |file: &Path| match Source::from_path(file) {
            Ok(source) if source.is_remote() => Phase::Fetching(Progress::default()),
            _ => Phase::Compiling,
        };
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        *entries = files
            .iter()
            .map(|file| Pending {
                file: file.clone(),
                phase: first(file),
                since: now,
            })
            .collect();
        self.count.send_replace((entries.len(), now));
    }

    /// Waits until nothing is loading, but not past `bound` after the list
    /// was set; true when nothing is loading.
    pub async fn settled(&self, bound: Duration) -> bool {
        let mut count = self.count.subscribe();
        let started = count.borrow().1;
        let until = tokio::time::Instant::from_std(started + bound);
        let none = count.wait_for(|(n, _)| *n == 0);
        matches!(tokio::time::timeout_at(until, none).await, Ok(Ok(_)))
    }

    /// Moves `file` to `phase` (nothing when it is not in the list: a
    /// load outside a start).
    pub fn enter(&self, file: &Path, phase: Phase) {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = entries.iter_mut().find(|e| e.file == file) {
            if entry.phase.name() != phase.name() {
                entry.since = Instant::now();
            }
            entry.phase = phase;
        }
    }

    /// Takes `file` off the list: it loaded, or was refused.
    pub fn remove(&self, file: &Path) {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        entries.retain(|e| e.file != file);
        let left = entries.len();
        self.count.send_modify(|(n, _)| *n = left);
    }

    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The list now.
    pub fn snapshot(&self) -> Vec<Pending> {
        self.entries
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// How many of `pending` are in each phase, for people who may not see
/// which components they are (`/readyz` needs no token): `compiling` when
/// all are, else `loading (1 fetching, 2 compiling)`.
pub fn summary(pending: &[Pending]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for entry in pending {
        let name = entry.phase.name();
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    match counts.as_slice() {
        [] => "loading".to_string(),
        [(name, _)] => (*name).to_string(),
        several => format!(
            "loading ({})",
            several
                .iter()
                .map(|(name, count)| format!("{count} {name}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_phases_and_names_no_component() {
        let list = PendingList::default();
        let files = [
            PathBuf::from("oci://r.example/secret/catalog:1"),
            PathBuf::from("/srv/tools/a.wasm"),
            PathBuf::from("/srv/tools/b.wasm"),
        ];
        list.set(&files);
        let text = summary(&list.snapshot());
        assert_eq!(text, "loading (1 fetching, 2 compiling)");
        assert!(!text.contains("secret"), "{text}");
        list.enter(&files[0], Phase::Compiling);
        assert_eq!(summary(&list.snapshot()), "compiling");
        list.enter(&files[0], Phase::Fetching(Progress::default()));
        list.remove(&files[1]);
        assert_eq!(list.len(), 2);
        list.enter(&files[2], Phase::WaitingToCompile);
        assert_eq!(
            summary(&list.snapshot()),
            "loading (1 fetching, 1 waiting to compile)"
        );
        let named = list.snapshot()[0].to_string();
        assert_eq!(
            named,
            "oci://r.example/secret/catalog:1 (fetching, 0 B so far)"
        );
    }
}
