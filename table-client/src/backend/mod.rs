//! The two ways requests are served: the embedded engine in process, or HTTP to a Table
//! service (Azure Storage, Cosmos DB Table API, Azurite).
//!
//! Both answer the same data-plane calls with the same errors, so everything above this module
//! (clients, queries, batches, index maintenance) is written once. Both retry through the one
//! loop of [`retry::run`](crate::retry::run), each with its own attempt: the engine's injected
//! faults stand for a status or a client-side timeout and are retried, or marked "may have
//! applied", as the HTTP backend's answers are. What a retry's answer means after an ambiguous
//! attempt is settled here, once for both.
//!
//! The typed point calls (a read, a whole-entity write) come in two halves: `try_*` makes the
//! first attempt now where the backend can (the engine never waits) and answers with [`Now`];
//! the async half (`get_as`, `put`) goes on from there, handed that attempt's error, so the
//! retry loop, the marking and the settling see it as their first attempt's. Over HTTP, `try_*`
//! attempts nothing and the async half makes every attempt.

mod embedded;
mod http;

use table_core::engine::{CheckedKeys, Engine, Put, Select, TableHandle};
use table_core::typed::TableEntity;
use table_core::{
    CheckedOperation, Continuation, Entity, Error, ErrorKind, Operation, QueryRequest, Result,
    ServiceProperties, ServiceStatistics, SignedIdentifier, TablePage, TableQuery, WriteOutcome,
};

pub(crate) use embedded::EmbeddedBackend;

/// A write for [`Backend::execute`]: one the client checked already (the embedded engine then
/// skips those checks), or one only the backend checks.
pub(crate) enum Write {
    Checked(CheckedOperation),
    Unchecked(Operation),
}

impl Write {
    pub(crate) fn operation(&self) -> &Operation {
        match self {
            Write::Checked(checked) => checked.operation(),
            Write::Unchecked(operation) => operation,
        }
    }
}
pub(crate) use http::{HttpBackend, HttpOptions, RequestAuth};

use crate::error::{self, ambiguous};
use crate::retry::Replay;

/// What a read makes of each entity it reads: the generic [`Entity`] (`Decode::ENTITY`) or a
/// typed value (`Decode::of::<T>()`), straight from the JSON body or the engine's row (the
/// engine takes its table-core `Decoder`), its properties laid out by the type's slots as
/// they are read.
pub(crate) use crate::wire::JsonDecoder as Decode;

/// A call answered synchronously where it can be: the embedded engine never waits, so the
/// first attempt of a typed point call is made without building the futures of the retry
/// loop and of the layers above it. When that attempt succeeds (or a local check fails) the
/// call is [`Answered`](Now::Answered); otherwise it goes on `Later` through the call's async
/// path, handed what that needs (among it the first attempt's error, which the retry loop
/// takes as its first attempt's: retried, marked and settled exactly as if the loop had made
/// it).
pub(crate) enum Now<T, L> {
    /// The call's answer.
    Answered(Result<T>),
    /// What the call's async path goes on from.
    Later(L),
}

impl<T> Now<T, Option<Error>> {
    /// A first attempt's result: its value, or its error for the async path.
    fn first_attempt(result: Result<T>) -> Self {
        match result {
            Ok(value) => Now::Answered(Ok(value)),
            Err(error) => Now::Later(Some(error)),
        }
    }
}

/// Where requests go.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// The in-process engine; calls never block on I/O (a retry's backoff still pauses).
    Embedded(EmbeddedBackend),
    /// A Table service over HTTP.
    Http(HttpBackend),
}

impl Backend {
    pub(crate) async fn create_table(&self, name: &str) -> Result<()> {
        match self {
            Backend::Embedded(e) => e.create_table(name).await,
            Backend::Http(h) => h.create_table(name).await,
        }
    }

    pub(crate) async fn delete_table(&self, name: &str) -> Result<()> {
        match self {
            Backend::Embedded(e) => e.delete_table(name).await,
            Backend::Http(h) => h.delete_table(name).await,
        }
    }

    pub(crate) async fn query_tables(&self, query: &TableQuery) -> Result<TablePage> {
        match self {
            Backend::Embedded(e) => e.query_tables(query).await,
            Backend::Http(h) => h.query_tables(query).await,
        }
    }

    pub(crate) async fn get(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        select: Option<&Select>,
    ) -> Result<Entity> {
        let keys = CheckedKeys::new(partition_key, row_key).map_err(Error::invalid)?;
        let table = TableHandle::new(std::sync::Arc::from(table));
        self.get_as(&table, keys, select, Decode::ENTITY, None).await
    }

    /// The first attempt of [`get_as`](Self::get_as), when the backend makes it now (the
    /// embedded engine): its answer, or its error to go on with. Over HTTP, nothing is tried.
    pub(crate) fn try_get_as<T>(
        &self,
        table: &TableHandle,
        keys: CheckedKeys<'_>,
        select: Option<&Select>,
        decode: Decode<T>,
    ) -> Now<T, Option<Error>> {
        match self {
            Backend::Embedded(e) => Now::first_attempt(e.try_get_as(table, keys, select, decode)),
            Backend::Http(_) => Now::Later(None),
        }
    }

    /// [`get`](Self::get) of keys already checked, the entity as read handed to `decode` (see
    /// [`Decode`]), after the `first` attempt's error when [`try_get_as`](Self::try_get_as)
    /// made one.
    pub(crate) async fn get_as<T>(
        &self,
        table: &TableHandle,
        keys: CheckedKeys<'_>,
        select: Option<&Select>,
        decode: Decode<T>,
        first: Option<Error>,
    ) -> Result<T> {
        match self {
            Backend::Embedded(e) => e.get_as(table, keys, select, decode, first).await,
            Backend::Http(h) => {
                h.get_as(table.name(), keys.partition_key(), keys.row_key(), select, decode).await
            }
        }
    }

    pub(crate) async fn execute(&self, table: &str, write: Write) -> Result<WriteOutcome> {
        let result = match self {
            Backend::Embedded(e) => e.execute(table, &write).await,
            Backend::Http(h) => h.execute(table, write.operation()).await,
        };
        match result {
            Err(e) => self.settle_conditional_write(table, write.operation(), e).await,
            outcome => outcome,
        }
    }

    /// The first attempt of [`put`](Self::put), as [`try_get_as`](Self::try_get_as) makes a
    /// read's.
    pub(crate) fn try_put<T: TableEntity>(
        &self,
        table: &TableHandle,
        put: &Put<'_, T>,
    ) -> Now<WriteOutcome, Option<Error>> {
        match self {
            Backend::Embedded(e) => Now::first_attempt(e.try_put(table, put)),
            Backend::Http(_) => Now::Later(None),
        }
    }

    /// [`execute`](Self::execute) of a typed value written whole: on the embedded engine
    /// without building an `Entity`; over HTTP as the operation it is. Goes on after the
    /// `first` attempt's error when [`try_put`](Self::try_put) made one.
    pub(crate) async fn put<T: TableEntity>(
        &self,
        table: &TableHandle,
        put: &Put<'_, T>,
        first: Option<Error>,
    ) -> Result<WriteOutcome> {
        let result = match self {
            Backend::Embedded(e) => e.put(table, put, first).await,
            Backend::Http(h) => h.execute(table.name(), &put.to_operation()).await,
        };
        match result {
            // Settling needs the entity sent: built only then.
            Err(e) => self.settle_conditional_write(table.name(), &put.to_operation(), e).await,
            outcome => outcome,
        }
    }

    /// Settles a replace or merge whose retry, after an ambiguous attempt, failed its
    /// condition (412) or found no entity (404): the first attempt may have applied and
    /// changed the ETag. The entity is read back; when it shows this write (a replace: exactly
    /// the properties sent; a merge: every property sent, with the value sent) the write
    /// succeeded, with the stored ETag. Otherwise nobody can tell: an [`ErrorKind::Ambiguous`]
    /// error. Any other failure comes back as it is.
    async fn settle_conditional_write(
        &self,
        table: &str,
        operation: &Operation,
        failure: Error,
    ) -> Result<WriteOutcome> {
        let (sent, merge) = match operation {
            Operation::Replace { entity, .. } => (entity, false),
            Operation::Merge { entity, .. } => (entity, true),
            _ => return Err(failure),
        };
        if !failure.may_have_applied() || !matches!(failure.status(), Some(404 | 412)) {
            return Err(failure);
        }
        let what = format!(
            "{} of entity {} in table {table}: an attempt whose answer was lost may have applied",
            if merge { "merge" } else { "replace" },
            sent.key()
        );
        let stored = match self.get(table, &sent.partition_key, &sent.row_key, None).await {
            Ok(stored) => stored,
            Err(read) if read.kind() == ErrorKind::NotFound => {
                return Err(
                    ambiguous(format!("{what}, and the entity no longer exists")).with_source(failure)
                );
            }
            Err(read) => {
                return Err(ambiguous(format!(
                    "{what}, its retry was refused (HTTP {}), and re-reading the entity failed",
                    failure.status().unwrap_or_default()
                ))
                .with_source(read));
            }
        };
        let shows_write = match merge {
            true => sent.properties.iter().all(|(name, value)| stored.properties.get(name) == Some(value)),
            false => stored.properties == sent.properties,
        };
        if !shows_write {
            return Err(ambiguous(format!(
                "{what}, and the entity has changed since: the retry's condition failed and the stored \
                 properties are not the ones written"
            ))
            .with_source(failure));
        }
        let outcome = WriteOutcome { etag: stored.etag };
        check_outcome(operation, &outcome)?;
        Ok(outcome)
    }

    /// One page of a query, each entity as read handed to `decode` (see [`Decode`]), with the
    /// continuation after it.
    pub(crate) async fn query_as<T>(
        &self,
        table: &str,
        request: &QueryRequest,
        decode: Decode<T>,
    ) -> Result<(Vec<T>, Option<Continuation>)> {
        match self {
            Backend::Embedded(e) => e.query_as(table, request, decode).await,
            Backend::Http(h) => h.query_as(table, request, decode).await,
        }
    }

    pub(crate) async fn submit_batch(
        &self,
        table: &str,
        operations: Vec<Operation>,
    ) -> Result<Vec<WriteOutcome>> {
        match self {
            Backend::Embedded(e) => e.submit_batch(table, &operations).await,
            Backend::Http(h) => h.submit_batch(table, operations).await,
        }
    }
}

/// The stored access policies and the service settings, answered by both backends alike.
impl Backend {
    pub(crate) async fn get_access_policies(&self, table: &str) -> Result<Vec<SignedIdentifier>> {
        match self {
            Backend::Embedded(e) => e.serve(Replay::Read, |e| e.get_access_policies(table)).await,
            Backend::Http(h) => h.get_access_policies(table).await,
        }
    }

    pub(crate) async fn set_access_policies(&self, table: &str, policies: &[SignedIdentifier]) -> Result<()> {
        match self {
            Backend::Embedded(e) => {
                e.serve(Replay::Idempotent, |e| e.set_access_policies(table, policies)).await
            }
            Backend::Http(h) => h.set_access_policies(table, policies).await,
        }
    }

    pub(crate) async fn get_service_properties(&self) -> Result<ServiceProperties> {
        match self {
            Backend::Embedded(e) => e.serve(Replay::Read, Engine::get_service_properties).await,
            Backend::Http(h) => h.get_service_properties().await,
        }
    }

    pub(crate) async fn set_service_properties(&self, properties: &ServiceProperties) -> Result<()> {
        match self {
            Backend::Embedded(e) => {
                e.serve(Replay::Idempotent, |e| e.set_service_properties(properties)).await
            }
            Backend::Http(h) => h.set_service_properties(properties).await,
        }
    }

    pub(crate) async fn get_service_statistics(&self) -> Result<ServiceStatistics> {
        match self {
            Backend::Embedded(e) => e.serve(Replay::Read, Engine::get_service_statistics).await,
            Backend::Http(h) => h.get_service_statistics().await,
        }
    }
}

/// A successful write of an entity must report its new ETag (a delete reports none).
fn check_outcome(operation: &Operation, outcome: &WriteOutcome) -> Result<()> {
    if outcome.etag.is_none() && operation.entity().is_some() {
        return Err(error::decode("the service answered a write without an ETag"));
    }
    Ok(())
}
