//! The `wasi:filesystem` host functions of a call: each asks the call's
//! guard first where it has a rule (see the parent module for the model),
//! then calls wasmtime-wasi, within the call's limit where it does I/O
//! ([`bounded!`]).

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types as afs;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as fs;
use wasmtime_wasi::p2::bindings::sync::io::streams;
use wasmtime_wasi::p2::{FsError, FsResult};

use super::super::bounded_fs::{BoundedFs, bounded};
use super::super::budget::hold_input;
use super::{Guarded, borrow};

impl fs::Host for Guarded<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<fs::ErrorCode> {
        fs::Host::convert_error_code(&mut self.fs.fs, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<streams::Error>,
    ) -> wasmtime::Result<Option<fs::ErrorCode>> {
        fs::Host::filesystem_error_code(&mut self.fs.fs, err)
    }
}

impl fs::HostDescriptor for Guarded<'_> {
    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::InputStream>> {
        let held = self.guard.may_open()?;
        let stream = fs::HostDescriptor::read_via_stream(&mut self.fs.fs, fd, offset)?;
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
        let stream = fs::HostDescriptor::write_via_stream(&mut self.fs.fs, fd, offset)?;
        self.budgeted(stream, held)
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<streams::OutputStream>> {
        self.writable(&fd, "append to", None)?;
        self.own_descriptor(&fd)?;
        let held = self.guard.may_open()?;
        let stream = fs::HostDescriptor::append_via_stream(&mut self.fs.fs, fd)?;
        self.budgeted(stream, held)
    }

    fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
        length: fs::Filesize,
        advice: fs::Advice,
    ) -> FsResult<()> {
        bounded!(&mut self.fs, advise(fd, offset, length, advice.into()))
    }

    fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        bounded!(&mut self.fs, sync_data(fd))
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorFlags> {
        bounded!(&mut self.fs, get_flags(fd)).map(Into::into)
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorType> {
        bounded!(&mut self.fs, get_type(fd)).map(Into::into)
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: fs::Filesize) -> FsResult<()> {
        self.writable(&fd, "resize", None)?;
        self.own_descriptor(&fd)?;
        // Growing a file counts as writing (a sparse file is disk to be).
        let now = bounded!(&mut self.fs, stat(borrow(&fd)))?.size;
        self.guard.spend(size.saturating_sub(now))?;
        bounded!(&mut self.fs, set_size(fd, size))
    }

    fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        self.writable(&fd, "set the times of", None)?;
        self.own_descriptor(&fd)?;
        bounded!(&mut self.fs, set_times(fd, atim.into(), mtim.into()))
    }

    fn read(
        &mut self,
        fd: Resource<Descriptor>,
        length: fs::Filesize,
        offset: fs::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        bounded!(&mut self.fs, read(fd, length, offset))
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
        bounded!(&mut self.fs, write(fd, buffer, offset))
    }

    fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<fs::DirectoryEntryStream>> {
        // A listing keeps the folder open until its stream is dropped.
        let held = self.guard.may_open()?;
        let stream = bounded!(&mut self.fs, read_directory(fd))?;
        self.guard.held.insert(stream.rep(), held);
        Ok(stream)
    }

    fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        bounded!(&mut self.fs, sync(fd))
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.writable(&fd, "create the folder", Some(&path))?;
        self.guard.may_create()?;
        bounded!(&mut self.fs, create_directory_at(borrow(&fd), path.clone()))?;
        self.guard.created_one();
        self.record_at(&fd, &path);
        Ok(())
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorStat> {
        bounded!(&mut self.fs, stat(fd)).map(Into::into)
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::DescriptorStat> {
        bounded!(&mut self.fs, stat_at(fd, path_flags.into(), path)).map(Into::into)
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
        let (flags, atim, mtim) = (path_flags.into(), atim.into(), mtim.into());
        bounded!(&mut self.fs, set_times_at(fd, flags, path, atim, mtim))
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
        let flags = old_path_flags.into();
        bounded!(&mut self.fs, link_at(fd, flags, old_path, new_fd, new_path))?;
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
            bounded!(
                &mut self.fs,
                open_at(fd, path_flags.into(), path, oflags.into(), flags.into())
            )
        }?;
        if creates {
            self.guard.created_one();
        }
        self.guard.held.insert(opened.rep(), held);
        self.guard.refusals.opened(opened.rep(), parent, &shown);
        Ok(opened)
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        bounded!(&mut self.fs, readlink_at(fd, path))
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.writable(&fd, "remove the folder", Some(&path))?;
        self.own_entry(&fd, false, &path)?;
        bounded!(&mut self.fs, remove_directory_at(fd, path))
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
        bounded!(&mut self.fs, rename_at(fd, old_path, new_fd, new_path))
    }

    fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_path: String,
    ) -> FsResult<()> {
        self.writable(&fd, "create the link", Some(&new_path))?;
        self.guard.may_create()?;
        bounded!(
            &mut self.fs,
            symlink_at(borrow(&fd), old_path, new_path.clone())
        )?;
        self.guard.created_one();
        self.record_at(&fd, &new_path);
        Ok(())
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.writable(&fd, "delete", Some(&path))?;
        self.own_entry(&fd, false, &path)?;
        bounded!(&mut self.fs, unlink_file_at(fd, path))
    }

    fn is_same_object(
        &mut self,
        fd: Resource<Descriptor>,
        other: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        let BoundedFs { fs, limit } = &mut self.fs;
        limit.wait(afs::HostDescriptor::is_same_object(fs, fd, other))?
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::MetadataHashValue> {
        bounded!(&mut self.fs, metadata_hash(fd)).map(Into::into)
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::MetadataHashValue> {
        bounded!(&mut self.fs, metadata_hash_at(fd, path_flags.into(), path)).map(Into::into)
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        // Only descriptors this call opened were counted (never a preopen).
        self.guard.held.remove(&fd.rep());
        self.guard.refusals.closed(fd.rep());
        fs::HostDescriptor::drop(&mut self.fs.fs, fd)
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
        fs::HostDirectoryEntryStream::read_directory_entry(&mut self.fs.fs, stream)
    }

    fn drop(&mut self, stream: Resource<fs::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.guard.held.remove(&stream.rep());
        fs::HostDirectoryEntryStream::drop(&mut self.fs.fs, stream)
    }
}
