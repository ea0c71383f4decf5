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
pub mod wire;

mod backend;
mod batch;
mod query;
mod retry;
mod service;
mod table;
mod typed_table;

pub use batch::{BulkReport, Transaction, TransactionReport};
pub use query::{MAX_PAGE_SIZE, Query, QueryPage};
pub use retry::RetryPolicy;
pub use service::{ClientOptions, TableServiceClient};
pub use table::TableClient;
pub use typed_table::TypedTable;

/// The trait of types stored as entities, and its derive (`#[derive(TableEntity)]`).
pub use table_core::typed::TableEntity;
pub use table_derive::TableEntity;
pub use table_core::typed;

#[doc(hidden)]
pub use table_core::__private;

pub use table_core::engine::{self, Engine};
pub use table_core::{
    CompareOp, Continuation, ETag, EdmType, Entity, EntityKey, Error, ErrorCode, ErrorKind, Filter,
    IfMatch, KeyName, Operation, Properties, Result, Value, Violation, WriteOutcome, datetime,
    keys, validate, value,
};

const _: () = {
    const fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync_clone::<TableServiceClient>();
    assert_send_sync_clone::<TableClient>();
};
