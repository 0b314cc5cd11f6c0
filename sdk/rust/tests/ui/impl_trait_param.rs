use airlock_sdk::tool;

/// Calls back.
#[tool]
fn call_back(cb: impl Fn()) {
    cb()
}

fn main() {}
