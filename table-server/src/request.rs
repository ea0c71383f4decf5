//! One request as the table, entity and batch operations see it: the [`Call`] (engine,
//! account, headers, query, body, SAS grant), its [`Verb`], why it may get no success answer
//! ([`Refused`]), and the request-reading helpers the single operations and `$batch` parts
//! share.

use std::sync::LazyLock;

use bytes::Bytes;
use hyper::header::{ACCEPT, AsHeaderName, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, IF_MATCH};
use hyper::{Method, Version};
use memchr::memmem;
use table_client::wire::decode_request_entity;
use table_core::engine::Engine;
use table_core::{ETag, Entity, Error, ErrorCode, IfMatch, Operation, Violation};

use crate::answer::{DATA_SERVICE_VERSION, ErrorFormat, ErrorStyle, Failure, Metadata};
use crate::json::Links;
use crate::route::Query;
use crate::sas::Grant;
use crate::version::ServiceVersion;

/// Why a request gets no success answer.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The service's error answer.
    Failure(Failure),
    /// No answer at all: the connection is closed (an injected fault that loses the answer).
    Dropped,
}

impl From<Failure> for Refused {
    fn from(failure: Failure) -> Refused {
        Refused::Failure(failure)
    }
}

impl From<Error> for Refused {
    /// An engine error without a status is an injected timeout: its answer is lost.
    fn from(error: Error) -> Refused {
        match error.status() {
            Some(_) => Refused::Failure(Failure::from(error)),
            None => Refused::Dropped,
        }
    }
}

/// `Prefer`: `return-content` or `return-no-content`.
const PREFER: HeaderName = HeaderName::from_static("prefer");

/// `MaxDataServiceVersion`: the highest OData version the client reads.
const MAX_DATA_SERVICE_VERSION: HeaderName = HeaderName::from_static("maxdataserviceversion");

/// `X-HTTP-Method`: the verb a `POST` stands for.
const X_HTTP_METHOD: HeaderName = HeaderName::from_static("x-http-method");

/// The HTTP methods of the Table service, `MERGE` and `PATCH` being one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Get,
    Post,
    Put,
    Merge,
    Delete,
    Other,
}

/// The methods the service knows (its own list, compared with case); any other is 400
/// `InvalidHttpVerb`, where a known one a resource does not take is a 405.
const KNOWN_METHODS: [&str; 10] =
    ["GET", "PUT", "POST", "MERGE", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT", "PATCH"];

/// The service answers HTTP/1.1 only: an HTTP/1.0 request (a preflight too) is 505
/// `UnsupportedHttpVersion`.
pub(crate) fn check_version(version: Version) -> Result<(), Failure> {
    if version == Version::HTTP_10 {
        return Err(Failure::new(
            505,
            ErrorCode::Other("UnsupportedHttpVersion".into()),
            "The HTTP version specified is not supported for this operation by the server.",
        ));
    }
    Ok(())
}

/// The verb of a request: its method, or for a `POST` the `X-HTTP-Method` it carries (how
/// older clients send `MERGE`, `PUT` and `DELETE` through proxies that only pass `POST`;
/// the service takes no other verb there). Checked in the service's order (the storage
/// emulator's protocol layer, decompiled): an unknown method, the HTTP version, then the
/// `X-HTTP-Method` count, its use on a `POST` only, and its value.
pub(crate) fn method(method: &Method, version: Version, headers: &HeaderMap) -> Result<Verb, Failure> {
    if !KNOWN_METHODS.contains(&method.as_str()) {
        return Err(Failure::new(
            400,
            ErrorCode::Other("InvalidHttpVerb".into()),
            "The HTTP verb specified is invalid - it is not recognized by the server.",
        ));
    }
    check_version(version)?;
    let mut tunnelled = headers.get_all(X_HTTP_METHOD).iter();
    let verb = match (tunnelled.next(), tunnelled.next()) {
        (None, _) => method.as_str(),
        (Some(_), None) if method != Method::POST => {
            return Err(Failure::new(
                400,
                ErrorCode::Other("XMethodNotUsingPost".into()),
                "The request uses X-HTTP-Method with a Http Verb that is not POST.",
            ));
        }
        (Some(value), None) => match value.to_str() {
            Ok(v @ ("MERGE" | "PUT" | "DELETE")) => v,
            _ => {
                return Err(Failure::new(
                    400,
                    ErrorCode::Other("XMethodIncorrectValue".into()),
                    "The specified X-HTTP-Method is invalid.",
                ));
            }
        },
        (Some(_), Some(_)) => {
            return Err(Failure::new(
                400,
                ErrorCode::Other("XMethodIncorrectCount".into()),
                "More than one X-HTTP-Method is specified.",
            ));
        }
    };
    Ok(verb_of(verb))
}

/// The verb named `text` (the request line of a `$batch` part, too).
pub(crate) fn verb_of(text: &str) -> Verb {
    match text {
        "GET" => Verb::Get,
        "POST" => Verb::Post,
        "PUT" => Verb::Put,
        "MERGE" | "PATCH" => Verb::Merge,
        "DELETE" => Verb::Delete,
        _ => Verb::Other,
    }
}

/// One request as the operations need it.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) account: &'a str,
    /// `http://{host}/{account}`: the base of `Location` and the `odata.*` links.
    pub(crate) base: &'a str,
    pub(crate) method: Verb,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) query: &'a Query<'a>,
    pub(crate) body: &'a Bytes,
    pub(crate) request_id: &'a str,
    /// The version the request is served at (a SAS's `sv`, else `x-ms-version`, else the
    /// service's oldest).
    pub(crate) version: ServiceVersion,
    /// What the request's table SAS allows; `None`: the account key's full rights.
    pub(crate) grant: Option<&'a Grant>,
}

impl Call<'_> {
    /// The media types a table or entity request names, checked as the service's protocol
    /// head checks them on every such request and every `$batch` part (not on the `$batch`
    /// request itself, nor on table ACLs and service settings), before the operation reads its
    /// body or picks its answer's form (the storage emulator's protocol layer, decompiled, for
    /// versions from 2015-12-11). In this order:
    /// - a `Content-Type` naming Atom ([`names_atom`]) is 415 `AtomFormatNotSupported`; a JSON
    ///   one is held to [`Call::check_odata_version`], then refused when verbose (415
    ///   `JsonVerboseFormatNotSupported`); none is left to the operation (a body needs one);
    /// - a `$format` (`format`, not blank) naming Atom is 415 `AtomFormatNotSupported`, and any
    ///   other takes the place of `Accept`, which is then not checked;
    /// - else an absent or blank `Accept` is 415 `AtomFormatNotSupported` (Atom being the
    ///   default answer), whatever the verb: a delete or update that writes no answer body
    ///   too; one naming Atom likewise, and a JSON one is checked as the `Content-Type` is.
    ///
    /// `content_type`, `format` and `accept` are the request's, or a `$batch` part's.
    pub(crate) fn check_media_types(
        &self,
        content_type: Option<&[u8]>,
        format: Option<&str>,
        accept: Option<&[u8]>,
    ) -> Result<(), Failure> {
        let content_type = content_type.unwrap_or_default();
        if !content_type.trim_ascii().is_empty() {
            self.check_named_type(content_type)?;
        }
        match format.filter(|format| !format.trim().is_empty()) {
            Some(format) if names_atom(format.as_bytes()) => Err(atom_not_supported()),
            Some(_) => Ok(()),
            None => match accept.filter(|accept| !accept.trim_ascii().is_empty()) {
                Some(accept) => self.check_named_type(accept),
                None => Err(atom_not_supported()),
            },
        }
    }

    /// A `Content-Type` or `Accept` value the protocol head refuses: one naming Atom, or JSON
    /// the request's OData version cannot read, or verbose JSON.
    fn check_named_type(&self, value: &[u8]) -> Result<(), Failure> {
        if names_atom(value) {
            return Err(atom_not_supported());
        }
        if is_json(value) {
            self.check_odata_version()?;
            if is_verbose_json(value) {
                return Err(verbose_json_not_supported());
            }
        }
        Ok(())
    }

    /// The metadata level the answer is written in: `$format`, else `Accept`, as
    /// [`asked_metadata`] reads it.
    pub(crate) fn metadata(&self) -> Result<Metadata, Failure> {
        let asked = self.query.get("$format").or_else(|| text_header(self.headers, ACCEPT)).unwrap_or("");
        let metadata = asked_metadata(asked)?;
        self.check_odata_version()?;
        Ok(metadata)
    }

    /// JSON needs version 2013-08-15 and OData 3: a request served at an older version
    /// ([`Call::version`]: an `sv` or `x-ms-version` before it, or neither), or that caps its
    /// OData version below 3 (`MaxDataServiceVersion`, else `DataServiceVersion`, at `1.0` or
    /// `2.0`, parameters after `;` aside) is refused JSON, 415 `JsonFormatNotSupported`, as
    /// the service refuses it (the storage emulator's protocol layer, decompiled); an OData
    /// version it cannot read is no cap. Checked once a JSON body or answer is settled on,
    /// `$batch` parts included.
    pub(crate) fn check_odata_version(&self) -> Result<(), Failure> {
        let version = odata_version(self.headers).and_then(|v| v.to_str().ok()).unwrap_or("");
        let capped = self.version < ServiceVersion::JSON_SINCE;
        match version.split(';').next().unwrap_or_default().trim() {
            _ if capped => Err(json_not_supported()),
            "1.0" | "2.0" => Err(json_not_supported()),
            _ => Ok(()),
        }
    }

    /// The body of a request that sends JSON (a table to create, an entity to write), once its
    /// `Content-Type` passes [`check_json_content_type`]. `$batch` checks its own multipart
    /// type.
    pub(crate) fn json_body(&self) -> Result<&[u8], Failure> {
        check_json_content_type(self.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes))?;
        self.check_odata_version()?;
        Ok(self.body)
    }

    /// The media types of a table ACL operation, checked as the service checks them (the
    /// storage emulator's protocol layer, decompiled): an `Accept` must list
    /// `application/xml` among its types, and a body sent (`with_body`, Set Table ACL) must be
    /// `application/xml` when it says its type; else 415 `MediaTypeNotSupported`.
    pub(crate) fn check_xml_media_types(&self, with_body: bool) -> Result<(), Failure> {
        let content_type = self.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes).unwrap_or_default();
        if with_body && !content_type.is_empty() && !is_media_type(content_type, b"application/xml") {
            return Err(media_type_not_supported());
        }
        let accepted = self.headers.get_all(ACCEPT).iter().all(|accept| {
            accept.as_bytes().split(|&b| b == b',').any(|one| is_media_type(one, b"application/xml"))
        });
        if accepted { Ok(()) } else { Err(media_type_not_supported()) }
    }

    pub(crate) fn links(&self, metadata: Metadata) -> Links<'_> {
        Links { base: self.base, account: self.account, metadata }
    }

    /// `Prefer: return-no-content` (else the default, `return-content`).
    pub(crate) fn no_content(&self) -> bool {
        text_header(self.headers, PREFER).is_some_and(|p| p.trim().eq_ignore_ascii_case("return-no-content"))
    }

    /// A write under a table SAS needs its permission and a key in range.
    pub(crate) fn check_write(&self, table: &str, operation: &Operation) -> Result<(), Failure> {
        self.grant.map_or(Ok(()), |grant| grant.check_write(table, operation))
    }

    /// The `If-Match` condition, if any.
    pub(crate) fn if_match(&self) -> Result<Option<IfMatch>, Failure> {
        let Some(value) = self.headers.get(IF_MATCH) else {
            return Ok(None);
        };
        let text = value.to_str().map_err(|_| Failure::invalid_input("If-Match is not visible ASCII"))?;
        Ok(Some(if text == "*" { IfMatch::Any } else { IfMatch::ETag(ETag::new(text)) }))
    }
}

/// The metadata level `asked` (an `Accept` or `$format` value) names, refused as the service
/// refuses what it cannot answer in: verbose JSON is 415 `JsonVerboseFormatNotSupported`; no
/// value, one naming Atom, or one a wildcard satisfies (the data-service layer's default is
/// Atom) 415 `AtomFormatNotSupported`; any other type naming no JSON (`text/plain`,
/// `application/xml`) 415 `MediaTypeNotSupported`, the data-service layer's answer when no
/// type it writes is accepted.
fn asked_metadata(asked: &str) -> Result<Metadata, Failure> {
    if is_verbose_json(asked.as_bytes()) {
        return Err(verbose_json_not_supported());
    }
    if let Some(metadata) = Metadata::from_accept(asked) {
        return Ok(metadata);
    }
    let wildcard = asked
        .split(',')
        .any(|one| is_media_type(one.as_bytes(), b"*/*") || is_media_type(one.as_bytes(), b"application/*"));
    if asked.trim().is_empty() || names_atom(asked.as_bytes()) || wildcard {
        Err(atom_not_supported())
    } else {
        Err(media_type_not_supported())
    }
}

/// The metadata level of a `$batch` part's answer, from the part's `$format`, else its
/// `Accept`, read as a request's is (a part without either is refused by
/// [`Call::check_media_types`] first).
pub(crate) fn part_metadata(format: Option<&str>, accept: Option<&str>) -> Result<Metadata, Failure> {
    asked_metadata(format.or(accept).unwrap_or_default())
}

/// 415 `JsonFormatNotSupported`: JSON asked or sent at a version, or an OData version, before
/// JSON.
fn json_not_supported() -> Failure {
    Failure::new(415, ErrorCode::Other("JsonFormatNotSupported".into()), "JSON format is not supported.")
}

/// The service no longer reads or writes Atom: 415 `AtomFormatNotSupported`.
fn atom_not_supported() -> Failure {
    Failure::new(415, ErrorCode::Other("AtomFormatNotSupported".into()), "Atom format is not supported.")
}

/// Nor verbose JSON (`odata=verbose`, OData 2): 415 `JsonVerboseFormatNotSupported`.
fn verbose_json_not_supported() -> Failure {
    Failure::new(
        415,
        ErrorCode::Other("JsonVerboseFormatNotSupported".into()),
        "Verbose JSON format is not supported.",
    )
}

/// The `Content-Type` of a JSON body (a request's, or a `$batch` part's that writes), checked
/// in the service's order (the storage emulator's protocol layer, decompiled, for versions
/// from 2015-12-11): a value naming Atom ([`names_atom`]) is 415 `AtomFormatNotSupported`; `application/json` with `odata=verbose` is 415
/// `JsonVerboseFormatNotSupported`; no value at all is 400 `InvalidInput` "Content-Type header
/// value missing." (as an SDK thread shows it answering a table create); and any other media
/// type (`text/plain`, `application/xml`) is 415 `MediaTypeNotSupported`, where it would
/// otherwise be read as JSON.
pub(crate) fn check_json_content_type(content_type: Option<&[u8]>) -> Result<(), Failure> {
    let content_type = content_type.unwrap_or_default();
    if content_type.trim_ascii().is_empty() {
        return Err(Failure::new(400, ErrorCode::InvalidInput, "Content-Type header value missing."));
    }
    if names_atom(content_type) {
        return Err(atom_not_supported());
    }
    if !is_json(content_type) {
        return Err(media_type_not_supported());
    }
    if is_verbose_json(content_type) {
        return Err(verbose_json_not_supported());
    }
    Ok(())
}

/// Whether a `Content-Type` or `Accept` value names Atom: `atom` anywhere in it, compared with
/// case, as the service looks for it.
fn names_atom(value: &[u8]) -> bool {
    // Built once: `memmem::find` builds a searcher on every call, which cost more than the
    // search of a header's few dozen bytes (563 instructions a request, 282 this way).
    static ATOM: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new(b"atom"));
    ATOM.find(value).is_some()
}

/// Whether a `Content-Type` or `Accept` value's first media type (before any `;`) is
/// `application/json`, compared without regard to case.
fn is_json(value: &[u8]) -> bool {
    is_media_type(value, b"application/json")
}

/// Whether a media type with any parameters (`application/xml; charset=utf-8`) is `expected`,
/// compared without regard to case.
fn is_media_type(value: &[u8], expected: &[u8]) -> bool {
    let media_type = value.split(|&b| b == b';').next().unwrap_or_default();
    media_type.trim_ascii().eq_ignore_ascii_case(expected)
}

/// 415 `MediaTypeNotSupported`: a body or an answer in a type the operation does not speak.
fn media_type_not_supported() -> Failure {
    Failure::new(
        415,
        ErrorCode::Other("MediaTypeNotSupported".into()),
        "None of the provided media types are supported",
    )
}

/// Whether a JSON media type asks for verbose JSON: a `;odata=verbose` parameter, the value
/// quoted or not, without regard to case (the service's own pattern).
fn is_verbose_json(value: &[u8]) -> bool {
    const PARAMETER: &[u8] = b"odata=";
    let verbose = |rest: &[u8]| {
        let word = |text: &[u8]| text.get(..7).is_some_and(|w| w.eq_ignore_ascii_case(b"verbose"));
        match rest.strip_prefix(b"\"") {
            Some(quoted) => {
                let quoted = quoted.trim_ascii_start();
                word(quoted)
                    && quoted.get(7..).is_some_and(|after| after.trim_ascii_start().starts_with(b"\""))
            }
            None => word(rest),
        }
    };
    // Looked for only where a `;` is (a parameter can start nowhere else), not at every byte:
    // 2,074 instructions a request, about 850 this way with the search for `;` (callgrind).
    is_json(value)
        && memchr::memchr_iter(b';', value).any(|at| {
            let parameter = &value[at + 1..];
            parameter.get(..PARAMETER.len()).is_some_and(|p| p.eq_ignore_ascii_case(PARAMETER))
                && verbose(&parameter[PARAMETER.len()..])
        })
}

/// The entity of a write's body. `keys_needed`: an insert, which names its keys in the body.
pub(crate) fn body_entity(body: &[u8], keys_needed: bool) -> Result<Entity, Failure> {
    let (entity, keys_given) = decode_request_entity(body).map_err(|e| match e.violation() {
        // Answered in the service's own words: the body's keys, which the error names, are
        // not those of an update (its URL names them).
        Some(Violation::TooManyProperties { .. }) => Failure::service(ErrorCode::TooManyProperties),
        _ => Failure::invalid_input(format!("the body is not an entity: {}", e.message())),
    })?;
    if keys_needed && !keys_given {
        return Err(Failure::service(ErrorCode::PropertiesNeedValue));
    }
    Ok(entity)
}

/// A delete names the version it deletes, or `*`.
pub(crate) fn missing_if_match() -> Failure {
    Failure::new(
        400,
        ErrorCode::Other("MissingRequiredHeader".into()),
        "An HTTP header that's mandatory for this request is not specified. (If-Match)",
    )
}

/// The OData version a request names: `MaxDataServiceVersion`, else `DataServiceVersion`, each
/// when it is text and not blank.
fn odata_version(headers: &HeaderMap) -> Option<&HeaderValue> {
    let named = |name| headers.get(name).filter(|v| v.to_str().is_ok_and(|text| !text.trim().is_empty()));
    named(MAX_DATA_SERVICE_VERSION).or_else(|| named(DATA_SERVICE_VERSION))
}

/// How the service writes the error answers of a request served at `version` with `headers`
/// (the storage emulator's protocol layer, decompiled): the form [`error_format`] picks from
/// `Accept`, and a `DataServiceVersion` of the request's [`odata_version`], else `3.0`; XML
/// without `DataServiceVersion` before 2013-08-15.
pub(crate) fn error_style(headers: &HeaderMap, version: ServiceVersion) -> ErrorStyle {
    // Error answers follow `Accept` from the first version that writes JSON.
    if version < ServiceVersion::JSON_SINCE {
        return ErrorStyle { format: ErrorFormat::Xml, data_service_version: None };
    }
    ErrorStyle {
        format: error_format(headers.get_all(ACCEPT).iter().map(HeaderValue::as_bytes)),
        data_service_version: Some(
            odata_version(headers).cloned().unwrap_or(HeaderValue::from_static("3.0")),
        ),
    }
}

/// The form of an error body for the `Accept` values given: their media types are walked in
/// order (parameters aside, case ignored), and the first that is `application/json` gives
/// JSON, the first that is `application/xml` gives XML; none (`*/*`, no `Accept`) gives XML.
pub(crate) fn error_format<'a>(accept: impl IntoIterator<Item = &'a [u8]>) -> ErrorFormat {
    accept
        .into_iter()
        .flat_map(|value| value.split(|&b| b == b','))
        .find_map(|media_type| {
            if is_json(media_type) {
                Some(ErrorFormat::Json)
            } else if is_media_type(media_type, b"application/xml") {
                Some(ErrorFormat::Xml)
            } else {
                None
            }
        })
        .unwrap_or(ErrorFormat::Xml)
}

/// A header's value as text; `None` when absent or not visible ASCII/UTF-8. `name` is best a
/// [`HeaderName`] constant: a `&str` is parsed as a name on every call.
pub(crate) fn text_header(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use hyper::header::HeaderValue;

    use super::*;

    /// The verb of `method` with these `X-HTTP-Method` values, or the error code.
    fn verb(method: Method, tunnelled: &[&'static str]) -> Result<Verb, String> {
        let mut headers = HeaderMap::new();
        for value in tunnelled {
            headers.append(X_HTTP_METHOD, HeaderValue::from_static(value));
        }
        super::method(&method, Version::HTTP_11, &headers).map_err(|failure| failure.code.to_string())
    }

    #[test]
    fn a_post_stands_for_the_one_verb_it_tunnels() {
        assert_eq!(verb(Method::GET, &[]), Ok(Verb::Get));
        assert_eq!(verb(Method::POST, &[]), Ok(Verb::Post));
        assert_eq!(verb(Method::POST, &["MERGE"]), Ok(Verb::Merge));
        // The service tunnels MERGE, PUT and DELETE only.
        assert_eq!(verb(Method::POST, &["PATCH"]), Err("XMethodIncorrectValue".to_owned()));
        assert_eq!(verb(Method::PATCH, &[]), Ok(Verb::Merge));
        assert_eq!(verb(Method::POST, &["PUT"]), Ok(Verb::Put));
        assert_eq!(verb(Method::POST, &["DELETE"]), Ok(Verb::Delete));
        assert_eq!(verb(Method::GET, &["MERGE"]), Err("XMethodNotUsingPost".to_owned()));
        assert_eq!(verb(Method::POST, &["GET"]), Err("XMethodIncorrectValue".to_owned()));
        assert_eq!(verb(Method::POST, &["MERGE", "MERGE"]), Err("XMethodIncorrectCount".to_owned()));
        assert_eq!(verb(Method::GET, &["MERGE", "PUT"]), Err("XMethodIncorrectCount".to_owned()));
        let unknown = Method::from_bytes(b"FETCH").unwrap_or_default();
        assert_eq!(verb(unknown, &["MERGE"]), Err("InvalidHttpVerb".to_owned()));
        let lower = Method::from_bytes(b"get").unwrap_or_default();
        assert_eq!(verb(lower, &[]), Err("InvalidHttpVerb".to_owned()));
    }

    /// The error form for these `Accept` values.
    fn format(accept: &[&str]) -> ErrorFormat {
        error_format(accept.iter().map(|value| value.as_bytes()))
    }

    #[test]
    fn the_first_json_or_xml_accept_type_picks_the_error_form() {
        assert_eq!(format(&[]), ErrorFormat::Xml);
        assert_eq!(format(&[""]), ErrorFormat::Xml);
        assert_eq!(format(&["*/*"]), ErrorFormat::Xml);
        assert_eq!(format(&["application/json"]), ErrorFormat::Json);
        assert_eq!(format(&["application/json;odata=nometadata"]), ErrorFormat::Json);
        assert_eq!(format(&[" Application/JSON ; odata=fullmetadata"]), ErrorFormat::Json);
        assert_eq!(format(&["application/xml"]), ErrorFormat::Xml);
        // In order: the first of the two named decides, types named neither are passed over.
        assert_eq!(format(&["*/*, application/json"]), ErrorFormat::Json);
        assert_eq!(format(&["text/html,application/xml;q=0.9,application/json"]), ErrorFormat::Xml);
        assert_eq!(format(&["application/json;q=0.1, application/xml"]), ErrorFormat::Json);
        assert_eq!(format(&["application/atom+xml", "application/json"]), ErrorFormat::Json);
        assert_eq!(format(&["application/xml", "application/json"]), ErrorFormat::Xml);
        // A type is compared whole, not searched for.
        assert_eq!(format(&["application/jsonx, text/application/json"]), ErrorFormat::Xml);
    }

    #[test]
    fn verbose_json_is_an_odata_parameter_of_a_json_type_wherever_it_stands() {
        for verbose in [
            "application/json;odata=verbose",
            "application/json; charset=utf-8;ODATA=Verbose",
            "application/json;odata=\" verbose \"",
            // A later parameter counts as well.
            "application/json;odata=nometadata;odata=verbose",
            // The word is the value's start, as the service matches it.
            "application/json;odata=verboseness",
        ] {
            assert!(is_verbose_json(verbose.as_bytes()), "{verbose}");
        }
        for other in [
            "application/json",
            "application/json;odata=minimalmetadata",
            "application/json;",
            "application/json;odata=",
            "application/json;odata=verb",
            "application/json odata=verbose",
            "application/json;xodata=verbose",
            "application/json;odata=\"verbose",
            "application/xml;odata=verbose",
        ] {
            assert!(!is_verbose_json(other.as_bytes()), "{other}");
        }
    }

    #[test]
    fn error_answers_name_the_odata_version_asked_for() {
        let style = |pairs: &[(&'static str, &'static str)], version: &'static str| {
            let mut headers = HeaderMap::new();
            for &(name, value) in pairs {
                headers.append(name, HeaderValue::from_static(value));
            }
            let known = ServiceVersion::known(version.as_bytes());
            let style = error_style(&headers, known.unwrap_or_else(|| panic!("{version} is not a version")));
            (style.format, style.data_service_version.map(|v| v.to_str().unwrap_or_default().to_owned()))
        };
        let json = [("accept", "application/json;odata=minimalmetadata")];
        assert_eq!(style(&json, "2019-02-02"), (ErrorFormat::Json, Some("3.0".to_owned())));
        let versions = [("maxdataserviceversion", "3.0;NetFx"), ("dataserviceversion", "1.0")];
        assert_eq!(style(&versions, "2019-02-02"), (ErrorFormat::Xml, Some("3.0;NetFx".to_owned())));
        let blank = [("maxdataserviceversion", " "), ("dataserviceversion", "2.0;")];
        assert_eq!(style(&blank, "2019-02-02").1, Some("2.0;".to_owned()));
        // Older versions are answered in XML whatever they accept.
        assert_eq!(style(&json, "2012-02-12"), (ErrorFormat::Xml, None));
        assert_eq!(style(&json, "2013-08-15").0, ErrorFormat::Json);
    }

    #[test]
    fn http_1_0_is_not_served() {
        let failure = check_version(Version::HTTP_10).err().map(|f| (f.status, f.code.to_string()));
        assert_eq!(failure, Some((505, "UnsupportedHttpVersion".to_owned())));
        assert!(check_version(Version::HTTP_11).is_ok());
        let headers = HeaderMap::new();
        let refused = super::method(&Method::GET, Version::HTTP_10, &headers).map_err(|f| f.status);
        assert_eq!(refused, Err(505));
    }
}
