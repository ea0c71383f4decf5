//! Service error answers (protocol doc section 8) turned into [`table_core::Error`].
//!
//! The body may be JSON (`{"odata.error":{"code":..,"message":{"value":..}}}`), XML
//! (`<m:error><m:code>` from the service, `<Error><Code>` from Azurite), or empty. The code
//! comes from the body, else from the `x-ms-error-code` header; an empty code (Azurite's
//! table-name errors) counts as none. The message is the first line of the service's text
//! (the `RequestId:`/`Time:` lines are dropped), with a leading `<index>:` batch prefix
//! moved into [`Error::batch_index`]. An XML `<AuthenticationErrorDetail>` (why a signature was
//! refused, sent with a 403) is appended to the message, its line breaks shown as `\n` and the
//! request's signature it quotes redacted. The request id comes from `x-ms-request-id`, else
//! from the message's `RequestId:` line (batch parts carry no headers of their own).
//!
//! Invariant: a known code decides the [`ErrorKind`] (so `ServerBusy` is `Throttled` and
//! `OperationTimedOut` a `Timeout`); an unknown or missing code falls back to the status.
//! Decoding an error never fails: whatever the body, the caller gets an `Error`.

use serde::Deserialize;
use table_core::{Error, ErrorCode};

/// The response header carrying the error code (Azurite sends it, the service may not).
pub const ERROR_CODE_HEADER: &str = "x-ms-error-code";
/// The response header carrying the service's request id.
pub const REQUEST_ID_HEADER: &str = "x-ms-request-id";

/// The most bytes of an error answer's body read: the service's error bodies are a code and a
/// message of a few hundred bytes.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// Builds the error for a failed response from its status, headers (name/value pairs, names
/// matched case-insensitively) and body.
pub fn decode_error(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Error {
    let parsed = parse_body(body);
    let code = parsed
        .code
        .filter(|c| !c.is_empty())
        .or_else(|| header(headers, ERROR_CODE_HEADER).filter(|c| !c.is_empty()).map(str::to_owned))
        .map(|c| ErrorCode::parse(&c));
    let text = parsed.message.unwrap_or_default();
    let first_line = text.lines().next().unwrap_or("").trim();
    let (batch_index, message) = split_batch_index(first_line);
    let mut message = if message.is_empty() {
        format!("the service answered HTTP {status} without a message")
    } else {
        message.to_owned()
    };
    if let Some(detail) = parsed.detail.as_deref().filter(|d| !d.is_empty()) {
        // The detail quotes the string the service signed, which spans lines: keep it whole
        // on the message's one line.
        let detail = redact_request_signature(detail).replace('\r', "").replace('\n', "\\n");
        message = format!("{message} Detail: {detail}");
    }
    let mut error = Error::answered(status, code, message);
    if let Some(index) = batch_index {
        error = error.with_batch_index(index);
    }
    let request_id = header(headers, REQUEST_ID_HEADER)
        .or_else(|| text.lines().find_map(|l| l.trim().strip_prefix("RequestId:")).map(str::trim));
    if let Some(id) = request_id.filter(|id| !id.is_empty()) {
        error = error.with_request_id(id);
    }
    error
}

/// `detail` with the signature the request carried replaced by `<redacted>`: the service quotes
/// it (`The MAC signature found in the HTTP request '...' is not the same as ...`), and the
/// SDK never prints a signature.
fn redact_request_signature(detail: &str) -> String {
    const QUOTE: &str = "HTTP request '";
    let Some(start) = detail.find(QUOTE).map(|at| at + QUOTE.len()) else {
        return detail.to_owned();
    };
    // Without a closing quote, everything after the opening one may be the signature.
    let end = detail[start..].find('\'').map_or(detail.len(), |len| start + len);
    format!("{}<redacted>{}", &detail[..start], &detail[end..])
}

/// The first header named `name`, ignoring ASCII case.
pub(crate) fn header<'a>(headers: &[(&str, &'a str)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
}

/// `"3:The text"` -> `(Some(3), "The text")`; anything else is returned unchanged.
fn split_batch_index(message: &str) -> (Option<usize>, &str) {
    let digits = message.bytes().take_while(u8::is_ascii_digit).count();
    match message[digits..].strip_prefix(':') {
        Some(rest) if digits > 0 => match message[..digits].parse() {
            Ok(index) => (Some(index), rest.trim_start()),
            Err(_) => (None, message),
        },
        _ => (None, message),
    }
}

#[derive(Default)]
struct ParsedBody {
    code: Option<String>,
    message: Option<String>,
    /// The `<AuthenticationErrorDetail>` of an XML body.
    detail: Option<String>,
}

fn parse_body(body: &[u8]) -> ParsedBody {
    // The service's XML error bodies begin with a UTF-8 byte order mark.
    let trimmed = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body).trim_ascii_start();
    if trimmed.starts_with(b"{") {
        parse_json(trimmed).unwrap_or_default()
    } else if trimmed.starts_with(b"<") {
        let text = String::from_utf8_lossy(trimmed);
        ParsedBody {
            code: xml_element(&text, "code"),
            message: xml_element(&text, "message"),
            detail: xml_element(&text, "AuthenticationErrorDetail"),
        }
    } else {
        ParsedBody::default()
    }
}

fn parse_json(body: &[u8]) -> Option<ParsedBody> {
    #[derive(Deserialize)]
    struct Envelope {
        #[serde(rename = "odata.error", alias = "error")]
        error: ErrorMember,
    }
    let envelope: Envelope = serde_json::from_slice(body).ok()?;
    Some(envelope.error.into_parsed())
}

/// The `odata.error` member of a JSON error body (`error` in OData v4 bodies), also looked for
/// in success bodies, where it must not be.
#[derive(Deserialize)]
pub(super) struct ErrorMember {
    code: Option<String>,
    message: Option<Message>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Message {
    Localized { value: String },
    Plain(String),
}

impl ErrorMember {
    fn into_parsed(self) -> ParsedBody {
        ParsedBody {
            code: self.code,
            message: self.message.map(|m| match m {
                Message::Localized { value } | Message::Plain(value) => value,
            }),
            detail: None,
        }
    }

    /// The error for a success answer that carries this member beside its results: such an
    /// answer says two contradicting things, so it is a [`ErrorKind::Decode`] error, with the
    /// service's code and first message line when it gave them.
    pub(super) fn into_contradiction(self, what: &str) -> Error {
        let parsed = self.into_parsed();
        let first_line = parsed.message.as_deref().and_then(|m| m.lines().next()).unwrap_or("").trim();
        let mut error = crate::error::decode(format!(
            "the {what} answered as a success carries a service error: {first_line}"
        ));
        if let Some(code) = parsed.code.filter(|c| !c.is_empty()) {
            error = error.with_code(ErrorCode::parse(&code));
        }
        error
    }
}

/// The text of the first element whose local name is `name` (ASCII case ignored), with the
/// five predefined XML entities decoded.
fn xml_element(xml: &str, name: &str) -> Option<String> {
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        let tag_end = rest.find('>')?;
        let tag = &rest[..tag_end];
        let qualified = tag.split_whitespace().next().unwrap_or("");
        let local = qualified.rsplit(':').next().unwrap_or(qualified);
        if local.eq_ignore_ascii_case(name) && !tag.ends_with('/') {
            let content = &rest[tag_end + 1..];
            let end = content.find('<').unwrap_or(content.len());
            return Some(xml_unescape(content[..end].trim()));
        }
        rest = &rest[tag_end + 1..];
    }
    None
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}
