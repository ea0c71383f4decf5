//! The embedded backend: the in-process engine behind the client's retry policy.
//!
//! The engine answers in process and never loses an answer, but its injected faults
//! ([`Engine::faults`]) stand for the failures of a real service: a status (503 `ServerBusy`,
//! a 500) or a client-side timeout, before or after the request took effect. Each call into
//! the engine is one attempt of [`retry::run`], classified by [`Failure::of`](crate::retry::Failure::of)
//! exactly as the HTTP backend classifies its answers, so the retry rules, the "may have
//! applied" marker and the settling above this module behave offline as they do over HTTP.
//! Only `Retry-After` has no counterpart: the engine asks for no pause.

use table_core::engine::{CheckedKeys, Engine, Put, PutKind, Select, TableHandle};
use table_core::typed::TableEntity;
use table_core::{Continuation, Operation, QueryRequest, Result, TablePage, TableQuery, WriteOutcome};

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

    // Hands on `serve`'s future rather than awaiting it in one of its own: a layer of `async fn`
    // adds a state to set up and a copy of the answer on its way out, which a typed point read,
    // whose engine call never waits, paid for (callgrind: 19 of its 3,477 instructions).
    pub(crate) fn get_as<T>(
        &self,
        table: &TableHandle,
        keys: CheckedKeys<'_>,
        select: Option<&Select>,
        decode: Decode<T>,
    ) -> impl Future<Output = Result<T>> {
        self.serve(Replay::Read, move |e| e.get_selected_in(table, keys, select, decode.decoder()))
    }

    pub(crate) async fn execute(&self, table: &str, write: &Write) -> Result<WriteOutcome> {
        let replay = Replay::of(write.operation());
        match write {
            Write::Checked(checked) => self.serve(replay, |e| e.execute_checked(table, checked)).await,
            Write::Unchecked(operation) => self.serve(replay, |e| e.execute(table, operation)).await,
        }
    }

    // Hands on `serve`'s future, as `get_as` does: awaited in an `async fn` of its own, a typed
    // insert cost 4,323.6 instructions rather than 4,318.2 (ops_probe `probe_inserts`).
    pub(crate) fn put<T: TableEntity>(
        &self,
        table: &TableHandle,
        put: &Put<'_, T>,
    ) -> impl Future<Output = Result<WriteOutcome>> {
        let replay = Replay::of_write(*put.kind() == PutKind::Insert);
        self.serve(replay, move |e| e.put(table, put))
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
    pub(crate) async fn serve<T>(
        &self,
        replay: Replay,
        mut call: impl FnMut(&Engine) -> Result<T>,
    ) -> Result<T> {
        // The first attempt is made before the retry loop's future is built: nearly every call
        // succeeds at once, and building, polling and dropping that future (it holds the
        // pause's timer) cost more than the engine's own work on a point read. A failed first
        // attempt is the loop's first, so it is retried and marked exactly as there.
        let mut first = match call(&self.engine) {
            Ok(value) => return Ok(value),
            Err(error) => Some(error),
        };
        let mut attempt = || match first.take() {
            Some(error) => Err(error),
            None => call(&self.engine),
        };
        retry::run(&self.retry, replay, || std::future::ready(attempt().map_err(Failed::of))).await
    }
}
