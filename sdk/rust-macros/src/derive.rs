//! `#[derive(ToolSchema)]`: the JSON Schema of a struct (an `object`), a
//! newtype struct (its inner type) or a unit-only enum (a `string` with
//! `enum`), following serde's renaming so the schema matches what serde
//! reads.

use crate::common::{doc_text, ident_name, serde_attrs};
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, parse_quote, spanned::Spanned};

pub fn expand(item: TokenStream) -> syn::Result<TokenStream> {
    let mut input: DeriveInput = syn::parse2(item)?;
    let name = &input.ident;
    let container = serde_attrs(&input.attrs)?;
    let description = match doc_text(&input.attrs) {
        Some(d) => quote!(::std::option::Option::Some(#d)),
        None => quote!(::std::option::Option::None),
    };
    let mut optional = quote!(false);

    let body = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => {
                let mut entries = Vec::new();
                for field in &fields.named {
                    let attrs = serde_attrs(&field.attrs)?;
                    if let Some(span) = attrs.flatten {
                        return Err(syn::Error::new(
                            span,
                            "`#[serde(flatten)]` is not supported by `#[derive(ToolSchema)]`",
                        ));
                    }
                    if attrs.skip {
                        continue;
                    }
                    let ident = field
                        .ident
                        .as_ref()
                        .ok_or_else(|| syn::Error::new(field.span(), "a field without a name"))?;
                    let wire = attrs.rename.unwrap_or_else(|| {
                        let n = ident_name(ident);
                        container.rename_all.map(|c| c.field(&n)).unwrap_or(n)
                    });
                    let ty = &field.ty;
                    let doc = match doc_text(&field.attrs) {
                        Some(d) => quote!(::std::option::Option::Some(#d)),
                        None => quote!(::std::option::Option::None),
                    };
                    let has_default = attrs.default || container.default;
                    entries.push(quote! {
                        ::airlock_sdk::__private::field::<#ty>(#wire, #doc, #has_default)
                    });
                }
                let deny = container.deny_unknown_fields;
                quote! {
                    ::airlock_sdk::__private::object_schema(
                        #description,
                        ::std::vec![#(#entries),*],
                        #deny,
                    )
                }
            }
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                let ty = &fields.unnamed[0].ty;
                optional = quote!(<#ty as ::airlock_sdk::ToolSchema>::OPTIONAL);
                quote! {
                    ::airlock_sdk::__private::with_description(
                        <#ty as ::airlock_sdk::ToolSchema>::schema(),
                        #description,
                    )
                }
            }
            _ => {
                return Err(syn::Error::new(
                    name.span(),
                    "`#[derive(ToolSchema)]` needs a struct with named fields or a newtype struct `struct Sku(String);`",
                ));
            }
        },
        Data::Enum(data) => {
            let mut variants = Vec::new();
            for variant in &data.variants {
                if !matches!(variant.fields, Fields::Unit) {
                    return Err(syn::Error::new(
                        variant.span(),
                        format!(
                            "variant `{}` carries data: `#[derive(ToolSchema)]` supports unit-only enums, which become a string with `enum`",
                            variant.ident
                        ),
                    ));
                }
                let attrs = serde_attrs(&variant.attrs)?;
                if attrs.skip {
                    continue;
                }
                variants.push(attrs.rename.unwrap_or_else(|| {
                    let n = ident_name(&variant.ident);
                    container.rename_all.map(|c| c.variant(&n)).unwrap_or(n)
                }));
            }
            quote! {
                ::airlock_sdk::__private::enum_schema(#description, &[#(#variants),*])
            }
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span(),
                "`#[derive(ToolSchema)]` does not support unions",
            ));
        }
    };

    let type_params: Vec<_> = input
        .generics
        .type_params()
        .map(|p| p.ident.clone())
        .collect();
    let where_clause = input.generics.make_where_clause();
    for p in type_params {
        where_clause
            .predicates
            .push(parse_quote!(#p: ::airlock_sdk::ToolSchema));
    }
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics ::airlock_sdk::ToolSchema for #name #ty_generics #where_clause {
            const OPTIONAL: bool = #optional;

            fn schema() -> ::airlock_sdk::__private::serde_json::Value {
                #body
            }
        }
    })
}
