//! Entity-group transaction bodies (protocol doc section 7): the `multipart/mixed` request
//! and its response.
//!
//! Request layout (byte-identical to the reference's verified example): one `batch_<uuid>`
//! part holding one `changeset_<uuid>` with one `application/http` part per operation,
//! CRLF line ends, `Content-ID` = the operation's index, absolute URLs in the request lines,
//! and per operation: Insert `POST {table}` + `Prefer: return-no-content`; Replace `PUT` +
//! `If-Match`; Merge `MERGE` + `If-Match`; InsertOrReplace `PUT` and InsertOrMerge `MERGE`
//! without `If-Match`; Delete `DELETE` + `If-Match`.
//!
//! Response parsing follows the reference's advice and relies on neither header order nor
//! blank-line counts: it takes the boundary from the `Content-Type`, nested changeset
//! boundaries from each part's own `Content-Type`, accepts CRLF or LF line ends, a missing
//! `Content-ID`, and 201 parts with or without a body (Azurite sends none). A part whose
//! status is not 2xx is the transaction's failure and becomes the returned error, with the
//! batch index parsed from its message.
//!
//! Invariant: decoding never panics; anything it cannot read is an [`ErrorKind::Decode`]
//! error.

use std::fmt::Write as _;

use table_core::{ETag, Error, MAX_BATCH_BODY, MAX_BATCH_OPERATIONS, Operation, Result, WriteOutcome};
use uuid::Uuid;

use super::error::{decode_error, header};
use super::etag::received_etag;
use super::json::encode_entity;
use super::url::{entities_path, entity_path, resource_url};

/// What every request and batch sub-request asks for: minimal metadata (annotations only where
/// a type cannot be inferred, plus `odata.etag`).
pub(crate) const ACCEPT: &str = "application/json;odata=minimalmetadata";

/// Nested multipart levels accepted in a response (batch, then changeset).
const MAX_DEPTH: usize = 2;

/// The most bytes one operation's part of a batch response can honestly take, beside an
/// entity echo: MIME and HTTP headers, of which `Location` and `DataServiceId` repeat the
/// entity URL (keys of up to 1024 UTF-16 units, percent-encoded as at most 9 bytes each: 2 ×
/// 2 × 9 KiB), or a failing part's error body (at most
/// [`MAX_ERROR_BODY`](super::error::MAX_ERROR_BODY)).
const MAX_PART_TEXT: usize = 64 * 1024;

/// The most bytes of a `$batch` response: one part per operation (at most
/// [`MAX_BATCH_OPERATIONS`]) of [`MAX_PART_TEXT`], plus the entities a service that ignores
/// `Prefer: return-no-content` may echo, at most 3 times the 4 MiB request that carried them
/// (the escaping bound of [`super::json::MAX_ENTITY_JSON`]), plus the envelope. About 18 MiB.
pub(crate) const MAX_BATCH_RESPONSE_BODY: usize =
    MAX_BATCH_OPERATIONS * MAX_PART_TEXT + 3 * MAX_BATCH_BODY + 4096;

/// The most lines a multipart body (a batch request or response) is split into: an honest one
/// has one or two dozen per part and single-line bodies. Bounded so a body of newlines cannot
/// become a list of millions of slices.
#[doc(hidden)]
pub const MAX_MULTIPART_LINES: usize = MAX_BATCH_OPERATIONS * 64 + 64;

/// The `Content-Type` and body of a `POST {base_url}/$batch` for `operations` on `table`.
///
/// `base_url` is the account's base URL, as for every other request (path style for the
/// emulator); the parts carry absolute URLs built from it. The operations should have passed
/// the batch rules (`table_core::validate_batch`) already; this function only writes them.
pub fn encode_batch(base_url: &str, table: &str, operations: &[Operation]) -> (String, String) {
    let batch = format!("batch_{}", Uuid::new_v4());
    let changeset = format!("changeset_{}", Uuid::new_v4());
    let body = encode_with_boundaries(base_url, table, operations, &batch, &changeset);
    (format!("multipart/mixed; boundary={batch}"), body)
}

fn encode_with_boundaries(
    base_url: &str,
    table: &str,
    operations: &[Operation],
    batch: &str,
    changeset: &str,
) -> String {
    // Written straight into one buffer; `write!` to a `String` cannot fail.
    const INFALLIBLE: &str = "writing to a String never fails";
    let mut out = String::with_capacity(256 + operations.len() * 512);
    write!(out, "--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n")
        .expect(INFALLIBLE);
    let insert_url = resource_url(base_url, &entities_path(table));
    for (index, op) in operations.iter().enumerate() {
        let entity_url = || resource_url(base_url, &entity_path(table, op.partition_key(), op.row_key()));
        let (method, url, if_match) = match op {
            Operation::Insert(_) => ("POST", insert_url.clone(), None),
            Operation::Replace { if_match, .. } => ("PUT", entity_url(), Some(if_match)),
            Operation::Merge { if_match, .. } => ("MERGE", entity_url(), Some(if_match)),
            Operation::InsertOrReplace(_) => ("PUT", entity_url(), None),
            Operation::InsertOrMerge(_) => ("MERGE", entity_url(), None),
            Operation::Delete { if_match, .. } => ("DELETE", entity_url(), Some(if_match)),
        };
        write!(
            out,
            "--{changeset}\r\nContent-Type: application/http\r\n\
             Content-Transfer-Encoding: binary\r\nContent-ID: {index}\r\n\r\n\
             {method} {url} HTTP/1.1\r\n"
        )
        .expect(INFALLIBLE);
        let body = op.entity().map(encode_entity);
        if body.is_some() {
            out.push_str("Content-Type: application/json\r\n");
        }
        write!(out, "Accept: {ACCEPT}\r\n").expect(INFALLIBLE);
        if matches!(op, Operation::Insert(_)) {
            out.push_str("Prefer: return-no-content\r\n");
        }
        if let Some(condition) = if_match {
            write!(out, "If-Match: {}\r\n", condition.as_header()).expect(INFALLIBLE);
        }
        out.push_str("DataServiceVersion: 3.0\r\n\r\n");
        out.push_str(body.as_deref().unwrap_or(""));
        // The CRLF before the next delimiter belongs to the delimiter.
        out.push_str("\r\n");
    }
    write!(out, "--{changeset}--\r\n\r\n--{batch}--\r\n").expect(INFALLIBLE);
    out
}

/// Reads the answer to a `$batch` whose outer status was 202.
///
/// `content_type` is the response's `Content-Type` (it names the boundary). On success, one
/// outcome per operation in request order (the caller should check the count against the
/// operations sent). When the transaction failed, the error of the failing operation: its
/// service code, HTTP status, message and [`batch_index`](Error::batch_index).
pub fn decode_batch_response(content_type: &str, body: &[u8]) -> Result<Vec<WriteOutcome>> {
    let text =
        std::str::from_utf8(body).map_err(|e| malformed("the batch response is not UTF-8").with_source(e))?;
    let responses = multipart_leaves(content_type, text, MAX_BATCH_OPERATIONS)?
        .iter()
        .map(|part| parse_http_response(part.content))
        .collect::<Result<Vec<_>>>()?;
    if responses.is_empty() {
        return Err(malformed("the batch response holds no operation response"));
    }
    responses
        .into_iter()
        .map(|r| {
            if (200..300).contains(&r.status) {
                Ok(WriteOutcome { etag: part_etag(&r.headers)? })
            } else {
                Err(decode_error(r.status, &r.headers, r.body.as_bytes()))
            }
        })
        .collect()
}

/// One part of a multipart body that holds no further multipart: its MIME headers and the
/// text after them.
#[doc(hidden)]
#[derive(Debug)]
pub struct MultipartLeaf<'a> {
    /// `Name: value` MIME headers, trimmed.
    pub headers: Vec<(&'a str, &'a str)>,
    /// The part's content: the text after the blank line that ends its headers, up to the line
    /// end before the next delimiter (which belongs to the delimiter); read it with [`Lines`].
    pub content: &'a str,
}

/// The lines of a text, each without its line end (LF or CRLF), and the text not yet read:
/// how multipart bodies and their parts are read, in one pass and without copies.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    rest: &'a str,
}

impl<'a> Lines<'a> {
    /// The lines of `text`.
    pub fn new(text: &'a str) -> Self {
        Lines { rest: text }
    }

    /// The text after the last line read (all of it before the first).
    pub fn rest(&self) -> &'a str {
        self.rest
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let (line, rest) = match memchr::memchr(b'\n', self.rest.as_bytes()) {
            Some(end) => (&self.rest[..end], &self.rest[end + 1..]),
            None => (self.rest, ""),
        };
        self.rest = rest;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// The leaf parts of a `multipart/*` body whose `Content-Type` is `content_type`, in order:
/// nested multipart parts (a changeset in a batch) are descended into, two levels at most.
/// Shared by the client, reading `$batch` responses, and a server, reading `$batch` requests.
///
/// Accepts CRLF or LF line ends and relies on no blank-line count. Refused, as
/// [`ErrorKind::Decode`](table_core::ErrorKind::Decode) errors: no boundary, a body of more
/// than [`MAX_MULTIPART_LINES`] lines, no part with the boundary, deeper nesting, more than
/// `max_leaves` leaves.
#[doc(hidden)]
pub fn multipart_leaves<'a>(
    content_type: &str,
    text: &'a str,
    max_leaves: usize,
) -> Result<Vec<MultipartLeaf<'a>>> {
    let boundary =
        boundary_of(content_type).ok_or_else(|| malformed("the multipart Content-Type names no boundary"))?;
    if memchr::memchr_iter(b'\n', text.as_bytes()).count() >= MAX_MULTIPART_LINES {
        return Err(malformed(&format!("the multipart body has more than {MAX_MULTIPART_LINES} lines")));
    }
    let mut leaves = Vec::new();
    collect_leaves(text, boundary, 1, max_leaves, &mut leaves)?;
    Ok(leaves)
}

/// The ETag of a successful part: absent, or present once and accepted by [`received_etag`].
fn part_etag(headers: &[(&str, &str)]) -> Result<Option<ETag>> {
    let mut etags = headers.iter().filter(|(name, _)| name.eq_ignore_ascii_case("ETag"));
    match (etags.next(), etags.next()) {
        (None, _) => Ok(None),
        (Some((_, etag)), None) => received_etag(etag).map(Some),
        (Some(_), Some(_)) => Err(malformed("a batch response part carries more than one ETag")),
    }
}

fn malformed(message: &str) -> Error {
    crate::error::decode(message)
}

/// The `boundary` parameter of a `multipart/*` content type, unquoted.
fn boundary_of(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        let value = value.trim().trim_matches('"');
        (name.trim().eq_ignore_ascii_case("boundary") && !value.is_empty()).then_some(value)
    })
}

/// One operation's answer inside the multipart body.
struct PartResponse<'a> {
    status: u16,
    headers: Vec<(&'a str, &'a str)>,
    body: String,
}

/// Splits `text` on `--boundary` delimiter lines and collects every leaf part, descending into
/// nested multipart parts.
fn collect_leaves<'a>(
    text: &'a str,
    boundary: &str,
    depth: usize,
    max_leaves: usize,
    out: &mut Vec<MultipartLeaf<'a>>,
) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(malformed("the multipart body nests multipart parts too deeply"));
    }
    let mut parts: Vec<&'a str> = Vec::new();
    // Where the current part starts, once a delimiter opened one.
    let mut start: Option<usize> = None;
    for delimiter in delimiters(text, boundary) {
        if let Some(s) = start {
            // The line end before a delimiter belongs to the delimiter.
            let before = &text[..delimiter.line];
            let end = before.strip_suffix('\n').map_or(before, |t| t.strip_suffix('\r').unwrap_or(t));
            parts.push(text.get(s..end.len()).unwrap_or_default());
        }
        if delimiter.closes {
            start = None;
            break;
        }
        start = Some(delimiter.next_line);
    }
    // A body cut off before its closing delimiter still yields the parts it completed.
    if let Some(s) = start {
        parts.push(&text[s..]);
    }
    if parts.is_empty() {
        return Err(malformed("the multipart body has no part with the announced boundary"));
    }
    for part in parts {
        let mut lines = Lines::new(part);
        let headers = header_lines(&mut lines);
        let content = lines.rest();
        let nested = header(&headers, "Content-Type")
            .filter(|ct| ct.get(..10).is_some_and(|kind| kind.eq_ignore_ascii_case("multipart/")))
            .map(|ct| boundary_of(ct).ok_or_else(|| malformed("a nested multipart part names no boundary")))
            .transpose()?;
        match nested {
            Some(inner) => collect_leaves(content, inner, depth + 1, max_leaves, out)?,
            None if out.len() == max_leaves => {
                return Err(malformed(&format!("the multipart body has more than {max_leaves} parts")));
            }
            None => out.push(MultipartLeaf { headers, content }),
        }
    }
    Ok(())
}

/// A delimiter line: `--boundary` (`--boundary--` when it `closes`) at the start of a line,
/// then nothing but white space up to the line's end.
struct Delimiter {
    /// Where its line starts.
    line: usize,
    /// Where the line after it starts (the text's end when there is none).
    next_line: usize,
    closes: bool,
}

/// The delimiter lines of `boundary` in `text`, in order. Lines are not read one by one: the
/// text is searched once for a line end followed by `--boundary` (a boundary holds no line end,
/// so two such matches cannot overlap and none is missed), and a part's lines are read only
/// by whoever reads the part.
fn delimiters<'t>(text: &'t str, boundary: &str) -> impl Iterator<Item = Delimiter> + 't {
    let first = text.strip_prefix("--").and_then(|t| t.strip_prefix(boundary)).map(|_| 0);
    let needle = format!("\n--{boundary}");
    let later: Vec<usize> = memchr::memmem::find_iter(text.as_bytes(), &needle).map(|at| at + 1).collect();
    let boundary_len = boundary.len();
    first.into_iter().chain(later).filter_map(move |line| {
        let rest = &text[line + 2 + boundary_len..];
        let (closes, rest) = match rest.strip_prefix("--") {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let (tail, next_line) = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(end) => (&rest[..end], text.len() - rest.len() + end + 1),
            None => (rest, text.len()),
        };
        tail.trim_end().is_empty().then_some(Delimiter { line, next_line, closes })
    })
}

/// The `Name: value` lines of `lines` up to the first blank line, which is read too; lines
/// without a colon are skipped.
fn header_lines<'a>(lines: &mut Lines<'a>) -> Vec<(&'a str, &'a str)> {
    lines.take_while(|l| !l.trim_ascii().is_empty()).filter_map(header_line).collect()
}

/// A `Name: value` header line of a multipart part, both sides trimmed of ASCII white space
/// (the only white space HTTP allows around them); `None` without a colon.
#[doc(hidden)]
pub fn header_line(line: &str) -> Option<(&str, &str)> {
    let colon = memchr::memchr(b':', line.as_bytes())?;
    Some((line[..colon].trim_ascii(), line[colon + 1..].trim_ascii()))
}

/// An embedded `HTTP/1.1 <status> <reason>` response.
fn parse_http_response(content: &str) -> Result<PartResponse<'_>> {
    let mut lines = Lines::new(content);
    let Some(first) = lines.find(|l| !l.trim_ascii().is_empty()) else {
        return Err(malformed("a batch response part has no HTTP status line"));
    };
    let mut status_line = first.split_ascii_whitespace();
    let status = match (status_line.next(), status_line.next()) {
        (Some(version), Some(code)) if version.starts_with("HTTP/") => code.parse::<u16>().ok(),
        _ => None,
    }
    .filter(|s| (100..=599).contains(s))
    .ok_or_else(|| malformed("a batch response part has an unreadable HTTP status line"))?;
    let headers = header_lines(&mut lines);
    Ok(PartResponse { status, headers, body: lines.rest().trim_ascii().to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use table_core::{Entity, EntityKey, IfMatch};

    /// The request of protocol doc section 7.1, with `<uuid>` and `<uuid2>` as written there.
    #[test]
    fn request_matches_the_reference_byte_for_byte() {
        let ops = [
            Operation::Insert(Entity::new("p", "r1").with("x", 1)),
            Operation::Delete { key: EntityKey::new("p", "r2"), if_match: IfMatch::Any },
        ];
        let body = encode_with_boundaries(
            "http://127.0.0.1:10002/devstoreaccount1",
            "mytable",
            &ops,
            "batch_<uuid>",
            "changeset_<uuid2>",
        );
        let expected = [
            "--batch_<uuid>",
            "Content-Type: multipart/mixed; boundary=changeset_<uuid2>",
            "",
            "--changeset_<uuid2>",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: binary",
            "Content-ID: 0",
            "",
            "POST http://127.0.0.1:10002/devstoreaccount1/mytable HTTP/1.1",
            "Content-Type: application/json",
            "Accept: application/json;odata=minimalmetadata",
            "Prefer: return-no-content",
            "DataServiceVersion: 3.0",
            "",
            r#"{"PartitionKey":"p","RowKey":"r1","x":1}"#,
            "--changeset_<uuid2>",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: binary",
            "Content-ID: 1",
            "",
            "DELETE http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p',RowKey='r2') HTTP/1.1",
            "Accept: application/json;odata=minimalmetadata",
            "If-Match: *",
            "DataServiceVersion: 3.0",
            "",
            "",
            "--changeset_<uuid2>--",
            "",
            "--batch_<uuid>--",
            "",
        ]
        .join("\r\n");
        assert_eq!(body, expected);
    }

    /// The split as it was written before it read the body in one pass: the body cut into a
    /// list of lines, parts as runs of lines between delimiter lines. The one-pass split must
    /// find the same parts, headers and content (content compared as text with `\n` line ends).
    fn split_by_lines<'a>(
        content_type: &'a str,
        text: &'a str,
        max_leaves: usize,
    ) -> Result<Vec<(Headers<'a>, String)>> {
        fn collect<'a>(
            lines: &[&'a str],
            boundary: &str,
            depth: usize,
            max_leaves: usize,
            out: &mut Vec<(Headers<'a>, String)>,
        ) -> Result<()> {
            if depth > MAX_DEPTH {
                return Err(malformed("the multipart body nests multipart parts too deeply"));
            }
            let (delimiter, close) = (format!("--{boundary}"), format!("--{boundary}--"));
            let (mut parts, mut start) = (Vec::new(), None);
            for (i, line) in lines.iter().enumerate() {
                let line = line.trim_end();
                if line == close || line == delimiter {
                    if let Some(s) = start {
                        parts.push(&lines[s..i]);
                    }
                    if line == close {
                        start = None;
                        break;
                    }
                    start = Some(i + 1);
                }
            }
            if let Some(s) = start {
                parts.push(&lines[s..]);
            }
            if parts.is_empty() {
                return Err(malformed("the multipart body has no part with the announced boundary"));
            }
            for part in parts {
                let end = part.iter().position(|l| l.trim().is_empty()).unwrap_or(part.len());
                let headers: Headers<'_> = part[..end]
                    .iter()
                    .filter_map(|l| l.split_once(':'))
                    .map(|(n, v)| (n.trim(), v.trim()))
                    .collect();
                let content = part.get(end + 1..).unwrap_or(&[]);
                let nested = header(&headers, "Content-Type")
                    .filter(|ct| ct.to_ascii_lowercase().starts_with("multipart/"))
                    .map(|ct| {
                        boundary_of(ct).ok_or_else(|| malformed("a nested multipart part names no boundary"))
                    })
                    .transpose()?;
                match nested {
                    Some(inner) => collect(content, inner, depth + 1, max_leaves, out)?,
                    None if out.len() == max_leaves => {
                        return Err(malformed(&format!(
                            "the multipart body has more than {max_leaves} parts"
                        )));
                    }
                    None => out.push((headers, content.join("\n"))),
                }
            }
            Ok(())
        }
        let boundary = boundary_of(content_type).ok_or_else(|| malformed("no boundary"))?;
        let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        let mut out = Vec::new();
        collect(&lines, boundary, 1, max_leaves, &mut out)?;
        Ok(out)
    }

    type Headers<'a> = Vec<(&'a str, &'a str)>;

    proptest::proptest! {
        #[test]
        fn the_one_pass_split_finds_what_a_split_into_lines_finds(
            lines in proptest::collection::vec(proptest::sample::select(&[
                "--b", "--b--", "--b  ", "--b-", "--bb", " --b", "--c", "--c--", "-",
                "Content-Type: multipart/mixed; boundary=c", "content-type: MULTIPART/x; boundary=b",
                "Content-Type: application/http", "Content-ID: 7", "X:y", "no colon", "", " ",
                "GET http://h/a/t HTTP/1.1", "{\"a\":\"é\"}", "\r", "a\rb",
            ][..]), 0..24),
            crlf in proptest::collection::vec(proptest::bool::ANY, 24),
            max_leaves in 1usize..4,
        ) {
            let mut text = String::new();
            for (line, crlf) in lines.iter().zip(&crlf) {
                text.push_str(line);
                text.push_str(if *crlf { "\r\n" } else { "\n" });
            }
            let content_type = "multipart/mixed; boundary=b";
            let one_pass = multipart_leaves(content_type, &text, max_leaves).map(|leaves| {
                leaves.into_iter().map(|leaf| (leaf.headers, leaf.content.replace("\r\n", "\n"))).collect::<Vec<_>>()
            });
            let by_lines = split_by_lines(content_type, &text, max_leaves);
            match (one_pass, by_lines) {
                (Ok(one_pass), Ok(by_lines)) => proptest::prop_assert_eq!(one_pass, by_lines, "{:?}", text),
                (Err(a), Err(b)) => proptest::prop_assert_eq!(a.message(), b.message(), "{:?}", text),
                (a, b) => proptest::prop_assert!(false, "{:?}: one pass {:?}, by lines {:?}", text, a, b),
            }
        }
    }
}
