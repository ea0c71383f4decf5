//! The HTTP backend: Table REST requests with reqwest (rustls), signed per request, retried
//! with backoff when that is safe, each inside a `tracing` span that records the service's
//! request id.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderValue};
use table_core::batch::MAX_BATCH_BODY;
use table_core::query::Continuation;
use table_core::{
    ETag, Entity, Error, ErrorKind, IfMatch, Operation, Page, QueryRequest, Result, TablePage, TableQuery,
    Violation, WriteOutcome,
};
use tracing::Instrument;

use crate::auth::{Credential, http_date};
use crate::retry::{Failure, Replay, RetryPolicy, ambiguous};
use crate::wire::{self, url};

/// The service version we speak.
const API_VERSION: &str = "2019-02-02";
const CONTENT_JSON: &str = "application/json";

/// Transport settings of an HTTP client.
#[derive(Debug, Clone)]
pub(crate) struct HttpOptions {
    pub(crate) retry: RetryPolicy,
    pub(crate) timeout: Duration,
}

/// A Table service endpoint with its credential. Cheap to clone (one `Arc`).
#[derive(Debug, Clone)]
pub(crate) struct HttpBackend {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    /// Base URL without a trailing `/` (path style ends in the account name).
    endpoint: String,
    credential: Credential,
    options: HttpOptions,
}

/// One request as the backend builds it, before signing.
struct Request<'a> {
    method: Method,
    url: String,
    content_type: &'a str,
    /// Shared, so a retry re-sends it without copying (a batch body is up to 4 MiB).
    body: bytes::Bytes,
    if_match: Option<&'a IfMatch>,
    prefer_no_content: bool,
    replay: Replay,
}

/// A successful answer, body read in full.
struct Response {
    headers: HeaderMap,
    body: bytes::Bytes,
}

impl HttpBackend {
    pub(crate) fn new(endpoint: &str, credential: Credential, options: HttpOptions) -> Result<Self> {
        let http = reqwest::Client::builder().build().map_err(|e| {
            Error::new(ErrorKind::Transport, "could not build the HTTP client").with_source(e)
        })?;
        Ok(HttpBackend {
            inner: Arc::new(Inner {
                http,
                endpoint: endpoint.trim_end_matches('/').to_owned(),
                credential,
                options,
            }),
        })
    }

    fn url(&self, path: &str) -> String {
        url::resource_url(&self.inner.endpoint, path)
    }

    pub(crate) async fn create_table(&self, name: &str) -> Result<()> {
        let body = wire::encode_create_table(name).into_bytes();
        let request = Request {
            prefer_no_content: true,
            ..Request::new(Method::POST, self.url(url::TABLES_PATH), Replay::NotIdempotent).json(body)
        };
        self.send(request).await.map(drop)
    }

    pub(crate) async fn delete_table(&self, name: &str) -> Result<()> {
        let request = Request::new(Method::DELETE, self.url(&url::table_path(name)), Replay::Idempotent);
        self.send(request).await.map(drop)
    }

    pub(crate) async fn query_tables(&self, query: &TableQuery) -> Result<TablePage> {
        let target = url::with_query(&self.url(url::TABLES_PATH), &url::table_query(query));
        let response = self.send(Request::new(Method::GET, target, Replay::Idempotent)).await?;
        let tables = wire::decode_table_list(&response.body)?;
        let next_table_name = header(&response.headers, "x-ms-continuation-NextTableName").map(str::to_owned);
        Ok(TablePage { tables, next_table_name })
    }

    pub(crate) async fn get(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
    ) -> Result<Entity> {
        let path = url::entity_path(table, partition_key, row_key);
        let query = QueryRequest { select: select.map(<[String]>::to_vec), ..QueryRequest::default() };
        let target = url::with_query(&self.url(&path), &url::entity_query(&query));
        let response = self.send(Request::new(Method::GET, target, Replay::Idempotent)).await?;
        wire::decode_entity(&response.body, header(&response.headers, "etag"))
    }

    pub(crate) async fn execute(&self, table: &str, operation: Operation) -> Result<WriteOutcome> {
        let merge = || Method::from_bytes(b"MERGE").expect("MERGE is a valid method token");
        let entity_url = |e: &Entity| self.url(&url::entity_path(table, &e.partition_key, &e.row_key));
        let request = match &operation {
            Operation::Insert(e) => Request {
                prefer_no_content: true,
                ..Request::new(Method::POST, self.url(&url::entities_path(table)), Replay::NotIdempotent)
                    .entity(e)
            },
            Operation::Replace { entity, if_match } => {
                Request::new(Method::PUT, entity_url(entity), Replay::Idempotent)
                    .entity(entity)
                    .if_match(if_match)
            }
            Operation::Merge { entity, if_match } => {
                Request::new(merge(), entity_url(entity), Replay::Idempotent)
                    .entity(entity)
                    .if_match(if_match)
            }
            Operation::InsertOrReplace(entity) => {
                Request::new(Method::PUT, entity_url(entity), Replay::Idempotent).entity(entity)
            }
            Operation::InsertOrMerge(entity) => {
                Request::new(merge(), entity_url(entity), Replay::Idempotent).entity(entity)
            }
            Operation::Delete { key, if_match } => {
                let target = self.url(&url::entity_path(table, &key.partition_key, &key.row_key));
                Request::new(Method::DELETE, target, Replay::Idempotent).if_match(if_match)
            }
        };
        let response = match self.send(request).await {
            Ok(response) => response,
            Err(e) => return self.settle_conditional_write(table, &operation, e).await,
        };
        let outcome = WriteOutcome { etag: header(&response.headers, "etag").map(ETag::new) };
        // The service answered success: the write applied, but its answer cannot be trusted.
        check_outcome(&operation, &outcome).map_err(Error::with_may_have_applied)?;
        Ok(outcome)
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
            Err(read) if read.is_not_found() => {
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

    pub(crate) async fn query(&self, table: &str, request: &QueryRequest) -> Result<Page> {
        let target = url::with_query(&self.url(&url::entities_path(table)), &url::entity_query(request));
        let response = self.send(Request::new(Method::GET, target, Replay::Idempotent)).await?;
        let entities = wire::decode_query_page(&response.body)?;
        let continuation =
            header(&response.headers, "x-ms-continuation-NextPartitionKey").map(|pk| Continuation {
                next_partition_key: pk.to_owned(),
                next_row_key: header(&response.headers, "x-ms-continuation-NextRowKey").map(str::to_owned),
            });
        Ok(Page { entities, continuation })
    }

    pub(crate) async fn submit_batch(
        &self,
        table: &str,
        operations: Vec<Operation>,
    ) -> Result<Vec<WriteOutcome>> {
        let (content_type, body) = wire::encode_batch(&self.inner.endpoint, table, &operations);
        if body.len() > MAX_BATCH_BODY {
            return Err(Error::invalid(Violation::BatchTooLarge { size: body.len(), max: MAX_BATCH_BODY }));
        }
        let request = Request {
            content_type: &content_type,
            body: body.into(),
            ..Request::new(Method::POST, self.url(url::BATCH_PATH), Replay::NotIdempotent)
        };
        let response = self.send(request).await?;
        let response_type = header(&response.headers, "content-type").unwrap_or_default();
        // A failing part is the service's definite answer (nothing applied); a response that
        // cannot be read may hide a committed transaction.
        let outcomes =
            wire::decode_batch_response(response_type, &response.body).map_err(|e| match e.kind() {
                ErrorKind::Decode => e.with_may_have_applied(),
                _ => e,
            })?;
        if outcomes.len() != operations.len() {
            return Err(Error::new(
                ErrorKind::Decode,
                format!(
                    "the batch response has {} parts for {} operations",
                    outcomes.len(),
                    operations.len()
                ),
            )
            .with_may_have_applied());
        }
        for (index, (operation, outcome)) in operations.iter().zip(&outcomes).enumerate() {
            check_outcome(operation, outcome)
                .map_err(|e| e.with_batch_index(index).with_may_have_applied())?;
        }
        Ok(outcomes)
    }

    /// Sends a request, retrying transient failures as the retry policy and the request's
    /// replay safety allow. Error answers become [`Error`]s; the final error of a write any of
    /// whose attempts was ambiguous is marked [`Error::may_have_applied`].
    async fn send(&self, request: Request<'_>) -> Result<Response> {
        let span = tracing::info_span!(
            "table_request",
            method = %request.method,
            url = %strip_query(&request.url),
            status = tracing::field::Empty,
            request_id = tracing::field::Empty,
        );
        async move {
            let policy = &self.inner.options.retry;
            let mut retry = 0;
            // Whether some attempt so far may have been processed without a trustworthy answer.
            let mut ambiguous = false;
            loop {
                let (failure, error) = match self.attempt(&request).await {
                    Ok(response) => return Ok(response),
                    Err(Attempt::Answered(error)) => {
                        (error.status().map_or(Failure::NotSent, Failure::Answered), error)
                    }
                    Err(Attempt::Transport { error, connect_failed: true }) => {
                        (Failure::ConnectFailed, error)
                    }
                    Err(Attempt::Transport { error, connect_failed: false }) => (Failure::Lost, error),
                };
                ambiguous |= failure.is_ambiguous();
                if retry >= policy.retries() || !failure.is_retryable(request.replay) {
                    // A read changes nothing, whatever reached the service.
                    return Err(match ambiguous && request.method != Method::GET {
                        true => error.with_may_have_applied(),
                        false => error,
                    });
                }
                let pause = policy.backoff(retry);
                tracing::warn!(retry, ?pause, error = %error, "retrying a transient failure");
                tokio::time::sleep(pause).await;
                retry += 1;
            }
        }
        .instrument(span)
        .await
    }

    async fn attempt(&self, request: &Request<'_>) -> std::result::Result<Response, Attempt> {
        let date = http_date(chrono::Utc::now());
        let signed = self
            .inner
            .credential
            .authorize(request.method.as_str(), &request.url, request.content_type, &date)
            .map_err(Attempt::Answered)?;
        let mut builder = self
            .inner
            .http
            .request(request.method.clone(), &signed.url)
            .timeout(self.inner.options.timeout)
            .header("x-ms-version", API_VERSION)
            .header("Accept", wire::ACCEPT)
            .header("DataServiceVersion", "3.0")
            .header("MaxDataServiceVersion", "3.0;NetFx")
            .header("x-ms-client-request-id", uuid::Uuid::new_v4().to_string());
        for (name, value) in &signed.headers {
            builder = builder.header(*name, value);
        }
        if !request.content_type.is_empty() {
            builder = builder.header("Content-Type", request.content_type).body(request.body.clone());
        } else if request.method != Method::GET {
            builder = builder.header("Content-Length", "0");
        }
        if let Some(if_match) = request.if_match {
            builder = builder.header("If-Match", if_match.as_header());
        }
        if request.prefer_no_content {
            builder = builder.header("Prefer", "return-no-content");
        }
        let response = builder.send().await.map_err(Attempt::transport)?;
        let status = response.status();
        let headers = response.headers().clone();
        let span = tracing::Span::current();
        span.record("status", status.as_u16());
        if let Some(id) = header(&headers, wire::REQUEST_ID_HEADER) {
            span.record("request_id", id);
        }
        let body = response.bytes().await.map_err(Attempt::transport)?;
        if status.is_success() {
            return Ok(Response { headers, body });
        }
        let pairs: Vec<(&str, &str)> =
            headers.iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))).collect();
        Err(Attempt::Answered(wire::decode_error(status.as_u16(), &pairs, &body)))
    }
}

/// How one attempt failed.
enum Attempt {
    /// The service answered with an error (or the request could not be signed).
    Answered(Error),
    /// No answer: timeout, refused or dropped connection.
    Transport { error: Error, connect_failed: bool },
}

impl Attempt {
    fn transport(e: reqwest::Error) -> Attempt {
        let connect_failed = e.is_connect();
        let (kind, message) = if e.is_timeout() {
            (ErrorKind::Timeout, "the request timed out")
        } else if connect_failed {
            (ErrorKind::Transport, "could not connect to the service")
        } else {
            (ErrorKind::Transport, "the connection failed before a complete answer arrived")
        };
        Attempt::Transport {
            // The URL may carry a SAS signature, and the source shows in every `Debug` of the
            // error; the span of the request already records the URL without its query.
            error: Error::new(kind, message).with_source(e.without_url()),
            connect_failed,
        }
    }
}

impl<'a> Request<'a> {
    fn new(method: Method, url: String, replay: Replay) -> Self {
        Request {
            method,
            url,
            content_type: "",
            body: bytes::Bytes::new(),
            if_match: None,
            prefer_no_content: false,
            replay,
        }
    }

    fn json(self, body: impl Into<bytes::Bytes>) -> Self {
        Request { content_type: CONTENT_JSON, body: body.into(), ..self }
    }

    fn entity(self, entity: &Entity) -> Self {
        self.json(wire::encode_entity(entity).into_bytes())
    }

    fn if_match(self, if_match: &'a IfMatch) -> Self {
        Request { if_match: Some(if_match), ..self }
    }
}

/// A successful write of an entity must report its new ETag (a delete reports none).
fn check_outcome(operation: &Operation, outcome: &WriteOutcome) -> Result<()> {
    if outcome.etag.is_none() && operation.entity().is_some() {
        return Err(Error::new(ErrorKind::Decode, "the service answered a write without an ETag"));
    }
    Ok(())
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok())
}

/// The URL without its query string, for logs: a SAS signature must never be printed.
fn strip_query(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}
