//! The engine's journal hook: what lets a caller (table-server's `--data-dir`) keep an engine's
//! data across restarts, without the engine knowing about files.
//!
//! Invariants:
//! - A [`Journal`] set on an engine hears every change BEFORE it becomes visible, under the
//!   same lock that applies it, so the order in which it hears changes is the order in which
//!   they were applied. When it refuses a change, nothing of it is applied and the caller gets
//!   an error saying so ([`Error::not_recorded`]).
//! - Every [`Change`] is a full state of what it names (a table that exists and is empty, a
//!   row as stored with its timestamp and ETag, a table's whole policy list, the whole service
//!   settings), never a delta. Replaying a change ([`Engine::replay`](super::Engine::replay))
//!   therefore converges whatever state it lands on: replaying the changes heard since a point
//!   over any state the engine passed through after that point gives the engine's state. This
//!   is what makes a snapshot taken table by table, while writes go on, a valid starting point.
//! - A batch is one change: replayed all or nothing.
//! - Every call of an engine with a journal ends with [`Journal::settle`], after the call
//!   released its locks and before it returns: a journal that makes changes durable late (one
//!   disk flush shared by the changes of concurrent calls) makes the call wait there, so no
//!   answer (a write's, or a read that shows a change) comes before the changes it follows are
//!   durable, while the locks are free for other calls to record theirs meanwhile.
//! - With no journal set, the write paths do what they did without one: one predictable branch.

use std::fmt;
use std::sync::{Arc, PoisonError};

use super::Engine;
use super::clock::Clock;
use super::row::Row;
use crate::access_policy::SignedIdentifier;
use crate::entity::{Entity, EntityKey};
use crate::error::{Error, ErrorKind, Result};
use crate::service_properties::ServiceProperties;

/// Hears every change an engine applies, before it becomes visible (see the module docs).
/// Called under the engine's locks: it must not call back into the engine.
#[doc(hidden)]
pub trait Journal: Send + Sync + fmt::Debug {
    /// Records `change`; an error refuses it, and the engine then applies nothing of it.
    fn record(&self, change: &Change) -> std::io::Result<()>;

    /// Returns once every change recorded so far is as durable as the journal makes changes;
    /// called at the end of every engine call, under no engine lock. An error means changes
    /// already applied may be lost by a crash of the machine. By default, at once: a journal
    /// whose `record` is durable when it returns has nothing to wait for.
    fn settle(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One change to an engine, as a full state of what it names.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The table exists, empty and without policies.
    CreateTable(String),
    /// The table does not exist.
    DeleteTable(String),
    /// These rows of the table are as given; all or nothing (one write, or a whole batch).
    Rows {
        /// The table, in any case.
        table: String,
        /// The rows' new states.
        rows: Vec<RowChange>,
    },
    /// The table's stored access policies are these.
    Policies {
        /// The table, in any case.
        table: String,
        /// The whole list.
        policies: Vec<SignedIdentifier>,
    },
    /// The service settings are these, every element set.
    ServiceProperties(ServiceProperties),
}

/// One row's new state.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq)]
pub enum RowChange {
    /// Stored as this entity, with the timestamp and ETag of the write that stored it.
    Stored(Entity),
    /// Not stored.
    Removed(EntityKey),
}

impl RowChange {
    /// The state `row` gives the row with keys `key`: stored when it is `Some`.
    pub(crate) fn of(key: (&str, &str), row: Option<&Row>) -> RowChange {
        match row {
            Some(row) => RowChange::Stored(row.to_entity(None)),
            None => RowChange::Removed(EntityKey::new(key.0, key.1)),
        }
    }
}

/// Has `journal` record `change`; its refusal becomes the engine's "not applied" error.
pub(crate) fn record(journal: &dyn Journal, change: &Change) -> Result<()> {
    journal.record(change).map_err(Error::not_recorded)
}

/// Rows per [`Change::Rows`] of a snapshot: bounds the size of one change without making
/// a change per row.
const SNAPSHOT_ROWS: usize = 1000;

impl Engine {
    /// Sets the journal that hears every change from now on (see the module docs); once per
    /// engine. Errors: a journal is already set.
    #[doc(hidden)]
    pub fn set_journal(&self, journal: Arc<dyn Journal>) -> Result<()> {
        self.inner
            .journal
            .set(journal)
            .map_err(|_| Error::new(ErrorKind::Other, "the engine already has a journal"))
    }

    /// Applies `change` as the state it describes, unchecked, unjournaled and without a fault:
    /// a change heard by a journal, replayed in order onto a snapshot ([`Engine::snapshot`]).
    /// Rows and policies of a table that does not exist are ignored (the table was deleted
    /// later). Every later write is stamped after every replayed row's timestamp. Errors: an
    /// invalid table name, a stored row without its timestamp or ETag; the changes before it
    /// stay applied.
    #[doc(hidden)]
    pub fn replay(&self, change: &Change) -> Result<()> {
        let s = &*self.inner;
        match change {
            Change::CreateTable(name) => s.catalog.reset(name),
            Change::DeleteTable(name) => {
                s.catalog.remove(name);
                Ok(())
            }
            Change::Rows { table, rows } => {
                let rows =
                    rows.iter().map(|change| restored_row(change, &s.clock)).collect::<Result<Vec<_>>>()?;
                let Ok(table) = s.catalog.table(table) else { return Ok(()) };
                table
                    .write(|data| {
                        for row in rows {
                            match row {
                                Ok(row) => data.restore(row),
                                Err(key) => data.remove(&key.partition_key, &key.row_key),
                            }
                        }
                        Ok(())
                    })
                    .or_else(|_| Ok(()))
            }
            Change::Policies { table, policies } => match s.catalog.table(table) {
                Ok(found) => found.set_policies(policies, || Ok(())).or_else(|_| Ok(())),
                Err(_) => Ok(()),
            },
            Change::ServiceProperties(properties) => {
                *s.properties.lock().unwrap_or_else(PoisonError::into_inner) = properties.clone();
                Ok(())
            }
        }
    }

    /// The engine's state as changes that [`replay`](Self::replay) onto an empty engine to
    /// rebuild it, handed to `sink` one at a time: the service settings, then each table
    /// (its creation, its policies, its rows in chunks). Taken table by table while writes
    /// go on: each table's rows are read at one instant, under its lock, but not all tables
    /// at the same one; replaying the changes journaled since before the snapshot began
    /// makes it exact (see the module docs). No lock is held while `sink` runs. Stops at
    /// `sink`'s first error and returns it.
    #[doc(hidden)]
    pub fn snapshot<E>(
        &self,
        mut sink: impl FnMut(Change) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let s = &*self.inner;
        let properties = s.properties.lock().unwrap_or_else(PoisonError::into_inner).clone();
        sink(Change::ServiceProperties(properties))?;
        for (name, table) in s.catalog.all() {
            // Policies are read under the rows' lock too: a set of policies records and applies under
            // it, so a set recorded before the snapshot began is seen here. Rows share their
            // buffers: the copy under the lock is a list of pointers.
            let (policies, rows): (_, Vec<Row>) = table.read(|data| {
                (table.policies(), data.partitions().values().flat_map(|p| p.values()).cloned().collect())
            });
            sink(Change::CreateTable(name.clone()))?;
            sink(Change::Policies { table: name.clone(), policies })?;
            for chunk in rows.chunks(SNAPSHOT_ROWS) {
                let rows = chunk.iter().map(|row| RowChange::Stored(row.to_entity(None))).collect();
                sink(Change::Rows { table: name.clone(), rows })?;
            }
        }
        Ok(())
    }
}

/// The row a replayed row change stores (`Ok`), or the keys it removes (`Err`), the clock
/// made to tick after a stored row's timestamp. Errors: a stored row without its timestamp
/// or ETag.
fn restored_row<'c>(change: &'c RowChange, clock: &Clock) -> Result<std::result::Result<Row, &'c EntityKey>> {
    match change {
        RowChange::Removed(key) => Ok(Err(key)),
        RowChange::Stored(entity) => {
            let (Some(timestamp), Some(etag)) = (entity.timestamp, entity.etag.as_ref()) else {
                return Err(Error::new(
                    ErrorKind::Decode,
                    format!(
                        "a replayed row (PartitionKey={:?}, RowKey={:?}) has no timestamp or ETag",
                        entity.partition_key, entity.row_key
                    ),
                ));
            };
            clock.observe(timestamp);
            Ok(Ok(Row::new(entity, timestamp.into(), etag)))
        }
    }
}
