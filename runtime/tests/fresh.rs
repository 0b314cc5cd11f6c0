//! A fresh instance for every call, with the machine under memory
//! pressure: what a call writes to its linear memory or its tables must not
//! be seen by the next call of the same tool, nor by another component that
//! is handed the same pool slot, even when the kernel swapped those pages
//! out while the call ran.
//!
//! The pool resets a slot by scanning for the pages a call dirtied
//! (`PAGEMAP_SCAN`); a page in swap is not present, and a scan that asks for
//! present pages leaves it in place for the next instance (wasmtime before
//! 48.0.11; airlock carries the fix in `patches/`). These tests plant a
//! marker in memory and fill a table, page exactly those pages out while
//! the guest still runs, end the call, and look from the next instance.
//!
//! They need swap: as root, without swap, they enable a swap file of their
//! own for the duration and remove it after; elsewhere they say why they
//! cannot run and pass.

use crate::support;

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use airlock::Runtime;
use airlock::call::Caller;
use airlock::observe::Unobserved;
use airlock::policy::Policy;
use airlock::sandbox::SandboxConfig;
use serde_json::{Value, json};

/// What the guest writes at the start of every 4 KiB page it plants.
const MARKER: [u8; 16] = *b"airlock-residue!";
/// Pages of 4 KiB the guest plants: 24 MiB, past `keep_resident` (16 MiB),
/// so that the reset takes both ways: the first 16 MiB reset in place, the
/// rest decommitted once the scan's page budget is spent.
const PLANTED_PAGES: usize = 6144;
/// Entries of the guest's table: 32 KiB, inside `table_keep_resident`
/// (1 MiB), so that the table goes through the scan too.
const TABLE_ENTRIES: usize = 4096;

/// A component of plain functions: `plant` grows memory by 24 MiB, writes
/// [`MARKER`] at the start of each 4 KiB page, fills its table with one
/// function and spins until the call is cancelled; `stale-pages` grows
/// memory by 24 MiB and counts the pages that start with the marker;
/// `stale-entries` counts the table entries that are not null. Each export
/// name starts with `prefix`, and `extra` makes a second, different
/// component of the same shape.
fn residue_wat(prefix: &str, extra: &str) -> String {
    format!(
        r#"(component
  (core module $m
    (memory 1)
    (table $t {TABLE_ENTRIES} funcref)
    (func $f)
    (elem declare func $f)
    {extra}
    (func $grow (result i32)
      (local $old i32)
      (local.set $old (memory.grow (i32.const 384)))
      (if (i32.eq (local.get $old) (i32.const -1)) (then unreachable))
      (i32.mul (local.get $old) (i32.const 65536)))
    (func (export "plant")
      (local $p i32) (local $end i32)
      (local.set $p (call $grow))
      (local.set $end (i32.add (local.get $p) (i32.const 0x1800000)))
      (loop $pages
        (i64.store (local.get $p) (i64.const {lo}))
        (i64.store offset=8 (local.get $p) (i64.const {hi}))
        (local.set $p (i32.add (local.get $p) (i32.const 4096)))
        (br_if $pages (i32.lt_u (local.get $p) (local.get $end))))
      (table.fill $t (i32.const 0) (ref.func $f) (i32.const {TABLE_ENTRIES}))
      (loop $forever (br $forever)))
    (func (export "stale-pages") (result i32)
      (local $p i32) (local $end i32) (local $n i32)
      (local.set $p (call $grow))
      (local.set $end (i32.add (local.get $p) (i32.const 0x1800000)))
      (loop $pages
        (if (i32.and
              (i64.eq (i64.load (local.get $p)) (i64.const {lo}))
              (i64.eq (i64.load offset=8 (local.get $p)) (i64.const {hi})))
          (then (local.set $n (i32.add (local.get $n) (i32.const 1)))))
        (local.set $p (i32.add (local.get $p) (i32.const 4096)))
        (br_if $pages (i32.lt_u (local.get $p) (local.get $end))))
      (local.get $n))
    (func (export "stale-entries") (result i32)
      (local $i i32) (local $n i32)
      (loop $entries
        (if (i32.eqz (ref.is_null (table.get $t (local.get $i))))
          (then (local.set $n (i32.add (local.get $n) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if $entries (i32.lt_u (local.get $i) (i32.const {TABLE_ENTRIES}))))
      (local.get $n)))
  (core instance $i (instantiate $m))
  (func (export "{prefix}plant") (canon lift (core func $i "plant")))
  (func (export "{prefix}stale-pages") (result u32) (canon lift (core func $i "stale-pages")))
  (func (export "{prefix}stale-entries") (result u32)
    (canon lift (core func $i "stale-entries"))))"#,
        lo = i64::from_le_bytes(MARKER[..8].try_into().expect("8 bytes")),
        hi = i64::from_le_bytes(MARKER[8..].try_into().expect("8 bytes")),
    )
}

const POLICY: &str = r#"
[components.residue_a]
limits = { time = "60s", memory = "64MiB" }
[components.residue_b]
limits = { time = "60s", memory = "64MiB" }
"#;

/// Swap, memory pressure and the pool are the machine's: one test at a time.
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Two residue components, and a pool that hands a freed slot to the next
/// instance that is not affine to another one at once: the state "after a
/// burst of other calls used up the warm slots", without the burst.
fn residue_runtime(dir: &Path) -> Runtime {
    let mut files = Vec::new();
    for (name, prefix, extra) in [
        ("residue_a", "a-", ""),
        ("residue_b", "b-", "(func $other)"),
    ] {
        let path = dir.join(format!("{name}.wasm"));
        let bytes =
            wat::parse_str(residue_wat(prefix, extra)).expect("the residue component assembles");
        std::fs::write(&path, bytes).expect("write component");
        files.push(path);
    }
    let sandbox = support::sandbox_with(SandboxConfig::default().tune(|_, pool| {
        pool.max_unused_warm_slots(0);
    }));
    let runtime = Runtime::new(
        sandbox,
        Policy::parse(POLICY, &support::workspace()).expect("policy"),
    );
    let report = runtime.load(&files);
    assert!(report.refused.is_empty(), "refused: {:?}", report.refused);
    runtime
}

fn count(runtime: &Runtime, tool: &str) -> u64 {
    let output = support::call(runtime, tool, json!({})).expect("the count runs");
    let value: Value = output
        .structured
        .clone()
        .unwrap_or_else(|| serde_json::from_str(&support::text(&output)).expect("a number"));
    // A plain function's result is `{"result": N}`.
    value["result"]
        .as_u64()
        .unwrap_or_else(|| panic!("{tool}: {value}"))
}

/// Runs `tool` (component `residue_a`'s `a-plant`), waits until its marker
/// and table are in memory, pages exactly those pages out while the guest
/// still spins, checks that the kernel swapped them, and cancels the call:
/// the slot is reset with its dirty pages in swap.
fn plant_and_swap_out(runtime: &Runtime, tool: &str) {
    let prepared = runtime
        .prepare(Caller::CommandLine, tool, json!({}))
        .expect("prepared");
    let cancel = prepared.cancel_token().clone();
    let call = thread::spawn(move || prepared.run(Arc::new(Unobserved)));
    let deadline = Instant::now() + Duration::from_secs(30);
    let (marked, table) = loop {
        let found = Memory::scan();
        if found.marked.len() >= PLANTED_PAGES && found.table.len() >= TABLE_ENTRIES * 8 / 4096 {
            break (found.marked, found.table);
        }
        assert!(!call.is_finished(), "{tool} ended before it was planted");
        assert!(
            Instant::now() < deadline,
            "{tool} planted {} of {PLANTED_PAGES} pages and {} table pages in 30 s",
            found.marked.len(),
            found.table.len()
        );
        thread::sleep(Duration::from_millis(20));
    };
    let pages: Vec<usize> = marked.iter().chain(&table).copied().collect();
    let swapped = page_out(&pages);
    assert!(
        !call.is_finished(),
        "{tool} ended before its pages were out"
    );
    assert!(
        swapped >= pages.len() * 9 / 10,
        "the kernel swapped only {swapped} of {} planted pages out; is swap full?",
        pages.len()
    );
    cancel.cancel();
    let ended = call.join().expect("the call's thread");
    assert!(
        ended.is_err(),
        "a cancelled spin ends in an error: {ended:?}"
    );
}

#[test]
fn swapped_out_memory_and_tables_do_not_survive_into_the_next_call() {
    let _one = exclusive();
    let Some(_swap) = Swap::ensure() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = residue_runtime(dir.path());

    // The same tool again: the pool gives it the very slot it had.
    plant_and_swap_out(&runtime, "a-plant");
    assert_eq!(count(&runtime, "a-stale-pages"), 0, "memory");
    plant_and_swap_out(&runtime, "a-plant");
    assert_eq!(count(&runtime, "a-stale-entries"), 0, "table");

    // Another component, handed the slot once no warm slot is left.
    plant_and_swap_out(&runtime, "a-plant");
    assert_eq!(count(&runtime, "b-stale-pages"), 0, "memory");
    plant_and_swap_out(&runtime, "a-plant");
    assert_eq!(count(&runtime, "b-stale-entries"), 0, "table");
}

/// A component whose `touch` writes one byte in each 4 KiB page of the
/// first 8 MiB of its memory (129 pages of 64 KiB, no data: zeros) and
/// answers the sum of what it read there first (0 in a fresh instance).
const TOUCH_WAT: &str = r#"(component
  (core module $m
    (memory 129)
    (func (export "touch") (result i32)
      (local $p i32) (local $sum i32)
      (loop $pages
        (local.set $sum (i32.add (local.get $sum) (i32.load8_u (local.get $p))))
        (i32.store8 (local.get $p) (i32.const 1))
        (local.set $p (i32.add (local.get $p) (i32.const 4096)))
        (br_if $pages (i32.lt_u (local.get $p) (i32.const 0x800000))))
      (local.get $sum)))
  (core instance $i (instantiate $m))
  (func (export "touch") (result u32) (canon lift (core func $i "touch"))))"#;

/// Minor page faults of this thread so far (`/proc/thread-self/stat`,
/// the tenth field).
fn thread_minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("thread stat");
    let after_name = stat.rsplit_once(')').expect("stat format").1;
    after_name
        .split_whitespace()
        .nth(7)
        .and_then(|n| n.parse().ok())
        .expect("minflt")
}

/// The pool resets what a call dirtied in place, up to `keep_resident`
/// (16 MiB), instead of handing the pages back to the kernel: the next call
/// in the slot finds them zeroed and still mapped, and does not fault them
/// in again (an interpreter guest dirties 1–2 MB a call; with 1 MiB kept,
/// the Python example took 231 faults a call). Counted on this thread,
/// where the call and its teardown run.
#[test]
fn a_slot_reset_in_place_is_not_faulted_in_again() {
    let _one = exclusive();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("toucher.wasm");
    std::fs::write(&path, wat::parse_str(TOUCH_WAT).expect("assembles")).expect("write");
    let runtime = Runtime::new(
        support::sandbox_with(SandboxConfig::default()),
        Policy::parse(
            "[components.toucher]\nlimits = { memory = \"64MiB\" }\n",
            &support::workspace(),
        )
        .expect("policy"),
    );
    let report = runtime.load(&[path]);
    assert!(report.refused.is_empty(), "refused: {:?}", report.refused);
    // The first call maps the slot's 2,048 pages in.
    assert_eq!(count(&runtime, "touch"), 0);
    let before = thread_minor_faults();
    assert_eq!(count(&runtime, "touch"), 0, "the pages were reset");
    let faults = thread_minor_faults() - before;
    assert!(
        faults < 512,
        "the second call took {faults} page faults for 2,048 pages it dirtied again"
    );
}

/// The pages of this process that the guest planted, found by content.
struct Memory {
    /// Pages that start with [`MARKER`].
    marked: Vec<usize>,
    /// Pages of 512 equal, odd, non-zero words: a funcref table filled with
    /// one function (wasmtime tags an initialised entry with bit 0).
    table: Vec<usize>,
}

impl Memory {
    /// Reads every present page of the process's writable mappings
    /// through `/proc/self/mem` (a mapping that goes away meanwhile reads
    /// as an error, never a fault).
    fn scan() -> Memory {
        let mut found = Memory {
            marked: Vec::new(),
            table: Vec::new(),
        };
        let mem = File::open("/proc/self/mem").expect("/proc/self/mem");
        let pagemap = File::open("/proc/self/pagemap").expect("/proc/self/pagemap");
        let mut page = [0u8; 4096];
        for (start, end) in writable_mappings() {
            let flags = page_flags(&pagemap, start, end);
            for (index, flag) in flags.iter().enumerate() {
                if flag & PRESENT == 0 {
                    continue;
                }
                let address = start + index * 4096;
                if mem.read_exact_at(&mut page, address as u64).is_err() {
                    continue;
                }
                if page.starts_with(&MARKER) {
                    found.marked.push(address);
                } else if is_filled_table(&page) {
                    found.table.push(address);
                }
            }
        }
        found
    }
}

const PRESENT: u64 = 1 << 63;
const SWAPPED: u64 = 1 << 62;

fn is_filled_table(page: &[u8; 4096]) -> bool {
    let word = |i: usize| u64::from_le_bytes(page[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    let first = word(0);
    first & 1 == 1 && first > 1 << 20 && (1..512).all(|i| word(i) == first)
}

/// `(start, end)` of the process's private writable mappings.
fn writable_mappings() -> Vec<(usize, usize)> {
    let mut maps = String::new();
    File::open("/proc/self/maps")
        .and_then(|mut f| f.read_to_string(&mut maps))
        .expect("/proc/self/maps");
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let perms = fields.next()?;
            if !perms.starts_with("rw") || !perms.ends_with('p') || line.ends_with("[vsyscall]") {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some((
                usize::from_str_radix(start, 16).ok()?,
                usize::from_str_radix(end, 16).ok()?,
            ))
        })
        .collect()
}

/// The pagemap entries of the pages from `start` to `end`.
fn page_flags(pagemap: &File, start: usize, end: usize) -> Vec<u64> {
    let pages = (end - start) / 4096;
    let mut bytes = vec![0u8; pages * 8];
    if pagemap
        .read_exact_at(&mut bytes, (start / 4096 * 8) as u64)
        .is_err()
    {
        return Vec::new();
    }
    bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect()
}

/// Asks the kernel to page `pages` out (`MADV_PAGEOUT`) and returns how
/// many of them are in swap afterwards.
fn page_out(pages: &[usize]) -> usize {
    for &page in pages {
        // SAFETY: advice only; the range is one page of a live mapping
        // (and the kernel refuses one that went away).
        let _ = unsafe {
            rustix::mm::madvise(
                page as *mut std::ffi::c_void,
                4096,
                rustix::mm::Advice::LinuxPageOut,
            )
        };
    }
    let pagemap = File::open("/proc/self/pagemap").expect("/proc/self/pagemap");
    pages
        .iter()
        .filter(|&&page| {
            page_flags(&pagemap, page, page + 4096)
                .first()
                .is_some_and(|flag| flag & SWAPPED != 0)
        })
        .count()
}

/// Swap for the test: the machine's own if it has some, else a swap file
/// of this test's, enabled as root and removed when dropped.
struct Swap {
    file: Option<PathBuf>,
}

impl Swap {
    fn ensure() -> Option<Swap> {
        let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
        if swaps.lines().count() > 1 {
            return Some(Swap { file: None });
        }
        if !rustix::process::geteuid().is_root() {
            eprintln!("fresh: not run: the machine has no swap and only root may add some");
            return None;
        }
        // /var/tmp: on disk where /tmp may be a tmpfs, which cannot hold swap.
        let dir = Path::new("/var/tmp");
        let dir = if dir.is_dir() {
            dir.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let file = dir.join(format!("airlock-test-swap-{}", std::process::id()));
        let swap = Swap {
            file: Some(file.clone()),
        };
        {
            let f = File::create(&file).expect("create the swap file");
            f.set_len(256 << 20).expect("size the swap file");
            f.sync_all().expect("sync the swap file");
        }
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .expect("chmod the swap file");
        // A sparse file cannot be swapped to: write it out.
        let zeros = Command::new("dd")
            .args(["if=/dev/zero", "bs=1M", "count=256", "status=none"])
            .arg(format!("of={}", file.display()))
            .status()
            .expect("dd");
        assert!(zeros.success(), "writing the swap file failed");
        for step in [&["mkswap", "-q"][..], &["swapon"][..]] {
            let status = Command::new(step[0])
                .args(&step[1..])
                .arg(&file)
                .status()
                .unwrap_or_else(|e| panic!("{}: {e}", step[0]));
            assert!(status.success(), "{} {} failed", step[0], file.display());
        }
        Some(swap)
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            let _ = Command::new("swapoff").arg(file).status();
            let _ = std::fs::remove_file(file);
        }
    }
}
