//! Entity-group transactions (batches) and the bulk helper that splits any number of
//! operations into transactions.

use futures::StreamExt;
use table_core::{ETag, Entity, EntityKey, IfMatch, MAX_BATCH_OPERATIONS, Operation, Result, WriteOutcome};

use crate::table::TableClient;

/// The operations of one entity-group transaction, in order. All must target one partition;
/// [`TableClient::submit_transaction`] checks the rules before sending.
///
/// A transaction writes entities exactly as given: it does **not** maintain the index rows
/// of a typed table's declared indexes (a `to_entity()` of an indexed type written here leaves
/// its index rows missing). For typed values use a
/// [`TypedTransaction`](crate::TypedTransaction) ([`TypedTable::transaction`](crate::TypedTable::transaction)),
/// which writes their same-partition index rows in the same transaction.
///
/// ```rust
/// use table_client::{Entity, IfMatch, TableServiceClient, Transaction};
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let table = service.create_table("Accounts").await?;
/// let etag = table.insert(Entity::new("acct1", "balance").with("Amount", 100)).await?;
///
/// // Move 30 out of the balance and record it, both or neither; the ETag condition makes the
/// // whole transaction fail if the balance changed since it was read.
/// let batch = Transaction::new()
///     .replace(Entity::new("acct1", "balance").with("Amount", 70), IfMatch::ETag(etag))
///     .insert(Entity::new("acct1", "audit_0001").with("Change", -30));
/// let outcomes = table.submit_transaction(batch).await?;
/// assert_eq!(outcomes.len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transaction {
    operations: Vec<Operation>,
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Self {
        Transaction::default()
    }

    /// Adds any operation.
    #[must_use]
    pub fn push(mut self, operation: Operation) -> Self {
        self.operations.push(operation);
        self
    }

    /// Adds an insert.
    #[must_use]
    pub fn insert(self, entity: Entity) -> Self {
        self.push(Operation::Insert(entity))
    }

    /// Adds a replace conditioned on `if_match`.
    #[must_use]
    pub fn replace(self, entity: Entity, if_match: IfMatch) -> Self {
        self.push(Operation::Replace { entity, if_match })
    }

    /// Adds a merge conditioned on `if_match`.
    #[must_use]
    pub fn merge(self, entity: Entity, if_match: IfMatch) -> Self {
        self.push(Operation::Merge { entity, if_match })
    }

    /// Adds an insert-or-replace.
    #[must_use]
    pub fn insert_or_replace(self, entity: Entity) -> Self {
        self.push(Operation::InsertOrReplace(entity))
    }

    /// Adds an insert-or-merge.
    #[must_use]
    pub fn insert_or_merge(self, entity: Entity) -> Self {
        self.push(Operation::InsertOrMerge(entity))
    }

    /// Adds a delete conditioned on `if_match`.
    #[must_use]
    pub fn delete(self, partition_key: &str, row_key: &str, if_match: IfMatch) -> Self {
        self.push(Operation::Delete { key: EntityKey::new(partition_key, row_key), if_match })
    }

    /// The operations so far.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.operations.len()
    }

    /// `true` when no operation was added.
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty()
    }

    pub(crate) fn into_operations(self) -> Vec<Operation> {
        self.operations
    }
}

impl FromIterator<Operation> for Transaction {
    fn from_iter<I: IntoIterator<Item = Operation>>(iter: I) -> Self {
        Transaction { operations: iter.into_iter().collect() }
    }
}

/// What happened to one transaction of a bulk run.
#[derive(Debug)]
pub struct TransactionReport {
    /// The partition the transaction wrote.
    pub partition_key: String,
    /// Positions of its operations in the input.
    pub operations: Vec<usize>,
    /// The per-operation outcomes, or the error (whose batch index is relative to this
    /// transaction; map it through `operations`).
    pub result: Result<Vec<WriteOutcome>>,
}

/// The outcome of [`TableClient::bulk`]: one report per transaction sent, in input order of
/// their first operation.
#[derive(Debug, Default)]
pub struct BulkReport {
    /// Every transaction.
    pub transactions: Vec<TransactionReport>,
}

impl BulkReport {
    /// `true` when every transaction succeeded.
    pub fn is_success(&self) -> bool {
        self.transactions.iter().all(|t| t.result.is_ok())
    }

    /// The failed transactions.
    pub fn failures(&self) -> impl Iterator<Item = &TransactionReport> {
        self.transactions.iter().filter(|t| t.result.is_err())
    }

    /// The ETag written by input operation `index`, if its transaction succeeded.
    pub fn etag(&self, index: usize) -> Option<&ETag> {
        self.transactions.iter().find_map(|t| {
            let pos = t.operations.iter().position(|&i| i == index)?;
            t.result.as_ref().ok()?.get(pos)?.etag.as_ref()
        })
    }
}

impl TableClient {
    /// Submits an entity-group transaction: all operations apply, or none. The rules (one
    /// partition, at most 100 operations, one per entity, at most 4 MiB) are checked before
    /// sending; a failure names the failing operation's index
    /// ([`Error::batch_index`](table_core::Error::batch_index)).
    pub async fn submit_transaction(&self, transaction: Transaction) -> Result<Vec<WriteOutcome>> {
        self.check_name()?;
        let mut operations = Vec::new();
        for (i, operation) in transaction.into_operations().into_iter().enumerate() {
            operations.push(self.seal(operation).await.map_err(|e| e.with_batch_index(i))?);
        }
        table_core::validate_batch(&operations)?;
        self.backend().submit_batch(self.name(), operations).await
    }

    /// Applies any number of operations as transactions grouped by partition, at most
    /// `concurrency` transactions in flight (0 counts as 1: one at a time). NOT atomic across
    /// transactions: the report says which transactions failed and which succeeded.
    pub async fn bulk(
        &self,
        operations: impl IntoIterator<Item = Operation>,
        concurrency: usize,
    ) -> BulkReport {
        run_bulk(self, operations.into_iter().collect(), concurrency).await
    }
}

/// Splits operations into transactions: grouped by partition (first-seen order), cut at 100
/// operations and wherever an entity repeats, so each transaction obeys the batch rules while
/// the order of operations on one entity is kept. Returns input positions.
pub(crate) fn plan(operations: &[Operation]) -> Vec<(String, Vec<usize>)> {
    let mut partitions: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, op) in operations.iter().enumerate() {
        match partitions.iter_mut().find(|(pk, _)| pk == op.partition_key()) {
            Some((_, ops)) => ops.push(i),
            None => partitions.push((op.partition_key().to_owned(), vec![i])),
        }
    }
    let mut transactions = Vec::new();
    for (pk, ops) in partitions {
        let mut current: Vec<usize> = Vec::new();
        for i in ops {
            let repeats = current.iter().any(|&j| operations[j].row_key() == operations[i].row_key());
            if current.len() == MAX_BATCH_OPERATIONS || repeats {
                transactions.push((pk.clone(), std::mem::take(&mut current)));
            }
            current.push(i);
        }
        if !current.is_empty() {
            transactions.push((pk, current));
        }
    }
    transactions
}

/// One transaction of a bulk run: its partition, input positions and operations.
struct Planned {
    partition_key: String,
    positions: Vec<usize>,
    operations: Vec<Operation>,
}

/// Runs the plan: transactions of one partition one after another (so later operations on an
/// entity follow earlier ones), different partitions concurrently up to `concurrency`.
pub(crate) async fn run_bulk(
    table: &TableClient,
    operations: Vec<Operation>,
    concurrency: usize,
) -> BulkReport {
    let planned = plan(&operations);
    let mut slots: Vec<Option<Operation>> = operations.into_iter().map(Some).collect();
    // Group the planned transactions by partition, keeping their order within a partition.
    let mut per_partition: Vec<Vec<Planned>> = Vec::new();
    for (partition_key, positions) in planned {
        let operations = positions.iter().filter_map(|&i| slots[i].take()).collect();
        let planned = Planned { partition_key, positions, operations };
        match per_partition
            .iter_mut()
            .find(|g| g.first().is_some_and(|p| p.partition_key == planned.partition_key))
        {
            Some(group) => group.push(planned),
            None => per_partition.push(vec![planned]),
        }
    }
    let groups = per_partition.into_iter().map(|group| {
        let table = table.clone();
        async move {
            let mut reports = Vec::new();
            for Planned { partition_key, positions, operations } in group {
                let result = table.submit_transaction(operations.into_iter().collect()).await;
                reports.push(TransactionReport { partition_key, operations: positions, result });
            }
            reports
        }
    });
    let reports: Vec<Vec<TransactionReport>> =
        futures::stream::iter(groups).buffer_unordered(concurrency.max(1)).collect().await;
    let mut transactions: Vec<TransactionReport> = reports.into_iter().flatten().collect();
    transactions.sort_by_key(|t| t.operations.first().copied());
    BulkReport { transactions }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ins(pk: &str, rk: &str) -> Operation {
        Operation::Insert(Entity::new(pk, rk))
    }

    #[test]
    fn plan_groups_by_partition_and_cuts_at_100_and_repeats() {
        let mut ops: Vec<Operation> = (0..250).map(|i| ins("a", &format!("{i:03}"))).collect();
        ops.push(ins("b", "x"));
        ops.push(ins("a", "249"));
        let plan = plan(&ops);
        let sizes: Vec<(&str, usize)> = plan.iter().map(|(pk, p)| (pk.as_str(), p.len())).collect();
        assert_eq!(sizes, vec![("a", 100), ("a", 100), ("a", 50), ("a", 1), ("b", 1)]);
        assert_eq!(plan[3].1, vec![251]);
    }
}
