//! The untyped table client: every entity operation on one table, with local validation
//! before any request.

use std::sync::Arc;

use table_core::{
    ETag, Entity, EntityKey, Error, ErrorCode, ErrorKind, IfMatch, KeyName, Operation, Result, WriteOutcome,
    validate_key, validate_operation, validate_table_name,
};

use crate::backend::Backend;
use crate::batch::{BulkReport, Transaction, run_bulk};
use crate::query::{Query, with_system_properties};

/// A client for one table, working with untyped [`Entity`] values. Cheap to clone.
///
/// For typed access through `#[derive(TableEntity)]` structs use [`TableClient::typed`].
#[derive(Debug, Clone)]
pub struct TableClient {
    backend: Backend,
    name: Arc<str>,
}

impl TableClient {
    pub(crate) fn new(backend: Backend, name: &str) -> Self {
        TableClient { backend, name: Arc::from(name) }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    /// A client for another table of the same account.
    pub(crate) fn sibling(&self, name: &str) -> TableClient {
        TableClient::new(self.backend.clone(), name)
    }

    /// Moves an entity into `target` (e.g. `Current` -> `Archive`), eventually consistently
    /// and crash safe: an intent is recorded in this table's outbox first, then the entity is
    /// inserted-or-replaced into the target and deleted-if-exists here, then the intent is
    /// removed. After a crash at any step, [`drain_moves`](Self::drain_moves) leaves the
    /// entity in exactly one of the two tables. Returns whether the entity existed here.
    pub async fn move_entity(
        &self,
        target: &TableClient,
        partition_key: &str,
        row_key: &str,
    ) -> Result<bool> {
        crate::index::move_entity(self, target, &EntityKey::new(partition_key, row_key)).await
    }

    /// Finishes the moves a crash left in this table's outbox; returns how many.
    pub async fn drain_moves(&self) -> Result<usize> {
        crate::index::drain_moves(self).await
    }

    fn check_name(&self) -> Result<()> {
        validate_table_name(&self.name).map_err(Error::invalid)
    }

    /// Inserts an entity; `AlreadyExists` (`EntityAlreadyExists`) if the key is taken.
    /// Returns the new ETag.
    pub async fn insert(&self, entity: Entity) -> Result<ETag> {
        self.write(Operation::Insert(entity)).await
    }

    /// Replaces an existing entity (all properties), if it matches `if_match`.
    pub async fn replace(&self, entity: Entity, if_match: IfMatch) -> Result<ETag> {
        self.write(Operation::Replace { entity, if_match }).await
    }

    /// Merges the entity's properties into the existing entity, if it matches `if_match`.
    pub async fn merge(&self, entity: Entity, if_match: IfMatch) -> Result<ETag> {
        self.write(Operation::Merge { entity, if_match }).await
    }

    /// Inserts the entity or replaces whatever has its key.
    pub async fn insert_or_replace(&self, entity: Entity) -> Result<ETag> {
        self.write(Operation::InsertOrReplace(entity)).await
    }

    /// Inserts the entity or merges it into whatever has its key.
    pub async fn insert_or_merge(&self, entity: Entity) -> Result<ETag> {
        self.write(Operation::InsertOrMerge(entity)).await
    }

    /// Deletes an entity, if it matches `if_match`; `NotFound` if missing.
    pub async fn delete(&self, partition_key: &str, row_key: &str, if_match: IfMatch) -> Result<()> {
        let key = EntityKey::new(partition_key, row_key);
        self.execute(Operation::Delete { key, if_match }).await.map(drop)
    }

    /// Deletes an entity if it exists (any version); returns whether it existed.
    pub async fn delete_if_exists(&self, partition_key: &str, row_key: &str) -> Result<bool> {
        if_exists(self.delete(partition_key, row_key, IfMatch::Any).await).map(|done| done.is_some())
    }

    /// Runs one write operation after validating it locally.
    pub async fn execute(&self, operation: Operation) -> Result<WriteOutcome> {
        self.check_name()?;
        check_operation(&operation)?;
        self.backend.execute(&self.name, operation).await
    }

    async fn write(&self, operation: Operation) -> Result<ETag> {
        require_etag(self.execute(operation).await?.etag)
    }

    /// Reads one entity; `NotFound` (`ResourceNotFound`) if missing.
    pub async fn get(&self, partition_key: &str, row_key: &str) -> Result<Entity> {
        self.get_with_select(partition_key, row_key, None).await
    }

    /// Reads one entity, or `None` if it does not exist (a missing table is still an error).
    pub async fn get_if_exists(&self, partition_key: &str, row_key: &str) -> Result<Option<Entity>> {
        if_exists(self.get(partition_key, row_key).await)
    }

    /// Reads only the `select`ed properties of one entity (keys, Timestamp and ETag always come).
    pub async fn get_with_select(
        &self,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
    ) -> Result<Entity> {
        self.check_name()?;
        validate_key(KeyName::PartitionKey, partition_key).map_err(Error::invalid)?;
        validate_key(KeyName::RowKey, row_key).map_err(Error::invalid)?;
        let select = select.map(with_system_properties);
        select.as_deref().map(table_core::check_select).transpose()?;
        self.backend.get(&self.name, partition_key, row_key, select.as_deref()).await
    }

    /// A query over this table's entities; see [`Query`] for the options.
    pub fn query(&self) -> Query<Entity> {
        Query::new(self.clone(), Ok)
    }

    /// Submits an entity-group transaction: all operations apply, or none. The rules (one
    /// partition, at most 100 operations, one per entity, at most 4 MiB) are checked before
    /// sending; a failure names the failing operation's index ([`Error::batch_index`]).
    pub async fn submit_transaction(&self, transaction: Transaction) -> Result<Vec<WriteOutcome>> {
        self.check_name()?;
        let operations = transaction.into_operations();
        table_core::validate_batch(&operations)?;
        self.backend.submit_batch(&self.name, operations).await
    }

    /// Applies any number of operations as transactions grouped by partition, at most
    /// `concurrency` transactions in flight. NOT atomic across transactions: the report says
    /// which transactions failed and which succeeded.
    pub async fn bulk(
        &self,
        operations: impl IntoIterator<Item = Operation>,
        concurrency: usize,
    ) -> BulkReport {
        run_bulk(self, operations.into_iter().collect(), concurrency).await
    }
}

/// `true` for a 404 about the entity, not about its table.
pub(crate) fn is_entity_missing(e: &Error) -> bool {
    e.is_not_found() && e.code() != Some(&ErrorCode::TableNotFound)
}

/// `Ok(None)` where the entity does not exist; a missing table stays an error.
pub(crate) fn if_exists<T>(result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if is_entity_missing(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The condition "unchanged since `row` was read": a row read without an ETag is an error,
/// never an unconditional write.
pub(crate) fn read_if_match(row: &Entity) -> Result<IfMatch> {
    require_etag(row.etag.clone()).map(IfMatch::ETag)
}

/// The ETag a successful write must report.
pub(crate) fn require_etag(etag: Option<ETag>) -> Result<ETag> {
    etag.ok_or_else(|| Error::new(ErrorKind::Decode, "the service answered a write without an ETag"))
}

/// The local checks of one operation: keys always, the whole entity for writes.
pub(crate) fn check_operation(operation: &Operation) -> Result<()> {
    validate_operation(operation).map_err(Error::invalid)
}
