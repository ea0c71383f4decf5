//! Bearer tokens for the OAuth Azurite ([`crate::azurite::azurite_oauth`]): [`mint_token`]
//! makes the JWTs its basic check accepts (audience, issuer, lifetime; no signature check),
//! and [`MintingCredential`] is a `TokenCredential` that mints them as a test scripts it,
//! counting its calls.
//!
//! Invariant: no `Debug` output here contains a token (the credential keeps its last token as
//! an `AccessToken`, whose `Debug` redacts it, so a test of `Debug` covers the real type).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use table_client::auth::{AccessToken, TokenCredential, TokenError, TokenFuture};

/// The audience Azurite accepts for Azure Storage (what [`mint_token`] writes as `aud`).
pub const TOKEN_AUDIENCE: &str = "https://storage.azure.com";

/// The issuer [`mint_token`] writes as `iss`: Entra ID's, for a made-up tenant.
pub const TOKEN_ISSUER: &str = "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/";

/// A bearer token Azurite's basic OAuth check accepts while it lives: a JWT (`alg: none`
/// style, an unchecked signature) with [`TOKEN_AUDIENCE`], [`TOKEN_ISSUER`], issued and
/// valid from a minute ago, expiring `lifetime` from now (a negative lifetime makes an expired
/// token, which Azurite answers with 403 `AuthenticationFailed`, "The token is expired").
pub fn mint_token(lifetime: TimeDelta) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let now = Utc::now();
    let header = serde_json::json!({ "alg": "HS256", "typ": "JWT" });
    let claims = serde_json::json!({
        "aud": TOKEN_AUDIENCE,
        "iss": TOKEN_ISSUER,
        "iat": (now - TimeDelta::minutes(1)).timestamp(),
        "nbf": (now - TimeDelta::minutes(1)).timestamp(),
        "exp": (now + lifetime).timestamp(),
        // Unique per token, so a test can tell a renewed token from the one it replaced.
        "uti": uuid::Uuid::new_v4().simple().to_string(),
    });
    let part = |value: &serde_json::Value| URL_SAFE_NO_PAD.encode(value.to_string());
    format!("{}.{}.{}", part(&header), part(&claims), URL_SAFE_NO_PAD.encode(b"unchecked-signature"))
}

/// What a [`MintingCredential`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Tokens valid for `lifetime`, with that expiry.
    Valid {
        /// How long each token lives.
        lifetime: TimeDelta,
    },
    /// First a token that Azurite finds expired although the credential says it lives an hour
    /// (a clock skew, or a token revoked early: the only way a cache that renews ahead of
    /// expiry sends an expired token), then valid ones.
    ExpiredFirst,
    /// Only such tokens.
    AlwaysExpired,
    /// An error every time.
    Fails,
}

/// A `TokenCredential` that mints tokens for the OAuth Azurite as its [`Script`] says, after
/// an optional delay (so concurrent requests pile up behind one call), counting its calls.
#[derive(Debug)]
pub struct MintingCredential {
    script: Script,
    delay: Duration,
    calls: AtomicUsize,
    scopes: Mutex<Vec<String>>,
    last: Mutex<Option<AccessToken>>,
}

impl MintingCredential {
    /// A credential following `script`, answering at once.
    pub fn new(script: Script) -> MintingCredential {
        MintingCredential {
            script,
            delay: Duration::ZERO,
            calls: AtomicUsize::new(0),
            scopes: Mutex::new(Vec::new()),
            last: Mutex::new(None),
        }
    }

    /// Tokens valid for an hour.
    pub fn valid() -> MintingCredential {
        MintingCredential::new(Script::Valid { lifetime: TimeDelta::hours(1) })
    }

    /// The same credential, answering after `delay`.
    pub fn with_delay(self, delay: Duration) -> MintingCredential {
        MintingCredential { delay, ..self }
    }

    /// How many times the client called it.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The scopes of every call, in order.
    pub fn scopes(&self) -> Vec<String> {
        self.scopes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The last token it returned.
    pub fn last_token(&self) -> Option<AccessToken> {
        self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn next(&self, call: usize) -> Result<AccessToken, TokenError> {
        let in_an_hour = Utc::now() + TimeDelta::hours(1);
        let stale = || AccessToken::new(mint_token(TimeDelta::seconds(-1)), in_an_hour);
        let token = match self.script {
            Script::Valid { lifetime } => AccessToken::new(mint_token(lifetime), Utc::now() + lifetime),
            Script::ExpiredFirst if call == 0 => stale(),
            Script::ExpiredFirst => AccessToken::new(mint_token(TimeDelta::hours(1)), in_an_hour),
            Script::AlwaysExpired => stale(),
            Script::Fails => return Err("the identity endpoint is unreachable (scripted)".into()),
        };
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(token.clone());
        Ok(token)
    }
}

impl TokenCredential for MintingCredential {
    fn get_token<'a>(&'a self, scopes: &'a [&'a str]) -> TokenFuture<'a> {
        Box::pin(async move {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            self.scopes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend(scopes.iter().map(|s| (*s).to_owned()));
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.next(call)
        })
    }
}
