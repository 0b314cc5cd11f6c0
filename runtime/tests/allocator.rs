//! The binaries' allocator: `airlock::global_allocator!()` makes mimalloc
//! the global allocator and sets its arena option before the first
//! allocation (BENCHMARKS.md: with the default, 1,000 blocked calls held
//! four times the memory).

airlock::global_allocator!();

unsafe extern "C" {
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    fn mi_is_in_heap_region(p: *const std::ffi::c_void) -> bool;
}

/// `mi_option_arena_eager_commit` in mimalloc v3's `mimalloc.h`; its
/// default on Linux is 2 (eager where the OS overcommits).
const ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

#[test]
fn allocations_come_from_mimalloc() {
    let boxed = Box::new([0u8; 64]);
    // SAFETY: asks mimalloc whether a pointer lies in its heap.
    let ours = unsafe { mi_is_in_heap_region(boxed.as_ptr().cast()) };
    assert!(ours, "a Box was not allocated by mimalloc");
}

#[test]
fn arenas_are_committed_on_demand() {
    // SAFETY: reads one of mimalloc's options.
    let value = unsafe { mi_option_get(ARENA_EAGER_COMMIT) };
    assert_eq!(value, 0, "the option set before main did not take");
}
