//! The attribute names the derive understands, in one place.

use std::fmt;

use syn::{Ident, Path};

/// An attribute name, compared against parsed paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol(pub &'static str);

pub const TABLE: Symbol = Symbol("table");

// Container attributes.
pub const PARTITION_KEY: Symbol = Symbol("partition_key");
pub const ROW_KEY: Symbol = Symbol("row_key");
pub const ENTITY_TYPE: Symbol = Symbol("entity_type");
pub const VERSION: Symbol = Symbol("version");
pub const UPGRADE_FROM: Symbol = Symbol("upgrade_from");
pub const INDEX: Symbol = Symbol("index");
pub const LOOKUP: Symbol = Symbol("lookup");
pub const RENAME_ALL: Symbol = Symbol("rename_all");
pub const CRATE: Symbol = Symbol("crate");

// Inside `index(...)` / `lookup(...)`.
pub const NAME: Symbol = Symbol("name");
pub const PROJECT: Symbol = Symbol("project");

// Field and variant attributes.
pub const RENAME: Symbol = Symbol("rename");
pub const SKIP: Symbol = Symbol("skip");
pub const JSON: Symbol = Symbol("json");
pub const TIMESTAMP: Symbol = Symbol("timestamp");
pub const ETAG: Symbol = Symbol("etag");
pub const KEY_ONLY: Symbol = Symbol("key_only");
pub const ENCRYPT: Symbol = Symbol("encrypt");

pub const CONTAINER_ATTRS: &[Symbol] =
    &[PARTITION_KEY, ROW_KEY, ENTITY_TYPE, VERSION, UPGRADE_FROM, INDEX, LOOKUP, RENAME_ALL, CRATE];
pub const INDEX_ATTRS: &[Symbol] = &[NAME, PARTITION_KEY, ROW_KEY, PROJECT];
pub const FIELD_ATTRS: &[Symbol] = &[RENAME, SKIP, JSON, TIMESTAMP, ETAG, KEY_ONLY, ENCRYPT];
pub const VARIANT_ATTRS: &[Symbol] = &[RENAME];

/// `a`, `b` or `c`, for "expected one of" messages.
pub fn list(symbols: &[Symbol]) -> String {
    let names: Vec<String> = symbols.iter().map(|s| format!("`{s}`")).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}
