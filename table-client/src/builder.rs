//! [`TableServiceClientBuilder`]: the one way to configure a [`TableServiceClient`] (which
//! backend, with which credential, with which transport options), checked as a whole in
//! [`build`](TableServiceClientBuilder::build).
//!
//! Rules `build` enforces:
//! - exactly one backend: a connection string, an endpoint, or an engine;
//! - a credential goes with an endpoint, and only there: a connection string carries its
//!   own, and the embedded engine authorizes nothing;
//! - a token credential goes with an endpoint (instead of a credential) or an account's
//!   connection string (whose key or SAS it replaces), never with the embedded engine, and
//!   only over https (or http to a loopback host): bearer tokens are never sent in clear text;
//! - an option value that is wrong in itself (a zero timeout, an application id with a space,
//!   a proxy that is not an http(s) URL) is refused on every backend; the retry policy
//!   applies to every backend (the embedded engine's injected faults are retried as HTTP
//!   failures are), while the HTTP settings (timeout, application id, HTTP client, proxy,
//!   root certificates, location mode) are ignored by the embedded engine, which answers in
//!   process. So code that sets them works unchanged whichever backend a configured
//!   connection string names.
//!
//! This module and `service.rs` import each other: the handle hands out its builder, and the
//! builder makes the handle.

use std::sync::Arc;
use std::time::Duration;

#[cfg(doc)]
use table_core::ErrorKind;
use table_core::Result;
use table_core::engine::{Engine, registry};

use crate::auth::{Credential, STORAGE_SCOPE, TokenCache, TokenCredential};
use crate::backend::{Backend, EmbeddedBackend, HttpBackend, HttpOptions, RequestAuth};
use crate::connection_string::ConnectionString;
use crate::encryption::EncryptionPolicy;
use crate::error::invalid_input as invalid;
use crate::location::LocationMode;
use crate::proxy::Proxy;
use crate::retry::RetryPolicy;
use crate::service::TableServiceClient;
use crate::user_agent::{check_application_id, user_agent};

/// The limit of one HTTP attempt unless [`TableServiceClientBuilder::timeout`] says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The constructors that go through the builder: its entry point and the one-line forms of
/// common configurations.
impl TableServiceClient {
    /// Configures a client: the backend (a connection string, an endpoint with a credential,
    /// or an engine), retries and timeouts. See [`TableServiceClientBuilder`].
    ///
    /// ```rust
    /// use std::time::Duration;
    /// use table_client::engine::Engine;
    /// use table_client::{RetryPolicy, TableServiceClient};
    ///
    /// let service = TableServiceClient::builder()
    ///     .engine(Engine::new())
    ///     .retry(RetryPolicy::default().max_retries(5))
    ///     .timeout(Duration::from_secs(10))
    ///     .build()?;
    /// # let _ = service;
    /// # Ok::<(), table_client::Error>(())
    /// ```
    pub fn builder() -> TableServiceClientBuilder {
        TableServiceClientBuilder::new()
    }

    /// A client for the backend a connection string names, with the default options:
    /// `UseDevelopmentStorage=true` (Azurite on 127.0.0.1:10002), the account forms
    /// (`DefaultEndpointsProtocol=https;AccountName=..;AccountKey=..;EndpointSuffix=..`,
    /// `TableEndpoint=..`, `SharedAccessSignature=..`, also for Cosmos DB Table endpoints), or
    /// `UseEmbeddedEngine=true[;Name=<name>]` for the embedded engine (with a name, the engine
    /// bound to it in [`registry`](crate::engine::registry), shared by every client opened
    /// with that name; without, a private engine). The one-line form of
    /// `TableServiceClient::builder().connection_string(connection_string).build()`.
    ///
    /// ```rust
    /// use table_client::TableServiceClient;
    ///
    /// // Any backend, chosen at run time; nothing is sent until the first operation.
    /// let conn = std::env::var("AZURE_STORAGE_CONNECTION_STRING")
    ///     .unwrap_or_else(|_| "UseEmbeddedEngine=true".into());
    /// let service = TableServiceClient::from_connection_string(&conn)?;
    /// let azurite = TableServiceClient::from_connection_string("UseDevelopmentStorage=true")?;
    /// # let _ = (service, azurite);
    /// # Ok::<(), table_client::Error>(())
    /// ```
    pub fn from_connection_string(connection_string: &str) -> Result<Self> {
        Self::builder().connection_string(connection_string).build()
    }

    /// A client for `endpoint` (e.g. `https://myaccount.table.core.windows.net`) whose requests
    /// carry Microsoft Entra ID bearer tokens from `credential`, asked for
    /// [`STORAGE_SCOPE`](crate::auth::STORAGE_SCOPE). The one-line form of
    /// `TableServiceClient::builder().endpoint(endpoint).token_credential(credential).build()`;
    /// see [`TableServiceClientBuilder::token_credential`] for the token cache, and
    /// [`TableServiceClientBuilder::token_scope`] for Cosmos DB's audience.
    ///
    /// Fails with [`ErrorKind::InvalidInput`] for an endpoint that is not an https URL (http
    /// is allowed to a loopback host only: bearer tokens are not sent in clear text).
    pub fn with_token_credential(
        endpoint: &str,
        credential: impl crate::auth::TokenCredential + 'static,
    ) -> Result<Self> {
        Self::builder().endpoint(endpoint).token_credential(credential).build()
    }
}

/// Configures a [`TableServiceClient`]; made by [`TableServiceClient::builder`]. Setters take
/// and return the builder; a setter called twice keeps the later value. Nothing is checked or
/// connected until [`build`](Self::build).
///
/// ```
/// use std::time::Duration;
/// use table_client::auth::Credential;
/// use table_client::connection_string::{DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY};
/// use table_client::{RetryPolicy, TableServiceClient};
///
/// # fn main() -> table_client::Result<()> {
/// // Azurite, with one retry and a 5 s limit per attempt (nothing is sent yet).
/// let service = TableServiceClient::builder()
///     .endpoint("http://127.0.0.1:10002/devstoreaccount1")
///     .credential(Credential::shared_key(DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY)?)
///     .retry(RetryPolicy::default().max_retries(1))
///     .timeout(Duration::from_secs(5))
///     .build()?;
/// # drop(service);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `build()`"]
pub struct TableServiceClientBuilder {
    /// Parsed when given; a parse error waits for `build`.
    connection_string: Option<Result<ConnectionString>>,
    endpoint: Option<String>,
    credential: Option<Credential>,
    token_credential: Option<Arc<dyn TokenCredential>>,
    token_scope: String,
    /// PEM bundles, parsed by `build`.
    root_certificates: Vec<Vec<u8>>,
    engine: Option<Engine>,
    retry: RetryPolicy,
    timeout: Duration,
    application_id: Option<String>,
    http_client: Option<reqwest::Client>,
    /// Checked when given; an error waits for `build`.
    proxy: Option<Result<Proxy>>,
    location_mode: LocationMode,
    secondary_endpoint: Option<String>,
    encryption: Option<EncryptionPolicy>,
}

impl TableServiceClientBuilder {
    pub(crate) fn new() -> Self {
        TableServiceClientBuilder {
            connection_string: None,
            endpoint: None,
            credential: None,
            token_credential: None,
            token_scope: STORAGE_SCOPE.to_owned(),
            root_certificates: Vec::new(),
            engine: None,
            retry: RetryPolicy::default(),
            timeout: DEFAULT_TIMEOUT,
            application_id: None,
            http_client: None,
            proxy: None,
            location_mode: LocationMode::PrimaryOnly,
            secondary_endpoint: None,
            encryption: None,
        }
    }

    /// The backend a connection string names, with its credential (see
    /// [`ConnectionString`] for the forms): an account over HTTP, Azurite
    /// (`UseDevelopmentStorage=true`), or the embedded engine (`UseEmbeddedEngine=true`,
    /// private; with `;Name=<name>`, the engine bound to that name in
    /// [`registry`](crate::engine::registry)). Excludes [`endpoint`](Self::endpoint),
    /// [`credential`](Self::credential) and [`engine`](Self::engine). Default: none.
    ///
    /// A string that does not parse is reported by [`build`](Self::build).
    pub fn connection_string(mut self, connection_string: &str) -> Self {
        self.connection_string = Some(ConnectionString::parse(connection_string));
        self
    }

    /// A Table service endpoint: its base URL, path style for emulators (e.g.
    /// `http://127.0.0.1:10002/devstoreaccount1`). Needs a [`credential`](Self::credential).
    /// Default: none.
    pub fn endpoint(mut self, endpoint: &str) -> Self {
        self.endpoint = Some(endpoint.to_owned());
        self
    }

    /// How requests to the [`endpoint`](Self::endpoint) are authorized
    /// ([`Credential::Anonymous`] for a server that authorizes on its own). Default: none.
    pub fn credential(mut self, credential: Credential) -> Self {
        self.credential = Some(credential);
        self
    }

    /// Authorize requests with Microsoft Entra ID bearer tokens from `credential` instead of a
    /// key or SAS: with an [`endpoint`](Self::endpoint) (no [`credential`](Self::credential)
    /// then), or with an account's [`connection_string`](Self::connection_string), whose
    /// endpoint is kept and whose key or SAS is not used. Tokens are cached, shared by every
    /// clone of the client and renewed 5 minutes before they expire (half their lifetime when
    /// they live less than 10 minutes), one credential call at a time; a token the service
    /// refuses as expired is renewed once and the request sent once more. The endpoint must be
    /// https (http only to a loopback host, for local tests). Default: none.
    ///
    /// ```
    /// # use chrono::{TimeDelta, Utc};
    /// # use table_client::auth::{AccessToken, TokenCredential, TokenFuture};
    /// # #[derive(Debug)]
    /// # struct MyCredential;
    /// # impl TokenCredential for MyCredential {
    /// #     fn get_token<'a>(&'a self, _: &'a [&'a str]) -> TokenFuture<'a> {
    /// #         Box::pin(async { Ok(AccessToken::new("t", Utc::now() + TimeDelta::hours(1))) })
    /// #     }
    /// # }
    /// use table_client::TableServiceClient;
    ///
    /// # fn main() -> table_client::Result<()> {
    /// // The endpoint of a configured connection string, with Entra ID instead of its key.
    /// let connection_string =
    ///     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net";
    /// let service = TableServiceClient::builder()
    ///     .connection_string(connection_string)
    ///     .token_credential(MyCredential)
    ///     .build()?;
    /// # drop(service);
    /// # Ok(())
    /// # }
    /// ```
    pub fn token_credential(mut self, credential: impl TokenCredential + 'static) -> Self {
        self.token_credential = Some(Arc::new(credential));
        self
    }

    /// The scope a [`token_credential`](Self::token_credential) is asked for. Default:
    /// [`STORAGE_SCOPE`] (`https://storage.azure.com/.default`, Azure Storage accounts).
    /// Cosmos DB Table endpoints take tokens for their own audience:
    /// `https://cosmos.azure.com/.default`.
    pub fn token_scope(mut self, scope: &str) -> Self {
        self.token_scope = scope.to_owned();
        self
    }

    /// Trust the certificates of a PEM bundle (one or more `-----BEGIN CERTIFICATE-----`
    /// blocks) as root certificates, besides the built-in ones: the way to reach an endpoint
    /// whose certificate a private CA signed, or a test server's self-signed certificate.
    /// May be called more than once; every bundle is trusted. Default: none.
    ///
    /// A bundle without a readable certificate is reported by [`build`](Self::build), and so
    /// is a bundle beside an [`http_client`](Self::http_client): add the roots to that client.
    pub fn root_certificate_pem(mut self, pem: &[u8]) -> Self {
        self.root_certificates.push(pem.to_vec());
        self
    }

    /// An embedded engine; clones of the engine handle share its data. Default: none.
    /// [`TableServiceClient::embedded`] is the shorter way when no other setting matters.
    pub fn engine(mut self, engine: Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// How transient failures are retried, on every backend: over HTTP, the service's
    /// throttling, errors and lost answers; on the embedded engine, its injected faults
    /// ([`Engine::faults`]), which stand for the same failures, so retry handling can be
    /// tested offline. [`RetryPolicy::none`] lets every fault surface at once. Default:
    /// [`RetryPolicy::default`].
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The limit of one HTTP attempt, from sending to the last byte of the answer; it must be
    /// more than zero. Default: 30 s. The embedded engine ignores it.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Your application's name, sent first in every request's `User-Agent`
    /// (`myapp azsdk-rust-table-client/<version> (<os>; <arch>)`), so the service's logs tell
    /// your traffic apart. As in the official Azure SDKs: 1 to 24 printable ASCII characters
    /// without spaces (`inventory/2.1` is fine). Default: none. The embedded engine ignores
    /// it.
    pub fn application_id(mut self, application_id: &str) -> Self {
        self.application_id = Some(application_id.to_owned());
        self
    }

    /// Your own HTTP client, for proxies, extra TLS roots, connection pools or any other
    /// `reqwest` setting; clones of it share its pool. Excludes [`proxy`](Self::proxy) (set
    /// it on your client). Default: a client built by the SDK. The embedded engine ignores it.
    ///
    /// Still applied to each request whatever the client was built with: the
    /// [`timeout`](Self::timeout) of an attempt, the `User-Agent` and the service's headers.
    /// Not re-applicable per request: redirects. The SDK's own client never follows one (a
    /// signed request is only sent where it was meant to go), so build yours with
    /// `redirect(reqwest::redirect::Policy::none())` too; an answer that comes from another
    /// URL after your client followed a redirect is refused with [`ErrorKind::Transport`],
    /// but by then the request has been sent there.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http_client = Some(client);
        self
    }

    /// An HTTP proxy for every request (`http://proxy.example:8080`, credentials as
    /// `http://user:password@host:port`): an `http` or `https` URL with a host and nothing
    /// after it. Setting one turns off the proxies the environment (`HTTPS_PROXY`, ...) names.
    /// Excludes [`http_client`](Self::http_client). Default: none (the environment's proxy
    /// settings apply). The embedded engine ignores it.
    pub fn proxy(mut self, proxy: &str) -> Self {
        self.proxy = Some(Proxy::parse(proxy));
        self
    }

    /// Where reads may go: [`LocationMode::PrimaryThenSecondary`] lets a read that fails on
    /// the primary endpoint retry on the secondary of a read-access geo-redundant account
    /// (the [`secondary_endpoint`](Self::secondary_endpoint), or one derived from the
    /// primary). Writes always go to the primary. Default: [`LocationMode::PrimaryOnly`]. The
    /// embedded engine, which has one location, ignores it.
    ///
    /// The secondary is derived by adding `-secondary` to the account name
    /// (`https://acct-secondary.table.core.windows.net`, or
    /// `http://127.0.0.1:10002/devstoreaccount1-secondary` for a path-style endpoint). Cosmos
    /// DB and custom domains have no such endpoint: give one explicitly, or keep
    /// `PrimaryOnly`.
    pub fn location_mode(mut self, mode: LocationMode) -> Self {
        self.location_mode = mode;
        self
    }

    /// The secondary endpoint [`LocationMode::PrimaryThenSecondary`] reads from, instead of
    /// the derived one (a connection string's `TableSecondaryEndpoint` gives it too; this
    /// setter wins). Checked as the endpoint is. Default: none.
    pub fn secondary_endpoint(mut self, endpoint: &str) -> Self {
        self.secondary_endpoint = Some(endpoint.to_owned());
        self
    }

    /// Client-side encryption of string properties for every [`TableClient`] of this client
    /// (see [`EncryptionPolicy`]): writes encrypt the properties the policy names, reads
    /// decrypt every row that carries encryption metadata. Default: none (rows are written
    /// and read as they are).
    ///
    /// [`TableClient`]: crate::TableClient
    pub fn encryption(mut self, policy: EncryptionPolicy) -> Self {
        self.encryption = Some(policy);
        self
    }

    /// The client. Nothing is sent.
    ///
    /// Errors, in the order they are checked, all [`ErrorKind::InvalidInput`] unless noted:
    /// more than one backend given (connection string, endpoint, engine); none given; a zero
    /// [`timeout`](Self::timeout); an [`application_id`](Self::application_id) breaking its
    /// rule; a [`proxy`](Self::proxy) that is not an http(s) URL of a host; a proxy or a
    /// [`root_certificate_pem`](Self::root_certificate_pem) beside an
    /// [`http_client`](Self::http_client); a root certificate bundle without a readable
    /// certificate; the connection string's own error (see [`ConnectionString::parse`]; bad
    /// key base64 is [`ErrorKind::Auth`]); a credential beside a connection string, an engine
    /// or a token credential; a token credential beside an engine; an endpoint without a
    /// credential; an endpoint (or [`secondary_endpoint`](Self::secondary_endpoint)) that is
    /// not an http(s) URL naming a host without user credentials, query or fragment; a token
    /// credential with an http endpoint whose host is not loopback; a secondary endpoint that
    /// cannot be derived (an endpoint naming no account); [`ErrorKind::Transport`] if the HTTP
    /// client cannot be set up.
    pub fn build(self) -> Result<TableServiceClient> {
        let choice = Choice::of(self.connection_string, self.endpoint, self.engine)?;
        if self.timeout.is_zero() {
            return Err(invalid("the `timeout` must be more than zero"));
        }
        if let Some(id) = &self.application_id {
            check_application_id(id)?;
        }
        let proxy = self.proxy.transpose()?;
        if proxy.is_some() && self.http_client.is_some() {
            return Err(invalid(
                "give a `proxy` or an `http_client`, not both: set the proxy on your client",
            ));
        }
        let root_certificates = parse_root_certificates(&self.root_certificates)?;
        if !root_certificates.is_empty() && self.http_client.is_some() {
            return Err(invalid(
                "give `root_certificate_pem` or an `http_client`, not both: add the certificates to your client",
            ));
        }
        let embedded = |engine| Backend::Embedded(EmbeddedBackend::new(engine, self.retry.clone()));
        let options = HttpOptions {
            retry: self.retry.clone(),
            timeout: self.timeout,
            user_agent: user_agent(self.application_id.as_deref()),
            client: self.http_client,
            proxy,
            location: self.location_mode,
            secondary_endpoint: self.secondary_endpoint,
            root_certificates,
        };
        let bearer = self.token_credential.map(|c| RequestAuth::Bearer(TokenCache::new(c, self.token_scope)));
        let backend = match (choice, self.credential, bearer) {
            (Choice::ConnectionString(parsed), credential, bearer) => {
                let parsed = parsed?;
                if credential.is_some() {
                    return Err(invalid(
                        "a `credential` goes with an `endpoint`; a connection string carries its own",
                    ));
                }
                match (parsed, bearer) {
                    // A token credential replaces the string's key or SAS.
                    (ConnectionString::Http { endpoint, credential, secondary_endpoint, .. }, bearer) => {
                        let options = HttpOptions {
                            secondary_endpoint: options.secondary_endpoint.or(secondary_endpoint),
                            ..options
                        };
                        let auth = bearer.unwrap_or(RequestAuth::Credential(credential));
                        Backend::Http(HttpBackend::new(&endpoint, auth, options)?)
                    }
                    (ConnectionString::Embedded { .. }, Some(_)) => {
                        return Err(invalid("the embedded engine takes no `token_credential`"));
                    }
                    (ConnectionString::Embedded { name: Some(name) }, None) => {
                        embedded(registry::open(&name))
                    }
                    (ConnectionString::Embedded { name: None }, None) => embedded(Engine::new()),
                }
            }
            (Choice::Endpoint(endpoint), credential, bearer) => {
                let auth = match (credential, bearer) {
                    (Some(_), Some(_)) => {
                        return Err(invalid("give a `credential` or a `token_credential`, not both"));
                    }
                    (Some(credential), None) => RequestAuth::Credential(credential),
                    (None, Some(bearer)) => bearer,
                    (None, None) => {
                        return Err(invalid(
                            "an `endpoint` needs a `credential` (`Credential::Anonymous` for none)",
                        ));
                    }
                };
                Backend::Http(HttpBackend::new(&endpoint, auth, options)?)
            }
            (Choice::Engine(engine), None, None) => embedded(engine),
            (Choice::Engine(_), Some(_), _) => {
                return Err(invalid("the embedded engine takes no `credential`"));
            }
            (Choice::Engine(_), None, Some(_)) => {
                return Err(invalid("the embedded engine takes no `token_credential`"));
            }
        };
        Ok(TableServiceClient::from_backend(backend).with_encryption(self.encryption))
    }
}

/// The certificates of each PEM bundle given to
/// [`root_certificate_pem`](TableServiceClientBuilder::root_certificate_pem).
fn parse_root_certificates(bundles: &[Vec<u8>]) -> Result<Vec<reqwest::Certificate>> {
    let mut certificates = Vec::new();
    for (index, pem) in bundles.iter().enumerate() {
        let unreadable =
            || invalid(format!("root certificate bundle {index} holds no readable PEM certificate"));
        let parsed = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| unreadable().with_source(e))?;
        if parsed.is_empty() {
            return Err(unreadable());
        }
        certificates.extend(parsed);
    }
    Ok(certificates)
}

/// The one backend a builder was given.
enum Choice {
    ConnectionString(Result<ConnectionString>),
    Endpoint(String),
    Engine(Engine),
}

impl Choice {
    fn of(
        connection_string: Option<Result<ConnectionString>>,
        endpoint: Option<String>,
        engine: Option<Engine>,
    ) -> Result<Choice> {
        match (connection_string, endpoint, engine) {
            (Some(parsed), None, None) => Ok(Choice::ConnectionString(parsed)),
            (None, Some(endpoint), None) => Ok(Choice::Endpoint(endpoint)),
            (None, None, Some(engine)) => Ok(Choice::Engine(engine)),
            (None, None, None) => Err(invalid(
                "no backend: give a `connection_string`, an `endpoint` with a `credential`, or an `engine`",
            )),
            (connection_string, endpoint, engine) => {
                let given = [
                    connection_string.map(|_| "`connection_string`"),
                    endpoint.map(|_| "`endpoint`"),
                    engine.map(|_| "`engine`"),
                ];
                let given: Vec<&str> = given.into_iter().flatten().collect();
                Err(invalid(format!("choose one backend; {} were given", given.join(" and "))))
            }
        }
    }
}
