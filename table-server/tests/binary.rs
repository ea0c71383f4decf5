//! The `table-server` binary: it serves the development account where it says it listens,
//! and stops cleanly on SIGTERM, even with its stdout closed.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts the binary on a free loopback port without auth, with `flags`; returns the process
/// and the `host:port` its banner names. Its stdout is closed once the banner is read, so every
/// test also checks that a server whose log reader is gone goes on serving and stops cleanly.
fn start(flags: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_table-server"))
        .args(["--port", "0", "--no-auth"])
        .args(flags)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    stdout.read_line(&mut banner).unwrap();
    // "table-server listening on http://127.0.0.1:PORT/devstoreaccount1 (no auth)"
    let address = banner.split("http://").nth(1).and_then(|rest| rest.split('/').next()).unwrap().to_owned();
    assert!(address.starts_with("127.0.0.1:"), "{banner}");
    drop(stdout);
    (child, address)
}

#[cfg(unix)]
#[test]
fn serves_until_sigterm_then_exits_cleanly() {
    let (mut child, address) = start(&[]);

    let mut stream = TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: {address}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "table-server did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(TcpStream::connect(&address).is_err(), "nothing listens after the exit");
}

#[test]
fn prints_its_version() {
    let output = Command::new(env!("CARGO_BIN_EXE_table-server")).arg("--version").output().unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("table-server {}", env!("CARGO_PKG_VERSION"))
    );
}

/// `--page-size` and `--fail-call` reach the engine the binary serves.
#[cfg(unix)]
#[test]
fn engine_flags_take_effect() {
    let (mut child, address) = start(&["--page-size", "1", "--fail-call", "4=busy"]);
    let send = |method: &str, path: &str, body: &str| {
        let mut stream = TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "{method} /devstoreaccount1/{path} HTTP/1.1\r\nHost: {address}\r\nAccept: application/json\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    assert!(send("POST", "Tables", r#"{"TableName":"flags"}"#).starts_with("HTTP/1.1 201"));
    for rk in ["1", "2"] {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{rk}"}}"#);
        assert!(send("POST", "flags", &body).starts_with("HTTP/1.1 201"));
    }
    let busy = send("GET", "flags()", "");
    assert!(busy.starts_with("HTTP/1.1 503") && busy.contains("ServerBusy"), "{busy}");
    let page = send("GET", "flags()", "");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.to_ascii_lowercase().contains("x-ms-continuation-nextpartitionkey"),
        "one entity a page: {page}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}
