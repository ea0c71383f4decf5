//! The write path of an indexed type: read the primary, work out the primary operation and
//! the index changes, apply the same-partition ones in one transaction, and hand the
//! cross-partition ones to the outbox.

use table_core::typed::{IndexDef, IndexKind, TableEntity};
use table_core::{Entity, EntityKey, Error, ErrorCode, IfMatch, Operation, Result, WriteOutcome};

use super::lookup::LookupRow;
use super::outbox::{Intent, sync_cross_partition};
use super::rows::{index_keys, make_copy};
use super::{MAX_ATTEMPTS, backoff};
use crate::batch::Transaction;
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
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    Primary,
    /// Inserting a unique copy: a conflict means another entity holds the index key.
    UniqueCopy(&'static IndexDef),
    /// Deleting the old copy: missing means the index was already missing the row.
    OldCopy(usize),
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
    let mut absent_old_copies: Vec<usize> = Vec::new();
    let mut attempt = 0;
    let outcome = loop {
        attempt += 1;
        let current = table.get_if_exists(&key.partition_key, &key.row_key).await?;
        // `None`: nothing to do (delete-if-exists of a missing entity).
        let Some(Plan { op, new_state }) = plan(&change, current.as_ref())? else {
            break None;
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
            intents.push(Intent::record::<T>(table, &key, candidates).await?);
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
                            if let Some(o) = old.as_ref().filter(|_| !absent_old_copies.contains(&i)) {
                                ops.push((
                                    Operation::Delete { key: o.clone(), if_match: IfMatch::Any },
                                    Role::OldCopy(i),
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
                        row.keys.remove(&key);
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

        let roles: Vec<Role> = ops.iter().map(|(_, r)| *r).collect();
        let result = if ops.len() == 1 {
            let (op, _) = ops.pop().expect("one operation");
            table.execute(op).await.map(|o| o.etag).map_err(|e| e.with_batch_index(0))
        } else {
            let tx: Transaction = ops.into_iter().map(|(op, _)| op).collect();
            table.submit_transaction(tx).await.map(|mut outcomes| outcomes.swap_remove(0).etag)
        };
        match result {
            Ok(etag) => break Some(WriteOutcome { etag }),
            Err(e) => {
                let role = e.batch_index().and_then(|i| roles.get(i)).copied();
                match decide(&change, role, &e) {
                    Next::Retry if attempt < MAX_ATTEMPTS => backoff(attempt).await,
                    Next::OldCopyMissing(i) if attempt < MAX_ATTEMPTS => absent_old_copies.push(i),
                    Next::Conflict(index) => {
                        return Err(Error::service(
                            ErrorCode::EntityAlreadyExists,
                            format!(
                                "the unique index `{}` already holds this key for another entity",
                                index.name
                            ),
                        )
                        .with_batch_index(e.batch_index().unwrap_or(0)));
                    }
                    Next::Done if matches!(change, Change::DeleteIfExists(_)) => break None,
                    _ => return Err(e),
                }
            }
        }
    };
    if has_cross {
        let candidates = intents.iter().flat_map(|i| i.candidates.iter().cloned()).collect();
        sync_cross_partition::<T>(table, &key, candidates).await?;
        for intent in intents {
            intent.remove(table).await?;
        }
    }
    Ok(outcome)
}

/// The primary operation for `change` given the current stored entity, conditioned on the
/// ETag read so that a concurrent change makes it fail (and the caller retry), or the error
/// the service would give.
fn plan<T: TableEntity>(change: &Change<'_, T>, current: Option<&Entity>) -> Result<Option<Plan>> {
    let conditioned = |user: &IfMatch, current: &Entity| -> Result<IfMatch> {
        let etag = current
            .etag
            .clone()
            .ok_or_else(|| Error::new(table_core::ErrorKind::Decode, "read an entity without an ETag"))?;
        match user {
            IfMatch::ETag(wanted) if *wanted != etag => Err(Error::service(
                ErrorCode::UpdateConditionNotSatisfied,
                "The update condition specified in the request was not satisfied.",
            )),
            _ => Ok(IfMatch::ETag(etag)),
        }
    };
    let not_found = || Error::service(ErrorCode::ResourceNotFound, "The specified resource does not exist.");
    let merged = |entity: &Entity, current: &Entity| {
        let mut state = current.clone();
        state.properties.extend(entity.properties.clone());
        state
    };
    Ok(Some(match (change, current) {
        (Change::Insert(_), Some(_)) => {
            return Err(Error::service(
                ErrorCode::EntityAlreadyExists,
                "The specified entity already exists.",
            ));
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
    Retry,
    OldCopyMissing(usize),
    Conflict(&'static IndexDef),
    Done,
    Fail,
}

/// What to do after the transaction failed at an operation with `role`.
fn decide<T>(change: &Change<'_, T>, role: Option<Role>, e: &Error) -> Next {
    let user_condition = matches!(
        change,
        Change::Replace(_, IfMatch::ETag(_))
            | Change::Merge(_, IfMatch::ETag(_))
            | Change::Delete(_, IfMatch::ETag(_))
    );
    match role {
        // The primary changed, appeared or vanished since it was read.
        Some(Role::Primary) if e.is_precondition_failed() && !user_condition => Next::Retry,
        Some(Role::Primary)
            if e.is_conflict() && matches!(change, Change::InsertOrReplace(_) | Change::InsertOrMerge(_)) =>
        {
            Next::Retry
        }
        Some(Role::Primary)
            if e.is_not_found()
                && matches!(change, Change::InsertOrReplace(_) | Change::InsertOrMerge(_)) =>
        {
            Next::Retry
        }
        Some(Role::Primary) if e.is_not_found() && matches!(change, Change::DeleteIfExists(_)) => Next::Done,
        Some(Role::UniqueCopy(index)) if e.is_conflict() => Next::Conflict(index),
        Some(Role::OldCopy(i)) if e.is_not_found() => Next::OldCopyMissing(i),
        Some(Role::Lookup) if e.is_precondition_failed() || e.is_conflict() || e.is_not_found() => {
            Next::Retry
        }
        _ => Next::Fail,
    }
}
