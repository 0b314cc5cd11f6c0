//! Helpers shared by the attributes and `#[derive(ToolSchema)]`: doc
//! comments, serde's renaming rules, string literals, repeated keys, icons.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use std::collections::HashSet;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Meta, spanned::Spanned};

/// The text of the doc comments (`///` lines), joined and trimmed, if any.
pub fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// Parses `= "text"` after a key.
pub fn string_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<LitStr> {
    let value: Expr = meta.value()?.parse()?;
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s),
        other => Err(syn::Error::new(
            other.span(),
            "expected a string literal, e.g. \"text\"",
        )),
    }
}

/// The name of a key, for messages.
pub fn key_name(meta: &syn::meta::ParseNestedMeta) -> String {
    let path = &meta.path;
    path.get_ident()
        .map(|i| i.to_string())
        .unwrap_or_else(|| quote::quote!(#path).to_string().replace(' ', ""))
}

/// Remembers which keys were given, to refuse a duplicate.
pub struct Seen(pub HashSet<String>);

impl Seen {
    pub fn check(&mut self, meta: &syn::meta::ParseNestedMeta, what: &str) -> syn::Result<()> {
        let key = key_name(meta);
        if !self.0.insert(key.clone()) {
            return Err(meta.error(format!("duplicate `{key}` in `{what}`")));
        }
        Ok(())
    }
}

pub fn marker(meta: &syn::meta::ParseNestedMeta) -> syn::Result<Span> {
    if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
        let key = key_name(meta);
        return Err(meta.error(format!(
            "`{key}` is a marker: write it alone (present means true, absent means false)"
        )));
    }
    Ok(meta.path.span())
}

/// True when `name` is 1 to 64 characters of `A-Z a-z 0-9 _ - .`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

pub fn parse_icon(meta: &syn::meta::ParseNestedMeta) -> syn::Result<TokenStream> {
    let mut src: Option<LitStr> = None;
    let mut mime_type = quote!(::std::option::Option::None);
    let mut sizes: Vec<LitStr> = Vec::new();
    let mut seen = Seen(HashSet::new());
    meta.parse_nested_meta(|inner| {
        seen.check(&inner, "icon(...)")?;
        let key = key_name(&inner);
        match key.as_str() {
            "src" => {
                let lit = string_value(&inner)?;
                let v = lit.value();
                if !(v.starts_with("https:") || v.starts_with("data:")) {
                    return Err(syn::Error::new(
                        lit.span(),
                        "an icon's `src` is a `https:` or `data:` URI",
                    ));
                }
                src = Some(lit);
            }
            "mime_type" => {
                let lit = string_value(&inner)?;
                mime_type = quote!(::std::option::Option::Some(::std::string::String::from(#lit)));
            }
            "sizes" => {
                let array: syn::ExprArray = inner.value()?.parse()?;
                for elem in array.elems {
                    match elem {
                        Expr::Lit(ExprLit {
                            lit: Lit::Str(s), ..
                        }) => sizes.push(s),
                        other => {
                            return Err(syn::Error::new(
                                other.span(),
                                "`sizes` is a list of strings, e.g. [\"48x48\", \"any\"]",
                            ));
                        }
                    }
                }
            }
            _ => {
                return Err(inner.error(format!(
                    "unknown key `{key}` in `icon(...)`; the keys are: src, mime_type, sizes"
                )));
            }
        }
        Ok(())
    })?;
    let src = src.ok_or_else(|| meta.error("an icon needs `src = \"https://…\"`"))?;
    Ok(quote! {
        ::airlock_sdk::Icon {
            src: ::std::string::String::from(#src),
            mime_type: #mime_type,
            sizes: ::std::vec![#(::std::string::String::from(#sizes)),*],
        }
    })
}

/// Parses `= r#"{…}"#`: a string literal holding a JSON object (`_meta`).
pub fn json_object(meta: &syn::meta::ParseNestedMeta) -> syn::Result<LitStr> {
    let lit = string_value(meta)?;
    match serde_json::from_str::<serde_json::Value>(&lit.value()) {
        Ok(serde_json::Value::Object(_)) => Ok(lit),
        Ok(_) => Err(syn::Error::new(
            lit.span(),
            "`meta` is a JSON object: r#\"{…}\"#",
        )),
        Err(e) => Err(syn::Error::new(
            lit.span(),
            format!("`meta` is not valid JSON: {e}"),
        )),
    }
}

/// The `_meta` expression (`Option<Value>`) of a declaration: the JSON
/// object of `meta`, with an MCP App's `ui.resourceUri` merged in.
pub fn meta_tokens(meta: Option<&LitStr>, ui: Option<&LitStr>) -> TokenStream {
    match (meta, ui) {
        (None, None) => quote!(::std::option::Option::None),
        (meta, ui) => {
            let meta = match meta {
                Some(text) => quote!(::std::option::Option::Some(#text)),
                None => quote!(::std::option::Option::None),
            };
            let ui = match ui {
                Some(uri) => quote!(::std::option::Option::Some(#uri)),
                None => quote!(::std::option::Option::None),
            };
            quote!(::std::option::Option::Some(::airlock_sdk::__private::meta(#meta, #ui)))
        }
    }
}

/// A serde `rename_all` rule.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Case {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl Case {
    pub fn parse(lit: &LitStr) -> syn::Result<Case> {
        Ok(match lit.value().as_str() {
            "lowercase" => Case::Lower,
            "UPPERCASE" => Case::Upper,
            "PascalCase" => Case::Pascal,
            "camelCase" => Case::Camel,
            "snake_case" => Case::Snake,
            "SCREAMING_SNAKE_CASE" => Case::ScreamingSnake,
            "kebab-case" => Case::Kebab,
            "SCREAMING-KEBAB-CASE" => Case::ScreamingKebab,
            _ => {
                return Err(syn::Error::new(
                    lit.span(),
                    "unknown `rename_all` rule; serde knows lowercase, UPPERCASE, PascalCase, camelCase, snake_case, SCREAMING_SNAKE_CASE, kebab-case, SCREAMING-KEBAB-CASE",
                ));
            }
        })
    }

    /// Renames an enum variant (written in PascalCase), as serde does.
    pub fn variant(self, name: &str) -> String {
        let snake = || {
            let mut out = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    out.push('_');
                }
                out.extend(c.to_lowercase());
            }
            out
        };
        match self {
            Case::Lower => name.to_ascii_lowercase(),
            Case::Upper => name.to_ascii_uppercase(),
            Case::Pascal => name.to_owned(),
            Case::Camel => {
                let mut chars = name.chars();
                chars
                    .next()
                    .map(|c| c.to_lowercase().chain(chars).collect())
                    .unwrap_or_default()
            }
            Case::Snake => snake(),
            Case::ScreamingSnake => snake().to_ascii_uppercase(),
            Case::Kebab => snake().replace('_', "-"),
            Case::ScreamingKebab => snake().to_ascii_uppercase().replace('_', "-"),
        }
    }

    /// Renames a struct field (written in snake_case), as serde does.
    pub fn field(self, name: &str) -> String {
        let pascal = || {
            let mut out = String::new();
            let mut upper = true;
            for c in name.chars() {
                if c == '_' {
                    upper = true;
                } else if upper {
                    out.extend(c.to_uppercase());
                    upper = false;
                } else {
                    out.push(c);
                }
            }
            out
        };
        match self {
            Case::Lower | Case::Snake => name.to_owned(),
            Case::Upper | Case::ScreamingSnake => name.to_ascii_uppercase(),
            Case::Pascal => pascal(),
            Case::Camel => {
                let p = pascal();
                let mut chars = p.chars();
                chars
                    .next()
                    .map(|c| c.to_lowercase().chain(chars).collect())
                    .unwrap_or_default()
            }
            Case::Kebab => name.replace('_', "-"),
            Case::ScreamingKebab => name.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

/// What `#[serde(...)]` says about a container, field or variant (only the
/// keys that change the schema; the rest are skipped).
#[derive(Default)]
pub struct SerdeAttrs {
    pub rename: Option<String>,
    pub rename_all: Option<Case>,
    pub default: bool,
    pub skip: bool,
    pub flatten: Option<proc_macro2::Span>,
    pub deny_unknown_fields: bool,
    pub transparent: bool,
}

/// Reads every `#[serde(...)]` attribute.
pub fn serde_attrs(attrs: &[Attribute]) -> syn::Result<SerdeAttrs> {
    let mut out = SerdeAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = key_name(&meta);
            match key.as_str() {
                "rename" | "rename_all" => {
                    let lit = if meta.input.peek(syn::Token![=]) {
                        Some(string_value(&meta)?)
                    } else {
                        // rename(serialize = "…", deserialize = "…"): the
                        // deserialize name is the one a tool receives.
                        let mut de = None;
                        meta.parse_nested_meta(|inner| {
                            let lit = string_value(&inner)?;
                            if inner.path.is_ident("deserialize") {
                                de = Some(lit);
                            }
                            Ok(())
                        })?;
                        de
                    };
                    if let Some(lit) = lit {
                        if key == "rename" {
                            out.rename = Some(lit.value());
                        } else {
                            out.rename_all = Some(Case::parse(&lit)?);
                        }
                    }
                }
                "default" => {
                    out.default = true;
                    skip_value(&meta)?;
                }
                "skip" | "skip_deserializing" => out.skip = true,
                "flatten" => out.flatten = Some(meta.path.span()),
                "deny_unknown_fields" => out.deny_unknown_fields = true,
                "transparent" => out.transparent = true,
                _ => skip_value(&meta)?,
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// Skips whatever follows a key we do not read: `= value` or `(…)`.
fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
        let _: proc_macro2::TokenStream = _content.parse()?;
    }
    Ok(())
}

/// A Rust identifier as serde names it (`r#type` → `type`).
pub fn ident_name(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::Case;

    #[test]
    fn renames_like_serde() {
        let v = |c: Case| c.variant("OutOfStock");
        assert_eq!(v(Case::Lower), "outofstock");
        assert_eq!(v(Case::Upper), "OUTOFSTOCK");
        assert_eq!(v(Case::Pascal), "OutOfStock");
        assert_eq!(v(Case::Camel), "outOfStock");
        assert_eq!(v(Case::Snake), "out_of_stock");
        assert_eq!(v(Case::ScreamingSnake), "OUT_OF_STOCK");
        assert_eq!(v(Case::Kebab), "out-of-stock");
        assert_eq!(v(Case::ScreamingKebab), "OUT-OF-STOCK");
        let f = |c: Case| c.field("max_age_days");
        assert_eq!(f(Case::Lower), "max_age_days");
        assert_eq!(f(Case::Upper), "MAX_AGE_DAYS");
        assert_eq!(f(Case::Pascal), "MaxAgeDays");
        assert_eq!(f(Case::Camel), "maxAgeDays");
        assert_eq!(f(Case::Kebab), "max-age-days");
        assert_eq!(f(Case::ScreamingKebab), "MAX-AGE-DAYS");
    }
}
