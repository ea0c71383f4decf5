//! The set of tables: create, delete, look up and list, with the service's case-insensitive
//! names.
//!
//! Invariants: tables are keyed by their ASCII-lowercased name, so names are unique ignoring
//! case while each table keeps the case it was created with; listing is in that
//! case-insensitive name order. A table's rows live behind their own lock, so work on one table
//! never waits for another. A table's stored access policies live beside its rows, behind a
//! lock of their own, and go when the table goes.
//!
//! A deleted table is marked dropped under its rows' lock before it leaves the map, and no
//! write applies to a dropped table: a write that found the table just before the delete
//! fails as if it came after it, so no write is ever applied (or journaled) after the delete
//! that removed its table.

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use super::table::TableData;
use crate::access_policy::SignedIdentifier;
use crate::entity::Entity;
use crate::error::{Error, ErrorCode, Result, Violation};
use crate::filter::Filter;
use crate::validate::validate_table_name;
use crate::value::Value;

/// Longest valid table name; longer names can never exist.
const MAX_TABLE_NAME: usize = 63;

/// One table.
#[derive(Debug)]
pub(crate) struct Table {
    // An `RwLock` rather than a `Mutex`: point reads and queries (the common case) share it,
    // and every critical section is short, in-memory and never calls back into user code.
    data: RwLock<TableData>,
    // A `Mutex`: policies are read and replaced whole, rarely; taken after the rows' lock
    // when both are held (a set of policies), never before it.
    policies: Mutex<Vec<SignedIdentifier>>,
    /// Set (under the rows' write lock) when the table is deleted; see the module docs.
    dropped: AtomicBool,
}

impl Table {
    /// Runs `read` with shared access to the rows.
    pub(crate) fn read<T>(&self, read: impl FnOnce(&TableData) -> T) -> T {
        // A panic inside a critical section cannot leave the maps half-updated in a way that
        // breaks their invariants (each update is one map call), so a poisoned lock is usable.
        read(&self.data.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Runs `read` with shared access to the rows, unless the table was deleted (`None`): a
    /// delete that finished before this call is seen, as a lookup by name after it would see
    /// it (the flag is set under the rows' write lock, and read under their read lock).
    pub(crate) fn read_live<T>(&self, read: impl FnOnce(&TableData) -> T) -> Option<T> {
        let data = self.data.read().unwrap_or_else(PoisonError::into_inner);
        (!self.dropped.load(Ordering::Relaxed)).then(|| read(&data))
    }

    /// Runs `write` with exclusive access to the rows. Errors: 404 `TableNotFound` when the
    /// table was deleted since it was looked up, then `write`'s.
    pub(crate) fn write<T>(&self, write: impl FnOnce(&mut TableData) -> Result<T>) -> Result<T> {
        self.write_live(write).unwrap_or_else(|_| Err(Error::service(ErrorCode::TableNotFound)))
    }

    /// Runs `write` with exclusive access to the rows, unless the table was deleted: then
    /// `write` is handed back unrun, for a caller that looks the name up again.
    fn write_live<T, W>(&self, write: W) -> std::result::Result<Result<T>, W>
    where
        W: FnOnce(&mut TableData) -> Result<T>,
    {
        let mut data = self.data.write().unwrap_or_else(PoisonError::into_inner);
        // Read under the write lock that the delete sets it under, so no write slips past it.
        if self.dropped.load(Ordering::Relaxed) {
            return Err(write);
        }
        Ok(write(&mut data))
    }

    /// The table's stored access policies, in the order they were set.
    pub(crate) fn policies(&self) -> Vec<SignedIdentifier> {
        // Replaced whole under the lock, so a poisoned lock still holds a complete list.
        self.policies.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replaces the table's stored access policies (already validated), once `record`
    /// accepts the change; under the rows' lock, so that a delete orders after it. Errors as
    /// [`write`](Self::write), then `record`'s.
    pub(crate) fn set_policies(
        &self,
        policies: &[SignedIdentifier],
        record: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        self.write(|_| {
            record()?;
            *self.policies.lock().unwrap_or_else(PoisonError::into_inner) = policies.to_vec();
            Ok(())
        })
    }

    fn new() -> Arc<Table> {
        Arc::new(Table {
            data: RwLock::new(TableData::default()),
            policies: Mutex::default(),
            dropped: AtomicBool::new(false),
        })
    }

    /// Marks the table dropped once `record` accepts it, after the writes under way: they
    /// hold the rows' lock, so they are recorded before the drop is.
    fn drop_rows(&self, record: impl FnOnce() -> Result<()>) -> Result<()> {
        let _rows = self.data.write().unwrap_or_else(PoisonError::into_inner);
        record()?;
        self.dropped.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// A table name resolved once, for a caller that reads or writes the table many times (a
/// typed table's point reads and whole-entity writes): the table its name first found is
/// kept, and calls go straight to it while it lives, without lowercasing the name and
/// searching the catalog on each. Once that table is deleted, every call looks the name up
/// again, as a call without a handle does, so it finds a table re-created under the name, or
/// none. Answers are those of a lookup by name.
#[doc(hidden)]
#[derive(Debug)]
pub struct TableHandle {
    name: Arc<str>,
    /// The table the name first found, with the identity of the catalog it was found in (a
    /// handle is meant for one engine; in another it only names the table).
    found: OnceLock<(Weak<()>, Arc<Table>)>,
}

impl TableHandle {
    /// A handle on the table `name` (in any case), looked up at its first read.
    pub fn new(name: Arc<str>) -> Self {
        TableHandle { name, found: OnceLock::new() }
    }

    /// The table's name, as given.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// All tables of an engine.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    // An `RwLock`: every entity operation looks its table up (shared), while creating and
    // deleting tables (exclusive) is rare. Only held to find or change the map itself.
    state: RwLock<CatalogState>,
    /// This catalog's identity for [`TableHandle`]s: a handle holds a `Weak` of it, whose
    /// address no other catalog can have while the handle lives.
    id: Arc<()>,
}

#[derive(Debug, Default)]
struct CatalogState {
    /// Lowercased name -> (name as created, table).
    tables: BTreeMap<String, (String, Arc<Table>)>,
    /// Lowercased name -> when the table was deleted (only with a cooldown configured).
    deleted: HashMap<String, Instant>,
}

impl Catalog {
    /// Creates a table, once `record` accepts it; `Ok(false)` when one with that name (in
    /// any case) exists. Errors: an invalid name, `TableBeingDeleted`, then `record`'s.
    pub(crate) fn create(
        &self,
        name: &str,
        cooldown: Option<Duration>,
        record: impl FnOnce() -> Result<()>,
    ) -> Result<bool> {
        validate_table_name(name)?;
        let key = name.to_ascii_lowercase();
        let mut state = self.write();
        if state.tables.contains_key(&key) {
            return Ok(false);
        }
        let blocked = cooldown
            .zip(state.deleted.get(&key))
            .is_some_and(|(cooldown, deleted)| deleted.elapsed() < cooldown);
        if blocked {
            return Err(Error::service(ErrorCode::TableBeingDeleted));
        }
        record()?;
        state.deleted.remove(&key);
        state.tables.insert(key, (name.to_owned(), Table::new()));
        Ok(true)
    }

    /// Deletes a table and its rows, once `record` accepts it. Errors: an invalid name, 404
    /// `ResourceNotFound`, then `record`'s.
    pub(crate) fn delete(
        &self,
        name: &str,
        cooldown: Option<Duration>,
        record: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        validate_table_name(name)?;
        let key = name.to_ascii_lowercase();
        let mut state = self.write();
        let Some((_, table)) = state.tables.get(&key) else {
            return Err(Error::service(ErrorCode::ResourceNotFound));
        };
        table.drop_rows(record)?;
        state.tables.remove(&key);
        if cooldown.is_some() {
            state.deleted.insert(key, Instant::now());
        }
        Ok(())
    }

    /// Makes `name` an empty table without policies, replacing any table of that name (in
    /// any case); for a creation replayed from a journal. Errors: an invalid name.
    pub(crate) fn reset(&self, name: &str) -> Result<()> {
        validate_table_name(name)?;
        let replaced = self.write().tables.insert(name.to_ascii_lowercase(), (name.to_owned(), Table::new()));
        if let Some((_, table)) = replaced {
            let _ = table.drop_rows(|| Ok(()));
        }
        Ok(())
    }

    /// Removes the table `name` (in any case) if it exists; for a deletion replayed from a
    /// journal.
    pub(crate) fn remove(&self, name: &str) {
        let removed = self.write().tables.remove(&name.to_ascii_lowercase());
        if let Some((_, table)) = removed {
            let _ = table.drop_rows(|| Ok(()));
        }
    }

    /// Every table, with its name as created, in name order: a list taken at one instant.
    pub(crate) fn all(&self) -> Vec<(String, Arc<Table>)> {
        self.read().tables.values().map(|(name, table)| (name.clone(), Arc::clone(table))).collect()
    }

    /// The table with this name in any case, or `TableNotFound`.
    pub(crate) fn table(&self, name: &str) -> Result<Arc<Table>> {
        // Lowercase into a stack buffer: point reads look tables up on every call and should
        // not allocate. A name that does not fit cannot be a valid table name.
        let mut buffer = [0u8; MAX_TABLE_NAME];
        let found = buffer.get_mut(..name.len()).filter(|_| name.is_ascii()).and_then(|slot| {
            slot.copy_from_slice(name.as_bytes());
            slot.make_ascii_lowercase();
            let key = std::str::from_utf8(slot).ok()?;
            self.read().tables.get(key).map(|(_, t)| Arc::clone(t))
        });
        found.ok_or_else(|| Error::service(ErrorCode::TableNotFound))
    }

    /// Runs `read` on the rows of the table `handle` names, found through the handle while the
    /// table it kept lives, else by name ([`table`](Self::table), whose table the handle then
    /// keeps if it kept none). Errors as [`table`](Self::table).
    // Inlined into each point read (see `Shared::row` in the engine module).
    #[inline]
    pub(crate) fn read_in<T>(&self, handle: &TableHandle, read: impl Fn(&TableData) -> T) -> Result<T> {
        if let Some(answer) = self.kept(handle).and_then(|table| table.read_live(&read)) {
            return Ok(answer);
        }
        let table = self.table(&handle.name)?;
        let answer = table.read(&read);
        self.keep(handle, table);
        Ok(answer)
    }

    /// [`read_in`](Self::read_in) for a write: runs `write` on the rows of the table `handle`
    /// names, as [`Table::write`] on the table its name finds would. Errors as
    /// [`table`](Self::table), then [`Table::write`]'s.
    pub(crate) fn write_in<T>(
        &self,
        handle: &TableHandle,
        write: impl FnOnce(&mut TableData) -> Result<T>,
    ) -> Result<T> {
        let write = match self.kept(handle) {
            Some(table) => match table.write_live(write) {
                Ok(answer) => return answer,
                // Deleted since it was kept: the name is looked up as without a handle.
                Err(write) => write,
            },
            None => write,
        };
        let table = self.table(&handle.name)?;
        self.keep(handle, Arc::clone(&table));
        table.write(write)
    }

    /// The table `handle` kept, when it was found in this catalog.
    // Inlined into both callers: as a call of its own it made every point read 12 instructions
    // dearer (callgrind).
    #[inline]
    fn kept<'h>(&self, handle: &'h TableHandle) -> Option<&'h Arc<Table>> {
        let (catalog, table) = handle.found.get()?;
        std::ptr::eq(catalog.as_ptr(), Arc::as_ptr(&self.id)).then_some(table)
    }

    /// Has `handle` keep `table`, found by its name, unless it keeps one already: kept once, so
    /// a handle whose table was deleted looks its name up on every call after.
    fn keep(&self, handle: &TableHandle, table: Arc<Table>) {
        let _ = handle.found.set((Arc::downgrade(&self.id), table));
    }

    /// One page of table names in order, from `start` (inclusive, any case), that `filter`
    /// (over the `TableName` property) matches; with the next name when more match.
    pub(crate) fn list(
        &self,
        filter: Option<&Filter>,
        start: Option<&str>,
        page_size: NonZeroUsize,
    ) -> Result<(Vec<String>, Option<String>)> {
        let start = match start {
            Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric()) => {
                s.to_ascii_lowercase()
            }
            Some(s) => {
                return Err(Error::invalid(Violation::Continuation { token: s.to_owned() }));
            }
            None => String::new(),
        };
        let state = self.read();
        let mut names = Vec::new();
        for (name, _) in state.tables.range(start..).map(|(_, entry)| entry) {
            let row = Entity::new("", "").with("TableName", Value::String(name.clone()));
            if filter.is_none_or(|f| f.matches(&row)) {
                if names.len() >= page_size.get() {
                    return Ok((names, Some(name.clone())));
                }
                names.push(name.clone());
            }
        }
        Ok((names, None))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, CatalogState> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, CatalogState> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}
