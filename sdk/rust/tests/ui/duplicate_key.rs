use airlock_sdk::tool;

/// Looks up a price.
#[tool(title = "Price", read_only, title = "Look up price")]
fn lookup_price(sku: String) -> f64 {
    sku.len() as f64
}

fn main() {}
