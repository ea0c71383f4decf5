//! A fault-injecting HTTP/1.1 proxy for the Azurite tests: an SDK client pointed at it reaches
//! Azurite through it, and a seeded share of the requests meets a [`Fault`] instead of a clean
//! round trip (a reset connection, a stall past the client's timeout, a 500, 503 or 429), before
//! or after the request reached the server.
//!
//! Invariants:
//! - Only 127.0.0.1 is bound or dialled; requests are forwarded with their method, path, query,
//!   headers (`Host` included) and body unchanged, so SharedKey signatures made for the proxy's
//!   URL verify at the server (the Table string-to-sign names the path, not the host).
//! - A fault is drawn per request, in arrival order, from one RNG seeded by the builder, so a
//!   client that sends its requests one after another meets the same faults on every run.
//! - A forward, once decided, runs to its end in its own task even when the client has gone,
//!   so a request held past the client's timeout still reaches the server (the write lands
//!   while the client gives up, as on a real network). [`FaultProxy::settle`] waits until no
//!   forward is pending, after which the server's state no longer changes behind the client.
//! - Bounded: at most [`MAX_CONNECTIONS`] client connections and bodies of at most
//!   [`MAX_BODY`] bytes; an upstream exchange is abandoned after [`UPSTREAM_TIMEOUT`].
//!   Dropping the [`FaultProxy`] stops the listener, every connection and every pending forward.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot, watch};

/// Most client connections open at once; further clients wait to be accepted.
pub const MAX_CONNECTIONS: usize = 256;

/// Largest request or response body the proxy carries (a batch body is at most 4 MiB).
pub const MAX_BODY: usize = 32 * 1024 * 1024;

/// How long one exchange with the upstream server may take before the proxy gives up on it
/// (and resets the client's connection).
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(30);

/// What the proxy does to one request instead of a clean round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// Resets the connection without forwarding: the request never reaches the server.
    ResetBeforeForward,
    /// Forwards, then resets the connection instead of answering: applied, answer lost.
    ResetAfterForward,
    /// Holds the request for the stall time, then resets the connection; never forwarded.
    Stall,
    /// Holds the request for the stall time, then forwards it: with a stall longer than the
    /// client's timeout, the request is applied after the client gave up on it.
    StallThenForward,
    /// Forwards at once, then holds the answer for the stall time before sending it.
    ForwardThenStall,
    /// Answers 503 `ServerBusy` without forwarding.
    Busy503,
    /// Answers 500 `InternalError` without forwarding.
    Internal500,
    /// Forwards, then answers 500 `InternalError`: applied, then reported as failed.
    ForwardThen500,
    /// Answers 429 with `Retry-After` without forwarding.
    Throttle429,
}

impl Fault {
    /// Every fault, in declaration order.
    pub const ALL: [Fault; 9] = [
        Fault::ResetBeforeForward,
        Fault::ResetAfterForward,
        Fault::Stall,
        Fault::StallThenForward,
        Fault::ForwardThenStall,
        Fault::Busy503,
        Fault::Internal500,
        Fault::ForwardThen500,
        Fault::Throttle429,
    ];
}

/// What a proxy has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Requests received (faulted or not).
    pub requests: u64,
    /// Faults injected, by kind (kinds never injected are absent).
    pub faults: BTreeMap<Fault, u64>,
    /// Forwards that completed after their client had stopped waiting (the client timed out
    /// or the connection dropped): the server applied a request whose answer nobody read.
    pub orphaned: u64,
}

impl ProxyStats {
    /// All faults injected, of every kind.
    pub fn total_faults(&self) -> u64 {
        self.faults.values().sum()
    }

    /// How many faults of `kind` were injected.
    pub fn count(&self, kind: Fault) -> u64 {
        self.faults.get(&kind).copied().unwrap_or(0)
    }

    /// Adds another proxy's counts to these.
    pub fn add(&mut self, other: &ProxyStats) {
        self.requests += other.requests;
        self.orphaned += other.orphaned;
        for (kind, n) in &other.faults {
            *self.faults.entry(*kind).or_default() += n;
        }
    }
}

impl fmt::Display for ProxyStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} requests, {} faults (", self.requests, self.total_faults())?;
        for (i, (kind, n)) in self.faults.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{kind:?} {n}")?;
        }
        write!(f, "), {} orphaned forwards", self.orphaned)
    }
}

/// Settings of a [`FaultProxy`]; see [`FaultProxy::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct FaultProxyBuilder {
    upstream: SocketAddr,
    seed: u64,
    rate: f64,
    mix: Vec<(Fault, u32)>,
    stall: Duration,
    retry_after: u64,
}

impl FaultProxyBuilder {
    /// The seed of the fault draws. Default 0.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The share of requests that meet a fault, in `0.0..=1.0`. Default 0 (a plain proxy).
    pub fn rate(mut self, rate: f64) -> Self {
        self.rate = rate;
        self
    }

    /// The faults to draw from, each with a relative weight. Default: every fault, weight 1.
    pub fn mix(mut self, mix: impl IntoIterator<Item = (Fault, u32)>) -> Self {
        self.mix = mix.into_iter().collect();
        self
    }

    /// How long [`Fault::Stall`], [`Fault::StallThenForward`] and [`Fault::ForwardThenStall`]
    /// hold a request or its answer; make it longer than the client's timeout. Default 2 s.
    pub fn stall(mut self, stall: Duration) -> Self {
        self.stall = stall;
        self
    }

    /// The `Retry-After` seconds of [`Fault::Throttle429`]. Default 1.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = seconds;
        self
    }

    /// Binds 127.0.0.1 on a free port and starts serving.
    ///
    /// # Errors
    /// `InvalidInput` when the upstream is not on 127.0.0.1, the rate is outside `0.0..=1.0`,
    /// or the rate is positive and the mix has no weight; the bind error otherwise.
    pub async fn start(self) -> io::Result<FaultProxy> {
        let invalid = |message: String| Err(io::Error::new(io::ErrorKind::InvalidInput, message));
        if self.upstream.ip() != Ipv4Addr::LOCALHOST {
            return invalid(format!("the upstream {} is not on 127.0.0.1", self.upstream));
        }
        if !(0.0..=1.0).contains(&self.rate) {
            return invalid(format!("fault rate {} is outside 0.0..=1.0", self.rate));
        }
        let total_weight = self.mix.iter().map(|(_, w)| u64::from(*w)).sum::<u64>();
        if self.rate > 0.0 && total_weight == 0 {
            return invalid("a positive fault rate needs a fault mix with a positive weight".to_owned());
        }
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (shutdown_tx, shutdown) = watch::channel(());
        let shared = Arc::new(Shared {
            upstream: self.upstream,
            rate: self.rate,
            mix: self.mix,
            total_weight,
            stall: self.stall,
            retry_after: self.retry_after,
            rng: Mutex::new(fastrand::Rng::with_seed(self.seed)),
            requests: AtomicU64::new(0),
            faults: Fault::ALL.map(|_| AtomicU64::new(0)),
            orphaned: AtomicU64::new(0),
            pending: watch::channel(0).0,
            client: Client::builder(TokioExecutor::new()).build_http(),
            shutdown,
        });
        tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(FaultProxy { addr, shared, _shutdown: shutdown_tx })
    }
}

/// A running fault-injecting proxy on 127.0.0.1; stops when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Dropping it ends every task of the proxy (they wait on the receiving side).
    _shutdown: watch::Sender<()>,
}

impl FaultProxy {
    /// A proxy in front of `upstream` (an HTTP/1.1 server on 127.0.0.1).
    pub fn builder(upstream: SocketAddr) -> FaultProxyBuilder {
        FaultProxyBuilder {
            upstream,
            seed: 0,
            rate: 0.0,
            mix: Fault::ALL.iter().map(|f| (*f, 1)).collect(),
            stall: Duration::from_secs(2),
            retry_after: 1,
        }
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        let s = &self.shared;
        let faults = Fault::ALL
            .iter()
            .zip(&s.faults)
            .map(|(kind, n)| (*kind, n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        ProxyStats {
            requests: s.requests.load(Ordering::Relaxed),
            faults,
            orphaned: s.orphaned.load(Ordering::Relaxed),
        }
    }

    /// Waits until no forward is pending: every request the proxy decided to forward has
    /// reached the server and been answered (or failed). Call it when the client has no
    /// request in flight, e.g. between two operations, before reading the server's state.
    pub async fn settle(&self) {
        let mut pending = self.shared.pending.subscribe();
        // The sender lives in `shared`, which this handle keeps alive: the wait cannot fail.
        let _ = pending.wait_for(|n| *n == 0).await;
    }
}

/// State shared by the proxy handle and its tasks.
struct Shared {
    upstream: SocketAddr,
    rate: f64,
    mix: Vec<(Fault, u32)>,
    total_weight: u64,
    stall: Duration,
    retry_after: u64,
    /// One generator for all connections, so the draws follow the arrival order. A std lock:
    /// held for two draws, never across an `.await`.
    rng: Mutex<fastrand::Rng>,
    requests: AtomicU64,
    /// Per fault, indexed like [`Fault::ALL`].
    faults: [AtomicU64; Fault::ALL.len()],
    orphaned: AtomicU64,
    /// Forwards spawned and not yet finished.
    pending: watch::Sender<usize>,
    client: Client<HttpConnector, Full<Bytes>>,
    /// Changes (with an error) when the [`FaultProxy`] is dropped.
    shutdown: watch::Receiver<()>,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("upstream", &self.upstream)
            .field("rate", &self.rate)
            .field("mix", &self.mix)
            .field("stall", &self.stall)
            .finish_non_exhaustive()
    }
}

/// Why the proxy closes a connection without answering (hyper closes it when the service
/// fails; the connection's socket then resets, see [`ResettingStream`]).
#[derive(Debug)]
struct Reset(&'static str);

impl fmt::Display for Reset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "connection reset by the fault proxy: {}", self.0)
    }
}

impl std::error::Error for Reset {}

type Answer = Result<Response<Full<Bytes>>, Reset>;

/// Resolves when the proxy handle is dropped.
async fn stopped(mut shutdown: watch::Receiver<()>) {
    // Nothing is ever sent: the only change is the sender going away.
    let _ = shutdown.changed().await;
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let accept = async {
        loop {
            let Ok(permit) = Arc::clone(&connections).acquire_owned().await else { return };
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of file descriptors and the like: pause instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let _permit = permit;
                let stop = stopped(shared.shutdown.clone());
                tokio::select! {
                    () = serve(stream, shared) => {}
                    () = stop => {}
                }
            });
        }
    };
    tokio::select! {
        () = accept => {}
        () = stopped(shared.shutdown.clone()) => {}
    }
}

/// Serves one client connection until it closes or the proxy resets it.
async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let reset = Arc::new(AtomicBool::new(false));
    let io = TokioIo::new(ResettingStream { stream, reset: Arc::clone(&reset) });
    let service = hyper::service::service_fn(move |request| {
        let shared = Arc::clone(&shared);
        let reset = Arc::clone(&reset);
        async move {
            let answer = shared.handle(request).await;
            if answer.is_err() {
                reset.store(true, Ordering::Relaxed);
            }
            answer
        }
    });
    // A failed connection (a reset, the client going away) is the expected end of some.
    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
}

impl Shared {
    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Answer {
        let (parts, body) = request.into_parts();
        let body = Limited::new(body, MAX_BODY)
            .collect()
            .await
            .map_err(|_| Reset("the request body could not be read within the size limit"))?
            .to_bytes();
        let request = Request::from_parts(parts, body);
        self.requests.fetch_add(1, Ordering::Relaxed);
        let Some(fault) = self.draw() else {
            return self.forward(request, Duration::ZERO).await;
        };
        if let Some(i) = Fault::ALL.iter().position(|f| *f == fault) {
            self.faults[i].fetch_add(1, Ordering::Relaxed);
        }
        match fault {
            Fault::ResetBeforeForward => Err(Reset("injected before forwarding")),
            Fault::ResetAfterForward => {
                let _ = self.forward(request, Duration::ZERO).await;
                Err(Reset("injected after forwarding"))
            }
            Fault::Stall => {
                tokio::time::sleep(self.stall).await;
                Err(Reset("injected after a stall"))
            }
            Fault::StallThenForward => self.forward(request, self.stall).await,
            Fault::ForwardThenStall => {
                let answer = self.forward(request, Duration::ZERO).await;
                tokio::time::sleep(self.stall).await;
                answer
            }
            Fault::Busy503 => Ok(self.error_answer(StatusCode::SERVICE_UNAVAILABLE, "ServerBusy")),
            Fault::Internal500 | Fault::ForwardThen500 => {
                if fault == Fault::ForwardThen500 {
                    let _ = self.forward(request, Duration::ZERO).await;
                }
                Ok(self.error_answer(StatusCode::INTERNAL_SERVER_ERROR, "InternalError"))
            }
            Fault::Throttle429 => {
                let mut answer = self.error_answer(StatusCode::TOO_MANY_REQUESTS, "TooManyRequests");
                answer.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(self.retry_after));
                Ok(answer)
            }
        }
    }

    /// The fault for the next request, if it gets one.
    fn draw(&self) -> Option<Fault> {
        // A poisoned generator is still a valid generator.
        let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
        if self.total_weight == 0 || rng.f64() >= self.rate {
            return None;
        }
        let mut pick = rng.u64(0..self.total_weight);
        self.mix.iter().find_map(|(fault, weight)| {
            let weight = u64::from(*weight);
            if pick < weight {
                Some(*fault)
            } else {
                pick -= weight;
                None
            }
        })
    }

    /// Forwards `request` after `delay` in a task of its own (counted in `pending`), so the
    /// server gets it even if the client stops waiting; resolves to the server's answer.
    async fn forward(self: &Arc<Self>, request: Request<Bytes>, delay: Duration) -> Answer {
        let (answer_tx, answer_rx) = oneshot::channel();
        self.pending.send_modify(|n| *n += 1);
        let pending = Pending(Arc::clone(self));
        tokio::spawn(async move {
            let shared = Arc::clone(&pending.0);
            let exchange = async {
                tokio::time::sleep(delay).await;
                shared.exchange(request).await
            };
            tokio::select! {
                answer = exchange => {
                    if answer_tx.send(answer).is_err() {
                        shared.orphaned.fetch_add(1, Ordering::Relaxed);
                    }
                }
                () = stopped(shared.shutdown.clone()) => {}
            }
            drop(pending);
        });
        answer_rx.await.unwrap_or(Err(Reset("the forward was abandoned")))
    }

    /// One request to the upstream server and its whole answer.
    async fn exchange(&self, request: Request<Bytes>) -> Answer {
        let (mut parts, body) = request.into_parts();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.uri = Uri::try_from(format!("http://{}{path}", self.upstream))
            .map_err(|_| Reset("the request target cannot be forwarded"))?;
        remove_hop_by_hop(&mut parts.headers);
        let request = Request::from_parts(parts, Full::new(body));
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|_| Reset("the upstream server did not answer"))?;
            let (mut parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_BODY)
                .collect()
                .await
                .map_err(|_| Reset("the upstream answer could not be read within the size limit"))?
                .to_bytes();
            remove_hop_by_hop(&mut parts.headers);
            Ok(Response::from_parts(parts, Full::new(body)))
        };
        tokio::time::timeout(UPSTREAM_TIMEOUT, exchange)
            .await
            .unwrap_or(Err(Reset("the upstream server did not answer in time")))
    }

    /// An error answer in the service's JSON form, as if the server had sent it.
    fn error_answer(&self, status: StatusCode, code: &'static str) -> Response<Full<Bytes>> {
        let body = format!(
            r#"{{"odata.error":{{"code":"{code}","message":{{"lang":"en-US","value":"{code}: injected by the fault proxy"}}}}}}"#
        );
        let mut answer = Response::new(Full::new(Bytes::from(body)));
        *answer.status_mut() = status;
        let headers = answer.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json;odata=minimalmetadata;streaming=true;charset=utf-8"),
        );
        headers.insert("x-ms-error-code", HeaderValue::from_static(code));
        answer
    }
}

/// Counts one spawned forward in `pending` until dropped, however its task ends.
struct Pending(Arc<Shared>);

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.pending.send_modify(|n| *n -= 1);
    }
}

/// Headers that describe one connection, not the message; each hop sets its own.
fn remove_hop_by_hop(headers: &mut HeaderMap) {
    for name in [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
        header::PROXY_AUTHORIZATION,
        header::PROXY_AUTHENTICATE,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
}

/// A client connection that ends with a TCP reset (RST) instead of an orderly close once the
/// service has asked for a reset, so the client sees "connection reset", not an answer.
struct ResettingStream {
    stream: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for ResettingStream {
    fn drop(&mut self) {
        if self.reset.load(Ordering::Relaxed) {
            // SO_LINGER 0 turns the close that follows (the field's drop) into an abort.
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for ResettingStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ResettingStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.reset.load(Ordering::Relaxed) {
            // An orderly FIN first would let the client read a clean end of stream.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    // Test helpers unwrap freely: a failure is the test's verdict.
    #![allow(clippy::unwrap_used)]

    use std::convert::Infallible;
    use std::error::Error as _;

    use hyper::Method;

    use super::*;

    /// The client's timeout in these tests; the stall is twice as long.
    const CLIENT_TIMEOUT: Duration = Duration::from_millis(300);
    const STALL: Duration = Duration::from_millis(600);

    /// An upstream that counts requests and answers 200 with what it received:
    /// `<method> <target> host=<Host> x=<X-Test>`.
    async fn echo_upstream() -> (SocketAddr, Arc<AtomicU64>) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&hits);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counter = Arc::clone(&counter);
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let header = |name: &str| {
                        request.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("-").to_owned()
                    };
                    let echo = format!(
                        "{} {} host={} x={}",
                        request.method(),
                        request.uri(),
                        header("host"),
                        header("x-test")
                    );
                    async move { Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(echo)))) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        (addr, hits)
    }

    /// What a client sees of one request.
    #[derive(Debug, PartialEq)]
    enum Seen {
        /// An answer: status, `Retry-After`, body.
        Answer(u16, Option<String>, String),
        /// The connection was reset (ECONNRESET), no answer.
        Reset,
        /// No answer within the client's timeout.
        TimedOut,
    }

    async fn send(proxy: &FaultProxy) -> Seen {
        let client: Client<HttpConnector, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let request = Request::builder()
            .method(Method::from_bytes(b"MERGE").unwrap())
            .uri(format!("http://{}/devstoreaccount1/t(PartitionKey='p')?x=1", proxy.addr()))
            .header("x-test", "kept")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let Ok(result) = tokio::time::timeout(CLIENT_TIMEOUT, client.request(request)).await else {
            return Seen::TimedOut;
        };
        match result {
            Ok(response) => {
                let status = response.status().as_u16();
                let retry_after =
                    response.headers().get(header::RETRY_AFTER).map(|v| v.to_str().unwrap().to_owned());
                let body = response.into_body().collect().await.unwrap().to_bytes();
                Seen::Answer(status, retry_after, String::from_utf8(body.to_vec()).unwrap())
            }
            Err(e) => {
                let mut cause: Option<&(dyn std::error::Error + 'static)> = e.source();
                while let Some(c) = cause {
                    if c.downcast_ref::<io::Error>()
                        .is_some_and(|io| io.kind() == io::ErrorKind::ConnectionReset)
                    {
                        return Seen::Reset;
                    }
                    cause = c.source();
                }
                panic!("expected a connection reset, got {e:?}");
            }
        }
    }

    /// Sends one request through a proxy that always injects `fault`; returns what the client
    /// saw and how many requests reached the upstream once the proxy settled.
    async fn through(fault: Fault) -> (Seen, u64, ProxyStats) {
        let (upstream, hits) = echo_upstream().await;
        let proxy =
            FaultProxy::builder(upstream).rate(1.0).mix([(fault, 1)]).stall(STALL).start().await.unwrap();
        let seen = send(&proxy).await;
        // A stall without forward is over once the stall time has passed.
        tokio::time::sleep(STALL).await;
        proxy.settle().await;
        let stats = proxy.stats();
        assert_eq!((stats.requests, stats.count(fault), stats.total_faults()), (1, 1, 1), "{stats}");
        (seen, hits.load(Ordering::SeqCst), stats)
    }

    fn answer(status: u16, code: &str) -> Seen {
        let body = format!(
            r#"{{"odata.error":{{"code":"{code}","message":{{"lang":"en-US","value":"{code}: injected by the fault proxy"}}}}}}"#
        );
        Seen::Answer(status, None, body)
    }

    #[tokio::test]
    async fn without_faults_requests_pass_unchanged() {
        let (upstream, hits) = echo_upstream().await;
        let proxy = FaultProxy::builder(upstream).start().await.unwrap();
        let seen = send(&proxy).await;
        let expected =
            format!("MERGE /devstoreaccount1/t(PartitionKey='p')?x=1 host={} x=kept", proxy.addr());
        assert_eq!(seen, Seen::Answer(200, None, expected));
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert_eq!(proxy.stats(), ProxyStats { requests: 1, ..ProxyStats::default() });
    }

    #[tokio::test]
    async fn resets_close_the_connection_without_an_answer() {
        let (seen, hits, _) = through(Fault::ResetBeforeForward).await;
        assert_eq!((seen, hits), (Seen::Reset, 0));
        let (seen, hits, _) = through(Fault::ResetAfterForward).await;
        assert_eq!((seen, hits), (Seen::Reset, 1));
    }

    #[tokio::test]
    async fn stalls_outlast_the_client_and_forward_or_not() {
        let (seen, hits, _) = through(Fault::Stall).await;
        assert_eq!((seen, hits), (Seen::TimedOut, 0));
        let (seen, hits, stats) = through(Fault::StallThenForward).await;
        assert_eq!((seen, hits, stats.orphaned), (Seen::TimedOut, 1, 1));
        let (seen, hits, stats) = through(Fault::ForwardThenStall).await;
        assert_eq!((seen, hits, stats.orphaned), (Seen::TimedOut, 1, 0));
    }

    #[tokio::test]
    async fn error_answers_come_before_or_after_forwarding() {
        let (seen, hits, _) = through(Fault::Busy503).await;
        assert_eq!((seen, hits), (answer(503, "ServerBusy"), 0));
        let (seen, hits, _) = through(Fault::Internal500).await;
        assert_eq!((seen, hits), (answer(500, "InternalError"), 0));
        let (seen, hits, _) = through(Fault::ForwardThen500).await;
        assert_eq!((seen, hits), (answer(500, "InternalError"), 1));
        let (seen, hits, _) = through(Fault::Throttle429).await;
        let Seen::Answer(status, retry_after, _) = seen else { panic!("expected an answer, got {seen:?}") };
        assert_eq!((status, retry_after.as_deref(), hits), (429, Some("1"), 0));
    }

    #[tokio::test]
    async fn the_same_seed_draws_the_same_faults() {
        let statuses = |seed| async move {
            let (upstream, _) = echo_upstream().await;
            let proxy = FaultProxy::builder(upstream)
                .seed(seed)
                .rate(0.5)
                .mix([(Fault::Busy503, 1), (Fault::Internal500, 3)])
                .start()
                .await
                .unwrap();
            let mut seen = Vec::new();
            for _ in 0..40 {
                let Seen::Answer(status, ..) = send(&proxy).await else { panic!("no fault here resets") };
                seen.push(status);
            }
            (seen, proxy.stats())
        };
        let (a, stats) = statuses(7).await;
        assert_eq!(statuses(7).await.0, a);
        assert_ne!(statuses(8).await.0, a);
        let count = |s| a.iter().filter(|x| **x == s).count() as u64;
        assert_eq!((count(503), count(500)), (stats.count(Fault::Busy503), stats.count(Fault::Internal500)));
        assert!((5..=35).contains(&stats.total_faults()), "{stats}");
    }

    #[tokio::test]
    async fn bad_settings_are_refused() {
        let upstream = SocketAddr::from((Ipv4Addr::LOCALHOST, 1));
        for builder in [
            FaultProxy::builder(upstream).rate(1.5),
            FaultProxy::builder(upstream).rate(0.1).mix([]),
            FaultProxy::builder(SocketAddr::from(([10, 0, 0, 1], 80))),
        ] {
            let err = builder.start().await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        }
    }
}
