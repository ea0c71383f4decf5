//! Entity group transactions (`POST /$batch`, protocol doc section 7).
//!
//! The multipart body is split by the client's own reader (`table_client::wire::multipart_leaves`,
//! which its batch responses go through), each part read as an HTTP request with an absolute
//! URL, and the operations handed to the engine together: the engine checks the batch rules
//! (at most 100 operations, one partition, each entity once) and applies all or nothing.
//!
//! A body that cannot be split (no boundary, not UTF-8, over 4 MiB) is refused as a whole, with
//! a plain error answer; a part that cannot be read, or an operation the engine refuses, fails
//! the transaction with a `202 Accepted` whose changeset holds one part: the failing
//! operation's status and error, its message prefixed by the operation's index (a write
//! part's `Content-Type` and a part's `Accept` are refused there as a request's are). A single
//! retrieve (`GET` of one entity) may make up a batch alone; its answer part stands outside
//! any changeset.

use std::fmt::Write as _;

use table_client::wire::url::entity_path;
use table_client::wire::{Lines, MultipartLeaf, header_line, multipart_leaves};
use table_core::{ETag, EntityKey, IfMatch, MAX_BATCH_OPERATIONS, Operation, WriteOutcome};

use crate::answer::{Answer, CONTENT_TYPE, ErrorFormat, Failure, Metadata};
use crate::json::{self, Links};
use crate::request::{
    Call, Refused, Verb, body_entity, check_json_content_type, missing_if_match, part_metadata, verb_of,
};
use crate::route::{Query, Resource, parse_path};

/// What a part asks for.
enum Sub {
    /// A write of the transaction.
    Write(Operation),
    /// A point read, alone in its batch.
    Retrieve(EntityKey),
}

/// What a part says about its operation's answer.
struct Part<'a> {
    /// Its `Content-ID`, echoed in its answer.
    content_id: Option<&'a str>,
    /// An insert's `Prefer: return-no-content`.
    no_content: bool,
    /// The metadata level of an insert's echo.
    metadata: Metadata,
}

/// Runs the transaction a `$batch` request carries.
pub(crate) fn submit(call: &Call<'_>) -> Result<Answer, Refused> {
    let content_type = call
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .filter(|ct| ct.trim_start().to_ascii_lowercase().starts_with("multipart/mixed"))
        .ok_or_else(|| Failure::invalid_input("a $batch body must be multipart/mixed"))?;
    let text =
        std::str::from_utf8(call.body).map_err(|_| Failure::invalid_input("the $batch body is not UTF-8"))?;
    // One more than the limit is read, so that the engine answers an overlong batch with the
    // service's own error.
    let leaves = multipart_leaves(content_type, text, MAX_BATCH_OPERATIONS + 1)
        .map_err(|e| Failure::invalid_input(format!("the $batch body is malformed: {}", e.message())))?;
    let mut table = None;
    let mut operations = Vec::with_capacity(leaves.len());
    let mut parts = Vec::with_capacity(leaves.len());
    for (index, leaf) in leaves.iter().enumerate() {
        let read = read_part(call, leaf, &mut table).map_err(|mut failure| {
            failure.batch_index = Some(index);
            failure
        });
        match read {
            Ok((Sub::Write(operation), part)) => {
                operations.push(operation);
                parts.push(part);
            }
            Ok((Sub::Retrieve(key), part)) if leaves.len() == 1 => {
                return retrieve(call, &table.unwrap_or_default(), &key, &part);
            }
            Ok((Sub::Retrieve(_), _)) => {
                let failure = Failure {
                    batch_index: Some(index),
                    ..Failure::invalid_input("a retrieve must be the only operation of its batch")
                };
                return Ok(failed(call, &failure, content_id(leaf)));
            }
            Err(failure) => return Ok(failed(call, &failure, content_id(leaf))),
        }
    }
    let table = table.unwrap_or_default();
    match call.engine.submit_batch(&table, &operations) {
        Ok(outcomes) => Ok(succeeded(call, &table, &operations, &parts, &outcomes)),
        Err(error) => {
            let index = error.batch_index();
            match Refused::from(error) {
                Refused::Failure(failure) => {
                    let id = index.and_then(|i| parts.get(i)).and_then(|p| p.content_id);
                    Ok(failed(call, &failure, id))
                }
                Refused::Dropped => Err(Refused::Dropped),
            }
        }
    }
}

fn content_id<'a>(leaf: &MultipartLeaf<'a>) -> Option<&'a str> {
    header(&leaf.headers, "Content-ID")
}

fn header<'a>(headers: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
}

/// Reads one part: `METHOD <absolute URL> HTTP/1.1`, headers, a blank line, the body. Every
/// part names the same table of the same account (`table` is the first part's).
fn read_part<'a>(
    call: &Call<'_>,
    leaf: &MultipartLeaf<'a>,
    table: &mut Option<String>,
) -> Result<(Sub, Part<'a>), Failure> {
    let mut lines = Lines::new(leaf.content);
    let request_line = lines
        .find(|l| !l.trim_ascii().is_empty())
        .ok_or_else(|| Failure::invalid_input("a $batch part holds no request"))?;
    let mut words = request_line.split_ascii_whitespace();
    let (Some(method), Some(url), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(Failure::invalid_input("a $batch part's request line is malformed"));
    };
    if !version.starts_with("HTTP/") {
        return Err(Failure::invalid_input("a $batch part's request line is malformed"));
    }
    let mut headers = Vec::new();
    for line in lines.by_ref() {
        if line.trim_ascii().is_empty() {
            break;
        }
        headers.push(
            header_line(line).ok_or_else(|| Failure::invalid_input("a $batch part's header is malformed"))?,
        );
    }
    let body = lines.rest().trim_ascii().as_bytes();
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|slash| &rest[slash..]))
        .ok_or_else(|| Failure::invalid_input("a $batch part's URL is not absolute"))?;
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let target = parse_path(path)?;
    if target.account != call.account {
        return Err(Failure::invalid_input("a $batch part names another account"));
    }
    let (name, key) = match target.resource {
        Resource::Entities(name) => (name, None),
        Resource::Entity { table, partition_key, row_key } => {
            (table, Some(EntityKey::new(partition_key, row_key)))
        }
        _ => return Err(Failure::invalid_input("a $batch part names no table or entity")),
    };
    if table.get_or_insert_with(|| name.clone()) != &name {
        return Err(Failure::invalid_input("the operations of a $batch name different tables"));
    }
    let if_match = match header(&headers, "If-Match") {
        None => None,
        Some("*") => Some(IfMatch::Any),
        Some(etag) => Some(IfMatch::ETag(ETag::new(etag))),
    };
    let verb = verb_of(method);
    // The part's own media types and `$format`, under the request's OData version, in the
    // order a request's are checked: the protocol head's checks, the answer's form, the body's.
    let query = Query::parse(url.split_once('?').map_or("", |(_, query)| query))?;
    let (content_type, format, accept) = (
        header(&headers, "Content-Type").map(str::as_bytes),
        query.get("$format"),
        header(&headers, "Accept"),
    );
    call.check_media_types(content_type, format, accept.map(str::as_bytes))?;
    let metadata = part_metadata(format, accept)?;
    if matches!(verb, Verb::Post | Verb::Put | Verb::Merge) {
        check_json_content_type(content_type)?;
    }
    let with_url_keys = |key: EntityKey| -> Result<_, Failure> {
        let mut entity = body_entity(body, false)?;
        entity.partition_key = key.partition_key;
        entity.row_key = key.row_key;
        Ok(entity)
    };
    let sub = match (verb, key) {
        (Verb::Get, Some(key)) => Sub::Retrieve(key),
        (Verb::Post, None) => Sub::Write(Operation::Insert(body_entity(body, true)?)),
        (Verb::Put, Some(key)) => Sub::Write(match if_match {
            Some(if_match) => Operation::Replace { entity: with_url_keys(key)?, if_match },
            None => Operation::InsertOrReplace(with_url_keys(key)?),
        }),
        (Verb::Merge, Some(key)) => Sub::Write(match if_match {
            Some(if_match) => Operation::Merge { entity: with_url_keys(key)?, if_match },
            None => Operation::InsertOrMerge(with_url_keys(key)?),
        }),
        (Verb::Delete, Some(key)) => {
            Sub::Write(Operation::Delete { key, if_match: if_match.ok_or_else(missing_if_match)? })
        }
        _ => return Err(Failure::invalid_input(format!("a $batch part cannot {method} {url}"))),
    };
    match (&sub, call.grant) {
        (Sub::Write(operation), _) => call.check_write(&name, operation)?,
        (Sub::Retrieve(key), Some(grant)) => {
            grant.check_read(&name)?;
            grant.check_key(&key.partition_key, &key.row_key)?;
        }
        (Sub::Retrieve(_), None) => {}
    }
    let prefer = header(&headers, "Prefer").unwrap_or("");
    let part = Part {
        content_id: content_id(leaf),
        no_content: prefer.eq_ignore_ascii_case("return-no-content"),
        metadata,
    };
    Ok((sub, part))
}

/// Room a committed operation's answer part takes (MIME and HTTP headers, two entity URLs).
const PART_CAPACITY: usize = 512;

/// The multipart answer: `--batchresponse` around one changeset of the answer parts `write`
/// adds (`parts` of them), written straight into the answer's body.
fn multipart(parts: usize, write: impl FnOnce(&mut Changeset<'_>)) -> Answer {
    let boundary = format!("changesetresponse_{}", uuid::Uuid::new_v4());
    batch_response(parts * PART_CAPACITY, |out| {
        let _ = write!(out, "Content-Type: multipart/mixed; boundary={boundary}\r\n\r\n");
        write(&mut Changeset { out, boundary: &boundary });
        let _ = write!(out, "--{boundary}--\r\n");
    })
}

/// The changeset of a [`multipart`] answer, being written.
struct Changeset<'a> {
    out: &'a mut String,
    boundary: &'a str,
}

impl Changeset<'_> {
    /// Adds one operation's answer (see [`response_part`]).
    fn part(&mut self, response: Response<'_>) {
        for piece in ["--", self.boundary, "\r\n"] {
            self.out.push_str(piece);
        }
        http_part(self.out, response);
    }
}

/// `response` as a part: its MIME headers, then the HTTP response.
fn http_part(out: &mut String, response: Response<'_>) {
    out.push_str("Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n");
    response_part(out, response);
    out.push_str("\r\n");
}

/// The `--batchresponse` envelope of one part (a changeset, or a retrieve's answer), which
/// `write` writes; `capacity`: the room the part will likely take.
fn batch_response(capacity: usize, write: impl FnOnce(&mut String)) -> Answer {
    let batch = format!("batchresponse_{}", uuid::Uuid::new_v4());
    let mut body = String::with_capacity(capacity + 256);
    let _ = write!(body, "--{batch}\r\n");
    write(&mut body);
    let _ = write!(body, "--{batch}--\r\n");
    Answer::empty(202).header(CONTENT_TYPE, format!("multipart/mixed; boundary={batch}")).with_body(body)
}

/// A retrieve alone in its batch: one answer part, outside any changeset (the engine's
/// answer for a point read, or its error).
fn retrieve(call: &Call<'_>, table: &str, key: &EntityKey, part: &Part<'_>) -> Result<Answer, Refused> {
    let content_id = part.content_id;
    let links = Links { base: call.base, account: call.account, metadata: part.metadata };
    let found = call.engine.get_row(table, &key.partition_key, &key.row_key, None, |row| {
        (json::entity(links, table, json::row_fields(&row), None), row.etag().to_owned())
    });
    match found {
        Ok((body, etag)) => {
            let headers = [("Content-Type", part.metadata.content_type())];
            let etag = Some(etag.as_str());
            let body = String::from_utf8_lossy(&body);
            let response = Response { status: "200 OK", content_id, headers: &headers, etag, body: &body };
            Ok(batch_response(body.len() + PART_CAPACITY, |out| http_part(out, response)))
        }
        Err(error) => match Refused::from(error) {
            Refused::Failure(failure) => {
                let (status, body) = error_answer(call, &failure);
                let response = error_response(&status, content_id, &body);
                Ok(batch_response(PART_CAPACITY, |out| http_part(out, response)))
            }
            Refused::Dropped => Err(Refused::Dropped),
        },
    }
}

/// One operation's answer.
#[derive(Clone, Copy)]
struct Response<'a> {
    /// `201 Created`, ...
    status: &'a str,
    content_id: Option<&'a str>,
    /// Headers after the common ones, in order.
    headers: &'a [(&'a str, &'a str)],
    /// Written after `headers`.
    etag: Option<&'a str>,
    body: &'a str,
}

/// One part's answer: status line, headers (with the common ones), blank line, body.
fn response_part(out: &mut String, response: Response<'_>) {
    // Pieces appended one after another: `write!` cost more than the rest of a part.
    for piece in ["HTTP/1.1 ", response.status, "\r\n"] {
        out.push_str(piece);
    }
    if let Some(id) = response.content_id {
        for piece in ["Content-ID: ", id, "\r\n"] {
            out.push_str(piece);
        }
    }
    out.push_str("X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n");
    let etag = response.etag.map(|etag| ("ETag", etag));
    for (name, value) in response.headers.iter().copied().chain(etag) {
        for piece in [name, ": ", value, "\r\n"] {
            out.push_str(piece);
        }
    }
    out.push_str("\r\n");
    out.push_str(response.body);
}

fn failed(call: &Call<'_>, failure: &Failure, content_id: Option<&str>) -> Answer {
    let (status, body) = error_answer(call, failure);
    multipart(1, |changeset| changeset.part(error_response(&status, content_id, &body)))
}

/// The status line and the service's error body of a failed operation.
fn error_answer(call: &Call<'_>, failure: &Failure) -> (String, String) {
    // A part's error stays JSON whatever the outer request's `Accept`: the parts the SDKs send
    // each carry a JSON `Accept` of their own.
    let body = failure.body(call.request_id, ErrorFormat::Json);
    let status = hyper::StatusCode::from_u16(failure.status).unwrap_or(hyper::StatusCode::BAD_REQUEST);
    (format!("{} {}", status.as_str(), status.canonical_reason().unwrap_or("")), body)
}

/// The headers of a failed operation's answer.
const ERROR_HEADERS: [(&str, &str); 2] =
    [("DataServiceVersion", "3.0;"), ("Content-Type", Metadata::Minimal.content_type())];

/// The answer part of a failed operation: its status and the service's error body.
fn error_response<'a>(status: &'a str, content_id: Option<&'a str>, body: &'a str) -> Response<'a> {
    Response { status, content_id, headers: &ERROR_HEADERS, etag: None, body }
}

fn succeeded(
    call: &Call<'_>,
    table: &str,
    operations: &[Operation],
    parts: &[Part<'_>],
    outcomes: &[WriteOutcome],
) -> Answer {
    multipart(operations.len(), |changeset| {
        let mut location = String::new();
        for ((operation, part), outcome) in operations.iter().zip(parts).zip(outcomes) {
            // Every part of a committed changeset: its Content-ID and its row's new ETag.
            let (content_id, etag) = (part.content_id, outcome.etag.as_ref().map(ETag::as_str));
            let answer = |status, headers, body| Response { status, content_id, headers, etag, body };
            let Operation::Insert(sent) = operation else {
                changeset.part(answer("204 No Content", &[("DataServiceVersion", "3.0;")], ""));
                continue;
            };
            location.clear();
            let _ =
                write!(location, "{}/{}", call.base, entity_path(table, &sent.partition_key, &sent.row_key));
            if part.no_content {
                let headers = [
                    ("DataServiceVersion", "3.0;"),
                    ("Preference-Applied", "return-no-content"),
                    ("Location", &location),
                    ("DataServiceId", &location),
                ];
                changeset.part(answer("204 No Content", &headers, ""));
            } else {
                let links = Links { base: call.base, account: call.account, metadata: part.metadata };
                let json = json::entity(links, table, json::stored_fields(sent, outcome.etag.as_ref()), None);
                let headers = [
                    ("DataServiceVersion", "3.0;"),
                    ("Content-Type", part.metadata.content_type()),
                    ("Location", &location),
                    ("DataServiceId", &location),
                ];
                let body = String::from_utf8_lossy(&json);
                changeset.part(answer("201 Created", &headers, &body));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use table_client::wire::{decode_batch_response, encode_batch};
    use table_core::engine::Engine;
    use table_core::{Entity, ErrorCode, ErrorKind};

    use super::*;
    use crate::route::Query;

    const BASE: &str = "http://127.0.0.1:10002/acct";

    /// Submits the client's encoding of `operations` on `table`, and reads the answer as the
    /// client does.
    fn round_trip(
        engine: &Engine,
        table: &str,
        operations: &[Operation],
    ) -> table_core::Result<Vec<WriteOutcome>> {
        let (content_type, body) = encode_batch(BASE, table, operations);
        submit_raw(engine, &content_type, body)
    }

    /// Submits a `$batch` of `body`, as the server would.
    fn submit_body(engine: &Engine, content_type: &str, body: String) -> Result<Answer, Refused> {
        let mut headers = hyper::HeaderMap::new();
        headers.insert("content-type", content_type.parse().expect("a valid header"));
        with_call(engine, &headers, &bytes::Bytes::from(body), submit)
    }

    /// Runs `with` on a `$batch` call of `engine` with these headers and body.
    fn with_call<T>(
        engine: &Engine,
        headers: &hyper::HeaderMap,
        body: &bytes::Bytes,
        with: impl FnOnce(&Call<'_>) -> T,
    ) -> T {
        let query = Query::default();
        let call = Call {
            engine,
            account: "acct",
            base: BASE,
            method: Verb::Post,
            headers,
            query: &query,
            body,
            request_id: "rid",
            version: crate::version::ServiceVersion::JSON_SINCE,
            grant: None,
        };
        with(&call)
    }

    /// [`submit_body`]'s answer (a 500 stands for a refusal).
    fn answer_to(engine: &Engine, content_type: &str, body: String) -> Answer {
        submit_body(engine, content_type, body).unwrap_or_else(|_| Answer::empty(500))
    }

    /// [`submit_body`]'s answer, read as the client reads it.
    fn submit_raw(
        engine: &Engine,
        content_type: &str,
        body: String,
    ) -> table_core::Result<Vec<WriteOutcome>> {
        match submit_body(engine, content_type, body) {
            Ok(answer) => {
                assert_eq!(answer.status, 202);
                let content_type =
                    answer.headers.iter().find(|(n, _)| *n == CONTENT_TYPE).map(|(_, v)| v.clone());
                decode_batch_response(&content_type.unwrap_or_default(), &answer.body)
            }
            Err(Refused::Failure(failure)) => {
                Err(table_core::Error::answered(failure.status, Some(failure.code), failure.message))
            }
            Err(Refused::Dropped) => Err(table_core::Error::other("dropped")),
        }
    }

    /// The answers as they were written before they were written into one buffer: the
    /// specification the writer must match byte for byte (boundaries and times aside).
    mod reference {
        use std::fmt::Write as _;

        use super::super::*;

        /// The multipart answer: `--batchresponse` around one changeset of `parts`.
        pub(super) fn multipart(parts: &[String]) -> Answer {
            let changeset = format!("changesetresponse_{}", uuid::Uuid::new_v4());
            let mut inner = String::new();
            for part in parts {
                let _ = write!(inner, "--{changeset}\r\n{}", http_part(part));
            }
            let _ = write!(inner, "--{changeset}--\r\n");
            batch_response(&format!("Content-Type: multipart/mixed; boundary={changeset}\r\n\r\n{inner}"))
        }

        /// `part` (an HTTP response) with its MIME headers.
        fn http_part(part: &str) -> String {
            format!("Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n{part}\r\n")
        }

        /// The `--batchresponse` envelope of one part (a changeset, or a retrieve's answer).
        fn batch_response(part: &str) -> Answer {
            let batch = format!("batchresponse_{}", uuid::Uuid::new_v4());
            let body = format!("--{batch}\r\n{part}--{batch}--\r\n");
            Answer::empty(202)
                .header(CONTENT_TYPE, format!("multipart/mixed; boundary={batch}"))
                .with_body(body)
        }

        /// A retrieve alone in its batch: one answer part, outside any changeset (the engine's
        /// answer for a point read, or its error).
        pub(super) fn retrieve(
            call: &Call<'_>,
            table: &str,
            key: &EntityKey,
            part: &Part<'_>,
        ) -> Result<Answer, Refused> {
            let answer = match call.engine.get(table, &key.partition_key, &key.row_key, None) {
                Ok(entity) => {
                    let links = Links { base: call.base, account: call.account, metadata: part.metadata };
                    let mut headers = vec![("Content-Type", part.metadata.content_type().to_owned())];
                    if let Some(etag) = &entity.etag {
                        headers.push(("ETag", etag.as_str().to_owned()));
                    }
                    let body = json::entity(links, table, json::entity_fields(&entity), None);
                    response_part("200 OK", part.content_id, &headers, &String::from_utf8_lossy(&body))
                }
                Err(error) => match Refused::from(error) {
                    Refused::Failure(failure) => error_part(call, &failure, part.content_id),
                    Refused::Dropped => return Err(Refused::Dropped),
                },
            };
            Ok(batch_response(&http_part(&answer)))
        }

        /// One part's answer: status line, headers (with the common ones), blank line, body.
        fn response_part(
            status: &str,
            content_id: Option<&str>,
            headers: &[(&str, String)],
            body: &str,
        ) -> String {
            let mut part = format!("HTTP/1.1 {status}\r\n");
            if let Some(id) = content_id {
                let _ = write!(part, "Content-ID: {id}\r\n");
            }
            part.push_str("X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n");
            for (name, value) in headers {
                let _ = write!(part, "{name}: {value}\r\n");
            }
            let _ = write!(part, "\r\n{body}");
            part
        }

        pub(super) fn failed(call: &Call<'_>, failure: &Failure, content_id: Option<&str>) -> Answer {
            multipart(&[error_part(call, failure, content_id)])
        }

        /// The answer part of a failed operation: its status and the service's error body.
        fn error_part(call: &Call<'_>, failure: &Failure, content_id: Option<&str>) -> String {
            let body = failure.body(call.request_id, ErrorFormat::Json);
            let status =
                hyper::StatusCode::from_u16(failure.status).unwrap_or(hyper::StatusCode::BAD_REQUEST);
            let status_line = format!("{} {}", status.as_str(), status.canonical_reason().unwrap_or(""));
            let headers = [
                ("DataServiceVersion", "3.0;".to_owned()),
                ("Content-Type", Metadata::Minimal.content_type().to_owned()),
            ];
            response_part(&status_line, content_id, &headers, &body)
        }

        pub(super) fn succeeded(
            call: &Call<'_>,
            table: &str,
            operations: &[Operation],
            parts: &[Part<'_>],
            outcomes: &[WriteOutcome],
        ) -> Answer {
            let answers: Vec<String> = operations
                .iter()
                .zip(parts)
                .zip(outcomes)
                .map(|((operation, part), outcome)| {
                    let mut headers = vec![("DataServiceVersion", "3.0;".to_owned())];
                    let mut status = "204 No Content";
                    let mut body = String::new();
                    if let Operation::Insert(sent) = operation {
                        let location = format!(
                            "{}/{}",
                            call.base,
                            entity_path(table, &sent.partition_key, &sent.row_key)
                        );
                        if part.no_content {
                            headers.push(("Preference-Applied", "return-no-content".to_owned()));
                        } else {
                            status = "201 Created";
                            let mut entity = sent.clone();
                            entity.timestamp = outcome.etag.as_ref().and_then(ETag::timestamp);
                            entity.etag.clone_from(&outcome.etag);
                            let links =
                                Links { base: call.base, account: call.account, metadata: part.metadata };
                            let json = json::entity(links, table, json::entity_fields(&entity), None);
                            body = String::from_utf8_lossy(&json).into_owned();
                            headers.push(("Content-Type", part.metadata.content_type().to_owned()));
                        }
                        headers.push(("Location", location.clone()));
                        headers.push(("DataServiceId", location));
                    }
                    if let Some(etag) = &outcome.etag {
                        headers.push(("ETag", etag.as_str().to_owned()));
                    }
                    response_part(status, part.content_id, &headers, &body)
                })
                .collect();
            multipart(&answers)
        }
    }

    /// `answer`'s status, headers and body, with its random boundaries and the time in error
    /// messages replaced by fixed text.
    fn normalized(answer: &Answer) -> String {
        let mut text = format!("{} {:?}\n", answer.status, answer.headers);
        text.push_str(&String::from_utf8_lossy(&answer.body));
        for (marker, len) in [("batchresponse_", 36), ("changesetresponse_", 36), ("Time:", 28)] {
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find(marker) {
                let end = (at + marker.len() + len).min(rest.len());
                out.push_str(&rest[..at + marker.len()]);
                out.push('X');
                rest = rest.get(end..).unwrap_or_default();
            }
            out.push_str(rest);
            text = out;
        }
        text
    }

    #[test]
    fn answers_are_what_the_part_by_part_writer_wrote() {
        let engine = engine_with("tbl");
        engine.insert("tbl", Entity::new("p", "r 1").with("x", 1).with("l", 5_i64)).expect("a fresh row");
        let t = chrono::DateTime::from_timestamp(1_700_000_000, 1_234_500).unwrap_or_default();
        let stamped = WriteOutcome { etag: Some(ETag::from_timestamp(t)) };
        let entity = Entity::new("p", "k'é/1").with("s", "a\"b").with("d", 2.5).with("g", vec![1_u8]);
        let part = |content_id, no_content, metadata| Part { content_id, no_content, metadata };
        let operations = [
            Operation::Insert(entity.clone()),
            Operation::Insert(entity.clone()),
            Operation::Insert(entity.clone()),
            Operation::Insert(entity.clone()),
            Operation::InsertOrMerge(entity.clone()),
            Operation::Replace { entity: entity.clone(), if_match: IfMatch::Any },
            Operation::Delete { key: EntityKey::new("p", "1"), if_match: IfMatch::Any },
        ];
        let parts = [
            part(Some("0"), true, Metadata::Minimal),
            part(Some("1"), false, Metadata::Minimal),
            part(None, false, Metadata::Full),
            part(Some("3"), false, Metadata::None),
            part(Some("4"), false, Metadata::Minimal),
            part(None, true, Metadata::Minimal),
            part(Some("6"), false, Metadata::Minimal),
        ];
        let outcomes =
            [&stamped, &stamped, &stamped, &stamped, &stamped, &stamped, &WriteOutcome { etag: None }]
                .map(Clone::clone);
        let failure = Failure { batch_index: Some(3), ..Failure::service(ErrorCode::EntityAlreadyExists) };
        // The `$batch` request itself is not read.
        with_call(&engine, &hyper::HeaderMap::new(), &bytes::Bytes::new(), |call| {
            let pairs = [
                (
                    succeeded(call, "tbl", &operations, &parts, &outcomes),
                    reference::succeeded(call, "tbl", &operations, &parts, &outcomes),
                ),
                (failed(call, &failure, Some("3")), reference::failed(call, &failure, Some("3"))),
                (failed(call, &failure, None), reference::failed(call, &failure, None)),
            ];
            for (new, old) in pairs {
                assert_eq!(normalized(&new), normalized(&old));
            }
            for (row_key, metadata) in
                [("r 1", Metadata::Full), ("r 1", Metadata::None), ("absent", Metadata::Minimal)]
            {
                let key = EntityKey::new("p", row_key);
                let part = part(Some("0"), false, metadata);
                let (new, old) =
                    (retrieve(call, "tbl", &key, &part), reference::retrieve(call, "tbl", &key, &part));
                let (Ok(new), Ok(old)) = (new, old) else { panic!("a retrieve is answered") };
                assert_eq!(normalized(&new), normalized(&old), "{row_key}");
            }
        });
    }

    fn engine_with(table: &str) -> Engine {
        let engine = Engine::new();
        engine.create_table(table).expect("a valid table name");
        engine
    }

    #[test]
    fn the_clients_batches_apply_all_or_nothing() {
        let engine = engine_with("tbl");
        let ops = [
            Operation::Insert(Entity::new("p", "1").with("x", 1)),
            Operation::InsertOrMerge(Entity::new("p", "2").with("y", 2)),
        ];
        let outcomes = round_trip(&engine, "tbl", &ops).expect("the batch applies");
        assert_eq!(outcomes.len(), 2);
        assert!(outcomes.iter().all(|o| o.etag.is_some()));
        assert_eq!(engine.get("tbl", "p", "2", None).ok().and_then(|e| e.get("y").cloned()), Some(2.into()));

        let failing = [
            Operation::Delete { key: EntityKey::new("p", "1"), if_match: IfMatch::Any },
            Operation::Insert(Entity::new("p", "2")),
        ];
        let error = round_trip(&engine, "tbl", &failing).expect_err("the second insert conflicts");
        assert_eq!((error.code(), error.batch_index()), (Some(&ErrorCode::EntityAlreadyExists), Some(1)));
        assert!(engine.get("tbl", "p", "1", None).is_ok(), "nothing was applied");
    }

    #[test]
    fn the_service_rules_fail_with_their_index() {
        let engine = engine_with("tbl");
        let mixed = [Operation::Insert(Entity::new("a", "1")), Operation::Insert(Entity::new("b", "1"))];
        let error = round_trip(&engine, "tbl", &mixed).expect_err("two partitions");
        assert_eq!(error.code(), Some(&ErrorCode::CommandsInBatchActOnDifferentPartitions));
        assert_eq!(error.batch_index(), Some(1));
        let too_many: Vec<Operation> =
            (0..101).map(|i| Operation::Insert(Entity::new("p", format!("{i}")))).collect();
        let error = round_trip(&engine, "tbl", &too_many).expect_err("101 operations");
        assert_eq!(error.status(), Some(400));
        assert!(engine.query("tbl", &Default::default()).is_ok_and(|p| p.entities.is_empty()));
        let missing = round_trip(&engine, "nope", &mixed[..1]).expect_err("no such table");
        assert_eq!((missing.code(), missing.batch_index()), (Some(&ErrorCode::TableNotFound), Some(0)));
    }

    #[test]
    fn malformed_parts_fail_the_transaction_at_their_index() {
        let engine = engine_with("tbl");
        let (content_type, body) = encode_batch(
            BASE,
            "tbl",
            &[Operation::Insert(Entity::new("p", "1")), Operation::Insert(Entity::new("p", "2"))],
        );
        let cases = [
            (
                r#"{"PartitionKey":"p","RowKey":"2"}"#,
                r#"{"PartitionKey":"p","RowKey":"2","x":{"nested":1}}"#,
                ErrorCode::InvalidInput,
            ),
            (r#"{"PartitionKey":"p","RowKey":"2"}"#, r#"{"RowKey":"2"}"#, ErrorCode::PropertiesNeedValue),
            (
                "POST http://127.0.0.1:10002/acct/tbl HTTP/1.1\r\nContent-Type",
                "POST http://127.0.0.1:10002/acct/other HTTP/1.1\r\nContent-Type",
                ErrorCode::InvalidInput,
            ),
        ];
        for (from, to, code) in cases {
            let hostile = body.replacen(from, to, 1);
            let hostile = if from.starts_with("POST") {
                // The second part's request line.
                let second = body.rfind(from).unwrap_or(0);
                format!("{}{}{}", &body[..second], to, &body[second + from.len()..])
            } else {
                hostile
            };
            assert_ne!(hostile, body);
            let error = submit_raw(&engine, &content_type, hostile).expect_err("a malformed part");
            assert_eq!((error.code(), error.batch_index()), (Some(&code), Some(1)), "{to}");
        }
        assert!(engine.query("tbl", &Default::default()).is_ok_and(|p| p.entities.is_empty()));
    }

    /// A write part's `Content-Type` and `Accept` are checked as a request's are: a body that
    /// is not JSON is refused at its index, whatever its contents, as are Atom and verbose JSON.
    #[test]
    fn a_parts_media_types_are_checked_as_a_requests() {
        let engine = engine_with("tbl");
        let (content_type, body) = encode_batch(
            BASE,
            "tbl",
            &[Operation::Insert(Entity::new("p", "1")), Operation::Insert(Entity::new("p", "2"))],
        );
        let second = |from: &str, to: &str| {
            let at = body.rfind(from).unwrap_or(0);
            format!("{}{}{}", &body[..at], to, &body[at + from.len()..])
        };
        let json = "Content-Type: application/json\r\n";
        let accept = "Accept: application/json;odata=minimalmetadata\r\n";
        for (hostile, status, code) in [
            (second(json, "Content-Type: text/plain\r\n"), 415, "MediaTypeNotSupported"),
            (second(json, "Content-Type: application/xml\r\n"), 415, "MediaTypeNotSupported"),
            (second(json, ""), 400, "InvalidInput"),
            (second(json, "Content-Type: application/atom+xml\r\n"), 415, "AtomFormatNotSupported"),
            (
                second(json, "Content-Type: application/json;odata=verbose\r\n"),
                415,
                "JsonVerboseFormatNotSupported",
            ),
            (second(accept, "Accept: application/atom+xml\r\n"), 415, "AtomFormatNotSupported"),
            (
                second(accept, "Accept: application/json;odata=verbose\r\n"),
                415,
                "JsonVerboseFormatNotSupported",
            ),
        ] {
            assert_ne!(hostile, body);
            let error = submit_raw(&engine, &content_type, hostile).expect_err("a refused part");
            assert_eq!(
                (error.status(), error.code().map(ErrorCode::as_str), error.batch_index()),
                (Some(status), Some(code), Some(1))
            );
        }
        let plain = second(accept, "Accept: text/plain\r\n");
        let error = submit_raw(&engine, &content_type, plain).expect_err("a type not written");
        assert_eq!(error.code().map(ErrorCode::as_str), Some("MediaTypeNotSupported"));
        assert!(engine.query("tbl", &Default::default()).is_ok_and(|p| p.entities.is_empty()));
        // A part without `Accept`, or with a blank one, is refused as the service refuses it
        // (Atom is its default answer): a delete's too, which answers with no body.
        let key = EntityKey::new("p", "1");
        let delete = encode_batch(BASE, "tbl", &[Operation::Delete { key, if_match: IfMatch::Any }]);
        for (content_type, body, blank) in
            [(&content_type, &body, ""), (&content_type, &body, "Accept: \r\n"), (&delete.0, &delete.1, "")]
        {
            let error =
                submit_raw(&engine, content_type, body.replacen(accept, blank, 1)).expect_err("no Accept");
            assert_eq!(
                (error.status(), error.code().map(ErrorCode::as_str)),
                (Some(415), Some("AtomFormatNotSupported")),
                "{blank:?}"
            );
        }
        // Bad in both, a part's `Content-Type` is checked first, as a request's is.
        let both = second(accept, "Accept: application/atom+xml\r\n")
            .replace(json, "Content-Type: application/json;odata=verbose\r\n");
        let error = submit_raw(&engine, &content_type, both).expect_err("bad in both");
        assert_eq!(error.code().map(ErrorCode::as_str), Some("JsonVerboseFormatNotSupported"));
    }

    /// A request capping OData below 3 (`MaxDataServiceVersion: 2.0`) has its first part
    /// refused JSON, and nothing applied.
    #[test]
    fn a_batch_capped_below_odata_3_is_refused_json() {
        let engine = engine_with("tbl");
        let (content_type, body) = encode_batch(BASE, "tbl", &[Operation::Insert(Entity::new("p", "1"))]);
        let mut headers = hyper::HeaderMap::new();
        headers.insert("content-type", content_type.parse().expect("a valid header"));
        headers.insert("maxdataserviceversion", hyper::header::HeaderValue::from_static("2.0;NetFx"));
        let answer = with_call(&engine, &headers, &bytes::Bytes::from(body), submit);
        let Ok(answer) = answer else { panic!("a batch is answered") };
        let content_type = answer.headers.iter().find(|(n, _)| *n == CONTENT_TYPE).map(|(_, v)| v.clone());
        let error = decode_batch_response(&content_type.unwrap_or_default(), &answer.body)
            .expect_err("the part is refused");
        assert_eq!(
            (error.status(), error.code().map(ErrorCode::as_str), error.batch_index()),
            (Some(415), Some("JsonFormatNotSupported"), Some(0))
        );
        assert!(engine.query("tbl", &Default::default()).is_ok_and(|p| p.entities.is_empty()));
    }

    /// The body of a batch holding one retrieve of `row_key`, outside any changeset.
    fn retrieve_body(row_key: &str) -> String {
        format!(
            "--batch_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
             GET {BASE}/tbl(PartitionKey='p',RowKey='{row_key}') HTTP/1.1\r\n\
             Accept: application/json;odata=nometadata\r\n\r\n\r\n--batch_1--\r\n"
        )
    }

    /// The answer parts of a `$batch` answer: status line and body of each.
    fn answer_parts(answer: &Answer) -> Vec<(String, String)> {
        let content_type = answer.headers.iter().find(|(n, _)| *n == CONTENT_TYPE).map(|(_, v)| v.clone());
        let text = std::str::from_utf8(&answer.body).unwrap_or_default();
        let leaves = multipart_leaves(&content_type.unwrap_or_default(), text, 10).unwrap_or_default();
        leaves
            .iter()
            .map(|leaf| {
                let lines: Vec<&str> = Lines::new(leaf.content).collect();
                let status = lines.first().copied().unwrap_or_default().to_owned();
                (status, lines.last().copied().unwrap_or_default().to_owned())
            })
            .collect()
    }

    #[test]
    fn a_retrieve_alone_is_answered_outside_any_changeset() {
        let engine = engine_with("tbl");
        engine.insert("tbl", Entity::new("p", "1").with("x", 1)).expect("a fresh row");
        let found = answer_to(&engine, "multipart/mixed; boundary=batch_1", retrieve_body("1"));
        assert_eq!(found.status, 202);
        assert!(!String::from_utf8_lossy(&found.body).contains("changesetresponse"));
        let parts = answer_parts(&found);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].0, "HTTP/1.1 200 OK");
        let entity: serde_json::Value = serde_json::from_str(&parts[0].1).unwrap_or_default();
        assert_eq!((entity["RowKey"].as_str(), entity["x"].as_i64()), (Some("1"), Some(1)));

        let missing =
            answer_parts(&answer_to(&engine, "multipart/mixed; boundary=batch_1", retrieve_body("2")));
        assert_eq!(missing[0].0, "HTTP/1.1 404 Not Found");
        assert!(missing[0].1.contains("ResourceNotFound"), "{}", missing[0].1);

        // Mixed with a write, it fails the batch at its index.
        let part = "--cs\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n";
        let mixed = format!(
            "--batch_1\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n\
             {part}POST {BASE}/tbl HTTP/1.1\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\n\r\n\
             {{\"PartitionKey\":\"p\",\"RowKey\":\"3\"}}\r\n\
             {part}GET {BASE}/tbl(PartitionKey='p',RowKey='1') HTTP/1.1\r\nAccept: application/json\r\n\r\n\r\n--cs--\r\n--batch_1--\r\n"
        );
        let refused = answer_parts(&answer_to(&engine, "multipart/mixed; boundary=batch_1", mixed));
        assert_eq!(refused[0].0, "HTTP/1.1 400 Bad Request");
        assert!(refused[0].1.contains(r#""value":"1:"#), "{}", refused[0].1);
        assert!(engine.get("tbl", "p", "3", None).is_err(), "nothing was applied");
    }

    proptest::proptest! {
        /// Any bytes in a part (request line, headers, body) fail that part or the body, never
        /// panic, and never apply anything.
        #[test]
        fn any_part_is_read_or_refused(part in ".{0,200}", lines in proptest::collection::vec(".{0,30}", 0..6)) {
            let engine = engine_with("tbl");
            let body = format!("--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n\r\n{part}\r\n{}\r\n--c--\r\n--b--", lines.join("\r\n"));
            let _ = submit_raw(&engine, "multipart/mixed; boundary=b", body);
            proptest::prop_assert!(engine.query("tbl", &Default::default()).is_ok_and(|p| p.entities.is_empty()));
        }
    }

    #[test]
    fn malformed_bodies_are_refused_whole() {
        let engine = engine_with("tbl");
        for (content_type, body) in [
            ("application/json", "{}".to_owned()),
            ("multipart/mixed", "--x\r\n".to_owned()),
            ("multipart/mixed; boundary=x", "no delimiter at all".to_owned()),
            ("multipart/mixed; boundary=x", "--x\r\n\r\nnot a request line\r\n--x--".to_owned()),
            ("multipart/mixed; boundary=x", "--x\r\n\r\nGET /relative HTTP/1.1\r\n\r\n--x--".to_owned()),
        ] {
            let error = submit_raw(&engine, content_type, body.clone()).expect_err("malformed");
            assert_eq!(error.kind(), ErrorKind::InvalidInput, "{content_type} {body:?}");
        }
    }
}
