//! Instructions per typed operation on the embedded engine, for a profiler that counts them
//! (callgrind): repeatable on a loaded machine, where timings are not.
//!
//! Through `TypedTable` on one thread, as the `client` bench's throughput group: inserts `N`
//! customers one by one into a fresh table (in `probe_inserts`), then point-reads each of them
//! in a scattered order (in `probe_gets`); then inserts `N` untyped entities of the engine
//! bench's shape straight into the engine (in `probe_engine_inserts`), as many again as
//! insert operations through `Engine::execute` (in `probe_engine_executes`, table-server's
//! way in), and as many again in batches of 100 (in `probe_engine_batches`); then runs the
//! `client` bench's typed filtered scan (`Age lt 45`, half the rows) once over a table of
//! [`SCAN_ROWS`] customers (in `probe_scans`, which prints the rows it returned). Each phase
//! runs in its own function, so a profiler can count it alone, e.g.
//!
//! ```text
//! cargo bench -p table-client --bench ops_probe --no-run
//! valgrind --tool=callgrind --toggle-collect='*probe_gets*' target/release/deps/ops_probe-<hash> 20000
//! ```
//!
//! and divide the phase's total by `N` (default 20 000), or for `probe_scans` by the rows it
//! returned. Without a profiler it only prints the phases' wall times, which are not a
//! benchmark.

// Bench setup fails loudly: an error is the bench's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use tokio::runtime::Runtime;

use table_client::engine::Engine;
use table_client::{Entity, EntityKey, Operation, TableServiceClient, TypedTable};

#[path = "support/customer.rs"]
mod customer;
#[path = "support/typed_probes.rs"]
mod typed_probes;

use customer::{Customer, customer};
use typed_probes::{probe_gets, probe_inserts};

/// Rows of the table `probe_scans` scans: the `client` bench's throughput table.
const SCAN_ROWS: u32 = 100_000;

/// The engine bench's row `rk` of partition `pk`.
fn engine_row(pk: usize, rk: usize) -> Entity {
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

// Each phase is a plain function that drives its own loop to the end, as those of
// `typed_probes` do.

/// The engine bench's `insert`: untyped entities of 8 properties straight into the engine,
/// lent (the caller frees them after the phase, as the bench after its clock stops).
#[inline(never)]
fn probe_engine_inserts(engine: &Engine, entities: &[Entity]) {
    for entity in entities {
        engine.insert("engine", entity).expect("a fresh key");
    }
}

/// The same inserts as `Engine::execute` of insert operations, as table-server runs every
/// single-entity write, lent.
#[inline(never)]
fn probe_engine_executes(engine: &Engine, operations: &[Operation]) {
    for operation in operations {
        engine.execute("executed", operation).expect("a fresh key");
    }
}

/// The same inserts again, as batches of 100 (one partition each), lent.
#[inline(never)]
fn probe_engine_batches(engine: &Engine, batches: &[Vec<Operation>]) {
    for batch in batches {
        engine.submit_batch("batched", batch).expect("fresh keys");
    }
}

/// The `client` bench's typed filtered scan of the whole table. The rows are dropped by the
/// caller, outside the phase, as the `client` bench drops them after its clock stops.
#[inline(never)]
fn probe_scans(runtime: &Runtime, table: &TypedTable<Customer>) -> Vec<Customer> {
    runtime
        .block_on(async { table.query().filter_str("Age lt 45").table_scan().collect().await.expect("scan") })
}

fn main() {
    let count: u32 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let client = TableServiceClient::embedded(Engine::new());
    let table = runtime.block_on(client.create_table("probe")).expect("a new table").typed::<Customer>();
    let customers: Vec<Customer> = (0..count).map(customer).collect();
    // A scattered order (a stride coprime with the count), keys made before the phase.
    let keys: Vec<EntityKey> = (0..u64::from(count))
        .map(|i| &customers[(i * 7_919 % u64::from(count)) as usize])
        .map(|c| Customer::key(c.region, c.number).expect("valid keys"))
        .collect();
    let started = Instant::now();
    probe_inserts(&runtime, &table, &customers);
    let inserts = started.elapsed();
    let started = Instant::now();
    probe_gets(&runtime, &table, &keys);
    let gets = started.elapsed();
    let engine = Engine::new();
    engine.create_table("engine").expect("a new table");
    let entities: Vec<Entity> = (0..count as usize).map(|n| engine_row(n % 10, n)).collect();
    let started = Instant::now();
    probe_engine_inserts(&engine, &entities);
    let engine_inserts = started.elapsed();
    engine.create_table("executed").expect("a new table");
    let operations: Vec<Operation> =
        (0..count as usize).map(|n| Operation::Insert(engine_row(n % 10, n))).collect();
    let started = Instant::now();
    probe_engine_executes(&engine, &operations);
    let engine_executes = started.elapsed();
    engine.create_table("batched").expect("a new table");
    let batches: Vec<Vec<Operation>> = (0..count as usize / 100)
        .map(|b| (0..100).map(|i| Operation::Insert(engine_row(b % 10, b * 100 + i))).collect())
        .collect();
    let started = Instant::now();
    probe_engine_batches(&engine, &batches);
    let engine_batches = started.elapsed();
    let scanned = runtime.block_on(client.create_table("scan")).expect("a new table").typed::<Customer>();
    runtime.block_on(async {
        for c in (0..SCAN_ROWS).map(customer) {
            scanned.insert(&c).await.expect("a fresh key");
        }
    });
    let started = Instant::now();
    let returned = std::hint::black_box(probe_scans(&runtime, &scanned)).len();
    println!(
        "{count} each: typed inserts in {inserts:?}, typed gets in {gets:?}, engine inserts in \
         {engine_inserts:?} (executed: {engine_executes:?}, in batches of 100: {engine_batches:?}); a \
         scan of {SCAN_ROWS} rows returned {returned} in {:?}",
        started.elapsed()
    );
}
