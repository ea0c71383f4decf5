//! Entity moves between tables (e.g. `Current` -> `Archive`), eventually consistent and crash
//! safe through the source table's outbox: [`TableClient::move_entity`] and
//! [`TableClient::drain_moves`].
//!
//! Invariant: a moved row is never written in clear where it was stored encrypted. With an
//! encryption policy it is encrypted afresh for its keys in the target (the ciphertext is
//! bound to the row): every property the source row held encrypted, plus the
//! `#[table(encrypt)]` properties of either client's type and what the policy's resolver names.

use std::sync::atomic::{AtomicBool, Ordering};

use table_core::{EntityKey, Error, ErrorKind, Operation, Result, Value};

use crate::contention::retry_races;
use crate::encryption::stored_encrypted;
use crate::error;
use crate::outbox::{KIND_MOVE, intent_primary, intents, new_intent_row};
use crate::outcome::read_if_match;
use crate::table::TableClient;

const TARGET: &str = "Target";

impl TableClient {
    /// Moves an entity into `target` (e.g. `Current` -> `Archive`), eventually consistently
    /// and crash safe: an intent is recorded in this table's outbox first, then the entity is
    /// inserted-or-replaced into the target and deleted-if-exists here, then the intent is
    /// removed. After a crash at any step, [`drain_moves`](Self::drain_moves) leaves the
    /// entity in exactly one of the two tables. Returns whether the entity existed here.
    ///
    /// With an encryption policy, the row is encrypted afresh for its keys in `target`: every
    /// property stored encrypted here, plus what either client's type (`#[table(encrypt)]`)
    /// and the policy's resolver name, so a row stored encrypted never lands in clear.
    pub async fn move_entity(
        &self,
        target: &TableClient,
        partition_key: &str,
        row_key: &str,
    ) -> Result<bool> {
        move_entity(self, target, &EntityKey::new(partition_key, row_key)).await
    }

    /// Finishes the moves a crash left in this table's outbox; returns how many.
    pub async fn drain_moves(&self) -> Result<usize> {
        drain_moves(self).await
    }
}

/// Moves an entity from `source` to `target` (the guide's eventually consistent transaction,
/// e.g. Current -> Archive): intent first, then insert-or-replace into the target, then
/// delete-if-exists from the source, then the intent is removed. After a crash at any step,
/// [`drain_moves`] on the source leaves the entity in exactly one table. Returns whether the
/// entity existed in the source.
async fn move_entity(source: &TableClient, target: &TableClient, key: &EntityKey) -> Result<bool> {
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
        // Read as stored, to see which properties are encrypted there.
        let Some(stored) = source.raw().get_if_exists(&key.partition_key, &key.row_key).await? else {
            // An earlier attempt may have copied it before another writer removed it.
            return Ok(found.load(Ordering::Relaxed));
        };
        found.store(true, Ordering::Relaxed);
        let etag = read_if_match(&stored)?;
        let mut entity = source.open(stored.clone()).await?;
        let listed = stored_encrypted(&stored, &entity);
        entity.etag = None;
        entity.timestamp = None;
        // Encrypted again for the target's keys: what was encrypted here, and what either
        // client's type or the target's policy encrypts.
        let encrypted: Vec<&str> = (source.encrypted().iter().chain(target.encrypted()).copied())
            .chain(listed.iter().map(String::as_str))
            .collect();
        let insert = target.seal_as(Operation::InsertOrReplace(entity), &encrypted).await?;
        target.raw().execute(insert).await?;
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
async fn drain_moves(source: &TableClient) -> Result<usize> {
    let pending = intents(source, KIND_MOVE, None).await?;
    for row in &pending {
        let primary = intent_primary(row)?;
        let target = row
            .get(TARGET)
            .and_then(Value::as_str)
            .ok_or_else(|| error::decode(format!("outbox row {} names no target table", row.key())))?;
        finish_move(source, &source.sibling(target), &primary).await?;
        source.remove(&row.partition_key, &row.row_key).await?;
    }
    Ok(pending.len())
}
