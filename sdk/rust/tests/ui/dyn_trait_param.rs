use airlock_sdk::tool;

/// Calls back.
#[tool]
fn call_back(cb: dyn Fn()) {}

fn main() {}
