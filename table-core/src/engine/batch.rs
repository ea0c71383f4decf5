//! Entity-group transactions on one table: all operations or none.
//!
//! Invariant: every operation is checked against the stored rows before any is applied. The
//! batch rules guarantee each operation touches a different row, so an operation's check
//! cannot depend on an earlier operation of the same batch, and checking everything against
//! the pre-batch state is exactly the service's snapshot semantics.

use super::clock::Clock;
use super::journal::{self, Change, Journal, RowChange};
use super::row::RowSize;
use super::table::{Requires, RowWrite, Stores, TableData};
use crate::batch::{Operation, WriteOutcome, validate_batch_with};
use crate::entity::Entity;
use crate::error::Result;

/// One operation of a batch, with its entity's share of a row as the walk that checked it
/// summed it, so that a whole entity's row is not sized by a walk of its own. Made only by
/// [`checked_batch`]: a size that is not its entity's would leave the row short.
pub(crate) struct BatchWrite<'a> {
    /// The operation.
    operation: &'a Operation,
    /// Its entity's properties' share of a row (empty for a delete).
    size: RowSize,
}

/// A batch's operations once they pass the batch rules ([`validate_batch`]), each with its
/// entity's share of a row, summed by the walk that checked the entity.
///
/// [`validate_batch`]: crate::validate_batch
pub(crate) fn checked_batch(operations: &[Operation]) -> Result<Vec<BatchWrite<'_>>> {
    let sizes = validate_batch_with::<RowSize>(operations)?;
    // One size per operation, in order: `validate_batch_with` answers all or fails.
    Ok(operations.iter().zip(sizes).map(|(operation, size)| BatchWrite { operation, size }).collect())
}

impl RowWrite for BatchWrite<'_> {
    type Entity = Entity;

    fn key(&self) -> (&str, &str) {
        self.operation.key()
    }

    fn requires(&self) -> Requires<'_> {
        self.operation.requires()
    }

    fn stores(&self) -> Option<Stores<'_, Entity>> {
        // A merge's row is the merged entity's, which the check did not walk.
        match self.operation.stores()? {
            Stores::Entity(entity) => Some(Stores::Sized { entity, size: self.size }),
            stores => Some(stores),
        }
    }
}

/// Checks every operation (failing with the first failure's index, naming its entity in
/// `table`), then applies them all in order, each with its own timestamp. With a `journal`,
/// the rows the batch leaves are recorded as one change before any is stored, and nothing is
/// stored when it refuses them.
pub(crate) fn apply_batch(
    data: &mut TableData,
    table: &str,
    operations: &[BatchWrite<'_>],
    clock: &Clock,
    journal: Option<&dyn Journal>,
) -> Result<Vec<WriteOutcome>> {
    for (index, op) in operations.iter().enumerate() {
        data.check(op).map_err(|e| e.with_batch_index(index).about(table, Some(op.key())))?;
    }
    let Some(journal) = journal else {
        // Without a journal, each row is stored as soon as it is made: no list of rows. (An
        // `Entity` always encodes, so no failure can come after a row is stored.)
        return operations.iter().map(|op| data.apply(op, clock.tick())).collect();
    };
    let prepared = operations.iter().map(|op| data.prepare(op, clock.tick())).collect::<Result<Vec<_>>>()?;
    let rows = prepared
        .iter()
        .map(|(key, row, _)| RowChange::of((key.partition_key(), key.row_key()), row.as_ref()))
        .collect();
    journal::record(journal, &Change::Rows { table: table.to_owned(), rows })?;
    Ok(prepared
        .into_iter()
        .map(|(key, row, outcome)| {
            data.store(&key, row);
            outcome
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::{EntityKey, IfMatch};
    use crate::error::ErrorCode;

    #[test]
    fn a_failing_operation_leaves_the_table_untouched() {
        let clock = Clock::default();
        let mut data = TableData::default();
        data.apply(&Operation::Insert(Entity::new("p", "3")), clock.tick()).expect("an operation encodes");
        let ops = vec![
            Operation::Insert(Entity::new("p", "1")),
            Operation::InsertOrReplace(Entity::new("p", "2")),
            Operation::Delete { key: EntityKey::new("p", "9"), if_match: IfMatch::Any },
        ];
        let writes = checked_batch(&ops).expect("the batch rules hold");
        let e = apply_batch(&mut data, "t", &writes, &clock, None).expect_err("op 2 fails");
        assert_eq!(e.batch_index(), Some(2));
        assert_eq!(e.code(), Some(&ErrorCode::ResourceNotFound));
        assert!(data.get("p", "1").is_none() && data.get("p", "2").is_none());
    }
}
