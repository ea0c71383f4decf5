//! Declarations of secondary indexes and index entities, as `#[derive(TableEntity)]` records
//! them for the client's index maintenance, and the traits of the typed handles it generates
//! per index ([`Index`], with [`SecondaryIndex`] or [`LookupIndex`] for its kind), which the
//! typed index reads take instead of index names.

use super::template::{KeyTemplate, KeyTemplates};

/// What an index stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// `index(...)`: a copy of the entity (or of its projected properties) under other keys.
    /// Unique: two entities with the same index key conflict.
    Secondary,
    /// `lookup(...)`: an index entity per key value listing the primary keys that have it
    /// (a non-unique value, e.g. last name -> employee ids).
    Lookup,
}

/// One declared index of an entity type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexDef {
    /// The name given in `name = "..."`, unique per entity type.
    pub name: &'static str,
    /// Copy or lookup.
    pub kind: IndexKind,
    /// `true` when index entities live in the primary entity's partition, so one entity-group
    /// transaction can update both.
    pub same_partition: bool,
    /// The template of the index entity's `PartitionKey` (the primary's when not given).
    pub partition_key: &'static KeyTemplate,
    /// The template of the index entity's `RowKey`.
    pub row_key: &'static KeyTemplate,
    /// For `index(..., project(a, b))`: the property names copied; `None` copies every
    /// property. Always `None` for lookups.
    pub projection: Option<&'static [&'static str]>,
}

impl IndexDef {
    /// The index called `name` among `indexes`.
    pub fn find(indexes: &'static [IndexDef], name: &str) -> Option<&'static IndexDef> {
        indexes.iter().find(|i| i.name == name)
    }

    /// Both key templates of the index's rows.
    pub fn key_templates(&self) -> KeyTemplates {
        KeyTemplates { partition_key: self.partition_key, row_key: self.row_key }
    }
}

/// A typed handle of one declared index: `#[derive(TableEntity)]` generates one per `index(...)`
/// and `lookup(...)`, as an associated constant of the entity named after the index in
/// SCREAMING_CASE (`Employee::BY_LAST_NAME` for `name = "by_last_name"`). The handle's inherent
/// methods build the index's keys from field values (`key(..)`, `partition_key_for(..)`,
/// `row_key_for(..)`, and the prefix and range helpers), and the typed reads take it instead of
/// the index name, so a misspelt index, or an index of another kind or type, does not compile.
pub trait Index: Copy {
    /// The entity type that declares the index.
    type Entity: super::TableEntity;

    /// The index's declaration, as listed by the entity's `indexes()`.
    fn def(self) -> &'static IndexDef;
}

/// A handle of a secondary index (`index(...)`), read with `TypedTable::get_by_index` and
/// `TypedTable::query_index`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the handle of a secondary index (`index(...)`)",
    label = "expected a secondary index handle",
    note = "read the entities an index entity (`lookup(...)`) lists with `TypedTable::lookup`"
)]
pub trait SecondaryIndex: Index {}

/// A handle of an index entity (`lookup(...)`), read with `TypedTable::lookup`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the handle of an index entity (`lookup(...)`)",
    label = "expected a lookup handle",
    note = "read a secondary index (`index(...)`) with `TypedTable::get_by_index` or `TypedTable::query_index`"
)]
pub trait LookupIndex: Index {}
