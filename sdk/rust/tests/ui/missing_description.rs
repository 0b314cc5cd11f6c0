use airlock_sdk::tool;

#[tool(read_only)]
fn lookup_price(sku: String) -> f64 {
    sku.len() as f64
}

fn main() {}
