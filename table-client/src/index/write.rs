//! The write path of an indexed type: read the primary, work out the primary operation and
//! the index changes, apply the same-partition ones in one transaction, and hand the
//! cross-partition ones to the outbox.

use table_core::typed::{IndexDef, IndexKind, TableEntity};
use table_core::{Entity, EntityKey, Error, ErrorCode, ErrorKind, IfMatch, Operation, Result, WriteOutcome};

use super::cross_partition::{Intent, sync_cross_partition};
use super::lookup::LookupRow;
use super::rows::{index_keys, make_copy};
use crate::batch::Transaction;
use crate::contention::{MAX_ATTEMPTS, backoff, contention};
use crate::error::{self, ambiguous};
use crate::table::TableClient;

/// One typed write.
#[derive(Debug)]
pub(crate) enum Change<'a, T> {
    Insert(&'a T),
    Replace(&'a T, IfMatch),
    Merge(&'a T, IfMatch),
    InsertOrReplace(&'a T),
    InsertOrMerge(&'a T),
    Delete(&'a EntityKey, IfMatch),
    DeleteIfExists(&'a EntityKey),
}

/// What each operation of the transaction is, to interpret a failure at its index.
#[derive(Debug, Clone, PartialEq)]
enum Role {
    Primary,
    /// Inserting a unique copy: a conflict means another entity holds the index key.
    UniqueCopy(&'static IndexDef),
    /// Deleting the old copy at this key: missing means the index was already missing the row.
    OldCopy(EntityKey),
    /// Replacing a copy in place.
    Copy,
    /// Writing a lookup row read in this attempt: a conflict means a concurrent writer.
    Lookup,
}

/// The primary operation chosen from the current state, and the state it leaves.
struct Plan {
    op: Operation,
    new_state: Option<Entity>,
}

/// Applies `change` with its index maintenance. Returns what the primary write reported, or
/// `None` when there was nothing to do (delete-if-exists of a missing entity).
///
/// Races with concurrent writers are retried within the contention budget, then reported as
/// [`ErrorKind::Contention`](table_core::ErrorKind::Contention), never as a 412, 409 or 404
/// the caller's own condition did not cause. An attempt whose outcome is unknown
/// (`Ambiguous`) is applied again on a fresh read when the change is unconditional, and
/// surfaced otherwise; every error after such an attempt, or after the primary write
/// succeeded, carries the "may have applied" marker.
pub(crate) async fn apply<T: TableEntity>(
    table: &TableClient,
    change: Change<'_, T>,
) -> Result<Option<WriteOutcome>> {
    let key = match &change {
        Change::Insert(v)
        | Change::Replace(v, _)
        | Change::Merge(v, _)
        | Change::InsertOrReplace(v)
        | Change::InsertOrMerge(v) => v.entity_key()?,
        Change::Delete(k, _) | Change::DeleteIfExists(k) => (*k).clone(),
    };
    let has_cross = T::indexes().iter().any(|i| !i.same_partition);
    let mut intents: Vec<Intent> = Vec::new();
    // Whether an earlier attempt may have applied without anyone knowing.
    let mut uncertain = false;
    let outcome = apply_primary(table, &change, &key, has_cross, &mut intents, &mut uncertain)
        .await
        .map_err(|e| match uncertain {
            true => e.with_may_have_applied(),
            false => e,
        })?;
    if has_cross {
        // The primary changed: whatever fails from here leaves it written, and the outbox
        // intents for a drain to finish the indexes.
        let candidates = intents.iter().flat_map(|i| i.candidates.iter().cloned()).collect();
        sync_cross_partition::<T>(table, &key, candidates).await.map_err(Error::with_may_have_applied)?;
        for intent in intents {
            intent.remove(table).await.map_err(Error::with_may_have_applied)?;
        }
    }
    Ok(outcome)
}

/// The read-plan-write loop of [`apply`] for the primary and its same-partition index rows;
/// records the outbox intents of cross-partition indexes before each write that needs one.
async fn apply_primary<T: TableEntity>(
    table: &TableClient,
    change: &Change<'_, T>,
    key: &EntityKey,
    has_cross: bool,
    intents: &mut Vec<Intent>,
    uncertain: &mut bool,
) -> Result<Option<WriteOutcome>> {
    let mut absent_old_copies: Vec<EntityKey> = Vec::new();
    let mut attempt = 0;
    let mut unknown_attempts = 0;
    loop {
        attempt += 1;
        let current = table.get_if_exists(&key.partition_key, &key.row_key).await?;
        if *uncertain && current.is_none() {
            match change {
                // Gone, as asked; it existed when this write began.
                Change::Delete(..) | Change::DeleteIfExists(_) => {
                    return Ok(Some(WriteOutcome { etag: None }));
                }
                Change::Replace(..) | Change::Merge(..) => {
                    return Err(ambiguous(format!(
                        "write of entity {key} in table {}: an attempt whose outcome is unknown may have \
                         applied, and the entity no longer exists",
                        table.name()
                    )));
                }
                Change::Insert(_) | Change::InsertOrReplace(_) | Change::InsertOrMerge(_) => {}
            }
        }
        // `None`: nothing to do (delete-if-exists of a missing entity).
        let planned = plan(change, current.as_ref())
            .map_err(|e| e.about(table.name(), Some((&key.partition_key, &key.row_key))))?;
        let Some(Plan { op, new_state }) = planned else {
            return Ok(None);
        };
        let old_value = current.clone().map(T::from_entity).transpose()?;
        let new_value = new_state.clone().map(T::from_entity).transpose()?;
        let old_keys = index_keys(old_value.as_ref())?;
        let new_keys = index_keys(new_value.as_ref())?;

        if has_cross {
            let candidates: Vec<(&'static str, EntityKey)> = T::indexes()
                .iter()
                .zip(&old_keys)
                .filter(|(i, _)| !i.same_partition)
                .filter_map(|(i, k)| Some((i.name, k.clone()?)))
                .collect();
            // One intent names the primary for a drain; another is needed only for stale
            // candidates no recorded intent names yet.
            let covered = |c: &(&str, EntityKey)| intents.iter().any(|i| i.candidates.contains(c));
            if intents.is_empty() || !candidates.iter().all(covered) {
                intents.push(Intent::record::<T>(table, key, candidates).await?);
            }
        }

        let mut ops = vec![(op, Role::Primary)];
        for (i, index) in T::indexes().iter().enumerate().filter(|(_, i)| i.same_partition) {
            let (old, new) = (&old_keys[i], &new_keys[i]);
            match index.kind {
                IndexKind::Secondary => {
                    let state = new_state.as_ref();
                    match (old, new) {
                        (Some(o), Some(n)) if o == n => {
                            let copy = make_copy(index, n, state.expect("a new key implies a new state"));
                            ops.push((Operation::InsertOrReplace(copy), Role::Copy));
                        }
                        _ => {
                            if let Some(o) = old.as_ref().filter(|o| !absent_old_copies.contains(o)) {
                                ops.push((
                                    Operation::Delete { key: o.clone(), if_match: IfMatch::Any },
                                    Role::OldCopy(o.clone()),
                                ));
                            }
                            if let Some(n) = new {
                                let copy = make_copy(index, n, state.expect("a new key implies a new state"));
                                ops.push((Operation::Insert(copy), Role::UniqueCopy(index)));
                            }
                        }
                    }
                }
                IndexKind::Lookup if old != new => {
                    if let Some(o) = old {
                        let mut row = LookupRow::read(table, o).await?;
                        row.keys.remove(key);
                        if let Some(op) = row.write_op(index, o)? {
                            ops.push((op, Role::Lookup));
                        }
                    }
                    if let Some(n) = new {
                        let mut row = LookupRow::read(table, n).await?;
                        row.keys.insert(key.clone());
                        if let Some(op) = row.write_op(index, n)? {
                            ops.push((op, Role::Lookup));
                        }
                    }
                }
                IndexKind::Lookup => {}
            }
        }

        let roles: Vec<Role> = ops.iter().map(|(_, r)| r.clone()).collect();
        let result = if ops.len() == 1 {
            let (op, _) = ops.pop().expect("one operation");
            table.execute(op).await.map(|o| o.etag).map_err(|e| e.with_batch_index(0))
        } else {
            let tx: Transaction = ops.into_iter().map(|(op, _)| op).collect();
            table.submit_transaction(tx).await.map(|mut outcomes| outcomes.swap_remove(0).etag)
        };
        let e = match result {
            Ok(etag) => return Ok(Some(WriteOutcome { etag })),
            Err(e) => e,
        };
        let role = e.batch_index().and_then(|i| roles.get(i));
        match decide(change, role, &e) {
            Next::Conflict(index) => {
                return Err(error::refused(
                    ErrorCode::EntityAlreadyExists,
                    format!("the unique index `{}` already holds this key for another entity", index.name),
                )
                .with_batch_index(e.batch_index().unwrap_or(0)));
            }
            Next::Done if matches!(change, Change::DeleteIfExists(_)) => return Ok(None),
            Next::Done | Next::Fail => return Err(e),
            _ if attempt >= MAX_ATTEMPTS => {
                let subject = format!("write of entity {key} in table {}", table.name());
                return Err(contention(&subject, u32::try_from(attempt).unwrap_or(u32::MAX), e));
            }
            Next::Retry => backoff(attempt).await,
            // A failing network would otherwise be retried for the whole contention budget.
            Next::Unknown if unknown_attempts >= MAX_UNKNOWN_ATTEMPTS => return Err(e),
            Next::Unknown => {
                *uncertain = true;
                unknown_attempts += 1;
                backoff(attempt).await;
            }
            Next::OldCopyMissing(old) => absent_old_copies.push(old),
        }
    }
}

/// The primary operation for `change` given the current stored entity, conditioned on the
/// ETag read so that a concurrent change makes it fail (and the caller retry), or the error
/// the service would give.
fn plan<T: TableEntity>(change: &Change<'_, T>, current: Option<&Entity>) -> Result<Option<Plan>> {
    let conditioned = |user: &IfMatch, current: &Entity| -> Result<IfMatch> {
        let etag = current.etag.clone().ok_or_else(|| error::decode("read an entity without an ETag"))?;
        match user {
            IfMatch::ETag(wanted) if *wanted != etag => {
                Err(Error::service(ErrorCode::UpdateConditionNotSatisfied))
            }
            _ => Ok(IfMatch::ETag(etag)),
        }
    };
    let not_found = || Error::service(ErrorCode::ResourceNotFound);
    let merged = |entity: &Entity, current: &Entity| {
        let mut state = current.clone();
        state.properties.extend(entity.properties.clone());
        state
    };
    Ok(Some(match (change, current) {
        (Change::Insert(_), Some(_)) => {
            return Err(Error::service(ErrorCode::EntityAlreadyExists));
        }
        (Change::Insert(v) | Change::InsertOrReplace(v) | Change::InsertOrMerge(v), None) => {
            let e = v.to_entity()?;
            Plan { op: Operation::Insert(e.clone()), new_state: Some(e) }
        }
        (Change::Replace(..) | Change::Merge(..) | Change::Delete(..), None) => {
            return Err(not_found());
        }
        (Change::DeleteIfExists(_), None) => return Ok(None),
        (Change::Replace(v, user), Some(cur)) => {
            let e = v.to_entity()?;
            Plan {
                op: Operation::Replace { entity: e.clone(), if_match: conditioned(user, cur)? },
                new_state: Some(e),
            }
        }
        (Change::InsertOrReplace(v), Some(cur)) => {
            let e = v.to_entity()?;
            Plan {
                op: Operation::Replace { entity: e.clone(), if_match: conditioned(&IfMatch::Any, cur)? },
                new_state: Some(e),
            }
        }
        (Change::Merge(v, user), Some(cur)) => {
            let e = v.to_entity()?;
            let state = merged(&e, cur);
            Plan {
                op: Operation::Merge { entity: e, if_match: conditioned(user, cur)? },
                new_state: Some(state),
            }
        }
        (Change::InsertOrMerge(v), Some(cur)) => {
            let e = v.to_entity()?;
            let state = merged(&e, cur);
            Plan {
                op: Operation::Merge { entity: e, if_match: conditioned(&IfMatch::Any, cur)? },
                new_state: Some(state),
            }
        }
        (Change::Delete(k, user), Some(cur)) => Plan {
            op: Operation::Delete { key: (*k).clone(), if_match: conditioned(user, cur)? },
            new_state: None,
        },
        (Change::DeleteIfExists(k), Some(cur)) => Plan {
            op: Operation::Delete { key: (*k).clone(), if_match: conditioned(&IfMatch::Any, cur)? },
            new_state: None,
        },
    }))
}

enum Next {
    /// A concurrent writer got in between: read again and retry.
    Retry,
    /// The outcome of the attempt is unknown; an unconditional change reads again and retries.
    Unknown,
    /// The old copy at this key was already missing: retry without deleting it.
    OldCopyMissing(EntityKey),
    Conflict(&'static IndexDef),
    Done,
    Fail,
}

/// How many attempts of an unconditional write may end with an unknown outcome before the
/// write reports it (marked "may have applied"), as the client's default retry policy does.
const MAX_UNKNOWN_ATTEMPTS: u32 = 3;

/// What to do after the transaction failed at an operation with `role`.
fn decide<T>(change: &Change<'_, T>, role: Option<&Role>, e: &Error) -> Next {
    let user_condition = matches!(
        change,
        Change::Replace(_, IfMatch::ETag(_))
            | Change::Merge(_, IfMatch::ETag(_))
            | Change::Delete(_, IfMatch::ETag(_))
    );
    let upsert = matches!(change, Change::InsertOrReplace(_) | Change::InsertOrMerge(_));
    let kind = e.kind();
    // An attempt whose outcome is unknown: a lost answer to the transaction itself (a
    // timeout, a reset connection, a 500), or one its retry could not settle. Writing again is
    // what an unconditional change asked for; the caller's own ETag, or an insert, could be
    // failed by this write's own earlier attempt, so those report it.
    if e.may_have_applied() {
        return match user_condition || matches!(change, Change::Insert(_)) {
            true => Next::Fail,
            false => Next::Unknown,
        };
    }
    match role {
        // The primary changed, appeared or vanished since it was read.
        Some(Role::Primary) if kind == ErrorKind::PreconditionFailed && !user_condition => Next::Retry,
        Some(Role::Primary) if kind == ErrorKind::AlreadyExists && upsert => Next::Retry,
        Some(Role::Primary) if kind == ErrorKind::NotFound && upsert => Next::Retry,
        Some(Role::Primary) if kind == ErrorKind::NotFound && matches!(change, Change::DeleteIfExists(_)) => {
            Next::Done
        }
        Some(Role::UniqueCopy(index)) if kind == ErrorKind::AlreadyExists => Next::Conflict(index),
        Some(Role::OldCopy(key)) if kind == ErrorKind::NotFound => Next::OldCopyMissing(key.clone()),
        Some(Role::Lookup)
            if matches!(
                kind,
                ErrorKind::PreconditionFailed | ErrorKind::AlreadyExists | ErrorKind::NotFound
            ) =>
        {
            Next::Retry
        }
        _ => Next::Fail,
    }
}
