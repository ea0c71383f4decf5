//! One table's rows and the per-entity rules of writes (existence, ETags, merge vs replace).
//!
//! Invariants: partitions are ordered by [`SortKey`] of `PartitionKey`, rows within a
//! partition by [`SortKey`] of `RowKey` (the service's UTF-16 ordinal order); no partition is
//! empty; every stored row is a [`Row`] stamped with the timestamp of its last write and the
//! ETag derived from it. Rows share their buffer when cloned, so a query can take a page out
//! of the lock without copying rows it does not return.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use chrono::{DateTime, Utc};

use super::clock::Clock;
use super::order::{SortKey, find, sort_key};
use super::row::Row;
use crate::batch::{Operation, WriteOutcome};
use crate::entity::{ETag, Entity, IfMatch};
use crate::error::{Error, ErrorCode, Result};
use crate::validate::{EntityView, validate_entity};

/// The rows of one partition, by row key.
pub(crate) type Partition = BTreeMap<SortKey, Row>;

/// The rows of one table.
#[derive(Debug, Default)]
pub(crate) struct TableData {
    pub(crate) partitions: BTreeMap<SortKey, Partition>,
}

/// One write as a table applies it: the row it names, what it requires of the stored row, and
/// what it leaves in the row's place. An [`Operation`], or a typed value's fields written
/// whole (`engine::Put`).
pub(crate) trait RowWrite {
    /// What the write stores.
    type Entity: EntityView;

    /// `(PartitionKey, RowKey)` of the row.
    fn key(&self) -> (&str, &str);

    /// What the stored row must be for the write to apply.
    fn requires(&self) -> Requires<'_>;

    /// What the write stores in the row's place; `None` for a delete.
    fn stores(&self) -> Option<Stores<'_, Self::Entity>>;
}

/// What a write requires of the row it names.
pub(crate) enum Requires<'a> {
    /// Nothing: an upsert.
    Nothing,
    /// No row: an insert.
    Absent,
    /// A row that matches the condition: a replace, merge or delete.
    Present(&'a IfMatch),
}

/// What a write stores in its row's place.
pub(crate) enum Stores<'a, E> {
    /// This entity, whatever was stored.
    Entity(&'a E),
    /// This entity's properties over the stored row's, or the entity when none is stored.
    Merged(&'a Entity),
}

impl RowWrite for Operation {
    type Entity = Entity;

    fn key(&self) -> (&str, &str) {
        (self.partition_key(), self.row_key())
    }

    fn requires(&self) -> Requires<'_> {
        match self {
            Operation::Insert(_) => Requires::Absent,
            Operation::Replace { if_match, .. }
            | Operation::Merge { if_match, .. }
            | Operation::Delete { if_match, .. } => Requires::Present(if_match),
            Operation::InsertOrReplace(_) | Operation::InsertOrMerge(_) => Requires::Nothing,
        }
    }

    fn stores(&self) -> Option<Stores<'_, Entity>> {
        match self {
            Operation::Delete { .. } => None,
            Operation::Insert(e) | Operation::Replace { entity: e, .. } | Operation::InsertOrReplace(e) => {
                Some(Stores::Entity(e))
            }
            Operation::Merge { entity: e, .. } | Operation::InsertOrMerge(e) => Some(Stores::Merged(e)),
        }
    }
}

impl TableData {
    /// The row with these keys.
    pub(crate) fn get(&self, partition_key: &str, row_key: &str) -> Option<&Row> {
        find(find(&self.partitions, partition_key)?, row_key)
    }

    /// Checks the write against the stored row ([`check_row`]). Touches nothing.
    pub(crate) fn check(&self, op: &impl RowWrite) -> Result<()> {
        let (partition_key, row_key) = op.key();
        check_row(op, self.get(partition_key, row_key))
    }

    /// Checks one write against its row and, when it passes, applies it stamped with the
    /// next tick of `clock`: the row is looked up once, and checked and written in place.
    /// Errors as [`check`](Self::check); a refused write changes nothing and takes no tick.
    pub(crate) fn execute(&mut self, op: &impl RowWrite, clock: &Clock) -> Result<WriteOutcome> {
        self.at_row(op, |slot| {
            check_row(op, stored(&slot))?;
            Ok(write(slot, op, clock.tick()))
        })
    }

    /// Applies a write that passed [`check`](Self::check), stamping written rows with
    /// `timestamp`. Total: a write that did not pass `check` is applied as its upsert
    /// counterpart rather than panicking.
    pub(crate) fn apply(&mut self, op: &impl RowWrite, timestamp: DateTime<Utc>) -> WriteOutcome {
        self.at_row(op, |slot| write(slot, op, timestamp))
    }

    /// Runs `f` on the map slot of `op`'s row, making its partition if there is none and
    /// removing the partition if `f` leaves it empty (a delete of its last row, or a refused
    /// write to a new partition), so no partition is ever left empty.
    fn at_row<T>(&mut self, op: &impl RowWrite, f: impl FnOnce(Entry<'_, SortKey, Row>) -> T) -> T {
        let (partition_key, row_key) = op.key();
        let pk = sort_key(partition_key);
        let partition = self.partitions.entry(pk.clone()).or_default();
        let out = f(partition.entry(sort_key(row_key)));
        if partition.is_empty() {
            self.partitions.remove(&pk);
        }
        out
    }
}

/// The row in `slot`, if one is stored.
fn stored<'a>(slot: &'a Entry<'_, SortKey, Row>) -> Option<&'a Row> {
    match slot {
        Entry::Occupied(row) => Some(row.get()),
        Entry::Vacant(_) => None,
    }
}

/// Checks the write against `current`, the stored row it names: existence, `If-Match`, and
/// for a merge the limits of the merged entity (the service refuses a merge whose result is
/// too large or has too many properties).
fn check_row(op: &impl RowWrite, current: Option<&Row>) -> Result<()> {
    if let (Some(Stores::Merged(entity)), Some(row)) = (op.stores(), current) {
        validate_entity(&merged(row, entity)).map_err(Error::invalid)?;
    }
    match (op.requires(), current) {
        (Requires::Absent, Some(_)) => Err(Error::service(ErrorCode::EntityAlreadyExists)),
        (Requires::Present(_), None) => Err(Error::service(ErrorCode::ResourceNotFound)),
        (Requires::Present(if_match), Some(row)) => check_if_match(row, if_match),
        (Requires::Absent, None) | (Requires::Nothing, _) => Ok(()),
    }
}

/// Writes `op` into its row's `slot`, stamped with `timestamp`: a delete empties the slot, a
/// merge over a stored row stores the merged entity, any other write stores its entity.
fn write(slot: Entry<'_, SortKey, Row>, op: &impl RowWrite, timestamp: DateTime<Utc>) -> WriteOutcome {
    let Some(stores) = op.stores() else {
        if let Entry::Occupied(row) = slot {
            row.remove();
        }
        return WriteOutcome { etag: None };
    };
    let etag = ETag::from_timestamp(timestamp);
    let new = match (stores, &slot) {
        (Stores::Entity(entity), _) => Row::new(entity, timestamp, &etag),
        (Stores::Merged(entity), Entry::Occupied(row)) => {
            Row::new(&merged(row.get(), entity), timestamp, &etag)
        }
        (Stores::Merged(entity), Entry::Vacant(_)) => Row::new(entity, timestamp, &etag),
    };
    match slot {
        Entry::Occupied(mut row) => {
            row.insert(new);
        }
        Entry::Vacant(slot) => {
            slot.insert(new);
        }
    }
    WriteOutcome { etag: Some(etag) }
}

/// The stored row with `entity`'s properties merged over its own.
fn merged(row: &Row, entity: &Entity) -> Entity {
    let mut merged = row.to_entity(None);
    merged.properties.extend(entity.properties.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged
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
    use crate::entity::EntityKey;

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
    fn a_refused_write_changes_nothing_and_leaves_no_empty_partition() {
        let clock = Clock::default();
        let mut t = TableData::default();
        let replace = Operation::Replace { entity: Entity::new("p", "r"), if_match: IfMatch::Any };
        let e = t.execute(&replace, &clock).expect_err("nothing to replace");
        assert_eq!(e.code(), Some(&ErrorCode::ResourceNotFound));
        assert!(t.partitions.is_empty(), "the partition made to look the row up is gone");

        let first = t.execute(&Operation::Insert(Entity::new("p", "r")), &clock).expect("a fresh key");
        let again = Operation::Insert(Entity::new("p", "r").with("A", 1));
        let e = t.execute(&again, &clock).expect_err("the key exists");
        assert_eq!(e.code(), Some(&ErrorCode::EntityAlreadyExists));
        let kept = t.get("p", "r").expect("still stored").to_entity(None);
        assert_eq!((kept.etag, kept.properties.len()), (first.etag, 0));
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
