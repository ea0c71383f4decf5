//! One table's rows and the per-entity rules of writes (existence, ETags, merge vs replace).
//!
//! Invariants: partitions are ordered by [`SortKey`] of `PartitionKey`, rows within a
//! partition by [`SortKey`] of `RowKey` (the service's UTF-16 ordinal order); no partition is
//! empty; every stored row is a [`Row`] stamped with the timestamp of its last write and the
//! ETag derived from it. Rows share their buffer when cloned, so a query can take a page out
//! of the lock without copying rows it does not return.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::order::{SortKey, encode, sort_key};
use super::row::Row;
use crate::batch::{Operation, WriteOutcome};
use crate::entity::{ETag, IfMatch};
use crate::error::{Error, ErrorCode, Result};
use crate::validate::validate_entity;

/// The rows of one partition, by row key.
pub(crate) type Partition = BTreeMap<SortKey, Row>;

/// The rows of one table.
#[derive(Debug, Default)]
pub(crate) struct TableData {
    pub(crate) partitions: BTreeMap<SortKey, Partition>,
}

impl TableData {
    /// The row with these keys.
    pub(crate) fn get(&self, partition_key: &str, row_key: &str) -> Option<&Row> {
        self.partitions.get(encode(partition_key).as_ref())?.get(encode(row_key).as_ref())
    }

    /// Checks the operation against the stored row: existence, `If-Match`, and for a merge the
    /// limits of the merged entity (the service refuses a merge whose result is too large or
    /// has too many properties). Touches nothing.
    pub(crate) fn check(&self, op: &Operation) -> Result<()> {
        let current = self.get(op.partition_key(), op.row_key());
        if let (Operation::Merge { entity, .. } | Operation::InsertOrMerge(entity), Some(row)) = (op, current)
        {
            let mut merged = row.to_entity(None);
            merged.properties.extend(entity.properties.iter().map(|(k, v)| (k.clone(), v.clone())));
            validate_entity(&merged).map_err(Error::invalid)?;
        }
        match op {
            Operation::Insert(_) if current.is_some() => Err(Error::service(ErrorCode::EntityAlreadyExists)),
            Operation::Replace { if_match, .. }
            | Operation::Merge { if_match, .. }
            | Operation::Delete { if_match, .. } => match current {
                None => Err(Error::service(ErrorCode::ResourceNotFound)),
                Some(row) => check_if_match(row, if_match),
            },
            _ => Ok(()),
        }
    }

    /// Applies an operation that passed [`check`](Self::check), stamping written rows with
    /// `timestamp`. Total: an operation that did not pass `check` is applied as its upsert
    /// counterpart rather than panicking.
    pub(crate) fn apply(&mut self, op: &Operation, timestamp: DateTime<Utc>) -> WriteOutcome {
        let (written, merge) = match op {
            Operation::Delete { key, .. } => {
                let pk = encode(&key.partition_key);
                if let Some(partition) = self.partitions.get_mut(pk.as_ref()) {
                    partition.remove(encode(&key.row_key).as_ref());
                    if partition.is_empty() {
                        self.partitions.remove(pk.as_ref());
                    }
                }
                return WriteOutcome { etag: None };
            }
            Operation::Insert(e) | Operation::Replace { entity: e, .. } | Operation::InsertOrReplace(e) => {
                (e, false)
            }
            Operation::Merge { entity: e, .. } | Operation::InsertOrMerge(e) => (e, true),
        };
        let etag = ETag::from_timestamp(timestamp);
        let partition = self.partitions.entry(sort_key(&written.partition_key)).or_default();
        let rk = sort_key(&written.row_key);
        // Only a merge reads the old row: replacing writes skip that lookup.
        let old = if merge { partition.get(&rk) } else { None };
        let row = match old {
            Some(old) => {
                let mut merged = old.to_entity(None);
                merged.properties.extend(written.properties.iter().map(|(k, v)| (k.clone(), v.clone())));
                Row::new(&merged, timestamp, &etag)
            }
            _ => Row::new(written, timestamp, &etag),
        };
        partition.insert(rk, row);
        WriteOutcome { etag: Some(etag) }
    }
}

fn check_if_match(row: &Row, if_match: &IfMatch) -> Result<()> {
    match if_match {
        IfMatch::Any => Ok(()),
        IfMatch::ETag(expected) if row.etag() == expected.as_str() => Ok(()),
        IfMatch::ETag(_) => Err(Error::service(ErrorCode::UpdateConditionNotSatisfied)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::{Entity, EntityKey};

    fn ts(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).expect("valid instant")
    }

    #[test]
    fn deleting_the_last_row_removes_its_partition() {
        let mut t = TableData::default();
        t.apply(&Operation::Insert(Entity::new("p", "r")), ts(1));
        assert_eq!(t.partitions.len(), 1);
        let outcome =
            t.apply(&Operation::Delete { key: EntityKey::new("p", "r"), if_match: IfMatch::Any }, ts(2));
        assert_eq!(outcome.etag, None);
        assert!(t.partitions.is_empty());
    }

    #[test]
    fn stored_rows_carry_their_timestamp_and_etag() {
        let mut t = TableData::default();
        let outcome = t.apply(&Operation::InsertOrMerge(Entity::new("p", "r")), ts(5));
        let row = t.get("p", "r").expect("stored").to_entity(None);
        assert_eq!(row.timestamp, Some(ts(5)));
        assert_eq!(row.etag, outcome.etag);
        assert_eq!(row.etag, Some(ETag::from_timestamp(ts(5))));
    }
}
