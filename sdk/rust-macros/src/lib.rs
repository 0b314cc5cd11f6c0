//! Procedural macros of `airlock-sdk`: `#[tool]` turns a plain function into
//! an airlock tool, `#[derive(ToolSchema)]` gives a struct or unit-only enum
//! its JSON Schema.
//!
//! Use them through `airlock-sdk`, which documents them and provides the
//! paths the generated code refers to (`::airlock_sdk::…`).

use proc_macro::TokenStream;

mod common;
mod derive;
mod tool;

/// Turns a function into an airlock tool. See the `airlock-sdk` crate docs.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `airlock_sdk::ToolSchema` for a struct with named fields, a
/// newtype struct or a unit-only enum. See the `airlock-sdk` crate docs.
#[proc_macro_derive(ToolSchema, attributes(serde))]
pub fn derive_tool_schema(item: TokenStream) -> TokenStream {
    derive::expand(item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
