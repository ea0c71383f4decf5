//! Bearer tokens checked as Azurite's basic OAuth mode checks them: a JWT in
//! `Authorization: Bearer`, whose audience, issuer and lifetime (`nbf`, `exp`) are read and
//! checked. Its signature is NOT checked: this is an emulator for tests, and any token of the
//! right shape for the account passes. Bearer tokens are only taken over HTTPS, as the service
//! and our client require, and at a version that has them: from 2017-11-09 (the REST docs),
//! a request naming none being served at the oldest.

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::answer::Failure;
use crate::auth::authentication_failed as failed;
use crate::version::ServiceVersion;

/// The audiences of Azure Storage: its resource URL (with or without `/`) and its app id.
const STORAGE_AUDIENCES: [&str; 3] =
    ["https://storage.azure.com", "https://storage.azure.com/", "e406a681-f3d4-42a8-90b6-c2b029497af1"];

/// The claims read from the token.
#[derive(Debug, Deserialize)]
struct Claims {
    aud: String,
    iss: String,
    nbf: Option<i64>,
    exp: i64,
}

/// Whether `authorization` is a bearer token (then [`verify`] decides).
pub(crate) fn is_bearer(authorization: Option<&str>) -> bool {
    authorization.is_some_and(|a| a.starts_with("Bearer "))
}

/// Checks the bearer token of `authorization` for `account`, in a request served at `version`
/// and received over HTTPS or not, at `now`.
pub(crate) fn verify(
    authorization: &str,
    account: &str,
    version: ServiceVersion,
    https: bool,
    now: DateTime<Utc>,
) -> Result<(), Failure> {
    // Checked first: before 2017-11-09 the scheme itself is unknown, so nothing else about
    // the request is read. The reason is the service's own words (its blob answers' detail,
    // as seen in public reports of requests sent without `x-ms-version`).
    if version < ServiceVersion::BEARER_SINCE {
        return Err(failed("Authentication scheme Bearer is not supported in this version."));
    }
    if !https {
        return Err(failed("Bearer tokens are only accepted over HTTPS."));
    }
    let token = authorization.strip_prefix("Bearer ").unwrap_or("").trim();
    let mut parts = token.split('.');
    let (Some(_header), Some(payload), Some(_signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(failed("The bearer token is not a JWT."));
    };
    let json = URL_SAFE_NO_PAD
        .decode(payload)
        .or_else(|_| URL_SAFE.decode(payload))
        .map_err(|_| failed("The bearer token's claims are not base64url."))?;
    let claims: Claims =
        serde_json::from_slice(&json).map_err(|_| failed("The bearer token's claims are malformed."))?;
    let own = [
        format!("https://{account}.table.core.windows.net"),
        format!("https://{account}.table.core.windows.net/"),
    ];
    if !STORAGE_AUDIENCES.contains(&claims.aud.as_str()) && !own.contains(&claims.aud) {
        return Err(failed("The bearer token's audience is not Azure Storage nor this account."));
    }
    if !issuer_is_entra_id(&claims.iss) {
        return Err(failed("The bearer token's issuer is not Entra ID."));
    }
    let now = now.timestamp();
    if claims.nbf.is_some_and(|nbf| now < nbf) {
        return Err(failed("The bearer token is not valid yet."));
    }
    if now >= claims.exp {
        return Err(failed("The token is expired."));
    }
    Ok(())
}

/// `https://sts.windows.net/<tenant>/` (v1) or `https://login.microsoftonline.com/<tenant>/v2.0`.
fn issuer_is_entra_id(issuer: &str) -> bool {
    let tenant =
        |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if let Some(rest) = issuer.strip_prefix("https://sts.windows.net/") {
        return rest.strip_suffix('/').is_some_and(tenant);
    }
    if let Some(rest) = issuer.strip_prefix("https://login.microsoftonline.com/") {
        return rest.strip_suffix("/v2.0").is_some_and(tenant);
    }
    false
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;
    use table_core::ErrorCode;

    use super::*;

    const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";

    fn token(claims: &serde_json::Value) -> String {
        let part = |v: &serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "Bearer {}.{}.{}",
            part(&json!({"alg": "HS256"})),
            part(claims),
            URL_SAFE_NO_PAD.encode("sig")
        )
    }

    fn claims(aud: &str, iss: &str, nbf: i64, exp: i64) -> serde_json::Value {
        json!({ "aud": aud, "iss": iss, "nbf": nbf, "exp": exp })
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_750_000_000, 0).unwrap_or_default()
    }

    /// A version with bearer tokens.
    const BEARER: ServiceVersion = ServiceVersion::BEARER_SINCE;

    fn check(claims: &serde_json::Value) -> Result<(), Failure> {
        verify(&token(claims), "devstoreaccount1", BEARER, true, now())
    }

    #[test]
    fn audience_issuer_and_lifetime_are_checked() {
        let t = now().timestamp();
        let v1 = format!("https://sts.windows.net/{TENANT}/");
        let v2 = format!("https://login.microsoftonline.com/{TENANT}/v2.0");
        for (aud, iss) in [
            ("https://storage.azure.com", v1.as_str()),
            ("https://storage.azure.com/", v2.as_str()),
            ("https://devstoreaccount1.table.core.windows.net", v1.as_str()),
        ] {
            assert_eq!(check(&claims(aud, iss, t - 60, t + 60)), Ok(()), "{aud} {iss}");
        }
        let refused = [
            claims("https://vault.azure.net", &v1, t - 60, t + 60),
            claims("https://other.table.core.windows.net", &v1, t - 60, t + 60),
            claims("https://storage.azure.com", "https://evil.example/", t - 60, t + 60),
            claims("https://storage.azure.com", "https://sts.windows.net//", t - 60, t + 60),
            claims("https://storage.azure.com", &v1, t + 60, t + 120),
            claims("https://storage.azure.com", &v1, t - 120, t),
            json!({ "aud": "https://storage.azure.com", "iss": v1 }),
        ];
        for claims in refused {
            let code = check(&claims).err().map(|f| (f.status, f.code));
            assert_eq!(code, Some((403, ErrorCode::AuthenticationFailed)), "{claims}");
        }
        let good = token(&claims("https://storage.azure.com", &v1, t - 60, t + 60));
        assert!(verify(&good, "devstoreaccount1", BEARER, false, now()).is_err(), "HTTPS only");
    }

    #[test]
    fn versions_before_2017_11_09_have_no_bearer_tokens() {
        let t = now().timestamp();
        let good = token(&claims(
            "https://storage.azure.com",
            &format!("https://sts.windows.net/{TENANT}/"),
            t - 60,
            t + 60,
        ));
        let at = |version: &str| {
            let version = ServiceVersion::known(version.as_bytes()).unwrap_or_else(|| panic!("{version}"));
            verify(&good, "devstoreaccount1", version, true, now()).map_err(|f| (f.status, f.code, f.message))
        };
        assert_eq!(at("2017-11-09"), Ok(()));
        assert_eq!(at("2020-12-06"), Ok(()));
        for old in ["2017-07-29", "2013-08-15", "2008-10-27"] {
            let refused = at(old).err();
            let (status, code, message) = refused.unwrap_or_else(|| panic!("{old} took a bearer token"));
            assert_eq!((status, code), (403, ErrorCode::AuthenticationFailed), "{old}");
            assert!(
                message.ends_with("\nAuthentication scheme Bearer is not supported in this version."),
                "{message}"
            );
        }
        // Named before the HTTPS rule, which a request at an old version never reaches.
        let plain = verify(&good, "devstoreaccount1", ServiceVersion::DEFAULT, false, now()).err();
        assert!(plain.is_some_and(|f| f.message.ends_with("not supported in this version.")));
    }

    #[test]
    fn malformed_tokens_are_refused() {
        for bad in ["Bearer ", "Bearer a.b", "Bearer a.b.c.d", "Bearer a.!!.c", "Bearer a.e30.c"] {
            assert!(verify(bad, "devstoreaccount1", BEARER, true, now()).is_err(), "{bad}");
        }
    }

    proptest! {
        /// Any header is refused or accepted, never a panic.
        #[test]
        fn any_header_is_read_without_panic(text in ".{0,300}") {
            let _ = verify(&format!("Bearer {text}"), "devstoreaccount1", BEARER, true, now());
        }
    }
}
