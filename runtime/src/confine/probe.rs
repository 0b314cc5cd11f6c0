//! What a tool that escaped the WebAssembly sandbox would try first, tried
//! by the confined process itself: read a file, write into a folder,
//! connect to a TCP port, run a program. `airlock serve --confine-probe`
//! applies the serving confinement (the same code path as `serve`) and
//! then runs its probes, so a test sees what the kernel refuses; it opens
//! no door (it only narrows what the user running it may already do).

use std::fmt;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

/// One attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// `read:PATH`: read the file.
    Read(PathBuf),
    /// `write:FOLDER`: create a file in the folder (removed again).
    Write(PathBuf),
    /// `connect:ADDR`: open a TCP connection.
    Connect(SocketAddr),
    /// `exec:PROGRAM`: run it.
    Exec(PathBuf),
}

impl std::str::FromStr for Probe {
    type Err = String;

    fn from_str(text: &str) -> Result<Probe, String> {
        let (kind, what) = text.split_once(':').ok_or_else(|| {
            format!("{text:?}: expected read:PATH, write:FOLDER, connect:ADDR or exec:PROGRAM")
        })?;
        match kind {
            "read" => Ok(Probe::Read(what.into())),
            "write" => Ok(Probe::Write(what.into())),
            "exec" => Ok(Probe::Exec(what.into())),
            "connect" => what
                .parse()
                .map(Probe::Connect)
                .map_err(|e| format!("{what:?}: {e}")),
            other => Err(format!(
                "{other:?}: expected read, write, connect or exec before the colon"
            )),
        }
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Probe::Read(path) => write!(f, "read {}", path.display()),
            Probe::Write(path) => write!(f, "write {}", path.display()),
            Probe::Connect(addr) => write!(f, "connect {addr}"),
            Probe::Exec(path) => write!(f, "exec {}", path.display()),
        }
    }
}

/// What came of an attempt: `allowed`, or `refused: ERROR` with the
/// error the kernel gave.
pub fn attempt(probe: &Probe) -> String {
    let outcome = match probe {
        Probe::Read(path) => std::fs::read(path).map(drop),
        Probe::Write(folder) => {
            let file = folder.join(format!("airlock-probe-{}", std::process::id()));
            std::fs::write(&file, b"escaped").map(|()| {
                let _ = std::fs::remove_file(&file);
            })
        }
        Probe::Connect(addr) => TcpStream::connect_timeout(addr, Duration::from_secs(5)).map(drop),
        Probe::Exec(program) => std::process::Command::new(program)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .map(drop),
    };
    match outcome {
        Ok(()) => format!("{probe}: allowed"),
        Err(err) => format!("{probe}: refused: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_are_read_from_the_command_line() {
        assert_eq!(
            "read:/etc/passwd".parse(),
            Ok(Probe::Read("/etc/passwd".into()))
        );
        assert_eq!(
            "connect:127.0.0.1:9".parse(),
            Ok(Probe::Connect("127.0.0.1:9".parse().expect("addr")))
        );
        assert!("open:/x".parse::<Probe>().is_err());
        assert!("nothing".parse::<Probe>().is_err());
    }

    #[test]
    fn an_unconfined_attempt_is_allowed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("secret");
        std::fs::write(&file, "x").expect("write");
        assert_eq!(
            attempt(&Probe::Read(file.clone())),
            format!("read {}: allowed", file.display())
        );
        let shown = attempt(&Probe::Read(dir.path().join("absent")));
        assert!(shown.contains(": refused: "), "{shown}");
    }
}
