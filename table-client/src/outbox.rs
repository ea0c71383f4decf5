//! The outbox: intents recorded in a table before a change that spans partitions or tables
//! (cross-partition index maintenance, entity moves), so that whatever a crash leaves half done
//! can be finished by a drain. Shared by the `index` and `moves` modules; it imports neither
//! (only the leaf `markers` and `error` modules and the table handle).
//!
//! An intent is an immutable row in one of [`SHARDS`] partitions `~outbox-NN` of the same
//! table (the shard comes from a hash of the primary key, so writers to different entities do
//! not all hit one partition). Each write records its own intent (a fresh row key), so
//! concurrent writers never overwrite each other's intents; every intent is removed only
//! after its work is done.
//!
//! Intents are upserted under their fresh key, so writing one is safe to repeat (a lost answer
//! is retried, never reported).

use futures::StreamExt;
use table_core::{Entity, EntityKey, Filter, Result};

use crate::error;
use crate::markers::{INDEX, PRIMARY_PK, PRIMARY_RK, primary_of};
use crate::table::TableClient;

/// Number of outbox partitions.
pub(crate) const SHARDS: u64 = 16;
const OUTBOX_PREFIX: &str = "~outbox-";
/// The `_Index` value of outbox rows.
const OUTBOX_INDEX: &str = "~outbox";
const KIND: &str = "Kind";
/// The kind of an index intent.
pub(crate) const KIND_INDEX: &str = "index";
/// The kind of a move intent.
pub(crate) const KIND_MOVE: &str = "move";
/// The entity type an intent concerns (index intents only).
pub(crate) const TYPE: &str = "Type";

/// The outbox partition of a primary key (FNV-1a, stable across processes and versions).
fn shard_of(key: &EntityKey) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.partition_key.bytes().chain([0]).chain(key.row_key.bytes()) {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{OUTBOX_PREFIX}{:02}", hash % SHARDS)
}

/// A new intent row of `kind` about `primary`, under a fresh key in `primary`'s shard.
pub(crate) fn new_intent_row(primary: &EntityKey, kind: &str) -> Entity {
    // Marked like index rows, so typed queries of the table's entity types skip it.
    Entity::new(shard_of(primary), uuid::Uuid::new_v4().simple().to_string())
        .with(INDEX, OUTBOX_INDEX)
        .with(KIND, kind)
        .with(PRIMARY_PK, primary.partition_key.clone())
        .with(PRIMARY_RK, primary.row_key.clone())
}

/// The outbox intents of `kind` (and of `type_tag` when given), across every shard.
pub(crate) async fn intents(table: &TableClient, kind: &str, type_tag: Option<&str>) -> Result<Vec<Entity>> {
    let shards = (0..SHARDS).map(|s| format!("{OUTBOX_PREFIX}{s:02}"));
    // Rows the SDK maintains: read as stored, opened as such.
    let mut query = table.raw().query().filter(Filter::eq(KIND, kind));
    if let Some(tag) = type_tag {
        query = query.filter(Filter::eq(TYPE, tag));
    }
    let rows: Vec<Result<Entity>> = query.across_partitions(shards, 4).collect().await;
    let mut opened = Vec::with_capacity(rows.len());
    for row in rows {
        opened.push(table.open_maintained(row?).await?);
    }
    Ok(opened)
}

/// `true` for rows of the outbox partitions (skipped by index verification).
pub(crate) fn is_outbox_partition(partition_key: &str) -> bool {
    partition_key.starts_with(OUTBOX_PREFIX)
}

/// The entity an intent row concerns; a row that names none cannot be finished.
pub(crate) fn intent_primary(row: &Entity) -> Result<EntityKey> {
    primary_of(row).ok_or_else(|| error::decode(format!("outbox row {} names no entity", row.key())))
}
