//! A typed async client for Azure Table Storage, the Cosmos DB Table API, Azurite, and an
//! embedded in-memory engine that behaves like the service.
//!
//! Start with a [`TableServiceClient`]: [`TableServiceClient::from_connection_string`] picks the
//! backend (`UseDevelopmentStorage=true`, account keys, SAS, or `UseEmbeddedEngine=true`);
//! [`TableServiceClient::builder`] also takes an endpoint with a credential, an engine, retries
//! and timeouts.
//! Tables are reached through [`TableClient`] (untyped [`Entity`] values) or `TypedTable<T>`
//! for `#[derive(TableEntity)]` structs.
//!
//! # Layout
//!
//! This crate is the facade: applications depend on it alone. The root holds the client
//! ([`TableServiceClient`], [`TableClient`], [`TypedTable`], [`Query`] and its [`QueryStream`],
//! [`Transaction`], ...) and, re-exported once and flat, table-core's data model ([`Entity`],
//! [`Value`], ...), errors, [`Filter`], batch [`Operation`]s, the service's limits, and the
//! checks a caller may run before a request (names, keys and whole entities).
//!
//! Namespaces:
//! - [`typed`]: the traits the derives implement, each beside its derive (`TableEntity`,
//!   `PropertyValue`), and the typed vocabulary around them; the root also re-exports the
//!   two pairs, as sqlx does, for `use table_client::TableEntity`;
//! - [`auth`]: credentials and shared access signatures;
//! - [`connection_string`]: the forms a connection string takes, their parser, and the
//!   development-storage (Azurite) account, key and endpoint;
//! - [`patterns`]: higher-level table designs (data series, large and wide entities, rotated
//!   tables);
//! - [`engine`], [`keys`], [`datetime`]: table-core's namespaces, as they are there.
//!
//! Hidden, not API: `wire` (the HTTP encoding, reachable for this crate's wire tests and
//! benches and the workspace's fuzzers) and `__private` (what the code the derives generate
//! calls).
//!
//! # Retries and ambiguous failures
//!
//! A client retries a failed request as its [`RetryPolicy`] says
//! ([`TableServiceClientBuilder::retry`]), on every backend: the embedded engine's injected
//! faults ([`engine::Engine::faults`]) stand for the same failures and go through the same
//! retries, markers and settling, so all of this can be tested offline. Two kinds of
//! failure differ:
//!
//! - The service did **not** process the request: it answered 408, 429 or 503, or the
//!   connection could not be established. Every request is retried.
//! - The attempt is **ambiguous**: the request may have reached the service and no
//!   trustworthy answer came back (a timeout or a connection dropped after the request was
//!   sent, a 500, 502 or 504). Reads and writes that are safe to send twice are retried:
//!   queries and gets, upserts, replaces, merges, deletes and table deletion. Inserts,
//!   entity-group transactions and table creation are **never replayed**: a second
//!   application would fail spuriously (409) or apply twice, so their ambiguous failure is
//!   returned at once.
//!
//! **"May have applied".** Every error of a write that had an ambiguous attempt carries
//! [`Error::may_have_applied`]: the service may have applied the write although the call
//! failed. So does a write whose success answer cannot be read (a `Decode` error). Reads
//! never carry it; an error without it means the write was not applied. The
//! stored state is unknown, so resolve it by reading: `get_if_exists` the entity (or every
//! entity of a transaction, which applied entirely or not at all) and compare it with what was
//! written. An insert found with the properties sent was most likely applied by the lost
//! attempt; retrying the insert blindly would fail with `AlreadyExists`.
//!
//! **Answers the SDK settles itself.** A retry can get an answer that only the lost attempt
//! may have caused; it is never reported as if the caller's condition had failed:
//!
//! - A delete whose retry finds no entity (404) **succeeds**: the entity is gone, as asked.
//!   Its retry failing an ETag condition (412) is an [`ErrorKind::Ambiguous`] error: the entity
//!   exists with another version, because another writer changed it first or because the lost
//!   attempt deleted it and someone wrote it again. `delete_table` settles a 404 the same way.
//! - `delete_if_exists` and `delete_table_if_exists` whose retry finds nothing return
//!   `Ambiguous`: the entity or table is gone, but whether it existed is unknown.
//! - A replace or merge whose retry fails its condition (412) or finds no entity (404) reads
//!   the entity back. When the stored entity shows this write it **succeeds** with the stored
//!   ETag; otherwise it is `Ambiguous` ("may have applied, and the entity has changed since",
//!   the 412 as its source). "Shows this write" is judged by content: for a replace, the
//!   stored properties equal exactly the properties sent; for a merge, every property sent is
//!   stored with the value sent. Its limit: an identical write by another writer in between
//!   cannot be told apart, which leaves the stored state as the caller asked.
//! - Typed writes of indexed types re-read and apply an unconditional change again (its
//!   effect is the same); an insert, or a write under the caller's own ETag, reports the
//!   ambiguity instead.
//!
//! **Contention.** Index maintenance, moves and wide entities read, then write conditionally,
//! and retry when a concurrent writer got in between. They never report a 412, 409 or 404 the
//! caller did not ask for: when the races do not stop within the contention budget, the error
//! is [`ErrorKind::Contention`] (marked "may have applied" when part of the write, such as the
//! primary entity, was already applied; an outbox intent then lets a drain finish the rest).

#![deny(missing_docs)]

pub mod auth;
pub mod connection_string;
pub mod patterns;
pub mod typed;
#[doc(hidden)]
pub mod wire;

mod backend;
mod batch;
mod builder;
mod contention;
mod error;
mod index;
mod markers;
mod moves;
mod outbox;
mod outcome;
mod query;
mod retry;
mod service;
mod table;
mod typed_table;

pub use batch::{BulkReport, Transaction, TransactionReport};
pub use builder::TableServiceClientBuilder;
pub use index::IndexReport;
pub use query::{MAX_PAGE_SIZE, Query, QueryPage, QueryShape, QueryStream};
pub use retry::RetryPolicy;
pub use service::TableServiceClient;
pub use table::TableClient;
// The convenience pair (as sqlx re-exports `Encode` at its root); documented under `typed`.
#[doc(no_inline)]
pub use typed::{PropertyValue, TableEntity};
pub use typed_table::TypedTable;

pub use table_core::{
    CompareOp, Continuation, ETag, EdmType, Entity, EntityKey, Error, ErrorCode, ErrorKind, Filter, IfMatch,
    KeyName, MAX_BATCH_BODY, MAX_BATCH_OPERATIONS, MAX_ENTITY_SIZE, MAX_FILTER_COMPARISONS,
    MAX_FILTER_NESTING, MAX_KEY_LEN, MAX_PROPERTIES, MAX_PROPERTY_NAME_LEN, MAX_PROPERTY_VALUE_SIZE,
    Operation, Origin, Properties, Result, Value, Violation, WriteOutcome, compare_ordinal, entity_size,
    validate_entity, validate_key, validate_property_name, validate_table_name,
};
pub use table_core::{datetime, engine, keys};

#[doc(hidden)]
pub use table_core::__private;

const _: () = {
    const fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync_clone::<TableServiceClient>();
    assert_send_sync_clone::<TableClient>();
    assert_send_sync_clone::<TypedTable<Entity>>();
    assert_send_sync_clone::<Query<Entity>>();

    // Streams are polled in place (`while let Some(x) = s.next().await`) and moved across tasks.
    const fn assert_unpin_send<T: Unpin + Send + 'static>() {}
    assert_unpin_send::<QueryStream<Entity>>();
    assert_unpin_send::<QueryStream<QueryPage<Entity>>>();
};
