//! Write operations, alone or grouped into an entity-group transaction (a batch).

use crate::entity::{ETag, Entity, EntityKey, IfMatch};

/// Most operations in one batch.
pub const MAX_BATCH_OPERATIONS: usize = 100;
/// Largest batch request body, in bytes.
pub const MAX_BATCH_BODY: usize = 4 * 1024 * 1024;

/// One write, as sent alone or inside a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// Insert; fails with `EntityAlreadyExists` when the key exists.
    Insert(Entity),
    /// Replace all properties; the entity must exist and match `if_match`.
    Replace {
        /// The new content.
        entity: Entity,
        /// The required version (`*` for any).
        if_match: IfMatch,
    },
    /// Merge the given properties into the existing entity, which must match `if_match`.
    Merge {
        /// The properties to set.
        entity: Entity,
        /// The required version (`*` for any).
        if_match: IfMatch,
    },
    /// Insert, or replace whatever is there.
    InsertOrReplace(Entity),
    /// Insert, or merge into whatever is there.
    InsertOrMerge(Entity),
    /// Delete; the entity must exist and match `if_match`.
    Delete {
        /// The entity to delete.
        key: EntityKey,
        /// The required version (`*` for any).
        if_match: IfMatch,
    },
}

impl Operation {
    /// The partition key the operation targets.
    pub fn partition_key(&self) -> &str {
        match self {
            Operation::Insert(e)
            | Operation::Replace { entity: e, .. }
            | Operation::Merge { entity: e, .. }
            | Operation::InsertOrReplace(e)
            | Operation::InsertOrMerge(e) => &e.partition_key,
            Operation::Delete { key, .. } => &key.partition_key,
        }
    }

    /// The row key the operation targets.
    pub fn row_key(&self) -> &str {
        match self {
            Operation::Insert(e)
            | Operation::Replace { entity: e, .. }
            | Operation::Merge { entity: e, .. }
            | Operation::InsertOrReplace(e)
            | Operation::InsertOrMerge(e) => &e.row_key,
            Operation::Delete { key, .. } => &key.row_key,
        }
    }

    /// The entity written, if the operation writes one.
    pub fn entity(&self) -> Option<&Entity> {
        match self {
            Operation::Insert(e)
            | Operation::Replace { entity: e, .. }
            | Operation::Merge { entity: e, .. }
            | Operation::InsertOrReplace(e)
            | Operation::InsertOrMerge(e) => Some(e),
            Operation::Delete { .. } => None,
        }
    }
}

/// What a successful write reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The entity's new version; `None` after a delete.
    pub etag: Option<ETag>,
}
