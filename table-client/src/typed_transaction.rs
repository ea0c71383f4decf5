//! Typed entity-group transactions: values of any `#[derive(TableEntity)]` types in one
//! partition, written all or none together with the same-partition index rows they maintain
//! (the read-plan-write path of the `index` module, shared with single typed writes).

use table_core::typed::TableEntity;
use table_core::{EntityKey, IfMatch, Result, WriteOutcome};

use crate::index::{self, Caller, Change, Write};
use crate::table::TableClient;
use crate::typed_table::{TypedTable, refuse_encrypted_merge};

/// An entity-group transaction of typed values that keeps their indexes: values of any
/// [`TableEntity`] types sharing one partition, applied all or none, together with every
/// same-partition index row (`index(...)` copies and `lookup(...)` index entities) they
/// change, in the SAME transaction. Start one with [`TypedTable::transaction`] (or
/// [`TableClient::typed_transaction`]), add writes, and [`submit`](Self::submit) it.
///
/// Where the untyped [`Transaction`](crate::Transaction) writes entities exactly as given and
/// leaves index rows alone, this one reads first, as a single typed write does: the stored
/// entity of every value of an indexed type (its old index keys, its ETag) and the lookup rows
/// that change. Its batch then holds the caller's writes conditioned on the ETags read, and
/// the index rows: a copy moves when its key changes, an index entity gains or loses keys (two
/// writes that change one index entity, such as two Joneses inserted together, make one write
/// of it). When a concurrent writer changes what was read before the batch lands, the whole
/// transaction is read and sent again, within the contention budget (past it,
/// [`ErrorKind::Contention`](crate::ErrorKind::Contention)); a 412, 409 or 404 is reported only
/// when the caller's own condition caused it. Values of types without indexes are sent as given,
/// unread, their conditions kept.
///
/// **Encryption.** With an [encryption policy](crate::encryption::EncryptionPolicy), each row
/// of the batch is encrypted for its own keys: a value's row with its type's
/// `#[table(encrypt)]` fields (and what the policy's resolver names), and each index copy of it
/// afresh, under its own content key, since the ciphertext is bound to the row it is stored in.
/// A merge of a type with `#[table(encrypt)]` fields is refused before any request, as
/// [`TypedTable::merge`] is.
///
/// Cost: one read per value of an indexed type, one per index entity that changes, and one
/// transaction; a transaction of types without indexes is one request.
///
/// **Cross-partition indexes are refused.** An index row in another partition cannot join an
/// entity-group transaction, and the outbox that keeps such indexes eventually consistent for
/// single writes would break the promise of "all or none": a value of a type with any
/// cross-partition index is refused before any request
/// ([`Violation::CrossPartitionIndexInTransaction`](crate::Violation::CrossPartitionIndexInTransaction),
/// naming the type and the index). Write such types one at a time through their
/// [`TypedTable`].
///
/// Errors of [`submit`](Self::submit), in the order they are checked:
/// - a value whose entity could not be made (a key template, a JSON field), at its operation;
/// - before any request, the batch rules on the caller's operations (at least one, at most
///   100, one partition, each entity once, each operation valid, 4 MiB), a cross-partition
///   index, and the caller's operations plus the index rows certain to change from the values
///   alone over 100 ([`Violation::IndexRowsOverBatchLimit`](crate::Violation::IndexRowsOverBatchLimit),
///   saying how many rows the indexes add);
/// - after reading, before writing: for values of indexed types, the errors the service would
///   give (an insert over an existing entity, a replace, merge or delete of a missing one, the
///   caller's ETag not matching); the same limit counted exactly; two operations that need one
///   row (the entity of one is an index row of another, or both need one index copy:
///   [`Violation::SharedRowInTransaction`](crate::Violation::SharedRowInTransaction)); a body
///   over 4 MiB;
/// - what the service answers (to the values of types without indexes, as sent), with a
///   unique index that already holds a new key reported as `AlreadyExists` naming the index.
///
/// [`Error::batch_index`](crate::Error::batch_index) always names the caller's operation (its
/// position in the order added), never a position among the index rows. An error after an
/// attempt whose outcome is unknown is marked [`Error::may_have_applied`](crate::Error::may_have_applied),
/// as for a single typed write.
///
/// The design guide's denormalization pattern: a new employee and the summary of its
/// department, in one transaction, with the employee's index entity by last name kept too.
///
/// ```rust
/// use table_client::engine::Engine;
/// use table_client::{ETag, IfMatch, TableEntity, TableServiceClient};
///
/// #[derive(Debug, Clone, PartialEq, TableEntity)]
/// #[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
/// #[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
/// struct Employee {
///     #[table(key_only)]
///     department: String,
///     #[table(key_only)]
///     id: u32,
///     last_name: String,
/// }
///
/// #[derive(Debug, Clone, PartialEq, TableEntity)]
/// #[table(partition_key = "{department}", row_key = "summary", rename_all = "PascalCase")]
/// struct DepartmentSummary {
///     #[table(key_only)]
///     department: String,
///     employee_count: i32,
///     #[table(etag)]
///     etag: Option<ETag>,
/// }
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let engine = Engine::new();
/// let service = TableServiceClient::embedded(engine.clone());
/// let table = service.create_table("Employees").await?;
/// let (employees, summaries) = (table.typed::<Employee>(), table.typed::<DepartmentSummary>());
/// summaries.insert(&DepartmentSummary { department: "Sales".into(), employee_count: 0, etag: None }).await?;
///
/// // Hire Ann and count her: the summary only over the version read.
/// let mut summary = summaries.get(&DepartmentSummary::key("Sales")?).await?;
/// let read = summary.etag.take().map_or(IfMatch::Any, IfMatch::ETag);
/// summary.employee_count += 1;
/// let ann = Employee { department: "Sales".into(), id: 1, last_name: "Jones".into() };
/// let before = engine.faults().calls();
/// let outcomes = employees.transaction().insert(&ann).replace(&summary, read).submit().await?;
/// // Ann's key and her index entity are read, then one transaction writes all three rows.
/// assert_eq!(engine.faults().calls() - before, 3);
/// assert_eq!(outcomes.len(), 2, "one outcome per write, none for the index rows");
/// assert!(employees.verify_indexes().await?.is_consistent());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a transaction does nothing until submitted"]
pub struct TypedTransaction {
    table: TableClient,
    /// Each write as added, or why its value could not become an entity: the builder keeps
    /// the error for `submit`, as a `build()` would.
    writes: Vec<Result<Write>>,
}

impl TypedTransaction {
    fn push<T: TableEntity>(mut self, change: Result<Change>) -> Self {
        let change = change.and_then(|change| match change {
            Change::Merge(..) | Change::InsertOrMerge(_) => {
                refuse_encrypted_merge::<T>(self.table.name()).map(|()| change)
            }
            change => Ok(change),
        });
        self.writes.push(change.map(Write::new::<T>));
        self
    }

    /// Adds an insert of `value`; the transaction fails with `AlreadyExists` if its key (or a
    /// key of a unique index it has) is taken.
    pub fn insert<T: TableEntity>(self, value: &T) -> Self {
        self.push::<T>(value.to_entity().map(Change::Insert))
    }

    /// Adds a replace of the stored entity by `value`, if it matches `if_match`.
    pub fn replace<T: TableEntity>(self, value: &T, if_match: IfMatch) -> Self {
        self.push::<T>(value.to_entity().map(|e| Change::Replace(e, if_match)))
    }

    /// Adds a merge of `value`'s stored properties into the stored entity, if it matches
    /// `if_match`.
    pub fn merge<T: TableEntity>(self, value: &T, if_match: IfMatch) -> Self {
        self.push::<T>(value.to_entity().map(|e| Change::Merge(e, if_match)))
    }

    /// Adds an insert of `value`, or a replace of whatever has its key.
    pub fn insert_or_replace<T: TableEntity>(self, value: &T) -> Self {
        self.push::<T>(value.to_entity().map(Change::InsertOrReplace))
    }

    /// Adds an insert of `value`, or a merge into whatever has its key.
    pub fn insert_or_merge<T: TableEntity>(self, value: &T) -> Self {
        self.push::<T>(value.to_entity().map(Change::InsertOrMerge))
    }

    /// Adds a delete of the `T` stored at `key` (and its index rows), if it matches `if_match`.
    pub fn delete<T: TableEntity>(self, key: &EntityKey, if_match: IfMatch) -> Self {
        self.push::<T>(Ok(Change::Delete(key.clone(), if_match)))
    }

    /// Number of writes added (index rows not counted).
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// `true` when no write was added.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Applies the writes and their index rows, all or none. Returns each write's outcome (its
    /// new ETag; none for a delete) in the order the writes were added. See the type's docs for
    /// the errors.
    pub async fn submit(self) -> Result<Vec<WriteOutcome>> {
        let writes = (self.writes.into_iter().enumerate())
            .map(|(position, write)| write.map_err(|e| e.with_batch_index(position)))
            .collect::<Result<Vec<Write>>>()?;
        self.table.check_name()?;
        index::check_transaction(&writes)?;
        // No outbox intent: `check_transaction` refused cross-partition indexes.
        let outcomes =
            index::apply_writes(&self.table, Caller::Transaction, &writes, &mut Vec::new()).await?;
        // Only a delete-if-exists of a missing entity has no outcome, and a transaction has none.
        Ok(outcomes.into_iter().map(|o| o.unwrap_or(WriteOutcome { etag: None })).collect())
    }
}

impl TableClient {
    /// A typed transaction on this table: typed values of any types in one partition, written
    /// all or none with the index rows they maintain (see [`TypedTransaction`]).
    pub fn typed_transaction(&self) -> TypedTransaction {
        TypedTransaction { table: self.clone(), writes: Vec::new() }
    }
}

impl<T: TableEntity + Send + 'static> TypedTable<T> {
    /// A typed transaction on this table, for values of `T` and of any other type in the same
    /// partition (see [`TypedTransaction`]).
    pub fn transaction(&self) -> TypedTransaction {
        self.untyped().typed_transaction()
    }
}
