use airlock_sdk::tool;

/// Looks up a price.
#[tool(read_only, readonly_hint)]
fn lookup_price(sku: String) -> f64 {
    sku.len() as f64
}

fn main() {}
