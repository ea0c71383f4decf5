//! SharedKey and SharedKeyLite verification (protocol doc sections 2.1 and 2.2), with the
//! client's own canonicalizer (`table_client::auth::shared_key_string_to_sign`): the server
//! rebuilds the string the client signed from the request as received and checks the
//! signature with the account's key, in constant time. Also the constructors of the
//! authentication failures every scheme shares (SAS and bearer tokens too).
//!
//! The checks and their order are the service's (its protocol layer, decompiled): the
//! header's form (`SCHEME ACCOUNT:SIGNATURE`, else 400 `InvalidAuthenticationInfo`), a request
//! date (`x-ms-date`, else `Date`) that is an RFC 1123 date no more than 15 minutes old (a date
//! in the future is not refused: the service only guards against replays), the scheme
//! (`SharedKey` or `SharedKeyLite`, in any case), the account, a base64 signature (else 400
//! `InvalidAuthenticationInfo`), then the signature itself. Every other failure is 403
//! `AuthenticationFailed`, its reason (the service's `AuthenticationErrorDetail`) on the
//! message's second line.

use chrono::{DateTime, TimeDelta, Utc};
use hyper::header::{AUTHORIZATION, DATE, HeaderMap, HeaderName};
use table_client::auth::{shared_key_lite_string_to_sign, shared_key_string_to_sign};
use table_core::ErrorCode;

use crate::accounts::Keys;
use crate::answer::{Failure, X_MS_DATE};

/// `Content-MD5`, which a SharedKey signature covers as sent.
pub(crate) const CONTENT_MD5: HeaderName = HeaderName::from_static("content-md5");

/// How old the request date may be.
const MAX_REQUEST_AGE: TimeDelta = TimeDelta::minutes(15);

/// The parts of a request that a signature covers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signed<'a> {
    pub(crate) method: &'a str,
    /// The path and query exactly as received (percent-encoding kept).
    pub(crate) path_and_query: &'a str,
    /// `Content-MD5` as sent, empty when not sent (signed by SharedKey, not SharedKeyLite).
    pub(crate) content_md5: &'a str,
    pub(crate) content_type: &'a str,
    /// `x-ms-date`, else `Date`.
    pub(crate) date: Option<&'a str>,
    pub(crate) authorization: Option<&'a str>,
}

/// 403 `AuthenticationFailed`, `why` on the message's second line. The service writes only
/// the first line in a table's error body, JSON or XML: its `AuthenticationErrorDetail`
/// element is in blob and queue `<Error>` bodies, and the Table service's OData error
/// writers leave it out (the storage emulator's protocol layer, decompiled; the service's
/// JSON answers seen in SDK issue threads carry the first line alone). The reason is kept
/// on a second line, deliberately: the body is the only place a caller can read it.
pub(crate) fn authentication_failed(why: &str) -> Failure {
    let service = Failure::service(ErrorCode::AuthenticationFailed);
    Failure { message: format!("{}\n{why}", service.message), ..service }
}

/// 400 `InvalidAuthenticationInfo`: the credentials are not in a form that can be checked.
pub(crate) fn invalid_authentication_info(why: &str) -> Failure {
    Failure::new(
        400,
        ErrorCode::Other("InvalidAuthenticationInfo".to_owned()),
        format!(
            "Authentication information is not given in the correct format. Check the value of \
             Authorization header.\n{why}"
        ),
    )
}

/// The `Authorization` header, `None` when there is none; 400 `InvalidAuthenticationInfo`
/// when it is given twice or is not ASCII text, as the service refuses it.
pub(crate) fn authorization(headers: &HeaderMap) -> Result<Option<&str>, Failure> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    match (values.next(), values.next()) {
        (None, _) => Ok(None),
        (Some(_), Some(_)) => Err(invalid_authentication_info("The Authorization header is given twice.")),
        (Some(value), None) => value
            .to_str()
            .map(Some)
            .map_err(|_| invalid_authentication_info("The Authorization header is not ASCII text.")),
    }
}

/// The request date: `x-ms-date` when given, else `Date`. A header that is not text reads as
/// `""`, which is then refused as not a date (rather than as a missing date, or in favour of
/// `Date`).
pub(crate) fn request_date(headers: &HeaderMap) -> Option<&str> {
    headers.get(X_MS_DATE).or_else(|| headers.get(DATE)).map(|value| value.to_str().unwrap_or(""))
}

/// Checks that `request` is signed with one of `keys` (whose account the path names) at `now`.
pub(crate) fn verify(keys: &Keys, request: Signed<'_>, now: DateTime<Utc>) -> Result<(), Failure> {
    let authorization = request
        .authorization
        .ok_or_else(|| authentication_failed("The request carries no Authorization header."))?;
    let malformed =
        || invalid_authentication_info("The Authorization header is not SCHEME ACCOUNT:SIGNATURE.");
    let (scheme, credentials) = authorization.split_once(' ').ok_or_else(malformed)?;
    let date = request
        .date
        .ok_or_else(|| authentication_failed("The request carries neither x-ms-date nor Date."))?;
    let sent = DateTime::parse_from_rfc2822(date)
        .map_err(|_| authentication_failed("The request date is not an RFC 1123 date."))?
        .with_timezone(&Utc);
    if sent < now - MAX_REQUEST_AGE {
        return Err(authentication_failed("The request date is more than 15 minutes old."));
    }
    let lite = if scheme.eq_ignore_ascii_case("SharedKey") {
        false
    } else if scheme.eq_ignore_ascii_case("SharedKeyLite") {
        true
    } else {
        return Err(authentication_failed(
            "The Authorization scheme is neither SharedKey nor SharedKeyLite.",
        ));
    };
    // As the service reads it: empty pieces between colons do not count.
    let mut pieces = credentials.split(':').filter(|piece| !piece.is_empty());
    let (Some(account), Some(signature), None) = (pieces.next(), pieces.next(), pieces.next()) else {
        return Err(malformed());
    };
    if account != keys.account() {
        return Err(authentication_failed("The Authorization header names another account."));
    }
    let string_to_sign = if lite {
        shared_key_lite_string_to_sign(account, request.path_and_query, date)
    } else {
        shared_key_string_to_sign(
            account,
            request.method,
            request.path_and_query,
            request.content_md5,
            request.content_type,
            date,
        )
    }
    .map_err(|_| authentication_failed("The request path cannot be signed."))?;
    let signature = decode_base64(signature)
        .ok_or_else(|| invalid_authentication_info("The signature is not base64."))?;
    if keys.verify(&string_to_sign, &signature) {
        Ok(())
    } else {
        Err(authentication_failed("The signature does not match the request."))
    }
}

/// The bytes of `text` in standard (padded) base64; `None` when it is not base64. Signatures
/// are decoded once, here, before any key is tried.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use table_client::auth::{AccountKey, http_date};

    use super::*;
    use crate::accounts::{DEV_ACCOUNT, DEV_KEY};

    fn key() -> Keys {
        Keys::new(AccountKey::new(DEV_ACCOUNT, DEV_KEY).expect("the development key decodes"), None)
    }

    fn at(date: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc2822(date).map(|d| d.with_timezone(&Utc)).unwrap_or_default()
    }

    const DATE: &str = "Mon, 01 Jan 2024 00:00:00 GMT";

    /// The GET of protocol doc section 2.1, signed with the development key.
    fn reference_get() -> Signed<'static> {
        Signed {
            method: "GET",
            path_and_query: "/devstoreaccount1/QryProbe(PartitionKey='p',RowKey='01')",
            content_md5: "",
            content_type: "",
            date: Some(DATE),
            authorization: Some("SharedKey devstoreaccount1:l3JirZVDQJsEuAXVB5v/kosm7wNFnDqrT5MbJcDTdjU="),
        }
    }

    /// The worked examples of protocol doc sections 2.1 and 2.2 (accepted by Azurite).
    #[test]
    fn the_reference_signatures_verify() {
        let get = reference_get();
        assert_eq!(verify(&key(), get, at(DATE)), Ok(()));
        let post = Signed {
            method: "POST",
            path_and_query: "/devstoreaccount1/QryProbe",
            content_type: "application/json",
            authorization: Some("SharedKey devstoreaccount1:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw="),
            ..get
        };
        assert_eq!(verify(&key(), post, at(DATE)), Ok(()));
        let lite = Signed {
            path_and_query: "/devstoreaccount1/Tables?$top=1",
            authorization: Some(
                "SharedKeyLite devstoreaccount1:13UOPPE/P1+LLsRFYJCHphuPCEQ21EO/4WbbW+OXG4U=",
            ),
            ..get
        };
        assert_eq!(verify(&key(), lite, at(DATE)), Ok(()));
    }

    /// Either of the account's keys signs; a key of the same name that is neither does not.
    #[test]
    fn the_secondary_key_signs_too() {
        let get = reference_get();
        let other = || AccountKey::new(DEV_ACCOUNT, "b3RoZXI=").expect("valid base64");
        let dev = || AccountKey::new(DEV_ACCOUNT, DEV_KEY).expect("the development key decodes");
        assert_eq!(verify(&Keys::new(other(), Some(dev())), get, at(DATE)), Ok(()));
        assert_eq!(verify(&Keys::new(dev(), Some(other())), get, at(DATE)), Ok(()));
        let neither = verify(&Keys::new(other(), Some(other())), get, at(DATE));
        assert_eq!(neither.map_err(|f| f.status), Err(403));
    }

    fn good() -> Signed<'static> {
        Signed {
            method: "POST",
            path_and_query: "/devstoreaccount1/QryProbe",
            content_md5: "",
            content_type: "application/json",
            date: Some(DATE),
            authorization: Some("SharedKey devstoreaccount1:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw="),
        }
    }

    fn code(request: Signed<'_>, now: DateTime<Utc>) -> Option<(u16, String)> {
        verify(&key(), request, now).err().map(|f| (f.status, f.code.to_string()))
    }

    #[test]
    fn anything_else_fails_with_authentication_failed() {
        let good = good();
        let now = at(DATE);
        let bad = [
            Signed { authorization: None, ..good },
            Signed {
                authorization: Some("SharedKey other:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw="),
                ..good
            },
            Signed {
                authorization: Some("Bearer devstoreaccount1:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw="),
                ..good
            },
            Signed { method: "PUT", ..good },
            Signed { path_and_query: "/devstoreaccount1/QryProbf", ..good },
            Signed { content_type: "application/json;odata=nometadata", ..good },
            Signed { date: None, ..good },
            Signed { date: Some("yesterday"), ..good },
        ];
        for request in bad {
            assert_eq!(code(request, now), Some((403, "AuthenticationFailed".to_owned())), "{request:?}");
        }
        assert_eq!(http_date(now), DATE);
    }

    /// The service reads the header as `SCHEME ACCOUNT:SIGNATURE` before anything else, and
    /// answers a header it cannot read, or a signature that is not base64, with a 400.
    #[test]
    fn an_unreadable_header_or_signature_is_invalid_authentication_info() {
        let good = good();
        let invalid = Some((400, "InvalidAuthenticationInfo".to_owned()));
        for authorization in [
            "SharedKey",
            "SharedKey devstoreaccount1",
            "SharedKey devstoreaccount1:",
            "SharedKey devstoreaccount1:a:b",
            "SharedKey devstoreaccount1:not base64!",
        ] {
            let request = Signed { authorization: Some(authorization), ..good };
            assert_eq!(code(request, at(DATE)), invalid, "{authorization}");
        }
        // Empty pieces between the colons do not count, as the service splits the value.
        let doubled = "SharedKey devstoreaccount1::P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw=";
        assert_eq!(code(Signed { authorization: Some(doubled), ..good }, at(DATE)), None);
    }

    /// The scheme is read ignoring case, as the service parses it.
    #[test]
    fn the_scheme_is_read_ignoring_case() {
        let lower = "sharedkey devstoreaccount1:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw=";
        assert_eq!(code(Signed { authorization: Some(lower), ..good() }, at(DATE)), None);
    }

    /// A date more than 15 minutes old is refused; one ahead of the server's clock is not, as
    /// the service only refuses old dates (replays).
    #[test]
    fn only_a_date_more_than_15_minutes_old_is_refused() {
        let sent = at(DATE);
        let failed = Some((403, "AuthenticationFailed".to_owned()));
        assert_eq!(code(good(), sent + TimeDelta::minutes(16)), failed, "too old");
        assert_eq!(code(good(), sent + TimeDelta::minutes(14)), None);
        assert_eq!(code(good(), sent - TimeDelta::hours(2)), None, "from the future");
    }

    /// An Authorization header given twice or not text is 400 `InvalidAuthenticationInfo`,
    /// not "no Authorization header".
    #[test]
    fn the_authorization_header_is_read_once_and_as_text() {
        use hyper::header::HeaderValue;
        let code = |values: &[HeaderValue]| {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(AUTHORIZATION, value.clone());
            }
            authorization(&headers).map(|v| v.map(str::to_owned)).map_err(|f| (f.status, f.code.to_string()))
        };
        let invalid = Err((400, "InvalidAuthenticationInfo".to_owned()));
        assert_eq!(code(&[]), Ok(None));
        assert_eq!(code(&[HeaderValue::from_static("SharedKey a:b")]), Ok(Some("SharedKey a:b".to_owned())));
        let twice = [HeaderValue::from_static("SharedKey a:b"), HeaderValue::from_static("SharedKey a:b")];
        assert_eq!(code(&twice), invalid);
        let latin1 = HeaderValue::from_bytes(b"SharedKey \xe9:b").unwrap_or(HeaderValue::from_static(""));
        assert_eq!(code(&[latin1]), invalid);
    }

    /// `x-ms-date` wins over `Date` even when it is not text, and is then refused as not a date.
    #[test]
    fn an_unreadable_x_ms_date_is_not_a_date_rather_than_missing() {
        use hyper::header::HeaderValue;
        let mut headers = HeaderMap::new();
        assert_eq!(request_date(&headers), None);
        headers.insert(hyper::header::DATE, HeaderValue::from_static(DATE));
        assert_eq!(request_date(&headers), Some(DATE));
        let latin1 = HeaderValue::from_bytes(b"Mon, 01 Jan 2024 00:00:00 GM\xc9")
            .unwrap_or(HeaderValue::from_static(""));
        headers.insert(X_MS_DATE, latin1);
        let date = request_date(&headers);
        assert_eq!(date, Some(""));
        let refused = verify(&key(), Signed { date, ..good() }, at(DATE)).err().map(|f| f.message);
        assert!(refused.is_some_and(|m| m.ends_with("The request date is not an RFC 1123 date.")));
    }

    /// SharedKey signs `Content-MD5` when one is sent, as the service does.
    #[test]
    fn a_content_md5_sent_is_signed() {
        let md5 = "1B2M2Y8AsgTpgAmY7PhCfg==";
        let to_sign = "POST\n1B2M2Y8AsgTpgAmY7PhCfg==\napplication/json\nMon, 01 Jan 2024 00:00:00 GMT\n/devstoreaccount1/devstoreaccount1/QryProbe";
        let signature = AccountKey::new(DEV_ACCOUNT, DEV_KEY).map(|k| k.sign(to_sign)).unwrap_or_default();
        let header = format!("SharedKey devstoreaccount1:{signature}");
        let signed = Signed { content_md5: md5, authorization: Some(&header), ..good() };
        assert_eq!(code(signed, at(DATE)), None);
        let failed = Some((403, "AuthenticationFailed".to_owned()));
        assert_eq!(code(Signed { content_md5: "", ..signed }, at(DATE)), failed);
        assert_eq!(code(Signed { content_md5: md5, ..good() }, at(DATE)), failed);
    }
}
