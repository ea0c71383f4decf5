//! SharedKey and SharedKeyLite verification (protocol doc sections 2.1 and 2.2), with the
//! client's own canonicalizer (`table_client::auth::shared_key_string_to_sign`): the server
//! rebuilds the string the client signed from the request as received and checks the
//! signature with the account's key, in constant time.
//!
//! The request date (`x-ms-date`, else `Date`) must be an RFC 1123 date within 15 minutes of
//! the server's clock, as the service demands, so a captured request cannot be replayed later.

use chrono::{DateTime, TimeDelta, Utc};
use table_client::auth::{shared_key_lite_string_to_sign, shared_key_string_to_sign};
use table_core::ErrorCode;

use crate::accounts::Keys;
use crate::answer::Failure;

/// How far the request date may be from the server's clock.
const MAX_CLOCK_SKEW: TimeDelta = TimeDelta::minutes(15);

/// The parts of a request that a signature covers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signed<'a> {
    pub(crate) method: &'a str,
    /// The path and query exactly as received (percent-encoding kept).
    pub(crate) path_and_query: &'a str,
    pub(crate) content_type: &'a str,
    /// `x-ms-date`, else `Date`.
    pub(crate) date: Option<&'a str>,
    pub(crate) authorization: Option<&'a str>,
}

fn failed(why: &str) -> Failure {
    let service = Failure::service(ErrorCode::AuthenticationFailed);
    Failure { message: format!("{}\n{why}", service.message), ..service }
}

/// Checks that `request` is signed with one of `keys` (whose account the path names) at `now`.
pub(crate) fn verify(keys: &Keys, request: Signed<'_>, now: DateTime<Utc>) -> Result<(), Failure> {
    let authorization =
        request.authorization.ok_or_else(|| failed("The request carries no Authorization header."))?;
    let (scheme, credentials) =
        authorization.split_once(' ').ok_or_else(|| failed("The Authorization header is malformed."))?;
    let (account, signature) =
        credentials.split_once(':').ok_or_else(|| failed("The Authorization header is malformed."))?;
    if account != keys.account() {
        return Err(failed("The Authorization header names another account."));
    }
    let date = request.date.ok_or_else(|| failed("The request carries neither x-ms-date nor Date."))?;
    let sent = DateTime::parse_from_rfc2822(date)
        .map_err(|_| failed("The request date is not an RFC 1123 date."))?
        .with_timezone(&Utc);
    if (now - sent).abs() > MAX_CLOCK_SKEW {
        return Err(failed("The request date is more than 15 minutes from the server's clock."));
    }
    let string_to_sign = match scheme {
        "SharedKey" => shared_key_string_to_sign(
            account,
            request.method,
            request.path_and_query,
            request.content_type,
            date,
        ),
        "SharedKeyLite" => shared_key_lite_string_to_sign(account, request.path_and_query, date),
        _ => return Err(failed("The Authorization scheme is neither SharedKey nor SharedKeyLite.")),
    }
    .map_err(|_| failed("The request path cannot be signed."))?;
    if keys.verify(&string_to_sign, signature) {
        Ok(())
    } else {
        Err(failed("The signature does not match the request."))
    }
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

    #[test]
    fn anything_else_fails_with_authentication_failed() {
        let good = Signed {
            method: "POST",
            path_and_query: "/devstoreaccount1/QryProbe",
            content_type: "application/json",
            date: Some(DATE),
            authorization: Some("SharedKey devstoreaccount1:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw="),
        };
        let now = at(DATE);
        let bad = [
            Signed { authorization: None, ..good },
            Signed { authorization: Some("SharedKey"), ..good },
            Signed { authorization: Some("SharedKey devstoreaccount1"), ..good },
            Signed {
                authorization: Some("SharedKey other:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw="),
                ..good
            },
            Signed {
                authorization: Some("Bearer devstoreaccount1:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw="),
                ..good
            },
            Signed { authorization: Some("SharedKey devstoreaccount1:not base64!"), ..good },
            Signed { method: "PUT", ..good },
            Signed { path_and_query: "/devstoreaccount1/QryProbf", ..good },
            Signed { content_type: "application/json;odata=nometadata", ..good },
            Signed { date: None, ..good },
            Signed { date: Some("yesterday"), ..good },
        ];
        for request in bad {
            let failure = verify(&key(), request, now).err();
            assert_eq!(
                failure.map(|f| (f.status, f.code)),
                Some((403, ErrorCode::AuthenticationFailed)),
                "{request:?}"
            );
        }
        let late = now + TimeDelta::minutes(16);
        assert!(verify(&key(), good, late).is_err(), "a stale date is refused");
        assert!(verify(&key(), good, now + TimeDelta::minutes(14)).is_ok());
        assert_eq!(http_date(now), DATE);
    }
}
