//! Wire-layer throughput: decoding a full query page and encoding a full batch.
//!
//! `serde_json_value_parse` is the baseline the visitor-based decoder must beat: it only
//! parses the same page into a `serde_json::Value`, before any conversion to entities.
//!
//! `page_decode` decodes a page captured from Azurite (see `support/page.rs`):
//! - `serde_struct_floor`: `serde_json::from_slice` into a plain `#[derive(Deserialize)]`
//!   struct with typed fields, which checks no annotation: the floor a typed decoder is
//!   measured against (the issue's goal: within 1.2x of it);
//! - `generic_entity`: our decoder into `Entity`s (every annotation checked);
//! - `typed_via_entity`: `Entity`s, then `from_entity` (the typed path before the fast one);
//! - `typed`: the fast path, `decode_query_page_as` (the type's property slots, then
//!   `TableEntity::read_through` compiled for the JSON reader).
//!
//! `cargo bench -p table-client --bench wire`

// Benchmark fixtures are built from constants.
#![allow(clippy::unwrap_used)]

use chrono::{DateTime, Utc};
use criterion::{Criterion, Throughput, black_box, criterion_group, criterion_main};
use table_client::wire::{decode_query_page, encode_batch, encode_entity};
use table_core::{Entity, IfMatch, Operation};
use uuid::Uuid;

#[path = "support/page.rs"]
mod page;

use page::AZURITE_PAGE;

fn entity(i: usize) -> Entity {
    let t = DateTime::<Utc>::from_timestamp(1_700_000_000 + i as i64, 123_456_700).unwrap();
    Entity::new("partition-0001", format!("row-{i:06}"))
        .with("Name", format!("customer number {i}"))
        .with("Email", format!("user{i}@example.com"))
        .with("Age", (i % 90) as i32)
        .with("Balance", i as f64 * 1.25)
        .with("Visits", 1_099_511_627_776i64 + i as i64)
        .with("Active", i.is_multiple_of(2))
        .with("Joined", t)
        .with("Id", Uuid::from_u128(i as u128))
}

/// A minimalmetadata page as the service sends it: `odata.etag`, `Timestamp`, annotations.
fn page(n: usize) -> Vec<u8> {
    let mut out =
        String::from(r#"{"odata.metadata":"https://acct.table.core.windows.net/$metadata#bench","value":["#);
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        let body = encode_entity(&entity(i));
        out.push_str(
            r#"{"odata.etag":"W/\"datetime'2024-01-01T00%3A00%3A00.1234567Z'\"","Timestamp":"2024-01-01T00:00:00.1234567Z","#,
        );
        out.push_str(&body[1..]);
    }
    out.push_str("]}");
    out.into_bytes()
}

fn page_decode(c: &mut Criterion) {
    page::check_readers();
    let mut group = c.benchmark_group("page_decode");
    group.throughput(Throughput::Elements(1000));
    group.bench_function("serde_struct_floor", |b| b.iter(|| page::floor(black_box(AZURITE_PAGE))));
    group
        .bench_function("generic_entity", |b| b.iter(|| decode_query_page(black_box(AZURITE_PAGE)).unwrap()));
    group.bench_function("typed_via_entity", |b| b.iter(|| page::typed_via_entity(black_box(AZURITE_PAGE))));
    group.bench_function("typed", |b| b.iter(|| page::typed(black_box(AZURITE_PAGE))));
    group.finish();
}

fn benches(c: &mut Criterion) {
    let body = page(1000);
    assert_eq!(decode_query_page(&body).unwrap().len(), 1000);
    let mut group = c.benchmark_group("query_page_1000");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("decode_query_page", |b| b.iter(|| decode_query_page(black_box(&body)).unwrap()));
    group.bench_function("serde_json_value_parse", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(&body)).unwrap())
    });
    group.finish();

    let operations: Vec<Operation> = (0..100)
        .map(|i| match i % 3 {
            0 => Operation::Insert(entity(i)),
            1 => Operation::Merge { entity: entity(i), if_match: IfMatch::Any },
            _ => Operation::InsertOrReplace(entity(i)),
        })
        .collect();
    c.bench_function("encode_batch_100", |b| {
        b.iter(|| {
            encode_batch(black_box("https://acct.table.core.windows.net"), "bench", black_box(&operations))
        })
    });
}

criterion_group!(wire, benches, page_decode);
criterion_main!(wire);
