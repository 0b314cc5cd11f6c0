//! The WIT types a plain function's parameters and result may have, as an
//! owned tree taken from the component's decoded WIT ([`wit_parser`]), so
//! the schema and the value conversions need neither the decoder's arena
//! nor wasmtime.
//!
//! Every type of the component model has a JSON form here except handles
//! (`own`/`borrow` of a resource), `future`, `stream`, `error-context` and
//! maps whose keys are not strings: a function that takes or returns one of
//! those cannot be called with JSON, and [`Ty::from_wit`] says which.

use wit_parser::{Handle, Resolve, Type, TypeDefKind};

/// A WIT type with everything needed to describe and convert its values.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Bool,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    Char,
    String,
    /// `list<u8>`: bytes, carried as base64 text.
    Bytes,
    List(Box<Ty>),
    /// `list<T, N>`.
    FixedList(Box<Ty>, u32),
    /// `map<string, V>`: a JSON object.
    Map(Box<Ty>),
    Option(Box<Ty>),
    Result {
        ok: Option<Box<Ty>>,
        err: Option<Box<Ty>>,
    },
    Tuple(Vec<Ty>),
    Record {
        docs: Option<String>,
        fields: Vec<Field>,
    },
    Variant {
        docs: Option<String>,
        cases: Vec<Case>,
    },
    Enum {
        docs: Option<String>,
        cases: Vec<Named>,
    },
    Flags {
        docs: Option<String>,
        flags: Vec<Named>,
    },
}

/// A record field.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub docs: Option<String>,
    pub ty: Ty,
}

/// A variant case, with or without a payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    pub docs: Option<String>,
    pub ty: Option<Ty>,
}

/// An enum case or a flag.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub name: String,
    pub docs: Option<String>,
}

impl Named {
    fn new(name: &str, docs: &wit_parser::Docs) -> Self {
        Named {
            name: name.to_string(),
            docs: self::docs(docs),
        }
    }
}

/// Deepest type nesting followed; WIT types cannot recurse, so this only
/// bounds what a hostile component's type section can make us walk.
const MAX_TYPE_DEPTH: usize = 32;

impl Ty {
    /// The type `ty` of `resolve`, or why a function using it cannot be a
    /// tool (`a resource handle (own<file>)`).
    pub fn from_wit(resolve: &Resolve, ty: &Type) -> Result<Ty, String> {
        Self::convert(resolve, ty, 0)
    }

    fn convert(resolve: &Resolve, ty: &Type, depth: usize) -> Result<Ty, String> {
        if depth > MAX_TYPE_DEPTH {
            return Err(format!(
                "a type nested more than {MAX_TYPE_DEPTH} levels deep"
            ));
        }
        let inner = |t: &Type| Self::convert(resolve, t, depth + 1);
        let boxed = |t: &Type| inner(t).map(Box::new);
        Ok(match ty {
            Type::Bool => Ty::Bool,
            Type::S8 => Ty::S8,
            Type::S16 => Ty::S16,
            Type::S32 => Ty::S32,
            Type::S64 => Ty::S64,
            Type::U8 => Ty::U8,
            Type::U16 => Ty::U16,
            Type::U32 => Ty::U32,
            Type::U64 => Ty::U64,
            Type::F32 => Ty::F32,
            Type::F64 => Ty::F64,
            Type::Char => Ty::Char,
            Type::String => Ty::String,
            Type::ErrorContext => return Err("an error-context".into()),
            Type::Id(id) => {
                let def = &resolve.types[*id];
                let docs = docs(&def.docs);
                match &def.kind {
                    TypeDefKind::Type(t) => inner(t)?,
                    TypeDefKind::List(Type::U8) => Ty::Bytes,
                    TypeDefKind::List(t) => Ty::List(boxed(t)?),
                    TypeDefKind::FixedLengthList(t, n) => Ty::FixedList(boxed(t)?, *n),
                    TypeDefKind::Map(k, v) => match inner(k)? {
                        Ty::String => Ty::Map(boxed(v)?),
                        _ => return Err("a map whose keys are not strings".into()),
                    },
                    TypeDefKind::Option(t) => Ty::Option(boxed(t)?),
                    TypeDefKind::Result(r) => Ty::Result {
                        ok: r.ok.as_ref().map(boxed).transpose()?,
                        err: r.err.as_ref().map(boxed).transpose()?,
                    },
                    TypeDefKind::Tuple(t) => {
                        Ty::Tuple(t.types.iter().map(inner).collect::<Result<_, _>>()?)
                    }
                    TypeDefKind::Record(r) => Ty::Record {
                        docs,
                        fields: r
                            .fields
                            .iter()
                            .map(|f| {
                                Ok(Field {
                                    name: f.name.clone(),
                                    docs: self::docs(&f.docs),
                                    ty: inner(&f.ty)?,
                                })
                            })
                            .collect::<Result<_, String>>()?,
                    },
                    TypeDefKind::Variant(v) => Ty::Variant {
                        docs,
                        cases: v
                            .cases
                            .iter()
                            .map(|c| {
                                Ok(Case {
                                    name: c.name.clone(),
                                    docs: self::docs(&c.docs),
                                    ty: c.ty.as_ref().map(inner).transpose()?,
                                })
                            })
                            .collect::<Result<_, String>>()?,
                    },
                    TypeDefKind::Enum(e) => Ty::Enum {
                        docs,
                        cases: e
                            .cases
                            .iter()
                            .map(|c| Named::new(&c.name, &c.docs))
                            .collect(),
                    },
                    TypeDefKind::Flags(f) => Ty::Flags {
                        docs,
                        flags: f
                            .flags
                            .iter()
                            .map(|c| Named::new(&c.name, &c.docs))
                            .collect(),
                    },
                    TypeDefKind::Handle(handle) => {
                        let (kind, id) = match handle {
                            Handle::Own(id) => ("own", id),
                            Handle::Borrow(id) => ("borrow", id),
                        };
                        let name = resolve.types[*id].name.as_deref().unwrap_or("resource");
                        return Err(format!("a resource handle ({kind}<{name}>)"));
                    }
                    TypeDefKind::Resource => return Err("a resource".into()),
                    TypeDefKind::Future(_) => return Err("a future".into()),
                    TypeDefKind::Stream(_) => return Err("a stream".into()),
                    TypeDefKind::Unknown => return Err("a type of unknown structure".into()),
                }
            }
        })
    }

    /// The type as WIT spells it, for generated descriptions:
    /// `result<string, string>`, `list<u32>`; named types as `record`,
    /// `variant`, `enum`, `flags`.
    pub fn wit(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::S8 => "s8".into(),
            Ty::S16 => "s16".into(),
            Ty::S32 => "s32".into(),
            Ty::S64 => "s64".into(),
            Ty::U8 => "u8".into(),
            Ty::U16 => "u16".into(),
            Ty::U32 => "u32".into(),
            Ty::U64 => "u64".into(),
            Ty::F32 => "f32".into(),
            Ty::F64 => "f64".into(),
            Ty::Char => "char".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "list<u8>".into(),
            Ty::List(t) => format!("list<{}>", t.wit()),
            Ty::FixedList(t, n) => format!("list<{}, {n}>", t.wit()),
            Ty::Map(v) => format!("map<string, {}>", v.wit()),
            Ty::Option(t) => format!("option<{}>", t.wit()),
            Ty::Result { ok, err } => match (ok, err) {
                (None, None) => "result".into(),
                (Some(ok), None) => format!("result<{}>", ok.wit()),
                (None, Some(err)) => format!("result<_, {}>", err.wit()),
                (Some(ok), Some(err)) => format!("result<{}, {}>", ok.wit(), err.wit()),
            },
            Ty::Tuple(items) => format!(
                "tuple<{}>",
                items.iter().map(Ty::wit).collect::<Vec<_>>().join(", ")
            ),
            Ty::Record { .. } => "record".into(),
            Ty::Variant { .. } => "variant".into(),
            Ty::Enum { .. } => "enum".into(),
            Ty::Flags { .. } => "flags".into(),
        }
    }
}

/// A doc comment, trimmed; `None` when there is none.
pub(crate) fn docs(docs: &wit_parser::Docs) -> Option<String> {
    docs.contents
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_string)
}
