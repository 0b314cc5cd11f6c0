//! How a cordon's worker process is started, and the launcher that starts
//! them from outside the serving process's confinement.
//!
//! A confined server must not start workers itself: seccomp would have to
//! leave it `execve`, and every worker would inherit its Landlock domain —
//! the server's files, and not the worker's own page map (without which a
//! worker's pool resets its memory by writing every page). So `serve`
//! forks the launcher while it is still one thread and unconfined, then
//! confines itself. Asked over a socket pair for a cordon by name, the
//! launcher starts that cordon's worker exactly as it was planned before
//! the fork — program, arguments and environment come from the plan, never
//! from the request — and hands the server the worker's pipes
//! (`SCM_RIGHTS`). It keeps at most one worker per cordon (a second start
//! ends the first), reaps them and logs how each ended, and exits when the
//! server's end of the socket closes. A server that asks it for anything
//! else gets an error: an escaped server can restart its own cordons'
//! workers, nothing more.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

/// How a worker is started: the program, its arguments and its whole
/// environment (nothing else of the serving process's is passed).
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

/// A worker just started: the server's ends of its stdin and stdout.
pub struct Started {
    pub pid: u32,
    pub stdin: File,
    pub stdout: File,
    /// The process, when this process started it (and so reaps it).
    pub child: Option<Child>,
}

/// What starts the worker of a cordon.
pub trait Start: Send + Sync {
    fn start(&self, cordon: &str) -> io::Result<Started>;
}

impl Launch {
    fn spawn(&self) -> io::Result<Child> {
        Command::new(&self.program)
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("cannot start {}: {err}", self.program.display()),
                )
            })
    }
}

/// Started by this process (an unconfined one: tests, or a server that
/// does not confine itself).
impl Start for Launch {
    fn start(&self, _cordon: &str) -> io::Result<Started> {
        let mut child = self.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("its pipes were not opened"));
        };
        Ok(Started {
            pid: child.id(),
            stdin: File::from(OwnedFd::from(stdin)),
            stdout: File::from(OwnedFd::from(stdout)),
            child: Some(child),
        })
    }
}

/// The server's end of the launcher.
pub struct Launcher {
    socket: Mutex<OwnedFd>,
}

/// The longest a request to the launcher waits for its answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the launcher looks for workers that ended, when idle.
const REAP_EVERY: Duration = Duration::from_secs(1);

impl Launcher {
    /// Forks the launcher with the cordons' `plan`. The process must have
    /// one thread (it is checked): the launcher is a copy of it that goes
    /// on running Rust code, which is only sound without other threads.
    pub fn fork(plan: BTreeMap<String, Launch>) -> io::Result<Launcher> {
        let threads = std::fs::read_to_string("/proc/self/status")?
            .lines()
            .find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().to_string()));
        if threads.as_deref() != Some("1") {
            return Err(io::Error::other(format!(
                "the launcher must be forked while the server has one thread (it has {})",
                threads.as_deref().unwrap_or("an unknown number")
            )));
        }
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )?;
        // SAFETY: the process has one thread (checked above), so the child
        // is a whole copy of it and may run any code.
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                drop(ours);
                close_all_but(&theirs);
                serve(&theirs, plan);
                std::process::exit(0);
            }
            _ => {
                drop(theirs);
                rustix::net::sockopt::set_socket_timeout(
                    &ours,
                    rustix::net::sockopt::Timeout::Recv,
                    Some(ANSWER_TIMEOUT),
                )?;
                Ok(Launcher {
                    socket: Mutex::new(ours),
                })
            }
        }
    }
}

impl Start for Launcher {
    fn start(&self, cordon: &str) -> io::Result<Started> {
        let socket = self
            .socket
            .lock()
            .map_err(|_| io::Error::other("the launcher's socket is poisoned"))?;
        rustix::net::send(&*socket, cordon.as_bytes(), SendFlags::NOSIGNAL)?;
        let mut text = [0u8; 1024];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(
            &*socket,
            &mut [io::IoSliceMut::new(&mut text)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )?;
        let mut fds: Vec<OwnedFd> = Vec::new();
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = message {
                fds.extend(received);
            }
        }
        let text = String::from_utf8_lossy(&text[..got.bytes.min(text.len())]);
        if got.bytes == 0 {
            return Err(io::Error::other(
                "the launcher has exited (its log says why)",
            ));
        }
        let pid = text.strip_prefix("ok ").and_then(|p| p.parse::<u32>().ok());
        match (pid, fds.len()) {
            (Some(pid), 2) => {
                let stdout = fds.pop().map(File::from);
                let stdin = fds.pop().map(File::from);
                match (stdin, stdout) {
                    (Some(stdin), Some(stdout)) => Ok(Started {
                        pid,
                        stdin,
                        stdout,
                        child: None,
                    }),
                    _ => Err(io::Error::other("the launcher sent no pipes")),
                }
            }
            _ => Err(io::Error::other(
                text.strip_prefix("error ").unwrap_or(&text).to_string(),
            )),
        }
    }
}

/// Closes every descriptor the launcher inherited but `keep` and its
/// stderr: the listener, files the server opened, are not its, and a
/// server on stdio must be the only one holding its client's pipes.
fn close_all_but(keep: &OwnedFd) {
    use std::os::fd::AsRawFd;
    if let Ok(null) = File::options().read(true).write(true).open("/dev/null") {
        // SAFETY: plain descriptor calls on descriptors this copy owns.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
            libc::dup2(null.as_raw_fd(), 1);
        }
    }
    let keep = keep.as_raw_fd();
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let open: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2 && fd != keep)
        .collect();
    for fd in open {
        // SAFETY: nothing in this one-threaded copy of the process uses
        // these descriptors; the listing's own is closed already, and
        // closing it again fails harmlessly (EBADF).
        unsafe { libc::close(fd) };
    }
}

/// The launcher's loop: a request is a cordon's name; the answer `ok PID`
/// with the worker's stdin and stdout, or `error WHY`.
fn serve(socket: &OwnedFd, plan: BTreeMap<String, Launch>) {
    let _ = rustix::net::sockopt::set_socket_timeout(
        socket,
        rustix::net::sockopt::Timeout::Recv,
        Some(REAP_EVERY),
    );
    let mut workers: BTreeMap<String, Child> = BTreeMap::new();
    let mut request = [0u8; 256];
    loop {
        reap(&mut workers);
        let n = match rustix::net::recv(socket, &mut request, RecvFlags::empty()) {
            Ok((0, _)) => break,
            Ok((n, _)) => n,
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        };
        let cordon = String::from_utf8_lossy(&request[..n.min(request.len())]).into_owned();
        let answered = match start_one(&plan, &mut workers, &cordon) {
            Ok((pid, stdin, stdout)) => {
                let fds = [stdin.as_fd(), stdout.as_fd()];
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
                let mut control = SendAncillaryBuffer::new(&mut space);
                control.push(SendAncillaryMessage::ScmRights(&fds));
                let text = format!("ok {pid}");
                rustix::net::sendmsg(
                    socket,
                    &[io::IoSlice::new(text.as_bytes())],
                    &mut control,
                    SendFlags::NOSIGNAL,
                )
                .map(drop)
            }
            Err(err) => {
                let text = format!("error {err}");
                rustix::net::send(socket, text.as_bytes(), SendFlags::NOSIGNAL).map(drop)
            }
        };
        if answered.is_err() {
            break;
        }
    }
    // The server is gone: each worker ends as its stdin closes.
    for (_, mut child) in workers {
        let _ = child.wait();
    }
}

/// Starts `cordon`'s worker as planned, ending the one before if it runs.
fn start_one(
    plan: &BTreeMap<String, Launch>,
    workers: &mut BTreeMap<String, Child>,
    cordon: &str,
) -> io::Result<(u32, OwnedFd, OwnedFd)> {
    let Some(launch) = plan.get(cordon) else {
        return Err(io::Error::other(format!(
            "the launcher has no cordon named {cordon:?}"
        )));
    };
    if let Some(mut before) = workers.remove(cordon) {
        let _ = before.kill();
        ended(cordon, &mut before);
    }
    let mut child = launch.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("its pipes were not opened"));
    };
    let pid = child.id();
    workers.insert(cordon.to_string(), child);
    Ok((pid, stdin.into(), stdout.into()))
}

/// Reaps the workers that ended, saying how.
fn reap(workers: &mut BTreeMap<String, Child>) {
    workers.retain(|cordon, child| match child.try_wait() {
        Ok(None) => true,
        Ok(Some(status)) if status.success() => {
            tracing::info!(cordon = %cordon, pid = child.id(), "cordon worker ended: {status}");
            false
        }
        Ok(Some(status)) => {
            tracing::warn!(cordon = %cordon, pid = child.id(), "cordon worker ended: {status}");
            false
        }
        Err(_) => false,
    });
}

/// Waits for a worker ended to start another, saying how it ended.
fn ended(cordon: &str, child: &mut Child) {
    if let Ok(status) = child.wait() {
        tracing::info!(cordon = %cordon, pid = child.id(), "cordon worker replaced ({status})");
    }
}
