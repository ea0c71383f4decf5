//! Entity-group transactions on one table: all operations or none.
//!
//! Invariant: every operation is checked against the stored rows before any is applied. The
//! batch rules guarantee each operation touches a different row, so an operation's check
//! cannot depend on an earlier operation of the same batch, and checking everything against
//! the pre-batch state is exactly the service's snapshot semantics.

use super::clock::Clock;
use super::table::TableData;
use crate::batch::{Operation, WriteOutcome};
use crate::error::Result;

/// Checks every operation (failing with the first failure's index, naming its entity in
/// `table`), then applies them all in order, each with its own timestamp.
pub(crate) fn apply_batch(
    data: &mut TableData,
    table: &str,
    operations: &[Operation],
    clock: &Clock,
) -> Result<Vec<WriteOutcome>> {
    for (index, op) in operations.iter().enumerate() {
        data.check(op)
            .map_err(|e| e.with_batch_index(index).about(table, Some((op.partition_key(), op.row_key()))))?;
    }
    Ok(operations.iter().map(|op| data.apply(op, clock.tick())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::{Entity, EntityKey, IfMatch};
    use crate::error::ErrorCode;

    #[test]
    fn a_failing_operation_leaves_the_table_untouched() {
        let clock = Clock::default();
        let mut data = TableData::default();
        data.apply(&Operation::Insert(Entity::new("p", "3")), clock.tick());
        let ops = vec![
            Operation::Insert(Entity::new("p", "1")),
            Operation::InsertOrReplace(Entity::new("p", "2")),
            Operation::Delete { key: EntityKey::new("p", "9"), if_match: IfMatch::Any },
        ];
        let e = apply_batch(&mut data, "t", &ops, &clock).expect_err("op 2 fails");
        assert_eq!(e.batch_index(), Some(2));
        assert_eq!(e.code(), Some(&ErrorCode::ResourceNotFound));
        assert!(data.get("p", "1").is_none() && data.get("p", "2").is_none());
    }
}
