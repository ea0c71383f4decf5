//! Throughput of the embedded engine on one thread, over a table of 100 000 entities with 8
//! properties each (10 partitions of 10 000 rows): point get, insert, replace, filtered
//! partition scan, range scan of 1000 rows, batch of 100 inserts; and the typed reads a
//! `TypedTable` makes (`get_as` and `query_as` with a derived `from_parts` and the type's
//! `$select`): point get, and a filtered scan returning full 1000-row pages. Beside them, two floors
//! measured in the same run: `btreemap_insert_floor` moves the same prebuilt entities into a
//! plain `BTreeMap<pk, BTreeMap<rk, Entity>>` (no validation, no encoding, no timestamp), and
//! the `datetime` group parses the same `Edm.DateTime` strings with our parser and with
//! chrono's RFC 3339 parser.
//!
//! Each figure is what a caller of the public API sees: a get includes copying the entity
//! out and dropping it; inserts and batches write prebuilt entities into fresh tables (to keep
//! keys new), timed without building them. `insert` lends each entity, as the floor keeps
//! its own, so neither frees the caller's entities inside the clock; `insert_owned` hands
//! them over, and the difference is what freeing them costs. The filtered scan's throughput counts rows
//! examined (the whole 10 000-row partition, 1% matching, matches copied out), not rows
//! returned; the typed filtered scan's counts rows returned (half the rows examined match). It runs after the replace benchmark has rewritten rows at scattered keys, so it
//! scans a table whose rows were written at different times, as in a live table.
//!
//! `cargo bench -p table-core --bench engine` (`-- --save-baseline before`, then
//! `-- --baseline before`, to compare two versions side by side). On a machine shared with
//! other work, `ENGINE_BENCH_CLOCK=cpu` times this thread's CPU time instead of wall time, so
//! time the core spends on other processes is not counted (their cache pollution still is).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use table_core::datetime::{format_datetime, parse_datetime};
use table_core::engine::{CheckedKeys, Engine, Select};
use table_core::typed::{Decoder, PropertySlots, TableEntity};
use table_core::{CompareOp, ETag, Entity, Filter, IfMatch, Operation, QueryRequest};
use table_derive::TableEntity;

const T: &str = "Bench";
const PARTITIONS: usize = 10;
const ROWS: usize = 10_000;
/// Inserts are measured on fresh tables of at most this many rows, to bound memory.
const INSERT_CHUNK: u64 = 100_000;

fn row(pk: usize, rk: usize) -> Entity {
    Entity::new(format!("p{pk:02}"), format!("{rk:08}"))
        .with("Name", format!("name {rk}"))
        .with("Email", format!("user{rk}@example.com"))
        .with("Age", (rk % 100) as i32)
        .with("Balance", rk as f64 * 1.5)
        .with("Active", rk.is_multiple_of(2))
        .with("Visits", rk as i64)
        .with("City", "Amsterdam")
        .with("Score", (rk % 1000) as i32)
}

/// The rows of [`row`] as a derived type, read as a `TypedTable` reads them.
#[derive(TableEntity)]
#[allow(dead_code)] // `timestamp` and `etag` are decoded to be measured, not read.
#[table(crate = "table_core", partition_key = "{partition}", row_key = "{row}", rename_all = "PascalCase")]
struct Customer {
    #[table(key_only)]
    partition: String,
    #[table(key_only)]
    row: String,
    name: String,
    email: String,
    age: i32,
    balance: f64,
    active: bool,
    visits: i64,
    city: String,
    score: i32,
    #[table(timestamp)]
    timestamp: Option<DateTime<Utc>>,
    #[table(etag)]
    etag: Option<ETag>,
}

fn full_table() -> Engine {
    let engine = Engine::new();
    engine.create_table(T).expect("new table");
    for pk in 0..PARTITIONS {
        for rk in 0..ROWS {
            engine.insert(T, row(pk, rk)).expect("fresh key");
        }
    }
    engine
}

/// Keys visited in a scattered but deterministic order.
fn key(i: u64) -> (usize, usize) {
    let n = (i.wrapping_mul(7_919) % (PARTITIONS * ROWS) as u64) as usize;
    (n % PARTITIONS, n / PARTITIONS)
}

/// The bench clock: wall time, or the thread's CPU time with `ENGINE_BENCH_CLOCK=cpu`.
struct Clock;

static CPU_CLOCK: LazyLock<bool> =
    LazyLock::new(|| std::env::var("ENGINE_BENCH_CLOCK").is_ok_and(|c| c == "cpu"));
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// The bench clock's reading.
fn now() -> Duration {
    if *CPU_CLOCK {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0))
    } else {
        EPOCH.elapsed()
    }
}

impl Measurement for Clock {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        now()
    }

    fn end(&self, start: Duration) -> Duration {
        now().saturating_sub(start)
    }

    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

fn benches(c: &mut Criterion<Clock>) {
    let engine = full_table();
    let keys: Vec<(String, String)> = (0..4096)
        .map(|i| {
            let (pk, rk) = key(i);
            (format!("p{pk:02}"), format!("{rk:08}"))
        })
        .collect();

    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(1));
    group.bench_function("get", |b| {
        let mut i = 0;
        b.iter(|| {
            let (pk, rk) = &keys[i % keys.len()];
            i += 1;
            black_box(engine.get(T, pk, rk, None).expect("present"))
        });
    });

    // What `TypedTable::get` asks for: the type's `$select`, prepared once per handle, rows
    // decoded by `from_parts`.
    let select: Vec<String> =
        Customer::select().expect("a struct selects").iter().map(|s| (*s).to_owned()).collect();
    let prepared = Select::new(select.clone()).expect("a derived select is valid");
    // Through the type's property slots, and (`_unslotted`) through the sorted list alone, as
    // typed reads went before slots: the slots' share side by side.
    let decoders = [
        ("", Decoder::<Customer>::of()),
        ("_unslotted", Decoder::new(&PropertySlots::NONE, Customer::from_parts)),
    ];
    for (suffix, decoder) in decoders {
        group.bench_function(format!("typed_get{suffix}"), |b| {
            let mut i = 0;
            b.iter(|| {
                let (pk, rk) = &keys[i % keys.len()];
                i += 1;
                let checked = CheckedKeys::new(pk, rk).expect("valid keys");
                black_box(engine.get_selected_as(T, checked, Some(&prepared), decoder).expect("present"))
            });
        });
    }

    // One body for `insert` and `insert_owned`: the entities lent, or handed over and freed
    // by the engine inside the clock.
    for (name, lend) in [("insert", true), ("insert_owned", false)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let n = (iters - done).min(INSERT_CHUNK);
                    let fresh = Engine::new();
                    fresh.create_table(T).expect("new table");
                    let rows: Vec<Entity> = (0..n as usize).map(|i| row(i % PARTITIONS, i)).collect();
                    let start = now();
                    if lend {
                        for e in &rows {
                            fresh.insert(T, e).expect("fresh key");
                        }
                    } else {
                        for e in rows {
                            fresh.insert(T, e).expect("fresh key");
                        }
                    }
                    total += now() - start;
                    done += n;
                }
                total
            });
        });
    }

    // The floor of `insert`: the same entities, moved into nested maps keyed by their keys.
    group.bench_function("btreemap_insert_floor", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let n = (iters - done).min(INSERT_CHUNK);
                let mut fresh: BTreeMap<String, BTreeMap<String, Entity>> = BTreeMap::new();
                let rows: Vec<Entity> = (0..n as usize).map(|i| row(i % PARTITIONS, i)).collect();
                let start = now();
                for e in rows {
                    let partition = fresh.entry(e.partition_key.clone()).or_default();
                    if partition.contains_key(&e.row_key) {
                        panic!("fresh key");
                    }
                    partition.insert(e.row_key.clone(), e);
                }
                total += now() - start;
                black_box(&fresh);
                done += n;
            }
            total
        });
    });

    group.bench_function("replace", |b| {
        b.iter_custom(|iters| {
            let rows: Vec<Entity> = (0..iters)
                .map(|i| {
                    let (pk, rk) = key(i);
                    row(pk, rk).with("Visits", 1i64)
                })
                .collect();
            let start = now();
            for e in rows {
                engine.replace(T, e, IfMatch::Any).expect("present");
            }
            now() - start
        });
    });

    // One page over a 10 000-row partition; 1% of the rows match, so the page is not full
    // and every row of the partition is examined.
    group.throughput(Throughput::Elements(ROWS as u64));
    let scan = QueryRequest {
        filter: Some(Filter::And(
            Box::new(Filter::compare("PartitionKey", CompareOp::Eq, "p03")),
            Box::new(Filter::compare("Score", CompareOp::Lt, 10)),
        )),
        ..QueryRequest::default()
    };
    group.bench_function("filtered_partition_scan", |b| {
        b.iter(|| {
            let page = engine.query(T, &scan).expect("query");
            assert_eq!(page.entities.len(), 100);
            black_box(page)
        });
    });

    // Full pages of a typed query: every other row of the partition matches.
    group.throughput(Throughput::Elements(1000));
    let typed_scan = QueryRequest {
        filter: Some(Filter::And(
            Box::new(Filter::compare("PartitionKey", CompareOp::Eq, "p07")),
            Box::new(Filter::compare("Active", CompareOp::Eq, true)),
        )),
        select: Some(select.clone()),
        ..QueryRequest::default()
    };
    for (suffix, decoder) in decoders {
        group.bench_function(format!("typed_filtered_scan{suffix}"), |b| {
            b.iter(|| {
                let (page, next) = engine.query_as(T, &typed_scan, decoder).expect("query");
                assert_eq!((page.len(), next.is_some()), (1000, true));
                black_box(page)
            });
        });
    }

    let range = QueryRequest {
        filter: Some(Filter::And(
            Box::new(Filter::compare("PartitionKey", CompareOp::Eq, "p05")),
            Box::new(Filter::And(
                Box::new(Filter::compare("RowKey", CompareOp::Ge, "00002000")),
                Box::new(Filter::compare("RowKey", CompareOp::Lt, "00003000")),
            )),
        )),
        ..QueryRequest::default()
    };
    group.bench_function("range_scan_1000", |b| {
        b.iter(|| {
            let page = engine.query(T, &range).expect("query");
            assert_eq!(page.entities.len(), 1000);
            black_box(page)
        });
    });

    group.throughput(Throughput::Elements(100));
    group.bench_function("batch_100_inserts", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let n = (iters - done).min(INSERT_CHUNK / 100);
                let fresh = Engine::new();
                fresh.create_table(T).expect("new table");
                let batches: Vec<Vec<Operation>> = (0..n as usize)
                    .map(|b| (0..100).map(|r| Operation::Insert(row(b, r))).collect())
                    .collect();
                let start = now();
                for batch in batches {
                    fresh.submit_batch(T, batch).expect("valid batch");
                }
                total += now() - start;
                done += n;
            }
            total
        });
    });
    group.finish();

    // Every row read back pays for its `Timestamp`: the service's form, seven fraction digits.
    let stamps: Vec<String> = (0..1024)
        .map(|i: i64| {
            let nanos = u32::try_from(i * 976_562_300 % 1_000_000_000).expect("below a second");
            let t = DateTime::from_timestamp(1_700_000_000 + i * 7_919, nanos).expect("in range");
            format_datetime(t)
        })
        .collect();
    let mut group = c.benchmark_group("datetime");
    group.throughput(Throughput::Elements(1));
    group.bench_function("parse_datetime", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            black_box(parse_datetime(black_box(&stamps[i % stamps.len()])).expect("valid"))
        });
    });
    group.bench_function("chrono_rfc3339", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            black_box(DateTime::parse_from_rfc3339(black_box(&stamps[i % stamps.len()])).expect("valid"))
        });
    });
    group.finish();
}

criterion_group! {
    name = engine;
    config = Criterion::default()
        .with_measurement(Clock)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = benches
}
criterion_main!(engine);
