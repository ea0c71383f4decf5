//! The lean load generator: the bench's workload sent at the lowest client cost this process
//! can manage, so that a phase measures the server rather than the client (as wrk does).
//!
//! What makes it lean, against the SDK client:
//! - every request is authorised by one account SAS (`ss=t`, `srt=sco`, `sp=rwdlacu`) made per
//!   backend with table-client's own builder, so nothing is signed per request; both servers
//!   still check the SAS signature on every request (one HMAC, as for SharedKey);
//! - inserts, point gets and batches are built whole before the phase (URL, headers, body;
//!   entity and batch bodies by table-client's `wire` encoders, so the bytes are the SDK's);
//!   only a scan's pages are built during the phase, as each needs the previous continuation;
//! - each task owns one keep-alive HTTP/1.1 connection (hyper's connection-level client, no
//!   pool), opened before the phase, and drives it in its own future (no connection task);
//!   the bench runs the tasks on a single-threaded runtime, as wrk runs its connections on
//!   one event loop per thread;
//! - answers are checked, not decoded: the status of every answer, then the body read to the
//!   end and looked at cheaply (a get's row key, a page's JSON frame and its entity count, each
//!   batch part's status line).
//!
//! Invariant: a check that fails panics with the request and the answer; a bench whose answers
//! were wrong prints nothing.

use std::net::SocketAddr;

use bytes::Bytes;
use chrono::Utc;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::header::{CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use memchr::memmem;
use table_client::auth::{
    AccountSasBuilder, AccountSasPermissions, AccountSasResourceTypes, AccountSasServices,
};
use table_client::wire::{encode_batch, encode_create_table, encode_entity, url};
use table_client::{Continuation, Entity, Operation, TableServiceClient};
use table_core::QueryRequest;
use tokio::net::TcpStream;

/// One request, built before it is sent.
type Prepared = Request<Full<Bytes>>;

/// A request built before its phase, and what its answer must be.
pub struct Exchange {
    request: Prepared,
    answer: Answer,
}

/// What an [`Exchange`]'s answer must be.
pub(crate) enum Answer {
    /// 204 and no body (an insert, a table created or deleted).
    NoContent,
    /// 200 and the entity with this row key (a get), held as its JSON property
    /// (`"RowKey":"<key>"`).
    Entity(String),
    /// 202 and this many operation responses, each 2xx (a batch).
    Batch(usize),
}

/// The account of one backend as the lean client reaches it.
pub struct Target {
    addr: SocketAddr,
    /// The account's base URL (`http://127.0.0.1:<port>/devstoreaccount1`): batch parts name
    /// their entities with absolute URLs under it.
    base_url: String,
    /// The base URL's path (`/devstoreaccount1`), which every request's path starts with.
    base_path: String,
    /// The account SAS, as a query string without `?`.
    sas: String,
    /// The headers every request carries, the SDK's own (`x-ms-version`, `Accept`, the OData
    /// versions) plus `Host`.
    headers: HeaderMap,
}

impl Target {
    /// The account `service` talks to, with an account SAS signed by its key, valid for a day.
    pub fn new(service: &TableServiceClient) -> Target {
        let sas = AccountSasBuilder::new()
            .services(AccountSasServices::parse("t").unwrap())
            .resource_types(AccountSasResourceTypes::parse("sco").unwrap())
            .permissions(AccountSasPermissions::parse("rwdlacu").unwrap())
            .expiry(Utc::now() + chrono::Duration::days(1));
        let signed = service.generate_account_sas_url(&sas).expect("an account SAS");
        let (base, sas) = signed.split_once('?').expect("a SAS URL has a query");
        let base_url = base.trim_end_matches('/').to_owned();
        let uri: Uri = base_url.parse().expect("the endpoint is a URI");
        let authority = uri.authority().expect("the endpoint names a host");
        let addr = authority.as_str().parse().expect("the endpoint is 127.0.0.1:<port>");
        let mut headers = HeaderMap::with_capacity(8);
        headers.insert(HOST, HeaderValue::from_str(authority.as_str()).unwrap());
        for (name, value) in [
            ("x-ms-version", "2019-02-02"),
            ("accept", "application/json;odata=minimalmetadata"),
            ("dataserviceversion", "3.0"),
            ("maxdataserviceversion", "3.0;NetFx"),
        ] {
            headers.insert(HeaderName::from_static(name), HeaderValue::from_static(value));
        }
        Target { addr, base_path: uri.path().to_owned(), base_url, sas: sas.to_owned(), headers }
    }

    /// `count` connections, opened now so that no phase times a TCP handshake.
    pub async fn connect(&self, count: usize) -> Vec<TcpStream> {
        let mut streams = Vec::with_capacity(count);
        for _ in 0..count {
            let stream = TcpStream::connect(self.addr).await.expect("connect");
            // One request in flight per connection: Nagle would hold its last segment back.
            stream.set_nodelay(true).unwrap();
            streams.push(stream);
        }
        streams
    }

    /// A request for `path` (under the account) with `query` (without `?`) before the SAS.
    fn request(&self, method: Method, path: &str, query: &str, body: Bytes) -> Prepared {
        let separator = if query.is_empty() { "" } else { "&" };
        let target = format!("{}/{path}?{query}{separator}{}", self.base_path, self.sas);
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = Uri::try_from(target).expect("the wire module writes valid URIs");
        *request.headers_mut() = self.headers.clone();
        request
    }

    /// Sends one exchange on a connection of its own (a table's set-up, outside any phase).
    pub async fn send_one(&self, exchange: Exchange) {
        let stream = self.connect(1).await.pop().expect("one connection");
        Connection::run(stream, |mut connection| async move { connection.exchange(exchange).await }).await;
    }

    /// A POST of the JSON `body` to `path`, answered 204 (`Prefer: return-no-content`, as the
    /// SDK asks for inserts and table creation).
    fn post_json(&self, path: &str, body: String) -> Exchange {
        let mut request = self.request(Method::POST, path, "", Bytes::from(body));
        let headers = request.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(HeaderName::from_static("prefer"), HeaderValue::from_static("return-no-content"));
        Exchange { request, answer: Answer::NoContent }
    }

    /// Create `table`, answered 204.
    pub fn create_table(&self, table: &str) -> Exchange {
        self.post_json(url::TABLES_PATH, encode_create_table(table))
    }

    /// Delete `table`, answered 204.
    pub fn delete_table(&self, table: &str) -> Exchange {
        Exchange {
            request: self.request(Method::DELETE, &url::table_path(table), "", Bytes::new()),
            answer: Answer::NoContent,
        }
    }

    /// Insert `entity` into `table`, answered 204.
    pub fn insert(&self, table: &str, entity: &Entity) -> Exchange {
        self.post_json(&url::entities_path(table), encode_entity(entity))
    }

    /// Get one entity, answered 200 with that entity.
    pub fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Exchange {
        let path = url::entity_path(table, partition_key, row_key);
        Exchange {
            request: self.request(Method::GET, &path, "", Bytes::new()),
            answer: Answer::Entity(format!("\"RowKey\":\"{row_key}\"")),
        }
    }

    /// One page of `table`'s entities, at most `top`, from `continuation` (the first page
    /// without one).
    fn page(&self, table: &str, top: u32, continuation: Option<Continuation>) -> Prepared {
        let query = QueryRequest { top: Some(top), continuation, ..QueryRequest::default() };
        self.request(Method::GET, &url::entities_path(table), &url::entity_query(&query), Bytes::new())
    }

    /// One `$batch` of `operations` on `table`, answered 202 with a 2xx part per operation.
    pub fn batch(&self, table: &str, operations: &[Operation]) -> Exchange {
        let (content_type, body) = encode_batch(&self.base_url, table, operations);
        let mut request = self.request(Method::POST, url::BATCH_PATH, "", Bytes::from(body));
        request.headers_mut().insert(CONTENT_TYPE, HeaderValue::try_from(content_type).unwrap());
        Exchange { request, answer: Answer::Batch(operations.len()) }
    }
}

impl Answer {
    fn status(&self) -> StatusCode {
        match self {
            Answer::NoContent => StatusCode::NO_CONTENT,
            Answer::Entity(_) => StatusCode::OK,
            Answer::Batch(_) => StatusCode::ACCEPTED,
        }
    }

    /// Whether `body`, read under [`Self::status`], is this answer.
    pub(crate) fn accepts(&self, body: &[u8]) -> bool {
        match self {
            Answer::NoContent => body.is_empty(),
            Answer::Entity(row_key) => {
                body.starts_with(b"{")
                    && body.ends_with(b"}")
                    && memmem::find(body, row_key.as_bytes()).is_some()
            }
            Answer::Batch(operations) => batch_answered(body, *operations),
        }
    }
}

/// One keep-alive connection, driven by the future that sends on it.
pub struct Connection(http1::SendRequest<Full<Bytes>>);

impl Connection {
    /// Runs `work` on a connection over `stream`; the connection is closed when `work` ends.
    pub async fn run<T, F>(stream: TcpStream, work: impl FnOnce(Connection) -> F) -> T
    where
        F: Future<Output = T>,
    {
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.expect("handshake");
        // Polled beside the work in the same task: no wake-up crosses tasks per request. The
        // work drops the sender when it ends, which ends the connection.
        let (out, closed) = tokio::join!(work(Connection(sender)), connection);
        closed.expect("the connection closes cleanly");
        out
    }

    /// Sends the exchange's request and checks its answer.
    pub async fn exchange(&mut self, exchange: Exchange) {
        let (what, _, body) = self.send(exchange.request, exchange.answer.status()).await;
        assert!(
            exchange.answer.accepts(&body),
            "{} {}: unexpected answer {}",
            what.0,
            what.1,
            String::from_utf8_lossy(&body)
        );
    }

    /// Sends `request` and reads the whole answer, which must have the status `expected`:
    /// (the request's method and URI, for messages; the answer's headers and body).
    async fn send(&mut self, request: Prepared, expected: StatusCode) -> ((Method, Uri), HeaderMap, Bytes) {
        let what = (request.method().clone(), request.uri().clone());
        self.0.ready().await.expect("the connection is open");
        let response = self.0.send_request(request).await.expect("an answer");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("the whole body").to_bytes();
        assert_eq!(parts.status, expected, "{} {}: {}", what.0, what.1, String::from_utf8_lossy(&body));
        (what, parts.headers, body)
    }

    /// Pages through `table` from the start, checking each page; returns the entities seen and
    /// records each page's latency.
    pub async fn scan(
        &mut self,
        target: &Target,
        table: &str,
        top: u32,
        latencies: &mut Vec<std::time::Duration>,
    ) -> usize {
        let mut rows = 0;
        let mut continuation = None;
        loop {
            let at = std::time::Instant::now();
            let (_, headers, body) = self.send(target.page(table, top, continuation), StatusCode::OK).await;
            let page = count_page_entities(&body);
            assert!(page <= top as usize, "a page of {page} entities, more than $top={top}");
            rows += page;
            latencies.push(at.elapsed());
            let header = |name: &str| Some(headers.get(name)?.to_str().expect("a header of text").to_owned());
            continuation = match header("x-ms-continuation-nextpartitionkey") {
                Some(next_partition_key) => Some(Continuation {
                    next_partition_key,
                    next_row_key: header("x-ms-continuation-nextrowkey"),
                }),
                None => return rows,
            };
        }
    }
}

/// The entities in a query page, counted without decoding them: the page must be one JSON
/// object that ends with its `value` array, and each entity in it carries one `PartitionKey`
/// property (the bench's values never hold that text).
pub(crate) fn count_page_entities(body: &[u8]) -> usize {
    let value = memmem::find(body, b"\"value\":[");
    assert!(
        body.starts_with(b"{") && body.ends_with(b"]}") && value.is_some(),
        "not a query page: {}",
        String::from_utf8_lossy(body)
    );
    memmem::find_iter(body, b"\"PartitionKey\":").count()
}

/// Whether a batch's answer holds `operations` operation responses, each with a 2xx status
/// line.
pub(crate) fn batch_answered(body: &[u8], operations: usize) -> bool {
    let mut parts = 0;
    for at in memmem::find_iter(body, b"\nHTTP/1.1 ") {
        if body.get(at + 10) != Some(&b'2') {
            return false;
        }
        parts += 1;
    }
    parts == operations
}
