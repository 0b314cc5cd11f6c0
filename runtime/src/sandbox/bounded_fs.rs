//! `wasi:filesystem/types` bounded by the call's deadline and cancellation.
//!
//! wasmtime-wasi runs each filesystem syscall on Tokio's blocking pool and
//! its synchronous bindings wait for it without limit: opening a FIFO whose
//! other end nobody opens, or any call into a hung network mount, would
//! hold the guest (and its place in the pool) past its wall time, where the
//! epoch check never sees it. (Reads and writes are positional, so on a
//! FIFO they fail at once with `ESPIPE`.) [`BoundedFs`] implements the
//! synchronous bindings by calling wasmtime-wasi's async implementation
//! inside the call's [`Limit`]: at the deadline or on cancellation the wait
//! ends and the guest traps like any interrupted call.
//!
//! What a dropped wait cannot do is stop the syscall itself: the pool
//! thread stays in the kernel until the operation returns (a FIFO until
//! someone opens its other end), outside any call's descriptor count; what
//! it opened then is closed at once. The call, its instance and its
//! descriptors are gone at the deadline.
//!
//! Functions that do no I/O (stream constructors, `drop`, reading entries
//! already listed by `read-directory`, error conversion) delegate as they
//! are.

use std::future::Future;

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types as afs;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as fs;
use wasmtime_wasi::p2::bindings::sync::io::streams;
use wasmtime_wasi::p2::{FsError, FsResult};

use super::waits::Limit;

/// wasmtime-wasi's filesystem view of one call, with the call's limit.
pub struct BoundedFs<'a> {
    pub fs: WasiFilesystemCtxView<'a>,
    pub limit: Limit<'a>,
}

/// Runs `op` within the call's limit; past it, the guest traps.
fn within<T>(limit: &mut Limit<'_>, op: impl Future<Output = FsResult<T>>) -> FsResult<T> {
    limit.wait(op).unwrap_or_else(|why| Err(FsError::trap(why)))
}

impl fs::Host for BoundedFs<'_> {
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

impl fs::HostDescriptor for BoundedFs<'_> {
    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::InputStream>> {
        fs::HostDescriptor::read_via_stream(&mut self.fs, fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
    ) -> FsResult<Resource<streams::OutputStream>> {
        fs::HostDescriptor::write_via_stream(&mut self.fs, fd, offset)
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<streams::OutputStream>> {
        fs::HostDescriptor::append_via_stream(&mut self.fs, fd)
    }

    fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: fs::Filesize,
        length: fs::Filesize,
        advice: fs::Advice,
    ) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::advise(&mut self.fs, fd, offset, length, advice.into()),
        )
    }

    fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::sync_data(&mut self.fs, fd),
        )
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorFlags> {
        within(
            &mut self.limit,
            afs::HostDescriptor::get_flags(&mut self.fs, fd),
        )
        .map(Into::into)
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorType> {
        within(
            &mut self.limit,
            afs::HostDescriptor::get_type(&mut self.fs, fd),
        )
        .map(Into::into)
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: fs::Filesize) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::set_size(&mut self.fs, fd, size),
        )
    }

    fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::set_times(&mut self.fs, fd, atim.into(), mtim.into()),
        )
    }

    fn read(
        &mut self,
        fd: Resource<Descriptor>,
        length: fs::Filesize,
        offset: fs::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        within(
            &mut self.limit,
            afs::HostDescriptor::read(&mut self.fs, fd, length, offset),
        )
    }

    fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buffer: Vec<u8>,
        offset: fs::Filesize,
    ) -> FsResult<fs::Filesize> {
        within(
            &mut self.limit,
            afs::HostDescriptor::write(&mut self.fs, fd, buffer, offset),
        )
    }

    fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<fs::DirectoryEntryStream>> {
        within(
            &mut self.limit,
            afs::HostDescriptor::read_directory(&mut self.fs, fd),
        )
    }

    fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        within(&mut self.limit, afs::HostDescriptor::sync(&mut self.fs, fd))
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::create_directory_at(&mut self.fs, fd, path),
        )
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorStat> {
        within(&mut self.limit, afs::HostDescriptor::stat(&mut self.fs, fd)).map(Into::into)
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::DescriptorStat> {
        within(
            &mut self.limit,
            afs::HostDescriptor::stat_at(&mut self.fs, fd, path_flags.into(), path),
        )
        .map(Into::into)
    }

    fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        let (flags, atim, mtim) = (path_flags.into(), atim.into(), mtim.into());
        within(
            &mut self.limit,
            afs::HostDescriptor::set_times_at(&mut self.fs, fd, flags, path, atim, mtim),
        )
    }

    fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: fs::PathFlags,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        let flags = old_path_flags.into();
        within(
            &mut self.limit,
            afs::HostDescriptor::link_at(&mut self.fs, fd, flags, old_path, new_fd, new_path),
        )
    }

    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
        oflags: fs::OpenFlags,
        flags: fs::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let (path_flags, oflags, flags) = (path_flags.into(), oflags.into(), flags.into());
        within(
            &mut self.limit,
            afs::HostDescriptor::open_at(&mut self.fs, fd, path_flags, path, oflags, flags),
        )
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        within(
            &mut self.limit,
            afs::HostDescriptor::readlink_at(&mut self.fs, fd, path),
        )
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::remove_directory_at(&mut self.fs, fd, path),
        )
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::rename_at(&mut self.fs, fd, old_path, new_fd, new_path),
        )
    }

    fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_path: String,
    ) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::symlink_at(&mut self.fs, fd, old_path, new_path),
        )
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        within(
            &mut self.limit,
            afs::HostDescriptor::unlink_file_at(&mut self.fs, fd, path),
        )
    }

    fn is_same_object(
        &mut self,
        fd: Resource<Descriptor>,
        other: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        let (fs, limit) = (&mut self.fs, &mut self.limit);
        limit.wait(afs::HostDescriptor::is_same_object(fs, fd, other))?
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::MetadataHashValue> {
        within(
            &mut self.limit,
            afs::HostDescriptor::metadata_hash(&mut self.fs, fd),
        )
        .map(Into::into)
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::MetadataHashValue> {
        within(
            &mut self.limit,
            afs::HostDescriptor::metadata_hash_at(&mut self.fs, fd, path_flags.into(), path),
        )
        .map(Into::into)
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        fs::HostDescriptor::drop(&mut self.fs, fd)
    }
}

impl fs::HostDirectoryEntryStream for BoundedFs<'_> {
    fn read_directory_entry(
        &mut self,
        stream: Resource<fs::DirectoryEntryStream>,
    ) -> FsResult<Option<fs::DirectoryEntry>> {
        fs::HostDirectoryEntryStream::read_directory_entry(&mut self.fs, stream)
    }

    fn drop(&mut self, stream: Resource<fs::DirectoryEntryStream>) -> wasmtime::Result<()> {
        fs::HostDirectoryEntryStream::drop(&mut self.fs, stream)
    }
}
