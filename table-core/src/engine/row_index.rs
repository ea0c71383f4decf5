//! A hash index of one table's rows by their keys, beside the ordered maps, for point reads.
//!
//! Why: the ordered maps (partitions by key, rows by key within each) are what scans and
//! continuations need, but a point read through them descends two B-trees, with a likely
//! cache miss at every level; on a 100 000-row table that was a third of a typed get. The
//! index finds a row with one probe of a hash table instead.
//!
//! Invariant: the index holds exactly the rows of the ordered maps, each once, under the hash
//! of its `(PartitionKey, RowKey)`. Only the table's `store_at` changes either, and it changes
//! both. The rows are shared with the maps (a [`Row`] clone
//! shares its buffer), so the index costs one slot per row, not a copy of it: 24 bytes (the
//! hash and the row's pointer) and a control byte per bucket, at most 7/8 of the buckets
//! used, so 29 to 57 bytes per row (33 at 100 000 rows), against a few hundred for the row
//! itself and its place in the ordered maps.
//!
//! Keys are hashed with foldhash keyed by secrets drawn from the operating system's random
//! source ([`keyed_hasher`]). Keys come from callers, and a hash whose collisions do not
//! depend on a secret would let chosen keys collide and turn every probe into a linear search.
//! The standard library's SipHash is keyed the same way and built to resist that even from
//! an attacker who sees many hashes; foldhash claims less (no collisions known that do not
//! depend on its seeds, but no defence against an attacker who learns the seeds by studying
//! the process's timing over a long time), and costs a sixth of SipHash here: SipHash was
//! about 300 instructions of every point read and every write. Its seeds never leave the
//! process, and its callers are the process's own code or, through table-server, the clients
//! of a local emulator; learning the seeds from timing would take long, close measurement of
//! one process, so the weaker claim is the one this needs.
//! A key is hashed once per operation ([`IndexKey`]), and each slot keeps its row's hash, so
//! growing the table never hashes a row again.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;

use foldhash::SharedSeed;
use foldhash::fast::SeedableRandomState;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use super::row::{Row, touch_all};

/// One table's rows by `(PartitionKey, RowKey)` (see the module docs).
pub(crate) struct RowIndex {
    slots: HashTable<Slot>,
    hasher: SeedableRandomState,
}

impl Default for RowIndex {
    fn default() -> Self {
        RowIndex { slots: HashTable::new(), hasher: keyed_hasher() }
    }
}

/// A foldhash hasher keyed by secrets from the operating system's random source: the seed
/// shared by every index of the process, drawn once, and one of the index's own. foldhash's
/// own random seeds come from addresses and the clock, which an attacker may guess; the
/// standard library's keyed SipHash draws its keys from the OS, so a hash of it under fresh
/// keys is such a secret.
fn keyed_hasher() -> SeedableRandomState {
    static SHARED: OnceLock<SharedSeed> = OnceLock::new();
    let secret = || RandomState::new().hash_one(0u64);
    let shared = SHARED.get_or_init(|| SharedSeed::from_u64(secret()));
    SeedableRandomState::with_seed(secret(), shared)
}

/// A stored row and the hash of its keys.
struct Slot {
    hash: u64,
    row: Row,
}

/// An entity's keys, hashed for one [`RowIndex`] ([`RowIndex::key`]): an operation that looks
/// its row up and then stores it hashes the keys once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IndexKey<'k> {
    hash: u64,
    partition_key: &'k str,
    row_key: &'k str,
}

impl<'k> IndexKey<'k> {
    /// The `PartitionKey`.
    pub(crate) fn partition_key(&self) -> &'k str {
        self.partition_key
    }

    /// The `RowKey`.
    pub(crate) fn row_key(&self) -> &'k str {
        self.row_key
    }

    /// Whether `slot` holds the row with these keys.
    fn matches(&self, slot: &Slot) -> bool {
        slot.hash == self.hash && slot.row.has_keys(self.partition_key, self.row_key)
    }
}

impl RowIndex {
    /// These keys, hashed for this index.
    // This and `get`, `put` are `#[inline]`: every read and write calls them once, and whether
    // LLVM inlined them otherwise changed with edits elsewhere in the crate (as calls they cost
    // a typed get about 17 instructions, an engine insert about 18; ops_probe).
    #[inline]
    pub(crate) fn key<'k>(&self, partition_key: &'k str, row_key: &'k str) -> IndexKey<'k> {
        // A tuple of two `str`s hashes each with a terminator, so ("ab", "c") and ("a", "bc")
        // hash apart, as they must: they are different rows.
        IndexKey { hash: self.hasher.hash_one((partition_key, row_key)), partition_key, row_key }
    }

    /// The row with `key`.
    ///
    /// A slot with the key's hash is almost surely the row, so all its cache lines are
    /// requested at once ([`touch_all`]) before its keys are compared: a point read then waits
    /// for one miss on the row, not one per line as the decode that follows walks it (on a
    /// 100 000-row table this took a tenth off a typed get). A hint only: it changes no result.
    #[inline]
    pub(crate) fn get(&self, key: &IndexKey<'_>) -> Option<&Row> {
        let found = |slot: &Slot| {
            if slot.hash == key.hash {
                touch_all([&slot.row]);
            }
            key.matches(slot)
        };
        self.slots.find(key.hash, found).map(|slot| &slot.row)
    }

    /// The place of `key`'s row: found with one probe, for a write that reads the row stored
    /// there and then [`put`](IndexPlace::put)s its own (a lookup and a store probed twice).
    pub(crate) fn place<'i>(&'i mut self, key: &IndexKey<'_>) -> IndexPlace<'i> {
        let entry = self.slots.entry(key.hash, |slot| key.matches(slot), |slot| slot.hash);
        IndexPlace { entry, hash: key.hash }
    }

    /// The number of rows indexed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

/// The place of one key's row in a [`RowIndex`], filled or not ([`RowIndex::place`]).
pub(crate) struct IndexPlace<'i> {
    entry: Entry<'i, Slot>,
    hash: u64,
}

impl IndexPlace<'_> {
    /// The row stored at this place.
    pub(crate) fn row(&self) -> Option<&Row> {
        match &self.entry {
            Entry::Occupied(slot) => Some(&slot.get().row),
            Entry::Vacant(_) => None,
        }
    }

    /// Stores `row` here (its keys must be the place's), replacing the row stored here, if
    /// any; `None` removes that row.
    #[inline]
    pub(crate) fn put(self, row: Option<Row>) {
        match (self.entry, row) {
            (Entry::Occupied(mut slot), Some(row)) => slot.get_mut().row = row,
            (Entry::Vacant(slot), Some(row)) => {
                slot.insert(Slot { hash: self.hash, row });
            }
            (Entry::Occupied(slot), None) => {
                slot.remove();
            }
            (Entry::Vacant(_), None) => {}
        }
    }
}

impl std::fmt::Debug for RowIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowIndex").field("rows", &self.slots.len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_hashes_keys_under_its_own_secret() {
        // Two indexes (two tables, or a table deleted and created again) place the same key
        // apart: a collision found on one says nothing of another, and a fixed seed, which
        // would let chosen keys collide in every table, fails here.
        let (a, b) = (RowIndex::default(), RowIndex::default());
        assert_ne!(a.key("p", "r").hash, b.key("p", "r").hash);
        assert_eq!(a.key("p", "r").hash, a.key("p", "r").hash, "one index hashes a key one way");
    }
}
