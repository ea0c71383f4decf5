//! Automatic maintenance of the secondary indexes and index entities that
//! `#[derive(TableEntity)]` declares, driven from [`TypedTable`](crate::TypedTable) writes.
//!
//! - Same-partition indexes (`index(...)` and `lookup(...)` whose partition key is the
//!   primary's) change in ONE entity-group transaction with the primary, so they are never
//!   out of step. Writes read the primary first (its old index keys, its ETag) and retry when
//!   a concurrent writer changed it, within the contention budget ([`MAX_ATTEMPTS`](crate::contention::MAX_ATTEMPTS)); past it
//!   they fail with `ErrorKind::Contention`, never with a 412, 409 or 404 that the caller's
//!   own condition did not cause.
//! - Cross-partition indexes are eventually consistent and crash safe: an intent naming the
//!   primary and its possibly-dirty index keys goes to a sharded outbox partition of the same
//!   table before the primary changes; after the primary write the index is brought in line
//!   with the primary's *current* state using idempotent, compare-and-swap operations; then the
//!   intent is removed. [`TypedTable::drain`](crate::TypedTable::drain) finishes whatever a crash
//!   left behind.
//!
//! Reserved names: index rows carry the properties `_Index`, `_PrimaryPartitionKey`,
//! `_PrimaryRowKey` (and `_PrimaryTimestamp` for cross-partition copies); outbox intents live
//! in partitions `~outbox-00` .. `~outbox-15`.

mod cross_partition;
mod lookup;
mod rows;
mod verify;
mod write;

pub use verify::IndexReport;

pub(crate) use crate::markers::INDEX as INDEX_PROPERTY;
pub(crate) use cross_partition::drain_index_intents;
pub(crate) use lookup::lookup_stream;
pub(crate) use rows::{read_copy, read_marked_copy};
pub(crate) use verify::{rebuild, verify};
pub(crate) use write::{Caller, Change, Write, apply, apply_writes, check_transaction};
