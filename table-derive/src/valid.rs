//! Rules that span several attributes or fields, checked before expansion so that `expand`
//! can assume a valid input. Every rule reports and continues.

use std::collections::{HashMap, HashSet};

use quote::ToTokens;

use crate::ast::{Entities, Field, Struct, TyKind, ValueEnum, misplaced, type_name};
use crate::attr::{IndexKind, Template};
use crate::ctxt::Ctxt;
use crate::symbol;
use crate::template::{Piece, Spec};

/// Property names the service or the discriminator reserve.
const SYSTEM_PROPERTIES: [&str; 3] = ["PartitionKey", "RowKey", "Timestamp"];

pub fn check_struct(cx: &Ctxt, s: &Struct<'_>) {
    let fields: HashMap<String, &Field<'_>> =
        s.fields.iter().map(|f| (f.ident.to_string().trim_start_matches("r#").to_owned(), f)).collect();
    check_fields(cx, s);
    check_properties(cx, s);

    let ident = &s.original.ident;
    let (pk, rk) = (s.attrs.partition_key.get(), s.attrs.row_key.get());
    if pk.is_none() {
        cx.error_spanned_by(ident, "missing `partition_key` template; add #[table(partition_key = \"...\")]");
    }
    if rk.is_none() {
        cx.error_spanned_by(ident, "missing `row_key` template; add #[table(row_key = \"...\")]");
    }
    for t in [pk, rk].into_iter().flatten() {
        check_template(cx, &fields, t, &format!("`{}` template", t.attr));
    }
    check_key_only(cx, s, pk, rk);
    if let (Some(version), None) = (s.attrs.version.tokens(), s.attrs.entity_type.get()) {
        cx.error_spanned_by(version, "`version` needs `entity_type`; add #[table(entity_type = \"...\")]");
    }
    check_indexes(cx, s, &fields, pk, rk);
}

fn check_fields(cx: &Ctxt, s: &Struct<'_>) {
    let mut timestamp: Option<&Field<'_>> = None;
    let mut etag: Option<&Field<'_>> = None;
    for f in &s.fields {
        let markers = f.attrs.markers();
        if let [(first, _), rest @ ..] = markers.as_slice() {
            for (other, tokens) in rest {
                cx.error_spanned_by(*tokens, format!("`{other}` cannot be combined with `{first}`"));
            }
            if let Some(tokens) = f.attrs.rename.tokens().filter(|_| f.attrs.json.get().is_none()) {
                cx.error_spanned_by(
                    tokens,
                    format!("`rename` cannot be combined with `{first}`, which stores no property"),
                );
            }
        }
        if f.attrs.timestamp.get().is_some() {
            if f.kind != TyKind::Option(Box::new(TyKind::DateTime)) {
                cx.error_spanned_by(f.ty, "`#[table(timestamp)]` needs an `Option<DateTime<Utc>>` field");
            }
            if let (Some(first), Some(tokens)) = (timestamp, f.attrs.timestamp.tokens()) {
                cx.error_spanned_by(
                    tokens,
                    format!("duplicate `timestamp` field; `{}` already holds it", first.ident),
                );
            }
            timestamp = Some(f);
        } else if f.attrs.etag.get().is_some() {
            if f.kind != TyKind::Option(Box::new(TyKind::ETag)) {
                cx.error_spanned_by(f.ty, "`#[table(etag)]` needs an `Option<ETag>` field");
            }
            if let (Some(first), Some(tokens)) = (etag, f.attrs.etag.tokens()) {
                cx.error_spanned_by(
                    tokens,
                    format!("duplicate `etag` field; `{}` already holds it", first.ident),
                );
            }
            etag = Some(f);
        } else if is_stored(f) {
            if let Some(hint) = f.kind.unsupported() {
                cx.error_spanned_by(f.ty, format!("unsupported field type `{}`; {hint}", type_name(f.ty)));
            } else if is_etag(&f.kind) {
                cx.error_spanned_by(f.ty, "an `ETag` field needs `#[table(etag)]`");
            }
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

/// A field written as a property of its own (plain or JSON).
pub fn is_stored(f: &Field<'_>) -> bool {
    f.attrs.markers().iter().all(|(name, _)| *name == symbol::JSON)
}

fn check_properties(cx: &Ctxt, s: &Struct<'_>) {
    let mut reserved: Vec<&str> = SYSTEM_PROPERTIES.to_vec();
    if s.attrs.entity_type.get().is_some() {
        reserved.push(table_names::ENTITY_TYPE);
    }
    if s.attrs.version.get().is_some() {
        reserved.push(table_names::ENTITY_VERSION);
    }
    let mut seen: HashMap<&str, &Field<'_>> = HashMap::new();
    for f in s.fields.iter().filter(|f| is_stored(f)) {
        let at = f.attrs.rename.get().map_or_else(|| f.ident.to_token_stream(), |lit| lit.to_token_stream());
        if let Some(problem) = property_name_problem(&f.property) {
            cx.error_spanned_by(&at, format!("property name `{}` {problem}", f.property));
        } else if reserved.contains(&f.property.as_str()) {
            cx.error_spanned_by(
                &at,
                format!(
                    "property name `{}` is reserved; rename the field with #[table(rename = \"...\")]",
                    f.property
                ),
            );
        } else if let Some(first) = seen.insert(&f.property, f) {
            cx.error_spanned_by(
                &at,
                format!(
                    "property name `{}` is already used by field `{}`; rename one with #[table(rename = \"...\")]",
                    f.property, first.ident
                ),
            );
        }
    }
}

/// The service's property name rules (table-core `validate::validate_property_name`).
fn property_name_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    match chars.next() {
        None => Some("is empty"),
        Some(c) if !(c.is_alphabetic() || c == '_') => Some("must start with a letter or `_`"),
        _ if !chars.all(|c| c.is_alphanumeric() || c == '_') => {
            Some("may contain only letters, digits and `_`")
        }
        _ if name.chars().count() > 255 => Some("is longer than 255 characters"),
        _ => None,
    }
}

/// Names the runtime uses for the discriminator (table-core `typed::ENTITY_*_PROPERTY`).
pub mod table_names {
    pub const ENTITY_TYPE: &str = "EntityType";
    pub const ENTITY_VERSION: &str = "EntityVersion";
}

fn check_template(cx: &Ctxt, fields: &HashMap<String, &Field<'_>>, t: &Template, what: &str) {
    for piece in &t.pieces {
        let Piece::Field { name, spec } = piece else {
            continue;
        };
        let Some(f) = fields.get(name) else {
            let hint = suggest(name, fields.keys().map(String::as_str))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            cx.error_spanned_by(&t.lit, format!("unknown field `{name}` in {what}{hint}"));
            continue;
        };
        if let Some((marker, _)) = f.attrs.markers().into_iter().find(|(m, _)| *m != symbol::KEY_ONLY) {
            cx.error_spanned_by(
                &t.lit,
                format!("field `{name}` is `#[table({marker})]` and cannot be part of {what}"),
            );
            continue;
        }
        if let Some(problem) = key_spec_problem(&f.kind, spec) {
            let ty = type_name(f.ty);
            cx.error_spanned_by(&t.lit, format!("field `{name}` of type `{ty}` in {what}: {problem}"));
        }
    }
}

/// Why a field of this kind cannot be written with this spec.
fn key_spec_problem(kind: &TyKind, spec: &Spec) -> Option<String> {
    let spec_text = spec.text();
    let needs = |what: &str| Some(format!("key spec `{spec_text}` needs {what}"));
    match (kind, spec) {
        (TyKind::Option(_), _) => Some("a key always needs a value, so it cannot be an `Option`".into()),
        (TyKind::F64 | TyKind::Bytes | TyKind::ETag | TyKind::Unsupported(_), _) => Some(
            "keys hold strings, integers, `DateTime<Utc>`, `Uuid`, `bool` or `PropertyValue` enums".into(),
        ),
        (_, Spec::Plain) => None,
        (TyKind::Int, Spec::ZeroPad(_) | Spec::Ordered) => None,
        (TyKind::DateTime, Spec::Ticks | Spec::InvertedTicks | Spec::Date(_)) => None,
        (_, Spec::ZeroPad(_) | Spec::Ordered) => needs("an integer field"),
        (_, Spec::Ticks | Spec::InvertedTicks | Spec::Date(_)) => needs("a `DateTime<Utc>` field"),
    }
}

fn check_key_only(cx: &Ctxt, s: &Struct<'_>, pk: Option<&Template>, rk: Option<&Template>) {
    let templates: Vec<&Template> = [pk, rk].into_iter().flatten().collect();
    for f in s.fields.iter() {
        let Some(tokens) = f.attrs.key_only.tokens() else {
            continue;
        };
        let name = f.ident.to_string();
        let name = name.trim_start_matches("r#");
        let Some(t) = templates.iter().find(|t| t.field_names().any(|n| n == name)) else {
            cx.error_spanned_by(
                tokens,
                format!(
                    "`key_only` field `{name}` is not in the `partition_key` or `row_key` template; \
                     add it to one or remove `key_only`"
                ),
            );
            continue;
        };
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

fn check_indexes(
    cx: &Ctxt,
    s: &Struct<'_>,
    fields: &HashMap<String, &Field<'_>>,
    pk: Option<&Template>,
    rk: Option<&Template>,
) {
    let mut names: HashSet<String> = HashSet::new();
    for index in &s.attrs.indexes {
        let keyword = &index.keyword;
        let name = match index.name.get() {
            None => {
                cx.error_spanned_by(keyword, format!("`{keyword}` needs `name = \"...\"`"));
                keyword.to_string()
            }
            Some(lit) => {
                let name = lit.value();
                if name.is_empty() {
                    cx.error_spanned_by(lit, "index name cannot be empty");
                } else if !names.insert(name.clone()) {
                    cx.error_spanned_by(
                        lit,
                        format!("index name `{name}` is already used by another `index` or `lookup`; choose another name"),
                    );
                }
                name
            }
        };
        let index_pk = index.partition_key.get();
        for t in [index_pk, index.row_key.get()].into_iter().flatten() {
            check_template(cx, fields, t, &format!("`{}` template of `{name}`", t.attr));
        }
        let Some(index_rk) = index.row_key.get() else {
            cx.error_spanned_by(keyword, format!("`{keyword}` `{name}` needs `row_key = \"...\"`"));
            continue;
        };
        let same_partition = index_pk.is_none_or(|t| pk.is_some_and(|p| p.lit.value() == t.lit.value()));
        if same_partition && rk.is_some_and(|r| r.lit.value() == index_rk.lit.value()) {
            cx.error_spanned_by(
                &index_rk.lit,
                format!("`{name}` has the same keys as the entity itself; give it another `row_key`"),
            );
        }
        if let (Some(project), Some(tokens)) = (index.project.get(), index.project.tokens()) {
            if index.kind == IndexKind::Lookup {
                cx.error_spanned_by(
                    tokens,
                    "`project` applies to `index`; a `lookup` stores only the primary keys",
                );
            }
            let mut seen = Vec::new();
            for ident in project {
                let field = ident.to_string();
                match fields.get(&field) {
                    None => cx.error_spanned_by(ident, format!("unknown field `{field}` in `project`")),
                    Some(f) if !is_stored(f) => cx.error_spanned_by(
                        ident,
                        format!("field `{field}` is not stored as a property, so it cannot be projected"),
                    ),
                    Some(_) if seen.contains(&field) => {
                        cx.error_spanned_by(ident, format!("field `{field}` is listed twice in `project`"));
                    }
                    Some(_) => seen.push(field),
                }
            }
        }
    }
}

pub fn check_entities(cx: &Ctxt, e: &Entities<'_>) {
    for (name, tokens) in misplaced(&e.attrs) {
        cx.error_spanned_by(
            tokens,
            format!("`{name}` is not used on an entity enum; put it on the wrapped structs"),
        );
    }
}

pub fn check_value_enum(cx: &Ctxt, e: &ValueEnum<'_>) {
    for (name, tokens) in misplaced(&e.attrs) {
        if name != "rename_all" {
            cx.error_spanned_by(tokens, format!("`{name}` is not used on a `PropertyValue` enum"));
        }
    }
    let mut seen: HashMap<&str, &syn::Ident> = HashMap::new();
    for (ident, value, _) in &e.variants {
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
