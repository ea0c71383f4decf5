//! Request authorization: SharedKey, SharedKeyLite, shared access signatures, Microsoft Entra
//! ID bearer tokens, or none.
//!
//! The API is the [`Credential`] a client is built with, the SAS types that make and carry
//! tokens ([`TableSasBuilder`] for one table, [`AccountSasBuilder`] for the account,
//! [`SasToken`]), and the [`TokenCredential`] a client built with
//! [`TableServiceClientBuilder::token_credential`] gets bearer tokens from (with the
//! `azure-identity` feature, `AzureIdentityCredential` adapts the official Azure SDK's).
//! `Credential::authorize` turns the parts of a request that get signed into the URL to send
//! and the headers to add; it does no I/O, so the HTTP backend calls it right before sending,
//! with the exact URL string it sends and the `x-ms-date` it sends. It and the signing steps
//! under it are `#[doc(hidden)]`: public
//! only for the known-answer tests in `tests/wire_auth.rs`, not API.
//!
//! Invariant: no `Debug` output of this module contains an account key, a signature or a
//! bearer token.
//!
//! [`TableServiceClientBuilder::token_credential`]: crate::TableServiceClientBuilder::token_credential

mod account_sas;
#[cfg(feature = "azure-identity")]
mod azure_identity;
mod letters;
mod sas;
mod shared_key;
mod token;

#[cfg(feature = "azure-identity")]
pub use azure_identity::AzureIdentityCredential;

#[doc(hidden)]
pub use account_sas::AccountSasFields;
pub use account_sas::{
    AccountSasBuilder, AccountSasPermissions, AccountSasResourceTypes, AccountSasServices,
};
pub use sas::{DEFAULT_SAS_VERSION, SasProtocol, SasToken, TableSasBuilder, TableSasPermissions};
#[doc(hidden)]
pub use sas::{TableSasFields, parse_sas_time};
pub use shared_key::AccountKey;
#[doc(hidden)]
pub use shared_key::{shared_key_lite_string_to_sign, shared_key_string_to_sign};
pub use token::{AccessToken, STORAGE_SCOPE, TokenCredential, TokenError, TokenFuture};
pub(crate) use token::{TokenCache, says_token_expired};

use std::fmt;

use chrono::{DateTime, Datelike, Timelike, Utc};
use table_core::Result;

/// The header carrying the request date that SharedKey signs.
const DATE_HEADER: &str = "x-ms-date";
/// The header carrying a SharedKey signature.
const AUTHORIZATION_HEADER: &str = "Authorization";

/// How requests prove who sends them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Credential {
    /// `Authorization: SharedKey account:signature` (the full string to sign).
    SharedKey(AccountKey),
    /// `Authorization: SharedKeyLite account:signature` (date and resource only).
    SharedKeyLite(AccountKey),
    /// A SAS token appended to every URL; no `Authorization` header.
    Sas(SasToken),
    /// Nothing (a proxy or test server that authorizes on its own).
    Anonymous,
}

/// A request ready to send: the URL (with a SAS appended when that is the credential) and the
/// headers to add to it.
#[doc(hidden)]
#[derive(Clone, PartialEq, Eq)]
pub struct SignedRequest {
    /// The URL to send, unchanged except for an appended SAS token.
    pub url: String,
    /// Header names and values to add: always `x-ms-date`, plus `Authorization` for the
    /// SharedKey credentials.
    pub headers: Vec<(&'static str, String)>,
}

impl Credential {
    /// SharedKey with an account name and its base64 key (fails on bad base64).
    pub fn shared_key(account: impl Into<String>, base64_key: &str) -> Result<Self> {
        AccountKey::new(account, base64_key).map(Credential::SharedKey)
    }

    /// SharedKeyLite with an account name and its base64 key (fails on bad base64).
    pub fn shared_key_lite(account: impl Into<String>, base64_key: &str) -> Result<Self> {
        AccountKey::new(account, base64_key).map(Credential::SharedKeyLite)
    }

    /// A SAS token, with or without the leading `?` (fails without a `sig` parameter).
    pub fn sas(token: &str) -> Result<Self> {
        SasToken::parse(token).map(Credential::Sas)
    }

    /// Authorizes one request.
    ///
    /// `method` is the verb as sent (`GET`, `MERGE`, ...); `url` the exact absolute URL sent
    /// (its path, percent-encoding kept, is signed); `content_type` the exact `Content-Type`
    /// header or `""` when none is sent; `date` the `x-ms-date` value sent (see
    /// [`http_date`]). Fails with `InvalidInput` when a SharedKey credential gets a URL
    /// without a path it can sign, and with `Auth` when a SAS's own times say it is expired
    /// or not yet valid at `date`.
    #[doc(hidden)]
    pub fn authorize(
        &self,
        method: &str,
        url: &str,
        content_type: &str,
        date: &str,
    ) -> Result<SignedRequest> {
        let mut headers = vec![(DATE_HEADER, date.to_owned())];
        let url = match self {
            Credential::SharedKey(key) => {
                let to_sign = shared_key_string_to_sign(key.account(), method, url, content_type, date)?;
                let value = ["SharedKey ", key.account(), ":", &key.sign(&to_sign)].concat();
                headers.push((AUTHORIZATION_HEADER, value));
                url.to_owned()
            }
            Credential::SharedKeyLite(key) => {
                let to_sign = shared_key_lite_string_to_sign(key.account(), url, date)?;
                let value = ["SharedKeyLite ", key.account(), ":", &key.sign(&to_sign)].concat();
                headers.push((AUTHORIZATION_HEADER, value));
                url.to_owned()
            }
            Credential::Sas(token) => {
                // The date sent is the instant the token is judged at; one that does not read
                // leaves the judgement to the service.
                if let Ok(now) = DateTime::parse_from_rfc2822(date) {
                    token.check_valid_at(now.with_timezone(&Utc))?;
                }
                token.append_to(url)
            }
            Credential::Anonymous => url.to_owned(),
        };
        Ok(SignedRequest { url, headers })
    }
}

/// Authorizes one request with a bearer value (`Bearer <token>`, from a
/// [`TokenCredential`]): the URL unchanged, `x-ms-date` and `Authorization`.
pub(crate) fn authorize_bearer(url: &str, date: &str, bearer: String) -> SignedRequest {
    SignedRequest {
        url: url.to_owned(),
        headers: vec![(DATE_HEADER, date.to_owned()), (AUTHORIZATION_HEADER, bearer)],
    }
}

impl fmt::Debug for SignedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, String)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                if *name != AUTHORIZATION_HEADER {
                    return (*name, value.clone());
                }
                let shown = match (value.split_once(' '), value.split_once(':')) {
                    // `Bearer token`: the scheme only.
                    (Some(("Bearer", _)), _) => "Bearer <redacted>".to_owned(),
                    // `SharedKey account:signature`: the scheme and account only.
                    (_, Some((scheme_and_account, _))) => format!("{scheme_and_account}:<redacted>"),
                    _ => "<redacted>".to_owned(),
                };
                (*name, shown)
            })
            .collect();
        f.debug_struct("SignedRequest")
            .field("url", &sas::redact_signature(&self.url))
            .field("headers", &headers)
            .finish()
    }
}

/// An instant as an HTTP date (RFC 1123, `Mon, 01 Jan 2024 00:00:00 GMT`), the form of
/// `x-ms-date`.
#[doc(hidden)]
pub fn http_date(t: DateTime<Utc>) -> String {
    // Written byte by byte: every request signs a date, and `format!` with its padded
    // integers cost about 3.3k instructions per request under callgrind (this: about 1.1k).
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    // A leap second is second 59 with more than a second of nanoseconds: printed as 60.
    let second = t.second() + u32::from(t.nanosecond() >= 1_000_000_000);
    let mut date = String::with_capacity(29);
    date.push_str(DAYS[t.weekday().num_days_from_monday() as usize]);
    date.push_str(", ");
    push_padded(&mut date, t.day().into(), 2);
    date.push(' ');
    date.push_str(MONTHS[t.month0() as usize]);
    date.push(' ');
    push_padded(&mut date, t.year().into(), 4);
    for (separator, field) in [(' ', t.hour()), (':', t.minute()), (':', second)] {
        date.push(separator);
        push_padded(&mut date, field.into(), 2);
    }
    date.push_str(" GMT");
    date
}

/// Appends `n` as `format!("{n:0width$}")` writes it: zero-padded to `width` characters, a
/// minus sign counted in the width.
fn push_padded(out: &mut String, n: i64, width: usize) {
    let digits = n.unsigned_abs();
    let mut width = width;
    if n < 0 {
        out.push('-');
        width = width.saturating_sub(1);
    }
    let count = std::iter::successors(Some(digits), |d| (*d >= 10).then_some(d / 10)).count();
    out.extend(std::iter::repeat_n('0', width.saturating_sub(count)));
    for place in (0..count).rev() {
        let digit = (digits / 10u64.pow(place as u32) % 10) as u8;
        out.push(char::from(b'0' + digit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_read_as_rfc_1123() {
        // A leap second, a leap day, the first and last instants of years.
        let instants = [
            "2024-01-01T00:00:00Z",
            "2024-02-29T23:59:59.999Z",
            "1999-12-31T23:59:60.5Z",
            "2026-11-25T07:08:09Z",
            "0999-06-15T12:00:00Z",
            "9999-12-31T23:59:59Z",
        ];
        for text in instants {
            let t = DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc);
            assert_eq!(http_date(t), t.format("%a, %d %b %Y %H:%M:%S GMT").to_string(), "{text}");
        }
        assert_eq!(http_date(DateTime::from_timestamp(0, 0).unwrap()), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn padded_numbers_read_as_format_writes_them() {
        for n in [0, 7, 9, 10, 42, 999, 1000, 9999, 10_000, 262_143, -1, -42, -999, -1000, -262_144] {
            for width in [0, 2, 4] {
                let mut out = String::new();
                push_padded(&mut out, n, width);
                assert_eq!(out, format!("{n:0width$}"), "{n} in {width}");
            }
        }
    }

    #[test]
    fn a_signed_requests_debug_shows_the_bearer_scheme_only() {
        let signed = authorize_bearer("https://h/t", "date", "Bearer eyJhbGciOi.eyJhdWQi.c2ln".to_owned());
        let printed = format!("{signed:?}");
        assert!(printed.contains("Bearer <redacted>"), "{printed}");
        assert!(!printed.contains("eyJ"), "{printed}");
    }
}
