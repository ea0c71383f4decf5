//! A borrowed view of the derive input with the attributes parsed and field types classified.
//! Building it reports shape errors (tuple structs, unions, variants that are not newtypes).

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Data, DeriveInput, Fields, GenericArgument, Ident, PathArguments, Type};

use crate::attr;
use crate::ctxt::Ctxt;

pub enum Input<'a> {
    Struct(Struct<'a>),
    Entities(Entities<'a>),
}

pub struct Struct<'a> {
    pub original: &'a DeriveInput,
    pub attrs: attr::Container,
    pub fields: Vec<Field<'a>>,
}

pub struct Field<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    pub attrs: attr::Field,
    pub kind: TyKind,
    /// The stored property name (after `rename` / `rename_all`).
    pub property: String,
}

/// An enum whose variants each wrap one entity type.
pub struct Entities<'a> {
    pub original: &'a DeriveInput,
    pub attrs: attr::Container,
    pub variants: Vec<(&'a Ident, &'a Type)>,
}

/// A unit-only enum stored as a string.
pub struct ValueEnum<'a> {
    pub original: &'a DeriveInput,
    pub attrs: attr::Container,
    /// Variant and its stored name.
    pub variants: Vec<(&'a Ident, String, attr::Variant)>,
}

/// What the derive knows about a field type from its spelling.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum TyKind {
    String,
    Bool,
    Int,
    F64,
    DateTime,
    Uuid,
    Bytes,
    ETag,
    Option(Box<TyKind>),
    /// A type the derive does not know: it must implement `PropertyValue` (and `KeyValue` to be
    /// part of a key).
    Other,
    /// A type that cannot be stored as a property; the hint says what to do instead.
    Unsupported(&'static str),
}

impl TyKind {
    pub fn of(ty: &Type) -> TyKind {
        match ty {
            Type::Group(g) => TyKind::of(&g.elem),
            Type::Paren(p) => TyKind::of(&p.elem),
            Type::Path(p) if p.qself.is_none() => {
                let Some(last) = p.path.segments.last() else {
                    return TyKind::Other;
                };
                let first_arg = match &last.arguments {
                    PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                        GenericArgument::Type(t) => Some(t),
                        _ => None,
                    }),
                    _ => None,
                };
                match last.ident.to_string().as_str() {
                    "String" => TyKind::String,
                    "bool" => TyKind::Bool,
                    "i32" | "i64" | "u32" | "u64" => TyKind::Int,
                    "f64" => TyKind::F64,
                    "DateTime" => TyKind::DateTime,
                    "Uuid" => TyKind::Uuid,
                    "ETag" => TyKind::ETag,
                    "Option" => match first_arg {
                        Some(inner) => TyKind::Option(Box::new(TyKind::of(inner))),
                        None => TyKind::Other,
                    },
                    "Vec" => match first_arg.map(TyKind::is_u8) {
                        Some(true) => TyKind::Bytes,
                        _ => TyKind::Unsupported("store a list with `#[table(json)]`"),
                    },
                    "i8" | "i16" | "u8" | "u16" => TyKind::Unsupported("use `i32`"),
                    "i128" | "u128" | "isize" | "usize" => TyKind::Unsupported("use `i64` or `u64`"),
                    "f32" => TyKind::Unsupported("use `f64`"),
                    "char" | "str" => TyKind::Unsupported("use `String`"),
                    "HashMap" | "BTreeMap" | "HashSet" | "BTreeSet" | "VecDeque" => {
                        TyKind::Unsupported("store a collection with `#[table(json)]`")
                    }
                    _ => TyKind::Other,
                }
            }
            Type::Reference(_) => {
                TyKind::Unsupported("fields must own their data; use `String` or `Vec<u8>`")
            }
            Type::Tuple(_) | Type::Array(_) | Type::Slice(_) => {
                TyKind::Unsupported("store it with `#[table(json)]`")
            }
            _ => TyKind::Unsupported("use one of the types listed on `TableEntity`"),
        }
    }

    fn is_u8(ty: &Type) -> bool {
        matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("u8"))
    }

    /// The hint of an unsupported type, looking inside `Option`.
    pub fn unsupported(&self) -> Option<&'static str> {
        match self {
            TyKind::Unsupported(hint) => Some(hint),
            TyKind::Option(inner) => inner.unsupported(),
            _ => None,
        }
    }
}

/// A type as the user would write it, for messages.
pub fn type_name(ty: &Type) -> String {
    ty.to_token_stream()
        .to_string()
        .replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("& ", "&")
        .replace(" :: ", "::")
}

impl<'a> Input<'a> {
    /// `None` when the input's shape cannot be derived at all (already reported).
    pub fn from_syn(cx: &Ctxt, input: &'a DeriveInput) -> Option<Input<'a>> {
        let attrs = attr::Container::from_attrs(cx, &input.attrs);
        match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) => {
                    let rename_all = attrs.rename_all.get().copied();
                    let fields = named
                        .named
                        .iter()
                        .filter_map(|f| Some((f, f.ident.as_ref()?)))
                        .map(|(f, ident)| {
                            let attrs = attr::Field::from_attrs(cx, &f.attrs);
                            let field_name = ident.to_string();
                            let field_name = field_name.trim_start_matches("r#");
                            let property = match (attrs.rename.get(), rename_all) {
                                (Some(lit), _) => lit.value(),
                                (None, Some(rule)) => rule.apply(field_name),
                                (None, None) => field_name.to_owned(),
                            };
                            Field { ident, ty: &f.ty, kind: TyKind::of(&f.ty), attrs, property }
                        })
                        .collect();
                    Some(Input::Struct(Struct { original: input, attrs, fields }))
                }
                _ => {
                    cx.error_spanned_by(
                        &input.ident,
                        "`TableEntity` needs a struct with named fields, one per property",
                    );
                    None
                }
            },
            Data::Enum(data) => {
                if data.variants.is_empty() {
                    cx.error_spanned_by(
                        &input.ident,
                        "an enum deriving `TableEntity` needs variants, each wrapping one entity \
                         struct, like `Employee(Employee)`",
                    );
                    return None;
                }
                if data.variants.iter().all(|v| v.fields.is_empty()) {
                    cx.error_spanned_by(
                        &input.ident,
                        "a unit-only enum is a property value, not an entity; derive \
                         `PropertyValue` for it instead",
                    );
                    return None;
                }
                let mut variants = Vec::new();
                for v in &data.variants {
                    match &v.fields {
                        Fields::Unnamed(f) if f.unnamed.len() == 1 => {
                            variants.push((&v.ident, &f.unnamed[0].ty));
                        }
                        _ => cx.error_spanned_by(
                            v,
                            format!(
                                "variant `{}` must wrap exactly one entity struct, like `{0}({0})`",
                                v.ident
                            ),
                        ),
                    }
                    if v.attrs.iter().any(|a| a.path().is_ident("table")) {
                        cx.error_spanned_by(
                            &v.ident,
                            "`#[table(...)]` is not used on variants of an entity enum; put it on \
                             the wrapped struct",
                        );
                    }
                }
                Some(Input::Entities(Entities { original: input, attrs, variants }))
            }
            Data::Union(_) => {
                cx.error_spanned_by(&input.ident, "`TableEntity` cannot be derived for a union");
                None
            }
        }
    }
}

impl<'a> ValueEnum<'a> {
    pub fn from_syn(cx: &Ctxt, input: &'a DeriveInput) -> Option<ValueEnum<'a>> {
        let attrs = attr::Container::from_attrs(cx, &input.attrs);
        let Data::Enum(data) = &input.data else {
            cx.error_spanned_by(
                &input.ident,
                "`PropertyValue` can be derived only for unit-only enums; implement it by hand \
                 for other types",
            );
            return None;
        };
        let rule = attrs.rename_all.get().copied();
        let mut variants = Vec::new();
        for v in &data.variants {
            if !v.fields.is_empty() {
                cx.error_spanned_by(
                    &v.fields,
                    format!("variant `{}` has fields; `PropertyValue` enums must be unit-only", v.ident),
                );
            }
            let vattrs = attr::Variant::from_attrs(cx, &v.attrs);
            let name = match (vattrs.rename.get(), rule) {
                (Some(lit), _) => lit.value(),
                (None, Some(rule)) => rule.apply(&v.ident.to_string()),
                (None, None) => v.ident.to_string(),
            };
            variants.push((&v.ident, name, vattrs));
        }
        Some(ValueEnum { original: input, attrs, variants })
    }
}

/// The tokens to point at for a container attribute that is not allowed here.
pub fn misplaced(attrs: &attr::Container) -> Vec<(&'static str, TokenStream)> {
    let mut out = Vec::new();
    let mut add = |name: &'static str, tokens: Option<&TokenStream>| {
        if let Some(t) = tokens {
            out.push((name, t.clone()));
        }
    };
    add("partition_key", attrs.partition_key.tokens());
    add("row_key", attrs.row_key.tokens());
    add("entity_type", attrs.entity_type.tokens());
    add("version", attrs.version.tokens());
    add("rename_all", attrs.rename_all.tokens());
    for index in &attrs.indexes {
        out.push(if index.kind == attr::IndexKind::Secondary {
            ("index", index.keyword.to_token_stream())
        } else {
            ("lookup", index.keyword.to_token_stream())
        });
    }
    out
}
