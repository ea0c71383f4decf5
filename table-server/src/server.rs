//! Listening and connections: HTTP/1.1 on hyper, over TCP or TLS (rustls), one task per
//! connection, and a graceful shutdown that stops accepting, lets requests in flight finish,
//! then closes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;

use crate::accounts::Accounts;
use crate::sas::Origin;
use crate::service::Service;

/// How long a graceful shutdown waits for requests in flight before closing their connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The largest request head (request line and headers): room for an entity URL with two
/// 1 KiB keys percent-encoded and a `$filter` of 15 such comparisons. A larger head is
/// answered by hyper with 431 (no body) and the connection closed.
const MAX_REQUEST_HEAD: usize = 256 * 1024;

/// HTTP/1.1 with the request head limits. At most 100 header fields (answered with 431
/// beyond) is hyper's default, left unset: hyper keeps its default's slots on the stack, while
/// an explicit limit, even the same one, is a vector filled anew for every request.
///
/// Half-closed connections are served: a client that shuts its write side once its requests
/// are sent (`nc -N`, a script) still gets every answer. Without it, hyper takes the end of
/// the stream, when it comes while a request is being served, for a client gone mid-request
/// and closes the connection instead of answering. A request cut short by the end of the
/// stream is still refused: its body fails to read (400 `InvalidInput`).
fn http1_builder() -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder.max_header_size(MAX_REQUEST_HEAD).half_close(true);
    builder
}

/// How long a TLS client may take to complete its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// A certificate chain and its private key to serve HTTPS with (bearer tokens need HTTPS).
#[derive(Clone)]
pub struct Tls(Arc<rustls::ServerConfig>);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of any output.
        f.write_str("Tls(..)")
    }
}

impl Tls {
    /// Reads a PEM certificate chain (the server's certificate first) and a PEM private key;
    /// anything else is an `InvalidData` error.
    ///
    /// ```
    /// use table_server::Tls;
    ///
    /// let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()])?;
    /// let tls = Tls::from_pem(made.cert.pem().as_bytes(), made.signing_key.serialize_pem().as_bytes())?;
    /// assert!(Tls::from_pem(b"not a certificate", b"not a key").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_pem(certificates: &[u8], key: &[u8]) -> std::io::Result<Tls> {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
        let chain = CertificateDer::pem_slice_iter(certificates)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(&format!("the certificate PEM is unreadable: {e}")))?;
        if chain.is_empty() {
            return Err(invalid("the certificate PEM holds no certificate"));
        }
        let key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| invalid(&format!("the key PEM is unreadable: {e}")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key))
            .map_err(|e| invalid(&format!("the certificate and key do not make a TLS identity: {e}")))?;
        Ok(Tls(Arc::new(config)))
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
    ///
    /// ```
    /// use table_client::TableServiceClient;
    /// use table_server::{Config, DEV_ACCOUNT, DEV_KEY, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Port 0: a free port; the development account over a new engine, SharedKey on.
    /// let server = Server::bind(Config { address: "127.0.0.1:0".parse()?, ..Config::default() }).await?;
    /// let endpoint = format!("http://{}/{DEV_ACCOUNT}", server.local_addr());
    /// let client = TableServiceClient::from_connection_string(&format!(
    ///     "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};TableEndpoint={endpoint};"
    /// ))?;
    /// client.create_table("Orders").await?;
    /// server.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn bind(config: Config) -> std::io::Result<Server> {
        Server::start(config, None).await
    }

    /// As [`bind`](Server::bind), serving HTTPS with `tls`.
    pub async fn bind_tls(config: Config, tls: Tls) -> std::io::Result<Server> {
        Server::start(config, Some(TlsAcceptor::from(tls.0))).await
    }

    async fn start(config: Config, tls: Option<TlsAcceptor>) -> std::io::Result<Server> {
        let listener = TcpListener::bind(config.address).await?;
        let local_addr = listener.local_addr()?;
        let service = Arc::new(Service::new(config.accounts, config.auth));
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(serve(listener, tls, service, stopped));
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

/// How long accepting pauses after an error that is not one connection's (out of file
/// descriptors or memory): accepting again at once fails the same way until some are freed.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The next connection, with Nagle's algorithm off.
///
/// Nagle: an answer larger than one TCP segment (a page of entities) otherwise holds its last,
/// partial segment until the client acknowledges the ones before it, and a client that delays
/// its acknowledgements (Linux: up to 40 ms) stalls the whole answer that long. Measured with
/// the server bench's lean client, scans in pages of 1000 rows at 16 and 64 requests in
/// flight: 0.61 and 0.58 M rows/s with Nagle on (p99 47 and 51 ms), 1.86 and 2.14 M with it
/// off (p99 13 and 12 ms). A connection whose option cannot be set (reset already) is served
/// anyway: its first read reports the reset.
///
/// Errors: a connection reset or aborted before it was accepted concerns it alone, and the
/// next is taken at once. Any other error (no file descriptor or memory left) would recur on
/// every try, spinning the worker threads until some are freed, so accepting pauses for
/// [`ACCEPT_BACKOFF`] first; connections wait in the listen backlog meanwhile.
async fn accept(listener: &TcpListener) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                return (stream, peer);
            }
            Err(e) if is_one_connections(&e) => {}
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
}

/// Whether an accept error concerns the one connection it was about to hand out.
fn is_one_connections(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(error.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset)
}

async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    service: Arc<Service>,
    mut stopped: oneshot::Receiver<()>,
) {
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            (stream, peer) = accept(&listener) => {
                let origin = Origin { ip: peer.ip(), https: tls.is_some() };
                let service = Arc::clone(&service);
                let handler = service_fn(move |request| {
                    let service = Arc::clone(&service);
                    async move { service.handle(request, origin).await }
                });
                let watcher = graceful.watcher();
                let tls = tls.clone();
                tokio::spawn(async move {
                    // A connection's error (a client gone, a failed handshake, a malformed
                    // request) ends only it.
                    match tls {
                        None => {
                            let connection = http1_builder().serve_connection(TokioIo::new(stream), handler);
                            let _ = watcher.watch(connection).await;
                        }
                        Some(acceptor) => {
                            let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await else {
                                return;
                            };
                            let connection = http1_builder().serve_connection(TokioIo::new(stream), handler);
                            let _ = watcher.watch(connection).await;
                        }
                    }
                });
            }
            _ = &mut stopped => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_send_without_waiting_for_acknowledgements() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (served, peer) = accept(&listener).await;
        assert_eq!(peer, client.local_addr().unwrap());
        assert!(served.nodelay().unwrap(), "Nagle's algorithm is off on the served connection");
    }
}
