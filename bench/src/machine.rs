//! The machine a run is on, as the report describes it: processor, kernel,
//! memory, and its load.

use std::process::Command;

/// The load average (1, 5 and 15 minutes).
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// What `cmd args…` printed (`?` when it could not run).
pub(crate) fn command_output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        // Not `trim`: `free`'s header line starts with spaces that align it.
        .map(|o| String::from_utf8_lossy(&o.stdout).trim_end().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The machine a run is on: processor, kernel, toolchain, memory.
pub(crate) fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = command_output("nproc", &[]);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "- CPU: {model}, `nproc` = {cores}\n- kernel: Linux {}\n- {}, wasmtime 48.0.8\n\n`free -m`:\n\n```text\n{}\n```\n",
        kernel.trim(),
        command_output("rustc", &["-V"]),
        command_output("free", &["-m"])
    )
}
