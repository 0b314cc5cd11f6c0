//! The console transcripts of `README.md` and `docs/**/*.md` run, and print
//! what they show.
//!
//! Each ```` ```console ```` block is a [`trycmd`] case: its `$ airlock …`
//! lines run the binary of this build from the repository's root (so
//! `target/components/export.wasm` is where `cargo xtask build` put it),
//! stdout and stderr together must match the lines below the command, `[..]`
//! stands for the rest of a line and a line `...` for any lines, and a
//! `? N` line after a command is its exit code (none: it must exit 0).
//! Blocks marked `text` or `sh` are not run; the guide says beside each
//! why (a registry, a desktop client, a network, a server left running).
//!
//! `TRYCMD=overwrite cargo test -p airlock --test runtime transcripts::` writes what
//! the commands print now into the pages (then keep the elisions by hand).

use std::path::Path;
use std::time::Duration;

#[test]
fn the_guides_transcripts_print_what_they_show() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root");
    for built in [
        "target/components/export.wasm",
        "target/test-components/plain.wasm",
    ] {
        assert!(
            root.join(built).exists(),
            "{built} is missing: the transcripts run the components `cargo xtask build` builds"
        );
    }
    // The commands are written as a reader types them in a clone, with the
    // log as a reader's shell has it by default (a transcript that wants
    // more says `AIRLOCK_LOG=info airlock …`), whatever the environment of
    // the test run says.
    std::env::set_current_dir(root).expect("the repository's root");
    // SAFETY: this file's only test; no other thread reads the environment.
    unsafe {
        std::env::remove_var("AIRLOCK_LOG");
        std::env::remove_var("RUST_LOG");
    }
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("airlock", Path::new(env!("CARGO_BIN_EXE_airlock")))
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(120))
        .case("README.md")
        .case("docs/**/*.md");
    if Path::new("/bin/cat").exists() {
        // A transcript shows the fixture it runs with (`$ cat FILE`).
        cases.register_bin("cat", Path::new("/bin/cat"));
    }
}
