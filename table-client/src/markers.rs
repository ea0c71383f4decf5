//! The reserved properties that tie the rows the SDK maintains itself (index copies, lookup
//! rows, outbox intents) to their primary entity, shared by index maintenance and the outbox.
//!
//! A leaf: it depends on `table_core` only.

use table_core::{Entity, EntityKey};

/// Names the index a row belongs to.
pub(crate) const INDEX: &str = "_Index";
/// The primary's `PartitionKey`, on copies and in intents.
pub(crate) const PRIMARY_PK: &str = "_PrimaryPartitionKey";
/// The primary's `RowKey`, on copies and in intents.
pub(crate) const PRIMARY_RK: &str = "_PrimaryRowKey";

/// The primary a copy or lookup row points to, if it carries the markers.
pub(crate) fn primary_of(row: &Entity) -> Option<EntityKey> {
    let pk = row.get(PRIMARY_PK)?.as_str()?;
    let rk = row.get(PRIMARY_RK)?.as_str()?;
    Some(EntityKey::new(pk, rk))
}
