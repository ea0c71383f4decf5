//! Microsoft Entra ID (OAuth 2.0) bearer tokens: the [`TokenCredential`] a client is built
//! with, the [`AccessToken`] it returns, and the cache every clone of a client shares.
//!
//! Invariants:
//! - no `Debug` output of this module contains a token (an [`AccessToken`] prints its expiry
//!   only);
//! - one credential call at a time per client: callers that find the cached token due for a
//!   refresh wait for the one refresh in flight and take its result (single-flight);
//! - a token the service refused as expired is replaced at most once per refusal: the caller
//!   names the token it sent, and a waiter that finds a newer one takes it without calling
//!   the credential again.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, TimeDelta, Utc};
use table_core::Result;

use crate::error;

/// The scope asked for unless [`TableServiceClientBuilder::token_scope`] says otherwise: Azure
/// Storage's audience. Cosmos DB Table endpoints use their own audience,
/// `https://cosmos.azure.com/.default`.
///
/// [`TableServiceClientBuilder::token_scope`]: crate::TableServiceClientBuilder::token_scope
pub const STORAGE_SCOPE: &str = "https://storage.azure.com/.default";

/// How long before its expiry a cached token is replaced (less for tokens that live less than
/// twice as long: then half their lifetime).
const REFRESH_AHEAD: TimeDelta = TimeDelta::minutes(5);

/// The error a [`TokenCredential`] fails with: any error, its message kept as the source of
/// the client's [`ErrorKind::Auth`](table_core::ErrorKind::Auth) error.
pub type TokenError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What [`TokenCredential::get_token`] returns: a boxed future, so the trait stays object safe.
pub type TokenFuture<'a> =
    Pin<Box<dyn Future<Output = std::result::Result<AccessToken, TokenError>> + Send + 'a>>;

/// Gets Microsoft Entra ID access tokens (OAuth 2.0 bearer tokens) for a set of scopes.
///
/// The client calls it when it has no token or its token is within 5 minutes of its expiry,
/// and once more when the service answers that the token sent has expired; all clones of a
/// client share one cache, and one call runs at a time. Implement it over your identity
/// library, or enable the `azure-identity` feature for `auth::AzureIdentityCredential`, which
/// adapts the official `azure_identity` credentials (managed identity, workload identity,
/// client secret, developer tools). Its `Debug` must not print secrets.
///
/// ```
/// use chrono::{TimeDelta, Utc};
/// use table_client::auth::{AccessToken, TokenCredential, TokenFuture};
///
/// #[derive(Debug)]
/// struct FixedToken;
///
/// impl TokenCredential for FixedToken {
///     fn get_token<'a>(&'a self, _scopes: &'a [&'a str]) -> TokenFuture<'a> {
///         Box::pin(async { Ok(AccessToken::new("eyJ...", Utc::now() + TimeDelta::hours(1))) })
///     }
/// }
/// ```
pub trait TokenCredential: Send + Sync + fmt::Debug {
    /// A token for `scopes` (the client asks for one scope, [`STORAGE_SCOPE`] by default).
    /// An error fails the request with [`ErrorKind::Auth`](table_core::ErrorKind::Auth), this
    /// error as its source.
    fn get_token<'a>(&'a self, scopes: &'a [&'a str]) -> TokenFuture<'a>;
}

impl<T: TokenCredential + ?Sized> TokenCredential for Arc<T> {
    fn get_token<'a>(&'a self, scopes: &'a [&'a str]) -> TokenFuture<'a> {
        (**self).get_token(scopes)
    }
}

/// An access token and the instant it expires. `Debug` prints the expiry, never the token.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    token: Arc<str>,
    expires_on: DateTime<Utc>,
}

impl AccessToken {
    /// A token (the bearer value, as sent after `Bearer `) that expires at `expires_on`.
    pub fn new(token: impl Into<String>, expires_on: DateTime<Utc>) -> Self {
        AccessToken { token: Arc::from(token.into()), expires_on }
    }

    /// The token itself. Keep it out of logs.
    pub fn secret(&self) -> &str {
        &self.token
    }

    /// When the token expires.
    pub fn expires_on(&self) -> DateTime<Utc> {
        self.expires_on
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &"<redacted>")
            .field("expires_on", &self.expires_on)
            .finish()
    }
}

/// A cached token with the instant it is due for a refresh and its place in the sequence of
/// tokens the cache got (so a refusal names the token it is about).
#[derive(Clone)]
struct Cached {
    token: AccessToken,
    refresh_at: DateTime<Utc>,
    generation: u64,
}

/// The bearer value to send and which cached token it is.
#[derive(Clone)]
pub(crate) struct Bearer {
    /// `Bearer <token>`.
    pub(crate) header: String,
    pub(crate) generation: u64,
}

/// The token cache of one client and all its clones.
#[derive(Clone)]
pub(crate) struct TokenCache {
    inner: Arc<CacheInner>,
}

struct CacheInner {
    credential: Arc<dyn TokenCredential>,
    scope: String,
    // A std lock: held only to read or replace the cached token, never across an `.await`.
    current: Mutex<Option<Cached>>,
    // An async lock: held across the credential's `.await`, so one refresh runs at a time and
    // the requests waiting for it take its token.
    refresh: tokio::sync::Mutex<()>,
}

impl TokenCache {
    pub(crate) fn new(credential: Arc<dyn TokenCredential>, scope: String) -> Self {
        TokenCache {
            inner: Arc::new(CacheInner {
                credential,
                scope,
                current: Mutex::new(None),
                refresh: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// The token to send: the cached one unless it is due for a refresh, else a new one from
    /// the credential (one call, however many requests wait for it).
    ///
    /// Fails with [`ErrorKind::Auth`](table_core::ErrorKind::Auth) when the credential fails or
    /// returns an unusable token.
    pub(crate) async fn bearer(&self) -> Result<Bearer> {
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        let _refreshing = self.inner.refresh.lock().await;
        // Another request may have refreshed while this one waited for the lock.
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        self.fetch().await
    }

    /// A replacement for the token `rejected` (a [`Bearer::generation`]) that the service
    /// refused as expired: a newer cached token when another request already replaced it, else
    /// a new one from the credential.
    pub(crate) async fn replace(&self, rejected: u64) -> Result<Bearer> {
        let _refreshing = self.inner.refresh.lock().await;
        let newer = self.cached().filter(|c| c.generation != rejected && c.token.expires_on > Utc::now());
        match newer {
            Some(cached) => Ok(bearer(&cached)),
            None => self.fetch().await,
        }
    }

    fn cached(&self) -> Option<Cached> {
        self.inner.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn fresh(&self) -> Option<Bearer> {
        self.cached().filter(|c| Utc::now() < c.refresh_at).map(|c| bearer(&c))
    }

    /// Calls the credential and caches its token. Only called under the refresh lock.
    async fn fetch(&self) -> Result<Bearer> {
        let scope = self.inner.scope.as_str();
        let token = self.inner.credential.get_token(&[scope]).await.map_err(|e| {
            error::auth(format!("the token credential could not get an access token for `{scope}`"))
                .with_source(e)
        })?;
        let now = Utc::now();
        if token.expires_on <= now {
            return Err(error::auth(format!(
                "the token credential returned an access token for `{scope}` that expired at {}",
                token.expires_on
            )));
        }
        if token.secret().is_empty() || !token.secret().bytes().all(|b| b.is_ascii_graphic()) {
            return Err(error::auth(format!(
                "the token credential returned an access token for `{scope}` that is empty or holds \
                 characters an HTTP header cannot carry"
            )));
        }
        let margin = REFRESH_AHEAD.min((token.expires_on - now) / 2);
        let mut current = self.inner.current.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = current.as_ref().map_or(0, |c| c.generation + 1);
        let cached = Cached { refresh_at: token.expires_on - margin, token, generation };
        let bearer = bearer(&cached);
        *current = Some(cached);
        Ok(bearer)
    }
}

fn bearer(cached: &Cached) -> Bearer {
    Bearer { header: format!("Bearer {}", cached.token.secret()), generation: cached.generation }
}

impl fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let expires_on = self.cached().map(|c| c.token.expires_on);
        f.debug_struct("TokenCache")
            .field("credential", &self.inner.credential)
            .field("scope", &self.inner.scope)
            .field("expires_on", &expires_on)
            .finish()
    }
}

/// Whether an error answer says the bearer token sent has expired: a 401 or 403 with the
/// service's authentication codes whose text, or `WWW-Authenticate` challenge, says so. The
/// service answers 401 `InvalidAuthenticationInfo` with an `invalid_token` challenge; Azurite
/// answers 403 `AuthenticationFailed` with "Lifetime validation failed. The token is expired."
/// in the body.
pub(crate) fn says_token_expired(
    status: u16,
    code: Option<&str>,
    www_authenticate: Option<&str>,
    body: &[u8],
) -> bool {
    let auth_code = matches!(code, None | Some("AuthenticationFailed" | "InvalidAuthenticationInfo"));
    let mentions_expiry = |text: &[u8]| text.windows(7).any(|w| w.eq_ignore_ascii_case(b"expired"));
    let challenge =
        www_authenticate.is_some_and(|c| c.contains("invalid_token") || mentions_expiry(c.as_bytes()));
    matches!(status, 401 | 403) && auth_code && (challenge || mentions_expiry(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_answers_of_the_service_and_azurite_are_recognised() {
        let azurite = br#"{"odata.error":{"code":"AuthenticationFailed","message":{"value":"Server failed"},"AuthenticationErrorDetail":"Lifetime validation failed. The token is expired."}}"#;
        assert!(says_token_expired(403, Some("AuthenticationFailed"), None, azurite));
        let challenge = r#"Bearer authorization_uri=https://login.microsoftonline.com/t/oauth2/authorize error="invalid_token" error_description="The access token expiry UTC time is earlier than current UTC time.""#;
        assert!(says_token_expired(401, Some("InvalidAuthenticationInfo"), Some(challenge), b""));
        // Refusals that a new token would not change.
        assert!(!says_token_expired(403, Some("AuthorizationPermissionMismatch"), None, b"expired"));
        assert!(!says_token_expired(403, Some("AuthenticationFailed"), None, b"Invalid token audience."));
        assert!(!says_token_expired(404, None, None, b"expired"));
    }

    #[test]
    fn debug_prints_the_expiry_not_the_token() {
        let token = AccessToken::new("very-secret-token", Utc::now());
        let printed = format!("{token:?}");
        assert!(!printed.contains("very-secret"), "{printed}");
        assert!(printed.contains("expires_on"), "{printed}");
    }
}
