use airlock_sdk::tool;

/// Reads memory.
#[tool]
fn peek(address: *const u8) -> u8 {
    unsafe { *address }
}

fn main() {}
