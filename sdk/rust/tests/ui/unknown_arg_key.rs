use airlock_sdk::tool;

/// Looks up a price.
#[tool]
fn lookup_price(#[arg(optional = "x")] sku: String) -> f64 {
    sku.len() as f64
}

fn main() {}
