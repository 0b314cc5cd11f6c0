//! The system calls a serving process may make, as two seccomp-bpf filters
//! (compiled by `seccompiler`, installed on every thread at once):
//!
//! 1. an allow-list — what glibc, Rust's standard library, tokio, hyper,
//!    rustls, the Redis client and wasmtime (compiling, and running guests:
//!    `mmap`/`mprotect` of code, `memfd_create`, signals for traps) call —
//!    with a few arguments checked (`clone` without namespace flags,
//!    `socket` of the four families a server uses, no `ioctl` that types
//!    into a terminal, `prlimit64` of itself only); any other call fails
//!    with `ENOSYS`, as on a kernel without it, so a library that probes a
//!    newer call falls back to an older one (glibc's `clone3` → `clone`);
//! 2. the calls that would take an escaped guest out of the process —
//!    [`DENIED_CALLS`] — fail with `EPERM`, whatever the first filter says.
//!
//! Both are installed after `no_new_privs`, which Landlock has set.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::ConfineError;

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

/// `clone` flags that make new namespaces (`CLONE_NEWTIME` exists only
/// for `clone3` and `unshare`, both refused: in `clone`'s flags its bit is
/// part of the exit signal).
const NAMESPACES: [u64; 7] = [
    0x0002_0000, // CLONE_NEWNS
    0x0200_0000, // CLONE_NEWCGROUP
    0x0400_0000, // CLONE_NEWUTS
    0x0800_0000, // CLONE_NEWIPC
    0x1000_0000, // CLONE_NEWUSER
    0x2000_0000, // CLONE_NEWPID
    0x4000_0000, // CLONE_NEWNET
];

/// The socket families a server uses: Unix, IPv4, IPv6, and netlink (glibc
/// lists the machine's addresses through it for `getaddrinfo`).
const FAMILIES: [i32; 4] = [
    libc::AF_UNIX,
    libc::AF_INET,
    libc::AF_INET6,
    libc::AF_NETLINK,
];

/// `ioctl`s that write into a terminal's input or drive its console.
const TERMINAL_IOCTLS: [u64; 2] = [libc::TIOCSTI, 0x541C /* TIOCLINUX */];

/// Calls allowed whatever their arguments.
const ALLOWED: &[i64] = &[
    // memory
    libc::SYS_brk,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mprotect,
    libc::SYS_mremap,
    libc::SYS_madvise,
    libc::SYS_msync,
    libc::SYS_mincore,
    libc::SYS_membarrier,
    libc::SYS_memfd_create,
    libc::SYS_get_mempolicy,
    // files and folders
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_preadv,
    libc::SYS_pwritev,
    libc::SYS_preadv2,
    libc::SYS_pwritev2,
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_close,
    libc::SYS_close_range,
    libc::SYS_lseek,
    libc::SYS_fstat,
    libc::SYS_newfstatat,
    libc::SYS_statx,
    libc::SYS_statfs,
    libc::SYS_fstatfs,
    libc::SYS_getdents64,
    libc::SYS_readlinkat,
    libc::SYS_faccessat,
    libc::SYS_faccessat2,
    libc::SYS_mkdirat,
    libc::SYS_unlinkat,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_linkat,
    libc::SYS_symlinkat,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_utimensat,
    libc::SYS_fsync,
    libc::SYS_fdatasync,
    libc::SYS_sync_file_range,
    libc::SYS_ftruncate,
    libc::SYS_fallocate,
    libc::SYS_fadvise64,
    libc::SYS_flock,
    libc::SYS_fcntl,
    libc::SYS_dup,
    libc::SYS_dup3,
    libc::SYS_pipe2,
    libc::SYS_copy_file_range,
    libc::SYS_sendfile,
    libc::SYS_splice,
    libc::SYS_getcwd,
    libc::SYS_umask,
    // waiting for events
    libc::SYS_epoll_create1,
    libc::SYS_epoll_ctl,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
    libc::SYS_eventfd2,
    libc::SYS_ppoll,
    libc::SYS_pselect6,
    libc::SYS_timerfd_create,
    libc::SYS_timerfd_settime,
    libc::SYS_timerfd_gettime,
    // sockets (`socket` itself is checked below)
    libc::SYS_socketpair,
    libc::SYS_connect,
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_getsockname,
    libc::SYS_getpeername,
    libc::SYS_getsockopt,
    libc::SYS_setsockopt,
    libc::SYS_sendto,
    libc::SYS_recvfrom,
    libc::SYS_sendmsg,
    libc::SYS_recvmsg,
    libc::SYS_sendmmsg,
    libc::SYS_recvmmsg,
    libc::SYS_shutdown,
    // threads, time, signals, identity
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_futex,
    libc::SYS_set_robust_list,
    libc::SYS_get_robust_list,
    libc::SYS_set_tid_address,
    libc::SYS_rseq,
    libc::SYS_sched_yield,
    libc::SYS_sched_getaffinity,
    libc::SYS_sched_getparam,
    libc::SYS_sched_getscheduler,
    libc::SYS_sched_get_priority_max,
    libc::SYS_sched_get_priority_min,
    libc::SYS_getpriority,
    libc::SYS_setpriority,
    libc::SYS_getcpu,
    libc::SYS_nanosleep,
    libc::SYS_clock_nanosleep,
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_gettimeofday,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_getppid,
    libc::SYS_getuid,
    libc::SYS_geteuid,
    libc::SYS_getgid,
    libc::SYS_getegid,
    libc::SYS_getresuid,
    libc::SYS_getresgid,
    libc::SYS_getgroups,
    libc::SYS_prctl,
    libc::SYS_getrlimit,
    libc::SYS_getrusage,
    libc::SYS_times,
    libc::SYS_sysinfo,
    libc::SYS_uname,
    libc::SYS_getrandom,
    libc::SYS_kill,
    libc::SYS_tgkill,
    libc::SYS_tkill,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigsuspend,
    libc::SYS_rt_sigtimedwait,
    libc::SYS_sigaltstack,
    libc::SYS_restart_syscall,
    libc::SYS_wait4,
    libc::SYS_waitid,
    // Only to install the second filter, which then refuses it.
    libc::SYS_seccomp,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_arch_prctl,
    // x86-64's older spellings, which glibc and others still use there
    #[cfg(target_arch = "x86_64")]
    libc::SYS_open,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_stat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lstat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_access,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_pipe,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_dup2,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_mkdir,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_rmdir,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_unlink,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_rename,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_readlink,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_link,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_symlink,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chmod,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_getdents,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_poll,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_select,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_epoll_wait,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_epoll_create,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_eventfd,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_time,
];

/// The calls refused with `EPERM` whatever else is allowed: running
/// another program, reaching into other processes, mounts, namespaces,
/// kernel modules and kexec, keyrings, BPF, and the kernel's less guarded
/// interfaces (io_uring, userfaultfd, perf events, file handles).
pub const DENIED_CALLS: &[(&str, i64)] = &[
    ("execve", libc::SYS_execve),
    ("execveat", libc::SYS_execveat),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("kcmp", libc::SYS_kcmp),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("bpf", libc::SYS_bpf),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("syslog", libc::SYS_syslog),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("adjtimex", libc::SYS_adjtimex),
    ("personality", libc::SYS_personality),
    ("seccomp", libc::SYS_seccomp),
    ("landlock_create_ruleset", libc::SYS_landlock_create_ruleset),
    ("landlock_add_rule", libc::SYS_landlock_add_rule),
    ("landlock_restrict_self", libc::SYS_landlock_restrict_self),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
];

fn condition(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, ConfineError> {
    SeccompCondition::new(arg, len, op, value).map_err(|e| ConfineError::Seccomp(e.to_string()))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, ConfineError> {
    SeccompRule::new(conditions).map_err(|e| ConfineError::Seccomp(e.to_string()))
}

/// The allow-list: every call of [`ALLOWED`], and those whose arguments
/// are checked.
fn allowed() -> Result<BTreeMap<i64, Vec<SeccompRule>>, ConfineError> {
    use SeccompCmpArgLen::{Dword, Qword};
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALLOWED.iter().map(|call| (*call, Vec::new())).collect();
    let namespaces = NAMESPACES.iter().sum::<u64>();
    rules.insert(
        libc::SYS_clone,
        vec![rule(vec![condition(
            0,
            Qword,
            SeccompCmpOp::MaskedEq(namespaces),
            0,
        )?])?],
    );
    let families = FAMILIES
        .iter()
        .map(|family| {
            let family = u64::try_from(*family).unwrap_or(u64::MAX);
            rule(vec![condition(0, Dword, SeccompCmpOp::Eq, family)?])
        })
        .collect::<Result<_, _>>()?;
    rules.insert(libc::SYS_socket, families);
    let not_terminal = TERMINAL_IOCTLS
        .iter()
        .map(|request| condition(1, Dword, SeccompCmpOp::Ne, *request))
        .collect::<Result<_, _>>()?;
    rules.insert(libc::SYS_ioctl, vec![rule(not_terminal)?]);
    rules.insert(
        libc::SYS_prlimit64,
        vec![rule(vec![condition(0, Qword, SeccompCmpOp::Eq, 0)?])?],
    );
    Ok(rules)
}

/// The calls refused with `EPERM`: [`DENIED_CALLS`], and `clone` with any
/// namespace flag.
fn denied() -> Result<BTreeMap<i64, Vec<SeccompRule>>, ConfineError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED_CALLS
        .iter()
        .map(|(_, call)| (*call, Vec::new()))
        .collect();
    let with_namespace = NAMESPACES
        .iter()
        .map(|flag| {
            let masked = SeccompCmpOp::MaskedEq(*flag);
            rule(vec![condition(0, SeccompCmpArgLen::Qword, masked, *flag)?])
        })
        .collect::<Result<_, _>>()?;
    rules.insert(libc::SYS_clone, with_namespace);
    Ok(rules)
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    otherwise: SeccompAction,
    on_match: SeccompAction,
) -> Result<BpfProgram, ConfineError> {
    let filter = SeccompFilter::new(rules, otherwise, on_match, ARCH)
        .map_err(|e| ConfineError::Seccomp(e.to_string()))?;
    BpfProgram::try_from(filter).map_err(|e| ConfineError::Seccomp(e.to_string()))
}

/// Both filters, ready to install.
pub(super) fn filters() -> Result<[BpfProgram; 2], ConfineError> {
    let (allowed, denied) = (allowed()?, denied()?);
    let allow_list = compile(
        allowed,
        SeccompAction::Errno(libc::ENOSYS as u32),
        SeccompAction::Allow,
    )?;
    let deny_list = compile(
        denied,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
    )?;
    Ok([allow_list, deny_list])
}

/// Installs both filters on every thread of the process; the last one
/// installed decides the error of a call both refuse (`EPERM`).
pub(super) fn install() -> Result<(), ConfineError> {
    for filter in filters()? {
        seccompiler::apply_filter_all_threads(&filter)
            .map_err(|e| ConfineError::Seccomp(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_filters_compile_for_this_machine() {
        let [allow_list, deny_list] = filters().expect("filters");
        assert!(allow_list.len() > ALLOWED.len(), "{}", allow_list.len());
        assert!(deny_list.len() > DENIED_CALLS.len(), "{}", deny_list.len());
    }

    #[test]
    fn no_denied_call_is_on_the_allow_list() {
        let allowed = allowed().expect("rules");
        // `seccomp` installs the second filter, which refuses it after.
        for (name, call) in DENIED_CALLS.iter().filter(|(name, _)| *name != "seccomp") {
            assert!(!allowed.contains_key(call), "{name} is allowed");
        }
        assert!(!allowed.contains_key(&libc::SYS_clone3));
    }
}
