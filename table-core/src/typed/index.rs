//! Declarations of secondary indexes and index entities, as `#[derive(TableEntity)]` records
//! them for the client's index maintenance.

use super::template::KeyTemplate;

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
}
