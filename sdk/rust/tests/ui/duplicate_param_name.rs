use airlock_sdk::tool;

/// Adds.
#[tool]
fn add(a: i32, #[arg(rename = "a")] b: i32) -> i32 {
    a + b
}

fn main() {}
