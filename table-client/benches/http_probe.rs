//! Client instructions per HTTP request and per scanned row, for a profiler that counts them
//! (callgrind): repeatable on a loaded machine, where timings are not.
//!
//! Against an in-process `table-server` (its own runtime on its own threads), the client on a
//! current-thread runtime on the main thread, so the main thread's count is the client's own
//! user-space work (the kernel's is not counted). Phases, each in its own function:
//! `probe_inserts` (`N` typed inserts one by one), `probe_gets` (each of them read back),
//! `probe_scans` (`SCANS` typed scans of the table, `N` rows in pages of 1000),
//! `probe_empty_queries` (`N` queries answered by an empty page) and `probe_bare_pages`
//! (`SCANS` times each page of the scan fetched with a bare `reqwest` GET through a read-only
//! SAS, the body read to bytes and not decoded: what any client pays before decoding). E.g.
//!
//! ```text
//! cargo bench -p table-client --bench http_probe --no-run
//! valgrind --tool=callgrind --separate-threads=yes --toggle-collect='*probe_scans*' \
//!     target/release/deps/http_probe-<hash> 3000
//! ```
//!
//! and divide the main thread's total by the phase's requests or rows. Without a profiler it
//! only prints the phases' wall times, which are not a benchmark.

// Bench setup fails loudly: an error is the bench's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use futures::StreamExt;
use tokio::runtime::Runtime;

use table_client::auth::{TableSasBuilder, TableSasPermissions};
use table_client::engine::Engine;
use table_client::{EntityKey, MAX_PAGE_SIZE, TypedTable};

#[path = "support/bare_get.rs"]
mod bare_get;
#[path = "support/customer.rs"]
mod customer;
#[path = "support/typed_probes.rs"]
mod typed_probes;

use bare_get::bare_get;
use customer::{Customer, customer};
use typed_probes::{probe_gets, probe_inserts};

/// Scans of the whole table (and fetches of its pages) in the scan phases.
const SCANS: u32 = 5;

// Each phase is a plain function that drives its own loop to the end, as those of
// `typed_probes` do.
#[inline(never)]
fn probe_scans(runtime: &Runtime, table: &TypedTable<Customer>, rows: u32) {
    runtime.block_on(async {
        for _ in 0..SCANS {
            let seen = table.query().table_scan().stream().fold(0u32, |n, r| async move {
                std::hint::black_box(r.expect("scan row"));
                n + 1
            });
            assert_eq!(seen.await, rows);
        }
    });
}

#[inline(never)]
fn probe_empty_queries(runtime: &Runtime, table: &TypedTable<Customer>, queries: u32) {
    runtime.block_on(async {
        for _ in 0..queries {
            // A partition the table does not have.
            assert!(table.query().partition("region99").collect().await.expect("empty query").is_empty());
        }
    });
}

/// Each of `pages` (URLs of the scan's pages) fetched [`SCANS`] times, bodies read to bytes.
#[inline(never)]
fn probe_bare_pages(runtime: &Runtime, http: &reqwest::Client, pages: &[String]) -> usize {
    runtime.block_on(async {
        let mut bytes = 0;
        for _ in 0..SCANS {
            for page in pages {
                bytes += bare_get(http, page).await.0.len();
            }
        }
        bytes
    })
}

fn main() {
    let count: u32 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(3000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let client = conformance::server::client_for(Engine::new());
    let table = runtime.block_on(client.create_table("probe")).expect("a new table");
    let typed = table.typed::<Customer>();
    let customers: Vec<Customer> = (0..count).map(customer).collect();
    // A scattered order (a stride coprime with the count), keys made before the phase.
    let keys: Vec<EntityKey> = (0..u64::from(count))
        .map(|i| &customers[(i * 7_919 % u64::from(count)) as usize])
        .map(|c| Customer::key(c.region, c.number).expect("valid keys"))
        .collect();

    // The pages' URLs (followed once, before the phases), through a read-only SAS.
    let sas = TableSasBuilder::new(table.name())
        .permissions(TableSasPermissions::parse("r").unwrap())
        .expiry(chrono::Utc::now() + chrono::Duration::hours(1));
    let base = format!("{}&$top={MAX_PAGE_SIZE}", table.generate_sas_url(&sas).unwrap());
    let http = reqwest::Client::new();

    let mut timings = Vec::new();
    let mut timed = |name: &str, phase: &mut dyn FnMut()| {
        let started = Instant::now();
        phase();
        timings.push(format!("{name} {:?}", started.elapsed()));
    };
    timed("inserts", &mut || probe_inserts(&runtime, &typed, &customers));
    timed("gets", &mut || probe_gets(&runtime, &typed, &keys));
    timed("scans", &mut || probe_scans(&runtime, &typed, count));
    timed("empty queries", &mut || probe_empty_queries(&runtime, &typed, count));
    let mut pages = vec![base.clone()];
    while let (_, Some((pk, rk))) = runtime.block_on(bare_get(&http, pages.last().unwrap())) {
        pages.push(format!("{base}&NextPartitionKey={pk}&NextRowKey={rk}"));
    }
    let mut bytes = 0;
    timed("bare pages", &mut || bytes = probe_bare_pages(&runtime, &http, &pages));
    println!(
        "{count} rows, {} pages of {} bytes in all, {SCANS} scans: {}",
        pages.len(),
        bytes / SCANS as usize,
        timings.join(", ")
    );
}
