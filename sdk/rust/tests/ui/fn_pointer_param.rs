use airlock_sdk::tool;

/// Applies a function.
#[tool]
fn apply(f: fn(u8) -> u8) -> u8 {
    f(1)
}

fn main() {}
