use airlock_sdk::tool;

/// Counts items.
#[tool]
fn count(items: &Vec<String>) -> usize {
    items.len()
}

fn main() {}
