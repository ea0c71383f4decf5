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

use chrono::{DateTime, Utc};
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
                // This client sends no Content-MD5.
                let to_sign = shared_key_string_to_sign(key.account(), method, url, "", content_type, date)?;
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

#[doc(hidden)]
pub use table_core::datetime::http_date;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_requests_debug_shows_the_bearer_scheme_only() {
        let signed = authorize_bearer("https://h/t", "date", "Bearer eyJhbGciOi.eyJhdWQi.c2ln".to_owned());
        let printed = format!("{signed:?}");
        assert!(printed.contains("Bearer <redacted>"), "{printed}");
        assert!(!printed.contains("eyJ"), "{printed}");
    }
}
