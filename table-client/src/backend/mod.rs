//! The two ways requests are served: the embedded engine in process, or HTTP to a Table
//! service (Azure Storage, Cosmos DB Table API, Azurite).
//!
//! Both answer the same data-plane calls with the same errors, so everything above this module
//! (clients, queries, batches, index maintenance) is written once. That includes the "may have
//! applied" marker: the engine never loses an answer, but its injected faults stand for a
//! status or a client-side timeout, and a write failing with one the service may have processed
//! is marked as the HTTP backend marks it.

mod http;

use table_core::engine::Engine;
use table_core::{Entity, Error, Operation, Page, QueryRequest, Result, TablePage, TableQuery, WriteOutcome};

pub(crate) use http::{HttpBackend, HttpOptions};

use crate::retry::Failure;

/// Where requests go.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// The in-process engine; calls are synchronous and never block on I/O.
    Embedded(Engine),
    /// A Table service over HTTP.
    Http(HttpBackend),
}

impl Backend {
    pub(crate) async fn create_table(&self, name: &str) -> Result<()> {
        match self {
            Backend::Embedded(e) => e.create_table(name).map_err(marked),
            Backend::Http(h) => h.create_table(name).await,
        }
    }

    pub(crate) async fn delete_table(&self, name: &str) -> Result<()> {
        match self {
            Backend::Embedded(e) => e.delete_table(name).map_err(marked),
            Backend::Http(h) => h.delete_table(name).await,
        }
    }

    pub(crate) async fn query_tables(&self, query: &TableQuery) -> Result<TablePage> {
        match self {
            Backend::Embedded(e) => e.query_tables(query),
            Backend::Http(h) => h.query_tables(query).await,
        }
    }

    pub(crate) async fn get(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
    ) -> Result<Entity> {
        match self {
            Backend::Embedded(e) => e.get(table, partition_key, row_key, select),
            Backend::Http(h) => h.get(table, partition_key, row_key, select).await,
        }
    }

    pub(crate) async fn execute(&self, table: &str, operation: Operation) -> Result<WriteOutcome> {
        match self {
            Backend::Embedded(e) => e.execute(table, operation).map_err(marked),
            Backend::Http(h) => h.execute(table, operation).await,
        }
    }

    pub(crate) async fn query(&self, table: &str, request: &QueryRequest) -> Result<Page> {
        match self {
            Backend::Embedded(e) => e.query(table, request),
            Backend::Http(h) => h.query(table, request).await,
        }
    }

    pub(crate) async fn submit_batch(
        &self,
        table: &str,
        operations: Vec<Operation>,
    ) -> Result<Vec<WriteOutcome>> {
        match self {
            Backend::Embedded(e) => e.submit_batch(table, operations).map_err(marked),
            Backend::Http(h) => h.submit_batch(table, operations).await,
        }
    }
}

/// An engine write's error, marked when the fault it stands for may hide an applied write.
fn marked(error: Error) -> Error {
    match Failure::of(&error).is_ambiguous() {
        true => error.with_may_have_applied(),
        false => error,
    }
}
