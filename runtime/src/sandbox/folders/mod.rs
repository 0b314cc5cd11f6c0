//! Create-only folders: the runtime's own layer between the guest and
//! wasmtime-wasi's `wasi:filesystem/types`.
//!
//! wasmtime-wasi mounts a folder read-only or read-write, nothing in
//! between. A tool that is neither read-only nor destructive gets its
//! read-write folders *create-only* (the rule is in
//! `policy::effective`, the table of what each hint enforces in
//! `docs/policy.md`, "Capabilities"): it may add new files and folders and write to what it
//! created during this call, and must not modify, truncate, rename or delete
//! anything that existed before the call.
//!
//! # The model
//!
//! A create-only folder is mounted read-write in wasmtime-wasi, so that
//! creation itself works, and every `wasi:filesystem/types` function is
//! linked to [`Guarded`] instead of wasmtime-wasi directly (each call that
//! does I/O made within the call's deadline: [`super::bounded_fs`]).
//! Each function either delegates unchanged (reads, listing, `stat`,
//! `sync`, …) or first asks the call's [`FolderGuard`]:
//!
//! - the guard records the *identity* of everything the call creates: the
//!   metadata hash wasmtime-wasi derives from device and inode, taken from
//!   the new file's open descriptor (`open-at` with `create`) or, for
//!   `create-directory-at` and `symlink-at`, from the new entry right after
//!   it was made;
//! - a mutation is allowed only on an entry whose identity is recorded:
//!   `write`, `set-size`, `set-times`, `write-via-stream`,
//!   `append-via-stream` on a descriptor; `open-at` with `write`,
//!   `truncate` or `create` on an existing entry; `unlink-file-at`,
//!   `remove-directory-at`, `set-times-at`, and the source of `rename-at`
//!   and `link-at`; the target of `rename-at` and `link-at` must not exist
//!   or be the call's own;
//! - a refusal is `error-code::not-permitted`, which the guest sees as an
//!   ordinary error (`EPERM`); an identity the guard cannot determine
//!   refuses the operation with the error of the lookup (fails closed).
//!
//! Paths are resolved by wasmtime-wasi itself (`metadata-hash-at`, with the
//! same symlink rule as the operation that follows), inside the same
//! capability sandbox as the operation, so `..`, absolute paths and
//! symlinks leading outside the mount fail the same way in the check as in
//! the operation. A symlink the call created is its own entry: removing it is
//! allowed, writing *through* it checks the entry it points to.
//!
//! When the guard is off (no create-only mount in the call), every function
//! delegates unchanged and wasmtime-wasi's `FsPerms` alone decide.
//!
//! # Limits
//!
//! - Race-free against the guest: host functions of one call run one at a
//!   time, so nothing the guest does can change the folder between the check
//!   and the operation. Not race-free against *other host processes* writing
//!   the same folder: an entry swapped in between check and operation by
//!   someone else is not detected (except for `open-at`, which re-checks the
//!   opened descriptor and, when creating, adds `exclusive` so it never opens
//!   an entry that appeared in between).
//! - Identities are wasmtime-wasi's 64-bit hash of (device, inode). A
//!   collision between a pre-existing entry and one the call created, or an
//!   inode freed and reused by another process within the call, would let the
//!   call modify that entry.
//! - The guard is per call, not per mount: when a call has any create-only
//!   mount, its other writable mounts are guarded too (stricter, never
//!   wider). The effective grant never mixes create-only and full
//!   read-write mounts in one call.
//! - Creating inside a pre-existing folder changes that folder's entries and
//!   times; that is what "may create" means.
//! - `open-at` with `create` but without `exclusive` on a dangling symlink
//!   fails with `exist` (the runtime adds `exclusive`).

use std::collections::{HashMap, HashSet};

use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as fs;
use wasmtime_wasi::p2::bindings::sync::io::streams;
use wasmtime_wasi::p2::{FsError, FsResult};

mod host;

use super::bounded_fs::{BoundedFs, bounded};
use super::budget::{Descriptors, Exhausted, Held, NoDescriptor, WriteBudget};
use super::refusals::{Refusals, Rule};
use crate::policy::Limits;
#[cfg(test)] // the tests build their guards from grants (`super::*`)
use crate::policy::{Access, Grant};

/// The identity of a filesystem entry: wasmtime-wasi's metadata hash of its
/// device and inode.
type Identity = (u64, u64);

/// Per-call record of what the call created, whether mutations are limited
/// to it, and what the call may still write, create and hold open (see
/// [`super::budget`]).
#[derive(Debug)]
pub struct FolderGuard {
    create_only: bool,
    created: HashSet<Identity>,
    written: WriteBudget,
    /// Entries the call may still create (`limits.files`).
    files_left: u64,
    files_limit: u64,
    /// Descriptors the call opened and holds, by resource handle, each
    /// counted against the call's and the process's budget (`limits.open`).
    held: HashMap<u32, Held>,
    descriptors: Descriptors,
    create_refused: bool,
    /// Operations refused by the read-only and create-only rules.
    refusals: Refusals,
}

impl FolderGuard {
    /// A call's guard: `create_only` limits mutations to what the call
    /// creates; `limits` gives its write, create and descriptor budgets.
    /// (What a grant makes of it: `FolderGuard::for_grant` in
    /// `sandbox::provision`.)
    pub fn new(create_only: bool, limits: &Limits, refusals: Refusals) -> Self {
        FolderGuard {
            create_only,
            created: HashSet::new(),
            written: WriteBudget::new(limits.write),
            files_left: limits.files,
            files_limit: limits.files,
            held: HashMap::new(),
            descriptors: Descriptors::new(limits.open),
            create_refused: false,
            refusals,
        }
    }

    /// Takes `bytes` from the write budget, or refuses (`insufficient-space`).
    fn spend(&self, bytes: u64) -> FsResult<()> {
        self.written
            .spend(bytes)
            .map_err(|Exhausted| ErrorCode::InsufficientSpace.into())
    }

    /// Refuses (`quota`) when the call may create no more entries.
    fn may_create(&mut self) -> FsResult<()> {
        if self.files_left == 0 {
            self.create_refused = true;
            tracing::info!(
                "a call reached its limit of {} files created (limits.files)",
                self.files_limit
            );
            return Err(ErrorCode::Quota.into());
        }
        Ok(())
    }

    fn created_one(&mut self) {
        self.files_left = self.files_left.saturating_sub(1);
    }

    /// A place for one more descriptor, in the call's and the process's
    /// budget, or a refusal (`quota`).
    fn may_open(&mut self) -> FsResult<Held> {
        self.descriptors.take().map_err(|why| {
            match why {
                NoDescriptor::Call(_) => tracing::info!("an open was refused: {why}"),
                NoDescriptor::Process => tracing::warn!("an open was refused: {why}"),
            }
            ErrorCode::Quota.into()
        })
    }

    /// The limits this call ran into, in words for its error message
    /// (a guest sees only an I/O error and may report just that).
    pub fn limits_reached(&self) -> Vec<String> {
        let mut reached = Vec::new();
        if self.written.was_refused() {
            reached.push(format!(
                "limits.write ({} written into its folders)",
                super::format_size(self.written.limit())
            ));
        }
        if self.create_refused {
            reached.push(format!("limits.files ({} created)", self.files_limit));
        }
        if self.descriptors.was_refused() {
            reached.push(format!(
                "limits.open ({} held at once)",
                self.descriptors.limit()
            ));
        }
        reached
    }

    /// The call's descriptor budget, to share with its network layer.
    pub fn descriptors(&self) -> Descriptors {
        self.descriptors.clone()
    }

    /// Whether mutations are limited to what the call created.
    pub fn is_create_only(&self) -> bool {
        self.create_only
    }

    /// How many operations the read-only and create-only rules refused.
    pub fn refusals(&self) -> u64 {
        self.refusals.count()
    }
}

/// `HasData` marker for linking `wasi:filesystem/types` through the guard.
pub struct GuardedFolders;

impl HasData for GuardedFolders {
    type Data<'a> = Guarded<'a>;
}

/// wasmtime-wasi's filesystem view of one call (bounded by the call's
/// deadline), together with its guard.
pub struct Guarded<'a> {
    fs: BoundedFs<'a>,
    guard: &'a mut FolderGuard,
}

impl<'a> Guarded<'a> {
    pub fn new(fs: BoundedFs<'a>, guard: &'a mut FolderGuard) -> Self {
        Guarded { fs, guard }
    }
}

/// Links `wasi:filesystem/types` and `preopens` through the guard,
/// replacing what `wasmtime_wasi::p2::add_to_linker_sync` linked for them.
/// Call after that; `get` gives a store's [`Guarded`] view
/// (`CallState::folders`).
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> Guarded<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = fs::add_to_linker::<T, GuardedFolders>(linker, get)
        .and_then(|()| preopens::add_to_linker::<T, GuardedFolders>(linker, get));
    linker.allow_shadowing(false);
    linked
}

fn borrow(fd: &Resource<Descriptor>) -> Resource<Descriptor> {
    Resource::new_borrow(fd.rep())
}

fn path_flags(follow: bool) -> fs::PathFlags {
    if follow {
        fs::PathFlags::SYMLINK_FOLLOW
    } else {
        fs::PathFlags::empty()
    }
}

impl Guarded<'_> {
    /// Refuses, as wasmtime-wasi's `FsPerms` would, to change anything
    /// through `fd` when its folder is mounted read-only; logged and counted.
    fn writable(
        &mut self,
        fd: &Resource<Descriptor>,
        what: &str,
        path: Option<&str>,
    ) -> FsResult<()> {
        let perms = match self.fs.fs.table.get(fd).map_err(FsError::trap)? {
            Descriptor::File(f) => f.perms,
            Descriptor::Dir(d) => d.perms,
        };
        if perms.write_not_permitted() {
            return Err(self.refused(Rule::ReadOnly, what, fd, path));
        }
        Ok(())
    }

    /// A refusal by `rule`: counted, logged, `not-permitted` for the guest.
    fn refused(
        &mut self,
        rule: Rule,
        what: &str,
        fd: &Resource<Descriptor>,
        path: Option<&str>,
    ) -> FsError {
        self.guard.refusals.refuse(rule, what, fd.rep(), path)
    }

    /// Identity of what `fd` refers to.
    fn identity(&mut self, fd: &Resource<Descriptor>) -> FsResult<Identity> {
        let hash = bounded!(&mut self.fs, metadata_hash(borrow(fd)))?;
        Ok((hash.lower, hash.upper))
    }

    /// Identity of the entry at `path` under `fd`, `None` when there is none.
    fn identity_at(
        &mut self,
        fd: &Resource<Descriptor>,
        follow: bool,
        path: &str,
    ) -> FsResult<Option<Identity>> {
        let flags = path_flags(follow).into();
        match bounded!(
            &mut self.fs,
            metadata_hash_at(borrow(fd), flags, path.to_string())
        ) {
            Ok(hash) => Ok(Some((hash.lower, hash.upper))),
            Err(err) if matches!(err.downcast_ref(), Some(ErrorCode::NoEntry)) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Refuses unless `fd` refers to something this call created.
    fn own_descriptor(&mut self, fd: &Resource<Descriptor>) -> FsResult<()> {
        if !self.guard.create_only {
            return Ok(());
        }
        let id = self.identity(fd)?;
        if self.guard.created.contains(&id) {
            Ok(())
        } else {
            Err(self.refused(Rule::CreateOnly, "change", fd, None))
        }
    }

    /// Refuses unless the entry at `path` exists and this call created it.
    fn own_entry(&mut self, fd: &Resource<Descriptor>, follow: bool, path: &str) -> FsResult<()> {
        if !self.guard.create_only {
            return Ok(());
        }
        match self.identity_at(fd, follow, path)? {
            Some(id) if self.guard.created.contains(&id) => Ok(()),
            Some(_) => Err(self.refused(Rule::CreateOnly, "change", fd, Some(path))),
            None => Err(ErrorCode::NoEntry.into()),
        }
    }

    /// Refuses when an entry exists at `path` that this call did not create.
    fn free_or_own_target(&mut self, fd: &Resource<Descriptor>, path: &str) -> FsResult<()> {
        if !self.guard.create_only {
            return Ok(());
        }
        match self.identity_at(fd, false, path)? {
            Some(id) if !self.guard.created.contains(&id) => {
                Err(self.refused(Rule::CreateOnly, "replace", fd, Some(path)))
            }
            _ => Ok(()),
        }
    }

    /// Records the entry at `path` (just created) as the call's own.
    fn record_at(&mut self, fd: &Resource<Descriptor>, path: &str) {
        if !self.guard.create_only {
            return;
        }
        // Not finding it only means the call cannot change it later.
        if let Ok(Some(id)) = self.identity_at(fd, false, path) {
            self.guard.created.insert(id);
        }
    }

    /// Puts `stream` (into a granted folder) under the call's write budget,
    /// in place in the resource table; `held` is its place among the call's
    /// descriptors (taken before the stream was made).
    fn budgeted(
        &mut self,
        stream: Resource<streams::OutputStream>,
        held: Held,
    ) -> FsResult<Resource<streams::OutputStream>> {
        let slot = self.fs.fs.table.get_mut(&stream).map_err(FsError::trap)?;
        let inner = std::mem::replace(slot, Box::new(wasmtime_wasi::p2::pipe::ClosedOutputStream));
        *slot = self.guard.written.guard_stream(inner, held);
        Ok(stream)
    }

    /// Closes a descriptor the guest never got, and refuses.
    fn discard(&mut self, fd: Resource<Descriptor>, err: FsError) -> FsError {
        if let Err(trap) = fs::HostDescriptor::drop(&mut self.fs.fs, fd) {
            return FsError::trap(trap);
        }
        err
    }

    /// `open-at` in a create-only call.
    fn open_guarded(
        &mut self,
        fd: Resource<Descriptor>,
        flags: fs::PathFlags,
        path: String,
        oflags: fs::OpenFlags,
        dflags: fs::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let follow = flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
        match self.identity_at(&fd, follow, &path)? {
            // What the call would get without the guard: nothing to refuse.
            Some(_) if oflags.contains(fs::OpenFlags::CREATE | fs::OpenFlags::EXCLUSIVE) => {
                Err(ErrorCode::Exist.into())
            }
            Some(id) => {
                if !self.guard.created.contains(&id) {
                    return Err(self.refused(
                        Rule::CreateOnly,
                        "open for writing",
                        &fd,
                        Some(&path),
                    ));
                }
                let parent = fd.rep();
                let (flags, oflags, dflags) = (flags.into(), oflags.into(), dflags.into());
                let opened = bounded!(
                    &mut self.fs,
                    open_at(fd, flags, path.clone(), oflags, dflags)
                )?;
                // Hand out a writable descriptor only for the entry checked.
                match self.identity(&opened) {
                    Ok(found) if found == id => Ok(opened),
                    Ok(_) => {
                        let refusals = &mut self.guard.refusals;
                        let err = refusals.refuse(
                            Rule::CreateOnly,
                            "open for writing",
                            parent,
                            Some(&path),
                        );
                        Err(self.discard(opened, err))
                    }
                    Err(err) => Err(self.discard(opened, err)),
                }
            }
            None if oflags.contains(fs::OpenFlags::CREATE) => {
                // Exclusive: never open an entry that appeared since the check.
                let oflags = oflags | fs::OpenFlags::EXCLUSIVE;
                let (flags, oflags, dflags) = (flags.into(), oflags.into(), dflags.into());
                let opened = bounded!(&mut self.fs, open_at(fd, flags, path, oflags, dflags))?;
                match self.identity(&opened) {
                    Ok(id) => {
                        self.guard.created.insert(id);
                        Ok(opened)
                    }
                    Err(err) => Err(self.discard(opened, err)),
                }
            }
            None => Err(ErrorCode::NoEntry.into()),
        }
    }
}

#[cfg(test)]
mod tests;
