//! Listening and connections: HTTP/1.1 on hyper, one task per connection, and a graceful
//! shutdown that stops accepting, lets requests in flight finish, then closes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::accounts::Accounts;
use crate::sas::Origin;
use crate::service::Service;

/// How long a graceful shutdown waits for requests in flight before closing their connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How a server listens and what it serves.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen, e.g. `127.0.0.1:10002` (port 0 picks a free port).
    pub address: SocketAddr,
    /// The accounts served (by default the development account over a new engine).
    pub accounts: Accounts,
    /// Whether requests must carry a valid SharedKey or SharedKeyLite signature.
    pub auth: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            address: SocketAddr::from(([127, 0, 0, 1], 10002)),
            accounts: Accounts::development(table_core::engine::Engine::new()),
            auth: true,
        }
    }
}

/// A running server. [`shutdown`](Server::shutdown) stops it gracefully and waits until it
/// has; dropping it starts the same shutdown without waiting.
#[derive(Debug)]
pub struct Server {
    local_addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Server {
    /// Binds `config.address` and starts serving on the current tokio runtime.
    pub async fn bind(config: Config) -> std::io::Result<Server> {
        let listener = TcpListener::bind(config.address).await?;
        let local_addr = listener.local_addr()?;
        let service = Arc::new(Service::new(config.accounts, config.auth));
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(serve(listener, service, stopped));
        Ok(Server { local_addr, stop, task })
    }

    /// The address the server listens on (with the port picked when port 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting connections, waits (at most 10 s) for the requests in flight, then
    /// returns once every connection is closed.
    pub async fn shutdown(self) {
        // The serving task ends only on this signal (or the sender's drop), so it still listens.
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

async fn serve(listener: TcpListener, service: Arc<Service>, mut stopped: oneshot::Receiver<()>) {
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                // A failed accept (out of file descriptors, a reset before accept) concerns one
                // connection; the listener goes on.
                let Ok((stream, peer)) = accepted else { continue };
                let origin = Origin { ip: peer.ip(), https: false };
                let service = Arc::clone(&service);
                let handler = service_fn(move |request| {
                    let service = Arc::clone(&service);
                    async move { service.handle(request, origin).await }
                });
                let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    // A connection's error (a client gone, a malformed request) ends only it.
                    let _ = watched.await;
                });
            }
            _ = &mut stopped => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
}

/// A request answered by closing the connection (an injected fault that loses the answer).
#[derive(Debug)]
pub(crate) struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the answer was dropped")
    }
}

impl std::error::Error for Dropped {}
