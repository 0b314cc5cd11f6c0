//! Create-only folders: the runtime's own layer between the guest and
//! wasmtime-wasi's `wasi:filesystem/types`.
//!
//! wasmtime-wasi mounts a folder read-only or read-write, nothing in
//! between. A tool that is neither read-only nor destructive gets its
//! read-write folders *create-only* (see DESIGN.md, "Hints become
//! capabilities"): it may add new files and folders and write to what it
//! created during this call, and must not modify, truncate, rename or delete
//! anything that existed before the call.
//!
//! # The model
//!
//! A create-only folder is mounted read-write in wasmtime-wasi, so that
//! creation itself works, and every `wasi:filesystem/types` function is
//! linked to [`Guarded`] instead of wasmtime-wasi directly (through
//! [`BoundedFs`], so that every function also ends at the call's deadline).
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

use super::bounded_fs::BoundedFs;
use super::budget::{Descriptors, Exhausted, Held, NoDescriptor, WriteBudget, hold_input};
use super::refusals::{Refusals, Rule};
use super::state::CallState;
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
    /// The guard for a call with `grant`: create-only when any mount is,
    /// with the grant's write, create and descriptor limits.
    pub fn for_grant(grant: &Grant) -> Self {
        let limits = &grant.limits;
        FolderGuard {
            create_only: grant.mounts.iter().any(|m| m.access == Access::CreateOnly),
            created: HashSet::new(),
            written: WriteBudget::new(limits.write),
            files_left: limits.files,
            files_limit: limits.files,
            held: HashMap::new(),
            descriptors: Descriptors::new(limits.open),
            create_refused: false,
            refusals: Refusals::for_grant(grant),
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
/// Call after that.
pub fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = fs::add_to_linker::<CallState, GuardedFolders>(linker, CallState::folders)
        .and_then(|()| {
            preopens::add_to_linker::<CallState, GuardedFolders>(linker, CallState::folders)
        });
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
        let hash = fs::HostDescriptor::metadata_hash(&mut self.fs, borrow(fd))?;
        Ok((hash.lower, hash.upper))
    }

    /// Identity of the entry at `path` under `fd`, `None` when there is none.
    fn identity_at(
        &mut self,
        fd: &Resource<Descriptor>,
        follow: bool,
        path: &str,
    ) -> FsResult<Option<Identity>> {
        match fs::HostDescriptor::metadata_hash_at(
            &mut self.fs,
            borrow(fd),
            path_flags(follow),
            path.to_string(),
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
        if let Err(trap) = fs::HostDescriptor::drop(&mut self.fs, fd) {
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
                let opened = fs::HostDescriptor::open_at(
                    &mut self.fs,
                    fd,
                    flags,
                    path.clone(),
                    oflags,
                    dflags,
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
                let opened =
                    fs::HostDescriptor::open_at(&mut self.fs, fd, flags, path, oflags, dflags)?;
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

impl fs::Host for Guarded<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<fs::ErrorCode> {
        fs::Host::convert_error_code(&mut self.fs, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<streams::Error>,
    ) -> wasmtime::Result<Option<fs::ErrorCode>> {
        fs::Host::filesystem_error_code(&mut self.fs, err)
    }
}

impl fs::HostDescriptor for Guarded<'_> {
    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::InputStream>> {
        let held = self.guard.may_open()?;
        let stream = fs::HostDescriptor::read_via_stream(&mut self.fs, fd, offset)?;
        // The stream keeps the file open: it holds a place of its own.
        let slot = self.fs.fs.table.get_mut(&stream).map_err(FsError::trap)?;
        let inner = std::mem::replace(slot, Box::new(wasmtime_wasi::p2::pipe::ClosedInputStream));
        *slot = hold_input(inner, held);
        Ok(stream)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::OutputStream>> {
        self.writable(&fd, "write", None)?;
        self.own_descriptor(&fd)?;
        let held = self.guard.may_open()?;
        let stream = fs::HostDescriptor::write_via_stream(&mut self.fs, fd, offset)?;
        self.budgeted(stream, held)
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<streams::OutputStream>> {
        self.writable(&fd, "append to", None)?;
        self.own_descriptor(&fd)?;
        let held = self.guard.may_open()?;
        let stream = fs::HostDescriptor::append_via_stream(&mut self.fs, fd)?;
        self.budgeted(stream, held)
    }

    fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
        length: fs::Filesize,
        advice: fs::Advice,
    ) -> FsResult<()> {
        fs::HostDescriptor::advise(&mut self.fs, fd, offset, length, advice)
    }

    fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        fs::HostDescriptor::sync_data(&mut self.fs, fd)
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorFlags> {
        fs::HostDescriptor::get_flags(&mut self.fs, fd)
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorType> {
        fs::HostDescriptor::get_type(&mut self.fs, fd)
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: fs::Filesize) -> FsResult<()> {
        self.writable(&fd, "resize", None)?;
        self.own_descriptor(&fd)?;
        // Growing a file counts as writing (a sparse file is disk to be).
        let now = fs::HostDescriptor::stat(&mut self.fs, borrow(&fd))?.size;
        self.guard.spend(size.saturating_sub(now))?;
        fs::HostDescriptor::set_size(&mut self.fs, fd, size)
    }

    fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        self.writable(&fd, "set the times of", None)?;
        self.own_descriptor(&fd)?;
        fs::HostDescriptor::set_times(&mut self.fs, fd, atim, mtim)
    }

    fn read(
        &mut self,
        fd: Resource<Descriptor>,
        length: fs::Filesize,
        offset: fs::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        fs::HostDescriptor::read(&mut self.fs, fd, length, offset)
    }

    fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buffer: Vec<u8>,
        offset: fs::Filesize,
    ) -> FsResult<fs::Filesize> {
        self.writable(&fd, "write", None)?;
        self.own_descriptor(&fd)?;
        self.guard.spend(buffer.len() as u64)?;
        fs::HostDescriptor::write(&mut self.fs, fd, buffer, offset)
    }

    fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<fs::DirectoryEntryStream>> {
        // A listing keeps the folder open until its stream is dropped.
        let held = self.guard.may_open()?;
        let stream = fs::HostDescriptor::read_directory(&mut self.fs, fd)?;
        self.guard.held.insert(stream.rep(), held);
        Ok(stream)
    }

    fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        fs::HostDescriptor::sync(&mut self.fs, fd)
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.writable(&fd, "create the folder", Some(&path))?;
        self.guard.may_create()?;
        fs::HostDescriptor::create_directory_at(&mut self.fs, borrow(&fd), path.clone())?;
        self.guard.created_one();
        self.record_at(&fd, &path);
        Ok(())
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorStat> {
        fs::HostDescriptor::stat(&mut self.fs, fd)
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::DescriptorStat> {
        fs::HostDescriptor::stat_at(&mut self.fs, fd, path_flags, path)
    }

    fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        self.writable(&fd, "set the times of", Some(&path))?;
        let follow = path_flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
        self.own_entry(&fd, follow, &path)?;
        fs::HostDescriptor::set_times_at(&mut self.fs, fd, path_flags, path, atim, mtim)
    }

    fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: fs::PathFlags,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.writable(&fd, "link", Some(&old_path))?;
        self.writable(&new_fd, "link to", Some(&new_path))?;
        let follow = old_path_flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
        self.own_entry(&fd, follow, &old_path)?;
        self.free_or_own_target(&new_fd, &new_path)?;
        self.guard.may_create()?;
        fs::HostDescriptor::link_at(&mut self.fs, fd, old_path_flags, old_path, new_fd, new_path)?;
        self.guard.created_one();
        Ok(())
    }

    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
        oflags: fs::OpenFlags,
        flags: fs::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let writes = oflags.intersects(fs::OpenFlags::CREATE | fs::OpenFlags::TRUNCATE)
            || flags.contains(fs::DescriptorFlags::WRITE);
        if writes {
            let what = if oflags.contains(fs::OpenFlags::CREATE) {
                "create or open for writing"
            } else {
                "open for writing"
            };
            self.writable(&fd, what, Some(&path))?;
        }
        let parent = fd.rep();
        let shown = path.clone();
        let held = self.guard.may_open()?;
        // Whether this open may create an entry, and so needs the budget.
        let creates = oflags.contains(fs::OpenFlags::CREATE) && {
            let follow = path_flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
            !matches!(self.identity_at(&fd, follow, &path), Ok(Some(_)))
        };
        if creates {
            self.guard.may_create()?;
        }
        let opened = if self.guard.create_only && writes {
            self.open_guarded(fd, path_flags, path, oflags, flags)
        } else {
            fs::HostDescriptor::open_at(&mut self.fs, fd, path_flags, path, oflags, flags)
        }?;
        if creates {
            self.guard.created_one();
        }
        self.guard.held.insert(opened.rep(), held);
        self.guard.refusals.opened(opened.rep(), parent, &shown);
        Ok(opened)
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        fs::HostDescriptor::readlink_at(&mut self.fs, fd, path)
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.writable(&fd, "remove the folder", Some(&path))?;
        self.own_entry(&fd, false, &path)?;
        fs::HostDescriptor::remove_directory_at(&mut self.fs, fd, path)
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.writable(&fd, "rename", Some(&old_path))?;
        self.writable(&new_fd, "rename to", Some(&new_path))?;
        self.own_entry(&fd, false, &old_path)?;
        self.free_or_own_target(&new_fd, &new_path)?;
        fs::HostDescriptor::rename_at(&mut self.fs, fd, old_path, new_fd, new_path)
    }

    fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_path: String,
    ) -> FsResult<()> {
        self.writable(&fd, "create the link", Some(&new_path))?;
        self.guard.may_create()?;
        fs::HostDescriptor::symlink_at(&mut self.fs, borrow(&fd), old_path, new_path.clone())?;
        self.guard.created_one();
        self.record_at(&fd, &new_path);
        Ok(())
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.writable(&fd, "delete", Some(&path))?;
        self.own_entry(&fd, false, &path)?;
        fs::HostDescriptor::unlink_file_at(&mut self.fs, fd, path)
    }

    fn is_same_object(
        &mut self,
        fd: Resource<Descriptor>,
        other: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        fs::HostDescriptor::is_same_object(&mut self.fs, fd, other)
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::MetadataHashValue> {
        fs::HostDescriptor::metadata_hash(&mut self.fs, fd)
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::MetadataHashValue> {
        fs::HostDescriptor::metadata_hash_at(&mut self.fs, fd, path_flags, path)
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        // Only descriptors this call opened were counted (never a preopen).
        self.guard.held.remove(&fd.rep());
        self.guard.refusals.closed(fd.rep());
        fs::HostDescriptor::drop(&mut self.fs, fd)
    }
}

impl preopens::Host for Guarded<'_> {
    /// The mounts, each recorded with its guest path (for the log lines of
    /// refusals).
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let mounts = preopens::Host::get_directories(&mut self.fs.fs)?;
        for (fd, guest) in &mounts {
            self.guard.refusals.preopened(fd.rep(), guest);
        }
        Ok(mounts)
    }
}

impl fs::HostDirectoryEntryStream for Guarded<'_> {
    fn read_directory_entry(
        &mut self,
        stream: Resource<fs::DirectoryEntryStream>,
    ) -> FsResult<Option<fs::DirectoryEntry>> {
        fs::HostDirectoryEntryStream::read_directory_entry(&mut self.fs, stream)
    }

    fn drop(&mut self, stream: Resource<fs::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.guard.held.remove(&stream.rep());
        fs::HostDirectoryEntryStream::drop(&mut self.fs, stream)
    }
}

#[cfg(test)]
mod tests {
    //! Several operations within one call, straight against the guarded
    //! `wasi:filesystem/types` implementation (the hostile component does
    //! one operation per call).

    use super::*;
    use std::time::{Duration, Instant};
    use wasmtime::component::ResourceTable;
    use wasmtime_wasi::p2::bindings::filesystem::preopens;

    use super::super::state::{CancelToken, Interruption};
    use super::super::waits::Limit;
    use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
    use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

    use fs::{DescriptorFlags as D, HostDescriptor as H, OpenFlags as O, PathFlags as P};

    struct Call {
        ctx: WasiCtx,
        table: ResourceTable,
        guard: FolderGuard,
        cancel: CancelToken,
        interruption: Option<Interruption>,
        _dir: tempfile::TempDir,
        host: std::path::PathBuf,
    }

    impl Call {
        /// A folder with `old.txt` and `empty/`, mounted writable, guarded
        /// when `create_only`.
        fn new(create_only: bool) -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let host = dir.path().to_path_buf();
            std::fs::write(host.join("old.txt"), "old").expect("old.txt");
            std::fs::create_dir(host.join("empty")).expect("empty");
            let mut builder = WasiCtxBuilder::new();
            builder
                .preopened_dir(&host, "/data", FsPerms::ReadWrite)
                .expect("preopen");
            Call {
                ctx: builder.build(),
                table: ResourceTable::new(),
                guard: FolderGuard {
                    create_only,
                    ..FolderGuard::for_grant(&Grant::default())
                },
                cancel: CancelToken::new(),
                interruption: None,
                _dir: dir,
                host,
            }
        }

        fn fs(&mut self) -> Guarded<'_> {
            let fs = BoundedFs {
                fs: WasiFilesystemCtxView {
                    ctx: self.ctx.filesystem(),
                    table: &mut self.table,
                },
                limit: Limit {
                    deadline: Instant::now() + Duration::from_secs(60),
                    cancel: &self.cancel,
                    interruption: &mut self.interruption,
                },
            };
            Guarded::new(fs, &mut self.guard)
        }

        fn root(&mut self) -> Resource<Descriptor> {
            let mut g = self.fs();
            let mut dirs = preopens::Host::get_directories(&mut g.fs.fs).expect("preopens");
            dirs.remove(0).0
        }
    }

    fn open(
        g: &mut Guarded<'_>,
        dir: &Resource<Descriptor>,
        path: &str,
        o: O,
        d: D,
    ) -> FsResult<Resource<Descriptor>> {
        H::open_at(g, borrow(dir), P::empty(), path.into(), o, d)
    }

    fn refused_with(result: FsResult<impl std::fmt::Debug>, what: &str) {
        match result {
            Err(err) => assert_eq!(err.downcast_ref(), Some(&ErrorCode::NotPermitted), "{what}"),
            Ok(v) => panic!("{what}: expected not-permitted, got {v:?}"),
        }
    }

    #[test]
    fn a_call_may_do_anything_to_what_it_created() {
        let mut call = Call::new(true);
        let root = call.root();
        let g = &mut call.fs();
        let f = open(g, &root, "new.txt", O::CREATE, D::WRITE).expect("create");
        assert_eq!(
            H::write(g, borrow(&f), b"hello".to_vec(), 0).expect("write"),
            5
        );
        H::set_size(g, borrow(&f), 4).expect("set-size");
        H::append_via_stream(g, borrow(&f)).expect("append stream");
        H::write_via_stream(g, borrow(&f), 0).expect("write stream");
        H::set_times(g, borrow(&f), fs::NewTimestamp::Now, fs::NewTimestamp::Now).expect("times");
        // Reopening its own file for writing, truncating, through a new name.
        let again = open(g, &root, "new.txt", O::TRUNCATE, D::WRITE).expect("reopen");
        H::write(g, borrow(&again), b"v2".to_vec(), 0).expect("write again");
        H::rename_at(
            g,
            borrow(&root),
            "new.txt".into(),
            borrow(&root),
            "renamed.txt".into(),
        )
        .expect("rename own");
        H::link_at(
            g,
            borrow(&root),
            P::empty(),
            "renamed.txt".into(),
            borrow(&root),
            "hard.txt".into(),
        )
        .expect("link own");
        H::symlink_at(g, borrow(&root), "renamed.txt".into(), "sym".into()).expect("symlink");
        H::unlink_file_at(g, borrow(&root), "sym".into()).expect("unlink own symlink");
        H::create_directory_at(g, borrow(&root), "made".into()).expect("mkdir");
        let inner = open(
            g,
            &root,
            "made/inner.txt",
            O::CREATE | O::EXCLUSIVE,
            D::WRITE,
        )
        .expect("create inside own folder");
        H::drop(g, inner).expect("close");
        H::unlink_file_at(g, borrow(&root), "made/inner.txt".into()).expect("unlink own");
        H::remove_directory_at(g, borrow(&root), "made".into()).expect("rmdir own");
        H::unlink_file_at(g, borrow(&root), "hard.txt".into()).expect("unlink own link");
        H::drop(g, f).expect("close");
        assert_eq!(
            std::fs::read(call.host.join("renamed.txt")).expect("renamed"),
            b"v2"
        );
        assert_eq!(
            std::fs::read(call.host.join("old.txt")).expect("old"),
            b"old"
        );
    }

    #[test]
    fn a_call_may_not_touch_what_existed_before_it() {
        let mut call = Call::new(true);
        let root = call.root();
        let g = &mut call.fs();
        let mine = open(g, &root, "mine.txt", O::CREATE, D::WRITE).expect("create");
        H::drop(g, mine).expect("close");
        H::create_directory_at(g, borrow(&root), "mydir".into()).expect("mkdir");

        refused_with(
            open(g, &root, "old.txt", O::empty(), D::WRITE),
            "open for write",
        );
        refused_with(
            open(g, &root, "old.txt", O::TRUNCATE, D::READ),
            "open truncating",
        );
        refused_with(
            open(g, &root, "old.txt", O::CREATE, D::WRITE),
            "open creating",
        );
        let old = open(g, &root, "old.txt", O::empty(), D::READ).expect("read-only open");
        refused_with(H::write(g, borrow(&old), b"x".to_vec(), 0), "write");
        refused_with(H::set_size(g, borrow(&old), 0), "set-size");
        refused_with(H::write_via_stream(g, borrow(&old), 0), "write stream");
        refused_with(H::append_via_stream(g, borrow(&old)), "append stream");
        let now = fs::NewTimestamp::Now;
        refused_with(H::set_times(g, borrow(&old), now, now), "set-times");
        refused_with(
            H::set_times_at(g, borrow(&root), P::empty(), "old.txt".into(), now, now),
            "set-times-at",
        );
        refused_with(
            H::set_times(g, borrow(&root), now, now),
            "set-times on the mount",
        );
        refused_with(
            H::unlink_file_at(g, borrow(&root), "old.txt".into()),
            "unlink",
        );
        refused_with(
            H::remove_directory_at(g, borrow(&root), "empty".into()),
            "rmdir",
        );
        refused_with(
            H::rename_at(
                g,
                borrow(&root),
                "old.txt".into(),
                borrow(&root),
                "x".into(),
            ),
            "rename from",
        );
        refused_with(
            H::rename_at(
                g,
                borrow(&root),
                "mine.txt".into(),
                borrow(&root),
                "old.txt".into(),
            ),
            "rename own file onto a pre-existing one",
        );
        refused_with(
            H::rename_at(
                g,
                borrow(&root),
                "mydir".into(),
                borrow(&root),
                "empty".into(),
            ),
            "rename own folder onto a pre-existing one",
        );
        refused_with(
            H::link_at(
                g,
                borrow(&root),
                P::empty(),
                "old.txt".into(),
                borrow(&root),
                "l".into(),
            ),
            "hard link to a pre-existing file",
        );
        refused_with(
            H::link_at(
                g,
                borrow(&root),
                P::empty(),
                "mine.txt".into(),
                borrow(&root),
                "old.txt".into(),
            ),
            "hard link onto a pre-existing name",
        );
        // A symlink the call made does not make its target the call's own.
        H::symlink_at(g, borrow(&root), "old.txt".into(), "sym".into()).expect("symlink");
        refused_with(
            H::open_at(
                g,
                borrow(&root),
                P::SYMLINK_FOLLOW,
                "sym".into(),
                O::TRUNCATE,
                D::WRITE,
            ),
            "truncate through own symlink",
        );
        refused_with(
            H::set_times_at(g, borrow(&root), P::SYMLINK_FOLLOW, "sym".into(), now, now),
            "set-times through own symlink",
        );
        // Missing entries: the error the guest would get anyway.
        let missing = H::unlink_file_at(g, borrow(&root), "nothing".into());
        assert_eq!(
            missing.expect_err("missing").downcast_ref(),
            Some(&ErrorCode::NoEntry)
        );
        H::drop(g, old).expect("close");
        assert_eq!(
            std::fs::read(call.host.join("old.txt")).expect("old"),
            b"old"
        );
        assert!(call.host.join("empty").is_dir());
    }

    #[test]
    fn without_create_only_mounts_everything_is_delegated() {
        let mut call = Call::new(false);
        let root = call.root();
        let g = &mut call.fs();
        let old = open(g, &root, "old.txt", O::TRUNCATE, D::WRITE).expect("truncate");
        H::write(g, borrow(&old), b"new".to_vec(), 0).expect("write");
        H::drop(g, old).expect("close");
        H::unlink_file_at(g, borrow(&root), "old.txt".into()).expect("unlink");
        H::remove_directory_at(g, borrow(&root), "empty".into()).expect("rmdir");
        assert!(!call.host.join("old.txt").exists());
    }

    #[test]
    fn the_guard_follows_the_grant() {
        use crate::policy::Mount;
        let mount = |access| Mount {
            host: "/srv".into(),
            guest: "/srv".into(),
            access,
        };
        let grant = |mounts| Grant {
            mounts,
            ..Grant::default()
        };
        assert!(!FolderGuard::for_grant(&grant(vec![])).is_create_only());
        assert!(!FolderGuard::for_grant(&grant(vec![mount(Access::ReadWrite)])).is_create_only());
        assert!(!FolderGuard::for_grant(&grant(vec![mount(Access::ReadOnly)])).is_create_only());
        assert!(FolderGuard::for_grant(&grant(vec![mount(Access::CreateOnly)])).is_create_only());
        assert!(
            FolderGuard::for_grant(&grant(vec![
                mount(Access::ReadWrite),
                mount(Access::CreateOnly)
            ]))
            .is_create_only()
        );
    }
}
