//! Helpers shared by this crate's test files.

use std::io::Read;
use std::net::{TcpListener, TcpStream};

/// A raw HTTP server on a loopback port, for answers wiremock cannot give (and for a proxy
/// that records what it receives): it accepts `connections` one after another, reads each
/// request's head, and hands the head and the connection to `answer`. Returns its base URL.
pub fn raw_server(connections: usize, answer: impl Fn(&[u8], TcpStream) + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let Ok(mut stream) = stream else { break };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            answer(&head, stream);
        }
    });
    format!("http://{addr}")
}
