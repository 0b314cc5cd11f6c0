use airlock_sdk::tool;

/// Adds a pair.
#[tool]
fn add(pair: (i32, i32)) -> i32 {
    pair.0 + pair.1
}

fn main() {}
