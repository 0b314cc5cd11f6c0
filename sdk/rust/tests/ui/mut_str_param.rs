use airlock_sdk::tool;

/// Shouts.
#[tool]
fn shout(text: &mut str) {
    text.make_ascii_uppercase();
}

fn main() {}
