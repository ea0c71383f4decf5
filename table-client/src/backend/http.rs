//! The HTTP backend: Table REST requests with reqwest (rustls), signed per request, retried
//! with backoff when that is safe, each inside a `tracing` span that records the service's
//! request id.
//!
//! Answers are not trusted blindly: a redirect is an error (never followed, so a signed request
//! only goes where the caller pointed it), and a header the client acts on (ETag,
//! continuations, Content-Type) that is present but unreadable fails the request with
//! [`ErrorKind::Decode`] instead of reading as absent, and a body is read only up to what its
//! kind of answer can honestly take (one entity, a page of the size asked for, a batch, an
//! error: the limits are derived in `wire` from the service's own), so no server can make the
//! client buffer without bound. A page with more items than asked for is refused.
//!
//! With a token credential, every request carries the cached bearer token; an answer that the
//! token has expired gets one new token and one more exchange within the same attempt, so a
//! token that keeps being refused ends in the service's `Auth` error, never a loop. Bearer
//! tokens only travel over https, except to a loopback host (tests).

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{self as names, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use table_core::engine::Select;
use table_core::{
    Continuation, ETag, Entity, Error, ErrorKind, IfMatch, MAX_BATCH_BODY, Operation, QueryRequest, Result,
    ServiceProperties, ServiceStatistics, SignedIdentifier, TablePage, TableQuery, Violation, WriteOutcome,
};
use tracing::Instrument;

use super::{Decode, check_outcome};
use crate::auth::{Credential, SignedRequest, TokenCache, authorize_bearer, http_date, says_token_expired};
use crate::error;
use crate::location::{self, Location, LocationMode, Route};
use crate::proxy::Proxy;
use crate::retry::{self, Failed, Failure, Replay, RetryPolicy};
use crate::wire::{self, MAX_PAGE_SIZE, check_received_etag, url};

/// The service version we speak (Microsoft Entra ID bearer tokens need 2017-11-09 or later).
const API_VERSION: &str = "2019-02-02";
const CONTENT_JSON: &str = "application/json";

// The headers every request carries, built once: a name or value given as text is parsed and
// copied per request.
const X_MS_VERSION: HeaderName = HeaderName::from_static("x-ms-version");
const DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("dataserviceversion");
const MAX_DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("maxdataserviceversion");
const CLIENT_REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-client-request-id");
const PREFER: HeaderName = HeaderName::from_static("prefer");
/// Room for every header a request may carry (ours, the credential's, and the `Host` and
/// `Content-Length` the HTTP stack adds), so that the map is never grown while it is filled.
const REQUEST_HEADERS: usize = 16;

/// Transport settings of an HTTP client.
#[derive(Debug, Clone)]
pub(crate) struct HttpOptions {
    pub(crate) retry: RetryPolicy,
    pub(crate) timeout: Duration,
    /// The `User-Agent` of every request.
    pub(crate) user_agent: String,
    /// The caller's HTTP client, used as it was built; without one, a client is built here.
    pub(crate) client: Option<reqwest::Client>,
    /// The proxy of the client built here.
    pub(crate) proxy: Option<Proxy>,
    pub(crate) location: LocationMode,
    /// The secondary endpoint given explicitly (else derived, when `location` reads from it).
    pub(crate) secondary_endpoint: Option<String>,
    /// Trusted besides the built-in roots (a private CA, a test server's own certificate).
    pub(crate) root_certificates: Vec<reqwest::Certificate>,
}

/// How the backend authorizes its requests.
#[derive(Debug, Clone)]
pub(crate) enum RequestAuth {
    /// Signed (or not) per request by a [`Credential`].
    Credential(Credential),
    /// A bearer token from a token credential, through the cache all clones share.
    Bearer(TokenCache),
}

/// A Table service endpoint with its credential. Cheap to clone (one `Arc`).
#[derive(Debug, Clone)]
pub(crate) struct HttpBackend {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    /// `options.user_agent` as a header value, made once.
    user_agent: HeaderValue,
    /// Base URL without a trailing `/` (path style ends in the account name).
    endpoint: String,
    /// Where reads may also go (see `location`); same form as `endpoint`.
    secondary: Option<String>,
    auth: RequestAuth,
    options: HttpOptions,
}

/// One request as the backend builds it, before signing.
struct Request<'a> {
    method: Method,
    url: String,
    content_type: &'a str,
    /// Shared, so a retry re-sends it without copying (a batch body is up to 4 MiB).
    body: bytes::Bytes,
    /// The `Accept` header: the OData JSON forms, or XML for the settings' answers.
    accept: &'static str,
    if_match: Option<&'a IfMatch>,
    prefer_no_content: bool,
    replay: Replay,
    /// The most bytes a successful answer may have; see [`read_body`].
    max_body: usize,
}

/// A successful answer, body read in full (within the request's `max_body`).
struct Response {
    headers: HeaderMap,
    body: bytes::Bytes,
}

impl HttpBackend {
    pub(crate) fn new(endpoint: &str, auth: RequestAuth, options: HttpOptions) -> Result<Self> {
        let endpoint = url::parse_endpoint(endpoint, "the endpoint")?;
        let secondary =
            location::read_secondary(options.location, &endpoint, options.secondary_endpoint.as_deref())?;
        if matches!(auth, RequestAuth::Bearer(_)) {
            check_bearer_transport(&endpoint)?;
            if let Some(secondary) = &secondary {
                check_bearer_transport(secondary)?;
            }
        }
        let http = match &options.client {
            Some(own) => own.clone(),
            None => {
                // A redirect is answered as an error, never followed: following it would send
                // the signed request (and a SAS in its URL) to a host the caller did not name.
                let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
                if let Some(proxy) = &options.proxy {
                    builder = builder.proxy(proxy.to_reqwest());
                }
                for certificate in &options.root_certificates {
                    builder = builder.add_root_certificate(certificate.clone());
                }
                builder
                    .build()
                    .map_err(|e| error::transport("could not build the HTTP client").with_source(e))?
            }
        };
        let user_agent = HeaderValue::try_from(options.user_agent.as_str()).map_err(|e| {
            error::invalid_input("the user agent holds characters HTTP cannot carry").with_source(e)
        })?;
        Ok(HttpBackend { inner: Arc::new(Inner { http, user_agent, endpoint, secondary, auth, options }) })
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
        self.send(request).await.map(drop).map_err(|e| e.about(name, None))
    }

    pub(crate) async fn delete_table(&self, name: &str) -> Result<()> {
        let request = Request::new(Method::DELETE, self.url(&url::table_path(name)), Replay::Idempotent);
        self.send(request).await.map(drop).map_err(|e| e.about(name, None))
    }

    pub(crate) async fn query_tables(&self, query: &TableQuery) -> Result<TablePage> {
        let target = url::with_query(&self.url(url::TABLES_PATH), &url::table_query(query));
        let page_size = requested_page_size(query.top);
        let request =
            Request::new(Method::GET, target, Replay::Read).max_body(wire::table_list_body_limit(page_size));
        let response = self.send(request).await?;
        let tables = wire::decode_table_list(&response.body)?;
        check_page_size(tables.len(), page_size, "table names")?;
        let next_table_name = header(&response.headers, NEXT_TABLE_NAME.name).map(str::to_owned);
        Ok(TablePage { tables, next_table_name })
    }

    pub(crate) async fn get_as<T>(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        select: Option<&Select>,
        decode: Decode<T>,
    ) -> Result<T> {
        let path = url::entity_path(table, partition_key, row_key);
        let query = QueryRequest { select: select.map(|s| s.names().to_vec()), ..QueryRequest::default() };
        let target = url::with_query(&self.url(&path), &url::entity_query(&query));
        let response = self
            .send(Request::new(Method::GET, target, Replay::Read))
            .await
            .map_err(|e| e.about(table, Some((partition_key, row_key))))?;
        let etag_header = header(&response.headers, ETAG.name);
        wire::decode_point_read(&response.body, etag_header, partition_key, row_key, decode)
    }

    pub(crate) async fn execute(&self, table: &str, operation: &Operation) -> Result<WriteOutcome> {
        let merge = || Method::from_bytes(b"MERGE").expect("MERGE is a valid method token");
        let entity_url = |e: &Entity| self.url(&url::entity_path(table, &e.partition_key, &e.row_key));
        let replay = Replay::of(operation);
        let request = match operation {
            Operation::Insert(e) => Request {
                prefer_no_content: true,
                ..Request::new(Method::POST, self.url(&url::entities_path(table)), replay).entity(e)
            },
            Operation::Replace { entity, if_match } => {
                Request::new(Method::PUT, entity_url(entity), replay).entity(entity).if_match(if_match)
            }
            Operation::Merge { entity, if_match } => {
                Request::new(merge(), entity_url(entity), replay).entity(entity).if_match(if_match)
            }
            Operation::InsertOrReplace(entity) => {
                Request::new(Method::PUT, entity_url(entity), replay).entity(entity)
            }
            Operation::InsertOrMerge(entity) => {
                Request::new(merge(), entity_url(entity), replay).entity(entity)
            }
            Operation::Delete { key, if_match } => {
                let target = self.url(&url::entity_path(table, &key.partition_key, &key.row_key));
                Request::new(Method::DELETE, target, replay).if_match(if_match)
            }
        };
        let response = self
            .send(request)
            .await
            .map_err(|e| e.about(table, Some((operation.partition_key(), operation.row_key()))))?;
        let outcome = WriteOutcome { etag: header(&response.headers, ETAG.name).map(ETag::new) };
        // The service answered success: the write applied, but its answer cannot be trusted.
        check_outcome(operation, &outcome).map_err(Error::with_may_have_applied)?;
        Ok(outcome)
    }

    pub(crate) async fn query_as<T>(
        &self,
        table: &str,
        request: &QueryRequest,
        decode: Decode<T>,
    ) -> Result<(Vec<T>, Option<Continuation>)> {
        let target = url::with_query(&self.url(&url::entities_path(table)), &url::entity_query(request));
        let page_size = requested_page_size(request.top);
        let page_request =
            Request::new(Method::GET, target, Replay::Read).max_body(wire::query_page_body_limit(page_size));
        let response = self.send(page_request).await?;
        let entities = wire::decode_query_page_each(&response.body, decode, page_size)?;
        check_page_size(entities.len(), page_size, "entities")?;
        let continuation = match (
            header(&response.headers, NEXT_PARTITION_KEY.name),
            header(&response.headers, NEXT_ROW_KEY.name),
        ) {
            (Some(partition_key), row_key) => Some(Continuation {
                next_partition_key: partition_key.to_owned(),
                next_row_key: row_key.map(str::to_owned),
            }),
            (None, None) => None,
            // Resuming from the row key alone would restart the scan elsewhere; stopping here
            // would drop the rest of the result.
            (None, Some(_)) => {
                return Err(error::decode(format!(
                    "the service sent {} without {}",
                    NEXT_ROW_KEY.shown, NEXT_PARTITION_KEY.shown
                )));
            }
        };
        // Each entity was decoded as read; its error counts once the page is known to be whole
        // and of the size asked for.
        Ok((entities.into_iter().collect::<Result<_>>()?, continuation))
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
                .max_body(wire::MAX_BATCH_RESPONSE_BODY)
        };
        // A failed operation is named by its index: its entity is named too.
        let about = |e: Error| match e.batch_index().and_then(|i| operations.get(i)) {
            Some(op) => e.about(table, Some((op.partition_key(), op.row_key()))),
            None => e.about(table, None),
        };
        let response = self.send(request).await.map_err(about)?;
        // The 202 says the batch was received; when its parts cannot be read, whether it was
        // applied is unknown. A failed part is the service's definite answer: nothing applied.
        let undecodable =
            |e: Error| if e.kind() == ErrorKind::Decode { e.with_may_have_applied() } else { e };
        let response_type = header(&response.headers, CONTENT_TYPE.name).unwrap_or_default();
        let outcomes =
            wire::decode_batch_response(response_type, &response.body).map_err(|e| about(undecodable(e)))?;
        if outcomes.len() != operations.len() {
            return Err(error::decode(format!(
                "the batch response has {} parts for {} operations",
                outcomes.len(),
                operations.len()
            ))
            .with_may_have_applied());
        }
        for (index, (operation, outcome)) in operations.iter().zip(&outcomes).enumerate() {
            check_outcome(operation, outcome)
                .map_err(|e| e.with_may_have_applied().with_batch_index(index))?;
        }
        Ok(outcomes)
    }

    /// The base URL (path style ends in the account name), without a trailing `/`.
    pub(crate) fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// How the requests are authorized.
    pub(crate) fn auth(&self) -> &RequestAuth {
        &self.inner.auth
    }

    pub(crate) async fn get_access_policies(&self, table: &str) -> Result<Vec<SignedIdentifier>> {
        let target = url::with_query(&self.url(&url::entities_path(table)), url::ACL_QUERY);
        let response = self
            .send(Request::new(Method::GET, target, Replay::Read).xml_answer())
            .await
            .map_err(|e| e.about(table, None))?;
        wire::decode_signed_identifiers(&response.body).map_err(|e| e.with_status(200).about(table, None))
    }

    pub(crate) async fn set_access_policies(&self, table: &str, policies: &[SignedIdentifier]) -> Result<()> {
        let target = url::with_query(&self.url(&url::entities_path(table)), url::ACL_QUERY);
        let body = wire::encode_signed_identifiers(policies)?;
        let request = Request::new(Method::PUT, target, Replay::Idempotent).xml(body);
        self.send(request).await.map(drop).map_err(|e| e.about(table, None))
    }

    pub(crate) async fn get_service_properties(&self) -> Result<ServiceProperties> {
        let target = url::with_query(&self.url(""), url::SERVICE_PROPERTIES_QUERY);
        let response = self.send(Request::new(Method::GET, target, Replay::Read).xml_answer()).await?;
        wire::decode_service_properties(&response.body).map_err(|e| e.with_status(200))
    }

    pub(crate) async fn set_service_properties(&self, properties: &ServiceProperties) -> Result<()> {
        let target = url::with_query(&self.url(""), url::SERVICE_PROPERTIES_QUERY);
        let body = wire::encode_service_properties(properties)?;
        self.send(Request::new(Method::PUT, target, Replay::Idempotent).xml(body)).await.map(drop)
    }

    /// Asked of the secondary location (the configured secondary endpoint, or else
    /// `<account>-secondary`), the only one that answers it, whatever the location mode.
    pub(crate) async fn get_service_statistics(&self) -> Result<ServiceStatistics> {
        let secondary = match &self.inner.options.secondary_endpoint {
            Some(given) => url::parse_endpoint(given, "the secondary endpoint")?,
            None => location::derive_secondary(&self.inner.endpoint)?,
        };
        let target = url::with_query(&url::resource_url(&secondary, ""), url::SERVICE_STATS_QUERY);
        let response = self.send(Request::new(Method::GET, target, Replay::Read).xml_answer()).await?;
        wire::decode_service_statistics(&response.body).map_err(|e| e.with_status(200))
    }

    /// Sends a request, retrying transient failures as the retry policy and the request's
    /// replay safety allow ([`retry::run`]). Error answers become [`Error`]s; the final error
    /// of a write any of whose attempts was ambiguous is marked [`Error::may_have_applied`].
    ///
    /// Every attempt of one call carries the same `x-ms-client-request-id`, recorded in the
    /// call's span beside the service's request id; reads may go to the secondary endpoint
    /// (see `location`).
    async fn send(&self, request: Request<'_>) -> Result<Response> {
        // A correlation id, not a secret: drawn from the thread's fast generator rather than
        // the OS's, which costs a system call per request.
        let client_request_id =
            uuid::Builder::from_random_bytes(fastrand::u128(..).to_le_bytes()).into_uuid().to_string();
        let span = tracing::info_span!(
            "table_request",
            method = %request.method,
            url = %strip_query(&request.url),
            client_request_id = %client_request_id,
            status = tracing::field::Empty,
            request_id = tracing::field::Empty,
        );
        let secondary = self.inner.secondary.as_deref().filter(|_| request.replay == Replay::Read);
        let route = Route::new(&self.inner.endpoint, secondary);
        let policy = &self.inner.options.retry;
        retry::run(policy, request.replay, || async {
            let location = route.next();
            let url = route.url(location, &request.url);
            if location == Location::Secondary {
                tracing::debug!(url = %strip_query(&url), "reading from the secondary endpoint");
            }
            let attempt = self.attempt(&request, &url, &client_request_id).await;
            attempt.map_err(|failed| route.judge(location, Failed::from(failed)))
        })
        .instrument(span)
        .await
    }

    /// One attempt of `request`, sent to `url` (the request's own, or its secondary form):
    /// authorize, exchange, and with a bearer token that the service refused as expired, one
    /// more exchange with a new token.
    async fn attempt(
        &self,
        request: &Request<'_>,
        url: &str,
        client_request_id: &str,
    ) -> std::result::Result<Response, Attempt> {
        let date = http_date(chrono::Utc::now());
        let cache = match &self.inner.auth {
            RequestAuth::Credential(credential) => {
                let signed = credential
                    .authorize(request.method.as_str(), url, request.content_type, &date)
                    .map_err(Attempt::Answered)?;
                return self.exchange(request, signed, client_request_id).await;
            }
            RequestAuth::Bearer(cache) => cache,
        };
        let bearer = cache.bearer().await.map_err(Attempt::Answered)?;
        match self.exchange(request, authorize_bearer(url, &date, bearer.header), client_request_id).await {
            Err(Attempt::TokenExpired(_)) => {
                let renewed = cache.replace(bearer.generation).await.map_err(Attempt::Answered)?;
                self.exchange(request, authorize_bearer(url, &date, renewed.header), client_request_id).await
            }
            other => other,
        }
    }

    /// Sends one authorized request and reads its answer.
    async fn exchange(
        &self,
        request: &Request<'_>,
        signed: SignedRequest,
        client_request_id: &str,
    ) -> std::result::Result<Response, Attempt> {
        // Parsed once: the same URL is sent and compared with the one the answer came from.
        let target = Url::parse(&signed.url).map_err(|e| {
            Attempt::Answered(error::invalid_input("the request URL does not parse").with_source(e))
        })?;
        // The request is assembled here rather than through reqwest's builder: its headers go
        // into one map sized for all of them (the builder grows its map as they come, and
        // parses each name and value given as text), and the user agent is made once.
        let mut headers = HeaderMap::with_capacity(REQUEST_HEADERS);
        headers.insert(X_MS_VERSION, HeaderValue::from_static(API_VERSION));
        headers.insert(names::ACCEPT, HeaderValue::from_static(request.accept));
        headers.insert(DATA_SERVICE_VERSION, HeaderValue::from_static("3.0"));
        headers.insert(MAX_DATA_SERVICE_VERSION, HeaderValue::from_static("3.0;NetFx"));
        headers.insert(names::USER_AGENT, self.inner.user_agent.clone());
        // A header that cannot be sent fails the attempt before anything is sent.
        let unsendable = |error: Error, cause: reqwest::header::InvalidHeaderValue| {
            Attempt::Answered(error.with_source(cause))
        };
        let id = HeaderValue::try_from(client_request_id)
            .map_err(|e| unsendable(error::invalid_input("the client request id is not header text"), e))?;
        headers.insert(CLIENT_REQUEST_ID, id);
        for (name, value) in signed.headers {
            let mut value = HeaderValue::try_from(value).map_err(|e| {
                let why = "a request header built from the credential holds characters HTTP cannot carry";
                unsendable(error::auth(why), e)
            })?;
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
                Attempt::Answered(
                    error::auth("a request header name from the credential is invalid").with_source(e),
                )
            })?;
            // Kept out of reqwest's and hyper's debug output.
            value.set_sensitive(name == names::AUTHORIZATION);
            headers.append(name, value);
        }
        let mut sent = reqwest::Request::new(request.method.clone(), target.clone());
        if !request.content_type.is_empty() {
            let content_type = HeaderValue::try_from(request.content_type).map_err(|e| {
                unsendable(error::invalid_input("the content type holds characters HTTP cannot carry"), e)
            })?;
            headers.insert(names::CONTENT_TYPE, content_type);
            *sent.body_mut() = Some(request.body.clone().into());
        } else if request.method != Method::GET {
            headers.insert(names::CONTENT_LENGTH, HeaderValue::from_static("0"));
        }
        if let Some(if_match) = request.if_match {
            let value = HeaderValue::try_from(if_match.as_header()).map_err(|e| {
                unsendable(error::invalid_input("the If-Match ETag holds characters HTTP cannot carry"), e)
            })?;
            headers.insert(names::IF_MATCH, value);
        }
        if request.prefer_no_content {
            headers.insert(PREFER, HeaderValue::from_static("return-no-content"));
        }
        *sent.headers_mut() = headers;
        *sent.timeout_mut() = Some(self.inner.options.timeout);
        let mut response = self.inner.http.execute(sent).await.map_err(Attempt::transport)?;
        let status = response.status();
        // Taken, not copied: the body is read through the response without its headers.
        let headers = std::mem::take(response.headers_mut());
        let span = tracing::Span::current();
        span.record("status", status.as_u16());
        if let Some(id) = header(&headers, wire::REQUEST_ID_HEADER) {
            span.record("request_id", id);
        }
        if status.is_redirection() {
            return Err(Attempt::Answered(redirect_error(status, &headers, &signed.url)));
        }
        // A caller's own client may follow redirects: an answer from elsewhere is refused.
        if *response.url() != target {
            return Err(Attempt::Answered(followed_redirect_error(response.url())));
        }
        if status.is_success() {
            check_headers(&headers).map_err(|e| refused_answer(e, status, &request.method))?;
            let body = match read_body(response, request.max_body).await {
                Ok(body) => body,
                Err(BodyError::Transport(e)) => return Err(Attempt::transport(e)),
                Err(BodyError::TooLarge(e)) => return Err(refused_answer(e, status, &request.method)),
            };
            return Ok(Response { headers, body });
        }
        let body = match read_body(response, wire::MAX_ERROR_BODY).await {
            Ok(body) => body,
            Err(BodyError::Transport(e)) => return Err(Attempt::transport(e)),
            // The status still decides what happens next (a 503 is retried as any other).
            Err(BodyError::TooLarge(e)) => return Err(Attempt::Answered(e.with_status(status.as_u16()))),
        };
        let pairs: Vec<(&str, &str)> =
            headers.iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))).collect();
        let error = wire::decode_error(status.as_u16(), &pairs, &body);
        let www_authenticate = header(&headers, "www-authenticate");
        if matches!(self.inner.auth, RequestAuth::Bearer(_))
            && says_token_expired(status.as_u16(), error.code().map(|c| c.as_str()), www_authenticate, &body)
        {
            return Err(Attempt::TokenExpired(error));
        }
        match retry_after(status, &headers) {
            Some(retry_after) => Err(Attempt::Throttled { error, retry_after }),
            None => Err(Attempt::Answered(error)),
        }
    }
}

/// The pause a 429 or 503 answer asks for: `x-ms-retry-after-ms` (Cosmos DB), else
/// `Retry-After` (seconds or an HTTP-date, see [`retry::retry_after`]). An unreadable value,
/// or the header on another status, is ignored: the policy's own backoff applies then.
fn retry_after(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if !matches!(status, StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE) {
        return None;
    }
    let milliseconds = header(headers, "x-ms-retry-after-ms").and_then(|v| v.trim().parse::<u64>().ok());
    milliseconds
        .map(Duration::from_millis)
        .or_else(|| retry::retry_after(header(headers, "retry-after")?, chrono::Utc::now()))
}

/// How one attempt failed.
enum Attempt {
    /// The service answered with an error (or the request could not be signed).
    Answered(Error),
    /// The service answered with an error and asked for a pause before the next attempt.
    Throttled { error: Error, retry_after: Duration },
    /// No answer: timeout, refused or dropped connection.
    Transport { error: Error, connect_failed: bool },
    /// The service refused the bearer token sent as expired.
    TokenExpired(Error),
}

impl From<Attempt> for Failed {
    fn from(attempt: Attempt) -> Failed {
        let answered = |error: &Error| error.status().map_or(Failure::NotSent, Failure::Answered);
        match attempt {
            Attempt::Answered(error) | Attempt::TokenExpired(error) => {
                Failed { failure: answered(&error), error, asked_pause: None }
            }
            Attempt::Throttled { error, retry_after } => {
                Failed { failure: answered(&error), error, asked_pause: Some(retry_after) }
            }
            Attempt::Transport { error, connect_failed: true } => {
                Failed { failure: Failure::ConnectFailed, error, asked_pause: None }
            }
            Attempt::Transport { error, connect_failed: false } => {
                Failed { failure: Failure::Lost, error, asked_pause: None }
            }
        }
    }
}

impl Attempt {
    fn transport(e: reqwest::Error) -> Attempt {
        let connect_failed = e.is_connect();
        let error = if e.is_timeout() {
            error::timeout("the request timed out")
        } else if connect_failed {
            error::transport("could not connect to the service")
        } else {
            error::transport("the connection failed before a complete answer arrived")
        };
        Attempt::Transport {
            // The URL may carry a SAS signature, and the source shows in every `Debug` of the
            // error; the span of the request already records the URL without its query.
            error: error.with_source(e.without_url()),
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
            accept: wire::ACCEPT,
            if_match: None,
            prefer_no_content: false,
            replay,
            // Every answer without a list in it is about one entity at most.
            max_body: wire::MAX_ENTITY_JSON,
        }
    }

    fn max_body(self, max_body: usize) -> Self {
        Request { max_body, ..self }
    }

    fn json(self, body: impl Into<bytes::Bytes>) -> Self {
        Request { content_type: CONTENT_JSON, body: body.into(), ..self }
    }

    /// An XML body, answered in XML.
    fn xml(self, body: String) -> Self {
        Request { content_type: wire::CONTENT_XML, body: body.into(), ..self.xml_answer() }
    }

    fn xml_answer(self) -> Self {
        Request { accept: wire::CONTENT_XML, ..self }
    }

    fn entity(self, entity: &Entity) -> Self {
        self.json(wire::encode_entity(entity).into_bytes())
    }

    fn if_match(self, if_match: &'a IfMatch) -> Self {
        Request { if_match: Some(if_match), ..self }
    }
}

/// Why a body could not be read.
enum BodyError {
    /// The connection failed mid-body.
    Transport(reqwest::Error),
    /// The body exceeds its limit (an [`ErrorKind::Decode`] error naming it).
    TooLarge(Error),
}

/// The most room reserved for a body of several chunks before the rest of it arrives: its
/// declared length (which may be a lie), or else room for a large page, which grows by
/// doubling past that. Azurite chunks every answer, a 460 KB page of 1000 rows in about 17
/// chunks: grown by doubling from empty, each page was copied twice over (reallocations), not
/// once. Measured with `scan_probe` (callgrind, which counts a memcpy's bytes as instructions):
/// memcpy 1,265 -> 657 per scanned row, the scan 15,574 -> 14,994 instructions per row.
const MULTI_CHUNK_RESERVATION: usize = 1 << 20;

/// Reads a body of at most `limit` bytes: a `Content-Length` above it is refused before any
/// byte is read, and the chunks are counted as they come, so a body is refused as soon as it
/// passes the limit. A hostile or broken server can so cost at most `limit` bytes of memory
/// per request (plus the slack of one buffer), never an unbounded stream.
///
/// A body of one chunk (a short answer) is handed out as the HTTP stack read it, without a
/// copy; a longer one is copied once into one buffer.
async fn read_body(mut response: reqwest::Response, limit: usize) -> Result<bytes::Bytes, BodyError> {
    let declared = response.content_length().map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    if declared.is_some_and(|n| n > limit) {
        return Err(body_too_large(limit));
    }
    let Some(first) = next_chunk(&mut response, 0, limit).await? else {
        return Ok(bytes::Bytes::new());
    };
    let Some(second) = next_chunk(&mut response, first.len(), limit).await? else {
        return Ok(first);
    };
    let received = first.len() + second.len();
    let mut body = Vec::with_capacity(declared.unwrap_or(limit).min(MULTI_CHUNK_RESERVATION).max(received));
    body.extend_from_slice(&first);
    body.extend_from_slice(&second);
    while let Some(chunk) = next_chunk(&mut response, body.len(), limit).await? {
        body.extend_from_slice(&chunk);
    }
    Ok(body.into())
}

/// The next chunk of a body of which `received` bytes were read, refused when it would take
/// the body past `limit`.
async fn next_chunk(
    response: &mut reqwest::Response,
    received: usize,
    limit: usize,
) -> Result<Option<bytes::Bytes>, BodyError> {
    let chunk = response.chunk().await.map_err(BodyError::Transport)?;
    match chunk {
        Some(chunk) if chunk.len() > limit - received => Err(body_too_large(limit)),
        chunk => Ok(chunk),
    }
}

/// The error of a body that passes `limit`, naming it.
fn body_too_large(limit: usize) -> BodyError {
    BodyError::TooLarge(error::decode(format!(
        "the response body exceeds {limit} bytes, the most this answer can honestly take"
    )))
}

/// The page size a query asked for: its `$top`, else the service's 1000.
fn requested_page_size(top: Option<u32>) -> usize {
    usize::try_from(top.unwrap_or(MAX_PAGE_SIZE).min(MAX_PAGE_SIZE)).unwrap_or(usize::MAX)
}

/// A page with more items than asked for is not a page of this query (the service never sends
/// one): refused rather than handed out.
fn check_page_size(count: usize, page_size: usize, what: &str) -> Result<()> {
    if count > page_size {
        return Err(error::decode(format!(
            "the service answered a page of {count} {what} to a request for at most {page_size}"
        )));
    }
    Ok(())
}

/// A response header the client acts on: its name as looked up (header names are matched
/// ignoring case, and Azurite writes them in lower case), made once rather than parsed from
/// text at every lookup of every answer, and as the service writes it, for messages.
struct Watched {
    name: HeaderName,
    shown: &'static str,
}

impl Watched {
    const fn new(lower: &'static str, shown: &'static str) -> Watched {
        Watched { name: HeaderName::from_static(lower), shown }
    }
}

const ETAG: Watched = Watched::new("etag", "ETag");
const CONTENT_TYPE: Watched = Watched::new("content-type", "Content-Type");
/// The continuation headers of a query page.
const NEXT_PARTITION_KEY: Watched =
    Watched::new("x-ms-continuation-nextpartitionkey", "x-ms-continuation-NextPartitionKey");
const NEXT_ROW_KEY: Watched = Watched::new("x-ms-continuation-nextrowkey", "x-ms-continuation-NextRowKey");
const NEXT_TABLE_NAME: Watched =
    Watched::new("x-ms-continuation-nexttablename", "x-ms-continuation-NextTableName");

/// The response headers the client acts on. [`check_headers`] makes sure each one is either
/// absent or present once and readable, so that [`header`] returning `None` means absent.
const DEPENDED_ON_HEADERS: [Watched; 5] =
    [ETAG, CONTENT_TYPE, NEXT_PARTITION_KEY, NEXT_ROW_KEY, NEXT_TABLE_NAME];

/// Fails when a header the client acts on is present but cannot be trusted: sent twice, not
/// printable ASCII (or holding a control character), or an ETag that [`check_received_etag`]
/// refuses. Taking such a header for absent would, for a continuation, end a query early
/// with success and silently drop the rest of its result.
fn check_headers(headers: &HeaderMap) -> Result<()> {
    for Watched { name, shown: name_shown } in DEPENDED_ON_HEADERS {
        let mut values = headers.get_all(&name).iter();
        let Some(value) = values.next() else { continue };
        if values.next().is_some() {
            return Err(error::decode(format!(
                "the response carries the {name_shown} header more than once"
            )));
        }
        let text = value.to_str().ok().filter(|t| !t.chars().any(char::is_control)).ok_or_else(|| {
            error::decode(format!("the {name_shown} response header is not printable ASCII"))
        })?;
        if name == ETAG.name {
            check_received_etag(text)?;
        }
    }
    Ok(())
}

/// A failure found in a successful answer: it carries the status (so it is never retried as
/// if no answer had come), and for a write, the mark that the service applied it, as its
/// status said, whatever the rest of its answer.
fn refused_answer(error: Error, status: StatusCode, method: &Method) -> Attempt {
    let error = error.with_status(status.as_u16());
    Attempt::Answered(if *method == Method::GET { error } else { error.with_may_have_applied() })
}

/// The error for a 3xx answer, naming the status and, when it can be read, the target
/// without its query, fragment or credentials (which may hold secrets).
fn redirect_error(status: StatusCode, headers: &HeaderMap, request_url: &str) -> Error {
    let target = headers
        .get(reqwest::header::LOCATION)
        .and_then(|location| location.to_str().ok())
        .and_then(|location| Url::parse(request_url).ok()?.join(location).ok())
        .map(|mut url| {
            url.set_query(None);
            url.set_fragment(None);
            // Both fail only for URLs that cannot carry credentials, which is fine.
            let _ = url.set_username("");
            let _ = url.set_password(None);
            format!(" to {url}")
        })
        .unwrap_or_default();
    Error::answered(
        status.as_u16(),
        None,
        format!(
            "the service answered HTTP {status} (a redirect{target}), which is not followed: a signed \
             request is only sent to the endpoint it was made for"
        ),
    )
}

/// The error for an answer that came from another URL than the one asked: the caller's own
/// HTTP client followed a redirect. The target is named without its query (it may hold a SAS).
fn followed_redirect_error(answered_from: &Url) -> Error {
    let mut target = answered_from.clone();
    target.set_query(None);
    target.set_fragment(None);
    // Both fail only for URLs that cannot carry credentials, which is fine.
    let _ = target.set_username("");
    let _ = target.set_password(None);
    error::transport(format!(
        "the HTTP client followed a redirect to {target}: a signed request is only sent to the endpoint \
         it was made for; build the client given to `http_client` with `redirect::Policy::none()`"
    ))
}

/// A header's value; `None` when absent. The headers the client acts on have passed
/// [`check_headers`], so for them an unreadable value never reads as absent.
fn header(headers: &HeaderMap, name: impl reqwest::header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok())
}

/// Refuses to send bearer tokens in clear text: `endpoint` must be https, or http to a
/// loopback host (a local emulator or test server).
fn check_bearer_transport(endpoint: &str) -> Result<()> {
    let parsed =
        Url::parse(endpoint).map_err(|e| error::invalid_input("the endpoint is not a URL").with_source(e))?;
    let host = parsed.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
    let loopback = host.eq_ignore_ascii_case("localhost") || ip.is_ok_and(|ip| ip.is_loopback());
    if parsed.scheme() == "https" || loopback {
        return Ok(());
    }
    Err(error::invalid_input(format!(
        "a token credential needs an https endpoint: bearer tokens are not sent in clear text to {}",
        host
    )))
}

/// The URL without its query string, for logs: a SAS signature must never be printed.
fn strip_query(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}
