//! `#[tool]`: reads the tool's attributes and signature and generates the
//! `airlock_sdk::Tool` implementation (description, schemas, dispatch). What
//! one parameter says of itself (`#[arg(...)]`) and how it is passed is
//! [`crate::param`]'s.

use crate::common::{Seen, doc_text, key_name, marker, parse_icon, string_value, valid_tool_name};
use crate::param::{Default, Passing, parse_arg_attrs, passing};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use std::collections::HashSet;
use syn::{FnArg, GenericParam, ItemFn, LitStr, Pat, ReturnType, Type, spanned::Spanned};

/// The tool's attributes, as written in `#[tool(...)]`.
#[derive(Default)]
struct ToolAttrs {
    name: Option<LitStr>,
    title: Option<LitStr>,
    description: Option<LitStr>,
    read_only: Option<Span>,
    destructive: Option<Span>,
    idempotent: bool,
    open_world: bool,
    icons: Vec<TokenStream>,
    task_support: Option<syn::Ident>,
    output_schema: Option<LitStr>,
    ui: Option<LitStr>,
    meta: Option<LitStr>,
}

const TOOL_KEYS: &str = "name, title, description, read_only, destructive, idempotent, open_world, icon, task_support, output_schema, ui, meta";

fn parse_tool_attrs(attr: TokenStream) -> syn::Result<ToolAttrs> {
    let mut out = ToolAttrs::default();
    let mut seen = Seen(HashSet::new());
    let parser = syn::meta::parser(|meta| {
        let key = key_name(&meta);
        if key != "icon" {
            seen.check(&meta, "#[tool]")?;
        }
        match key.as_str() {
            "name" => {
                let lit = string_value(&meta)?;
                if !valid_tool_name(&lit.value()) {
                    return Err(syn::Error::new(
                        lit.span(),
                        "a tool name is 1 to 64 characters of `A-Z a-z 0-9 _ - .`",
                    ));
                }
                out.name = Some(lit);
            }
            "title" => out.title = Some(string_value(&meta)?),
            "description" => {
                let lit = string_value(&meta)?;
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(lit.span(), "the description is empty"));
                }
                out.description = Some(lit);
            }
            "read_only" => out.read_only = Some(marker(&meta)?),
            "destructive" => out.destructive = Some(marker(&meta)?),
            "idempotent" => {
                marker(&meta)?;
                out.idempotent = true;
            }
            "open_world" => {
                marker(&meta)?;
                out.open_world = true;
            }
            "icon" => out.icons.push(parse_icon(&meta)?),
            "task_support" => {
                let lit = string_value(&meta)?;
                let variant = match lit.value().as_str() {
                    "forbidden" => "Forbidden",
                    "optional" => "Optional",
                    "required" => "Required",
                    _ => {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`task_support` is one of \"forbidden\", \"optional\" or \"required\"",
                        ));
                    }
                };
                out.task_support = Some(syn::Ident::new(variant, lit.span()));
            }
            "output_schema" => {
                let lit = string_value(&meta)?;
                match serde_json::from_str::<serde_json::Value>(&lit.value()) {
                    Ok(v) if v.get("type").and_then(|t| t.as_str()) == Some("object") => {}
                    Ok(_) => {
                        return Err(syn::Error::new(
                            lit.span(),
                            "an output schema's root must be an object schema: {\"type\":\"object\", …}",
                        ));
                    }
                    Err(e) => {
                        return Err(syn::Error::new(
                            lit.span(),
                            format!("the output schema is not valid JSON: {e}"),
                        ));
                    }
                }
                out.output_schema = Some(lit);
            }
            "ui" => {
                let lit = string_value(&meta)?;
                if !lit.value().starts_with("ui://") {
                    return Err(syn::Error::new(
                        lit.span(),
                        "`ui` names the tool's MCP App resource, a `ui://` URI served by a `#[resource]` of this component",
                    ));
                }
                out.ui = Some(lit);
            }
            "meta" => out.meta = Some(crate::common::json_object(&meta)?),
            _ => {
                return Err(meta.error(format!(
                    "unknown key `{key}` in `#[tool]`; the keys are: {TOOL_KEYS}"
                )));
            }
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;
    if let (Some(_), Some(span)) = (out.read_only, out.destructive) {
        return Err(syn::Error::new(
            span,
            "a tool cannot be both `read_only` and `destructive`",
        ));
    }
    Ok(out)
}

/// The `T` of a return type `Result<T, E>` (or `Result<T>` of an alias), if
/// the return type is spelled that way.
fn result_ok_type(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attrs = parse_tool_attrs(attr)?;
    let mut func: ItemFn = syn::parse2(item)?;
    let sig = &func.sig;
    let fn_name = sig.ident.clone();
    let vis = func.vis.clone();

    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new(a.span(), "a tool cannot be `async`"));
    }
    if let Some(p) = sig
        .generics
        .params
        .iter()
        .find(|p| !matches!(p, GenericParam::Lifetime(_)))
    {
        return Err(syn::Error::new(
            p.span(),
            "a tool cannot be generic: its schema is fixed when the component is built",
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new(v.span(), "a tool cannot be variadic"));
    }

    let tool_name = attrs
        .name
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| crate::common::ident_name(&fn_name));
    if !valid_tool_name(&tool_name) {
        return Err(syn::Error::new(
            fn_name.span(),
            "a tool name is 1 to 64 characters of `A-Z a-z 0-9 _ - .`; set one with `name = \"…\"`",
        ));
    }
    let description = match (&attrs.description, doc_text(&func.attrs)) {
        (Some(d), _) => d.value(),
        (None, Some(d)) => d,
        (None, None) => {
            return Err(syn::Error::new(
                fn_name.span(),
                format!(
                    "tool `{tool_name}` has no description: add a doc comment (`/// What it does.`) or `#[tool(description = \"…\")]`; a model chooses tools by this text"
                ),
            ));
        }
    };

    let mut params = Vec::new();
    let mut reads = Vec::new();
    let mut passes = Vec::new();
    let mut wire_names = HashSet::new();
    let mut errors: Option<syn::Error> = None;
    let mut push_error = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };

    for (index, input) in func.sig.inputs.iter_mut().enumerate() {
        let pat_type = match input {
            FnArg::Receiver(r) => {
                push_error(syn::Error::new(
                    r.span(),
                    "a tool is a free function: it cannot take `self`",
                ));
                continue;
            }
            FnArg::Typed(t) => t,
        };
        let arg_attrs = match parse_arg_attrs(&pat_type.attrs) {
            Ok(a) => a,
            Err(e) => {
                push_error(e);
                continue;
            }
        };
        pat_type.attrs.retain(|a| !a.path().is_ident("arg"));
        let rust_name = match &*pat_type.pat {
            Pat::Ident(p) => crate::common::ident_name(&p.ident),
            other => {
                push_error(syn::Error::new(
                    other.span(),
                    "a tool parameter must be a plain name (`sku: String`), not a pattern",
                ));
                continue;
            }
        };
        let passing = match passing(&rust_name, &pat_type.ty) {
            Ok(p) => p,
            Err(e) => {
                push_error(e);
                continue;
            }
        };
        let wire = arg_attrs
            .rename
            .as_ref()
            .map(LitStr::value)
            .unwrap_or_else(|| rust_name.clone());
        if !wire_names.insert(wire.clone()) {
            push_error(syn::Error::new(
                pat_type.span(),
                format!("two parameters are named `{wire}` in the schema"),
            ));
            continue;
        }
        let ty = match &passing {
            Passing::Value(t) => (**t).clone(),
            Passing::Str => syn::parse_quote!(::std::string::String),
        };
        let span = pat_type.ty.span();
        let description = match &arg_attrs.description {
            Some(d) => quote!(::std::option::Option::Some(#d)),
            None => quote!(::std::option::Option::None),
        };
        let schema_type = match &arg_attrs.schema_type {
            Some(t) => quote!(::std::option::Option::Some(#t)),
            None => quote!(::std::option::Option::None),
        };
        let var = syn::Ident::new(&format!("__airlock_arg_{index}"), Span::call_site());
        let (default_schema, read) = match &arg_attrs.default {
            None => (
                quote!(::std::option::Option::None),
                quote_spanned!(span=> ::airlock_sdk::__private::arg::<#ty>(__airlock_arguments, #wire)?),
            ),
            Some(Default::Json(lit)) => (
                quote_spanned!(span=> ::std::option::Option::Some(
                    ::airlock_sdk::__private::checked_default::<#ty>(
                        #wire,
                        ::airlock_sdk::__private::serde_json::json!(#lit),
                    )
                )),
                quote_spanned!(span=> ::airlock_sdk::__private::arg_or_json::<#ty>(
                    __airlock_arguments,
                    #wire,
                    ::airlock_sdk::__private::serde_json::json!(#lit),
                )?),
            ),
            Some(Default::Expr(expr)) => (
                quote_spanned!(span=> ::std::option::Option::Some(
                    ::airlock_sdk::__private::default_json::<#ty>(&{ let __v: #ty = #expr; __v })
                )),
                quote_spanned!(span=> ::airlock_sdk::__private::arg_or_else::<#ty>(
                    __airlock_arguments,
                    #wire,
                    || #expr,
                )?),
            ),
        };
        // An example is only advertised (`examples: [value]`), checked like
        // a default when the tool is described.
        let example_schema = match &arg_attrs.example {
            None => quote!(::std::option::Option::None),
            Some(Default::Json(lit)) => quote_spanned!(span=> ::std::option::Option::Some(
                ::airlock_sdk::__private::checked_example::<#ty>(
                    #wire,
                    ::airlock_sdk::__private::serde_json::json!(#lit),
                )
            )),
            Some(Default::Expr(expr)) => quote_spanned!(span=> ::std::option::Option::Some(
                ::airlock_sdk::__private::default_json::<#ty>(&{ let __v: #ty = #expr; __v })
            )),
        };
        let param = quote_spanned! {span=>
            ::airlock_sdk::__private::param::<#ty>(
                #wire,
                #description,
                #default_schema,
                #example_schema,
                #schema_type,
            )
        };
        params.push(match &arg_attrs.header {
            Some(header) => quote_spanned! {span=>
                ::airlock_sdk::__private::mirrored(#param, #header)
            },
            None => param,
        });
        reads.push(quote!(let #var: #ty = #read;));
        passes.push(match passing {
            Passing::Value(_) => quote!(#var),
            Passing::Str => quote!(&#var),
        });
    }
    if let Some(e) = errors {
        return Err(e);
    }

    let explicit = attrs.output_schema.is_some();
    let (value_ty, is_result): (Type, bool) = match &func.sig.output {
        ReturnType::Default => (syn::parse_quote!(()), false),
        ReturnType::Type(_, ty) => match result_ok_type(ty) {
            Some(ok) => (ok.clone(), true),
            None => ((**ty).clone(), false),
        },
    };
    let output_span = match &func.sig.output {
        ReturnType::Default => fn_name.span(),
        ReturnType::Type(_, ty) => ty.span(),
    };
    let output_schema = match &attrs.output_schema {
        Some(text) => quote! {
            ::std::option::Option::Some(::airlock_sdk::__private::explicit_schema(#text))
        },
        None => quote_spanned! {output_span=>
            <#value_ty as ::airlock_sdk::__private::IntoToolOutput>::output_schema()
        },
    };
    let finish = if is_result {
        quote_spanned! {output_span=>
            match __airlock_result {
                ::std::result::Result::Ok(value) => {
                    <#value_ty as ::airlock_sdk::__private::IntoToolOutput>::into_output(value, #explicit)
                }
                ::std::result::Result::Err(error) => {
                    #[allow(unused_imports)]
                    use ::airlock_sdk::__private::{ViaDisplay as _, ViaToolError as _};
                    ::std::result::Result::Err((&::airlock_sdk::__private::ErrorWrap(error)).to_tool_error())
                }
            }
        }
    } else {
        quote_spanned! {output_span=>
            <#value_ty as ::airlock_sdk::__private::IntoToolOutput>::into_output(__airlock_result, #explicit)
        }
    };

    let title = match &attrs.title {
        Some(t) => quote!(::std::option::Option::Some(::std::string::String::from(#t))),
        None => quote!(::std::option::Option::None),
    };
    let read_only = attrs.read_only.is_some();
    let destructive = attrs.destructive.is_some();
    let idempotent = attrs.idempotent;
    let open_world = attrs.open_world;
    let icons = &attrs.icons;
    let task_support = attrs
        .task_support
        .clone()
        .unwrap_or_else(|| syn::Ident::new("Forbidden", Span::call_site()));

    let meta = crate::common::meta_tokens(attrs.meta.as_ref(), attrs.ui.as_ref());

    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fn_name {}

        impl ::airlock_sdk::Tool for #fn_name {
            const NAME: &'static str = #tool_name;

            fn info() -> ::airlock_sdk::ToolInfo {
                ::airlock_sdk::ToolInfo {
                    name: ::std::string::String::from(#tool_name),
                    title: #title,
                    description: ::std::string::String::from(#description),
                    input_schema: ::airlock_sdk::__private::input_schema(::std::vec![#(#params),*]),
                    output_schema: #output_schema,
                    hints: ::airlock_sdk::Hints {
                        read_only: #read_only,
                        destructive: #destructive,
                        idempotent: #idempotent,
                        open_world: #open_world,
                    },
                    icons: ::std::vec![#(#icons),*],
                    task_support: ::airlock_sdk::TaskSupport::#task_support,
                }
            }

            fn call(
                __airlock_arguments: &::airlock_sdk::__private::serde_json::Map<
                    ::std::string::String,
                    ::airlock_sdk::__private::serde_json::Value,
                >,
            ) -> ::std::result::Result<::airlock_sdk::Output, ::airlock_sdk::Error> {
                #(#reads)*
                let __airlock_result = #fn_name(#(#passes),*);
                #finish
            }

            fn meta() -> ::std::option::Option<::airlock_sdk::__private::serde_json::Value> {
                #meta
            }
        }
    })
}
