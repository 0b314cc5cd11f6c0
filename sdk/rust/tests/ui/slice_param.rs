use airlock_sdk::tool;

/// Sums bytes.
#[tool]
fn sum(bytes: &[u8], fixed: [u8; 4]) -> u32 {
    bytes.iter().chain(&fixed).map(|&b| u32::from(b)).sum()
}

fn main() {}
