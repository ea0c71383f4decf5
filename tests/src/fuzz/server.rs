//! The `server` fuzz target: whole HTTP/1.1 requests (request line, headers, body) written to
//! a running `table_server::Server` over loopback TCP, and what comes back checked.
//!
//! One harness per process ([`HARNESS`]): a tokio runtime of its own, whose threads carry
//! [`SERVER_THREAD`] as their name, serving the development account twice on free ports, with
//! authorization off (most inputs: a mutated signature would only be refused) and on (inputs
//! that carry a SAS `sig=` go there). A panic hook counts the panics on the runtime's threads:
//! tokio catches a task's panic, which would otherwise show only as a dropped connection.
//!
//! Each input runs alone (the harness's lock) against the same data: the account gets a new
//! engine, rebuilt from a fixed data set ([`fixture`]) by replaying its snapshot, so ETags and
//! timestamps are the same for every input, whatever the inputs before it did. The input is
//! written and the write side shut, so the connection always ends: the server answers every
//! whole request before it (it serves half-closed connections) and then closes.
//!
//! Invariants checked for every input (a panic on the server's threads is reported as a
//! panic of the input, any other broken one as a violation):
//! - no panic on the server's threads;
//! - the bytes back are complete HTTP answers, each framed by `Content-Length`, within
//!   [`ANSWER_TIMEOUT`], or nothing (a close, which HTTP allows mid-request);
//! - an answer from the service (it carries `x-ms-request-id`) is never a 500 or a 503 (no
//!   fault is injected here); an error answer carries the service's error body, JSON or XML
//!   as its `Content-Type` says, with a code and a message; a `$batch` answer decodes with the
//!   client's own reader;
//! - an answer from hyper's own parser (no `x-ms-request-id`) is a bare error (no type, no body);
//! - when no write succeeded (no success but a read's 200), the account's data (every table,
//!   row, property, ETag, access policy, and the service settings) is exactly as it was; when
//!   one did, every table still reads back over HTTP and decodes.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use serde_json::Value as Json;
use table_client::auth::{AccountKey, TableSasBuilder, TableSasPermissions};
use table_client::wire::{self, encode_batch};
use table_core::engine::{Change, Engine, RowChange};
use table_core::{
    CorsRule, Entity, IfMatch, Operation, QueryRequest, ServiceProperties, SignedIdentifier, Value,
};
use table_server::{Accounts, Config, DEV_ACCOUNT, DEV_KEY, Server};

use crate::service_error;

/// The name of the harness runtime's threads, where every server task runs.
const SERVER_THREAD: &str = "fuzz-server";

/// How long the answers to one input may take, end to end.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Panics seen on [`SERVER_THREAD`] threads since the process started.
static SERVER_PANICS: AtomicU64 = AtomicU64::new(0);
/// The message of the last of them.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// The running servers and the data every input starts from.
pub(super) static HARNESS: LazyLock<Harness> = LazyLock::new(Harness::start);

/// The target's state, shared by every input of the process.
#[derive(Debug)]
pub(super) struct Harness {
    /// Keeps the servers' tasks running.
    _runtime: tokio::runtime::Runtime,
    _servers: [Server; 2],
    /// Authorization off.
    open: SocketAddr,
    /// Authorization on (SAS inputs).
    signed: SocketAddr,
    accounts: Accounts,
    /// The fixture's snapshot, replayed onto a new engine before each input.
    fixture: Vec<Change>,
    /// [`fingerprint`] of the fixture.
    pristine: Vec<String>,
    /// One input at a time: inputs share the account.
    lock: Mutex<()>,
}

impl Harness {
    fn start() -> Harness {
        install_panic_counter();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(SERVER_THREAD)
            .enable_all()
            .build()
            .expect("a tokio runtime starts");
        let accounts = Accounts::development(Engine::new());
        let bind = |auth: bool| {
            let config =
                Config { address: SocketAddr::from(([127, 0, 0, 1], 0)), accounts: accounts.clone(), auth };
            runtime.block_on(Server::bind(config)).expect("a loopback port is free")
        };
        let servers = [bind(false), bind(true)];
        let template = fixture();
        let mut snapshot = Vec::new();
        let Ok(()) = template.snapshot(|change| {
            snapshot.push(change);
            Ok::<(), Infallible>(())
        });
        Harness {
            open: servers[0].local_addr(),
            signed: servers[1].local_addr(),
            _runtime: runtime,
            _servers: servers,
            accounts,
            pristine: fingerprint(&template),
            fixture: snapshot,
            lock: Mutex::new(()),
        }
    }

    /// A new engine holding the fixture, serving the development account.
    fn reset(&self) -> Engine {
        let engine = Engine::new();
        for change in &self.fixture {
            engine.replay(change).expect("the fixture's snapshot replays");
        }
        self.accounts.add(DEV_ACCOUNT, DEV_KEY, engine.clone()).expect("the development account is valid");
        engine
    }
}

/// Counts the panics of [`SERVER_THREAD`] threads, then lets the previous hook print them.
fn install_panic_counter() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some(SERVER_THREAD) {
            let location = info.location().map(ToString::to_string).unwrap_or_default();
            let message = info.payload_as_str().unwrap_or("a panic without a message");
            *LAST_PANIC.lock().unwrap_or_else(PoisonError::into_inner) = format!("{message} at {location}");
            SERVER_PANICS.fetch_add(1, Ordering::SeqCst);
        }
        previous(info);
    }));
}

// ---------------------------------------------------------------------------------------------
// the data every input starts from

/// The table of entities, of every EDM type, over two partitions.
const DATA: &str = "fuzzdata";
/// An empty table.
const EMPTY: &str = "fuzzempty";
/// A table with stored access policies.
const ACL: &str = "fuzzacl";

fn when(seconds: i64) -> Value {
    Value::DateTime(Utc.timestamp_opt(seconds, 123_456_700).single().expect("a valid instant"))
}

fn fixture() -> Engine {
    let engine = Engine::new();
    for table in [DATA, EMPTY, ACL] {
        engine.create_table(table).expect("fixture tables are valid");
    }
    let rows = [
        Entity::new("p1", "r1")
            .with("Name", "it's \"quoted\" é")
            .with("Age", 42)
            .with("Big", i64::MAX)
            .with("Score", 1.5)
            .with("Active", true)
            .with("When", when(1_600_000_000))
            .with("Id", uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef))
            .with("Blob", vec![0_u8, 1, 0xfe, 0xff]),
        Entity::new("p1", "r2").with("Name", "second").with("Age", -7),
        Entity::new("p1", "r'3").with("Score", -0.0),
        Entity::new("p2", "r1").with("Name", "other partition").with("Active", false),
        Entity::new("p2", "").with("Empty", ""),
        Entity::new("", "r1").with("Nan", f64::NAN),
    ];
    for row in rows {
        engine.insert(DATA, row).expect("fixture rows are valid");
    }
    let policies = [SignedIdentifier::new("readers", "r"), SignedIdentifier::new("writers", "au")];
    engine.set_access_policies(ACL, &policies).expect("fixture policies are valid");
    // CORS rules, so that preflights and requests with `Origin` reach the server's matching.
    let cors = vec![
        CorsRule {
            allowed_origins: vec!["https://app.example".into()],
            allowed_methods: vec!["GET".into(), "PUT".into()],
            allowed_headers: vec!["x-ms-*".into(), "content-type".into()],
            exposed_headers: vec!["x-ms-request-*".into(), "etag".into()],
            max_age_seconds: 60,
        },
        CorsRule {
            allowed_origins: vec!["*".into()],
            allowed_methods: vec!["GET".into()],
            ..CorsRule::default()
        },
    ];
    let settings = ServiceProperties { cors: Some(cors), ..ServiceProperties::service_defaults() };
    engine.set_service_properties(&settings).expect("the fixture settings are valid");
    engine
}

/// Every table, row (keys, properties, timestamp, ETag), access policy and service setting,
/// one line each, sorted: equal for equal data.
fn fingerprint(engine: &Engine) -> Vec<String> {
    let mut lines = Vec::new();
    let Ok(()) = engine.snapshot(|change| {
        match change {
            Change::Rows { table, rows } => {
                lines.extend(rows.iter().map(|row| format!("row of {table:?}: {row:?}")));
            }
            other => lines.push(format!("{other:?}")),
        }
        Ok::<(), Infallible>(())
    });
    lines.sort();
    lines
}

/// The fixture row `(pk, rk)` of [`DATA`], with its ETag.
fn fixture_row(partition_key: &str, row_key: &str) -> Entity {
    HARNESS
        .fixture
        .iter()
        .filter_map(|change| match change {
            Change::Rows { rows, .. } => Some(rows),
            _ => None,
        })
        .flatten()
        .find_map(|row| match row {
            RowChange::Stored(e) if e.partition_key == partition_key && e.row_key == row_key => {
                Some(e.clone())
            }
            _ => None,
        })
        .expect("the fixture has the row")
}

/// The query parameters that continue a query of [`DATA`] after its first row.
fn continuation() -> String {
    let engine = Engine::new();
    for change in &HARNESS.fixture {
        engine.replay(change).expect("the fixture's snapshot replays");
    }
    let first = QueryRequest { top: Some(1), ..QueryRequest::default() };
    let next =
        engine.query(DATA, &first).ok().and_then(|page| page.continuation).expect("the fixture has two rows");
    let encode = wire::url::encode_component;
    format!(
        "NextPartitionKey={}&NextRowKey={}",
        encode(&next.next_partition_key),
        encode(next.next_row_key.as_deref().unwrap_or_default())
    )
}

// ---------------------------------------------------------------------------------------------
// seeds and dictionary

/// Methods, header names and values, paths, query parameters, `$filter` pieces and escapes,
/// `@odata.type` annotations, multipart boundaries, XML elements, framing (`chunked`, huge
/// `Content-Length` values).
pub(super) const TOKENS: &[&str] = &[
    "GET ",
    "POST ",
    "PUT ",
    "MERGE ",
    "PATCH ",
    "DELETE ",
    "HEAD ",
    "OPTIONS ",
    " HTTP/1.1\r\n",
    " HTTP/1.0\r\n",
    " HTTP/2.0\r\n",
    "\r\n",
    "\r\n\r\n",
    "\n",
    ": ",
    "Host: 127.0.0.1\r\n",
    "Content-Length: ",
    "Content-Length: 0\r\n",
    "Content-Length: 4194305\r\n",
    "Content-Length: 18446744073709551616\r\n",
    "Content-Length: -1\r\n",
    "Transfer-Encoding: chunked\r\n",
    "0\r\n\r\n",
    "ffffffff\r\n",
    "Expect: 100-continue\r\n",
    "Connection: close\r\n",
    "Connection: keep-alive\r\n",
    "Content-Type: application/json\r\n",
    "Content-Type: multipart/mixed; boundary=batch_fuzz\r\n",
    "Accept: application/json;odata=nometadata\r\n",
    "Accept: application/json;odata=minimalmetadata\r\n",
    "Accept: application/json;odata=fullmetadata\r\n",
    "Accept: application/atom+xml\r\n",
    "Prefer: return-no-content\r\n",
    "Prefer: return-content\r\n",
    "If-Match: *\r\n",
    "If-Match: W/\"datetime'2020-09-13T12%3A26%3A40.1234567Z'\"\r\n",
    "If-Match: \u{1}\r\n",
    "X-HTTP-Method: MERGE\r\n",
    "X-HTTP-Method: DELETE\r\n",
    "x-ms-version: 2019-02-02\r\n",
    // A version the service does not know, and one with bearer tokens.
    "x-ms-version: 2021-02-13\r\n",
    "x-ms-version: 2017-11-09\r\n",
    "x-ms-client-request-id: ",
    "DataServiceVersion: 3.0\r\n",
    "Origin: https://app.example\r\n",
    "Origin: ",
    "Access-Control-Request-Method: PUT\r\n",
    "Access-Control-Request-Headers: x-ms-date,content-type\r\n",
    "Authorization: SharedKey devstoreaccount1:",
    "Authorization: Bearer ",
    "/devstoreaccount1",
    "/devstoreaccount1-secondary",
    "/devstoreaccount2",
    "/Tables",
    "Tables('fuzzdata')",
    "/$batch",
    "/fuzzdata",
    "/fuzzempty",
    "/fuzzacl",
    "()",
    "(PartitionKey='p1',RowKey='r1')",
    "(PartitionKey='',RowKey='')",
    "?",
    "&",
    "=",
    "$filter=",
    "$select=",
    "$top=",
    "$format=",
    "NextPartitionKey=",
    "NextRowKey=",
    "NextTableName=",
    "comp=acl",
    "restype=service&comp=properties",
    "comp=stats",
    "sig=",
    "se=",
    "sp=raud",
    // A SAS's operation version: one the service knows, one it does not.
    "&api-version=2020-12-06",
    "&api-version=2021-02-13",
    "%20eq%20",
    "%20and%20",
    "%20or%20",
    "not%20",
    "%20gt%20",
    "%20le%20",
    "%27",
    "%25",
    "%FF",
    "%C3%A9",
    "%00",
    "%",
    "'",
    "''",
    "datetime'2020-01-01T00:00:00Z'",
    "guid'00000000-0000-0000-0000-000000000000'",
    "X'00ff'",
    "2147483648",
    "9223372036854775808L",
    "1e309",
    "\"PartitionKey\":\"p1\"",
    "\"RowKey\":\"r9\"",
    "\"x@odata.type\":\"Edm.Int64\"",
    "\"x@odata.type\":\"Edm.DateTime\"",
    "\"x@odata.type\":\"Edm.Guid\"",
    "\"x@odata.type\":\"Edm.Binary\"",
    "\"x@odata.type\":\"Edm.Double\"",
    "\"x@odata.type\":\"Edm.Decimal\"",
    "\"x\":",
    "\"Timestamp\":\"2020-01-01T00:00:00Z\"",
    "\"odata.etag\":\"x\"",
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    "null",
    "\\u0000",
    "\\ud800",
    "--batch_fuzz\r\n",
    "--batch_fuzz--\r\n",
    "--changeset_fuzz\r\n",
    "--changeset_fuzz--\r\n",
    "Content-Type: multipart/mixed; boundary=changeset_fuzz\r\n",
    "Content-Type: application/http\r\n",
    "Content-Transfer-Encoding: binary\r\n",
    "Content-ID: 1\r\n",
    "<SignedIdentifier><Id>x</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier>",
    "<Cors><CorsRule>",
    "é",
    "\u{0}",
    " ",
];

/// The `x-ms-version` line of every seed: the version the SDKs send (a request naming none is
/// served at the service's oldest, which has no JSON).
const VERSION: &str = "x-ms-version: 2019-02-02\r\n";

/// A request to `target` (below the server root) at [`VERSION`] with `headers` (each ending in
/// CRLF) and `body`, framed by `Content-Length`, closing the connection after its answer.
fn request(method: &str, target: &str, headers: &str, body: &str) -> Vec<u8> {
    let mut text = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{VERSION}{headers}");
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "MERGE") {
        write!(text, "Content-Length: {}\r\n", body.len()).expect("writing to a String never fails");
    }
    text.push_str("Connection: close\r\n\r\n");
    text.push_str(body);
    text.into_bytes()
}

/// `encode_batch` with its random boundaries replaced by fixed ones, so the seeds are the same
/// in every run: the request's `Content-Type` and body.
fn batch(operations: &[Operation]) -> (String, String) {
    let (content_type, body) = encode_batch("http://127.0.0.1/devstoreaccount1", DATA, operations);
    let batch = content_type.rsplit("boundary=").next().unwrap_or_default().to_owned();
    let changeset = body
        .split("boundary=")
        .nth(1)
        .and_then(|rest| rest.split("\r\n").next())
        .unwrap_or_default()
        .to_owned();
    let body = body.replace(&batch, "batch_fuzz").replace(&changeset, "changeset_fuzz");
    (content_type.replace(&batch, "batch_fuzz"), body)
}

/// One request per operation the server answers, valid (or refused on purpose: an existing
/// table, a stale ETag, a missing `If-Match`, a failing batch).
pub(super) fn seeds() -> Vec<Vec<u8>> {
    const JSON: &str = "Content-Type: application/json\r\n";
    const MINIMAL: &str = "Accept: application/json;odata=minimalmetadata\r\n";
    const NONE: &str = "Accept: application/json;odata=nometadata\r\n";
    const FULL: &str = "Accept: application/json;odata=fullmetadata\r\n";
    let account = "/devstoreaccount1";
    let entity_url = format!("{account}/{DATA}(PartitionKey='p1',RowKey='r1')");
    let etag = fixture_row("p1", "r1").etag.map(|e| e.as_str().to_owned()).unwrap_or_default();
    let if_match = format!("If-Match: {etag}\r\n");
    let new_row = wire::encode_entity(
        &Entity::new("p1", "r9")
            .with("Name", "new")
            .with("Count", 1_i64 << 40)
            .with("When", when(1_700_000_000))
            .with("Blob", vec![7_u8; 3]),
    );
    let changes = wire::encode_entity(&Entity::new("p1", "r1").with("Age", 43).with("Extra", 2.5));
    let mut seeds = vec![
        // Tables.
        request("POST", &format!("{account}/Tables"), &format!("{JSON}{MINIMAL}"), "{\"TableName\":\"fuzznew\"}"),
        request(
            "POST",
            &format!("{account}/Tables"),
            &format!("{JSON}{FULL}Prefer: return-no-content\r\n"),
            "{\"TableName\":\"fuzzother\"}",
        ),
        request("POST", &format!("{account}/Tables"), &format!("{JSON}{NONE}"), "{\"TableName\":\"fuzzdata\"}"),
        request("GET", &format!("{account}/Tables"), FULL, ""),
        request("GET", &format!("{account}/Tables?$top=1"), MINIMAL, ""),
        request("GET", &format!("{account}/Tables?NextTableName={EMPTY}&$top=2"), NONE, ""),
        request("GET", &format!("{account}/Tables?$filter=TableName%20eq%20%27{DATA}%27"), MINIMAL, ""),
        request("GET", &format!("{account}/Tables('{DATA}')"), FULL, ""),
        request("DELETE", &format!("{account}/Tables('{EMPTY}')"), MINIMAL, ""),
        request("DELETE", &format!("{account}/Tables('nosuchtable')"), MINIMAL, ""),
        // Entities: insert, read, update, merge, upserts, delete.
        request("POST", &format!("{account}/{DATA}"), &format!("{JSON}{MINIMAL}"), &new_row),
        request(
            "POST",
            &format!("{account}/{DATA}()"),
            &format!("{JSON}{NONE}Prefer: return-no-content\r\n"),
            &new_row,
        ),
        request("POST", &format!("{account}/{DATA}"), &format!("{JSON}{FULL}Prefer: return-content\r\n"), &changes),
        request("GET", &entity_url, FULL, ""),
        request("GET", &format!("{entity_url}?$select=Name,Age"), NONE, ""),
        request("GET", &format!("{account}/{DATA}(PartitionKey='p1',RowKey='r%27%273')"), MINIMAL, ""),
        request("PUT", &entity_url, &format!("{JSON}{MINIMAL}{if_match}"), &changes),
        request("PUT", &entity_url, &format!("{JSON}{MINIMAL}If-Match: *\r\n"), &changes),
        request("PUT", &format!("{account}/{DATA}(PartitionKey='p3',RowKey='x')"), &format!("{JSON}{MINIMAL}"), &changes),
        request("MERGE", &entity_url, &format!("{JSON}{MINIMAL}{if_match}"), &changes),
        request("MERGE", &entity_url, &format!("{JSON}{MINIMAL}"), &changes),
        request("POST", &entity_url, &format!("{JSON}{MINIMAL}X-HTTP-Method: MERGE\r\nIf-Match: *\r\n"), &changes),
        request("PUT", &entity_url, &format!("{JSON}{MINIMAL}If-Match: W/\"datetime'2000-01-01T00%3A00%3A00Z'\"\r\n"), &changes),
        request("DELETE", &entity_url, &format!("{MINIMAL}{if_match}"), ""),
        request("DELETE", &format!("{account}/{DATA}(PartitionKey='p2',RowKey='')"), &format!("{MINIMAL}If-Match: *\r\n"), ""),
        request("DELETE", &entity_url, MINIMAL, ""),
        // Queries.
        request(
            "GET",
            &format!("{account}/{DATA}()?$filter=PartitionKey%20eq%20%27p1%27%20and%20Age%20gt%200&$select=Name,Age,Missing"),
            MINIMAL,
            "",
        ),
        request("GET", &format!("{account}/{DATA}()?$top=2"), FULL, ""),
        request("GET", &format!("{account}/{DATA}()?{}&$top=1", continuation()), NONE, ""),
        request(
            "GET",
            &format!(
                "{account}/{DATA}()?$filter=When%20ge%20datetime%272020-01-01T00%3A00%3A00Z%27%20or%20Big%20eq%209223372036854775807L%20or%20not%20Active"
            ),
            MINIMAL,
            "",
        ),
        request("GET", &format!("{account}/{DATA}()?$format=application/json;odata=fullmetadata"), "", ""),
        // Settings.
        request("GET", &format!("{account}/{ACL}?comp=acl"), "", ""),
        request("GET", &format!("{account}/?restype=service&comp=properties"), "", ""),
        request("GET", "/devstoreaccount1-secondary/?restype=service&comp=stats", "", ""),
        // CORS: a preflight the first rule allows, and a browser's read.
        request(
            "OPTIONS",
            &format!("{account}/{DATA}()"),
            "Origin: https://app.example\r\nAccess-Control-Request-Method: PUT\r\nAccess-Control-Request-Headers: x-ms-date,content-type\r\n",
            "",
        ),
        request("GET", &format!("{account}/{DATA}()?$top=1"), &format!("{MINIMAL}Origin: https://app.example\r\n"), ""),
        // Chunked, and a client waiting for 100 Continue.
        format!(
            "POST {account}/{DATA} HTTP/1.1\r\nHost: 127.0.0.1\r\n{VERSION}{JSON}{NONE}Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{new_row}\r\n0\r\n\r\n",
            new_row.len()
        )
        .into_bytes(),
        request("POST", &format!("{account}/Tables"), &format!("{JSON}{MINIMAL}Expect: 100-continue\r\n"), "{\"TableName\":\"fuzzcontinue\"}"),
    ];
    let policies = wire::encode_signed_identifiers(&[SignedIdentifier::new("fuzzer", "raud")])
        .expect("a valid policy encodes");
    seeds.push(request("PUT", &format!("{account}/{ACL}?comp=acl"), "", &policies));
    let properties = wire::encode_service_properties(&ServiceProperties::service_defaults())
        .expect("the default settings encode");
    seeds.push(request("PUT", &format!("{account}/?restype=service&comp=properties"), "", &properties));
    // Batches: a changeset that applies, one that fails on its second operation, a retrieve.
    let row = fixture_row("p1", "r'3");
    let good = [
        Operation::Insert(Entity::new("p1", "b1").with("Name", "batched")),
        Operation::Merge { entity: Entity::new("p1", "r2").with("Age", 8), if_match: IfMatch::Any },
        Operation::Delete { key: row.key(), if_match: row.etag.map_or(IfMatch::Any, IfMatch::ETag) },
    ];
    let failing =
        [Operation::InsertOrReplace(Entity::new("p1", "b2")), Operation::Insert(Entity::new("p1", "r1"))];
    for operations in [&good[..], &failing[..]] {
        let (content_type, body) = batch(operations);
        seeds.push(request(
            "POST",
            &format!("{account}/$batch"),
            &format!("Content-Type: {content_type}\r\n"),
            &body,
        ));
    }
    let retrieve = format!(
        "--batch_fuzz\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
         GET http://127.0.0.1{entity_url} HTTP/1.1\r\n{FULL}\r\n\r\n--batch_fuzz--\r\n"
    );
    seeds.push(request(
        "POST",
        &format!("{account}/$batch"),
        "Content-Type: multipart/mixed; boundary=batch_fuzz\r\n",
        &retrieve,
    ));
    // SAS-signed: a query and an insert (these go to the server that checks signatures).
    let key = AccountKey::new(DEV_ACCOUNT, DEV_KEY).expect("the development key is valid");
    let sas = TableSasBuilder::new(DATA)
        .permissions(TableSasPermissions::parse("raud").expect("valid permissions"))
        .expiry(Utc.with_ymd_and_hms(2099, 1, 1, 0, 0, 0).single().expect("a valid instant"))
        .sign(&key)
        .expect("the SAS signs");
    let sas = sas.as_query().trim_start_matches('?');
    seeds.push(request("GET", &format!("{account}/{DATA}()?$top=3&{sas}"), MINIMAL, ""));
    seeds.push(request("POST", &format!("{account}/{DATA}?{sas}"), &format!("{JSON}{NONE}"), &new_row));
    // Two requests on one connection: what the first leaves behind (a half-read body, a
    // failed batch) must not change how the second is read.
    let keep_alive = |request: Vec<u8>| {
        let text = String::from_utf8(request).expect("seeds are text");
        text.replacen("Connection: close\r\n", "", 1).into_bytes()
    };
    let read = request("GET", &format!("{account}/{DATA}()?$top=2"), MINIMAL, "");
    let (content_type, body) = batch(&failing);
    let failed_batch =
        request("POST", &format!("{account}/$batch"), &format!("Content-Type: {content_type}\r\n"), &body);
    let insert = request("POST", &format!("{account}/{DATA}"), &format!("{JSON}{MINIMAL}"), &new_row);
    seeds.push([keep_alive(insert), read.clone()].concat());
    seeds.push([keep_alive(failed_batch), read].concat());
    seeds
}

// ---------------------------------------------------------------------------------------------
// the check

/// One answer as received.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// An answer to a `HEAD`: its body is left out, whatever its headers say.
    headless: bool,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// What an answer says happened.
#[derive(Debug, PartialEq, Eq)]
enum Said {
    /// The service did what was asked (a batch: the whole transaction).
    Success,
    /// The service refused, with this error code (a batch: its transaction failed).
    Refused(String),
    /// Hyper refused the request before the service saw it.
    Hyper,
}

/// Serves `input` from the fixture and checks the answers (see the module docs); the outcome
/// is the first answer's status and error code (`hyper 400`, `closed` when there is none).
pub(super) fn check(input: &[u8]) -> Result<String, String> {
    let harness = &*HARNESS;
    let _one_at_a_time = harness.lock.lock().unwrap_or_else(PoisonError::into_inner);
    let engine = harness.reset();
    let panics = SERVER_PANICS.load(Ordering::SeqCst);
    let address = if contains(input, b"sig=") { harness.signed } else { harness.open };
    let raw = exchange(address, input)?;
    // The hook ran before the task unwound and dropped the connection.
    if SERVER_PANICS.load(Ordering::SeqCst) != panics {
        let message = LAST_PANIC.lock().unwrap_or_else(PoisonError::into_inner).clone();
        // Counted as the panic it is (`Target::check` catches this one).
        panic!("the server panicked: {message}");
    }
    let replies = split_replies(&raw, contains(input, b"HEAD"))?;
    let mut said = Vec::with_capacity(replies.len());
    for reply in &replies {
        said.push(judge(reply).map_err(|e| format!("{e}; answer: {}", show(reply)))?);
    }
    let label = match (replies.first(), said.first()) {
        (Some(reply), Some(Said::Hyper)) => format!("hyper {}", reply.status),
        (Some(reply), Some(Said::Refused(code))) => format!("{} {code}", reply.status),
        (Some(reply), _) => reply.status.to_string(),
        _ => "closed".to_owned(),
    };
    // Every write the service answers with 201, 202 or 204; a read (and only a read) with 200.
    let wrote = replies.iter().zip(&said).any(|(reply, said)| *said == Said::Success && reply.status != 200);
    if wrote {
        read_back(harness.open)
            .map_err(|e| format!("answered {label}, then the data does not read back: {e}"))?;
    } else {
        let now = fingerprint(&engine);
        if now != harness.pristine {
            let changed = now.iter().find(|line| !harness.pristine.contains(line));
            let lost = harness.pristine.iter().find(|line| !now.contains(line));
            return Err(format!(
                "no write succeeded (first answer {label}), but the data changed: now {changed:?}, gone {lost:?}"
            ));
        }
    }
    Ok(label)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Writes `bytes`, shuts the write side and reads until the server closes.
fn exchange(address: SocketAddr, bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut stream = TcpStream::connect(address).map_err(|e| format!("cannot connect: {e}"))?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(|e| e.to_string())?;
    // The server may answer and close before reading everything (a malformed head): what it
    // answered is still read below.
    let _ = stream.write_all(bytes).and_then(|()| stream.shutdown(Shutdown::Write));
    let mut raw = Vec::new();
    match stream.read_to_end(&mut raw) {
        Ok(_) => Ok(raw),
        // A close with unread input resets the connection: what came before is the answer.
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(raw),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Err(format!(
            "no end of the answers within {ANSWER_TIMEOUT:?}; read {:?}",
            raw.escape_ascii().to_string()
        )),
        Err(e) => Err(format!("reading the answer failed: {e}")),
    }
}

/// The answers in `raw`, each framed by `Content-Length` (none on a 1xx, 204 or 304). An
/// answer to a `HEAD` (`heads`: the input has one) names the length of a body it leaves out.
fn split_replies(raw: &[u8], heads: bool) -> Result<Vec<Reply>, String> {
    let mut replies = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let end = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| format!("an answer's head does not end: {:?}", rest.escape_ascii().to_string()))?;
        let head =
            std::str::from_utf8(&rest[..end]).map_err(|_| "an answer's head is not UTF-8".to_owned())?;
        rest = &rest[end + 4..];
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = match status_line.split(' ').collect::<Vec<_>>().as_slice() {
            [version, status, ..] if version.starts_with("HTTP/1.") => status.parse::<u16>().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("malformed status line {status_line:?}"))?;
        let mut headers = Vec::new();
        for line in lines {
            let (name, value) =
                line.split_once(':').ok_or_else(|| format!("malformed header line {line:?}"))?;
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        if (100..200).contains(&status) {
            continue;
        }
        let mut reply = Reply { status, headers, body: Vec::new(), headless: false };
        let length = match (status, reply.header("content-length")) {
            (204 | 304, None) => 0,
            (_, Some(n)) => {
                n.parse::<usize>().map_err(|_| format!("Content-Length {n:?} is not a length"))?
            }
            (_, None) => return Err(format!("an answer without Content-Length: {head:?}")),
        };
        reply.headless = heads && length > 0 && (rest.is_empty() || rest.starts_with(b"HTTP/1."));
        if !reply.headless {
            let body = rest.get(..length).ok_or_else(|| {
                format!("the body is cut short: {length} bytes announced, {} sent: {head:?}", rest.len())
            })?;
            reply.body = body.to_vec();
            rest = &rest[length..];
        }
        replies.push(reply);
    }
    Ok(replies)
}

fn show(reply: &Reply) -> String {
    format!("{} {:?} {:?}", reply.status, reply.headers, String::from_utf8_lossy(&reply.body))
}

/// Checks one answer and says what it reports.
fn judge(reply: &Reply) -> Result<Said, String> {
    let Some(_) = reply.header("x-ms-request-id") else {
        // Only hyper answers without the service's headers: a refusal of the request's
        // framing, before the service saw it, bare (no type, no body).
        let bare = reply.body.is_empty() && reply.header("content-type").is_none();
        if reply.status < 400 || reply.status == 500 || !bare {
            return Err("an answer without x-ms-request-id that is not hyper's plain refusal".to_owned());
        }
        return Ok(Said::Hyper);
    };
    if matches!(reply.status, 500 | 503) {
        return Err(format!("the service answered {} with no fault injected", reply.status));
    }
    let content_type = reply.header("content-type").unwrap_or_default();
    if reply.headless {
        // The service serves no `HEAD`: a refusal (405, or whatever it checks first), whose
        // body HTTP leaves out.
        return match reply.status {
            400.. if is_error_type(content_type) => Ok(Said::Refused("(HEAD)".to_owned())),
            _ => Err("an answer to HEAD that is not a JSON or XML error".to_owned()),
        };
    }
    if reply.status >= 400 {
        return error_code(reply, content_type).map(Said::Refused);
    }
    if reply.status == 202 && content_type.starts_with("multipart/mixed") {
        return match wire::decode_batch_response(content_type, &reply.body) {
            Ok(_) => Ok(Said::Success),
            Err(e) if e.status().is_some_and(|s| s >= 400) => match e.code() {
                Some(code) if e.status() != Some(500) => Ok(Said::Refused(code.as_str().to_owned())),
                _ => Err(format!("a failed batch without a service error code: {e}")),
            },
            Err(e) => Err(format!("the batch answer does not decode: {e}")),
        };
    }
    if content_type.starts_with("application/json") && !reply.body.is_empty() {
        serde_json::from_slice::<Json>(&reply.body)
            .map_err(|e| format!("the JSON body does not parse: {e}"))?;
    }
    Ok(Said::Success)
}

/// The code of the service's error body, JSON or XML as the request's `Accept` picked and the
/// `Content-Type` says.
fn error_code(reply: &Reply, content_type: &str) -> Result<String, String> {
    service_error::read(content_type, &reply.body).map(|error| error.code)
}

/// Whether `content_type` is one an error answer is typed with (JSON or XML).
fn is_error_type(content_type: &str) -> bool {
    content_type.starts_with("application/json") || content_type == "application/xml"
}

/// The most pages [`read_back`] reads of one table.
const MAX_READ_BACK_PAGES: usize = 8;

/// Reads every table of the account back over HTTP: the list, then each table's rows, page by
/// page, each answer 200 and decoded by the client's own readers.
fn read_back(address: SocketAddr) -> Result<(), String> {
    let get = |target: &str| -> Result<Reply, String> {
        let read = request("GET", target, "Accept: application/json;odata=fullmetadata\r\n", "");
        let raw = exchange(address, &read)?;
        let mut replies = split_replies(&raw, false)?;
        match replies.len() {
            1 => Ok(replies.remove(0)),
            n => Err(format!("{n} answers to GET {target}")),
        }
    };
    let list = get("/devstoreaccount1/Tables")?;
    if list.status != 200 {
        return Err(format!("the table list answers {}", show(&list)));
    }
    let tables =
        wire::decode_table_list(&list.body).map_err(|e| format!("the table list does not decode: {e}"))?;
    for table in tables {
        let mut target = format!("/devstoreaccount1/{table}()");
        // A handful of pages at most: inputs add at most a batch's 100 rows. More would be
        // continuations that never end, a fault rather than a table read to its end.
        for pages in 1.. {
            let page = get(&target)?;
            if page.status != 200 {
                return Err(format!("table {table} answers {}", show(&page)));
            }
            wire::decode_query_page(&page.body)
                .map_err(|e| format!("a page of {table} does not decode: {e}"))?;
            let Some(next) = page.header("x-ms-continuation-nextpartitionkey") else { break };
            if pages == MAX_READ_BACK_PAGES {
                return Err(format!("table {table} still continues after {pages} pages"));
            }
            let row = page.header("x-ms-continuation-nextrowkey").unwrap_or_default();
            let encode = wire::url::encode_component;
            target = format!(
                "/devstoreaccount1/{table}()?NextPartitionKey={}&NextRowKey={}",
                encode(next),
                encode(row)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ERROR: &str = r#"{"odata.error":{"code":"InvalidInput","message":{"lang":"en-US","value":"x"}}}"#;

    fn service(status: u16, body: &str) -> String {
        format!(
            "HTTP/1.1 {status} X\r\nx-ms-request-id: r\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    fn said(raw: &str) -> Result<Vec<Said>, String> {
        split_replies(raw.as_bytes(), false)?.iter().map(judge).collect()
    }

    #[test]
    fn answers_are_split_by_their_length_and_interim_answers_skipped() {
        let raw = format!("HTTP/1.1 100 Continue\r\n\r\n{}{}", service(400, ERROR), service(200, "{}"));
        assert_eq!(said(&raw), Ok(vec![Said::Refused("InvalidInput".to_owned()), Said::Success]));
        let no_content = "HTTP/1.1 204 No Content\r\nx-ms-request-id: r\r\n\r\n";
        assert_eq!(said(no_content), Ok(vec![Said::Success]));
        let hyper = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(said(hyper), Ok(vec![Said::Hyper]));
    }

    #[test]
    fn broken_answers_are_violations() {
        let cut = service(400, ERROR);
        assert!(said(&cut[..cut.len() - 1]).is_err(), "a body cut short");
        assert!(said("HTTP/1.1 200 OK\r\nx-ms-request-id: r\r\n\r\n").is_err(), "no length");
        assert!(said("HTTP/1.1 200 OK\r\ncontent-len").is_err(), "a head cut short");
        assert!(said(&service(500, ERROR)).is_err(), "a 500");
        assert!(said(&service(404, r#"{"odata.error":{"code":""}}"#)).is_err(), "no code");
        let xml = service(404, ERROR).replace("application/json", "application/xml");
        assert!(said(&xml).is_err(), "a JSON body typed as XML");
        assert!(said(&service(200, "{")).is_err(), "a JSON body that does not parse");
        let typed = "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 0\r\n\r\n";
        assert!(said(typed).is_err(), "no request id, yet not bare");
    }

    #[test]
    fn a_head_answer_leaves_its_body_out() {
        let head = service(405, ERROR);
        let head = &head[..head.len() - ERROR.len()];
        let replies = split_replies(format!("{head}{head}").as_bytes(), true).unwrap_or_default();
        assert_eq!(
            replies.iter().map(judge).collect::<Vec<_>>(),
            [Ok(Said::Refused("(HEAD)".to_owned())), Ok(Said::Refused("(HEAD)".to_owned()))]
        );
    }
}
