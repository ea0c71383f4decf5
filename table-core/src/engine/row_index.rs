//! A hash index of one table's rows by their keys, beside the ordered maps, for point reads.
//!
//! Why: the ordered maps (partitions by key, rows by key within each) are what scans and
//! continuations need, but a point read through them descends two B-trees, with a likely
//! cache miss at every level; on a 100 000-row table that was a third of a typed get. The
//! index finds a row with one probe of a hash table instead.
//!
//! Invariant: the index holds exactly the rows of the ordered maps, each once, under the hash
//! of its `(PartitionKey, RowKey)`. Only [`TableData::store`](super::table::TableData::store)
//! changes either, and it changes both. The rows are shared with the maps (a [`Row`] clone
//! shares its buffer), so the index costs one slot per row, not a copy of it.
//!
//! Keys are hashed with the standard library's randomly keyed hasher: keys come from callers,
//! and a fixed hash would let chosen keys collide and turn every probe into a linear search.

use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use super::row::Row;

/// One table's rows by `(PartitionKey, RowKey)` (see the module docs).
#[derive(Default)]
pub(crate) struct RowIndex {
    rows: HashTable<Row>,
    hasher: RandomState,
}

impl RowIndex {
    /// The row with these keys.
    pub(crate) fn get(&self, partition_key: &str, row_key: &str) -> Option<&Row> {
        self.rows.find(self.hash(partition_key, row_key), has_keys(partition_key, row_key))
    }

    /// Stores `row` under its keys, replacing the row stored there, if any.
    pub(crate) fn insert(&mut self, row: Row) {
        let (hash, hasher) = (self.hash(row.partition_key(), row.row_key()), &self.hasher);
        let rehash = |stored: &Row| hasher.hash_one((stored.partition_key(), stored.row_key()));
        match self.rows.entry(hash, has_keys(row.partition_key(), row.row_key()), rehash) {
            Entry::Occupied(mut stored) => *stored.get_mut() = row,
            Entry::Vacant(slot) => {
                slot.insert(row);
            }
        }
    }

    /// Removes the row with these keys, if one is stored.
    pub(crate) fn remove(&mut self, partition_key: &str, row_key: &str) {
        if let Ok(stored) =
            self.rows.find_entry(self.hash(partition_key, row_key), has_keys(partition_key, row_key))
        {
            stored.remove();
        }
    }

    /// The number of rows indexed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    fn hash(&self, partition_key: &str, row_key: &str) -> u64 {
        // A tuple of two `str`s hashes each with a terminator, so ("ab", "c") and ("a", "bc")
        // hash apart, as they must: they are different rows.
        self.hasher.hash_one((partition_key, row_key))
    }
}

impl std::fmt::Debug for RowIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowIndex").field("rows", &self.rows.len()).finish_non_exhaustive()
    }
}

/// Whether a stored row has these keys.
fn has_keys<'k>(partition_key: &'k str, row_key: &'k str) -> impl Fn(&Row) -> bool + 'k {
    move |row| row.has_keys(partition_key, row_key)
}
