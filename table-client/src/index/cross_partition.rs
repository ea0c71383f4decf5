//! Cross-partition index maintenance through the outbox: an intent naming the primary and its
//! possibly-dirty index keys is recorded before the primary changes; after the primary write
//! the index rows are brought in line with the primary's current state; then the intent is
//! removed. A drain finishes whatever a crash left behind.
//!
//! Every write here is safe to repeat: an index-row write whose outcome is unknown is settled
//! like a race, by reading the row again.

use std::collections::BTreeSet;

use table_core::typed::{IndexDef, IndexKind, TableEntity};
use table_core::{Entity, EntityKey, Error, ErrorKind, Result, Value};

use super::lookup::LookupRow;
use super::rows::{copy_timestamp, index_keys, make_copy};
use crate::contention::{MAX_ATTEMPTS, backoff, retry_races};
use crate::error;
use crate::markers::primary_of;
use crate::outbox::{KIND_INDEX, TYPE, intent_primary, intents, new_intent_row};
use crate::outcome::read_if_match;
use crate::table::TableClient;

const CANDIDATES: &str = "Candidates";

/// A recorded intent: the primary it concerns and the index keys that may hold stale rows.
#[derive(Debug, Clone)]
pub(crate) struct Intent {
    row: EntityKey,
    pub(crate) primary: EntityKey,
    pub(crate) candidates: Vec<(&'static str, EntityKey)>,
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

impl Intent {
    /// Records, before the primary changes, that `primary`, of the type tagged `type_tag`
    /// ([`type_tag`]), may leave stale rows at `candidates`.
    pub(crate) async fn record(
        table: &TableClient,
        type_tag: &str,
        primary: &EntityKey,
        candidates: Vec<(&'static str, EntityKey)>,
    ) -> Result<Intent> {
        let row = new_intent_row(primary, KIND_INDEX)
            .with(TYPE, type_tag)
            .with(CANDIDATES, encode_candidates(&candidates));
        let key = row.key();
        table.insert_or_replace(row).await?;
        Ok(Intent { row: key, primary: primary.clone(), candidates })
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
                match table.get_maintained(&key.partition_key, &key.row_key).await? {
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
        let Some(row) = table.get_maintained(&key.partition_key, &key.row_key).await? else {
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

/// Finishes every index intent of `T` left in the outbox. Returns how many were finished.
pub(crate) async fn drain_index_intents<T: TableEntity>(table: &TableClient) -> Result<usize> {
    let pending = intents(table, KIND_INDEX, Some(type_tag::<T>())).await?;
    for row in &pending {
        let primary = intent_primary(row)?;
        let candidates =
            row.get(CANDIDATES).and_then(Value::as_str).map(decode_candidates::<T>).unwrap_or_default();
        sync_cross_partition::<T>(table, &primary, candidates).await?;
        table.remove(&row.partition_key, &row.row_key).await?;
    }
    Ok(pending.len())
}

/// The tag recorded in intents so a drain of `T` picks up only `T`'s intents.
pub(crate) fn type_tag<T: table_core::typed::TableEntity>() -> &'static str {
    T::ENTITY_TYPE.unwrap_or_else(std::any::type_name::<T>)
}
