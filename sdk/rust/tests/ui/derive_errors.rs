use airlock_sdk::ToolSchema;

#[derive(ToolSchema)]
enum Shape {
    Circle { radius: f64 },
    Square,
}

#[derive(ToolSchema)]
struct Pair(u8, u8);

#[derive(ToolSchema)]
#[serde(rename_all = "Title Case")]
struct Loud {
    a: u8,
}

fn main() {}
