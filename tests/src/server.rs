//! The table-server backend of the conformance suite: one in-process `table-server` per test
//! process, on a free port of 127.0.0.1, serving each test its own account over its own fresh
//! engine (so engine-side fault injection and call counts concern that test alone), with
//! SharedKey authorization on, as a real client meets it.
//!
//! A second one serves HTTPS (a certificate of a private CA made per process, see
//! `certificates`) for the official SDKs' HTTPS and bearer-token scenarios ([`https_target`],
//! [`bearer_target`]); it is started only when first asked for.
//!
//! Each server runs on a runtime of its own, on a thread of its own: each `#[tokio::test]`
//! has a runtime that ends with the test, and the server must outlive every test.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::TimeDelta;
use table_client::TableServiceClient;
use table_client::auth::Credential;
use table_client::engine::Engine;
use table_server::{Accounts, Config, DEV_KEY, Server, Tls};

use crate::certificates::Certificates;
use crate::script::{BearerTokens, Target};
use crate::token::mint_token;

/// One of the process's servers: its address, the accounts it serves, and for HTTPS a file
/// holding the CA that signed its certificate.
struct ProcessServer {
    address: SocketAddr,
    accounts: Accounts,
    ca_file: Option<PathBuf>,
}

impl ProcessServer {
    /// Starts a server on a free loopback port, over TLS with `tls`.
    fn start(tls: Option<Tls>) -> ProcessServer {
        let accounts = Accounts::new();
        let served = accounts.clone();
        let (bound, address) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("table-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("the table-server runtime starts");
                runtime.block_on(async move {
                    let config = Config {
                        address: SocketAddr::from(([127, 0, 0, 1], 0)),
                        accounts: served,
                        auth: true,
                    };
                    let server = match tls {
                        Some(tls) => Server::bind_tls(config, tls).await,
                        None => Server::bind(config).await,
                    };
                    let server = server.expect("table-server binds a free loopback port");
                    bound.send(server.local_addr()).expect("the harness waits for the address");
                    // Serves until the process ends.
                    std::future::pending::<()>().await;
                });
            })
            .expect("the table-server thread starts");
        ProcessServer { address: address.recv().expect("table-server started"), accounts, ca_file: None }
    }

    /// A new account over `engine`: its name and endpoint.
    fn new_account(&self, engine: Engine) -> (String, String) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let account = format!("acct{}", NEXT.fetch_add(1, Ordering::Relaxed));
        self.accounts.add(&account, DEV_KEY, engine).expect("the development key is valid");
        let scheme = if self.ca_file.is_some() { "https" } else { "http" };
        (account.clone(), format!("{scheme}://{}/{account}", self.address))
    }
}

fn process_server() -> &'static ProcessServer {
    static SERVER: OnceLock<ProcessServer> = OnceLock::new();
    SERVER.get_or_init(|| ProcessServer::start(None))
}

/// The process's HTTPS server.
///
/// # Panics
/// When the certificates cannot be made or the CA file cannot be written.
fn https_server() -> &'static ProcessServer {
    static SERVER: OnceLock<ProcessServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let certificates = Certificates::generate().unwrap_or_else(|e| panic!("{e}"));
        let tls = Tls::from_pem(certificates.server_pem.as_bytes(), certificates.server_key_pem.as_bytes())
            .expect("rcgen's certificate and key are valid PEM");
        let ca_file = std::env::temp_dir().join(format!("table-server-ca-{}.pem", std::process::id()));
        std::fs::write(&ca_file, &certificates.ca_pem)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", ca_file.display()));
        ProcessServer { ca_file: Some(ca_file), ..ProcessServer::start(Some(tls)) }
    })
}

/// A new account on the process's server, over `engine`, and a SharedKey client for it.
pub fn client_for(engine: Engine) -> TableServiceClient {
    let (account, endpoint) = process_server().new_account(engine);
    TableServiceClient::builder()
        .endpoint(&endpoint)
        .credential(Credential::shared_key(&account, DEV_KEY).expect("the development key is valid"))
        .build()
        .expect("the server's endpoint is valid")
}

/// A new account on the process's server, over a fresh engine: its name and endpoint (the
/// development key signs for it).
pub fn new_account() -> (String, String) {
    process_server().new_account(Engine::new())
}

/// A new account on the process's server, over a fresh engine, as the connection string any
/// SDK reads (account name and key, and the endpoint).
pub fn connection_string() -> String {
    let (account, endpoint) = new_account();
    format!(
        "DefaultEndpointsProtocol=http;AccountName={account};AccountKey={DEV_KEY};TableEndpoint={endpoint}"
    )
}

/// A new account on the process's HTTPS server, over a fresh engine, reached with its key.
pub fn https_target() -> Target {
    let server = https_server();
    let (account, endpoint) = server.new_account(Engine::new());
    Target {
        connection_string: format!(
            "DefaultEndpointsProtocol=https;AccountName={account};AccountKey={DEV_KEY};TableEndpoint={endpoint}"
        ),
        ca_file: server.ca_file.clone(),
        bearer: None,
    }
}

/// A new account on the process's HTTPS server, over a fresh engine, reached with bearer
/// tokens only (the connection string carries no key): a token valid for an hour, and an
/// expired one.
pub fn bearer_target() -> Target {
    let server = https_server();
    let (account, endpoint) = server.new_account(Engine::new());
    Target {
        connection_string: format!("AccountName={account};TableEndpoint={endpoint}"),
        ca_file: server.ca_file.clone(),
        bearer: Some(BearerTokens {
            valid: mint_token(TimeDelta::hours(1)),
            expired: mint_token(TimeDelta::minutes(-5)),
        }),
    }
}
