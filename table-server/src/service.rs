//! One request, from bytes to answer: the version it is served at (read once, with the
//! query, since every answer names it), the body read within the service's limit, the
//! account, the signature, then the operation. Every refusal is the service's error answer;
//! only an injected fault that loses its answer closes the connection instead.

use std::sync::Arc;

use bytes::Bytes;
use chrono::Utc;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body as _, Incoming};
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderMap, HeaderValue};
use hyper::http::request::Parts;
use hyper::{Request, Response};
use table_core::{CorsRule, ErrorCode, MAX_BATCH_BODY};

use crate::accounts::{Account, Accounts};
use crate::answer::{Answer, Body, Common, Failure, RequestId, X_MS_CLIENT_REQUEST_ID, X_MS_VERSION};
use crate::auth::{self, Signed};
use crate::bearer;
use crate::cors;
use crate::operations;
use crate::request::{self, Call, Refused, text_header};
use crate::route::{Query, SECONDARY_SUFFIX, invalid_uri, parse_path, split_account};
use crate::sas::{self, Origin};
use crate::version::{self, ServiceVersion};

/// The largest request body: the service's 4 MiB limit of a `$batch`, which no other request
/// needs to exceed (an entity is at most 1 MiB).
pub(crate) const MAX_REQUEST_BODY: usize = MAX_BATCH_BODY;

/// The longest `x-ms-client-request-id` echoed (the service's limit, 1 KiB).
const MAX_CLIENT_REQUEST_ID: usize = 1024;

/// Serves the accounts.
#[derive(Debug)]
pub(crate) struct Service {
    accounts: Accounts,
    auth: bool,
}

impl Service {
    pub(crate) fn new(accounts: Accounts, auth: bool) -> Service {
        Service { accounts, auth }
    }

    /// Answers one request.
    pub(crate) async fn handle(
        &self,
        request: Request<Incoming>,
        origin: Origin,
    ) -> Result<Response<Body>, Dropped> {
        let (parts, body) = request.into_parts();
        // Read once, here: every answer names the version served, which both decide; refused
        // (when either is bad) in the service's order by `answer`.
        let query = Query::parse(parts.uri.query().unwrap_or(""));
        let versions = Versions::read(&parts.headers, &query);
        let common = common(&parts.headers, versions.served());
        // Only a browser's request (one with `Origin`) gets CORS headers.
        let cors = cors::ActualRequest::of(&parts.method, &parts.headers);
        let answer = match self.answer(&parts, body, origin, &common, &versions, &query).await {
            Ok(answer) => answer,
            Err(Refused::Failure(failure)) => {
                // Read for a failure only, which most requests are not.
                let style = request::error_style(&parts.headers, common.version);
                Answer::failure(&failure, common.request_id.as_str(), &style)
            }
            Err(Refused::Dropped) => return Err(Dropped),
        };
        let mut response = answer.into_response(&common);
        if let Some(cors) = cors {
            cors.apply(&self.cors_rules(parts.uri.path()), response.headers_mut());
        }
        Ok(response)
    }

    /// The account a request names (its secondary location too when `method` reads); 400
    /// `InvalidUri` for an account not served here.
    fn account(&self, name: &str, method: &hyper::Method) -> Result<Arc<Account>, Failure> {
        // `{account}-secondary` names the account's read-only secondary location (where
        // clients ask for service statistics); the engine has one location, so it answers reads.
        let secondary = name.strip_suffix(SECONDARY_SUFFIX).filter(|_| method == hyper::Method::GET);
        let served = secondary.map_or(Some(name), Some).and_then(|name| self.accounts.get(name));
        served.ok_or_else(|| invalid_uri(&format!("the account {name:?} is not served here")))
    }

    /// The CORS rules of the account `path` names; none when it names no account served here,
    /// whose answer then gets no CORS headers.
    fn cors_rules(&self, path: &str) -> Vec<CorsRule> {
        // Named as a read, so that the secondary location's answers carry the account's rules.
        let account =
            split_account(path).ok().and_then(|(name, _)| self.account(name, &hyper::Method::GET).ok());
        account.map(|account| account.engine.cors_rules()).unwrap_or_default()
    }

    /// The answer to a request whose versions ([`Versions`]) and query were read
    /// by [`Service::handle`].
    async fn answer(
        &self,
        parts: &Parts,
        body: Incoming,
        origin: Origin,
        common: &Common,
        versions: &Versions,
        query: &Result<Query<'_>, Failure>,
    ) -> Result<Answer, Refused> {
        check_headers(&parts.headers)?;
        // Next the version (the storage emulator's protocol layer, decompiled: on every
        // request, SAS requests and preflights included, before the body is read).
        versions.check()?;
        let body = read_body(&parts.headers, body).await?;
        // A preflight names the account only, and is answered without authorization.
        if cors::is_preflight(&parts.method) {
            request::check_version(parts.version)?;
            let (name, _) = split_account(parts.uri.path())?;
            let account = self.account(name, &parts.method)?;
            return Ok(cors::preflight(&account.engine.cors_rules(), &parts.headers)?);
        }
        let path = parse_path(parts.uri.path())?;
        let query = query.as_ref().map_err(Failure::clone)?;
        let account = self.account(path.account, &parts.method)?;
        let mut grant = None;
        if self.auth {
            let authorization = auth::authorization(&parts.headers)?;
            if sas::carries_sas(query) {
                // The service refuses a request that carries both a SAS and an Authorization
                // header rather than choosing one of them.
                if parts.headers.contains_key(AUTHORIZATION) {
                    return Err(auth::invalid_authentication_info(
                        "The request carries both a shared access signature and an Authorization header.",
                    )
                    .into());
                }
                grant = Some(sas::verify(&account.keys, query, &account.engine, origin, Utc::now())?);
            } else if bearer::is_bearer(authorization) {
                let authorization = authorization.unwrap_or("");
                bearer::verify(authorization, path.account, common.version, origin.https, Utc::now())?;
            } else {
                let signed = Signed {
                    method: parts.method.as_str(),
                    path_and_query: parts.uri.path_and_query().map_or("/", |p| p.as_str()),
                    content_md5: text_header(&parts.headers, auth::CONTENT_MD5).unwrap_or(""),
                    content_type: text_header(&parts.headers, CONTENT_TYPE).unwrap_or(""),
                    date: auth::request_date(&parts.headers),
                    authorization,
                };
                auth::verify(&account.keys, signed, Utc::now())?;
            }
        }
        let host = text_header(&parts.headers, HOST).unwrap_or("127.0.0.1");
        let base = ["http://", host, "/", path.account].concat();
        let call = Call {
            engine: &account.engine,
            account: path.account,
            base: &base,
            method: request::method(&parts.method, parts.version, &parts.headers)?,
            headers: &parts.headers,
            query,
            body: &body,
            request_id: common.request_id.as_str(),
            version: common.version,
            grant: grant.as_ref(),
        };
        operations::dispatch(&call, &path.resource)
    }
}

/// The answer's common headers: a new request id, the version the request is served at, the
/// client's request id when it is a short printable value.
fn common(headers: &HeaderMap, version: ServiceVersion) -> Common {
    let printable = |v: &&HeaderValue| v.as_bytes().iter().all(|b| (b' '..=b'~').contains(b));
    Common {
        request_id: request_id(),
        version,
        client_request_id: headers
            .get(X_MS_CLIENT_REQUEST_ID)
            .filter(|v| v.len() <= MAX_CLIENT_REQUEST_ID)
            .filter(printable)
            .cloned(),
    }
}

/// A new request id in the service's form (a version 4 GUID): a random half drawn once per
/// process, and a count of the requests. Unique within the process, which is all a request id
/// is for (matching a server's log line), without asking the OS for random bytes per request.
fn request_id() -> RequestId {
    static PROCESS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let process = *PROCESS.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    let count = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let bytes = (u128::from(process) << 64 | u128::from(count)).to_be_bytes();
    RequestId::new(uuid::Builder::from_random_bytes(bytes).into_uuid())
}

/// The versions a request names, read once per request: every answer names the version it
/// is served at, and the request is refused first when one of them names no version.
struct Versions {
    /// The `x-ms-version` ([`requested_version`]).
    header: Result<Option<ServiceVersion>, Failure>,
    /// The SAS's, for a request with a SAS whose `sv` the service knows (an unknown `sv` is
    /// refused when the SAS is checked).
    sas: Option<sas::SasVersion>,
}

impl Versions {
    fn read(headers: &HeaderMap, query: &Result<Query<'_>, Failure>) -> Versions {
        Versions {
            header: requested_version(headers),
            sas: query.as_ref().ok().and_then(sas::SasVersion::of),
        }
    }

    /// The version the request is served at: a SAS request's (the REST docs,
    /// [`sas::SasVersion::served`]: its `api-version`, else its `sv`, its `x-ms-version`
    /// ignored), else `x-ms-version`, else [`ServiceVersion::DEFAULT`]. A version that is
    /// refused ([`check`](Self::check), or the SAS's own check) is passed over, so its answer is
    /// written at the next one in that order (the decompiled emulator's too: it answers as if
    /// none were given).
    fn served(&self) -> ServiceVersion {
        let header = || self.header.as_ref().ok().copied().flatten();
        self.sas.as_ref().map(sas::SasVersion::served).or_else(header).unwrap_or(ServiceVersion::DEFAULT)
    }

    /// The refusals, in the service's order (the storage emulator's protocol layer, decompiled):
    /// `x-ms-version` (400 `InvalidHeaderValue`), then a SAS's `api-version` (400
    /// `InvalidQueryParameterValue`).
    fn check(&self) -> Result<(), Failure> {
        self.header.as_ref().map_err(Failure::clone)?;
        self.sas.as_ref().map_or(Ok(()), sas::SasVersion::check)
    }
}

/// The request's `x-ms-version`: `None` when absent or empty (the service reads an empty one
/// as none), else the version it names; 400 `InvalidHeaderValue` for text that names no
/// version the service knows (the service's own test, exact text; one newer than its newest
/// included: the emulator alone answers that with its own `VersionNotSupportedByEmulator`),
/// or for the header given twice (the service reads the two as one value joined by a comma,
/// no version).
fn requested_version(headers: &HeaderMap) -> Result<Option<ServiceVersion>, Failure> {
    let mut values = headers.get_all(X_MS_VERSION).iter();
    match (values.next(), values.next()) {
        (None, _) => Ok(None),
        (Some(value), None) if value.is_empty() => Ok(None),
        (Some(value), None) => ServiceVersion::known(value.as_bytes()).map(Some).ok_or_else(|| {
            Failure::invalid_header_value(version::not_a_version("x-ms-version", value.to_str().ok()))
        }),
        (Some(_), Some(_)) => Err(Failure::invalid_header_value("x-ms-version is given twice")),
    }
}

/// The service's header limits: `x-ms-client-request-id` at most 1 KiB, refused with 400
/// `InvalidHeaderValue` beyond (it is then not echoed either).
fn check_headers(headers: &HeaderMap) -> Result<(), Failure> {
    let too_long = headers.get(X_MS_CLIENT_REQUEST_ID).is_some_and(|v| v.len() > MAX_CLIENT_REQUEST_ID);
    if too_long {
        return Err(Failure::invalid_header_value("x-ms-client-request-id is over 1 KiB"));
    }
    Ok(())
}

/// The whole body, refused with 413 `RequestBodyTooLarge` past [`MAX_REQUEST_BODY`] (before
/// any of it is read when `Content-Length` says so).
async fn read_body(headers: &HeaderMap, body: Incoming) -> Result<Bytes, Failure> {
    let too_large = || Failure::service(ErrorCode::RequestBodyTooLarge);
    let declared = text_header(headers, CONTENT_LENGTH).and_then(|n| n.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY as u64) {
        return Err(too_large());
    }
    // A request without a body (a get, a delete) has nothing to collect.
    if body.is_end_stream() {
        return Ok(Bytes::new());
    }
    match Limited::new(body, MAX_REQUEST_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(_) => Err(Failure::invalid_input("the request body could not be read")),
    }
}

/// A request answered by closing the connection (an injected fault that loses the answer).
#[derive(Debug)]
pub(crate) struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the answer was dropped")
    }
}

impl std::error::Error for Dropped {}
