//! `#[table(...)]` attributes parsed into typed values, each keeping the tokens it came from so
//! that later checks can point at them.
//!
//! Parsing reports a mistake and keeps going: a value of the wrong form (`rename = 5`) is
//! reported on the value and leaves its attribute *malformed* (written, but without a value),
//! and the attribute's siblings are still parsed. Later stages skip what depends on a
//! malformed attribute, so one mistake gives one error. Only a token stream that cannot be
//! parsed at all (`#[table(rename "x")]`) ends that one `#[table(...)]` early.
//!
//! A field's markers (`skip`, `json`, `timestamp`, `etag`, `key_only`) are mutually exclusive:
//! they are decided here into one [`Role`], the first written winning and every other one
//! reported. `encrypt` is not a marker but a flag beside the role (`valid` checks which roles
//! take it).

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprPath, Ident, Lit, LitInt, LitStr, Token};
use table_core::KeyName;

use crate::case::{RULE_NAMES, RenameRule};
use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};
use crate::template::{self, Piece};

/// One attribute: absent, written with a value of the wrong form, or set.
pub struct Attr<T> {
    name: Symbol,
    slot: Slot<T>,
}

enum Slot<T> {
    Absent,
    /// Written, but its value was refused (and reported); the tokens are its name.
    Malformed(TokenStream),
    Set(TokenStream, T),
}

impl<T> Attr<T> {
    fn none(name: Symbol) -> Self {
        Attr { name, slot: Slot::Absent }
    }

    /// Records the attribute written at `obj`: with its value, or malformed when `value` is
    /// `None` (its problem already reported). A second one is reported and ignored.
    fn record<O: ToTokens>(&mut self, cx: &Ctxt, obj: O, value: Option<T>) {
        let tokens = obj.into_token_stream();
        if !matches!(self.slot, Slot::Absent) {
            cx.error_spanned_by(tokens, format!("duplicate `{}` attribute", self.name));
            return;
        }
        self.slot = match value {
            Some(value) => Slot::Set(tokens, value),
            None => Slot::Malformed(tokens),
        };
    }

    /// The value, when the attribute is written and well formed.
    pub fn get(&self) -> Option<&T> {
        match &self.slot {
            Slot::Set(_, value) => Some(value),
            Slot::Absent | Slot::Malformed(_) => None,
        }
    }

    /// The tokens of the attribute's name when it is written (well formed or not).
    pub fn tokens(&self) -> Option<&TokenStream> {
        match &self.slot {
            Slot::Set(tokens, _) | Slot::Malformed(tokens) => Some(tokens),
            Slot::Absent => None,
        }
    }

    /// `true` when the attribute is not written at all.
    pub fn is_absent(&self) -> bool {
        matches!(self.slot, Slot::Absent)
    }

    /// `true` when the attribute is written with a value that was refused.
    pub fn is_malformed(&self) -> bool {
        matches!(self.slot, Slot::Malformed(_))
    }
}

/// A key template as written, with its parsed pieces.
pub struct Template {
    /// `partition_key` or `row_key`, as the user writes it.
    pub attr: Symbol,
    /// The key the template builds.
    pub key: KeyName,
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
    pub version: Attr<i32>,
    pub upgrade_from: Attr<Vec<Upgrade>>,
    pub indexes: Vec<Index>,
    pub rename_all: Attr<RenameRule>,
    pub crate_path: Attr<syn::Path>,
}

/// One `N = path` of `upgrade_from(...)`: rows stored at version `N` are read through `path`.
pub struct Upgrade {
    pub version: i32,
    /// The version as written, to point at.
    pub lit: LitInt,
    pub path: ExprPath,
}

/// What a field is, from its one marker (or none).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// No marker: one property of a `PropertyValue` type.
    Stored,
    /// `json`: one string property holding the field as JSON.
    Json,
    /// `skip`: not stored, `Default` on read.
    Skip,
    /// `timestamp`: filled from the entity's `Timestamp`.
    Timestamp,
    /// `etag`: filled from the entity's ETag.
    ETag,
    /// `key_only`: stored only in the keys, read back from them.
    KeyOnly,
}

impl Role {
    const MARKERS: [(Symbol, Role); 5] = [
        (symbol::SKIP, Role::Skip),
        (symbol::JSON, Role::Json),
        (symbol::TIMESTAMP, Role::Timestamp),
        (symbol::ETAG, Role::ETag),
        (symbol::KEY_ONLY, Role::KeyOnly),
    ];

    /// `true` for a field written as a property of its own.
    pub fn stores_property(self) -> bool {
        matches!(self, Role::Stored | Role::Json)
    }
}

pub struct Field {
    pub rename: Attr<LitStr>,
    /// Decided from the markers written.
    pub role: Role,
    /// The marker that decided the role, with its tokens (`None` for [`Role::Stored`]).
    pub marker: Option<(Symbol, TokenStream)>,
    /// `encrypt`, with its tokens: the property is encrypted client-side.
    pub encrypt: Option<TokenStream>,
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

/// The attribute name as written, for messages.
fn written_name(meta: &ParseNestedMeta<'_>) -> String {
    meta.path.to_token_stream().to_string().replace(' ', "")
}

/// Reports an unknown attribute and skips its value so parsing can go on.
fn unknown(cx: &Ctxt, meta: &ParseNestedMeta<'_>, place: &str, known: &[Symbol]) -> syn::Result<()> {
    let name = written_name(meta);
    cx.error_spanned_by(
        &meta.path,
        format!("unknown attribute `{name}` in {place}; expected {}", symbol::list(known)),
    );
    skip_value(meta)
}

fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// The literal of `name = <literal>`, as `read` accepts it. A missing value or one of another
/// form is reported, with `expected` saying what to write, and gives `None`.
fn literal<T>(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    expected: &str,
    read: impl FnOnce(&Lit) -> Option<T>,
) -> syn::Result<Option<T>> {
    let name = written_name(meta);
    if !meta.input.peek(Token![=]) {
        cx.error_spanned_by(&meta.path, format!("`{name}` needs a value; write {expected}"));
        skip_value(meta)?;
        return Ok(None);
    }
    let mut expr = meta.value()?.parse::<Expr>()?;
    // Literals that come out of `macro_rules!` arrive wrapped in invisible groups.
    while let Expr::Group(group) = expr {
        expr = *group.expr;
    }
    let value = match &expr {
        Expr::Lit(lit) => read(&lit.lit),
        _ => None,
    };
    if value.is_none() {
        cx.error_spanned_by(&expr, format!("`{name}` takes {expected}"));
    }
    Ok(value)
}

fn string(cx: &Ctxt, meta: &ParseNestedMeta<'_>, example: &str) -> syn::Result<Option<LitStr>> {
    let name = written_name(meta);
    literal(cx, meta, &format!("a string, like `{name} = \"{example}\"`"), |lit| match lit {
        Lit::Str(s) => Some(s.clone()),
        _ => None,
    })
}

fn template(cx: &Ctxt, meta: &ParseNestedMeta<'_>, attr: Symbol) -> syn::Result<Option<Template>> {
    let key = if attr == symbol::PARTITION_KEY { KeyName::PartitionKey } else { KeyName::RowKey };
    let Some(lit) = string(cx, meta, "prefix_{field}")? else {
        return Ok(None);
    };
    Ok(match template::parse(&lit.value(), attr.0) {
        Ok(pieces) => Some(Template { attr, key, lit, pieces }),
        Err(message) => {
            cx.error_spanned_by(&lit, message);
            None
        }
    })
}

/// A marker written as `name`: one written with a value is reported, and still counts.
fn flag(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        let name = written_name(meta);
        cx.error_spanned_by(&meta.path, format!("`{name}` takes no value; write `#[table({name})]`"));
        skip_value(meta)?;
    }
    Ok(())
}

/// The items of `name(...)`. A missing list, or one that does not parse, is reported and gives
/// `None`; either way the tokens after the list are still parsed.
fn list(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    example: &str,
    each: impl FnMut(ParseNestedMeta<'_>) -> syn::Result<()>,
) -> syn::Result<Option<()>> {
    if !meta.input.peek(syn::token::Paren) {
        let name = written_name(meta);
        cx.error_spanned_by(&meta.path, format!("`{name}` takes a list, like `{name}({example})`"));
        skip_value(meta)?;
        return Ok(None);
    }
    let content;
    syn::parenthesized!(content in meta.input);
    // Parsed apart from the enclosing attribute, so that a syntax error inside the list ends
    // only the list.
    let items: TokenStream = content.parse()?;
    match syn::meta::parser(each).parse2(items) {
        Ok(()) => Ok(Some(())),
        Err(err) => {
            cx.syn_error(err);
            Ok(None)
        }
    }
}

impl Container {
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut c = Container {
            partition_key: Attr::none(symbol::PARTITION_KEY),
            row_key: Attr::none(symbol::ROW_KEY),
            entity_type: Attr::none(symbol::ENTITY_TYPE),
            version: Attr::none(symbol::VERSION),
            upgrade_from: Attr::none(symbol::UPGRADE_FROM),
            indexes: Vec::new(),
            rename_all: Attr::none(symbol::RENAME_ALL),
            crate_path: Attr::none(symbol::CRATE),
        };
        for_each_meta(cx, attrs, |meta| {
            let path = &meta.path;
            if *path == symbol::PARTITION_KEY {
                let t = template(cx, meta, symbol::PARTITION_KEY)?;
                c.partition_key.record(cx, path, t);
            } else if *path == symbol::ROW_KEY {
                let t = template(cx, meta, symbol::ROW_KEY)?;
                c.row_key.record(cx, path, t);
            } else if *path == symbol::ENTITY_TYPE {
                let lit = string(cx, meta, "Employee")?.filter(|lit| {
                    let empty = lit.value().is_empty();
                    if empty {
                        cx.error_spanned_by(lit, "`entity_type` cannot be empty");
                    }
                    !empty
                });
                c.entity_type.record(cx, path, lit);
            } else if *path == symbol::VERSION {
                let version =
                    literal(cx, meta, "a non-negative integer that fits in an `i32`", |lit| match lit {
                        Lit::Int(n) => n.base10_parse::<i32>().ok().filter(|v| *v >= 0),
                        _ => None,
                    })?;
                c.version.record(cx, path, version);
            } else if *path == symbol::UPGRADE_FROM {
                let upgrades = Upgrade::parse_list(cx, meta)?;
                c.upgrade_from.record(cx, path, upgrades);
            } else if *path == symbol::INDEX || *path == symbol::LOOKUP {
                let kind = if *path == symbol::INDEX { IndexKind::Secondary } else { IndexKind::Lookup };
                if let Some(index) = Index::parse(cx, meta, kind)? {
                    c.indexes.push(index);
                }
            } else if *path == symbol::RENAME_ALL {
                let rule = string(cx, meta, "PascalCase")?.and_then(|lit| {
                    let rule = RenameRule::parse(&lit.value());
                    if rule.is_none() {
                        cx.error_spanned_by(
                            &lit,
                            format!("unknown `rename_all` rule `{}`; expected {RULE_NAMES}", lit.value()),
                        );
                    }
                    rule
                });
                c.rename_all.record(cx, path, rule);
            } else if *path == symbol::CRATE {
                let crate_path = string(cx, meta, "table_core")?.and_then(|lit| {
                    let parsed = lit.parse::<syn::Path>().ok();
                    if parsed.is_none() {
                        cx.error_spanned_by(
                            &lit,
                            format!("`crate` must be a path such as \"table_core\", not {:?}", lit.value()),
                        );
                    }
                    parsed
                });
                c.crate_path.record(cx, path, crate_path);
            } else {
                unknown(cx, meta, "`#[table(...)]` on the type", symbol::CONTAINER_ATTRS)?;
            }
            Ok(())
        });
        c
    }
}

impl Upgrade {
    const EXAMPLE: &str = "like `upgrade_from(1 = upgrade_v1, 2 = EmployeeV2::upgrade)`";

    /// The items of `upgrade_from(N = path, ...)`; `None` when the list is missing or does not
    /// parse (reported). An item whose version is not an `i32` is reported and left out.
    fn parse_list(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Option<Vec<Upgrade>>> {
        if !meta.input.peek(syn::token::Paren) {
            cx.error_spanned_by(&meta.path, format!("`upgrade_from` takes a list, {}", Upgrade::EXAMPLE));
            skip_value(meta)?;
            return Ok(None);
        }
        let content;
        syn::parenthesized!(content in meta.input);
        // Parsed apart from the enclosing attribute, as `list` does, so that a syntax error
        // ends only this list.
        let items: TokenStream = content.parse()?;
        let parsed = match (|input: ParseStream<'_>| {
            Punctuated::<_, Token![,]>::parse_terminated_with(input, Upgrade::item)
        })
        .parse2(items)
        {
            Ok(parsed) => parsed,
            Err(err) => {
                cx.syn_error(err);
                return Ok(None);
            }
        };
        let mut upgrades = Vec::new();
        for (lit, path) in parsed {
            match lit.base10_parse::<i32>().ok().filter(|v| *v >= 0) {
                Some(version) => upgrades.push(Upgrade { version, lit, path }),
                None => {
                    cx.error_spanned_by(&lit, "a version is a non-negative integer that fits in an `i32`")
                }
            }
        }
        Ok(Some(upgrades))
    }

    /// One `N = path`.
    fn item(input: ParseStream<'_>) -> syn::Result<(LitInt, ExprPath)> {
        let lit = input.parse::<LitInt>().map_err(|e| {
            syn::Error::new(e.span(), format!("expected `version = function`, {}", Upgrade::EXAMPLE))
        })?;
        input.parse::<Token![=]>()?;
        let path = input.parse::<ExprPath>().map_err(|e| {
            syn::Error::new(e.span(), "expected the path of a function `fn(Old) -> Self`, like `upgrade_v1`")
        })?;
        Ok((lit, path))
    }
}

impl Index {
    /// `None` when the declaration is not a list (reported).
    fn parse(cx: &Ctxt, meta: &ParseNestedMeta<'_>, kind: IndexKind) -> syn::Result<Option<Index>> {
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
        let parsed = list(cx, meta, "name = \"by_email\", row_key = \"email_{email}\"", |inner| {
            let path = &inner.path;
            if *path == symbol::NAME {
                let lit = string(cx, &inner, "by_email")?;
                index.name.record(cx, path, lit);
            } else if *path == symbol::PARTITION_KEY {
                let t = template(cx, &inner, symbol::PARTITION_KEY)?;
                index.partition_key.record(cx, path, t);
            } else if *path == symbol::ROW_KEY {
                let t = template(cx, &inner, symbol::ROW_KEY)?;
                index.row_key.record(cx, path, t);
            } else if *path == symbol::PROJECT {
                let mut fields = Vec::new();
                let parsed = list(cx, &inner, "first_name, email", |field| {
                    match field.path.get_ident() {
                        Some(ident) => fields.push(ident.clone()),
                        None => cx.error_spanned_by(&field.path, "expected a field name"),
                    }
                    Ok(())
                })?;
                index.project.record(cx, path, parsed.map(|()| fields));
            } else {
                unknown(cx, &inner, &place, symbol::INDEX_ATTRS)?;
            }
            Ok(())
        })?;
        Ok(parsed.map(|()| index))
    }
}

impl Field {
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut rename = Attr::none(symbol::RENAME);
        // Markers in the order written, each with its tokens.
        let mut markers: Vec<(Symbol, Role, TokenStream)> = Vec::new();
        let mut encrypt: Option<TokenStream> = None;
        for_each_meta(cx, attrs, |meta| {
            let path = &meta.path;
            if *path == symbol::RENAME {
                let lit = string(cx, meta, "Name")?;
                rename.record(cx, path, lit);
            } else if *path == symbol::ENCRYPT {
                flag(cx, meta)?;
                if encrypt.is_some() {
                    cx.error_spanned_by(path, "duplicate `encrypt` attribute");
                }
                encrypt = Some(path.to_token_stream());
            } else if let Some((name, role)) = Role::MARKERS.into_iter().find(|(name, _)| *path == *name) {
                flag(cx, meta)?;
                markers.push((name, role, path.to_token_stream()));
            } else {
                unknown(cx, meta, "`#[table(...)]` on a field", symbol::FIELD_ATTRS)?;
            }
            Ok(())
        });
        let Some(((first, role, marker), rest)) = markers.split_first() else {
            return Field { rename, role: Role::Stored, marker: None, encrypt };
        };
        for (other, _, tokens) in rest {
            let message = if other == first {
                format!("duplicate `{other}` attribute")
            } else {
                format!("`{other}` cannot be combined with `{first}`")
            };
            cx.error_spanned_by(tokens, message);
        }
        if let Some(tokens) = rename.tokens().filter(|_| !role.stores_property()) {
            cx.error_spanned_by(
                tokens,
                format!("`rename` cannot be combined with `{first}`, which stores no property"),
            );
        }
        Field { rename, role: *role, marker: Some((*first, marker.clone())), encrypt }
    }
}

impl Variant {
    pub fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let mut v = Variant { rename: Attr::none(symbol::RENAME) };
        for_each_meta(cx, attrs, |meta| {
            if meta.path == symbol::RENAME {
                let lit = string(cx, meta, "Name")?;
                v.rename.record(cx, &meta.path, lit);
            } else {
                unknown(cx, meta, "`#[table(...)]` on a variant", symbol::VARIANT_ATTRS)?;
            }
            Ok(())
        });
        v
    }
}
