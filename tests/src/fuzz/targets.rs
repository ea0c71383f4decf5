//! The fuzz targets: one corpus, dictionary and check per public parser or decoder.
//!
//! | target | code under test | invariants checked besides "no panic" |
//! |---|---|---|
//! | `filter` | `Filter::parse`, `matches`, `check_limits`, `Display`, `wire::url::entity_query` | a parsed filter that passes `check_limits` prints to text that parses back to an equal filter |
//! | `entity` | `wire::decode_entity` | a decoded entity re-encoded by `wire::encode_entity` decodes to the same keys and properties |
//! | `page` | `wire::decode_query_page`, `decode_table_list`, `decode_table` | as `entity`, for every entity of a page |
//! | `batch` | `wire::decode_batch_response` | a success has at least one outcome |
//! | `error` | `wire::decode_error` | the error keeps the status and has a message |
//! | `connection-string` | `ConnectionString::parse`, `Credential::authorize` | no `Debug` output contains the input's `AccountKey` or `sig` text |
//! | `continuation` | `Continuation::from_str`, `wire::url::entity_query` | `parse(to_string(c)) == c` |
//! | `server` | a running `table_server::Server`, whole HTTP/1.1 requests over TCP (module `server`) | well-formed answers, no 500, the service's error bodies, no data change on error, data readable after success |
//!
//! Inputs are bytes; a target whose API takes `&str` reads them as lossy UTF-8, so invalid
//! sequences arrive as U+FFFD. Targets that take several arguments frame them in the input
//! (`batch`: the `Content-Type` on the first line; `error`: the status on the first line, then
//! `Name: value` header lines up to an empty line, then the body), so an input alone replays.
//!
//! The checks name outcomes by error kind (and violation, for local rules), never asserting
//! which kind: the decoders' rules change, a panic or a broken invariant never may.

use std::borrow::Cow;
use std::hint::black_box;
use std::ops::Bound;
use std::sync::LazyLock;

use table_client::connection_string::{ConnectionString, DEVELOPMENT_KEY};
use table_client::wire::{self, url::entity_query};
use table_core::datetime::parse_datetime;
use table_core::{Continuation, Entity, Error, Filter, QueryRequest, Value};
use uuid::Uuid;

use super::{Target, server};

/// Every target, in the order the command line runs them.
pub static TARGETS: [Target; 8] = [
    Target { name: "filter", seeds: filter_seeds, dictionary: FILTER_TOKENS, check: check_filter },
    Target { name: "entity", seeds: entity_seeds, dictionary: JSON_TOKENS, check: check_entity },
    Target { name: "page", seeds: page_seeds, dictionary: JSON_TOKENS, check: check_page },
    Target { name: "batch", seeds: batch_seeds, dictionary: BATCH_TOKENS, check: check_batch },
    Target { name: "error", seeds: error_seeds, dictionary: ERROR_TOKENS, check: check_error },
    Target {
        name: "connection-string",
        seeds: connection_string_seeds,
        dictionary: CONNECTION_STRING_TOKENS,
        check: check_connection_string,
    },
    Target {
        name: "continuation",
        seeds: continuation_seeds,
        dictionary: CONTINUATION_TOKENS,
        check: check_continuation,
    },
    Target { name: "server", seeds: server::seeds, dictionary: server::TOKENS, check: server::check },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The outcome label of an error: its kind, and the local rule it breaks if any
/// (`InvalidInput/FilterSyntax`).
fn label(error: &Error) -> String {
    // Formatting is code under test too: messages quote hostile input.
    black_box((error.to_string(), format!("{error:?}")));
    match error.violation() {
        Some(violation) => {
            let debug = format!("{violation:?}");
            let name = debug.split([' ', '(', '{']).next().unwrap_or_default();
            format!("{:?}/{name}", error.kind())
        }
        None => format!("{:?}", error.kind()),
    }
}

fn ok() -> Result<String, String> {
    Ok("ok".to_owned())
}

/// A fixed instant for seeds.
fn instant(text: &str) -> Value {
    Value::DateTime(parse_datetime(text).expect("seed datetimes are valid"))
}

// ---------------------------------------------------------------------------------------------
// filter

const FILTER_TOKENS: &[&str] = &[
    "not ",
    " and ",
    " or ",
    "(",
    ")",
    " eq ",
    " ne ",
    " gt ",
    " ge ",
    " lt ",
    " le ",
    "'",
    "''",
    "datetime'",
    "guid'",
    "X'",
    "binary'",
    "L",
    "D",
    "d",
    "E",
    "e-",
    ".",
    "-",
    "NaN",
    "INF",
    "-INF",
    "true",
    "false",
    "null",
    "add",
    "substringof(",
    ",",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775807L",
    "9223372036854775808L",
    "1e308",
    "1e309",
    "-0.0",
    "1.7976931348623157E308D",
    "2020-01-02T03:04:05.1234567Z'",
    "0001-01-01T00:00:00Z'",
    "9999-12-31T23:59:59.9999999Z'",
    "0000-01-01T00:00:00Z'",
    "10000-01-01T00:00:00Z'",
    "T24:00:00Z",
    ":60Z",
    "+01:00",
    "00000000-0000-0000-0000-000000000000'",
    "{00000000-0000-0000-0000-000000000000}",
    "0aFF'",
    "0'",
    "é",
    "e\u{301}",
    "\u{0}",
    "\u{ffff}",
    "\u{10ffff}",
    " ",
    "\t",
    "PartitionKey",
    "RowKey",
    "Timestamp",
    "Name",
    "Age",
    "$",
    "@",
];

fn filter_seeds() -> Vec<Vec<u8>> {
    let when = instant("2020-01-02T03:04:05.1234567Z");
    let built = [
        Filter::partition_key_eq("p1").and(Filter::ge("RowKey", "a")),
        Filter::eq("Name", "it's").or(Filter::ne("Age", 42)),
        Filter::gt("Big", 1_i64 << 40).and(Filter::lt("Age", -7)),
        Filter::lt("Score", 1.5).or(Filter::ge("Score", -0.0)).or(Filter::eq("Score", 1e300)),
        Filter::ne("Score", f64::NAN).and(Filter::lt("Score", f64::INFINITY)),
        Filter::eq("Active", true).and(!Filter::property("Active")),
        Filter::eq("When", when).or(Filter::eq("Timestamp", instant("0001-01-01T00:00:00Z"))),
        Filter::eq("Id", Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef)),
        Filter::eq("Blob", vec![0_u8, 1, 0xfe]),
        Filter::prefix("RowKey", "ab").and(Filter::prefix("été_1", "\u{10ffff}")),
        Filter::range("PartitionKey", Bound::Excluded("a"), Bound::Included("z")),
        Filter::property("a").or(Filter::property("b")).and(!Filter::eq("c", 1)),
        !(!Filter::property("Active")),
        Filter::all_of((0..15).map(|i| Filter::eq(format!("P{i}"), i))).expect("fifteen filters"),
    ];
    let written = [
        "binary'0a0B' eq Blob",
        "2D lt Score and Score ge 1.5E-3",
        "not (Age eq 1) and (Name eq 'x' or Name eq 'y')",
        "((Active))",
        "datetime'2020-01-02T03:04:05Z' le When",
        "Age eq -2147483648 or Big eq 9223372036854775807L",
        "Score eq -INF or Score eq INF or Score eq NaN",
        "guid'00000000-0000-0000-0000-000000000000' ne Id",
    ];
    built
        .iter()
        .map(|f| f.to_string().into_bytes())
        .chain(written.iter().map(|s| s.as_bytes().to_vec()))
        .collect()
}

/// Entities the parsed filters are evaluated on: every type under the names the seeds use,
/// the same names with other types, and an entity with no properties.
static SAMPLE_ENTITIES: LazyLock<Vec<Entity>> = LazyLock::new(|| {
    vec![
        Entity::new("p1", "ab")
            .with("Name", "x")
            .with("Age", 42)
            .with("Big", 1_i64 << 40)
            .with("Score", 1.5)
            .with("Active", true)
            .with("When", instant("2020-01-02T03:04:05.1234567Z"))
            .with("Id", Uuid::nil())
            .with("Blob", vec![0_u8, 1])
            .with("a", true)
            .with("P3", 3),
        Entity::new("", "")
            .with("Name", 42)
            .with("Age", "x")
            .with("Big", 1.0)
            .with("Score", f64::NAN)
            .with("Active", "true")
            .with("When", Uuid::nil())
            .with("b", false),
        Entity::new("z", "\u{10ffff}"),
    ]
});

fn check_filter(input: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(input);
    let filter = match Filter::parse(&text) {
        Ok(filter) => filter,
        Err(e) => return Ok(label(&e)),
    };
    for entity in SAMPLE_ENTITIES.iter() {
        black_box(filter.matches(entity));
    }
    black_box(entity_query(&QueryRequest { filter: Some(filter.clone()), ..QueryRequest::default() }));
    // The round trip is promised for what passes `check_limits`; a filter it refuses (a
    // non-finite double, say) is never sent, so its printed form need not parse.
    if let Err(e) = filter.check_limits() {
        return Ok(format!("ok, then check_limits: {}", label(&e)));
    }
    let printed = filter.to_string();
    match Filter::parse(&printed) {
        Ok(again) if again == filter => {}
        Ok(again) => {
            return Err(format!("{printed:?} (the printed form) parses to another filter: {again:?}"));
        }
        Err(e) => return Err(format!("{printed:?} (the printed form) does not parse: {e}")),
    }
    ok()
}

// ---------------------------------------------------------------------------------------------
// entity and page JSON

const JSON_TOKENS: &[&str] = &[
    "\"",
    ",",
    ":",
    "{",
    "}",
    "[",
    "]",
    "[[[[",
    "{\"a\":",
    "null",
    "true",
    "false",
    "\\u0000",
    "\\ud800",
    "\\udc00",
    "\\\"",
    "\\\\",
    "\\n",
    "é",
    "\u{10ffff}",
    "\u{0}",
    "0",
    "-0",
    "1.5",
    "1e400",
    "-1e400",
    "2147483648",
    "-2147483649",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "123456789012345678901234567890",
    "\"NaN\"",
    "\"Infinity\"",
    "\"-Infinity\"",
    "\"@odata.type\":\"Edm.Int64\"",
    "\"x@odata.type\":\"Edm.Int64\"",
    "\"x@odata.type\":\"Edm.Int32\"",
    "\"x@odata.type\":\"Edm.Double\"",
    "\"x@odata.type\":\"Edm.DateTime\"",
    "\"x@odata.type\":\"Edm.Guid\"",
    "\"x@odata.type\":\"Edm.Binary\"",
    "\"x@odata.type\":\"Edm.Boolean\"",
    "\"x@odata.type\":\"Edm.String\"",
    "\"x@odata.type\":\"Edm.Decimal\"",
    "\"Timestamp@odata.type\":\"Edm.DateTime\"",
    "@odata.type",
    "\"odata.etag\":",
    "\"odata.etag\":\"W/\\\"1\\\"\"",
    "\"odata.etag\":\"\\u0001\"",
    "\"odata.metadata\":",
    "\"odata.error\":{\"code\":\"x\"}",
    "\"x\":",
    "\"PartitionKey\":\"p\"",
    "\"RowKey\":\"r\"",
    "\"Timestamp\":",
    "\"value\":[",
    "\"TableName\":\"t\"",
    "\"2020-01-02T03:04:05.1234567Z\"",
    "\"0001-01-01T00:00:00Z\"",
    "\"9999-12-31T23:59:59.9999999Z\"",
    "\"0000-01-01T00:00:00Z\"",
    "\"10000-01-01T00:00:00Z\"",
    "\"2020-01-02T03:04:60Z\"",
    "\"2020-01-02T03:04:05.1234567891234Z\"",
    "\"00000000-0000-0000-0000-000000000000\"",
    "\"{00000000-0000-0000-0000-000000000000}\"",
    "\"AAEC/w==\"",
    "\"=\"",
    "\"\"",
];

/// Entities of every value type, with keys and names that need escaping.
fn sample_entities() -> Vec<Entity> {
    vec![
        Entity::new("p1", "r1")
            .with("Name", "it's \"quoted\" \\ é \u{10ffff}")
            .with("Age", -42)
            .with("Big", i64::MIN)
            .with("Score", 1.5)
            .with("Tiny", -0.0)
            .with("Huge", 1e300)
            .with("Nan", f64::NAN)
            .with("Inf", f64::NEG_INFINITY)
            .with("Active", true)
            .with("When", instant("2020-01-02T03:04:05.1234567Z"))
            .with("First", instant("1601-01-01T00:00:00Z"))
            .with("Id", Uuid::from_u128(u128::MAX))
            .with("Blob", vec![0_u8, 1, 0xfe, 0xff]),
        Entity::new("", "").with("", ""),
        Entity::new("p'\u{0}", "r/é").with("été_1", i32::MAX).with("Empty", Vec::<u8>::new()),
    ]
}

/// An encoded entity with the members a `minimalmetadata` read adds (`odata.etag`,
/// `Timestamp`), or a `fullmetadata` one (`odata.*` control keys, every type annotated).
fn with_metadata(body: &str, full: bool) -> String {
    let rest = body.strip_prefix('{').unwrap_or(body);
    let mut head = String::from(
        "{\"odata.etag\":\"W/\\\"datetime'2020-01-02T03%3A04%3A05.1234567Z'\\\"\",\
         \"Timestamp\":\"2020-01-02T03:04:05.1234567Z\",",
    );
    if full {
        head.push_str(
            "\"odata.metadata\":\"http://127.0.0.1:10002/devstoreaccount1/$metadata#t/@Element\",\
             \"odata.type\":\"acct.t\",\"odata.id\":\"http://h/t(PartitionKey='p',RowKey='r')\",\
             \"Timestamp@odata.type\":\"Edm.DateTime\",\"Name@odata.type\":\"Edm.String\",",
        );
    }
    head + rest
}

fn entity_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (i, entity) in sample_entities().iter().enumerate() {
        let body = wire::encode_entity(entity);
        seeds.push(with_metadata(&body, i % 2 == 0).into_bytes());
        seeds.push(body.into_bytes());
    }
    // Annotations after their values, unannotated Int64 and Double, a `null` (not selected).
    seeds.push(
        br#"{"PartitionKey":"p","RowKey":"r","x":"5","x@odata.type":"Edm.Int64","y":3000000000,"z":2.0,"n":null}"#
            .to_vec(),
    );
    seeds
}

/// Re-encodes a decoded entity and checks that it decodes to the same keys and properties:
/// what the SDK read is what it would write back.
fn round_trips(entity: &Entity) -> Result<(), String> {
    let body = wire::encode_entity(entity);
    let again = wire::decode_entity(body.as_bytes(), None)
        .map_err(|e| format!("the re-encoded entity {body:?} does not decode: {e}"))?;
    let same = again.partition_key == entity.partition_key
        && again.row_key == entity.row_key
        && again.properties == entity.properties;
    if !same {
        return Err(format!("{entity:?} re-encoded as {body:?} decodes to {again:?}"));
    }
    Ok(())
}

fn check_entity(input: &[u8]) -> Result<String, String> {
    match wire::decode_entity(input, None) {
        Ok(entity) => round_trips(&entity).and_then(|()| ok()),
        Err(e) => Ok(label(&e)),
    }
}

fn page_seeds() -> Vec<Vec<u8>> {
    let entities: Vec<String> = sample_entities().iter().map(wire::encode_entity).collect();
    let full: Vec<String> = entities.iter().map(|e| with_metadata(e, true)).collect();
    vec![
        format!(
            "{{\"odata.metadata\":\"http://127.0.0.1:10002/devstoreaccount1/$metadata#t\",\"value\":[{}]}}",
            entities.join(",")
        )
        .into_bytes(),
        format!("{{\"value\":[{}]}}", full.join(",")).into_bytes(),
        br#"{"odata.metadata":"http://h/$metadata#t","value":[]}"#.to_vec(),
        br#"{"odata.metadata":"http://h/$metadata#Tables","value":[{"TableName":"t1"},{"TableName":"t2"}]}"#
            .to_vec(),
        br#"{"odata.metadata":"http://h/$metadata#Tables/@Element","TableName":"t1"}"#.to_vec(),
    ]
}

fn check_page(input: &[u8]) -> Result<String, String> {
    let tables = wire::decode_table_list(input).is_ok() || wire::decode_table(input).is_ok();
    match wire::decode_query_page(input) {
        Ok(entities) => {
            for entity in &entities {
                round_trips(entity)?;
            }
            ok()
        }
        // A table list or a Create Table echo: the table decoders share the page's shape.
        Err(_) if tables => Ok("ok (tables)".to_owned()),
        Err(e) => Ok(label(&e)),
    }
}

// ---------------------------------------------------------------------------------------------
// $batch responses

const BATCH_TOKENS: &[&str] = &[
    "\r\n",
    "\n",
    "\r",
    "\r\n\r\n",
    "--",
    "--batchresponse_u",
    "--changesetresponse_v",
    "--changesetresponse_v--",
    "--batchresponse_u--",
    "--changesetresponse_",
    "Content-Type: multipart/mixed; boundary=",
    "Content-Type: multipart/mixed; boundary=changesetresponse_v\r\n",
    "Content-Type: application/http\r\n",
    "boundary=",
    "boundary=\"\"",
    ";",
    "\"",
    "HTTP/1.1 204 No Content\r\n",
    "HTTP/1.1 201 Created\r\n",
    "HTTP/1.1 412 Precondition Failed\r\n",
    "HTTP/1.1 ",
    "HTTP/1.1 99999 X",
    "HTTP/1.1 600 X",
    "HTTP/",
    "ETag: W/\"1\"\r\n",
    "ETag: \u{1}\r\n",
    "ETag:",
    "Content-ID: 0\r\n",
    "Content-ID: 99999\r\n",
    ":",
    " ",
    "{\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"value\":\"0:x\"}}}",
    "0:",
    "é",
    "\u{0}",
];

/// A real-looking answer to a batch of `parts`, each an embedded response (status line,
/// headers, optional body), with `eol` line ends.
fn batch_response(parts: &[&str], eol: &str) -> String {
    let mut body =
        String::from("--batchresponse_u\nContent-Type: multipart/mixed; boundary=changesetresponse_v\n\n");
    for part in parts {
        body.push_str(
            "--changesetresponse_v\nContent-Type: application/http\nContent-Transfer-Encoding: binary\n\n",
        );
        body.push_str(part);
        body.push('\n');
    }
    body.push_str("--changesetresponse_v--\n--batchresponse_u--\n");
    body.replace('\n', eol)
}

fn batch_seeds() -> Vec<Vec<u8>> {
    let inserted = "HTTP/1.1 201 Created\nContent-ID: 0\n\
        Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\n\
        ETag: W/\"datetime'2014-01-31T10%3A14%3A18.918655Z'\"\n\n\
        {\"odata.metadata\":\"x\",\"PartitionKey\":\"p\",\"RowKey\":\"r1\"}\n";
    let azurite_insert = "HTTP/1.1 201 Created\netag: W/\"2\"\n";
    let updated = "HTTP/1.1 204 No Content\nContent-ID: 1\nX-Content-Type-Options: nosniff\n\
        DataServiceVersion: 1.0;\nETag: W/\"datetime'2014-01-31T10%3A14%3A18.918655Z'\"\n\n";
    let conflict = "HTTP/1.1 409 Conflict\nContent-ID: 1\n\
        Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\n\n\
        {\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\",\
        \"value\":\"1:The specified entity already exists.\\nRequestId:a1f47a48-0001\\nTime:2014-01-31T10:28:02.5907425Z\"}}}\n";
    let precondition = "HTTP/1.1 412 Precondition Failed\nContent-Type: application/xml\n\n\
        <?xml version=\"1.0\" encoding=\"utf-8\"?><m:error xmlns:m=\"x\"><m:code>UpdateConditionNotSatisfied</m:code>\
        <m:message xml:lang=\"en-US\">0:The update condition specified in the request was not satisfied.</m:message></m:error>\n";
    let content_type = "multipart/mixed; boundary=batchresponse_u";
    let quoted = "multipart/mixed; charset=utf-8; boundary=\"batchresponse_u\"";
    [
        (content_type, batch_response(&[inserted, updated, azurite_insert], "\r\n")),
        (quoted, batch_response(&[updated, updated], "\n")),
        (content_type, batch_response(&[conflict], "\r\n")),
        (content_type, batch_response(&[precondition], "\n")),
    ]
    .iter()
    .map(|(ct, body)| format!("{ct}\n{body}").into_bytes())
    .collect()
}

/// Splits an input at its first `\n`: the frame's first line and the rest.
fn first_line(input: &[u8]) -> (Cow<'_, str>, &[u8]) {
    let end = input.iter().position(|&b| b == b'\n').unwrap_or(input.len());
    (String::from_utf8_lossy(&input[..end]), input.get(end + 1..).unwrap_or_default())
}

fn check_batch(input: &[u8]) -> Result<String, String> {
    let (content_type, body) = first_line(input);
    match wire::decode_batch_response(&content_type, body) {
        Ok(outcomes) if outcomes.is_empty() => Err("a successful batch response has no outcome".to_owned()),
        Ok(outcomes) => {
            black_box(format!("{outcomes:?}"));
            ok()
        }
        Err(e) => Ok(label(&e)),
    }
}

// ---------------------------------------------------------------------------------------------
// error bodies

const ERROR_TOKENS: &[&str] = &[
    "{\"odata.error\":{\"code\":\"",
    "\"message\":{\"lang\":\"en-US\",\"value\":\"",
    "\"message\":\"",
    "\"code\":null",
    "\"}}}",
    "\"",
    "{",
    "}",
    "\\n",
    "\\u0000",
    "<m:code>",
    "</m:code>",
    "<m:message>",
    "</m:message>",
    "<Code>",
    "<Message>",
    "</Message>",
    "<code/>",
    "<",
    ">",
    "/>",
    "&amp;",
    "&lt;",
    "&",
    "&#x41;",
    "RequestId:",
    "\nRequestId:",
    "\nTime:",
    "12:",
    "0:",
    "99999999999999999999:",
    ":",
    "x-ms-error-code: ",
    "x-ms-request-id: ",
    "X-MS-ERROR-CODE:",
    "\n\n",
    "\n",
    "\r\n",
    "ServerBusy",
    "EntityAlreadyExists",
    "UpdateConditionNotSatisfied",
    "OperationTimedOut",
    "TableNotFound",
    "",
    "é",
    "\u{10ffff}",
    "0",
    "65535",
    "65536",
    "409",
    "503",
];

fn error_seeds() -> Vec<Vec<u8>> {
    let framed = |status: u16, headers: &str, body: &str| format!("{status}\n{headers}\n{body}").into_bytes();
    vec![
        framed(
            409,
            "x-ms-request-id: rid-1\n",
            r#"{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"The specified entity already exists.\nRequestId:a1f47a48-0000\nTime:2014-01-31T10:28:02.5907425Z"}}}"#,
        ),
        framed(
            400,
            "",
            r#"{"odata.error":{"code":"InvalidDuplicateRow","message":{"lang":"en-US","value":"12:A command with RowKey 'r' is already present in the batch.\nRequestId:abc-123\nTime:2014-01-31T10:28:02.590Z"}}}"#,
        ),
        framed(503, "", r#"{"odata.error":{"code":"ServerBusy","message":"The server is busy."}}"#),
        framed(
            403,
            "",
            "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\n\
             <m:error xmlns:m=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\">\n\
             <m:code>AuthenticationFailed</m:code>\n<m:message xml:lang=\"en-US\">Server failed to authenticate \
             the request.\nRequestId:5f3b\nTime:2014-01-31T10:28:02.5907425Z</m:message>\n</m:error>",
        ),
        framed(
            403,
            "x-ms-request-id: hdr\n",
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Error>\n  <Code>AuthorizationFailure</Code>\n\
             <Message>Server failed to authorize &amp; &lt;reject&gt; the request.\nRequestId:77\n\
             Time:2026-11-22T04:28:30.706Z</Message>\n</Error>",
        ),
        framed(404, "x-ms-error-code: TableNotFound\n", ""),
        framed(500, "Content-Type: text/html\n", "<html><body>Internal Server Error</body></html>"),
    ]
}

fn check_error(input: &[u8]) -> Result<String, String> {
    let (status_line, rest) = first_line(input);
    let status = status_line.trim().parse::<u16>().unwrap_or(500);
    let end = rest.windows(2).position(|w| w == b"\n\n").unwrap_or(rest.len());
    let header_text = String::from_utf8_lossy(&rest[..end]);
    let headers: Vec<(&str, &str)> = header_text.lines().filter_map(|l| l.split_once(':')).collect();
    let body = rest.get(end + 2..).unwrap_or_default();
    let error = wire::decode_error(status, &headers, body);
    if error.status() != Some(status) {
        return Err(format!("status {status} decoded as {:?}", error.status()));
    }
    if error.message().is_empty() {
        return Err("the decoded error has no message".to_owned());
    }
    Ok(label(&error))
}

// ---------------------------------------------------------------------------------------------
// connection strings

const CONNECTION_STRING_TOKENS: &[&str] = &[
    ";",
    "=",
    ";;",
    " ",
    "\r\n",
    "\t",
    "AccountName=",
    "AccountKey=",
    "SharedAccessSignature=",
    "sig=",
    "SIG=",
    "Sig=",
    "&",
    "?",
    "&sig=",
    "TableEndpoint=",
    "https://",
    "http://",
    "ftp://",
    "user:pass@",
    "@",
    "EndpointSuffix=",
    "DefaultEndpointsProtocol=",
    "UseDevelopmentStorage=true",
    "UseEmbeddedEngine=true",
    "Name=",
    "BlobEndpoint=",
    "QueueEndpoint=",
    "TableSecondaryEndpoint=",
    "accountname=",
    "%",
    "%2F",
    "#",
    "/",
    ":",
    ":443",
    "[::1]",
    "127.0.0.1",
    "==",
    "=true",
    "=false",
    "devstoreaccount1",
    "évil",
    "\u{0}",
    "core.windows.net",
    ".",
    "..",
];

/// A base64 account key that is not the development one.
const ACCOUNT_KEY: &str = "c2VjcmV0LWtleS1mb3ItZnV6emluZy0wMTIzNDU2Nzg5YWJjZGVm";

fn connection_string_seeds() -> Vec<Vec<u8>> {
    [
        "UseDevelopmentStorage=true".to_owned(),
        format!(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={ACCOUNT_KEY};EndpointSuffix=core.windows.net"
        ),
        format!("DefaultEndpointsProtocol=http;AccountName=acct;AccountKey={ACCOUNT_KEY}"),
        format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={DEVELOPMENT_KEY};\
             TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"
        ),
        format!(
            "DefaultEndpointsProtocol=https;AccountName=cos;AccountKey={ACCOUNT_KEY};\
             TableEndpoint=https://cos.table.cosmos.azure.com:443/;"
        ),
        "TableEndpoint=https://acct.table.core.windows.net/;SharedAccessSignature=sv=2019-02-02&tn=t&sig=a%2Fb%3DsecretSignature".to_owned(),
        "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;SharedAccessSignature=?sv=2019-02-02&sig=anotherSecretSig".to_owned(),
        format!(
            "BlobEndpoint=https://acct.blob.core.windows.net/;AccountName=acct;AccountKey={ACCOUNT_KEY};\
             QueueEndpoint=https://acct.queue.core.windows.net/"
        ),
        "UseEmbeddedEngine=true".to_owned(),
        "UseEmbeddedEngine=true;Name=shared".to_owned(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect()
}

/// The secrets a connection string carries: `AccountKey` values and the `sig` parameters of
/// `SharedAccessSignature` values, read leniently (any key case, any parameter case). Short
/// values are skipped: they could appear in the output by coincidence.
fn secrets(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (key, value) in text.split(';').filter_map(|pair| pair.split_once('=')) {
        let (key, value) = (key.trim(), value.trim());
        if key.eq_ignore_ascii_case("AccountKey") {
            found.push(value);
        } else if key.eq_ignore_ascii_case("SharedAccessSignature") {
            let params = value.trim_start_matches('?').split('&').filter_map(|p| p.split_once('='));
            found.extend(params.filter(|(name, _)| name.eq_ignore_ascii_case("sig")).map(|(_, sig)| sig));
        }
    }
    found.retain(|secret| secret.len() >= 8);
    found
}

fn check_connection_string(input: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(input);
    let parsed = match ConnectionString::parse(&text) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(label(&e)),
    };
    let mut shown = format!("{parsed:?}");
    if let ConnectionString::Http { endpoint, credential, .. } = &parsed {
        // Signing is the next thing a client does with what was parsed.
        let url = format!("{endpoint}/Tables");
        if let Ok(signed) = credential.authorize("GET", &url, "", "Mon, 01 Jan 2024 00:00:00 GMT") {
            shown.push_str(&format!("{signed:?}"));
        }
    }
    // A secret that also appears elsewhere in the input (as an account name, say) may be
    // shown for that reason.
    match secrets(&text).into_iter().find(|s| shown.contains(s) && text.matches(s).count() == 1) {
        Some(secret) => Err(format!("Debug output shows the secret {secret:?}: {shown}")),
        None => ok(),
    }
}

// ---------------------------------------------------------------------------------------------
// continuation tokens

const CONTINUATION_TOKENS: &[&str] = &[
    ":",
    "::",
    "0",
    "00",
    "1",
    "9",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999",
    "-1",
    "+1",
    " ",
    "!",
    "1!24!",
    "-",
    "=",
    "é",
    "\u{0}",
    "\u{10ffff}",
    "\u{ffff}",
];

fn continuation_seeds() -> Vec<Vec<u8>> {
    let token = |pk: &str, rk: Option<&str>| Continuation {
        next_partition_key: pk.to_owned(),
        next_row_key: rk.map(str::to_owned),
    };
    [
        token("1!8!cGFydDE-", Some("1!12!cm93LTAwMDE-")),
        token("1!8!cGFydDE-", None),
        token("cGFydGl0aW9uS2V5", Some("")),
        token("a:b", Some(":c:")),
        token("", None),
        token("é\u{10ffff}", Some("ü")),
    ]
    .iter()
    .map(|c| c.to_string().into_bytes())
    .collect()
}

fn check_continuation(input: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(input);
    let token = match text.parse::<Continuation>() {
        Ok(token) => token,
        Err(e) => return Ok(label(&e)),
    };
    let printed = token.to_string();
    match printed.parse::<Continuation>() {
        Ok(again) if again == token => {}
        Ok(again) => return Err(format!("{token:?} printed as {printed:?} parses to {again:?}")),
        Err(e) => return Err(format!("{token:?} printed as {printed:?} does not parse: {e}")),
    }
    black_box(entity_query(&QueryRequest { continuation: Some(token), ..QueryRequest::default() }));
    ok()
}
