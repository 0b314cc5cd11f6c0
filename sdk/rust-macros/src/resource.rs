//! `#[resource]` and `#[resource_template]`: a read is a function. Reads the
//! declaration's keys and the function's signature and generates the
//! `airlock_sdk::Resource` / `airlock_sdk::ResourceTemplate` implementation
//! and its `Export` entry.

use crate::common::{Seen, doc_text, json_object, key_name, parse_icon, string_value};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use std::collections::HashSet;
use syn::{Expr, ExprLit, FnArg, ItemFn, Lit, LitStr, Pat, Type, spanned::Spanned};

/// The keys of `#[resource(...)]` / `#[resource_template(...)]`.
#[derive(Default)]
pub struct DeclAttrs {
    pub uri: Option<LitStr>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    pub mime_type: Option<LitStr>,
    pub size: Option<syn::LitInt>,
    pub icons: Vec<TokenStream>,
    pub meta: Option<LitStr>,
    pub audience: Vec<Span>,
    pub audience_roles: Vec<syn::Ident>,
    pub priority: Option<syn::LitFloat>,
    pub last_modified: Option<LitStr>,
}

const RESOURCE_KEYS: &str =
    "uri, name, title, description, mime_type, size, icon, meta, audience, priority, last_modified";
const TEMPLATE_KEYS: &str =
    "uri_template, name, title, description, mime_type, icon, audience, priority, last_modified";

fn parse_attrs(attr: TokenStream, template: bool) -> syn::Result<DeclAttrs> {
    let what = if template {
        "#[resource_template]"
    } else {
        "#[resource]"
    };
    let uri_key = if template { "uri_template" } else { "uri" };
    let keys = if template {
        TEMPLATE_KEYS
    } else {
        RESOURCE_KEYS
    };
    let mut out = DeclAttrs::default();
    let mut seen = Seen(HashSet::new());
    let parser = syn::meta::parser(|meta| {
        let key = key_name(&meta);
        if key != "icon" {
            seen.check(&meta, what)?;
        }
        match key.as_str() {
            k if k == uri_key => {
                let lit = string_value(&meta)?;
                if !lit.value().contains(':') {
                    return Err(syn::Error::new(
                        lit.span(),
                        "a resource's URI has a scheme, e.g. \"file:///notes/todo.md\" or \"ui://stock/chart\"",
                    ));
                }
                if template && !lit.value().contains('{') {
                    return Err(syn::Error::new(
                        lit.span(),
                        "a URI template has at least one `{variable}`; a fixed URI is a `#[resource]`",
                    ));
                }
                out.uri = Some(lit);
            }
            "name" => out.name = Some(string_value(&meta)?),
            "title" => out.title = Some(string_value(&meta)?),
            "description" => out.description = Some(string_value(&meta)?),
            "mime_type" => out.mime_type = Some(string_value(&meta)?),
            "size" if !template => out.size = Some(meta.value()?.parse()?),
            "icon" => out.icons.push(parse_icon(&meta)?),
            "meta" if !template => out.meta = Some(json_object(&meta)?),
            "audience" => {
                let array: syn::ExprArray = meta.value()?.parse()?;
                for elem in array.elems {
                    let role = match &elem {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(s), ..
                        }) if s.value() == "user" => "User",
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(s), ..
                        }) if s.value() == "assistant" => "Assistant",
                        other => {
                            return Err(syn::Error::new(
                                other.span(),
                                "`audience` is a list of \"user\" and \"assistant\"",
                            ));
                        }
                    };
                    out.audience.push(elem.span());
                    out.audience_roles.push(syn::Ident::new(role, elem.span()));
                }
            }
            "priority" => {
                let lit: syn::LitFloat = meta.value()?.parse()?;
                let value: f64 = lit.base10_parse()?;
                if !(0.0..=1.0).contains(&value) {
                    return Err(syn::Error::new(lit.span(), "`priority` is from 0.0 to 1.0"));
                }
                out.priority = Some(lit);
            }
            "last_modified" => out.last_modified = Some(string_value(&meta)?),
            _ => {
                return Err(meta.error(format!(
                    "unknown key `{key}` in `{what}`; the keys are: {keys}"
                )));
            }
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(out)
}

/// The declared name (else the function's) and the description (the
/// attribute's, else the doc comment) as an `Option<String>` expression.
fn name_and_description(
    attrs: &DeclAttrs,
    func: &ItemFn,
    fn_name: &syn::Ident,
) -> (String, TokenStream) {
    let name = attrs
        .name
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| crate::common::ident_name(fn_name));
    let description = match (&attrs.description, doc_text(&func.attrs)) {
        (Some(d), _) => Some(d.value()),
        (None, d) => d,
    };
    let description = match description {
        Some(d) => quote!(::std::option::Option::Some(::std::string::String::from(#d))),
        None => quote!(::std::option::Option::None),
    };
    (name, description)
}

fn opt_string(lit: Option<&LitStr>) -> TokenStream {
    match lit {
        Some(l) => quote!(::std::option::Option::Some(::std::string::String::from(#l))),
        None => quote!(::std::option::Option::None),
    }
}

fn opt_str(lit: Option<&LitStr>) -> TokenStream {
    match lit {
        Some(l) => quote!(::std::option::Option::Some(#l)),
        None => quote!(::std::option::Option::None),
    }
}

fn annotations(attrs: &DeclAttrs) -> TokenStream {
    if attrs.audience.is_empty() && attrs.priority.is_none() && attrs.last_modified.is_none() {
        return quote!(::std::option::Option::None);
    }
    let roles = &attrs.audience_roles;
    let priority = match &attrs.priority {
        Some(p) => quote!(::std::option::Option::Some(#p)),
        None => quote!(::std::option::Option::None),
    };
    let last_modified = opt_string(attrs.last_modified.as_ref());
    quote! {
        ::std::option::Option::Some(::airlock_sdk::Annotations {
            audience: ::std::vec![#(::airlock_sdk::Role::#roles),*],
            priority: #priority,
            last_modified: #last_modified,
        })
    }
}

/// The checks every declared function gets: a plain, synchronous,
/// non-generic free function.
pub fn check_signature(func: &ItemFn, what: &str) -> syn::Result<()> {
    let sig = &func.sig;
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new(
            a.span(),
            format!("a {what} cannot be `async`"),
        ));
    }
    if let Some(p) = sig.generics.params.first() {
        return Err(syn::Error::new(
            p.span(),
            format!("a {what} cannot be generic"),
        ));
    }
    if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
        return Err(syn::Error::new(
            r.span(),
            format!("a {what} is a free function: it cannot take `self`"),
        ));
    }
    Ok(())
}

/// `#[resource(uri = "…", …)] fn f() -> T` with `T: IntoContents`.
pub fn expand_resource(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attrs = parse_attrs(attr, false)?;
    let func: ItemFn = syn::parse2(item)?;
    check_signature(&func, "resource")?;
    let fn_name = &func.sig.ident;
    let vis = &func.vis;
    let uri = attrs.uri.clone().ok_or_else(|| {
        syn::Error::new(
            fn_name.span(),
            "a resource needs its URI: `#[resource(uri = \"file:///…\")]`",
        )
    })?;
    if let Some(p) = func.sig.inputs.first() {
        return Err(syn::Error::new(
            p.span(),
            "a resource with a fixed URI takes no parameters; for variables use `#[resource_template(uri_template = \"…/{name}\")]`",
        ));
    }
    let (name, description) = name_and_description(&attrs, &func, fn_name);
    let title = opt_string(attrs.title.as_ref());
    let mime = opt_string(attrs.mime_type.as_ref());
    let mime_str = opt_str(attrs.mime_type.as_ref());
    let size = match &attrs.size {
        Some(s) => quote!(::std::option::Option::Some(#s)),
        None => quote!(::std::option::Option::None),
    };
    let icons = &attrs.icons;
    let annotations = annotations(&attrs);
    let meta = crate::common::meta_tokens(attrs.meta.as_ref(), None);
    let ret_span = match &func.sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => fn_name.span(),
    };
    let read = quote_spanned! {ret_span=>
        ::airlock_sdk::IntoContents::into_contents(#fn_name(), #uri, #mime_str)
    };
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fn_name {}

        impl ::airlock_sdk::Resource for #fn_name {
            const URI: &'static str = #uri;

            fn info() -> ::airlock_sdk::ResourceInfo {
                ::airlock_sdk::ResourceInfo {
                    uri: ::std::string::String::from(#uri),
                    name: ::std::string::String::from(#name),
                    title: #title,
                    description: #description,
                    mime_type: #mime,
                    size: #size,
                    annotations: #annotations,
                    icons: ::std::vec![#(#icons),*],
                    meta: #meta,
                }
            }

            fn read() -> ::std::result::Result<
                ::std::vec::Vec<::airlock_sdk::Contents>,
                ::airlock_sdk::ReadError,
            > {
                #read
            }
        }

        impl ::airlock_sdk::Export for #fn_name {
            const ENTRY: ::airlock_sdk::Entry =
                ::airlock_sdk::Entry::Resource(::airlock_sdk::ResourceEntry::of::<#fn_name>());
        }
    })
}

/// The variable names of a level-1 URI template, in order.
fn template_variables(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push(rest[open + 1..open + close].to_owned());
        rest = &rest[open + close + 1..];
    }
    out
}

/// `#[resource_template(uri_template = "…/{name}", …)] fn f(name: String) -> T`.
pub fn expand_template(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let attrs = parse_attrs(attr, true)?;
    let func: ItemFn = syn::parse2(item)?;
    check_signature(&func, "resource template")?;
    let fn_name = &func.sig.ident;
    let vis = &func.vis;
    let template = attrs.uri.clone().ok_or_else(|| {
        syn::Error::new(
            fn_name.span(),
            "a resource template needs `uri_template = \"scheme://…/{variable}\"`",
        )
    })?;
    let variables = template_variables(&template.value());
    for v in &variables {
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(syn::Error::new(
                template.span(),
                format!(
                    "`{{{v}}}`: airlock reads level-1 templates, whose variables are plain names such as `{{id}}`"
                ),
            ));
        }
    }
    let mut reads = Vec::new();
    let mut passes = Vec::new();
    let mut params = HashSet::new();
    for (index, input) in func.sig.inputs.iter().enumerate() {
        let FnArg::Typed(pat_type) = input else {
            continue;
        };
        let Pat::Ident(p) = &*pat_type.pat else {
            return Err(syn::Error::new(
                pat_type.pat.span(),
                "a template variable is a plain name (`id: String`), not a pattern",
            ));
        };
        let name = crate::common::ident_name(&p.ident);
        if !variables.contains(&name) {
            return Err(syn::Error::new(
                p.ident.span(),
                format!(
                    "parameter `{name}` is not a variable of {:?}; the parameters are the template's variables ({})",
                    template.value(),
                    variables.join(", ")
                ),
            ));
        }
        params.insert(name.clone());
        let var = syn::Ident::new(&format!("__airlock_var_{index}"), Span::call_site());
        let (ty, pass) = match &*pat_type.ty {
            Type::Reference(r)
                if r.mutability.is_none()
                    && matches!(&*r.elem, Type::Path(tp) if tp.path.is_ident("str")) =>
            {
                (quote!(::std::string::String), quote!(&#var))
            }
            ty => (quote!(#ty), quote!(#var)),
        };
        let span = pat_type.ty.span();
        reads.push(quote_spanned! {span=>
            let #var: #ty = ::airlock_sdk::__private::template_var::<#ty>(__airlock_variables, #name)?;
        });
        passes.push(pass);
    }
    if let Some(missing) = variables.iter().find(|v| !params.contains(*v)) {
        return Err(syn::Error::new(
            fn_name.span(),
            format!(
                "the template's variable `{missing}` has no parameter: add `{missing}: String`"
            ),
        ));
    }
    let (name, description) = name_and_description(&attrs, &func, fn_name);
    let title = opt_string(attrs.title.as_ref());
    let mime = opt_string(attrs.mime_type.as_ref());
    let mime_str = opt_str(attrs.mime_type.as_ref());
    let icons = &attrs.icons;
    let annotations = annotations(&attrs);
    let ret_span = match &func.sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => fn_name.span(),
    };
    let read = quote_spanned! {ret_span=>
        ::airlock_sdk::IntoContents::into_contents(#fn_name(#(#passes),*), __airlock_uri, #mime_str)
    };
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fn_name {}

        impl ::airlock_sdk::ResourceTemplate for #fn_name {
            const URI_TEMPLATE: &'static str = #template;

            fn info() -> ::airlock_sdk::TemplateInfo {
                ::airlock_sdk::TemplateInfo {
                    uri_template: ::std::string::String::from(#template),
                    name: ::std::string::String::from(#name),
                    title: #title,
                    description: #description,
                    mime_type: #mime,
                    annotations: #annotations,
                    icons: ::std::vec![#(#icons),*],
                }
            }

            fn read(
                __airlock_uri: &str,
                __airlock_variables: &[(::std::string::String, ::std::string::String)],
            ) -> ::std::result::Result<
                ::std::vec::Vec<::airlock_sdk::Contents>,
                ::airlock_sdk::ReadError,
            > {
                #(#reads)*
                #read
            }
        }

        impl ::airlock_sdk::Export for #fn_name {
            const ENTRY: ::airlock_sdk::Entry =
                ::airlock_sdk::Entry::Template(::airlock_sdk::TemplateEntry::of::<#fn_name>());
        }
    })
}
