use airlock_sdk::tool;

/// Async.
#[tool]
async fn a() {}

/// Generic.
#[tool]
fn b<T: Default>() -> u8 {
    0
}

fn main() {}
