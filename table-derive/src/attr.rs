//! `#[table(...)]` attributes parsed into typed values, each keeping the tokens it came from so
//! that later checks can point at them. Parsing reports a mistake and keeps going.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Ident, LitInt, LitStr, Token};

use crate::case::{RULE_NAMES, RenameRule};
use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};
use crate::template::{self, Piece};

/// One attribute value, remembering where it was written so a second one is reported.
pub struct Attr<T> {
    name: Symbol,
    value: Option<(TokenStream, T)>,
}

impl<T> Attr<T> {
    fn none(name: Symbol) -> Self {
        Attr { name, value: None }
    }

    fn set<O: ToTokens>(&mut self, cx: &Ctxt, obj: O, value: T) {
        let tokens = obj.into_token_stream();
        if self.value.is_some() {
            cx.error_spanned_by(tokens, format!("duplicate `{}` attribute", self.name));
        } else {
            self.value = Some((tokens, value));
        }
    }

    pub fn get(&self) -> Option<&T> {
        self.value.as_ref().map(|(_, v)| v)
    }

    /// The tokens of the attribute's name, for errors about it.
    pub fn tokens(&self) -> Option<&TokenStream> {
        self.value.as_ref().map(|(t, _)| t)
    }
}

/// A key template as written, with its parsed pieces.
pub struct Template {
    /// `partition_key` or `row_key`.
    pub attr: Symbol,
    pub lit: LitStr,
    pub pieces: Vec<Piece>,
}

impl Template {
    /// The field names in order of appearance, possibly repeated.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Field { name, .. } => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    Secondary,
    Lookup,
}

/// `index(...)` or `lookup(...)`.
pub struct Index {
    pub kind: IndexKind,
    /// The `index`/`lookup` word, for errors about the whole declaration.
    pub keyword: Ident,
    pub name: Attr<LitStr>,
    pub partition_key: Attr<Template>,
    pub row_key: Attr<Template>,
    pub project: Attr<Vec<Ident>>,
}

pub struct Container {
    pub partition_key: Attr<Template>,
    pub row_key: Attr<Template>,
    pub entity_type: Attr<LitStr>,
    pub version: Attr<(i32, LitInt)>,
    pub indexes: Vec<Index>,
    pub rename_all: Attr<RenameRule>,
    pub crate_path: Attr<syn::Path>,
}

pub struct Field {
    pub rename: Attr<LitStr>,
    pub skip: Attr<()>,
    pub json: Attr<()>,
    pub timestamp: Attr<()>,
    pub etag: Attr<()>,
    pub key_only: Attr<()>,
}

pub struct Variant {
    pub rename: Attr<LitStr>,
}

/// Runs `each` on every item of every `#[table(...)]` attribute, reporting parse errors.
fn for_each_meta(
    cx: &Ctxt,
    attrs: &[Attribute],
    mut each: impl FnMut(&ParseNestedMeta<'_>) -> syn::Result<()>,
) {
    for attr in attrs.iter().filter(|a| a.path() == &symbol::TABLE) {
        if let Err(err) = attr.parse_nested_meta(|meta| each(&meta)) {
            cx.syn_error(err);
        }
    }
}

/// Reports an unknown attribute and skips its value so parsing can go on.
fn unknown(cx: &Ctxt, meta: &ParseNestedMeta<'_>, place: &str, known: &[Symbol]) -> syn::Result<()> {
    let name = meta.path.to_token_stream().to_string().replace(' ', "");
    cx.error_spanned_by(
        &meta.path,
        format!("unknown attribute `{name}` in {place}; expected {}", symbol::list(known)),
    );
    skip_value(meta)
}

fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

fn template(cx: &Ctxt, meta: &ParseNestedMeta<'_>, attr: Symbol) -> syn::Result<Template> {
    let lit: LitStr = meta.value()?.parse()?;
    let pieces = template::parse(&lit.value(), attr.0).unwrap_or_else(|message| {
        cx.error_spanned_by(&lit, message);
        Vec::new()
    });
    Ok(Template { attr, lit, pieces })
}

fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        let name = meta.path.to_token_stream();
        return Err(meta.error(format!("`{name}` takes no value; write `#[table({name})]`")));
    }
    Ok(())
}

impl Container {
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut c = Container {
            partition_key: Attr::none(symbol::PARTITION_KEY),
            row_key: Attr::none(symbol::ROW_KEY),
            entity_type: Attr::none(symbol::ENTITY_TYPE),
            version: Attr::none(symbol::VERSION),
            indexes: Vec::new(),
            rename_all: Attr::none(symbol::RENAME_ALL),
            crate_path: Attr::none(symbol::CRATE),
        };
        for_each_meta(cx, attrs, |meta| {
            let path = &meta.path;
            if *path == symbol::PARTITION_KEY {
                let t = template(cx, meta, symbol::PARTITION_KEY)?;
                c.partition_key.set(cx, path, t);
            } else if *path == symbol::ROW_KEY {
                let t = template(cx, meta, symbol::ROW_KEY)?;
                c.row_key.set(cx, path, t);
            } else if *path == symbol::ENTITY_TYPE {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().is_empty() {
                    cx.error_spanned_by(&lit, "`entity_type` cannot be empty");
                }
                c.entity_type.set(cx, path, lit);
            } else if *path == symbol::VERSION {
                let lit: LitInt = meta.value()?.parse()?;
                match lit.base10_parse::<i32>() {
                    Ok(v) if v >= 0 => c.version.set(cx, path, (v, lit)),
                    _ => cx.error_spanned_by(
                        &lit,
                        "`version` must be a non-negative integer that fits in an `i32`",
                    ),
                }
            } else if *path == symbol::INDEX || *path == symbol::LOOKUP {
                let kind = if *path == symbol::INDEX { IndexKind::Secondary } else { IndexKind::Lookup };
                c.indexes.push(Index::parse(cx, meta, kind)?);
            } else if *path == symbol::RENAME_ALL {
                let lit: LitStr = meta.value()?.parse()?;
                match RenameRule::parse(&lit.value()) {
                    Some(rule) => c.rename_all.set(cx, path, rule),
                    None => cx.error_spanned_by(
                        &lit,
                        format!("unknown `rename_all` rule `{}`; expected {RULE_NAMES}", lit.value()),
                    ),
                }
            } else if *path == symbol::CRATE {
                let lit: LitStr = meta.value()?.parse()?;
                match lit.parse::<syn::Path>() {
                    Ok(p) => c.crate_path.set(cx, path, p),
                    Err(_) => cx.error_spanned_by(
                        &lit,
                        format!("`crate` must be a path such as \"table_core\", not {:?}", lit.value()),
                    ),
                }
            } else {
                unknown(cx, meta, "`#[table(...)]` on the type", symbol::CONTAINER_ATTRS)?;
            }
            Ok(())
        });
        c
    }
}

impl Index {
    fn parse(cx: &Ctxt, meta: &ParseNestedMeta<'_>, kind: IndexKind) -> syn::Result<Index> {
        let keyword =
            meta.path.get_ident().cloned().ok_or_else(|| meta.error("expected `index` or `lookup`"))?;
        let mut index = Index {
            kind,
            keyword,
            name: Attr::none(symbol::NAME),
            partition_key: Attr::none(symbol::PARTITION_KEY),
            row_key: Attr::none(symbol::ROW_KEY),
            project: Attr::none(symbol::PROJECT),
        };
        let place = format!("`{}(...)`", index.keyword);
        meta.parse_nested_meta(|inner| {
            let path = &inner.path;
            if *path == symbol::NAME {
                let lit: LitStr = inner.value()?.parse()?;
                index.name.set(cx, path, lit);
            } else if *path == symbol::PARTITION_KEY {
                let t = template(cx, &inner, symbol::PARTITION_KEY)?;
                index.partition_key.set(cx, path, t);
            } else if *path == symbol::ROW_KEY {
                let t = template(cx, &inner, symbol::ROW_KEY)?;
                index.row_key.set(cx, path, t);
            } else if *path == symbol::PROJECT {
                let mut fields = Vec::new();
                inner.parse_nested_meta(|field| {
                    match field.path.get_ident() {
                        Some(ident) => fields.push(ident.clone()),
                        None => cx.error_spanned_by(&field.path, "expected a field name"),
                    }
                    Ok(())
                })?;
                index.project.set(cx, path, fields);
            } else {
                unknown(cx, &inner, &place, symbol::INDEX_ATTRS)?;
            }
            Ok(())
        })?;
        Ok(index)
    }
}

impl Field {
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut f = Field {
            rename: Attr::none(symbol::RENAME),
            skip: Attr::none(symbol::SKIP),
            json: Attr::none(symbol::JSON),
            timestamp: Attr::none(symbol::TIMESTAMP),
            etag: Attr::none(symbol::ETAG),
            key_only: Attr::none(symbol::KEY_ONLY),
        };
        for_each_meta(cx, attrs, |meta| {
            let path = &meta.path;
            if *path == symbol::RENAME {
                let lit: LitStr = meta.value()?.parse()?;
                f.rename.set(cx, path, lit);
            } else {
                let slot = if *path == symbol::SKIP {
                    &mut f.skip
                } else if *path == symbol::JSON {
                    &mut f.json
                } else if *path == symbol::TIMESTAMP {
                    &mut f.timestamp
                } else if *path == symbol::ETAG {
                    &mut f.etag
                } else if *path == symbol::KEY_ONLY {
                    &mut f.key_only
                } else {
                    return unknown(cx, meta, "`#[table(...)]` on a field", symbol::FIELD_ATTRS);
                };
                flag(meta)?;
                slot.set(cx, path, ());
            }
            Ok(())
        });
        f
    }

    /// The attributes set on the field, for conflict checks: (name, tokens).
    pub fn markers(&self) -> Vec<(Symbol, &TokenStream)> {
        [
            (&self.skip, symbol::SKIP),
            (&self.json, symbol::JSON),
            (&self.timestamp, symbol::TIMESTAMP),
            (&self.etag, symbol::ETAG),
            (&self.key_only, symbol::KEY_ONLY),
        ]
        .into_iter()
        .filter_map(|(attr, name)| attr.tokens().map(|t| (name, t)))
        .collect()
    }
}

impl Variant {
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut v = Variant { rename: Attr::none(symbol::RENAME) };
        for_each_meta(cx, attrs, |meta| {
            if meta.path == symbol::RENAME {
                let lit: LitStr = meta.value()?.parse()?;
                v.rename.set(cx, &meta.path, lit);
            } else {
                unknown(cx, meta, "`#[table(...)]` on a variant", symbol::VARIANT_ATTRS)?;
            }
            Ok(())
        });
        v
    }
}
