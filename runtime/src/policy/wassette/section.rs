//! What the import collects from a wassette policy before writing it as
//! TOML (`write.rs`): the [`Section`] of the converted policy, its folders
//! and their modes, and the notes on what changed. At the bottom of the
//! import: reading the YAML (`mod.rs`) fills it, `write.rs` writes it.

use std::path::PathBuf;

/// How a folder is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    ReadOnly,
    ReadWrite,
}

/// A folder to grant: the wassette `storage` entry it came from, and
/// where it is mounted.
pub(super) struct Folder {
    pub(super) uri: String,
    pub(super) host: PathBuf,
    pub(super) guest: String,
    pub(super) mode: Mode,
}

/// What the import collects before writing the TOML.
#[derive(Default)]
pub(super) struct Section {
    pub(super) description: Option<String>,
    pub(super) folders: Vec<Folder>,
    pub(super) network: Vec<String>,
    pub(super) env: Vec<String>,
    pub(super) memory: Option<u64>,
    pub(super) time: Option<String>,
    pub(super) fuel: Option<u64>,
    pub(super) notes: Vec<String>,
}
