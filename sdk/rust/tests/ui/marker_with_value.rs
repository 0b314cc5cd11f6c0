use airlock_sdk::tool;

/// Reads.
#[tool(read_only = true)]
fn read() {}

fn main() {}
