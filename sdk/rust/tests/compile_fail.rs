//! Compile-fail tests: every mistake `#[tool]`, `#[resource]`,
//! `#[resource_template]`, `#[prompt]`, `#[complete]` and `#[derive(ToolSchema)]`
//! refuse at compile time, with the message they give (`tests/ui/*.stderr`).
//! Refresh the snapshots with `TRYBUILD=overwrite cargo test -p airlock-sdk --test compile_fail`.

#[test]
fn compile_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
