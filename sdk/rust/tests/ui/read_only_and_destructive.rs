use airlock_sdk::tool;

/// Deletes nothing, allegedly.
#[tool(read_only, destructive)]
fn purge() {}

fn main() {}
