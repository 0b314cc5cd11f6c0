//! The parameters of a `#[tool]`: what `#[arg(...)]` says of each (its
//! published name, description, default, example, schema type, HTTP
//! header) and how its value reaches the function (by value, or a `&str`
//! lent), with the error for a type that cannot come from JSON.

use crate::common::{Seen, key_name, string_value};
use quote::ToTokens;
use std::collections::HashSet;
use syn::{Expr, ExprLit, Lit, LitStr, Type, UnOp};

const ARG_KEYS: &str = "rename, description, default, example, schema_type, header";

/// A parameter's default or example value.
pub enum Default {
    /// A literal: becomes JSON, converted like an argument the client sent
    /// (so `default = 90` works for an `f64`).
    Json(Expr),
    /// Any other expression of the parameter's type.
    Expr(Expr),
}

/// The attributes of one parameter, as written in `#[arg(...)]`.
#[derive(Default)]
pub struct ArgAttrs {
    pub rename: Option<LitStr>,
    pub description: Option<LitStr>,
    pub default: Option<Default>,
    pub example: Option<Default>,
    pub schema_type: Option<LitStr>,
    pub header: Option<LitStr>,
}

fn is_json_literal(expr: &Expr) -> bool {
    match expr {
        Expr::Lit(ExprLit { lit, .. }) => {
            matches!(
                lit,
                Lit::Int(_) | Lit::Float(_) | Lit::Str(_) | Lit::Bool(_)
            )
        }
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => matches!(
            &*u.expr,
            Expr::Lit(ExprLit {
                lit: Lit::Int(_) | Lit::Float(_),
                ..
            })
        ),
        _ => false,
    }
}

pub fn parse_arg_attrs(attrs: &[syn::Attribute]) -> syn::Result<ArgAttrs> {
    let mut out = ArgAttrs::default();
    let mut seen = Seen(HashSet::new());
    for attr in attrs.iter().filter(|a| a.path().is_ident("arg")) {
        attr.parse_nested_meta(|meta| {
            seen.check(&meta, "#[arg]")?;
            let key = key_name(&meta);
            match key.as_str() {
                "rename" => {
                    let lit = string_value(&meta)?;
                    if lit.value().is_empty() {
                        return Err(syn::Error::new(lit.span(), "a parameter name cannot be empty"));
                    }
                    out.rename = Some(lit);
                }
                "description" => out.description = Some(string_value(&meta)?),
                "default" | "example" => {
                    let expr: Expr = meta.value()?.parse()?;
                    let value = if is_json_literal(&expr) {
                        Default::Json(expr)
                    } else {
                        Default::Expr(expr)
                    };
                    if key == "default" {
                        out.default = Some(value);
                    } else {
                        out.example = Some(value);
                    }
                }
                "schema_type" => {
                    let lit = string_value(&meta)?;
                    if !matches!(
                        lit.value().as_str(),
                        "integer" | "number" | "string" | "boolean"
                    ) {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`schema_type` is one of \"integer\", \"number\", \"string\" or \"boolean\"",
                        ));
                    }
                    out.schema_type = Some(lit);
                }
                "header" => {
                    let lit = string_value(&meta)?;
                    let name = lit.value();
                    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
                    if name.is_empty() || !name.bytes().all(token) {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`header` is an HTTP header name without `Mcp-Param-`: letters, \
                             digits and !#$%&'*+-.^_`|~, e.g. \"Region\"",
                        ));
                    }
                    out.header = Some(lit);
                }
                _ => {
                    return Err(meta.error(format!(
                        "unknown key `{key}` in `#[arg]`; the keys are: {ARG_KEYS}"
                    )));
                }
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// How a parameter's value reaches the function.
pub enum Passing {
    /// By value, deserialised as the declared type.
    Value(Box<Type>),
    /// `&str`: deserialised as `String` and lent.
    Str,
}

/// A type as its author wrote it, near enough: `impl Fn()`, `&mut str`.
fn type_text(ty: &Type) -> String {
    let mut text = ty.to_token_stream().to_string();
    for (from, to) in [
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        ("& ", "&"),
        ("* ", "*"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
        (" :: ", "::"),
        (":: ", "::"),
        ("dyn(", "dyn ("),
    ] {
        text = text.replace(from, to);
    }
    text
}

/// Checks that a parameter's type can come from JSON at all; the rest of the
/// type table is checked by the `ToolSchema` bound.
pub fn passing(name: &str, ty: &Type) -> syn::Result<Passing> {
    let why = match ty {
        Type::Paren(p) => return passing(name, &p.elem),
        Type::Group(g) => return passing(name, &g.elem),
        Type::Path(_) => return Ok(Passing::Value(Box::new(ty.clone()))),
        Type::Reference(r) => {
            if r.mutability.is_none()
                && matches!(&*r.elem, Type::Path(p) if p.qself.is_none() && p.path.is_ident("str"))
            {
                return Ok(Passing::Str);
            }
            "only `&str` may be borrowed; take an owned value such as `String` or `Vec<T>`"
        }
        Type::Ptr(_) => "a raw pointer has no JSON form",
        Type::BareFn(_) => "a function pointer has no JSON form",
        Type::ImplTrait(_) => "a closure or `impl Trait` has no JSON form",
        Type::TraitObject(_) => "a trait object has no JSON form",
        Type::Tuple(t) if t.elems.is_empty() => "`()` carries no value",
        Type::Tuple(_) => {
            "a tuple has no named JSON form; use a struct with `#[derive(ToolSchema, Deserialize)]`"
        }
        Type::Slice(_) | Type::Array(_) => "use `Vec<T>` for a list",
        Type::Never(_) => "`!` has no value",
        _ => "it is not in airlock's type table",
    };
    Err(syn::Error::new_spanned(
        ty,
        format!(
            "parameter `{name}` has type `{}`, which a tool cannot receive as JSON ({why})",
            type_text(ty)
        ),
    ))
}
