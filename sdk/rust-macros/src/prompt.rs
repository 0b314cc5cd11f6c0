//! `#[prompt]` (a prompt is a function returning messages; its parameters
//! are the prompt's arguments) and `#[complete]` (values for one argument of
//! a prompt or variable of a resource template).

use crate::common::{Seen, doc_text, key_name, parse_icon, string_value, valid_tool_name};
use crate::resource::check_signature;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use std::collections::HashSet;
use syn::{Expr, ExprLit, FnArg, ItemFn, Lit, LitStr, Pat, ReturnType, Type, spanned::Spanned};

const PROMPT_KEYS: &str = "name, title, description, icon";
const PROMPT_ARG_KEYS: &str = "rename, title, description";
const COMPLETE_KEYS: &str = "prompt, resource_template, argument";

/// The `T` of `Option<T>`, if the type is spelled that way.
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
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

fn is_str_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if r.mutability.is_none()
        && matches!(&*r.elem, Type::Path(p) if p.path.is_ident("str")))
}

/// The `T` of a return type `Result<T, E>`, if spelled that way.
fn result_ok(ty: &Type) -> Option<&Type> {
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

/// Turns the function's return value (`__airlock_result`) into `Result<X,
/// airlock_sdk::Error>` with `convert` applied to the value: a `Result`'s
/// error reaches the client like a tool's (an `Error` as is, anything else
/// as `failed` with its text).
fn finish(output: &ReturnType, convert: TokenStream) -> TokenStream {
    let (is_result, span) = match output {
        ReturnType::Default => (false, Span::call_site()),
        ReturnType::Type(_, ty) => (result_ok(ty).is_some(), ty.span()),
    };
    if is_result {
        quote_spanned! {span=>
            match __airlock_result {
                ::std::result::Result::Ok(value) => ::std::result::Result::Ok(#convert(value)),
                ::std::result::Result::Err(error) => {
                    #[allow(unused_imports)]
                    use ::airlock_sdk::__private::{ViaDisplay as _, ViaToolError as _};
                    ::std::result::Result::Err((&::airlock_sdk::__private::ErrorWrap(error)).to_tool_error())
                }
            }
        }
    } else {
        quote_spanned! {span=> ::std::result::Result::Ok(#convert(__airlock_result)) }
    }
}

/// `#[prompt(name, title, description, icon(...))] fn f(args…) -> messages`.
pub fn expand_prompt(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut name: Option<LitStr> = None;
    let mut title: Option<LitStr> = None;
    let mut description: Option<LitStr> = None;
    let mut icons = Vec::new();
    let mut seen = Seen(HashSet::new());
    let parser = syn::meta::parser(|meta| {
        let key = key_name(&meta);
        if key != "icon" {
            seen.check(&meta, "#[prompt]")?;
        }
        match key.as_str() {
            "name" => {
                let lit = string_value(&meta)?;
                if !valid_tool_name(&lit.value()) {
                    return Err(syn::Error::new(
                        lit.span(),
                        "a prompt name is 1 to 64 characters of `A-Z a-z 0-9 _ - .`",
                    ));
                }
                name = Some(lit);
            }
            "title" => title = Some(string_value(&meta)?),
            "description" => description = Some(string_value(&meta)?),
            "icon" => icons.push(parse_icon(&meta)?),
            _ => {
                return Err(meta.error(format!(
                    "unknown key `{key}` in `#[prompt]`; the keys are: {PROMPT_KEYS}"
                )));
            }
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;

    let mut func: ItemFn = syn::parse2(item)?;
    check_signature(&func, "prompt")?;
    let fn_name = func.sig.ident.clone();
    let vis = func.vis.clone();
    let prompt_name = name
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| crate::common::ident_name(&fn_name));
    if !valid_tool_name(&prompt_name) {
        return Err(syn::Error::new(
            fn_name.span(),
            "a prompt name is 1 to 64 characters of `A-Z a-z 0-9 _ - .`; set one with `name = \"…\"`",
        ));
    }
    let description = match (&description, doc_text(&func.attrs)) {
        (Some(d), _) => Some(d.value()),
        (None, d) => d,
    };
    let description = match description {
        Some(d) => quote!(::std::option::Option::Some(::std::string::String::from(#d))),
        None => quote!(::std::option::Option::None),
    };

    let mut arguments = Vec::new();
    let mut reads = Vec::new();
    let mut passes = Vec::new();
    let mut names = HashSet::new();
    for (index, input) in func.sig.inputs.iter_mut().enumerate() {
        let FnArg::Typed(pat_type) = input else {
            continue;
        };
        let (mut rename, mut arg_title, mut arg_description) = (None, None, None);
        let mut seen = Seen(HashSet::new());
        for attr in pat_type.attrs.iter().filter(|a| a.path().is_ident("arg")) {
            attr.parse_nested_meta(|meta| {
                seen.check(&meta, "#[arg]")?;
                match key_name(&meta).as_str() {
                    "rename" => rename = Some(string_value(&meta)?),
                    "title" => arg_title = Some(string_value(&meta)?),
                    "description" => arg_description = Some(string_value(&meta)?),
                    key => {
                        return Err(meta.error(format!(
                            "unknown key `{key}` in a prompt's `#[arg]`; the keys are: {PROMPT_ARG_KEYS}"
                        )));
                    }
                }
                Ok(())
            })?;
        }
        pat_type.attrs.retain(|a| !a.path().is_ident("arg"));
        let Pat::Ident(p) = &*pat_type.pat else {
            return Err(syn::Error::new(
                pat_type.pat.span(),
                "a prompt argument is a plain name (`topic: String`), not a pattern",
            ));
        };
        let wire = rename
            .as_ref()
            .map(LitStr::value)
            .unwrap_or_else(|| crate::common::ident_name(&p.ident));
        if !names.insert(wire.clone()) {
            return Err(syn::Error::new(
                p.ident.span(),
                format!("two arguments are named `{wire}`"),
            ));
        }
        let var = syn::Ident::new(&format!("__airlock_arg_{index}"), Span::call_site());
        let span = pat_type.ty.span();
        let ty = &*pat_type.ty;
        let (required, read, pass) = if is_str_ref(ty) {
            (
                true,
                quote_spanned!(span=> ::airlock_sdk::__private::prompt_arg::<::std::string::String>(__airlock_arguments, #wire)?),
                quote!(&#var),
            )
        } else if let Some(inner) = option_inner(ty) {
            (
                false,
                quote_spanned!(span=> ::airlock_sdk::__private::prompt_arg_opt::<#inner>(__airlock_arguments, #wire)?),
                quote!(#var),
            )
        } else {
            (
                true,
                quote_spanned!(span=> ::airlock_sdk::__private::prompt_arg::<#ty>(__airlock_arguments, #wire)?),
                quote!(#var),
            )
        };
        reads.push(quote!(let #var = #read;));
        passes.push(pass);
        let t = match &arg_title {
            Some(l) => quote!(::std::option::Option::Some(::std::string::String::from(#l))),
            None => quote!(::std::option::Option::None),
        };
        let d = match &arg_description {
            Some(l) => quote!(::std::option::Option::Some(::std::string::String::from(#l))),
            None => quote!(::std::option::Option::None),
        };
        arguments.push(quote! {
            ::airlock_sdk::PromptArgument {
                name: ::std::string::String::from(#wire),
                title: #t,
                description: #d,
                required: #required,
            }
        });
    }
    let title = match &title {
        Some(l) => quote!(::std::option::Option::Some(::std::string::String::from(#l))),
        None => quote!(::std::option::Option::None),
    };
    let finish = finish(
        &func.sig.output,
        quote!(::airlock_sdk::IntoMessages::into_messages),
    );
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fn_name {}

        impl ::airlock_sdk::Prompt for #fn_name {
            const NAME: &'static str = #prompt_name;

            fn info() -> ::airlock_sdk::PromptInfo {
                ::airlock_sdk::PromptInfo {
                    name: ::std::string::String::from(#prompt_name),
                    title: #title,
                    description: #description,
                    arguments: ::std::vec![#(#arguments),*],
                    icons: ::std::vec![#(#icons),*],
                }
            }

            fn get(
                __airlock_arguments: &[(::std::string::String, ::std::string::String)],
            ) -> ::std::result::Result<::airlock_sdk::PromptMessages, ::airlock_sdk::Error> {
                #(#reads)*
                let __airlock_result = #fn_name(#(#passes),*);
                #finish
            }
        }

        impl ::airlock_sdk::Export for #fn_name {
            const ENTRY: ::airlock_sdk::Entry =
                ::airlock_sdk::Entry::Prompt(::airlock_sdk::PromptEntry::of::<#fn_name>());
        }
    })
}

/// `prompt = "name"` or `prompt = path` (a `#[prompt]` function, whose name
/// is then checked by the compiler); likewise `resource_template`.
fn reference(meta: &syn::meta::ParseNestedMeta, template: bool) -> syn::Result<TokenStream> {
    let value: Expr = meta.value()?.parse()?;
    let variant = if template {
        quote!(ResourceTemplate)
    } else {
        quote!(Prompt)
    };
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(quote!(::airlock_sdk::CompletionRef::#variant(#s))),
        Expr::Path(p) => {
            let constant = if template {
                quote!(<#p as ::airlock_sdk::ResourceTemplate>::URI_TEMPLATE)
            } else {
                quote!(<#p as ::airlock_sdk::Prompt>::NAME)
            };
            Ok(quote!(::airlock_sdk::CompletionRef::#variant(#constant)))
        }
        other => Err(syn::Error::new(
            other.span(),
            "name the prompt (template) by a string or by its function: `prompt = \"greet\"` or `prompt = greet`",
        )),
    }
}

/// `#[complete(prompt = …, argument = "…")] fn f(value: &str[, context]) -> values`.
pub fn expand_complete(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut target: Option<TokenStream> = None;
    let mut argument: Option<LitStr> = None;
    let mut seen = Seen(HashSet::new());
    let parser = syn::meta::parser(|meta| {
        seen.check(&meta, "#[complete]")?;
        let key = key_name(&meta);
        match key.as_str() {
            "prompt" | "resource_template" => {
                if target.is_some() {
                    return Err(meta.error(
                        "a completion is for one prompt or one resource template, not both",
                    ));
                }
                target = Some(reference(&meta, key == "resource_template")?);
            }
            "argument" => argument = Some(string_value(&meta)?),
            _ => {
                return Err(meta.error(format!(
                    "unknown key `{key}` in `#[complete]`; the keys are: {COMPLETE_KEYS}"
                )));
            }
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;
    let func: ItemFn = syn::parse2(item)?;
    check_signature(&func, "completion")?;
    let fn_name = &func.sig.ident;
    let vis = &func.vis;
    let target = target.ok_or_else(|| {
        syn::Error::new(
            fn_name.span(),
            "say what this completes: `#[complete(prompt = \"greet\", argument = \"name\")]` or `#[complete(resource_template = \"file:///notes/{name}\", argument = \"name\")]`",
        )
    })?;
    let argument = argument.ok_or_else(|| {
        syn::Error::new(
            fn_name.span(),
            "say which argument this completes: `argument = \"name\"`",
        )
    })?;
    let call = match func.sig.inputs.len() {
        1 => quote!(#fn_name(__airlock_value)),
        2 => quote!(#fn_name(__airlock_value, __airlock_context)),
        _ => {
            return Err(syn::Error::new(
                func.sig.inputs.span(),
                "a completion takes the text typed so far (`value: &str`) and optionally the arguments already given (`context: airlock_sdk::CompletionContext`)",
            ));
        }
    };
    let finish = finish(
        &func.sig.output,
        quote!(::airlock_sdk::IntoCompletion::into_completion),
    );
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fn_name {}

        impl ::airlock_sdk::Complete for #fn_name {
            const REFERENCE: ::airlock_sdk::CompletionRef<'static> = #target;
            const ARGUMENT: &'static str = #argument;

            fn complete(
                __airlock_value: &str,
                __airlock_context: ::airlock_sdk::CompletionContext<'_>,
            ) -> ::std::result::Result<::airlock_sdk::Completion, ::airlock_sdk::Error> {
                let _ = &__airlock_context;
                let __airlock_result = #call;
                #finish
            }
        }

        impl ::airlock_sdk::Export for #fn_name {
            const ENTRY: ::airlock_sdk::Entry =
                ::airlock_sdk::Entry::Completion(::airlock_sdk::CompletionEntry::of::<#fn_name>());
        }
    })
}
