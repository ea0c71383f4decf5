//! The harness itself: Azurite starts, answers on loopback, is shared within a process and dies
//! with it; a missing tool is a loud skip or, when required, a failure; the Python SDK venv
//! runs the interop script and round-trips every EDM type through Azurite.
//!
//! Scenarios that need another environment (no `node` on `PATH`, a process that exits) re-run
//! this test binary as a child with `HARNESS_CHILD` set; the child runs only the test that
//! spawned it and does its half of the scenario.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use conformance::azurite::{azurite, unique_table_name};
use conformance::python::python;

/// Set in a child run; names what the child should do.
const CHILD: &str = "HARNESS_CHILD";

/// Re-runs this binary for test `name` only, with `HARNESS_CHILD=role` and the given changes
/// to the environment.
fn run_child(name: &str, role: &str, set: &[(&str, &str)], unset: &[&str]) -> Output {
    let mut command = Command::new(std::env::current_exe().expect("the test binary knows its path"));
    command
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, role)
        .envs(set.iter().copied());
    for var in unset {
        command.env_remove(var);
    }
    command.output().expect("the test binary can run itself")
}

fn text(output: &Output) -> String {
    format!(
        "status {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `host:port` of an endpoint such as `http://127.0.0.1:1234/devstoreaccount1`.
fn authority(endpoint: &str) -> &str {
    let rest = endpoint.strip_prefix("http://").expect("Azurite endpoints are http");
    rest.split('/').next().unwrap_or(rest)
}

/// A raw HTTP/1.1 GET; the response head and body, or `None` if nothing answered.
fn get(authority: &str, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(authority).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

#[test]
fn azurite_answers_http_on_loopback() {
    let Some(azurite) = azurite() else { return };
    let authority = authority(&azurite.endpoint);
    assert!(authority.starts_with("127.0.0.1:"), "{authority}");
    let response = get(authority, "/devstoreaccount1/Tables").expect("Azurite answers");
    // Unsigned, so 403: any HTTP answer from Azurite's table service proves it is up.
    assert!(response.starts_with("HTTP/1.1 "), "{response}");
    assert!(response.contains("Server: Azurite-Table/"), "{response}");
    assert!(azurite.connection_string.contains(&format!("TableEndpoint={};", azurite.endpoint)));
}

#[test]
fn every_call_in_a_process_shares_one_instance() {
    let Some(first) = azurite() else { return };
    let from_threads: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(|| azurite().map(|a| a as *const _ as usize)))
        .map(|h| h.join().unwrap())
        .collect();
    assert!(from_threads.iter().all(|p| *p == Some(first as *const _ as usize)));
}

#[test]
fn azurite_dies_with_the_test_process() {
    if std::env::var(CHILD).as_deref() == Ok("start-azurite") {
        // Child: start a private Azurite, report it, exit; the watchdog must stop it.
        if let Some(a) = azurite() {
            println!("ENDPOINT={}", a.endpoint);
        }
        return;
    }
    if azurite().is_none() {
        return;
    }
    let child =
        run_child("azurite_dies_with_the_test_process", "start-azurite", &[], &["AZURITE_TABLE_ENDPOINT"]);
    assert!(child.status.success(), "{}", text(&child));
    let stdout = String::from_utf8_lossy(&child.stdout);
    let stderr = String::from_utf8_lossy(&child.stderr);
    if stderr.contains("AZURITE TESTS SKIPPED") {
        // Only possible when this process uses AZURITE_TABLE_ENDPOINT and has no node: pass
        // the child's banner on, past libtest's capture, so the skip stays visible.
        std::io::stderr().write_all(stderr.as_bytes()).expect("stderr is writable");
        return;
    }
    let endpoint = stdout
        .lines()
        .find_map(|l| l.split_once("ENDPOINT=").map(|(_, e)| e.trim()))
        .unwrap_or_else(|| panic!("the child started no Azurite\n{}", text(&child)));
    let authority = authority(endpoint);
    // The watchdog polls once a second and allows two seconds for a graceful stop.
    let deadline = Instant::now() + Duration::from_secs(15);
    while get(authority, "/").is_some() {
        assert!(Instant::now() < deadline, "Azurite at {authority} outlived its test process");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn missing_node_skips_loudly_unless_required() {
    if std::env::var(CHILD).as_deref() == Ok("no-node") {
        assert_eq!(azurite(), None);
        println!("SKIPPED-AS-EXPECTED");
        return;
    }
    let name = "missing_node_skips_loudly_unless_required";
    let unset = ["AZURITE_TABLE_ENDPOINT", "REQUIRE_AZURITE"];
    let skipped = run_child(name, "no-node", &[("PATH", "/nonexistent")], &unset);
    let out = text(&skipped);
    assert!(skipped.status.success(), "{out}");
    assert!(out.contains("SKIPPED-AS-EXPECTED"), "{out}");
    assert!(out.contains("=== AZURITE TESTS SKIPPED: node/npm not found"), "{out}");
    assert!(out.contains("Set REQUIRE_AZURITE=1"), "{out}");

    let required =
        run_child(name, "no-node", &[("PATH", "/nonexistent"), ("REQUIRE_AZURITE", "1")], &unset[..1]);
    let out = text(&required);
    assert!(!required.status.success(), "{out}");
    assert!(out.contains("=== AZURITE TESTS SKIPPED: node/npm not found"), "{out}");
    assert!(out.contains("REQUIRE_AZURITE is set"), "{out}");
    assert!(!out.contains("SKIPPED-AS-EXPECTED"), "{out}");
}

#[test]
fn missing_python_skips_loudly_unless_required() {
    if std::env::var(CHILD).as_deref() == Ok("no-python") {
        assert_eq!(python(), None);
        println!("SKIPPED-AS-EXPECTED");
        return;
    }
    let name = "missing_python_skips_loudly_unless_required";
    let skipped = run_child(name, "no-python", &[("PATH", "/nonexistent")], &["REQUIRE_PYTHON"]);
    let out = text(&skipped);
    assert!(skipped.status.success(), "{out}");
    assert!(out.contains("SKIPPED-AS-EXPECTED"), "{out}");
    assert!(out.contains("=== PYTHON INTEROP TESTS SKIPPED: python3 not found"), "{out}");

    let required = run_child(name, "no-python", &[("PATH", "/nonexistent"), ("REQUIRE_PYTHON", "1")], &[]);
    let out = text(&required);
    assert!(!required.status.success(), "{out}");
    assert!(out.contains("REQUIRE_PYTHON is set"), "{out}");
}

#[test]
fn python_venv_runs_the_interop_script() {
    let Some(python) = python() else { return };
    let help = python.run("interop.py", &["--help"], &[]).unwrap();
    assert!(help.contains("usage: interop.py") && help.contains("Edm.Int64"), "{help}");
    let err = python.run("interop.py", &["bogus"], &[]).unwrap_err().to_string();
    assert!(err.contains("invalid choice"), "{err}");
}

#[test]
fn python_sdk_round_trips_every_edm_type_through_azurite() {
    let (Some(python), Some(azurite)) = (python(), azurite()) else {
        return;
    };
    let table = unique_table_name("harness");
    let cs = &azurite.connection_string;
    let written = python.interop_write(cs, &table, "p'1").unwrap();
    let read = python.interop_read(cs, &table, "p'1").unwrap();

    let edm_types: std::collections::BTreeSet<_> =
        written.iter().flat_map(|e| e.properties.values().map(|v| v.edm_type())).collect();
    assert_eq!(edm_types.len(), 8, "the corpus covers every EDM type: {edm_types:?}");
    assert!(written.len() >= 8, "{written:?}");

    assert_eq!(read.len(), written.len());
    for (w, r) in written.iter().zip(&read) {
        assert_eq!((&w.partition_key, &w.row_key), (&r.partition_key, &r.row_key));
        // Value's equality is exact (NaN equals NaN, doubles by value, DateTime to the tick).
        assert_eq!(w.properties, r.properties, "row {}", w.row_key);
        assert!(r.timestamp.is_some(), "row {}", r.row_key);
        assert_eq!(w.etag, r.etag, "row {}", w.row_key);
    }
}
