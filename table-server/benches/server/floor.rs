//! The floor: an HTTP server that answers the lean client's inserts and gets without doing
//! anything, on the same stack as table-server (hyper's HTTP/1.1 on tokio's multi-threaded
//! runtime, one worker per core), in its own process. What it reaches is the most any server
//! could reach with this client on this machine, so a server's figures read against it say
//! how much of a phase is the server's work and how much is the HTTP round trip itself.
//!
//! It is this bench binary started again with [`FLOOR_PORT`] set: [`serve_if_asked`] is the
//! first thing `main` does.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Set to a port, the variable that makes this process the floor server on it.
pub const FLOOR_PORT: &str = "SERVER_BENCH_FLOOR_PORT";

/// Serves the floor on `FLOOR_PORT`'s port until killed, when that variable is set; returns
/// at once otherwise.
pub fn serve_if_asked() {
    let Ok(port) = std::env::var(FLOOR_PORT) else { return };
    let port: u16 = port.parse().expect("a port");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async { serve(TcpListener::bind(("127.0.0.1", port)).await.unwrap()).await });
}

/// Answers every connection `listener` accepts, one task each.
pub async fn serve(listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        tokio::spawn(async move {
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(answer)).await;
        });
    }
}

/// A get is answered 200 with the row key its path names (all the lean client checks); any
/// other request 204 (a table created or deleted, an insert). The body is read to its end.
async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let entity = match request.method() {
        &Method::GET => row_key(request.uri().path()).map(|key| format!(r#"{{"RowKey":"{key}"}}"#)),
        _ => None,
    };
    let _ = request.into_body().collect().await;
    let (status, body) = match entity {
        Some(entity) => (StatusCode::OK, entity),
        None => (StatusCode::NO_CONTENT, String::new()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    Ok(response)
}

/// The row key of an entity path, `…(PartitionKey='…',RowKey='<key>')` (the bench's keys need
/// no escaping).
fn row_key(path: &str) -> Option<&str> {
    let key = &path[path.find("RowKey='")? + "RowKey='".len()..];
    Some(&key[..key.find('\'')?])
}
