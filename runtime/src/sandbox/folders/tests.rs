//! Several operations within one call, straight against the guarded
//! `wasi:filesystem/types` implementation (the hostile component does
//! one operation per call).

use super::*;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::bindings::filesystem::preopens;

use super::super::interruption::{CancelToken, Interruption};
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
    // Creating exclusively what exists fails as it would anywhere.
    let exists = open(g, &root, "old.txt", O::CREATE | O::EXCLUSIVE, D::WRITE);
    assert_eq!(
        exists.expect_err("exists").downcast_ref(),
        Some(&ErrorCode::Exist)
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
