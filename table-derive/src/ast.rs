//! A borrowed view of the derive input with the attributes parsed, field types classified and
//! the facts later stages need computed once: each field's unraw name, property name, role and
//! (for a key-only field) where in the keys it is read back from, and the name-to-field map.
//! Building it reports shape errors (tuple structs, unions, variants that are not newtypes).
//!
//! [`Checked`] is the view expansion works on: what `valid` accepted, resolved, so that code
//! generation looks nothing up and has no case to skip.

use std::collections::{HashMap, HashSet};

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Data, DeriveInput, Fields, GenericArgument, Ident, PathArguments, Type};
use table_core::KeyName;

use crate::attr::{self, IndexKind, Role, Template};
use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};

pub enum Input<'a> {
    Struct(Struct<'a>),
    Entities(Entities<'a>),
}

pub struct Struct<'a> {
    pub original: &'a DeriveInput,
    pub attrs: attr::Container,
    pub fields: Vec<Field<'a>>,
    /// Field index by unraw name.
    by_name: HashMap<String, usize>,
}

pub struct Field<'a> {
    pub ident: &'a Ident,
    /// The field name as written, without `r#`.
    pub name: String,
    pub ty: &'a Type,
    /// Its attributes, with its [`Role`] decided.
    pub attrs: attr::Field,
    pub kind: TyKind,
    /// The stored property name (after `rename` / `rename_all`).
    pub property: String,
    /// For a key-only field, where it is read back from; `None` when no primary template
    /// holds it (an error `valid` reports).
    pub key_source: Option<KeySource>,
}

/// A field's place in a primary key template: the first template, partition key first, whose
/// fields include it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KeySource {
    pub key: KeyName,
    /// Its index among the template's fields (counting fields only).
    pub position: usize,
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
    /// Variant, its stored name, and its attributes.
    pub variants: Vec<(&'a Ident, String, attr::Variant)>,
}

/// What the derive knows about a field type from its spelling.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum TyKind {
    String,
    Bool,
    Int,
    Float,
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
                    "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => TyKind::Int,
                    "f32" | "f64" => TyKind::Float,
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
                    "i128" | "u128" | "isize" | "usize" => TyKind::Unsupported("use `i64` or `u64`"),
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
                Fields::Named(named) => Some(Input::Struct(Struct::new(cx, input, attrs, &named.named))),
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

impl<'a> Input<'a> {
    /// The container attributes, whatever the shape.
    pub fn attrs(&self) -> &attr::Container {
        match self {
            Input::Struct(s) => &s.attrs,
            Input::Entities(e) => &e.attrs,
        }
    }
}

impl<'a> Struct<'a> {
    fn new(
        cx: &Ctxt,
        original: &'a DeriveInput,
        attrs: attr::Container,
        named: &'a syn::punctuated::Punctuated<syn::Field, syn::Token![,]>,
    ) -> Self {
        let rename_all = attrs.rename_all.get().copied();
        let primary: Vec<&Template> =
            [attrs.partition_key.get(), attrs.row_key.get()].into_iter().flatten().collect();
        let fields: Vec<Field<'a>> = named
            .iter()
            .filter_map(|f| Some((f, f.ident.as_ref()?)))
            .map(|(f, ident)| {
                let field_attrs = attr::Field::from_attrs(cx, &f.attrs);
                let name = ident.to_string().trim_start_matches("r#").to_owned();
                let property = match (field_attrs.rename.get(), rename_all) {
                    (Some(lit), _) => lit.value(),
                    (None, Some(rule)) => rule.apply(&name),
                    (None, None) => name.clone(),
                };
                let key_source = (field_attrs.role == Role::KeyOnly)
                    .then(|| {
                        primary.iter().find_map(|t| {
                            let position = t.field_names().position(|n| n == name)?;
                            Some(KeySource { key: t.key, position })
                        })
                    })
                    .flatten();
                Field {
                    ident,
                    ty: &f.ty,
                    kind: TyKind::of(&f.ty),
                    attrs: field_attrs,
                    property,
                    key_source,
                    name,
                }
            })
            .collect();
        let by_name = fields.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
        Struct { original, attrs, fields, by_name }
    }

    /// The field called `name` (unraw).
    pub fn field(&self, name: &str) -> Option<&Field<'a>> {
        self.by_name.get(name).map(|&i| &self.fields[i])
    }

    /// The fields marked `marker`, with the marker's tokens.
    pub fn marked(&self, marker: Symbol) -> impl Iterator<Item = (&Field<'a>, &TokenStream)> {
        self.fields.iter().filter_map(move |f| match &f.attrs.marker {
            Some((m, tokens)) if *m == marker => Some((f, tokens)),
            _ => None,
        })
    }

    /// The unraw field names, for "did you mean" suggestions.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|f| f.name.as_str())
    }
}

/// A struct `valid` accepted, resolved: both primary keys, every index complete, every
/// template and projected field a field of the struct.
pub struct Checked<'s, 'a> {
    pub input: &'s Struct<'a>,
    pub partition_key: Key<'s, 'a>,
    pub row_key: Key<'s, 'a>,
    pub indexes: Vec<IndexKeys<'s, 'a>>,
}

/// A key template with its fields, one per field piece in order (repeats included).
pub struct Key<'s, 'a> {
    pub template: &'s Template,
    pub fields: Vec<&'s Field<'a>>,
}

/// One `index(...)` or `lookup(...)`, complete.
pub struct IndexKeys<'s, 'a> {
    pub name: String,
    /// The handle constant, `BY_EMAIL` for `by_email`.
    pub handle_const: Ident,
    /// The handle type, `__EmployeeIndexByEmail`.
    pub handle: Ident,
    pub kind: IndexKind,
    /// The index's own partition key template; `None` when it is the entity's (left out, or
    /// written the same), so index rows share the entity's partition.
    pub partition_key: Option<Key<'s, 'a>>,
    pub row_key: Key<'s, 'a>,
    /// The projected fields of `project(...)`.
    pub projection: Option<Vec<&'s Field<'a>>>,
}

impl<'s, 'a> Key<'s, 'a> {
    fn resolve(s: &'s Struct<'a>, template: &'s Template) -> Option<Self> {
        let fields = template.field_names().map(|name| s.field(name)).collect::<Option<_>>()?;
        Some(Key { template, fields })
    }

    /// The distinct fields, in order of first appearance.
    pub fn unique_fields(&self) -> Vec<&'s Field<'a>> {
        let mut seen = HashSet::new();
        self.fields.iter().copied().filter(|f| seen.insert(f.name.as_str())).collect()
    }

    /// `true` when no field appears twice.
    pub fn has_distinct_fields(&self) -> bool {
        self.unique_fields().len() == self.fields.len()
    }
}

impl<'s, 'a> Checked<'s, 'a> {
    /// `None` when a part expansion needs is missing, malformed or names an unknown field:
    /// each of those is an error `valid` reports.
    pub fn resolve(s: &'s Struct<'a>) -> Option<Self> {
        let partition_key = Key::resolve(s, s.attrs.partition_key.get()?)?;
        let row_key = Key::resolve(s, s.attrs.row_key.get()?)?;
        let indexes = s
            .attrs
            .indexes
            .iter()
            .map(|index| {
                let own_partition =
                    index.partition_key.get().filter(|t| t.lit.value() != partition_key.template.lit.value());
                let projection = match index.project.get() {
                    Some(idents) => {
                        Some(idents.iter().map(|i| s.field(&i.to_string())).collect::<Option<Vec<_>>>()?)
                    }
                    None => None,
                };
                let name = index.name.get()?.value();
                let (handle_const, handle) = index_handle_names(&s.original.ident, &name)?;
                Some(IndexKeys {
                    name,
                    handle_const,
                    handle,
                    kind: index.kind,
                    partition_key: match own_partition {
                        Some(t) => Some(Key::resolve(s, t)?),
                        None => None,
                    },
                    row_key: Key::resolve(s, index.row_key.get()?)?,
                    projection,
                })
            })
            .collect::<Option<_>>()?;
        Some(Checked { input: s, partition_key, row_key, indexes })
    }
}

/// The names of an index's handle: the constant (`BY_EMAIL`, the name in upper case) and its
/// type (`__EmployeeIndexByEmail`, which no user item is likely to be called). `None` when the
/// index name does not make an identifier.
pub fn index_handle_names(entity: &Ident, name: &str) -> Option<(Ident, Ident)> {
    let konst = syn::parse_str::<Ident>(&name.to_uppercase()).ok()?;
    let handle =
        syn::parse_str::<Ident>(&format!("__{entity}Index{}", RenameRule::Pascal.apply(name))).ok()?;
    Some((konst, handle))
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

/// The container attributes written (well formed or not) other than `crate`, with the tokens
/// to point at when one is not allowed on this kind of input.
pub fn written(attrs: &attr::Container) -> Vec<(Symbol, TokenStream)> {
    let mut out: Vec<(Symbol, TokenStream)> = [
        (symbol::PARTITION_KEY, attrs.partition_key.tokens()),
        (symbol::ROW_KEY, attrs.row_key.tokens()),
        (symbol::ENTITY_TYPE, attrs.entity_type.tokens()),
        (symbol::VERSION, attrs.version.tokens()),
        (symbol::UPGRADE_FROM, attrs.upgrade_from.tokens()),
        (symbol::RENAME_ALL, attrs.rename_all.tokens()),
    ]
    .into_iter()
    .filter_map(|(name, tokens)| Some((name, tokens?.clone())))
    .collect();
    for index in &attrs.indexes {
        let name = match index.kind {
            IndexKind::Secondary => symbol::INDEX,
            IndexKind::Lookup => symbol::LOOKUP,
        };
        out.push((name, index.keyword.to_token_stream()));
    }
    out
}
