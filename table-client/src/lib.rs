//! A typed async client for Azure Table Storage, the Cosmos DB Table API, Azurite, and an
//! embedded in-memory engine that behaves like the service.
//!
//! Start with a [`TableServiceClient`]: [`TableServiceClient::from_connection_string`] picks the
//! backend (`UseDevelopmentStorage=true`, account keys, SAS, or `UseEmbeddedEngine=true`).
//! Tables are reached through [`TableClient`] (untyped [`Entity`] values) or `TypedTable<T>`
//! for `#[derive(TableEntity)]` structs.
//!
//! # Layout
//!
//! This crate is the facade: applications depend on it alone. The root holds the client
//! ([`TableServiceClient`], [`TableClient`], [`TypedTable`], [`Query`], [`Transaction`], ...)
//! and, re-exported once and flat, table-core's data model ([`Entity`], [`Value`], ...),
//! errors, [`Filter`], batch [`Operation`]s, the service's limits, and the checks a caller may
//! run before a request (names, keys and whole entities).
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

#![deny(missing_docs)]

pub mod auth;
pub mod connection_string;
pub mod patterns;
pub mod typed;
#[doc(hidden)]
pub mod wire;

mod backend;
mod batch;
mod index;
mod query;
mod retry;
mod service;
mod table;
mod typed_table;

pub use batch::{BulkReport, Transaction, TransactionReport};
pub use index::IndexReport;
pub use query::{MAX_PAGE_SIZE, Query, QueryPage};
pub use retry::RetryPolicy;
pub use service::{ClientOptions, TableServiceClient};
pub use table::TableClient;
// The convenience pair (as sqlx re-exports `Encode` at its root); documented under `typed`.
#[doc(no_inline)]
pub use typed::{PropertyValue, TableEntity};
pub use typed_table::TypedTable;

pub use table_core::{
    CompareOp, Continuation, ETag, EdmType, Entity, EntityKey, Error, ErrorCode, ErrorKind, Filter, IfMatch,
    KeyName, MAX_BATCH_BODY, MAX_BATCH_OPERATIONS, MAX_ENTITY_SIZE, MAX_FILTER_COMPARISONS,
    MAX_FILTER_NESTING, MAX_KEY_LEN, MAX_PROPERTIES, MAX_PROPERTY_NAME_LEN, MAX_PROPERTY_VALUE_SIZE,
    Operation, Properties, Result, Value, Violation, WriteOutcome, compare_ordinal, entity_size,
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
};
