use airlock_sdk::tool;

/// A header name with a space.
#[tool]
fn stock(#[arg(header = "Warehouse Region")] region: String) {}

fn main() {}
