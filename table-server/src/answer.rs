//! Responses: the service's error answers (protocol doc section 8) in the form the request's
//! `Accept` picks, the JSON content types of the three metadata levels, and the headers every
//! answer carries.

use std::borrow::Cow;

use bytes::Bytes;
use chrono::Utc;
use http_body_util::Full;
use hyper::Response;
pub(crate) use hyper::header::{ALLOW, CONTENT_TYPE, ETAG, LOCATION};
use hyper::header::{CACHE_CONTROL, HeaderName, HeaderValue, X_CONTENT_TYPE_OPTIONS};
use table_core::{Error, ErrorCode};

use crate::version::ServiceVersion;

// The service's own header names, parsed once (hyper writes every name in lower case).
/// `x-ms-request-id`, the server's id of the request.
pub(crate) const X_MS_REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-request-id");
/// `x-ms-version`, the service version answered.
pub(crate) const X_MS_VERSION: HeaderName = HeaderName::from_static("x-ms-version");
/// `x-ms-client-request-id`, the client's id of the request, echoed.
pub(crate) const X_MS_CLIENT_REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-client-request-id");
/// `x-ms-date`, the date a request was signed at.
pub(crate) const X_MS_DATE: HeaderName = HeaderName::from_static("x-ms-date");
/// `Preference-Applied`, which `Prefer` choice an insert's answer follows.
pub(crate) const PREFERENCE_APPLIED: HeaderName = HeaderName::from_static("preference-applied");
/// `DataServiceId`, the URL of a created table or entity.
pub(crate) const DATA_SERVICE_ID: HeaderName = HeaderName::from_static("dataserviceid");
/// `DataServiceVersion`, the OData version of a request or answer.
pub(crate) const DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("dataserviceversion");
/// `x-ms-continuation-NextTableName`.
pub(crate) const NEXT_TABLE_NAME: HeaderName = HeaderName::from_static("x-ms-continuation-nexttablename");
/// `x-ms-continuation-NextPartitionKey`.
pub(crate) const NEXT_PARTITION_KEY: HeaderName =
    HeaderName::from_static("x-ms-continuation-nextpartitionkey");
/// `x-ms-continuation-NextRowKey`.
pub(crate) const NEXT_ROW_KEY: HeaderName = HeaderName::from_static("x-ms-continuation-nextrowkey");

/// The body type of every answer.
pub(crate) type Body = Full<Bytes>;

/// How much OData control information a JSON answer carries (the `Accept` header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Metadata {
    /// `odata=nometadata`: values only.
    None,
    /// `odata=minimalmetadata` (and plain `application/json`): `odata.metadata`, `odata.etag`,
    /// and the types JSON cannot carry.
    Minimal,
    /// `odata=fullmetadata`: also `odata.type`, `odata.id`, `odata.editLink` and the
    /// `Timestamp` type.
    Full,
}

impl Metadata {
    /// The level an `Accept` header (or `$format` value) asks for; `None` when it asks for no
    /// JSON (Atom, which the service refuses since 2015).
    pub(crate) fn from_accept(accept: &str) -> Option<Metadata> {
        // The SDKs name a level in this one form: read by comparisons, not by the scan below.
        match accept.strip_prefix("application/json;odata=") {
            Some("minimalmetadata") => return Some(Metadata::Minimal),
            Some("nometadata") => return Some(Metadata::None),
            Some("fullmetadata") => return Some(Metadata::Full),
            _ => {}
        }
        // Read without a lower-cased copy, from each `=` rather than at every byte: every
        // `$batch` part names its level. Any `odata=nometadata` wins, then `fullmetadata`.
        let bytes = accept.as_bytes();
        let (mut none, mut full, mut minimal) = (false, false, false);
        for at in (0..bytes.len()).filter(|&i| bytes[i] == b'=') {
            let named = |word: &str| {
                bytes
                    .get(at + 1..at + 1 + word.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(word.as_bytes()))
            };
            if at.checked_sub(5).is_some_and(|from| bytes[from..at].eq_ignore_ascii_case(b"odata")) {
                none |= named("nometadata");
                full |= named("fullmetadata");
                minimal |= named("minimalmetadata");
            }
        }
        let json = || bytes.windows(16).any(|w| w.eq_ignore_ascii_case(b"application/json"));
        if none {
            Some(Metadata::None)
        } else if full {
            Some(Metadata::Full)
        } else if minimal || json() {
            Some(Metadata::Minimal)
        } else {
            None
        }
    }

    /// The `Content-Type` of a JSON answer at this level.
    pub(crate) const fn content_type(self) -> &'static str {
        match self {
            Metadata::None => "application/json;odata=nometadata;streaming=true;charset=utf-8",
            Metadata::Minimal => "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
            Metadata::Full => "application/json;odata=fullmetadata;streaming=true;charset=utf-8",
        }
    }
}

/// A request the service refuses: status, code and the first line of the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) status: u16,
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
    /// The failing operation of a `$batch`, written ahead of the message.
    pub(crate) batch_index: Option<usize>,
    /// Headers the error answer carries besides the common ones (a 405's `Allow`).
    pub(crate) headers: Vec<(HeaderName, &'static str)>,
}

impl Failure {
    pub(crate) fn new(status: u16, code: ErrorCode, message: impl Into<String>) -> Failure {
        Failure { status, code, message: message.into(), batch_index: None, headers: Vec::new() }
    }

    /// The failure with one more header on its answer.
    pub(crate) fn header(mut self, name: HeaderName, value: &'static str) -> Failure {
        self.headers.push((name, value));
        self
    }

    /// 400 `InvalidInput`, with what was wrong.
    pub(crate) fn invalid_input(why: impl Into<String>) -> Failure {
        let why = why.into();
        Failure::new(400, ErrorCode::InvalidInput, format!("One of the request inputs is not valid. ({why})"))
    }

    /// 400 `InvalidHeaderValue`, with which header and why (the service's body carries its
    /// first sentence alone: the detail is ours, for the caller).
    pub(crate) fn invalid_header_value(why: impl std::fmt::Display) -> Failure {
        Failure::new(
            400,
            ErrorCode::Other("InvalidHeaderValue".into()),
            format!("The value for one of the HTTP headers is not in the correct format. ({why})"),
        )
    }

    /// 400 `InvalidQueryParameterValue`, with which parameter and why (as
    /// [`invalid_header_value`](Self::invalid_header_value), the detail is ours).
    pub(crate) fn invalid_query_parameter_value(why: impl std::fmt::Display) -> Failure {
        Failure::new(
            400,
            ErrorCode::Other("InvalidQueryParameterValue".into()),
            format!("Value for one of the query parameters specified in the request URI is invalid. ({why})"),
        )
    }

    /// The service's answer for `code`, with its own status and message.
    pub(crate) fn service(code: ErrorCode) -> Failure {
        Failure::from(Error::service(code))
    }

    /// The error body in `format`; either form carries the code and the message value
    /// `[{batch index}:]{message}\nRequestId:{id}\nTime:{time}`.
    pub(crate) fn body(&self, request_id: &str, format: ErrorFormat) -> String {
        let index = self.batch_index.map(|i| format!("{i}:")).unwrap_or_default();
        let time = table_core::datetime::format_datetime(Utc::now());
        let value = format!("{index}{}\nRequestId:{request_id}\nTime:{time}", self.message);
        match format {
            ErrorFormat::Json => serde_json::json!({
                "odata.error": { "code": self.code.as_str(), "message": { "lang": "en-US", "value": value } }
            })
            .to_string(),
            ErrorFormat::Xml => [
                r#"<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>"#,
                &xml_text(self.code.as_str()),
                r#"</m:code><m:message xml:lang="en-US">"#,
                &xml_text(&value),
                "</m:message></m:error>",
            ]
            .concat(),
        }
    }
}

impl From<Error> for Failure {
    /// The engine's errors carry the service's code and status. The message is the service's
    /// own wording for codes about a resource (the engine adds the table and key, which the
    /// service does not), the rule's description for broken rules.
    fn from(error: Error) -> Failure {
        let code = error.code().cloned().unwrap_or(ErrorCode::InternalError);
        let status = error.status().unwrap_or(500);
        let message = match (error.violation(), &code) {
            (None, ErrorCode::Other(_)) | (Some(_), _) => error.message().to_owned(),
            (None, known) => Error::service(known.clone()).message().to_owned(),
        };
        Failure { status, code, message, batch_index: error.batch_index(), headers: Vec::new() }
    }
}

/// The form of an error answer's body, which the request's `Accept` picks
/// ([`crate::request::error_style`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorFormat {
    /// `{"odata.error":{"code":..,"message":{"lang":"en-US","value":..}}}`, typed as JSON at
    /// minimal metadata.
    Json,
    /// The OData XML error, `<m:error>` holding `<m:code>` and `<m:message xml:lang="en-US">`,
    /// typed `application/xml`.
    Xml,
}

/// How one request's error answers are written.
#[derive(Debug)]
pub(crate) struct ErrorStyle {
    /// The body's form.
    pub(crate) format: ErrorFormat,
    /// The answer's `DataServiceVersion`; none for versions that predate the choice of format.
    pub(crate) data_service_version: Option<HeaderValue>,
}

/// `text` as XML character data: the markup characters escaped, and the characters XML 1.0
/// cannot carry at all (not even as references: the C0 controls but tab, line feed and
/// carriage return, and U+FFFE, U+FFFF) replaced by U+FFFD, so that a strict parser still
/// reads the code and the rest of the message.
fn xml_text(text: &str) -> Cow<'_, str> {
    let not_xml =
        |c: char| (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{FFFE}' | '\u{FFFF}');
    if !text.contains(|c| matches!(c, '&' | '<' | '>') || not_xml(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if not_xml(c) => out.push(char::REPLACEMENT_CHARACTER),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// An answer under construction: status, headers and body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    /// Borrowed when constant (a content type, a preference), so that most answers copy no
    /// header text before hyper writes it.
    pub(crate) headers: Vec<(HeaderName, Cow<'static, str>)>,
    pub(crate) body: Bytes,
}

impl Answer {
    /// An answer with no body.
    pub(crate) fn empty(status: u16) -> Answer {
        Answer { status, headers: Vec::new(), body: Bytes::new() }
    }

    /// A JSON answer at `metadata` level.
    pub(crate) fn json(status: u16, metadata: Metadata, body: impl Into<Bytes>) -> Answer {
        Answer::empty(status).header(CONTENT_TYPE, metadata.content_type()).with_body(body)
    }

    /// The answer for `failure` to request `request_id`, its body in the form of `style`, with
    /// the `DataServiceVersion` that goes with it.
    pub(crate) fn failure(failure: &Failure, request_id: &str, style: &ErrorStyle) -> Answer {
        let body = failure.body(request_id, style.format);
        let mut answer = match style.format {
            ErrorFormat::Json => Answer::json(failure.status, Metadata::Minimal, body),
            ErrorFormat::Xml => {
                Answer::empty(failure.status).header(CONTENT_TYPE, "application/xml").with_body(body)
            }
        };
        if let Some(version) = style.data_service_version.as_ref().and_then(|v| v.to_str().ok()) {
            answer = answer.header(DATA_SERVICE_VERSION, version.to_owned());
        }
        failure.headers.iter().fold(answer, |answer, (name, value)| answer.header(name.clone(), *value))
    }

    pub(crate) fn header(mut self, name: HeaderName, value: impl Into<Cow<'static, str>>) -> Answer {
        self.headers.push((name, value.into()));
        self
    }

    pub(crate) fn with_body(mut self, body: impl Into<Bytes>) -> Answer {
        self.body = body.into();
        self
    }

    /// The hyper response, with the headers every answer carries: `x-ms-request-id`,
    /// `x-ms-version` (from 2009-09-19), the echoed `x-ms-client-request-id`, `Cache-Control` and
    /// `X-Content-Type-Options`; hyper adds `Date` (formatted once a second rather than per
    /// answer).
    pub(crate) fn into_response(self, common: &Common) -> Response<Body> {
        let mut response = Response::new(Full::new(self.body));
        *response.status_mut() =
            hyper::StatusCode::from_u16(self.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        let headers = response.headers_mut();
        headers.reserve(5 + self.headers.len());
        if let Ok(id) = HeaderValue::from_bytes(common.request_id.as_str().as_bytes()) {
            headers.append(X_MS_REQUEST_ID, id);
        }
        if common.version >= ServiceVersion::ECHOED_SINCE {
            headers.append(X_MS_VERSION, HeaderValue::from_static(common.version.as_str()));
        }
        headers.append(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.append(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        if let Some(id) = &common.client_request_id {
            headers.append(X_MS_CLIENT_REQUEST_ID, id.clone());
        }
        for (name, value) in self.headers {
            // Every value written is ours or an echo checked to be a valid header value. A
            // constant is shared with the answer rather than copied.
            let value = match value {
                Cow::Borrowed(text) => HeaderValue::from_maybe_shared(Bytes::from_static(text.as_bytes())),
                Cow::Owned(text) => HeaderValue::try_from(text),
            };
            if let Ok(value) = value {
                headers.append(name, value);
            }
        }
        response
    }
}

/// What every answer to one request repeats.
#[derive(Debug, Clone)]
pub(crate) struct Common {
    pub(crate) request_id: RequestId,
    /// The version the request is served at (`service::Versions::served`); echoed from
    /// [`ServiceVersion::ECHOED_SINCE`].
    pub(crate) version: ServiceVersion,
    /// As the request gave it, when short and printable.
    pub(crate) client_request_id: Option<HeaderValue>,
}

/// A request id in the service's form, a GUID's 36 characters (`8-4-4-4-12` lower-case hex
/// digits), kept as text on the stack: written into the header and into error bodies, never
/// formatted through a `String`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestId([u8; uuid::fmt::Hyphenated::LENGTH]);

impl RequestId {
    /// The id of `uuid`.
    pub(crate) fn new(uuid: uuid::Uuid) -> RequestId {
        let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
        uuid.hyphenated().encode_lower(&mut text);
        RequestId(text)
    }

    pub(crate) fn as_str(&self) -> &str {
        // Hex digits and hyphens only, so always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use table_core::Violation;

    use super::*;

    #[test]
    fn accept_names_the_level() {
        assert_eq!(Metadata::from_accept("application/json;odata=nometadata"), Some(Metadata::None));
        assert_eq!(Metadata::from_accept("application/json;odata=minimalmetadata"), Some(Metadata::Minimal));
        assert_eq!(Metadata::from_accept("application/json"), Some(Metadata::Minimal));
        assert_eq!(Metadata::from_accept("application/json;odata=fullmetadata"), Some(Metadata::Full));
        assert_eq!(Metadata::from_accept("application/atom+xml"), None);
        assert_eq!(Metadata::from_accept("Application/JSON;OData=FullMetadata"), Some(Metadata::Full));
        assert_eq!(Metadata::from_accept(""), None);
    }

    proptest::proptest! {
        /// The level is what a search for each whole name anywhere in the header finds, the
        /// reading that `from_accept` makes from each `=` instead.
        #[test]
        fn accept_reads_as_a_search_for_each_name(pieces in proptest::collection::vec(
            proptest::sample::select(&[
                "odata=", "ODATA=", "data=", "=", "nometadata", "NoMetadata", "fullmetadata",
                "minimalmetadata", "application/json", "application/", "json", ";", ",", " ", "é",
            ][..]),
            0..8,
        )) {
            let accept = pieces.concat();
            let contains = |needle: &str| {
                accept.as_bytes().windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
            };
            let expected = if contains("odata=nometadata") {
                Some(Metadata::None)
            } else if contains("odata=fullmetadata") {
                Some(Metadata::Full)
            } else if contains("application/json") || contains("odata=minimalmetadata") {
                Some(Metadata::Minimal)
            } else {
                None
            };
            proptest::prop_assert_eq!(Metadata::from_accept(&accept), expected, "{}", accept);
        }
    }

    #[test]
    fn failures_carry_the_service_wording_and_the_batch_index() {
        let exists =
            Failure::from(Error::service(ErrorCode::EntityAlreadyExists).about("t", Some(("p", "r"))));
        assert_eq!(exists.status, 409);
        assert_eq!(exists.message, "The specified entity already exists.");
        let body = Failure { batch_index: Some(3), ..exists }.body("rid", ErrorFormat::Json);
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(parsed["odata.error"]["code"], "EntityAlreadyExists");
        let value = parsed["odata.error"]["message"]["value"].as_str().unwrap_or_default();
        assert!(value.starts_with("3:The specified entity already exists.\nRequestId:rid\nTime:"), "{value}");
        let top = Failure::from(Error::invalid(Violation::Top { value: 0 }));
        assert_eq!((top.status, top.code), (400, ErrorCode::InvalidInput));
    }

    #[test]
    fn xml_errors_carry_the_code_and_the_escaped_message() {
        let failure = Failure { batch_index: Some(0), ..Failure::invalid_input("a <b> & \u{1}c\u{FFFF}") };
        let body = failure.body("rid", ErrorFormat::Xml);
        let head = concat!(
            r#"<?xml version="1.0" encoding="utf-8"?>"#,
            r#"<m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">"#,
            r#"<m:code>InvalidInput</m:code><m:message xml:lang="en-US">"#,
            "0:One of the request inputs is not valid. (a &lt;b&gt; &amp; \u{FFFD}c\u{FFFD})\nRequestId:rid\nTime:",
        );
        assert!(body.starts_with(head), "{body}");
        assert!(body.ends_with("Z</m:message></m:error>"), "{body}");
        assert_eq!(xml_text("plain"), Cow::Borrowed("plain"));
    }
}
