//! Procedural macros of `airlock-sdk`: `#[tool]` turns a plain function into
//! an airlock tool, `#[resource]`, `#[resource_template]`, `#[prompt]` and
//! `#[complete]` into the component's resources, prompts and completions,
//! `#[skills("folder")]` bundles a folder of Agent Skills,
//! `#[derive(ToolSchema)]` gives a struct or unit-only enum its JSON Schema.
//!
//! Use them through `airlock-sdk`, which documents them and provides the
//! paths the generated code refers to (`::airlock_sdk::…`).

use proc_macro::TokenStream;

mod common;
mod derive;
mod param;
mod prompt;
mod resource;
mod skills;
mod tool;

/// Turns a function into an airlock tool. See the `airlock-sdk` crate docs.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns a function into a resource with a fixed URI. See the `airlock-sdk` crate docs.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    resource::expand_resource(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns a function into the resources of a URI template. See the `airlock-sdk` crate docs.
#[proc_macro_attribute]
pub fn resource_template(attr: TokenStream, item: TokenStream) -> TokenStream {
    resource::expand_template(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns a function into a prompt. See the `airlock-sdk` crate docs.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    prompt::expand_prompt(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns a function into the completions of one argument. See the `airlock-sdk` crate docs.
#[proc_macro_attribute]
pub fn complete(attr: TokenStream, item: TokenStream) -> TokenStream {
    prompt::expand_complete(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Bundles the Agent Skills of a folder into the component. See the `airlock-sdk` crate docs.
#[proc_macro_attribute]
pub fn skills(attr: TokenStream, item: TokenStream) -> TokenStream {
    skills::expand(attr.into(), item.into())
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
