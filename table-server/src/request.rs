//! One request as the table, entity and batch operations see it: the [`Call`] (engine,
//! account, headers, query, body, SAS grant), its [`Verb`], why it may get no success answer
//! ([`Refused`]), and the request-reading helpers the single operations and `$batch` parts
//! share.

use bytes::Bytes;
use hyper::Method;
use hyper::header::{ACCEPT, AsHeaderName, CONTENT_TYPE, HeaderMap, HeaderName, IF_MATCH};
use table_client::wire::decode_request_entity;
use table_core::engine::Engine;
use table_core::{ETag, Entity, Error, ErrorCode, IfMatch, Operation, Violation};

use crate::answer::{Failure, Metadata};
use crate::json::Links;
use crate::route::Query;
use crate::sas::Grant;

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

/// The verb of a request: its method, or for a `POST` the `X-HTTP-Method` it carries (how
/// older clients send `MERGE`, `PUT` and `DELETE` through proxies that only pass `POST`).
pub(crate) fn method(method: &Method, headers: &HeaderMap) -> Result<Verb, Failure> {
    let mut tunnelled = headers.get_all(X_HTTP_METHOD).iter();
    let verb = match (tunnelled.next(), tunnelled.next()) {
        (None, _) => method.as_str(),
        (Some(_), None) if method != Method::POST => {
            return Err(Failure::new(
                400,
                ErrorCode::Other("XMethodNotUsingPost".into()),
                "The request uses X-HTTP-Method with an HTTP verb other than POST.",
            ));
        }
        (Some(value), None) => match value.to_str() {
            Ok(v @ ("MERGE" | "PUT" | "DELETE" | "PATCH")) => v,
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
    /// What the request's table SAS allows; `None`: the account key's full rights.
    pub(crate) grant: Option<&'a Grant>,
}

impl Call<'_> {
    /// The metadata level the answer is written in: `$format`, else `Accept`. Refused with
    /// 415 `AtomFormatNotSupported` when neither asks for JSON (the service no longer writes
    /// Atom).
    pub(crate) fn metadata(&self) -> Result<Metadata, Failure> {
        let asked = self.query.get("$format").or_else(|| text_header(self.headers, ACCEPT)).unwrap_or("");
        Metadata::from_accept(asked).ok_or_else(atom_not_supported)
    }

    /// The body of a request that sends JSON (a table to create, an entity to write), refused
    /// as the service refuses a body that does not say its type (400 `InvalidInput`,
    /// "Content-Type header value missing.", as an SDK thread shows it answering a table create)
    /// and an Atom body (415 `AtomFormatNotSupported`, as for an Atom `Accept`). `$batch`
    /// checks its own multipart type.
    pub(crate) fn json_body(&self) -> Result<&[u8], Failure> {
        let content_type = self.headers.get(CONTENT_TYPE).map_or(&[][..], |value| value.as_bytes());
        if content_type.is_empty() {
            return Err(Failure::new(400, ErrorCode::InvalidInput, "Content-Type header value missing."));
        }
        let media_type = content_type.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
        if media_type.eq_ignore_ascii_case(b"application/atom+xml") {
            return Err(atom_not_supported());
        }
        Ok(self.body)
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

/// The service no longer reads or writes Atom: 415 `AtomFormatNotSupported`.
fn atom_not_supported() -> Failure {
    Failure::new(415, ErrorCode::Other("AtomFormatNotSupported".into()), "Atom format is not supported.")
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
        super::method(&method, &headers).map_err(|failure| failure.code.to_string())
    }

    #[test]
    fn a_post_stands_for_the_one_verb_it_tunnels() {
        assert_eq!(verb(Method::GET, &[]), Ok(Verb::Get));
        assert_eq!(verb(Method::POST, &[]), Ok(Verb::Post));
        assert_eq!(verb(Method::POST, &["MERGE"]), Ok(Verb::Merge));
        assert_eq!(verb(Method::POST, &["PATCH"]), Ok(Verb::Merge));
        assert_eq!(verb(Method::POST, &["DELETE"]), Ok(Verb::Delete));
        assert_eq!(verb(Method::GET, &["MERGE"]), Err("XMethodNotUsingPost".to_owned()));
        assert_eq!(verb(Method::POST, &["GET"]), Err("XMethodIncorrectValue".to_owned()));
        assert_eq!(verb(Method::POST, &["MERGE", "MERGE"]), Err("XMethodIncorrectCount".to_owned()));
        assert_eq!(verb(Method::GET, &["MERGE", "PUT"]), Err("XMethodIncorrectCount".to_owned()));
    }
}
