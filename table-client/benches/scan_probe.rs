//! Client instructions per row of a typed scan over HTTP against Azurite, one phase at a time,
//! for a profiler that counts them (callgrind): where the `client` bench's CPU per scanned row
//! goes, on a loaded machine where timings cannot tell.
//!
//! The process fills a fresh Azurite table with [`ROWS`] customers (3 pages of 1000), fetches
//! its pages once (their URLs through a read-only SAS, and their bodies), then runs the phase
//! named by `SCAN_PROBE_PHASE` `SCAN_PROBE_K` times (default 1), on a multi-thread runtime as
//! the `client` bench's:
//!
//! - `scan`: the typed scan, `typed.query().table_scan().stream()` folded row by row;
//! - `bare`: each page fetched with a bare `reqwest` GET, the body read to bytes, not decoded;
//! - `decode`: each fetched body decoded with `wire::decode_query_page_as` (no request);
//! - `floor`: each fetched body decoded with `serde_json::from_slice` into the plain serde
//!   struct of the same fields (`FloorCustomers`), the serde-struct floor of issue 11's budget;
//! - `empty`: as many queries through this client as the scan makes, each answered with an
//!   empty page (a partition the table does not have): request handling, budget (a).
//!
//! The budget of issue 11, in instructions per row: the scan below `floor` + `empty` (budget
//! (a)) and below `floor` + `bare` (budget (b)), as the `client` bench compares them in CPU time.
//!
//! The setup is the same whatever the phase and `K`, so the phase's instructions per row are
//! `(total(K=3) - total(K=1)) / (2 * ROWS)`, every thread of this process counted (Azurite is
//! another process, not traced; start it once and name it with `AZURITE_TABLE_ENDPOINT` so
//! that each run reuses it):
//!
//! ```text
//! cargo bench -p table-client --bench scan_probe --no-run
//! SCAN_PROBE_PHASE=scan SCAN_PROBE_K=3 valgrind --tool=callgrind --dump-instr=no \
//!     target/release/deps/scan_probe-<hash>
//! ```
//!
//! Compare the phases function by function with `callgrind_annotate --inclusive=yes`. Read a
//! `memcpy` count as bytes copied: glibc copies large blocks with `rep movsb`, which callgrind
//! counts once per byte (a 512 KiB copy shows as 524k instructions), so copies weigh far more
//! there than in time. The kernel's work (receiving the pages) is not counted at all.
//!
//! Read glibc's allocator (`_int_malloc`, `malloc_consolidate`, `unlink_chunk`) apart from the
//! rest: its cost per row depends on the heap the setup left, and swings between runs of one
//! binary (the floor phase measured 12,331 and 13,328 instructions per row, the difference all
//! in those three). Any allocation of 1 KiB or more that the thread cache cannot serve, or
//! free of 64 KiB or more, merges the small chunks freed since (a scan's rows, as its consumer
//! drops them) and sends the next page's small allocations down `_int_malloc`'s slow path;
//! reqwest and hyper make such allocations for every request, so this cannot be avoided from
//! the client's buffers alone. Run each `K` several times and compare medians, or compare the
//! client's own functions; `GLIBC_TUNABLES=glibc.malloc.tcache_count=5000` (every freed row in
//! the thread cache) shows what the allocator adds.
//!
//! Without a profiler it prints the phase's wall time, which is not a benchmark.

// Bench setup fails loudly: an error is the bench's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use futures::StreamExt;
use table_client::auth::{TableSasBuilder, TableSasPermissions};
use table_client::{MAX_PAGE_SIZE, Operation, TableEntity, TableServiceClient, TypedTable};

#[path = "support/bare_get.rs"]
mod bare_get;
#[path = "support/customer.rs"]
mod customer;
#[path = "support/floor_customer.rs"]
mod floor_customer;
// Only the floor's `Edm.Int64` reader is used here.
#[allow(dead_code)]
#[path = "support/page.rs"]
mod page;

use bare_get::bare_get;
use customer::{Customer, customer};
use floor_customer::FloorCustomers;

/// Rows of the scanned table: the `client` bench's CPU scan.
const ROWS: u32 = 3000;

// Each phase drives its own loop to the end, so that a profile names it.
#[inline(never)]
async fn probe_scans(table: &TypedTable<Customer>, k: u32) {
    for _ in 0..k {
        let seen = table.query().table_scan().stream().fold(0u32, |n, r| async move {
            std::hint::black_box(r.expect("scan row"));
            n + 1
        });
        assert_eq!(seen.await, ROWS);
    }
}

#[inline(never)]
async fn probe_bare_pages(http: &reqwest::Client, pages: &[String], k: u32) {
    for _ in 0..k {
        for page in pages {
            std::hint::black_box(bare_get(http, page).await);
        }
    }
}

#[inline(never)]
fn probe_decodes(bodies: &[bytes::Bytes], k: u32) {
    decode_each(bodies, k, |body| table_client::wire::decode_query_page_as::<Customer>(body).unwrap().len());
}

#[inline(never)]
fn probe_floors(bodies: &[bytes::Bytes], k: u32) {
    decode_each(bodies, k, |body| serde_json::from_slice::<FloorCustomers>(body).unwrap().value.len());
}

/// Decodes each body `k` times with `decode`, which returns the rows it read: all of them.
fn decode_each(bodies: &[bytes::Bytes], k: u32, decode: impl Fn(&[u8]) -> usize) {
    for _ in 0..k {
        let rows: usize = bodies.iter().map(|body| decode(std::hint::black_box(body))).sum();
        assert_eq!(rows, ROWS as usize);
    }
}

#[inline(never)]
async fn probe_empty_queries(table: &TypedTable<Customer>, queries: usize, k: u32) {
    for _ in 0..k {
        for _ in 0..queries {
            assert!(table.query().partition("region99").collect().await.expect("empty query").is_empty());
        }
    }
}

async fn run(phase: &str, k: u32) {
    let azurite = tokio::task::spawn_blocking(conformance::azurite::azurite)
        .await
        .expect("the Azurite harness")
        .expect("Azurite (Node.js) for this probe");
    let client = TableServiceClient::from_connection_string(&azurite.connection_string)
        .expect("the harness's connection string");
    let table = client.create_table(&conformance::azurite::unique_table_name("scanprobe")).await.unwrap();
    let report = table.bulk((0..ROWS).map(|n| Operation::Insert(customer(n).to_entity().unwrap())), 8).await;
    assert!(report.is_success(), "fill failed: {:?}", report.failures().next());

    // The pages' URLs and bodies, fetched once whatever the phase (the setup is the same).
    let sas = TableSasBuilder::new(table.name())
        .permissions(TableSasPermissions::parse("r").unwrap())
        .expiry(chrono::Utc::now() + chrono::Duration::hours(1));
    let base = format!("{}&$top={MAX_PAGE_SIZE}", table.generate_sas_url(&sas).unwrap());
    let http = reqwest::Client::new();
    let mut pages = vec![base.clone()];
    let mut bodies = Vec::new();
    loop {
        let (body, next) = bare_get(&http, pages.last().unwrap()).await;
        bodies.push(body);
        let Some((pk, rk)) = next else { break };
        pages.push(format!("{base}&NextPartitionKey={pk}&NextRowKey={rk}"));
    }
    let typed = table.typed::<Customer>();

    let started = Instant::now();
    match phase {
        "scan" => probe_scans(&typed, k).await,
        "bare" => probe_bare_pages(&http, &pages, k).await,
        "decode" => probe_decodes(&bodies, k),
        "floor" => probe_floors(&bodies, k),
        "empty" => probe_empty_queries(&typed, pages.len(), k).await,
        other => panic!("SCAN_PROBE_PHASE is scan, bare, decode, floor or empty, not {other:?}"),
    }
    println!("{phase} x{k}: {ROWS} rows in {} pages, {:?}", pages.len(), started.elapsed());
}

fn main() {
    let phase = std::env::var("SCAN_PROBE_PHASE").unwrap_or_else(|_| "scan".to_owned());
    let k = std::env::var("SCAN_PROBE_K").ok().and_then(|k| k.parse().ok()).unwrap_or(1);
    // As the `client` bench's runtime: the probed work is that bench's.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(run(&phase, k));
}
