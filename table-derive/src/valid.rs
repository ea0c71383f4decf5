//! The rules a derive input must follow beyond what parsing checks, one `check_*` function per
//! rule, each opened by the rule and an example. Every rule reports and continues, and skips
//! what depends on an attribute that is malformed or missing (already reported), so a mistake
//! is reported once. `expand` runs only when no rule reported anything.

use std::collections::{HashMap, HashSet};

use quote::ToTokens;
use syn::LitStr;
use table_core::keys::KeySpec;
use table_core::typed::grammar;
use table_core::{Violation, validate_property_name};

use crate::ast::{Entities, Field, Struct, TyKind, ValueEnum, index_handle_names, type_name, written};
use crate::attr::{IndexKind, Role, Template};
use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};
use crate::template::{Piece, Spec};

/// The rules of `#[derive(TableEntity)]` on a struct.
pub fn check_struct(cx: &Ctxt, s: &Struct<'_>) {
    check_stored_field_types(cx, s);
    check_system_field(cx, s, symbol::TIMESTAMP, TyKind::DateTime, "Option<DateTime<Utc>>");
    check_system_field(cx, s, symbol::ETAG, TyKind::ETag, "Option<ETag>");
    check_property_names(cx, s);
    check_keys_declared(cx, s);
    check_key_templates(cx, s);
    check_key_only_fields(cx, s);
    check_version_has_entity_type(cx, s);
    check_upgrades(cx, s);
    check_index_names(cx, s);
    check_index_handles(cx, s);
    check_index_row_keys(cx, s);
    check_index_projections(cx, s);
    check_encrypted_fields(cx, s);
}

/// The rules of `#[derive(TableEntity)]` on an enum of entity types.
pub fn check_entities(cx: &Ctxt, e: &Entities<'_>) {
    check_entity_enum_attrs(cx, e);
}

/// The rules of `#[derive(PropertyValue)]`.
pub fn check_value_enum(cx: &Ctxt, e: &ValueEnum<'_>) {
    check_value_enum_attrs(cx, e);
    check_variant_names(cx, e);
}

// A field stored as a property has a type the derive knows how to store, and an `ETag` is
// stored only through `etag`: `size: usize` and `etag: Option<ETag>` are refused, while
// `#[table(json)] tags: Vec<String>` and `#[table(skip)] cache: HashMap<..>` are fine.
fn check_stored_field_types(cx: &Ctxt, s: &Struct<'_>) {
    for f in s.fields.iter().filter(|f| f.attrs.role == Role::Stored) {
        if let Some(hint) = f.kind.unsupported() {
            cx.error_spanned_by(f.ty, format!("unsupported field type `{}`; {hint}", type_name(f.ty)));
        } else if is_etag(&f.kind) {
            cx.error_spanned_by(f.ty, "an `ETag` field needs `#[table(etag)]`");
        }
    }
}

fn is_etag(kind: &TyKind) -> bool {
    match kind {
        TyKind::ETag => true,
        TyKind::Option(inner) => is_etag(inner),
        _ => false,
    }
}

// A field filled from a system value (`timestamp`, `etag`) is an `Option` of the type that
// value has, and at most one field holds it: `#[table(timestamp)] updated: Option<DateTime<Utc>>`.
fn check_system_field(cx: &Ctxt, s: &Struct<'_>, marker: Symbol, inner: TyKind, expected: &str) {
    let expected_kind = TyKind::Option(Box::new(inner));
    let mut holder: Option<&Field<'_>> = None;
    for (f, tokens) in s.marked(marker) {
        if f.kind != expected_kind {
            cx.error_spanned_by(f.ty, format!("`#[table({marker})]` needs an `{expected}` field"));
        }
        match holder {
            Some(first) => cx.error_spanned_by(
                tokens,
                format!("duplicate `{marker}` field; `{}` already holds it", first.ident),
            ),
            None => holder = Some(f),
        }
    }
}

// Stored property names follow the service's rules, are not system or discriminator names,
// and are distinct: `#[table(rename = "RowKey")]`, `#[table(rename = "Row Key")]` and two
// fields renamed `Name` are refused.
fn check_property_names(cx: &Ctxt, s: &Struct<'_>) {
    let mut reserved: Vec<&str> = grammar::SYSTEM_PROPERTIES.to_vec();
    if s.attrs.entity_type.get().is_some() {
        reserved.push(grammar::ENTITY_TYPE);
    }
    if s.attrs.version.get().is_some() {
        reserved.push(grammar::ENTITY_VERSION);
    }
    // A name from a refused `rename` or `rename_all` is a guess, not the user's.
    let named = |f: &&Field<'_>| match f.attrs.rename.get() {
        Some(_) => true,
        None => !f.attrs.rename.is_malformed() && !s.attrs.rename_all.is_malformed(),
    };
    let mut seen: HashMap<&str, &Field<'_>> = HashMap::new();
    for f in s.fields.iter().filter(|f| f.attrs.role.stores_property()).filter(named) {
        let at = f.attrs.rename.get().map_or_else(|| f.ident.to_token_stream(), |lit| lit.to_token_stream());
        let name = &f.property;
        if reserved.contains(&name.as_str()) {
            cx.error_spanned_by(
                &at,
                format!(
                    "property name `{name}` is reserved; rename the field with #[table(rename = \"...\")]"
                ),
            );
        } else if let Err(violation) = validate_property_name(name) {
            let problem = match violation {
                Violation::PropertyNameInvalid { reason, .. } => reason.to_owned(),
                Violation::PropertyNameTooLong { max, .. } => format!("it is longer than {max} characters"),
                other => other.to_string(),
            };
            cx.error_spanned_by(&at, format!("property name `{name}` is invalid: {problem}"));
        } else if let Some(first) = seen.insert(name, f) {
            cx.error_spanned_by(
                &at,
                format!(
                    "property name `{name}` is already used by field `{}`; rename one with #[table(rename = \"...\")]",
                    first.ident
                ),
            );
        }
    }
}

// Both keys have a template: `#[table(partition_key = "{department}", row_key = "empid_{id:06}")]`.
fn check_keys_declared(cx: &Ctxt, s: &Struct<'_>) {
    let ident = &s.original.ident;
    for (attr, absent) in [
        (symbol::PARTITION_KEY, s.attrs.partition_key.is_absent()),
        (symbol::ROW_KEY, s.attrs.row_key.is_absent()),
    ] {
        if absent {
            cx.error_spanned_by(ident, format!("missing `{attr}` template; add #[table({attr} = \"...\")]"));
        }
    }
}

// Every field of a key template is a field of the struct that can be written into a key with
// its spec: `row_key = "{emial}"` (did you mean `email`?), a `skip` field, an `Option` and
// `{name:ticks}` on a `String` are refused.
fn check_key_templates(cx: &Ctxt, s: &Struct<'_>) {
    for t in [s.attrs.partition_key.get(), s.attrs.row_key.get()].into_iter().flatten() {
        check_template(cx, s, t, &format!("`{}` template", t.attr));
    }
}

fn check_template(cx: &Ctxt, s: &Struct<'_>, t: &Template, what: &str) {
    for piece in &t.pieces {
        let Piece::Field { name, spec } = piece else {
            continue;
        };
        let Some(f) = s.field(name) else {
            let hint =
                suggest(name, s.field_names()).map(|s| format!("; did you mean `{s}`?")).unwrap_or_default();
            cx.error_spanned_by(&t.lit, format!("unknown field `{name}` in {what}{hint}"));
            continue;
        };
        let problem = match &f.attrs.marker {
            Some((marker, _)) if f.attrs.role != Role::KeyOnly => {
                Some(format!("field `{name}` is `#[table({marker})]` and cannot be part of {what}"))
            }
            _ => key_spec_problem(&f.kind, spec)
                .map(|problem| format!("field `{name}` of type `{}` in {what}: {problem}", type_name(f.ty))),
        };
        if let Some(problem) = problem {
            cx.error_spanned_by(&t.lit, problem);
        }
    }
}

/// Why a field of this kind cannot be written with this spec.
fn key_spec_problem(kind: &TyKind, spec: &Spec) -> Option<String> {
    let needs = |what: &str| Some(format!("key spec `{}` needs {what}", spec.text()));
    match (kind, spec) {
        (TyKind::Option(_), _) => Some("a key always needs a value, so it cannot be an `Option`".into()),
        (TyKind::Float | TyKind::Bytes | TyKind::ETag | TyKind::Unsupported(_), _) => Some(
            "keys hold strings, integers, `DateTime<Utc>`, `Uuid`, `bool` or `PropertyValue` enums".into(),
        ),
        (_, Spec::Codec(KeySpec::Plain)) => None,
        (TyKind::Int, Spec::Codec(KeySpec::ZeroPad(_) | KeySpec::Ordered)) => None,
        (TyKind::DateTime, Spec::Codec(KeySpec::Ticks | KeySpec::InvertedTicks | KeySpec::Date(_)))
        | (TyKind::DateTime, Spec::Date(_)) => None,
        (_, Spec::Codec(KeySpec::ZeroPad(_) | KeySpec::Ordered)) => needs("an integer field"),
        (_, Spec::Codec(KeySpec::Ticks | KeySpec::InvertedTicks | KeySpec::Date(_)) | Spec::Date(_)) => {
            needs("a `DateTime<Utc>` field")
        }
    }
}

// A `key_only` field is in a primary key template that can be cut back into its fields:
// `#[table(key_only)] id` needs `{id}` in `partition_key` or `row_key`, and `"{a}{b}"` cannot
// be read back unless `a` has a fixed-width spec (`{a:06}{b}`).
fn check_key_only_fields(cx: &Ctxt, s: &Struct<'_>) {
    let (Some(pk), Some(rk)) = (s.attrs.partition_key.get(), s.attrs.row_key.get()) else {
        // Which template holds the field is unknown while one is missing or malformed.
        return;
    };
    for (f, tokens) in s.marked(symbol::KEY_ONLY) {
        let name = &f.name;
        let Some(source) = f.key_source else {
            cx.error_spanned_by(
                tokens,
                format!(
                    "`key_only` field `{name}` is not in the `partition_key` or `row_key` template; \
                     add it to one or remove `key_only`"
                ),
            );
            continue;
        };
        let t = if source.key == pk.key { pk } else { rk };
        if let Some(problem) = unsplittable(t) {
            cx.error_spanned_by(
                &t.lit,
                format!("`{}` template cannot be read back for `key_only` field `{name}`: {problem}", t.attr),
            );
        }
    }
}

/// Why a template cannot be cut back into its fields, if it cannot.
fn unsplittable(t: &Template) -> Option<String> {
    t.pieces.windows(2).find_map(|pair| match pair {
        [Piece::Field { name: a, spec }, Piece::Field { name: b, .. }] if spec.fixed_width().is_none() => {
            Some(format!(
                "`{{{a}}}` is directly followed by `{{{b}}}`; put literal text between them or give `{a}` a fixed-width spec"
            ))
        }
        _ => None,
    })
}

// `version` is checked together with the discriminator, so it needs one:
// `#[table(entity_type = "Employee", version = 2)]`.
fn check_version_has_entity_type(cx: &Ctxt, s: &Struct<'_>) {
    if let (Some(version), true) = (s.attrs.version.tokens(), s.attrs.entity_type.is_absent()) {
        cx.error_spanned_by(version, "`version` needs `entity_type`; add #[table(entity_type = \"...\")]");
    }
}

// `upgrade_from` reads older versions, each listed once, so the type has a `version` and
// every listed one is below it: `#[table(version = 3, upgrade_from(1 = v1_to_v3, 2 = v2_to_v3))]`.
fn check_upgrades(cx: &Ctxt, s: &Struct<'_>) {
    let Some(upgrades) = s.attrs.upgrade_from.get() else {
        return;
    };
    if s.attrs.version.is_absent()
        && let Some(tokens) = s.attrs.upgrade_from.tokens()
    {
        cx.error_spanned_by(
            tokens,
            "`upgrade_from` needs the type's current `version`; add #[table(version = N)]",
        );
    }
    let current = s.attrs.version.get();
    let mut seen = HashSet::new();
    for upgrade in upgrades {
        let version = upgrade.version;
        if !seen.insert(version) {
            cx.error_spanned_by(&upgrade.lit, format!("version {version} is listed twice in `upgrade_from`"));
        } else if let Some(current) = current.filter(|c| version >= **c) {
            cx.error_spanned_by(
                &upgrade.lit,
                format!(
                    "`upgrade_from` lists version {version}, but the type is at version {current}; \
                     list only older versions"
                ),
            );
        }
    }
}

// Every index has a name, not empty and not used by another index or lookup of the type:
// `index(name = "by_email", ...)`.
fn check_index_names(cx: &Ctxt, s: &Struct<'_>) {
    let mut names: HashSet<String> = HashSet::new();
    for index in &s.attrs.indexes {
        let keyword = &index.keyword;
        if index.name.is_absent() {
            cx.error_spanned_by(keyword, format!("`{keyword}` needs `name = \"...\"`"));
        }
        let Some(lit) = index.name.get() else {
            continue;
        };
        let name = lit.value();
        if name.is_empty() {
            cx.error_spanned_by(lit, "index name cannot be empty");
        } else if !names.insert(name.clone()) {
            cx.error_spanned_by(
                lit,
                format!(
                    "index name `{name}` is already used by another `index` or `lookup`; choose another name"
                ),
            );
        }
    }
}

// Every index name makes the name of its handle constant, in upper case, and that constant
// is not already a filter column or another index's handle: `name = "by_email"` gives
// `Employee::BY_EMAIL`, while `name = "by-email"`, or `name = "email"` beside a field `email`,
// is refused.
fn check_index_handles(cx: &Ctxt, s: &Struct<'_>) {
    let columns: HashMap<String, &Field<'_>> = s
        .fields
        .iter()
        .filter(|f| matches!(f.attrs.role, Role::Stored | Role::Timestamp | Role::KeyOnly))
        .map(|f| (f.name.to_uppercase(), f))
        .collect();
    let mut handles: HashMap<String, String> = HashMap::new();
    for lit in s.attrs.indexes.iter().filter_map(|index| index.name.get()) {
        let name = lit.value();
        let Some((konst, _)) = index_handle_names(&s.original.ident, &name) else {
            if !name.is_empty() {
                cx.error_spanned_by(
                    lit,
                    format!(
                        "index name `{name}` cannot name its handle constant `{}`; use letters, \
                         digits and `_`, like `by_email`",
                        name.to_uppercase()
                    ),
                );
            }
            continue;
        };
        let konst = konst.to_string();
        if let Some(f) = columns.get(&konst) {
            cx.error_spanned_by(
                lit,
                format!(
                    "index name `{name}` gives the handle `{konst}`, which is already the filter \
                     column of field `{}`; choose another index name",
                    f.name
                ),
            );
        } else if let Some(other) = handles.insert(konst.clone(), name.clone()).filter(|other| *other != name)
        {
            cx.error_spanned_by(
                lit,
                format!(
                    "index names `{other}` and `{name}` both give the handle `{konst}`; choose another name"
                ),
            );
        }
    }
}

// Every index has a row key template, its templates follow the key template rules, and its
// keys differ from the entity's: `index(name = "by_email", row_key = "email_{email}")`, not
// `row_key = "{id}"` when the entity's row key is `"{id}"`.
fn check_index_row_keys(cx: &Ctxt, s: &Struct<'_>) {
    for index in &s.attrs.indexes {
        let keyword = &index.keyword;
        let name = index.name.get().map_or_else(|| keyword.to_string(), |lit| lit.value());
        let index_pk = index.partition_key.get();
        for t in [index_pk, index.row_key.get()].into_iter().flatten() {
            check_template(cx, s, t, &format!("`{}` template of `{name}`", t.attr));
        }
        if index.row_key.is_absent() {
            cx.error_spanned_by(keyword, format!("`{keyword}` `{name}` needs `row_key = \"...\"`"));
        }
        let (Some(index_rk), Some(pk), Some(rk)) =
            (index.row_key.get(), s.attrs.partition_key.get(), s.attrs.row_key.get())
        else {
            continue;
        };
        let same_partition =
            !index.partition_key.is_malformed() && index_pk.is_none_or(|t| t.lit.value() == pk.lit.value());
        if same_partition && rk.lit.value() == index_rk.lit.value() {
            cx.error_spanned_by(
                &index_rk.lit,
                format!("`{name}` has the same keys as the entity itself; give it another `row_key`"),
            );
        }
    }
}

// `project(...)` belongs to an `index` and lists stored fields, each once:
// `index(name = "by_email", row_key = "email_{email}", project(first_name, email))`.
fn check_index_projections(cx: &Ctxt, s: &Struct<'_>) {
    for index in &s.attrs.indexes {
        let (Some(project), Some(tokens)) = (index.project.get(), index.project.tokens()) else {
            continue;
        };
        if index.kind == IndexKind::Lookup {
            cx.error_spanned_by(
                tokens,
                "`project` applies to `index`; a `lookup` stores only the primary keys",
            );
        }
        let mut seen = HashSet::new();
        for ident in project {
            let field = ident.to_string();
            match s.field(&field) {
                None => cx.error_spanned_by(ident, format!("unknown field `{field}` in `project`")),
                Some(f) if !f.attrs.role.stores_property() => cx.error_spanned_by(
                    ident,
                    format!("field `{field}` is not stored as a property, so it cannot be projected"),
                ),
                Some(_) if !seen.insert(field.clone()) => {
                    cx.error_spanned_by(ident, format!("field `{field}` is listed twice in `project`"));
                }
                Some(_) => {}
            }
        }
    }
}

// An enum of entity types takes only `crate`; keys, discriminator and indexes belong on the
// wrapped structs: `#[table(partition_key = "...")] enum Row { .. }` is refused.
fn check_entity_enum_attrs(cx: &Ctxt, e: &Entities<'_>) {
    for (name, tokens) in written(&e.attrs) {
        cx.error_spanned_by(
            tokens,
            format!("`{name}` is not used on an entity enum; put it on the wrapped structs"),
        );
    }
}

// A `PropertyValue` enum takes only `crate` and `rename_all`: `#[table(row_key = "...")]` on
// one is refused.
fn check_value_enum_attrs(cx: &Ctxt, e: &ValueEnum<'_>) {
    for (name, tokens) in written(&e.attrs) {
        if name != symbol::RENAME_ALL {
            cx.error_spanned_by(tokens, format!("`{name}` is not used on a `PropertyValue` enum"));
        }
    }
}

// Each variant is stored as its own name: `Circle` and `#[table(rename = "Circle")] Square`
// are refused.
fn check_variant_names(cx: &Ctxt, e: &ValueEnum<'_>) {
    let mut seen: HashMap<&str, &syn::Ident> = HashMap::new();
    // A refused `rename` leaves no stored name to compare.
    for (ident, value, _) in e.variants.iter().filter(|(_, _, attrs)| !attrs.rename.is_malformed()) {
        if let Some(first) = seen.insert(value, ident) {
            cx.error_spanned_by(
                ident,
                format!("variant `{ident}` is stored as `{value}`, like `{first}`; rename one"),
            );
        }
    }
}

/// The closest known name to a misspelt one, if close enough to be a likely typo.
fn suggest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (distance(name, k), k))
        .filter(|(d, k)| *d <= (k.len().max(name.len()) / 3).max(1))
        .min()
        .map(|(_, k)| k)
}

/// Edit distance over characters, counting a swap of two neighbours as one edit (optimal
/// string alignment), since swapped letters are the commonest typo (`emial`).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

// `encrypt` goes on a field stored as a string property (`String`, `Option<String>`, or any
// `json` field, whose JSON text is encrypted) that no key holds, since keys are stored in
// clear: `#[table(encrypt)] ssn: String` is fine, `#[table(encrypt)] id: u32` or `encrypt` on a
// field in a key template, an index template or an index projection is refused. A whole-entity
// `index(...)` copy (no `project`) is fine: the client encrypts the copy for its own keys.
fn check_encrypted_fields(cx: &Ctxt, s: &Struct<'_>) {
    for f in &s.fields {
        let Some(tokens) = &f.attrs.encrypt else { continue };
        let name = &f.name;
        match f.attrs.role {
            Role::Json => {}
            Role::Stored if is_string(&f.kind) => {}
            Role::Stored => cx.error_spanned_by(
                f.ty,
                format!(
                    "`encrypt` on field `{name}` of type `{}`: only strings are encrypted; use `String` or \
                     `Option<String>`, or `#[table(json)]` to encrypt the JSON text",
                    type_name(f.ty)
                ),
            ),
            Role::KeyOnly => {
                cx.error_spanned_by(
                    tokens,
                    format!(
                        "`encrypt` cannot be combined with `key_only`: field `{name}` is stored only in \
                         the keys, which are never encrypted"
                    ),
                );
                // The key templates hold it: that is the same mistake.
                continue;
            }
            Role::Skip | Role::Timestamp | Role::ETag => cx.error_spanned_by(
                tokens,
                format!("`encrypt` on field `{name}`, which stores no property of its own"),
            ),
        }
        for t in [s.attrs.partition_key.get(), s.attrs.row_key.get()].into_iter().flatten() {
            if t.field_names().any(|n| n == name) {
                cx.error_spanned_by(
                    tokens,
                    format!("`encrypt` on field `{name}`, which is in the `{}` template: keys are stored in clear", t.attr),
                );
            }
        }
        for index in &s.attrs.indexes {
            let index_name = index.name.get().map_or_else(|| index.keyword.to_string(), LitStr::value);
            let templates = [index.partition_key.get(), index.row_key.get()];
            if let Some(t) = templates.into_iter().flatten().find(|t| t.field_names().any(|n| n == name)) {
                cx.error_spanned_by(
                    tokens,
                    format!(
                        "`encrypt` on field `{name}`, which is in the `{}` template of index `{index_name}`: \
                         index keys are stored in clear",
                        t.attr
                    ),
                );
            } else if index.project.get().is_some_and(|p| p.iter().any(|i| i == name.as_str())) {
                cx.error_spanned_by(
                    tokens,
                    format!(
                        "`encrypt` on field `{name}`, which index `{index_name}` projects: an encrypted \
                         field cannot be projected; leave it out of `project(...)`, or drop `project` so the \
                         copies hold every field, `{name}` encrypted for each copy's own keys"
                    ),
                );
            }
        }
    }
}

fn is_string(kind: &TyKind) -> bool {
    match kind {
        TyKind::String => true,
        TyKind::Option(inner) => matches!(**inner, TyKind::String),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let known = ["email", "department", "id"];
        assert_eq!(suggest("emial", known.into_iter()), Some("email"));
        assert_eq!(suggest("depratment", known.into_iter()), Some("department"));
        assert_eq!(suggest("zzz", known.into_iter()), None);
    }
}
