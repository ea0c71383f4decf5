//! The embedded backend: the in-process engine behind the client's retry policy.
//!
//! The engine answers in process and never loses an answer, but its injected faults
//! ([`Engine::faults`]) stand for the failures of a real service: a status (503 `ServerBusy`,
//! a 500) or a client-side timeout, before or after the request took effect. Each call into
//! the engine is one attempt of [`retry::run`], classified by [`Failure::of`](crate::retry::Failure::of)
//! exactly as the HTTP backend classifies its answers, so the retry rules, the "may have
//! applied" marker and the settling above this module behave offline as they do over HTTP.
//! Only `Retry-After` has no counterpart: the engine asks for no pause.
//!
//! A point read or typed write may make its first attempt synchronously (`try_get_as`,
//! `try_put`) and hand its error to the call's attempts (`get_as`, `put`), which
//! [`serve_from`](EmbeddedBackend::serve_from) counts as the retry loop's first.

use table_core::engine::{CheckedKeys, Engine, Put, PutKind, Select, TableHandle};
use table_core::typed::TableEntity;
use table_core::{Continuation, Error, Operation, QueryRequest, Result, TablePage, TableQuery, WriteOutcome};

use super::{Decode, Write};

use crate::retry::{self, Failed, Replay, RetryPolicy};

/// An engine with the retry policy of the client that serves it. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct EmbeddedBackend {
    engine: Engine,
    retry: RetryPolicy,
}

impl EmbeddedBackend {
    pub(crate) fn new(engine: Engine, retry: RetryPolicy) -> Self {
        EmbeddedBackend { engine, retry }
    }

    pub(crate) async fn create_table(&self, name: &str) -> Result<()> {
        self.serve(Replay::NotIdempotent, |e| e.create_table(name)).await
    }

    pub(crate) async fn delete_table(&self, name: &str) -> Result<()> {
        self.serve(Replay::Idempotent, |e| e.delete_table(name)).await
    }

    pub(crate) async fn query_tables(&self, query: &TableQuery) -> Result<TablePage> {
        self.serve(Replay::Read, |e| e.query_tables(query)).await
    }

    /// The first attempt of [`get_as`](Self::get_as), made now: the engine never waits.
    pub(crate) fn try_get_as<T>(
        &self,
        table: &TableHandle,
        keys: CheckedKeys<'_>,
        select: Option<&Select>,
        decode: Decode<T>,
    ) -> Result<T> {
        read_one(table, keys, select, decode)(&self.engine)
    }

    /// A point read's attempts, after the `first` one's error when [`try_get_as`](Self::try_get_as)
    /// made it.
    // Hands on `serve_from`'s future rather than awaiting it in one of its own: a layer of
    // `async fn` adds a state to set up and a copy of the answer on its way out (callgrind: 19
    // of a typed point read's 3,477 instructions, when every read went this way).
    pub(crate) fn get_as<T>(
        &self,
        table: &TableHandle,
        keys: CheckedKeys<'_>,
        select: Option<&Select>,
        decode: Decode<T>,
        first: Option<Error>,
    ) -> impl Future<Output = Result<T>> {
        self.serve_from(Replay::Read, first, read_one(table, keys, select, decode))
    }

    pub(crate) async fn execute(&self, table: &str, write: &Write) -> Result<WriteOutcome> {
        let replay = Replay::of(write.operation());
        match write {
            Write::Checked(checked) => self.serve(replay, |e| e.execute_checked(table, checked)).await,
            Write::Unchecked(operation) => self.serve(replay, |e| e.execute(table, operation)).await,
        }
    }

    /// The first attempt of [`put`](Self::put), made now.
    pub(crate) fn try_put<T: TableEntity>(
        &self,
        table: &TableHandle,
        put: &Put<'_, T>,
    ) -> Result<WriteOutcome> {
        self.engine.put(table, put)
    }

    /// A typed whole-entity write's attempts, after the `first` one's error when
    /// [`try_put`](Self::try_put) made it. Hands on `serve_from`'s future, as `get_as` does.
    pub(crate) fn put<T: TableEntity>(
        &self,
        table: &TableHandle,
        put: &Put<'_, T>,
        first: Option<Error>,
    ) -> impl Future<Output = Result<WriteOutcome>> {
        let replay = Replay::of_write(*put.kind() == PutKind::Insert);
        self.serve_from(replay, first, move |e| e.put(table, put))
    }

    pub(crate) async fn query_as<T>(
        &self,
        table: &str,
        request: &QueryRequest,
        decode: Decode<T>,
    ) -> Result<(Vec<T>, Option<Continuation>)> {
        self.serve(Replay::Read, |e| e.query_as(table, request, decode.decoder())).await
    }

    pub(crate) async fn submit_batch(
        &self,
        table: &str,
        operations: &[Operation],
    ) -> Result<Vec<WriteOutcome>> {
        self.serve(Replay::NotIdempotent, |e| e.submit_batch(table, operations)).await
    }

    /// Runs `call` as the attempts of one request.
    pub(crate) fn serve<T>(
        &self,
        replay: Replay,
        call: impl FnMut(&Engine) -> Result<T>,
    ) -> impl Future<Output = Result<T>> {
        self.serve_from(replay, None, call)
    }

    /// [`serve`](Self::serve) of a request whose first attempt the caller made already, when
    /// `first` holds its error (the typed point calls' synchronous path, see
    /// [`Now`](super::Now)); with `None`, the first attempt is made here.
    async fn serve_from<T>(
        &self,
        replay: Replay,
        first: Option<Error>,
        mut call: impl FnMut(&Engine) -> Result<T>,
    ) -> Result<T> {
        // The first attempt is made before the retry loop's future is built: nearly every call
        // succeeds at once, and building, polling and dropping that future (it holds the
        // pause's timer) cost more than the engine's own work on a point read. A failed first
        // attempt is the loop's first, so it is retried and marked exactly as there.
        let mut first = match first {
            Some(error) => Some(error),
            None => match call(&self.engine) {
                Ok(value) => return Ok(value),
                Err(error) => Some(error),
            },
        };
        let mut attempt = || match first.take() {
            Some(error) => Err(error),
            None => call(&self.engine),
        };
        retry::run(&self.retry, replay, || std::future::ready(attempt().map_err(Failed::of))).await
    }
}

/// One attempt of a point read of `keys`, as both the first attempt and the retries make it.
fn read_one<T>(
    table: &TableHandle,
    keys: CheckedKeys<'_>,
    select: Option<&Select>,
    decode: Decode<T>,
) -> impl FnMut(&Engine) -> Result<T> {
    move |e| e.get_selected_in(table, keys, select, decode.decoder())
}
