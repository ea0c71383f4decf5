//! The backends a scenario runs on, and the `scenario!` macro that runs each scenario once per
//! backend as three tests named after it.

use table_client::engine::Engine;
use table_client::{TableClient, TableServiceClient};

/// Which backend a scenario runs on.
#[derive(Debug, Clone)]
pub struct Target {
    /// The client to use.
    pub client: TableServiceClient,
    /// The engine behind `client`, when it is ours (embedded, or served by table-server), for
    /// fault injection and call counts.
    pub engine: Option<Engine>,
}

impl Target {
    /// A fresh embedded engine.
    pub fn embedded() -> Target {
        let engine = Engine::new();
        Target { client: TableServiceClient::embedded(engine.clone()), engine: Some(engine) }
    }

    /// A fresh engine served by the process's table-server ([`crate::server`]) over HTTP, with
    /// our HTTP client: the engine's strict rules through the wire format.
    pub fn server() -> Target {
        let engine = Engine::new();
        Target { client: crate::server::client_for(engine.clone()), engine: Some(engine) }
    }

    /// The process's Azurite, or `None` (after a loud banner) when it cannot run here.
    pub fn azurite() -> Option<Target> {
        let azurite = crate::azurite::azurite()?;
        let client = TableServiceClient::from_connection_string(&azurite.connection_string)
            .expect("the harness's connection string parses");
        Some(Target { client, engine: None })
    }

    /// The process's OAuth Azurite ([`crate::azurite::azurite_oauth`]) with a client that
    /// authorizes every request with a bearer token ([`crate::token::MintingCredential`]) and
    /// trusts the harness's CA; `None` (after a loud banner) when Azurite cannot run here.
    pub fn azurite_token() -> Option<Target> {
        let azurite = crate::azurite::azurite_oauth()?;
        let client = TableServiceClient::builder()
            .endpoint(&azurite.endpoint)
            .token_credential(crate::token::MintingCredential::valid())
            .root_certificate_pem(azurite.ca_pem.as_bytes())
            .build()
            .expect("the OAuth Azurite's endpoint and CA are valid");
        Some(Target { client, engine: None })
    }

    /// `true` on Azurite, for scenarios that record one of its known deviations.
    pub fn is_azurite(&self) -> bool {
        self.engine.is_none()
    }

    /// A fresh table with a unique name (Azurite is shared by the tests of one process).
    pub async fn fresh_table(&self) -> TableClient {
        self.client.create_table(&unique_name("t")).await.expect("create a fresh table")
    }
}

/// A table name that no other test uses.
pub use crate::azurite::unique_table_name as unique_name;

/// Runs each named `async fn(Target)` once per backend, as `<name>::embedded`,
/// `<name>::server` and `<name>::azurite` tests (the latter skipping loudly where Azurite
/// cannot run). `scenario!(not_on_server: ...)` leaves out the server, for what it does not
/// serve yet (table ACLs and service settings).
#[macro_export]
macro_rules! scenario {
    (not_on_server: $($name:ident),* $(,)?) => {$(
        mod $name {
            $crate::scenario!(@embedded_and_azurite $name);
        }
    )*};
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            $crate::scenario!(@embedded_and_azurite $name);

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn server() {
                super::$name($crate::target::Target::server()).await;
            }
        }
    )*};
    (@embedded_and_azurite $name:ident) => {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn embedded() {
                super::$name($crate::target::Target::embedded()).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn azurite() {
                if let Some(target) = $crate::target::Target::azurite() {
                    super::$name(target).await;
                }
            }
    };
}

/// Runs each named `async fn(Target)` of a `scenario!` list once more, on the OAuth Azurite
/// with bearer tokens ([`Target::azurite_token`]), as `with_token::<name>::azurite` tests
/// (skipping loudly where Azurite cannot run). Invoke it once per test file.
#[macro_export]
macro_rules! token_scenario {
    ($($name:ident),* $(,)?) => {
        mod with_token {$(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn azurite() {
                    if let Some(target) = $crate::target::Target::azurite_token() {
                        super::super::$name(target).await;
                    }
                }
            }
        )*}
    };
}
