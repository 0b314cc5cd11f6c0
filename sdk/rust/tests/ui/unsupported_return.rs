use airlock_sdk::tool;

struct Opaque;

/// Returns something without a schema.
#[tool]
fn give() -> Result<Opaque, String> {
    Ok(Opaque)
}

fn main() {}
