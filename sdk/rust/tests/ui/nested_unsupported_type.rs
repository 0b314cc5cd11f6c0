use airlock_sdk::tool;

struct Opaque;

/// Takes things without a schema.
#[tool]
fn take(callbacks: Vec<Box<dyn Fn()>>, opaque: Opaque) {}

fn main() {}
