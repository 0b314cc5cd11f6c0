//! The memory allocator of airlock's programs: mimalloc, tuned for a
//! server that may run a thread per blocked call.
//!
//! A binary opts in with [`global_allocator!`](crate::global_allocator);
//! the library itself sets no allocator, so that whoever links it (tests,
//! fuzz targets under a sanitizer) keeps theirs.
//!
//! Why mimalloc: a fresh store per call allocates and frees a lot, and
//! glibc's `malloc` and `free` took 12% of the server's CPU time for a
//! trivial call; with mimalloc a call costs the server about a tenth less
//! CPU (BENCHMARKS.md, "Levers").

pub use mimalloc::MiMalloc;

/// mimalloc's `mi_option_arena_eager_commit` (`mimalloc.h`, v3, as bundled
/// by `libmimalloc-sys` 0.1.49).
const ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

unsafe extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Makes mimalloc commit its arenas on demand. Eagerly committed arenas
/// give freed pages back lazily, and with a thread per blocked call that
/// held 1,000 concurrent sleeping calls at 570 MiB of RSS instead of
/// 125 MiB. The option counts only if set before the first arena exists,
/// that is before Rust's runtime first allocates:
/// [`global_allocator!`](crate::global_allocator) runs it from
/// `.init_array`, ahead of `main`.
pub extern "C" fn commit_arenas_on_demand() {
    // SAFETY: sets one of mimalloc's options; touches no memory of ours.
    unsafe { mi_option_set(ARENA_EAGER_COMMIT, 0) };
}

/// Makes airlock's allocator the program's global allocator. Use it once,
/// in a binary crate's root.
#[macro_export]
macro_rules! global_allocator {
    () => {
        #[global_allocator]
        static GLOBAL_ALLOCATOR: $crate::allocator::MiMalloc = $crate::allocator::MiMalloc;

        // ELF's list of functions run before `main` (Linux: the only
        // platform airlock is built and tested on).
        #[cfg(target_os = "linux")]
        #[used]
        #[unsafe(link_section = ".init_array")]
        static COMMIT_ARENAS_ON_DEMAND: extern "C" fn() =
            $crate::allocator::commit_arenas_on_demand;
    };
}
