//! The table-server backend of the conformance suite: one in-process `table-server` per test
//! process, on a free port of 127.0.0.1, serving each test its own account over its own fresh
//! engine (so engine-side fault injection and call counts concern that test alone), with
//! SharedKey authorization on, as a real client meets it.
//!
//! The server runs on a runtime of its own, on a thread of its own: each `#[tokio::test]`
//! has a runtime that ends with the test, and the server must outlive every test.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use table_client::TableServiceClient;
use table_client::auth::Credential;
use table_client::engine::Engine;
use table_server::{Accounts, Config, DEV_KEY, Server};

/// The process's server: its address and the accounts it serves.
struct ProcessServer {
    address: SocketAddr,
    accounts: Accounts,
}

fn process_server() -> &'static ProcessServer {
    static SERVER: OnceLock<ProcessServer> = OnceLock::new();
    SERVER.get_or_init(|| {
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
                    let server = Server::bind(config).await.expect("table-server binds a free loopback port");
                    bound.send(server.local_addr()).expect("the harness waits for the address");
                    // Serves until the process ends.
                    std::future::pending::<()>().await;
                });
            })
            .expect("the table-server thread starts");
        ProcessServer { address: address.recv().expect("table-server started"), accounts }
    })
}

/// A new account on the process's server, over `engine`: its name and endpoint.
fn new_account(engine: Engine) -> (String, String) {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let server = process_server();
    let account = format!("acct{}", NEXT.fetch_add(1, Ordering::Relaxed));
    server.accounts.add(&account, DEV_KEY, engine).expect("the development key is valid");
    let endpoint = format!("http://{}/{account}", server.address);
    (account, endpoint)
}

/// A new account on the process's server, over `engine`, and a SharedKey client for it.
pub fn client_for(engine: Engine) -> TableServiceClient {
    let (account, endpoint) = new_account(engine);
    TableServiceClient::builder()
        .endpoint(&endpoint)
        .credential(Credential::shared_key(&account, DEV_KEY).expect("the development key is valid"))
        .build()
        .expect("the server's endpoint is valid")
}

/// A new account on the process's server, over a fresh engine, as the connection string any
/// SDK reads (account name and key, and the endpoint).
pub fn connection_string() -> String {
    let (account, endpoint) = new_account(Engine::new());
    format!(
        "DefaultEndpointsProtocol=http;AccountName={account};AccountKey={DEV_KEY};TableEndpoint={endpoint}"
    )
}
