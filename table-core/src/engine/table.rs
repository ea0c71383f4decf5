//! One table's rows and the per-entity rules of writes (existence, ETags, merge vs replace).
//!
//! Invariants: partitions are ordered by [`SortKey`] of `PartitionKey`, rows within a
//! partition by [`SortKey`] of `RowKey` (the service's UTF-16 ordinal order); no partition is
//! empty; every stored row is a [`Row`] stamped with the timestamp of its last write and the
//! ETag derived from it. Rows share their buffer when cloned, so a query can take a page out
//! of the lock without copying rows it does not return. The same rows are indexed by key for
//! point reads (`row_index`); [`store_at`] is the only place rows change, and it
//! changes the maps and the index together.

use std::collections::BTreeMap;

use super::clock::{Clock, Stamp};
use super::order::{SortKey, sort_key};
use super::row::{Row, RowSize};
use super::row_index::{IndexKey, IndexPlace, RowIndex};
use crate::batch::{Operation, WriteOutcome};
use crate::entity::{Entity, IfMatch};
use crate::error::{Error, ErrorCode, Result, Violation};
use crate::validate::{EntityView, validate_entity};

/// The rows of one partition, by row key.
pub(crate) type Partition = BTreeMap<SortKey, Row>;

/// The rows of one table: ordered for scans, and hashed by key for point reads.
#[derive(Debug, Default)]
pub(crate) struct TableData {
    partitions: BTreeMap<SortKey, Partition>,
    /// The rows of `partitions` again (see `row_index`); changed only by [`store_at`].
    index: RowIndex,
}

/// One write as a table applies it: the row it names, what it requires of the stored row, and
/// what it leaves in the row's place. An [`Operation`], or a typed value written whole
/// (`engine::Put`).
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
#[derive(Clone, Copy)]
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
    /// [`Entity`](Self::Entity), with its properties' share of the row already summed.
    Sized {
        /// The entity.
        entity: &'a E,
        /// Its properties' share of the row ([`Row::sized`]).
        size: RowSize,
    },
    /// This entity's properties over the stored row's, or the entity when none is stored.
    Merged(&'a Entity),
}

/// A write lent: what `Engine::execute` and `Engine::put` hand their table.
impl<W: RowWrite + ?Sized> RowWrite for &W {
    type Entity = W::Entity;

    fn key(&self) -> (&str, &str) {
        (**self).key()
    }

    fn requires(&self) -> Requires<'_> {
        (**self).requires()
    }

    fn stores(&self) -> Option<Stores<'_, W::Entity>> {
        (**self).stores()
    }
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

/// A write of one entity the caller keeps: [`Engine`](super::Engine)'s insert, replace,
/// merge and upserts, and `execute` of the operations that say the same. They borrow the
/// entity: the engine copies what it stores, so the caller frees the entity (or sends it
/// again) when it chooses.
pub(crate) struct EntityWrite<'a> {
    /// What is written.
    pub(crate) entity: &'a Entity,
    /// What the stored row must be.
    pub(crate) requires: Requires<'a>,
    /// How the entity is stored.
    pub(crate) storing: Storing,
}

/// How an [`EntityWrite`] stores its entity.
#[derive(Clone, Copy)]
pub(crate) enum Storing {
    /// Whole, its properties' share of the row summed by the walk that checked it
    /// (`validate_entity_with`), so that the row is not sized by a walk of its own.
    Whole(RowSize),
    /// Its properties merged into the stored row's (merge, insert-or-merge).
    Merged,
}

impl RowWrite for EntityWrite<'_> {
    type Entity = Entity;

    fn key(&self) -> (&str, &str) {
        (&self.entity.partition_key, &self.entity.row_key)
    }

    fn requires(&self) -> Requires<'_> {
        self.requires
    }

    fn stores(&self) -> Option<Stores<'_, Entity>> {
        Some(match self.storing {
            Storing::Whole(size) => Stores::Sized { entity: self.entity, size },
            Storing::Merged => Stores::Merged(self.entity),
        })
    }
}

impl TableData {
    /// The partitions in key order, each with its rows in key order.
    pub(crate) fn partitions(&self) -> &BTreeMap<SortKey, Partition> {
        &self.partitions
    }

    /// The row with these keys.
    pub(crate) fn get(&self, partition_key: &str, row_key: &str) -> Option<&Row> {
        self.index.get(&self.key(partition_key, row_key))
    }

    /// These keys, hashed once for the lookup and the [`store`](Self::store) of one operation.
    pub(crate) fn key<'k>(&self, partition_key: &'k str, row_key: &'k str) -> IndexKey<'k> {
        self.index.key(partition_key, row_key)
    }

    /// Checks the write against the stored row ([`check_row`]). Touches nothing.
    pub(crate) fn check(&self, op: &impl RowWrite) -> Result<()> {
        let (partition_key, row_key) = op.key();
        check_row(op, self.get(partition_key, row_key))
    }

    /// Checks one write against its row and, when it passes, hands the row it would store
    /// (`None`: removed) to `record` and, when that accepts it, applies it stamped with the
    /// next tick of `clock`: the row's place in the index is found once, for the lookup and
    /// the store. Errors as [`check`](Self::check), then
    /// `record`'s; a refused write changes nothing, and a write refused by its check takes no
    /// tick.
    // This and `write` are `#[inline]`: every single write runs both once, and LLVM stopped
    // inlining this one into the typed write when `Engine::write` came to take the write its
    // check hands over. A typed insert cost 4,336 instructions with no hint, 4,361 with this
    // one alone, 4,324 with both (4,314 before; ops_probe `probe_inserts`).
    #[inline]
    pub(crate) fn execute(
        &mut self,
        op: &impl RowWrite,
        clock: &Clock,
        record: impl FnOnce(Option<&Row>) -> Result<()>,
    ) -> Result<WriteOutcome> {
        let (partition_key, row_key) = op.key();
        let key = self.key(partition_key, row_key);
        let place = self.index.place(&key);
        let current = place.row();
        check_row(op, current)?;
        let (row, outcome) = write(current, op, clock.tick())?;
        record(row.as_ref())?;
        store_at(&mut self.partitions, place, &key, row);
        Ok(outcome)
    }

    /// Applies a write that passed [`check`](Self::check), stamping written rows with
    /// `timestamp`: a write that did not pass `check` is applied as its upsert counterpart
    /// rather than panicking. Fails, changing nothing, only as [`write`] does.
    pub(crate) fn apply(&mut self, op: &impl RowWrite, timestamp: Stamp) -> Result<WriteOutcome> {
        let (key, row, outcome) = self.prepare(op, timestamp)?;
        self.store(&key, row);
        Ok(outcome)
    }

    /// What [`apply`](Self::apply) would do, without doing it: the row's hashed key, the row
    /// it would store there (`None`: removed) and the outcome, for a caller that records the
    /// rows of a whole batch before it stores any.
    pub(crate) fn prepare<'k>(
        &self,
        op: &'k impl RowWrite,
        timestamp: Stamp,
    ) -> Result<(IndexKey<'k>, Option<Row>, WriteOutcome)> {
        let (partition_key, row_key) = op.key();
        let key = self.key(partition_key, row_key);
        let (row, outcome) = write(self.index.get(&key), op, timestamp)?;
        Ok((key, row, outcome))
    }

    /// Stores `row` as [`store`](Self::store) does, its keys read from the row itself; for a
    /// row restored from a journal or snapshot.
    pub(crate) fn restore(&mut self, row: Row) {
        // A clone shares the buffer: it only lends the keys.
        let keys = row.clone();
        let key = self.key(keys.partition_key(), keys.row_key());
        self.store(&key, Some(row));
    }

    /// Removes the row with these keys, if any; for a removal replayed from a journal.
    pub(crate) fn remove(&mut self, partition_key: &str, row_key: &str) {
        let key = self.key(partition_key, row_key);
        self.store(&key, None);
    }

    /// Puts `row` under `key` (`None`: removes the row stored there), in the ordered maps and
    /// the index alike ([`store_at`], the one place rows change). `row`'s keys must be `key`'s.
    pub(crate) fn store(&mut self, key: &IndexKey<'_>, row: Option<Row>) {
        store_at(&mut self.partitions, self.index.place(key), key, row);
    }
}

/// Puts `row` under `key` (`None`: removes the row stored there) in `partitions` and at
/// `place`, `key`'s place in the same table's index: the one place rows change, for
/// [`TableData::store`] and for a write that found its row's place when it looked the row up.
/// Makes the partition of a new row, and removes a partition whose last row goes, so no
/// partition is ever empty.
///
/// None of its map calls can panic (short of allocation failure, which aborts), so the maps
/// and the index never disagree, even under a poisoned lock.
fn store_at(
    partitions: &mut BTreeMap<SortKey, Partition>,
    place: IndexPlace<'_>,
    key: &IndexKey<'_>,
    row: Option<Row>,
) {
    let (pk, rk) = (sort_key(key.partition_key()), sort_key(key.row_key()));
    match row {
        Some(row) => {
            place.put(Some(row.clone()));
            // A write nearly always finds its partition: looked up by reference, made only
            // when missing (cheaper than `entry(pk).or_default()`, a twentieth of an insert).
            match partitions.get_mut(&pk) {
                Some(partition) => {
                    partition.insert(rk, row);
                }
                None => {
                    partitions.insert(pk, Partition::from([(rk, row)]));
                }
            }
        }
        None => {
            place.put(None);
            if let Some(partition) = partitions.get_mut(&pk) {
                partition.remove(&rk);
                if partition.is_empty() {
                    partitions.remove(&pk);
                }
            }
        }
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

/// What `op` makes of its row, `current`, stamped with `timestamp`: the row to store (`None`
/// for a delete) and the outcome. A merge over a stored row stores the merged entity, any
/// other write stores its entity. Fails ([`Violation::UnstableValues`]) only for a typed value
/// whose properties changed since its write checked them ([`Row::sized`]); an [`Entity`]
/// always encodes.
#[inline]
fn write(current: Option<&Row>, op: &impl RowWrite, timestamp: Stamp) -> Result<(Option<Row>, WriteOutcome)> {
    let Some(stores) = op.stores() else {
        return Ok((None, WriteOutcome { etag: None }));
    };
    let etag = timestamp.etag();
    let row = match (stores, current) {
        (Stores::Entity(entity), _) => Row::new(entity, timestamp, &etag),
        (Stores::Sized { entity, size }, _) => Row::sized(entity, size, timestamp, &etag)
            .ok_or_else(|| Error::invalid(Violation::UnstableValues))?,
        (Stores::Merged(entity), Some(current)) => Row::new(&merged(current, entity), timestamp, &etag),
        (Stores::Merged(entity), None) => Row::new(entity, timestamp, &etag),
    };
    Ok((Some(row), WriteOutcome { etag: Some(etag) }))
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
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::engine::batch::{apply_batch, checked_batch};
    use chrono::{DateTime, Utc};

    use crate::entity::{ETag, EntityKey};

    fn ts(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).expect("valid instant")
    }

    #[test]
    fn deleting_the_last_row_removes_its_partition() {
        let mut t = TableData::default();
        t.apply(&Operation::Insert(Entity::new("p", "r")), ts(1).into()).expect("an operation encodes");
        assert_eq!(t.partitions.len(), 1);
        let outcome = t.apply(
            &Operation::Delete { key: EntityKey::new("p", "r"), if_match: IfMatch::Any },
            ts(2).into(),
        );
        assert_eq!(outcome.expect("a delete").etag, None);
        assert!(t.partitions.is_empty());
    }

    #[test]
    fn a_refused_write_changes_nothing_and_leaves_no_empty_partition() {
        let clock = Clock::default();
        let mut t = TableData::default();
        let replace = Operation::Replace { entity: Entity::new("p", "r"), if_match: IfMatch::Any };
        let e = t.execute(&replace, &clock, |_| Ok(())).expect_err("nothing to replace");
        assert_eq!(e.code(), Some(&ErrorCode::ResourceNotFound));
        assert!(t.partitions.is_empty(), "the partition made to look the row up is gone");

        let first =
            t.execute(&Operation::Insert(Entity::new("p", "r")), &clock, |_| Ok(())).expect("a fresh key");
        let again = Operation::Insert(Entity::new("p", "r").with("A", 1));
        let e = t.execute(&again, &clock, |_| Ok(())).expect_err("the key exists");
        assert_eq!(e.code(), Some(&ErrorCode::EntityAlreadyExists));
        let kept = t.get("p", "r").expect("still stored").to_entity(None);
        assert_eq!((kept.etag, kept.properties.len()), (first.etag, 0));
    }

    #[test]
    fn stored_rows_carry_their_timestamp_and_etag() {
        let mut t = TableData::default();
        let outcome = t
            .apply(&Operation::InsertOrMerge(Entity::new("p", "r")), ts(5).into())
            .expect("an operation encodes");
        let row = t.get("p", "r").expect("stored").to_entity(None);
        assert_eq!(row.timestamp, Some(ts(5)));
        assert_eq!(row.etag, outcome.etag);
        assert_eq!(row.etag, Some(ETag::from_timestamp(ts(5))));
    }

    /// Panics unless the index holds exactly the rows of the ordered maps, each filed under
    /// its own keys, and no partition is empty.
    fn assert_index_agrees(t: &TableData) {
        let mut rows = 0;
        for (pk, partition) in &t.partitions {
            assert!(!partition.is_empty(), "an empty partition");
            for (rk, row) in partition {
                rows += 1;
                let (partition_key, row_key) = (row.partition_key(), row.row_key());
                assert_eq!((pk, rk), (&sort_key(partition_key), &sort_key(row_key)), "filed under its keys");
                let indexed = t.get(partition_key, row_key).expect("every stored row is indexed");
                assert_eq!(indexed.to_entity(None), row.to_entity(None), "the index holds the same row");
            }
        }
        assert_eq!(t.index.len(), rows, "the index holds no other rows");
    }

    /// Keys that take every path of the key encoding: plain ASCII, a character the UTF-16
    /// order moves, and a key too long to be kept inline.
    fn key_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("a".to_owned()),
            Just("b".to_owned()),
            Just("\u{e000}z".to_owned()),
            Just("k".repeat(40))
        ]
    }

    /// How an operation names the stored version: any, the current one, or one long gone.
    #[derive(Debug, Clone, Copy)]
    enum Version {
        Any,
        Current,
        Stale,
    }

    /// One operation's shape; the keys and the version are filled in per step.
    #[derive(Debug, Clone, Copy)]
    enum Kind {
        Insert,
        Replace(Version),
        Merge(Version),
        InsertOrReplace,
        InsertOrMerge,
        Delete(Version),
    }

    fn kind_strategy() -> impl Strategy<Value = Kind> {
        let version = prop_oneof![Just(Version::Any), Just(Version::Current), Just(Version::Stale)];
        prop_oneof![
            Just(Kind::Insert),
            version.clone().prop_map(Kind::Replace),
            version.clone().prop_map(Kind::Merge),
            Just(Kind::InsertOrReplace),
            Just(Kind::InsertOrMerge),
            version.prop_map(Kind::Delete),
        ]
    }

    /// The operation `kind` on (`pk`, `rk`), its `If-Match` read from `t`; and whether it
    /// must pass its check against `t`.
    fn operation(t: &TableData, kind: Kind, pk: &str, rk: &str, step: usize) -> (Operation, bool) {
        let stored = t.get(pk, rk).map(|row| ETag::new(row.etag()));
        let if_match = |version| match (version, &stored) {
            (Version::Any, _) => (IfMatch::Any, stored.is_some()),
            (Version::Current, Some(etag)) => (IfMatch::ETag(etag.clone()), true),
            (Version::Current | Version::Stale, _) => (IfMatch::ETag(ETag::from_timestamp(ts(0))), false),
        };
        let entity =
            Entity::new(pk, rk).with(if step.is_multiple_of(2) { "Even" } else { "Odd" }, step as i64);
        match kind {
            Kind::Insert => (Operation::Insert(entity), stored.is_none()),
            Kind::Replace(v) => {
                let (if_match, passes) = if_match(v);
                (Operation::Replace { entity, if_match }, passes)
            }
            Kind::Merge(v) => {
                let (if_match, passes) = if_match(v);
                (Operation::Merge { entity, if_match }, passes)
            }
            Kind::InsertOrReplace => (Operation::InsertOrReplace(entity), true),
            Kind::InsertOrMerge => (Operation::InsertOrMerge(entity), true),
            Kind::Delete(v) => {
                let (if_match, passes) = if_match(v);
                (Operation::Delete { key: EntityKey::new(pk, rk), if_match }, passes)
            }
        }
    }

    /// The keys `ops` leave stored, from `keys` before them, when they all apply.
    fn keys_after(mut keys: BTreeSet<(String, String)>, ops: &[Operation]) -> BTreeSet<(String, String)> {
        for op in ops {
            let key = (op.partition_key().to_owned(), op.row_key().to_owned());
            match op {
                Operation::Delete { .. } => keys.remove(&key),
                _ => keys.insert(key),
            };
        }
        keys
    }

    proptest! {
        /// Random single writes and batches (same partition, distinct rows), many of which
        /// fail: after each, the index agrees with the ordered maps, and exactly the keys
        /// a model of the rules expects are stored (a failing batch leaves both untouched).
        #[test]
        fn the_index_agrees_with_the_ordered_maps(
            steps in proptest::collection::vec(
                (key_strategy(), proptest::collection::vec((key_strategy(), kind_strategy()), 1..5)),
                1..40,
            ),
        ) {
            let (clock, mut t) = (Clock::default(), TableData::default());
            let mut model = BTreeSet::new();
            for (step, (pk, writes)) in steps.into_iter().enumerate() {
                let mut seen = BTreeSet::new();
                let mut checked: Vec<(Operation, bool)> = writes
                    .into_iter()
                    .filter(|(rk, _)| seen.insert(rk.clone()))
                    .map(|(rk, kind)| operation(&t, kind, &pk, &rk, step))
                    .collect();
                let passes = checked.iter().all(|(_, passes)| *passes);
                if checked.len() == 1 {
                    let (op, _) = checked.remove(0);
                    let result = t.execute(&op, &clock, |_| Ok(()));
                    prop_assert_eq!(result.is_ok(), passes, "{:?}", op);
                    checked.push((op, passes));
                } else {
                    let ops: Vec<Operation> = checked.iter().map(|(op, _)| op.clone()).collect();
                    let writes = checked_batch(&ops).expect("the batch rules hold");
                    prop_assert_eq!(apply_batch(&mut t, "T", &writes, &clock, None).is_ok(), passes);
                }
                if passes {
                    let ops: Vec<Operation> = checked.into_iter().map(|(op, _)| op).collect();
                    model = keys_after(model, &ops);
                }
                assert_index_agrees(&t);
                let stored: BTreeSet<(String, String)> = t
                    .partitions
                    .values()
                    .flat_map(|p| p.values())
                    .map(|row| (row.partition_key().to_owned(), row.row_key().to_owned()))
                    .collect();
                prop_assert_eq!(&stored, &model);
            }
        }
    }
}
