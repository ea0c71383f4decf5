//! A typed async client for Azure Table Storage, the Cosmos DB Table API, Azurite, and an
//! embedded in-memory engine that behaves like the service.
//!
//! Start with a [`TableServiceClient`]: [`TableServiceClient::from_connection_string`] picks the
//! backend (`UseDevelopmentStorage=true`, account keys, SAS, or `UseEmbeddedEngine=true`).
//! Tables are reached through [`TableClient`] (untyped [`Entity`] values) or `TypedTable<T>`
//! for `#[derive(TableEntity)]` structs.

#![deny(missing_docs)]

pub mod auth;
pub mod connection_string;
pub mod patterns;
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
pub use typed_table::TypedTable;

pub use table_core::typed;
/// The traits of types stored as entities and as property values, with their derives.
pub use table_core::typed::{PropertyValue, TableEntity};
pub use table_derive::{PropertyValue, TableEntity};

#[doc(hidden)]
pub use table_core::__private;

pub use table_core::engine::{self, Engine};
pub use table_core::{
    CompareOp, Continuation, ETag, EdmType, Entity, EntityKey, Error, ErrorCode, ErrorKind, Filter, IfMatch,
    KeyName, MAX_BATCH_BODY, MAX_BATCH_OPERATIONS, MAX_ENTITY_SIZE, MAX_FILTER_COMPARISONS, MAX_FILTER_NESTING,
    MAX_KEY_LEN, MAX_PROPERTIES, MAX_PROPERTY_NAME_LEN, MAX_PROPERTY_VALUE_SIZE, Operation, Properties, Result,
    Value, Violation, WriteOutcome, compare_ordinal, datetime, entity_size, keys, validate_entity, validate_key,
    validate_property_name, validate_table_name,
};

const _: () = {
    const fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync_clone::<TableServiceClient>();
    assert_send_sync_clone::<TableClient>();
    assert_send_sync_clone::<TypedTable<Entity>>();
    assert_send_sync_clone::<Query<Entity>>();
};
