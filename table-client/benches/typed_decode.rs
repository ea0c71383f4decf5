//! The typed fast path against the generic one, on the embedded engine (issue 11); the page
//! decoders are measured in the `wire` bench's `page_decode` group.
//!
//! `typed_point_reads` (interleaved rounds only) decodes a captured point read of the page's
//! first entity into `Customer`, as the HTTP backend does, once per row of the page.
//!
//! `engine_typed_scan` reads 1000-row pages of a 10 000-entity embedded table: rows into
//! `Entity`s then `from_entity` (before) against `Engine::query_as` with `from_parts`.
//!
//! Run: `cargo bench -p table-client --bench typed_decode`. On a loaded machine, where one
//! variant measured after another sees other load, `TYPED_DECODE_ROUNDS=41 cargo bench -p
//! table-client --bench typed_decode` instead times the variants of the page decoders (see
//! `support/page.rs`) and of the engine scan in interleaved rounds and prints each one's median and its median ratio to the group's first.

// A bench's fixtures are its own: a failure to build or decode them should stop it loudly.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use chrono::DateTime;
use criterion::{Criterion, Throughput, criterion_group};
use table_client::TableEntity;
use table_client::engine::Engine;
use table_client::wire::{JsonDecoder, decode_point_read, decode_query_page};
use table_core::QueryRequest;
use table_core::typed::Decoder;
use uuid::Uuid;

#[path = "support/page.rs"]
mod page;
#[path = "support/rounds.rs"]
mod rounds;

use page::{AZURITE_PAGE, AZURITE_PAGE_ROWS, Customer};

/// A point read of the page's first entity, as Azurite answers it (captured with the page,
/// by `cargo run -p conformance --bin capture_page`).
const AZURITE_POINT_READ: &[u8] = include_bytes!("fixtures/azurite_point_read.json");

/// As many typed point reads of [`AZURITE_POINT_READ`] as the page has rows, so that a
/// variant's figures compare with the page's, row for row.
fn typed_point_reads() {
    for _ in 0..AZURITE_PAGE_ROWS {
        let read = decode_point_read(
            black_box(AZURITE_POINT_READ),
            None,
            "partition-0001",
            "row-000000",
            JsonDecoder::<Customer>::of(),
        );
        drop(black_box(read.unwrap()));
    }
}

fn customer(i: u32) -> Customer {
    let base = 1_700_000_000 + i64::from(i) * 3607;
    Customer {
        partition: "partition-0001".into(),
        row: format!("row-{i:06}"),
        name: format!("customer number {i}"),
        age: (i % 100) as i32,
        visits: 1_099_511_627_776 + i64::from(i),
        balance: f64::from(i) * 1.25 + 0.5,
        active: i.is_multiple_of(2),
        joined: DateTime::from_timestamp(base, 123_456_700).expect("in range"),
        id: Uuid::from_u128(0x5eed_0000_0000_0000_0000_0000_0000_0000 + u128::from(i)),
        avatar: (0..16).map(|b| (b * 31 + i) as u8).collect(),
        timestamp: None,
        etag: None,
    }
}

/// A 10 000-entity embedded table, and a request for its first 1000 rows.
fn engine_table() -> (Engine, QueryRequest) {
    let engine = Engine::new();
    engine.create_table("customers").unwrap();
    for i in 0..10_000 {
        engine.insert("customers", customer(i).to_entity().unwrap()).unwrap();
    }
    (engine, QueryRequest { top: Some(1000), ..QueryRequest::default() })
}

fn scan_via_entity(engine: &Engine, request: &QueryRequest) -> Vec<Customer> {
    let page = engine.query("customers", request).unwrap();
    page.entities.into_iter().map(Customer::from_entity).collect::<Result<_, _>>().unwrap()
}

fn scan_from_parts(engine: &Engine, request: &QueryRequest) -> Vec<Customer> {
    engine.query_as("customers", request, Decoder::<Customer>::of()).unwrap().0
}

fn engine_scan(c: &mut Criterion) {
    let (engine, request) = engine_table();
    let mut group = c.benchmark_group("engine_typed_scan");
    group.throughput(Throughput::Elements(1000));
    group.bench_function("via_entity", |b| b.iter(|| scan_via_entity(&engine, black_box(&request))));
    group.bench_function("from_parts", |b| b.iter(|| scan_from_parts(&engine, black_box(&request))));
    group.finish();
}

/// A named piece of work, run ten times per round.
type Variant<'a> = (&'a str, Box<dyn Fn() + 'a>);

/// Each variant timed once per round, in turn; per variant the median time of ten runs and
/// the median ratio to the first variant within a round. With `TYPED_DECODE_ONLY=<name>`,
/// only that variant runs (to profile it alone, e.g. under callgrind) and nothing is reported.
fn interleaved(rounds: usize, variants: &[Variant<'_>]) {
    if let Ok(only) = std::env::var("TYPED_DECODE_ONLY") {
        for (_, run) in variants.iter().filter(|(name, _)| *name == only) {
            for _ in 0..rounds * 10 {
                run();
            }
        }
        return;
    }
    let mut times = vec![Vec::new(); variants.len()];
    for _ in 0..rounds {
        for (i, (_, run)) in variants.iter().enumerate() {
            let start = std::time::Instant::now();
            for _ in 0..10 {
                run();
            }
            times[i].push(start.elapsed().as_secs_f64() * 100.0);
        }
    }
    let names: Vec<_> = variants.iter().map(|(name, _)| (format!("{name:20}"), *name)).collect();
    rounds::report(&names, &times, "ms", 3);
}

fn interleaved_all(rounds: usize) {
    page::check_readers();
    let page = AZURITE_PAGE;
    interleaved(
        rounds,
        &[
            ("serde_struct_floor", Box::new(|| drop(black_box(page::floor(page))))),
            ("generic_entity", Box::new(|| drop(black_box(decode_query_page(page).unwrap())))),
            ("typed_via_entity", Box::new(|| drop(black_box(page::typed_via_entity(page))))),
            ("typed", Box::new(|| drop(black_box(page::typed(page))))),
            ("typed_point_reads", Box::new(typed_point_reads)),
        ],
    );
    let (engine, request) = engine_table();
    interleaved(
        rounds,
        &[
            ("scan_via_entity", Box::new(|| drop(black_box(scan_via_entity(&engine, &request))))),
            ("scan_from_parts", Box::new(|| drop(black_box(scan_from_parts(&engine, &request))))),
        ],
    );
}

criterion_group!(benches, engine_scan);

fn main() {
    if let Some(rounds) = std::env::var("TYPED_DECODE_ROUNDS").ok().and_then(|r| r.parse().ok()) {
        interleaved_all(rounds);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
