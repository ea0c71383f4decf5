//! The typed fast path against the generic one and the serde floor (issue 11).
//!
//! `page_decode_typed` decodes one 1000-entity query page, generated here in the exact shape
//! Azurite answers (eight properties of eight EDM types, `odata.etag`, `Timestamp`, annotations
//! before their values):
//! - `serde_struct_floor`: `serde_json::from_slice` into a plain `#[derive(Deserialize)]`
//!   struct with typed fields, checking no annotation (the floor; goal: typed within 1.2x);
//! - `generic_entity`: our decoder into `Entity`s;
//! - `typed_via_entity`: `Entity`s, then `from_entity` (the typed path before the fast one);
//! - `typed`: the fast path, `read_query_page` then `TableEntity::from_parts`.
//!
//! `engine_typed_scan` reads 1000-row pages of a 10 000-entity embedded table: rows into
//! `Entity`s then `from_entity` (before) against `Engine::query_as` with `from_parts`.
//!
//! Run: `cargo bench -p table-client --bench typed_decode`. On a loaded machine, where one
//! variant measured after another sees other load, `TYPED_DECODE_ROUNDS=41 cargo bench -p
//! table-client --bench typed_decode` instead times the variants of each group in interleaved
//! rounds and prints each one's median and its median ratio to the group's first.

// A bench's fixtures are its own: a failure to build or decode them should stop it loudly.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use criterion::{Criterion, Throughput, criterion_group};
use serde::{Deserialize, Deserializer};
use table_client::engine::Engine;
use table_client::wire::{decode_query_page, read_query_page};
use table_client::{ETag, TableEntity};
use table_core::QueryRequest;
use uuid::Uuid;

#[derive(Debug, Clone, TableEntity)]
#[table(partition_key = "{partition}", row_key = "{row}", rename_all = "PascalCase")]
struct Customer {
    #[table(key_only)]
    partition: String,
    #[table(key_only)]
    row: String,
    name: String,
    age: i32,
    visits: i64,
    balance: f64,
    active: bool,
    joined: DateTime<Utc>,
    id: Uuid,
    avatar: Vec<u8>,
    #[table(timestamp)]
    timestamp: Option<DateTime<Utc>>,
    #[table(etag)]
    etag: Option<ETag>,
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

/// A 1000-entity page in Azurite's minimal-metadata form.
fn azurite_page() -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let rows: Vec<String> = (0..1000)
        .map(|i| {
            let c = customer(i);
            let stamp = format!("2026-11-23T02:53:43.{:07}Z", 4_965_500 + i);
            format!(
                concat!(
                    r#"{{"odata.etag":"W/\"datetime'{etag}'\"","PartitionKey":"{pk}","RowKey":"{rk}","#,
                    r#""Active":{active},"Age":{age},"Avatar@odata.type":"Edm.Binary","Avatar":"{avatar}","#,
                    r#""Balance":{balance:?},"Id@odata.type":"Edm.Guid","Id":"{id}","#,
                    r#""Joined@odata.type":"Edm.DateTime","Joined":"{joined}","Name":"{name}","#,
                    r#""Visits@odata.type":"Edm.Int64","Visits":"{visits}","Timestamp":"{stamp}"}}"#
                ),
                etag = stamp.replace(':', "%3A"),
                pk = c.partition,
                rk = c.row,
                active = c.active,
                age = c.age,
                avatar = b64.encode(&c.avatar),
                balance = c.balance,
                id = c.id,
                joined = table_core::datetime::format_datetime(c.joined),
                name = c.name,
                visits = c.visits,
                stamp = stamp,
            )
        })
        .collect();
    format!(
        r#"{{"odata.metadata":"http://127.0.0.1/devstoreaccount1/$metadata#t","value":[{}]}}"#,
        rows.join(",")
    )
    .into_bytes()
}

#[derive(Deserialize)]
struct FloorPage {
    value: Vec<FloorRow>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
#[allow(dead_code)] // Decoded to be measured, not read.
struct FloorRow {
    #[serde(rename = "odata.etag")]
    etag: String,
    partition_key: String,
    row_key: String,
    timestamp: DateTime<Utc>,
    name: String,
    age: i32,
    #[serde(deserialize_with = "i64_from_string")]
    visits: i64,
    balance: f64,
    active: bool,
    joined: DateTime<Utc>,
    id: Uuid,
    #[serde(deserialize_with = "bytes_from_base64")]
    avatar: Vec<u8>,
}

fn i64_from_string<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    <&str>::deserialize(d)?.parse().map_err(serde::de::Error::custom)
}

fn bytes_from_base64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    base64::engine::general_purpose::STANDARD
        .decode(<&str>::deserialize(d)?)
        .map_err(serde::de::Error::custom)
}

fn typed(page: &[u8]) -> Vec<Customer> {
    read_query_page(page).unwrap().into_iter().map(Customer::from_parts).collect::<Result<_, _>>().unwrap()
}

fn typed_via_entity(page: &[u8]) -> Vec<Customer> {
    decode_query_page(page).unwrap().into_iter().map(Customer::from_entity).collect::<Result<_, _>>().unwrap()
}

fn page_decode(c: &mut Criterion) {
    let page = azurite_page();
    let decoded = typed(&page);
    assert_eq!(decoded.len(), 1000);
    assert!(decoded.iter().all(|c| c.timestamp.is_some() && c.etag.is_some()));
    assert_eq!(typed_via_entity(&page).len(), 1000);
    assert_eq!(serde_json::from_slice::<FloorPage>(&page).unwrap().value.len(), 1000);
    let mut group = c.benchmark_group("page_decode_typed");
    group.throughput(Throughput::Elements(1000));
    group.bench_function("serde_struct_floor", |b| {
        b.iter(|| serde_json::from_slice::<FloorPage>(black_box(&page)).unwrap())
    });
    group.bench_function("generic_entity", |b| b.iter(|| decode_query_page(black_box(&page)).unwrap()));
    group.bench_function("typed_via_entity", |b| b.iter(|| typed_via_entity(black_box(&page))));
    group.bench_function("typed", |b| b.iter(|| typed(black_box(&page))));
    group.finish();
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
    engine.query_as("customers", request, Customer::from_parts).unwrap().0
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
/// the median ratio to the first variant within a round.
fn interleaved(rounds: usize, variants: &[Variant<'_>]) {
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
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let first = variants[0].0;
    for (i, (name, _)) in variants.iter().enumerate() {
        let ratios = times[i].iter().zip(&times[0]).map(|(t, base)| t / base).collect();
        println!("{name:20} median {:.3} ms, {:.2}x {first}", median(times[i].clone()), median(ratios));
    }
}

fn interleaved_all(rounds: usize) {
    let page = azurite_page();
    interleaved(
        rounds,
        &[
            (
                "serde_struct_floor",
                Box::new(|| drop(black_box(serde_json::from_slice::<FloorPage>(&page).unwrap()))),
            ),
            ("generic_entity", Box::new(|| drop(black_box(decode_query_page(&page).unwrap())))),
            ("typed_via_entity", Box::new(|| drop(black_box(typed_via_entity(&page))))),
            ("typed", Box::new(|| drop(black_box(typed(&page))))),
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

criterion_group!(benches, page_decode, engine_scan);

fn main() {
    if let Some(rounds) = std::env::var("TYPED_DECODE_ROUNDS").ok().and_then(|r| r.parse().ok()) {
        interleaved_all(rounds);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
