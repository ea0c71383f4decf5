//! The write path of typed values, shared by a single typed write and a typed transaction:
//! read the primaries of indexed types, plan each primary operation and the index changes from
//! what was read, send the primaries and their same-partition index rows in ONE entity-group
//! transaction conditioned on the ETags read, and retry the whole when a concurrent writer got
//! in between. A single write hands its cross-partition indexes to the outbox around this
//! ([`apply`]); a transaction refuses types that have any ([`check_transaction`]).
//!
//! Invariants:
//! - Each attempt sends one batch: the primaries in the caller's order, then their index rows.
//!   A lookup row that several writes change is written once, with every change.
//! - An error names the caller's write ([`Error::batch_index`]), never a position among the
//!   index rows.
//! - A 412, 409 or 404 reaches the caller only when its own request caused it (its ETag, an
//!   insert over an existing entity, a replace of a missing one); a lost race is retried within
//!   the contention budget, then reported as `ErrorKind::Contention`.
//! - Values of types without indexes are sent as given (not read, the caller's condition kept):
//!   the service's answer to them is the answer to the caller's own request.

use std::collections::{BTreeMap, BTreeSet};

use table_core::typed::{IndexDef, IndexKind, TableEntity};
use table_core::{
    Entity, EntityKey, Error, ErrorCode, ErrorKind, IfMatch, MAX_BATCH_OPERATIONS, Operation, Result,
    Violation, WriteOutcome,
};

use super::cross_partition::{Intent, sync_cross_partition, type_tag};
use super::lookup::LookupRow;
use super::rows::{index_keys, make_copy};
use crate::batch::Transaction;
use crate::contention::{MAX_ATTEMPTS, backoff, contention};
use crate::error::{self, ambiguous};
use crate::table::TableClient;

/// One typed write, as the entity the value makes.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    Insert(Entity),
    Replace(Entity, IfMatch),
    Merge(Entity, IfMatch),
    InsertOrReplace(Entity),
    InsertOrMerge(Entity),
    Delete(EntityKey, IfMatch),
    DeleteIfExists(EntityKey),
}

impl Change {
    fn key(&self) -> EntityKey {
        match self {
            Change::Insert(e)
            | Change::Replace(e, _)
            | Change::Merge(e, _)
            | Change::InsertOrReplace(e)
            | Change::InsertOrMerge(e) => e.key(),
            Change::Delete(k, _) | Change::DeleteIfExists(k) => k.clone(),
        }
    }

    /// `true` when the caller conditioned the write on an ETag.
    fn user_condition(&self) -> bool {
        matches!(
            self,
            Change::Replace(_, IfMatch::ETag(_))
                | Change::Merge(_, IfMatch::ETag(_))
                | Change::Delete(_, IfMatch::ETag(_))
        )
    }

    fn upsert(&self) -> bool {
        matches!(self, Change::InsertOrReplace(_) | Change::InsertOrMerge(_))
    }

    /// The operation as the caller asked for it: what a value of a type without indexes sends,
    /// and what the batch rules are checked on before reading. A delete-if-exists, which only
    /// indexed types send through here (after reading), is the delete it becomes.
    fn operation(&self) -> Operation {
        match self.clone() {
            Change::Insert(e) => Operation::Insert(e),
            Change::Replace(entity, if_match) => Operation::Replace { entity, if_match },
            Change::Merge(entity, if_match) => Operation::Merge { entity, if_match },
            Change::InsertOrReplace(e) => Operation::InsertOrReplace(e),
            Change::InsertOrMerge(e) => Operation::InsertOrMerge(e),
            Change::Delete(key, if_match) => Operation::Delete { key, if_match },
            Change::DeleteIfExists(key) => Operation::Delete { key, if_match: IfMatch::Any },
        }
    }

    /// The whole stored state after the write, when the change gives it without reading
    /// (an insert or a replace, not a merge or a delete).
    fn whole_value(&self) -> Option<&Entity> {
        match self {
            Change::Insert(e) | Change::Replace(e, _) | Change::InsertOrReplace(e) => Some(e),
            _ => None,
        }
    }
}

/// What the write path needs of a value's type, without the type: its name, its indexes, and
/// how to compute a stored state's index keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schema {
    type_name: &'static str,
    /// The tag of the type's outbox intents.
    type_tag: &'static str,
    indexes: &'static [IndexDef],
    /// The type's `#[table(encrypt)]` properties, encrypted in its rows and in their copies.
    encrypted: &'static [&'static str],
    /// The key of every declared index (aligned with `indexes`) for a stored state, `None`
    /// where the state has no row in that index (or there is no state).
    index_keys: fn(Option<Entity>) -> Result<Vec<Option<EntityKey>>>,
}

impl Schema {
    fn of<T: TableEntity>() -> Schema {
        Schema {
            type_name: std::any::type_name::<T>(),
            type_tag: type_tag::<T>(),
            indexes: T::indexes(),
            encrypted: T::ENCRYPTED_PROPERTIES,
            index_keys: |state| index_keys::<T>(state.map(T::from_entity).transpose()?.as_ref()),
        }
    }
}

/// One typed write with its type's [`Schema`].
#[derive(Debug, Clone)]
pub(crate) struct Write {
    change: Change,
    schema: Schema,
}

impl Write {
    /// `change` of a value of type `T`.
    pub(crate) fn new<T: TableEntity>(change: Change) -> Write {
        Write { change, schema: Schema::of::<T>() }
    }

    /// Whether the write maintains index rows, and so reads the stored entity first.
    fn indexed(&self) -> bool {
        !self.schema.indexes.is_empty()
    }

    /// Whether the write has cross-partition index rows, kept through the outbox.
    fn cross_partition(&self) -> bool {
        self.schema.indexes.iter().any(|i| !i.same_partition)
    }

    /// Whether writing again after an attempt whose outcome is unknown gives what the caller
    /// asked for. An indexed write re-reads, so only the caller's ETag or an insert (which its
    /// own earlier attempt could fail) cannot; a write sent as given is safe only as an upsert.
    fn replayable(&self) -> bool {
        match self.indexed() {
            true => !self.change.user_condition() && !matches!(self.change, Change::Insert(_)),
            false => self.change.upsert(),
        }
    }
}

/// What each row of an attempt's batch is, to interpret a failure at its position.
#[derive(Debug, Clone, PartialEq)]
enum Role {
    Primary,
    /// Inserting a unique copy: a conflict means another entity holds the index key.
    UniqueCopy(&'static IndexDef),
    /// Deleting the old copy at this key: missing means the index was already missing the row.
    OldCopy(&'static IndexDef, EntityKey),
    /// Replacing a copy in place.
    Copy(&'static IndexDef),
    /// Writing a lookup row read in this attempt: a conflict means a concurrent writer.
    Lookup(&'static IndexDef),
}

/// One row of an attempt's batch: the operation, what it is, and the caller's write it serves
/// (for a lookup row several writes change, the first of them).
#[derive(Debug)]
struct Row {
    op: Operation,
    role: Role,
    owner: usize,
}

/// What one write does in an attempt.
enum Step {
    /// Nothing to send; the write's outcome is known (`None`: there was nothing to delete).
    Done(Option<WriteOutcome>),
    /// Send the primary operation.
    Send(Box<Primary>),
}

/// A primary operation to send: `op` changes the index keys from `old_keys` to `new_keys`
/// (empty for a type without indexes) and leaves the stored entity `new_state`.
struct Primary {
    op: Operation,
    new_state: Option<Entity>,
    old_keys: Vec<Option<EntityKey>>,
    new_keys: Vec<Option<EntityKey>>,
}

/// Applies `change` of a value of type `T` with its index maintenance. Returns what the
/// primary write reported, or `None` when there was nothing to do (delete-if-exists of a
/// missing entity).
///
/// Races with concurrent writers are retried within the contention budget, then reported as
/// [`ErrorKind::Contention`], never as a 412, 409 or 404 the caller's own condition did not
/// cause. An attempt whose outcome is unknown (`Ambiguous`) is applied again on a fresh read
/// when the change is unconditional, and surfaced otherwise; every error after such an
/// attempt, or after the primary write succeeded, carries the "may have applied" marker.
pub(crate) async fn apply<T: TableEntity>(
    table: &TableClient,
    change: Change,
) -> Result<Option<WriteOutcome>> {
    let key = change.key();
    let write = Write::new::<T>(change);
    let mut intents: Vec<Intent> = Vec::new();
    let outcome =
        apply_writes(table, Caller::Write, std::slice::from_ref(&write), &mut intents).await?.pop().flatten();
    if write.cross_partition() {
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

/// The rules a typed transaction's `writes` must meet, checked before any request, in this
/// order: the batch rules on the caller's operations as given (at least one, at most 100, one
/// partition, each entity once, each operation valid, at most 4 MiB), no type with a
/// cross-partition index, and the caller's operations plus the index rows certain to change
/// (from the values alone) within 100. Errors name the caller's operation.
pub(crate) fn check_transaction(writes: &[Write]) -> Result<()> {
    let given: Vec<Operation> = writes.iter().map(|w| w.change.operation()).collect();
    table_core::validate_batch(&given)?;
    for (index, write) in writes.iter().enumerate() {
        if let Some(cross) = write.schema.indexes.iter().find(|i| !i.same_partition) {
            return Err(Error::invalid(Violation::CrossPartitionIndexInTransaction {
                index,
                entity_type: write.schema.type_name.to_owned(),
                index_name: cross.name.to_owned(),
            }));
        }
    }
    // Rows certain to be written, whatever is stored: a copy per index key of a whole new
    // value, and the lookup rows an insert joins (it was listed nowhere).
    let mut copies = 0;
    let mut lookups = BTreeSet::new();
    for (index, write) in writes.iter().enumerate() {
        let Some(value) = write.change.whole_value() else { continue };
        let keys = (write.schema.index_keys)(Some(value.clone())).map_err(|e| e.with_batch_index(index))?;
        for (def, key) in write.schema.indexes.iter().zip(keys) {
            match (def.kind, key) {
                (IndexKind::Secondary, Some(_)) => copies += 1,
                (IndexKind::Lookup, Some(key)) if matches!(write.change, Change::Insert(_)) => {
                    lookups.insert(key);
                }
                _ => {}
            }
        }
    }
    check_count(writes.len(), copies + lookups.len())
}

/// The operations plus their index rows within one batch.
fn check_count(operations: usize, index_rows: usize) -> Result<()> {
    if operations + index_rows > MAX_BATCH_OPERATIONS {
        return Err(Error::invalid(Violation::IndexRowsOverBatchLimit {
            operations,
            index_rows,
            max: MAX_BATCH_OPERATIONS,
        }));
    }
    Ok(())
}

/// What the writes of [`apply_writes`] are to the caller, which decides whether an error found
/// on reading (before any write) names the write's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    /// One typed write: such errors name no position, as an untyped write's do.
    Write,
    /// A typed transaction: every error names the caller's operation.
    Transaction,
}

/// Applies `writes` (one partition, each entity once) and their same-partition index rows in
/// one entity-group transaction per attempt; returns each write's outcome in order (`None`:
/// nothing to delete). Before each attempt's write, records in `intents` the outbox intents
/// the writes of types with cross-partition indexes need (a transaction has none: it refuses
/// them).
///
/// An attempt whose outcome is unknown is tried again on a fresh read when every write is
/// [replayable](Write::replayable); every error after one carries the "may have applied"
/// marker.
pub(crate) async fn apply_writes(
    table: &TableClient,
    caller: Caller,
    writes: &[Write],
    intents: &mut Vec<Intent>,
) -> Result<Vec<Option<WriteOutcome>>> {
    // Whether an earlier attempt may have applied without anyone knowing.
    let mut uncertain = false;
    attempts(table, caller, writes, intents, &mut uncertain).await.map_err(|e| match uncertain {
        true => e.with_may_have_applied(),
        false => e,
    })
}

/// The read-plan-write loop of [`apply_writes`].
async fn attempts(
    table: &TableClient,
    caller: Caller,
    writes: &[Write],
    intents: &mut Vec<Intent>,
    uncertain: &mut bool,
) -> Result<Vec<Option<WriteOutcome>>> {
    let mut absent_old_copies: Vec<EntityKey> = Vec::new();
    let mut attempt = 0;
    let mut unknown_attempts = 0;
    loop {
        attempt += 1;
        let reads = writes.iter().map(|w| async move {
            let key = w.change.key();
            match w.indexed() {
                true => table.get_if_exists(&key.partition_key, &key.row_key).await.map(Some),
                false => Ok(None),
            }
        });
        let current = futures::future::try_join_all(reads).await?;
        let steps = writes
            .iter()
            .zip(current)
            .enumerate()
            .map(|(owner, (write, current))| {
                step(table, write, current, *uncertain).map_err(|e| match caller {
                    Caller::Write => e,
                    Caller::Transaction => e.with_batch_index(owner),
                })
            })
            .collect::<Result<Vec<Step>>>()?;
        let mut outcomes: Vec<Option<WriteOutcome>> = steps
            .iter()
            .map(|s| match s {
                Step::Done(outcome) => outcome.clone(),
                Step::Send(_) => None,
            })
            .collect();
        if steps.iter().all(|s| matches!(s, Step::Done(_))) {
            return Ok(outcomes);
        }
        record_intents(table, writes, &steps, intents).await?;

        let rows = batch_rows(table, writes, steps, &absent_old_copies).await?;
        let rows = seal_rows(table, caller, writes, rows).await?;
        let primaries = rows.iter().filter(|r| r.role == Role::Primary).count();
        check_count(primaries, rows.len() - primaries)?;
        check_shared_rows(writes, &rows)?;
        let (ops, roles): (Vec<Operation>, Vec<(Role, usize)>) =
            rows.into_iter().map(|r| (r.op, (r.role, r.owner))).unzip();
        check_size(&ops, primaries, &roles)?;

        // Sealed by `seal_rows`: sent as they are.
        let result = match <[Operation; 1]>::try_from(ops) {
            Ok([op]) => table.raw().execute(op).await.map(|o| vec![o]).map_err(|e| e.with_batch_index(0)),
            Err(ops) => table.raw().submit_transaction(ops.into_iter().collect::<Transaction>()).await,
        };
        let e = match result {
            Ok(written) => {
                for ((role, owner), outcome) in roles.iter().zip(written) {
                    if *role == Role::Primary {
                        outcomes[*owner] = Some(outcome);
                    }
                }
                return Ok(outcomes);
            }
            Err(e) => e,
        };
        let row = e.batch_index().and_then(|i| roles.get(i));
        // The error named by the caller's write the failed row serves.
        let named = |e: Error| match row {
            Some((_, owner)) => e.with_batch_index(*owner),
            None => e,
        };
        match decide(writes, row, &e) {
            Next::Conflict(index, owner) => {
                return Err(error::refused(
                    ErrorCode::EntityAlreadyExists,
                    format!(
                        "the unique index `{}` of `{}` already holds the key of entity {} for another entity",
                        index.name,
                        writes[owner].schema.type_name,
                        writes[owner].change.key()
                    ),
                )
                .with_batch_index(owner));
            }
            Next::Fail => return Err(named(e)),
            _ if attempt >= MAX_ATTEMPTS => {
                let subject = match writes {
                    [one] => format!("write of entity {} in table {}", one.change.key(), table.name()),
                    _ => format!("transaction of {} writes in table {}", writes.len(), table.name()),
                };
                return Err(contention(&subject, u32::try_from(attempt).unwrap_or(u32::MAX), e));
            }
            Next::Retry => backoff(attempt).await,
            // A failing network would otherwise be retried for the whole contention budget.
            Next::Unknown if unknown_attempts >= MAX_UNKNOWN_ATTEMPTS => return Err(named(e)),
            Next::Unknown => {
                *uncertain = true;
                unknown_attempts += 1;
                backoff(attempt).await;
            }
            Next::OldCopyMissing(old) => absent_old_copies.push(old),
        }
    }
}

/// What `write` does given `current`, the stored entity read (`None` for a type without
/// indexes, which is not read and is sent as given).
fn step(
    table: &TableClient,
    write: &Write,
    current: Option<Option<Entity>>,
    uncertain: bool,
) -> Result<Step> {
    let Some(current) = current else {
        let op = write.change.operation();
        return Ok(Step::Send(Box::new(Primary {
            op,
            new_state: None,
            old_keys: Vec::new(),
            new_keys: Vec::new(),
        })));
    };
    let key = write.change.key();
    if uncertain && current.is_none() {
        match write.change {
            // Gone, as asked; it existed when this write began.
            Change::Delete(..) | Change::DeleteIfExists(_) => {
                return Ok(Step::Done(Some(WriteOutcome { etag: None })));
            }
            Change::Replace(..) | Change::Merge(..) => {
                return Err(ambiguous(format!(
                    "write of entity {key} in table {}: an attempt whose outcome is unknown may have applied, \
                     and the entity no longer exists",
                    table.name()
                )));
            }
            Change::Insert(_) | Change::InsertOrReplace(_) | Change::InsertOrMerge(_) => {}
        }
    }
    let Some((op, new_state)) = plan(&write.change, current.as_ref())
        .map_err(|e| e.about(table.name(), Some((&key.partition_key, &key.row_key))))?
    else {
        return Ok(Step::Done(None));
    };
    let old_keys = (write.schema.index_keys)(current)?;
    let new_keys = (write.schema.index_keys)(new_state.clone())?;
    Ok(Step::Send(Box::new(Primary { op, new_state, old_keys, new_keys })))
}

/// Records, before an attempt's write, the outbox intent of each write of a type with
/// cross-partition indexes: one names its primary for a drain, and another is needed only for
/// stale candidates (its old index keys) that no recorded intent of that primary names yet.
async fn record_intents(
    table: &TableClient,
    writes: &[Write],
    steps: &[Step],
    intents: &mut Vec<Intent>,
) -> Result<()> {
    for (write, step) in writes.iter().zip(steps) {
        let Step::Send(planned) = step else { continue };
        if !write.cross_partition() {
            continue;
        }
        let primary = write.change.key();
        let candidates: Vec<(&'static str, EntityKey)> = (write.schema.indexes.iter().zip(&planned.old_keys))
            .filter(|(i, _)| !i.same_partition)
            .filter_map(|(i, k)| Some((i.name, k.clone()?)))
            .collect();
        let recorded: Vec<&Intent> = intents.iter().filter(|i| i.primary == primary).collect();
        let covered = |c: &(&str, EntityKey)| recorded.iter().any(|i| i.candidates.contains(c));
        if recorded.is_empty() || !candidates.iter().all(covered) {
            intents.push(Intent::record(table, write.schema.type_tag, &primary, candidates).await?);
        }
    }
    Ok(())
}

/// A lookup row the writes of an attempt change: the keys to drop from its list and to add.
struct LookupChange {
    index: &'static IndexDef,
    type_name: &'static str,
    owner: usize,
    remove: BTreeSet<EntityKey>,
    add: BTreeSet<EntityKey>,
}

/// The rows of an attempt's batch: the primaries in the caller's order, the copies of each,
/// then every changed lookup row once (read now, to write it back conditioned on its ETag).
async fn batch_rows(
    table: &TableClient,
    writes: &[Write],
    steps: Vec<Step>,
    absent_old_copies: &[EntityKey],
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut copies = Vec::new();
    let mut lookups: BTreeMap<EntityKey, LookupChange> = BTreeMap::new();
    for (owner, (write, step)) in writes.iter().zip(steps).enumerate() {
        let Step::Send(planned) = step else { continue };
        let Primary { op, new_state, old_keys, new_keys } = *planned;
        rows.push(Row { op, role: Role::Primary, owner });
        let primary = write.change.key();
        let indexes = write.schema.indexes.iter().zip(old_keys.iter().zip(&new_keys));
        for (index, (old, new)) in indexes.filter(|(i, _)| i.same_partition) {
            match index.kind {
                IndexKind::Secondary => {
                    let state = new_state.as_ref();
                    match (old, new) {
                        (Some(o), Some(n)) if o == n => {
                            let copy = make_copy(index, n, state.expect("a new key implies a new state"));
                            copies.push(Row {
                                op: Operation::InsertOrReplace(copy),
                                role: Role::Copy(index),
                                owner,
                            });
                        }
                        _ => {
                            if let Some(o) = old.as_ref().filter(|o| !absent_old_copies.contains(o)) {
                                copies.push(Row {
                                    op: Operation::Delete { key: o.clone(), if_match: IfMatch::Any },
                                    role: Role::OldCopy(index, o.clone()),
                                    owner,
                                });
                            }
                            if let Some(n) = new {
                                let copy = make_copy(index, n, state.expect("a new key implies a new state"));
                                copies.push(Row {
                                    op: Operation::Insert(copy),
                                    role: Role::UniqueCopy(index),
                                    owner,
                                });
                            }
                        }
                    }
                }
                IndexKind::Lookup if old != new => {
                    for (at, joins) in [(old, false), (new, true)] {
                        let Some(at) = at else { continue };
                        let change = lookups.entry(at.clone()).or_insert_with(|| LookupChange {
                            index,
                            type_name: write.schema.type_name,
                            owner,
                            remove: BTreeSet::new(),
                            add: BTreeSet::new(),
                        });
                        // One row kept by two different indexes cannot hold both lists.
                        if change.index.name != index.name || change.type_name != write.schema.type_name {
                            return Err(shared_row(
                                change.owner,
                                owner,
                                &at.row_key,
                                format!(
                                    "the index entity `{}` of `{}` and the index entity `{}` of `{}`",
                                    change.index.name, change.type_name, index.name, write.schema.type_name
                                ),
                            ));
                        }
                        match joins {
                            true => change.add.insert(primary.clone()),
                            false => change.remove.insert(primary.clone()),
                        };
                    }
                }
                IndexKind::Lookup => {}
            }
        }
    }
    rows.extend(copies);
    let reads = lookups.keys().map(|at| LookupRow::read(table, at));
    let read = futures::future::try_join_all(reads).await?;
    for ((at, change), mut row) in lookups.into_iter().zip(read) {
        // Removals first: a write leaving this row and another joining it are different keys.
        row.keys.retain(|k| !change.remove.contains(k));
        row.keys.extend(change.add);
        if let Some(op) = row.write_op(change.index, &at).map_err(|e| e.with_batch_index(change.owner))? {
            rows.push(Row { op, role: Role::Lookup(change.index), owner: change.owner });
        }
    }
    Ok(rows)
}

/// Each row of an attempt as it is sent: encrypted by the client's policy for its own keys,
/// with the `#[table(encrypt)]` properties of the type of the write it serves (a copy under an
/// index key is sealed afresh, since the ciphertext is bound to the row's keys). An error names
/// the caller's write in a transaction.
async fn seal_rows(
    table: &TableClient,
    caller: Caller,
    writes: &[Write],
    rows: Vec<Row>,
) -> Result<Vec<Row>> {
    let mut sealed = Vec::with_capacity(rows.len());
    for Row { op, role, owner } in rows {
        let op = table.seal_as(op, writes[owner].schema.encrypted).await.map_err(|e| match caller {
            Caller::Write => e,
            Caller::Transaction => e.with_batch_index(owner),
        })?;
        sealed.push(Row { op, role, owner });
    }
    Ok(sealed)
}

/// Refuses a batch in which two rows are one entity (the service takes each once): the entity
/// of one write is an index row of another, or two writes need one index copy.
fn check_shared_rows(writes: &[Write], rows: &[Row]) -> Result<()> {
    let mut seen: BTreeMap<&str, &Row> = BTreeMap::new();
    for row in rows {
        if let Some(first) = seen.insert(row.op.row_key(), row) {
            let describe = |r: &Row| {
                let type_name = writes[r.owner].schema.type_name;
                match &r.role {
                    Role::Primary => format!("the entity of `{type_name}`"),
                    Role::UniqueCopy(i) | Role::OldCopy(i, _) | Role::Copy(i) => {
                        format!("a copy of index `{}` of `{type_name}`", i.name)
                    }
                    Role::Lookup(i) => format!("the index entity `{}` of `{type_name}`", i.name),
                }
            };
            let (first, second) = match first.owner <= row.owner {
                true => (first, row),
                false => (row, first),
            };
            let rows = format!("{} and {}", describe(first), describe(second));
            return Err(shared_row(first.owner, second.owner, row.op.row_key(), rows));
        }
    }
    Ok(())
}

fn shared_row(first: usize, index: usize, row_key: &str, rows: String) -> Error {
    Error::invalid(Violation::SharedRowInTransaction { first, index, row_key: row_key.to_owned(), rows })
}

/// The batch rules on the whole batch, primaries and index rows: a broken one names the
/// caller's write, and a body over 4 MiB says what the index rows added.
fn check_size(ops: &[Operation], primaries: usize, roles: &[(Role, usize)]) -> Result<()> {
    table_core::validate_batch(ops).map_err(|e| match e.violation() {
        Some(Violation::BatchTooLarge { .. }) if ops.len() > primaries => error::too_large(
            format!(
                "the transaction's {primaries} operations and the {} index rows they maintain make a batch \
                 body over the limit: split the transaction",
                ops.len() - primaries
            ),
            e,
        ),
        _ => match e.batch_index().and_then(|i| roles.get(i)) {
            Some((_, owner)) => e.with_batch_index(*owner),
            None => e,
        },
    })
}

/// The primary operation for `change` given the current stored entity, conditioned on the
/// ETag read so that a concurrent change makes it fail (and the caller retry), or the error
/// the service would give; with the stored state it leaves. `None`: nothing to do.
fn plan(change: &Change, current: Option<&Entity>) -> Result<Option<(Operation, Option<Entity>)>> {
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
        (Change::Insert(e) | Change::InsertOrReplace(e) | Change::InsertOrMerge(e), None) => {
            (Operation::Insert(e.clone()), Some(e.clone()))
        }
        (Change::Replace(..) | Change::Merge(..) | Change::Delete(..), None) => {
            return Err(not_found());
        }
        (Change::DeleteIfExists(_), None) => return Ok(None),
        (Change::Replace(e, user), Some(cur)) => {
            (Operation::Replace { entity: e.clone(), if_match: conditioned(user, cur)? }, Some(e.clone()))
        }
        (Change::InsertOrReplace(e), Some(cur)) => (
            Operation::Replace { entity: e.clone(), if_match: conditioned(&IfMatch::Any, cur)? },
            Some(e.clone()),
        ),
        (Change::Merge(e, user), Some(cur)) => {
            (Operation::Merge { entity: e.clone(), if_match: conditioned(user, cur)? }, Some(merged(e, cur)))
        }
        (Change::InsertOrMerge(e), Some(cur)) => (
            Operation::Merge { entity: e.clone(), if_match: conditioned(&IfMatch::Any, cur)? },
            Some(merged(e, cur)),
        ),
        (Change::Delete(k, user), Some(cur)) => {
            (Operation::Delete { key: k.clone(), if_match: conditioned(user, cur)? }, None)
        }
        (Change::DeleteIfExists(k), Some(cur)) => {
            (Operation::Delete { key: k.clone(), if_match: conditioned(&IfMatch::Any, cur)? }, None)
        }
    }))
}

enum Next {
    /// A concurrent writer got in between: read again and retry.
    Retry,
    /// The outcome of the attempt is unknown; replayable writes read again and retry.
    Unknown,
    /// The old copy at this key was already missing: retry without deleting it.
    OldCopyMissing(EntityKey),
    /// The unique index already holds the new key of the caller's write `.1` for another entity.
    Conflict(&'static IndexDef, usize),
    Fail,
}

/// How many attempts of an unconditional write may end with an unknown outcome before the
/// write reports it (marked "may have applied"), as the client's default retry policy does.
const MAX_UNKNOWN_ATTEMPTS: u32 = 3;

/// What to do after the batch of `writes` failed with `e` at a row (its role and the caller's
/// write it serves).
fn decide(writes: &[Write], row: Option<&(Role, usize)>, e: &Error) -> Next {
    // An attempt whose outcome is unknown: a lost answer to the transaction itself (a
    // timeout, a reset connection, a 500), or one its retry could not settle. Writing again is
    // what replayable writes asked for; the caller's own ETag, or an insert, could be failed
    // by this write's own earlier attempt, so those report it.
    if e.may_have_applied() {
        return match writes.iter().all(Write::replayable) {
            true => Next::Unknown,
            false => Next::Fail,
        };
    }
    let Some((role, owner)) = row else { return Next::Fail };
    let Some(write) = writes.get(*owner) else { return Next::Fail };
    let change = &write.change;
    let kind = e.kind();
    match role {
        // Sent as the caller gave it: the service answered the caller's own request.
        Role::Primary if !write.indexed() => Next::Fail,
        // The primary changed, appeared or vanished since it was read (a delete-if-exists of
        // an entity that vanished reads again and finds nothing to do).
        Role::Primary if kind == ErrorKind::PreconditionFailed && !change.user_condition() => Next::Retry,
        Role::Primary if kind == ErrorKind::AlreadyExists && change.upsert() => Next::Retry,
        Role::Primary if kind == ErrorKind::NotFound && change.upsert() => Next::Retry,
        Role::Primary if kind == ErrorKind::NotFound && matches!(change, Change::DeleteIfExists(_)) => {
            Next::Retry
        }
        Role::UniqueCopy(index) if kind == ErrorKind::AlreadyExists => Next::Conflict(index, *owner),
        Role::OldCopy(_, key) if kind == ErrorKind::NotFound => Next::OldCopyMissing(key.clone()),
        Role::Lookup(_)
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
