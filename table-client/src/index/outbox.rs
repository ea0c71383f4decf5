//! The outbox: intents recorded before a cross-partition change, so that whatever a crash
//! leaves half done can be finished by a drain.
//!
//! An intent is an immutable row in one of [`SHARDS`] partitions `~outbox-NN` of the same
//! table (the shard comes from a hash of the primary key, so writers to different entities do
//! not all hit one partition). Each write records its own intent (a fresh row key), so
//! concurrent writers never overwrite each other's candidate keys; every intent is removed
//! only after the index was brought in line with the primary's current state.
//!
//! Every write here is safe to repeat: intents are upserted under their fresh key (so a lost
//! answer is retried, never reported), and an index-row write whose outcome is unknown is
//! settled like a race, by reading the row again.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use table_core::typed::{IndexDef, IndexKind, TableEntity};
use table_core::{Entity, EntityKey, Error, ErrorKind, Filter, Result, Value};

use super::lookup::LookupRow;
use super::rows::{INDEX, PRIMARY_PK, PRIMARY_RK, copy_timestamp, index_keys, make_copy, primary_of};
use super::{MAX_ATTEMPTS, backoff, retry_races, type_tag};
use crate::error;
use crate::table::{TableClient, read_if_match};

/// Number of outbox partitions.
pub(crate) const SHARDS: u64 = 16;
const OUTBOX_PREFIX: &str = "~outbox-";
/// The `_Index` value of outbox rows.
const OUTBOX_INDEX: &str = "~outbox";
const KIND: &str = "Kind";
const KIND_INDEX: &str = "index";
const KIND_MOVE: &str = "move";
const TYPE: &str = "Type";
const CANDIDATES: &str = "Candidates";
const TARGET: &str = "Target";

/// A recorded intent: the primary it concerns and the index keys that may hold stale rows.
#[derive(Debug, Clone)]
pub(crate) struct Intent {
    row: EntityKey,
    pub(crate) candidates: Vec<(&'static str, EntityKey)>,
}

/// The outbox partition of a primary key (FNV-1a, stable across processes and versions).
fn shard_of(key: &EntityKey) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.partition_key.bytes().chain([0]).chain(key.row_key.bytes()) {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{OUTBOX_PREFIX}{:02}", hash % SHARDS)
}

fn encode_candidates(candidates: &[(&str, EntityKey)]) -> String {
    candidates.iter().map(|(index, k)| format!("{index}\t{}\t{}\n", k.partition_key, k.row_key)).collect()
}

fn decode_candidates<T: TableEntity>(text: &str) -> Vec<(&'static str, EntityKey)> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split('\t');
            let (name, pk, rk) = (parts.next()?, parts.next()?, parts.next()?);
            let index = T::indexes().iter().find(|i| i.name == name)?;
            Some((index.name, EntityKey::new(pk, rk)))
        })
        .collect()
}

fn new_intent_row(primary: &EntityKey, kind: &str) -> Entity {
    // Marked like index rows, so typed queries of the table's entity types skip it.
    Entity::new(shard_of(primary), uuid::Uuid::new_v4().simple().to_string())
        .with(INDEX, OUTBOX_INDEX)
        .with(KIND, kind)
        .with(PRIMARY_PK, primary.partition_key.clone())
        .with(PRIMARY_RK, primary.row_key.clone())
}

impl Intent {
    /// Records, before the primary changes, that `primary` of type `T` may leave stale rows at
    /// `candidates`.
    pub(crate) async fn record<T: TableEntity>(
        table: &TableClient,
        primary: &EntityKey,
        candidates: Vec<(&'static str, EntityKey)>,
    ) -> Result<Intent> {
        let row = new_intent_row(primary, KIND_INDEX)
            .with(TYPE, type_tag::<T>())
            .with(CANDIDATES, encode_candidates(&candidates));
        let key = row.key();
        table.insert_or_replace(row).await?;
        Ok(Intent { row: key, candidates })
    }

    /// Removes the intent once its work is done.
    pub(crate) async fn remove(self, table: &TableClient) -> Result<()> {
        table.remove(&self.row.partition_key, &self.row.row_key).await
    }
}

/// Brings every cross-partition index row of `primary` in line with its current state:
/// desired copies written (never over a copy made from a newer state), lookup memberships
/// added, and stale rows at `candidates` removed (only when they still point to `primary`).
/// Repeats while the primary keeps changing underneath, so the last writer's view wins.
pub(crate) async fn sync_cross_partition<T: TableEntity>(
    table: &TableClient,
    primary: &EntityKey,
    candidates: Vec<(&'static str, EntityKey)>,
) -> Result<()> {
    let mut candidates: BTreeSet<(&'static str, EntityKey)> = candidates.into_iter().collect();
    for attempt in 1..=MAX_ATTEMPTS {
        let current = table.get_if_exists(&primary.partition_key, &primary.row_key).await?;
        let value = current.clone().map(T::from_entity).transpose()?;
        let desired = index_keys(value.as_ref())?;
        for (index, want) in T::indexes().iter().zip(&desired).filter(|(i, _)| !i.same_partition) {
            if let Some(key) = want {
                let state = current.as_ref().expect("a desired key implies a current state");
                ensure_present(table, index, key, primary, state).await?;
                candidates.insert((index.name, key.clone()));
            }
            for (_, stale) in
                candidates.iter().filter(|(name, k)| *name == index.name && Some(k) != want.as_ref())
            {
                ensure_absent(table, index, stale, primary, current.as_ref()).await?;
            }
        }
        let now = table.get_if_exists(&primary.partition_key, &primary.row_key).await?;
        if now.as_ref().map(|e| &e.etag) == current.as_ref().map(|e| &e.etag) {
            return Ok(());
        }
        backoff(attempt).await;
    }
    Err(error::contention(format!(
        "the entity {primary} changed on each of {MAX_ATTEMPTS} passes over its cross-partition indexes \
         (the contention budget); drain later"
    )))
}

/// A failed ETag condition, a row that appeared or vanished since it was read, or a write
/// whose outcome is unknown: in every case, read the row again and redo what is still needed.
fn is_index_race(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::PreconditionFailed | ErrorKind::AlreadyExists | ErrorKind::NotFound | ErrorKind::Ambiguous
    )
}

/// Runs one read-modify-write `step` on an index row until it no longer meets a concurrent
/// change ([`is_index_race`]); a contention error when the budget runs out (drain later).
async fn until_settled<F, Fut>(key: &EntityKey, step: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    retry_races(&format!("index row {key} (drain later)"), is_index_race, step).await
}

/// Makes the row at `key` reflect `state` (a copy) or list `primary` (a lookup).
async fn ensure_present(
    table: &TableClient,
    index: &IndexDef,
    key: &EntityKey,
    primary: &EntityKey,
    state: &Entity,
) -> Result<()> {
    until_settled(key, || async {
        match index.kind {
            IndexKind::Lookup => {
                let mut row = LookupRow::read(table, key).await?;
                if !row.keys.insert(primary.clone()) {
                    return Ok(());
                }
                match row.write_op(index, key)? {
                    Some(op) => table.execute(op).await.map(drop),
                    None => Ok(()),
                }
            }
            IndexKind::Secondary => {
                let copy = make_copy(index, key, state);
                match table.get_if_exists(&key.partition_key, &key.row_key).await? {
                    None => table.insert(copy).await.map(drop),
                    // A copy made from a newer state of the same primary stays.
                    Some(row)
                        if primary_of(&row).as_ref() == Some(primary)
                            && copy_timestamp(&row) > state.timestamp =>
                    {
                        Ok(())
                    }
                    Some(row) => table.replace(copy, read_if_match(&row)?).await.map(drop),
                }
            }
        }
    })
    .await
}

/// Removes `primary` from the row at `key`: deletes a copy that still points to it (and was
/// not made from a newer state than `current`), or drops it from a lookup list.
async fn ensure_absent(
    table: &TableClient,
    index: &IndexDef,
    key: &EntityKey,
    primary: &EntityKey,
    current: Option<&Entity>,
) -> Result<()> {
    until_settled(key, || async {
        let Some(row) = table.get_if_exists(&key.partition_key, &key.row_key).await? else {
            return Ok(());
        };
        match index.kind {
            IndexKind::Lookup => {
                let mut list = LookupRow::from_entity(&row);
                if !list.keys.remove(primary) {
                    return Ok(());
                }
                match list.write_op(index, key)? {
                    Some(op) => table.execute(op).await.map(drop),
                    None => Ok(()),
                }
            }
            IndexKind::Secondary => {
                let ours = primary_of(&row).as_ref() == Some(primary);
                let newer = current.is_some_and(|c| copy_timestamp(&row) > c.timestamp);
                if !ours || newer {
                    return Ok(());
                }
                table.delete(&key.partition_key, &key.row_key, read_if_match(&row)?).await
            }
        }
    })
    .await
}

/// The outbox intents of `kind` (and of `type_tag` when given), across every shard.
async fn intents(table: &TableClient, kind: &str, type_tag: Option<&str>) -> Result<Vec<Entity>> {
    let shards = (0..SHARDS).map(|s| format!("{OUTBOX_PREFIX}{s:02}"));
    let mut query = table.query().filter(Filter::eq(KIND, kind));
    if let Some(tag) = type_tag {
        query = query.filter(Filter::eq(TYPE, tag));
    }
    let rows: Vec<Result<Entity>> = query.across_partitions(shards, 4).collect().await;
    rows.into_iter().collect()
}

/// Finishes every index intent of `T` left in the outbox. Returns how many were finished.
pub(crate) async fn drain_index_intents<T: TableEntity>(table: &TableClient) -> Result<usize> {
    let pending = intents(table, KIND_INDEX, Some(type_tag::<T>())).await?;
    for row in &pending {
        let primary = primary_of(row)
            .ok_or_else(|| error::decode(format!("outbox row {} names no entity", row.key())))?;
        let candidates =
            row.get(CANDIDATES).and_then(Value::as_str).map(decode_candidates::<T>).unwrap_or_default();
        sync_cross_partition::<T>(table, &primary, candidates).await?;
        table.remove(&row.partition_key, &row.row_key).await?;
    }
    Ok(pending.len())
}

/// Moves an entity from `source` to `target` (the guide's eventually consistent transaction,
/// e.g. Current -> Archive): intent first, then insert-or-replace into the target, then
/// delete-if-exists from the source, then the intent is removed. After a crash at any step,
/// [`drain_moves`] on the source leaves the entity in exactly one table. Returns whether the
/// entity existed in the source.
pub(crate) async fn move_entity(source: &TableClient, target: &TableClient, key: &EntityKey) -> Result<bool> {
    let intent = new_intent_row(key, KIND_MOVE).with(TARGET, target.name());
    let intent_key = intent.key();
    source.insert_or_replace(intent).await?;
    let moved = finish_move(source, target, key).await?;
    source.remove(&intent_key.partition_key, &intent_key.row_key).await?;
    Ok(moved)
}

/// Copies the source entity (if still there) into the target and deletes it from the source.
/// Returns whether an attempt found it in the source.
async fn finish_move(source: &TableClient, target: &TableClient, key: &EntityKey) -> Result<bool> {
    let found = AtomicBool::new(false);
    let step = || async {
        let Some(mut entity) = source.get_if_exists(&key.partition_key, &key.row_key).await? else {
            // An earlier attempt may have copied it before another writer removed it.
            return Ok(found.load(Ordering::Relaxed));
        };
        found.store(true, Ordering::Relaxed);
        let etag = read_if_match(&entity)?;
        entity.etag = None;
        entity.timestamp = None;
        target.insert_or_replace(entity).await?;
        match source.delete(&key.partition_key, &key.row_key, etag).await {
            Ok(()) => Ok(true),
            // Gone: someone else finished. Changed since read (or unknown whether the delete
            // applied): the next attempt copies the current state again.
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(true),
            Err(e) => Err(e),
        }
    };
    let is_race = |e: &Error| matches!(e.kind(), ErrorKind::PreconditionFailed | ErrorKind::Ambiguous);
    retry_races(&format!("move of entity {key} (drain later)"), is_race, step).await
}

/// Finishes every move intent left in `source`'s outbox. Returns how many were finished.
pub(crate) async fn drain_moves(source: &TableClient) -> Result<usize> {
    let pending = intents(source, KIND_MOVE, None).await?;
    for row in &pending {
        let primary = primary_of(row)
            .ok_or_else(|| error::decode(format!("outbox row {} names no entity", row.key())))?;
        let target = row
            .get(TARGET)
            .and_then(Value::as_str)
            .ok_or_else(|| error::decode(format!("outbox row {} names no target table", row.key())))?;
        finish_move(source, &source.sibling(target), &primary).await?;
        source.remove(&row.partition_key, &row.row_key).await?;
    }
    Ok(pending.len())
}

/// `true` for rows of the outbox partitions (skipped by index verification).
pub(crate) fn is_outbox_partition(partition_key: &str) -> bool {
    partition_key.starts_with(OUTBOX_PREFIX)
}
