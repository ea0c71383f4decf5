//! Test harness for the conformance suite: the external peers the scenarios in `tests/*.rs`
//! run against besides the embedded engine.
//!
//! - [`azurite`]: one Azurite table service per test process (`azurite::azurite()`), from
//!   `AZURITE_TABLE_ENDPOINT` or installed from npm and started on a free loopback port.
//!   [`azurite::azurite_oauth`] starts a second one over HTTPS (a generated private CA) that
//!   accepts bearer tokens (`--oauth basic`).
//! - [`server`]: one in-process `table-server` per test process, an account and a fresh engine
//!   per test (the third backend: our HTTP client against the engine served over HTTP), and
//!   one over HTTPS (a private CA) for the official SDKs' HTTPS and bearer-token scenarios.
//! - [`target`]: the backends a scenario runs on, and the `scenario!` macro (and
//!   `token_scenario!`, the same on the OAuth Azurite with token auth).
//! - [`token`]: bearer tokens that Azurite accepts and a scriptable counting token credential.
//! - [`python`]: the official Python SDK in a cached venv (`python::python()`), running the
//!   helper scripts in `tests/python/` (interop: every EDM type written and read by the SDK).
//! - [`javascript`]: the official JavaScript SDK (`@azure/data-tables` from npm), running the
//!   scenarios of `tests/js/scenarios.cjs` (every EDM type, batches, paging, ETags, SAS,
//!   errors, table listing) against an endpoint, strictly or with Azurite's deviations; the
//!   Python SDK runs the same scenarios (`tests/python/scenarios.py`).
//! - [`script`]: running those helper scripts, and what the two scenario scripts share (the
//!   [`script::Target`] of a run: endpoint, CA, account key or bearer tokens).
//! - [`fault_proxy`]: a seeded fault-injecting HTTP proxy to put in front of Azurite (resets,
//!   stalls past the client's timeout, 500/503/429, before or after the request is applied).
//! - [`service_error`]: the service's error bodies read in either form (JSON or XML), as
//!   the answer's type names it; [`raw_http`]: answers to raw HTTP requests, as tests read them.
//! - [`fuzz`]: deterministic mutation fuzzers for every parser and decoder, and for whole HTTP
//!   requests to an in-process `table-server` (run by
//!   `tests/fuzz.rs` briefly, and by `cargo run --release -p conformance --bin fuzz` at length).
//!
//! Environment:
//!
//! | variable | effect |
//! |---|---|
//! | `AZURITE_TABLE_ENDPOINT` | use this Azurite (e.g. `http://127.0.0.1:10002/devstoreaccount1`); nothing is started |
//! | `AZURITE_CACHE_DIR` | where Azurite is installed (default `<target>/azurite-cache`) |
//! | `REQUIRE_AZURITE=1` | missing node/npm fails the tests (Azurite and the JavaScript SDK) instead of skipping them |
//! | `JS_SDK_CACHE_DIR` | where the JavaScript SDK is installed (default `<target>/js-sdk-cache`) |
//! | `PYTHON_VENV_DIR` | where the Python SDK venv lives (default `<target>/python-venv`) |
//! | `REQUIRE_PYTHON=1` | missing `python3` fails the tests instead of skipping them |
//! | `CARGO_TARGET_DIR` | honoured for the default cache folders |
//!
//! A skip is never silent: it prints a banner to the process's stderr, past libtest's output
//! capture. An install or start failure is never a skip: it panics with the tool's output.
//! `.ci/run` sets both `REQUIRE_*` switches.

#![deny(missing_docs)]

pub mod azurite;
mod certificates;
pub mod fault_proxy;
pub mod fuzz;
pub mod javascript;
pub mod python;
pub mod raw_http;
pub mod script;
pub mod server;
pub mod service_error;
pub mod target;
pub mod token;
mod tooling;
