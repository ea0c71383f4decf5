//! The SDK on a faulty network: a mixed workload through a fault-injecting proxy in front of
//! Azurite (10% of requests meet a reset, a stall past the client's timeout, a 500, 503 or 429,
//! before or after the server applied them), with the default retry policy, checked against a
//! model of the table.
//!
//! The verdict, strict by design: no write is lost or invented, no query page is wrong, and
//! every error the caller sees either carries the "may have applied" marker (and the table then
//! holds the state before or after the write) or is a transient failure that provably left the
//! table unchanged. Every operation the workload sends is valid in the model, so any other
//! error (a 404, 409 or 412 the caller did not provoke, a decode error) is a defect.
//!
//! Each worker owns its partitions, its own proxy (seeded, so the faults it meets repeat from
//! run to run) and its own client, and sends one operation at a time; after each, it lets its
//! proxy settle (no forward still on its way to Azurite) before it reads the truth through a
//! direct client. `FAULTS_SEED=<n>` replays another fault sequence.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use conformance::azurite::{self, Azurite};
use conformance::fault_proxy::{Fault, FaultProxy, ProxyStats};
use futures::StreamExt;
use table_client::{
    ETag, Entity, EntityKey, Error, IfMatch, Operation, Properties, RetryPolicy, TableClient,
    TableServiceClient, Transaction, Value, WriteOutcome,
};

/// Concurrent workers, each with its own partitions, proxy and client.
const WORKERS: u64 = 10;
/// Operations per worker (queries and batches count as one each).
const OPS_PER_WORKER: usize = 520;
/// Partitions per worker, and row keys per partition (so keys are inserted, deleted and
/// inserted again).
const PARTITIONS: usize = 2;
const ROWS: usize = 10;
/// The share of requests that meet a fault.
const FAULT_RATE: f64 = 0.10;
/// The faults and their weights: the stalls cost a client timeout each, so they are rarer.
const MIX: [(Fault, u32); 9] = [
    (Fault::ResetBeforeForward, 2),
    (Fault::ResetAfterForward, 2),
    (Fault::Stall, 1),
    (Fault::StallThenForward, 1),
    (Fault::ForwardThenStall, 1),
    (Fault::Busy503, 2),
    (Fault::Internal500, 2),
    (Fault::ForwardThen500, 2),
    (Fault::Throttle429, 2),
];
/// The client's per-request timeout, and the proxy's stall (longer, so a stall is a timeout).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(1);
const STALL: Duration = Duration::from_millis(1500);
/// Page size of the workload's queries, small so that every query follows continuations.
const PAGE: u32 = 3;
/// The whole run may not take longer (it takes well under half of it).
const DEADLINE: Duration = Duration::from_secs(240);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_faulty_network_loses_invents_and_misreports_nothing() {
    let Some(azurite) = azurite::azurite() else { return };
    let seed = std::env::var("FAULTS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let direct = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = azurite::unique_table_name("faults");
    direct.create_table(&table).await.unwrap();

    let started = Instant::now();
    let workers = (0..WORKERS).map(|id| {
        let (azurite, table, direct) = (azurite.clone(), table.clone(), direct.table(&table));
        tokio::spawn(async move { Worker::start(id, seed, &azurite, &table, direct).await.run().await })
    });
    let reports = tokio::time::timeout(DEADLINE, futures::future::join_all(workers))
        .await
        .unwrap_or_else(|_| panic!("the fault workload did not finish within {DEADLINE:?} (seed {seed})"));
    let wall = started.elapsed();
    let mut total = Report::default();
    for report in reports {
        total.add(report.unwrap());
    }

    eprintln!(
        "fault workload (seed {seed}, {WORKERS} workers) in {:.1}s: {}",
        wall.as_secs_f64(),
        total.summary()
    );
    let ops: u64 = total.ops.values().sum();
    assert!(ops >= 5_000, "only {ops} operations ran");
    let faulted = total.proxy.total_faults() as f64 / total.proxy.requests as f64;
    assert!(
        (0.05..0.15).contains(&faulted),
        "{:.1}% of requests were faulted, not about 10%",
        faulted * 100.0
    );
    assert_eq!(
        total.defects.total(),
        0,
        "the SDK lost, invented or misreported data under faults (seed {seed}):\n{}\ndefects by class (count, first case):\n{}",
        total.summary(),
        total.described_defects()
    );
}

/// The expected content and known version of one entity.
#[derive(Debug, Clone)]
struct Row {
    properties: Properties,
    etag: ETag,
}

/// One step of the workload.
#[derive(Debug)]
enum Step {
    /// One operation, or several as one entity-group transaction.
    Write { operations: Vec<Operation>, batch: bool },
    /// All rows of a partition, a few per page.
    Query { partition_key: String },
}

/// One worker: its partitions' model, the faulty and the direct paths to the table, and what
/// it saw.
struct Worker {
    id: u64,
    rng: fastrand::Rng,
    proxy: FaultProxy,
    faulty: TableClient,
    direct: TableClient,
    model: BTreeMap<EntityKey, Row>,
    version: i64,
    report: Report,
}

impl Worker {
    async fn start(id: u64, seed: u64, azurite: &Azurite, table: &str, direct: TableClient) -> Worker {
        let worker_seed = seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let proxy = FaultProxy::builder(upstream(azurite))
            .seed(worker_seed)
            .rate(FAULT_RATE)
            .mix(MIX)
            .stall(STALL)
            .start()
            .await
            .unwrap();
        let through_proxy = Azurite::at(&format!("http://{}/{}", proxy.addr(), azurite::ACCOUNT_NAME));
        let client = TableServiceClient::builder()
            .connection_string(&through_proxy.connection_string)
            .retry(RetryPolicy::default())
            .timeout(CLIENT_TIMEOUT)
            .build()
            .unwrap();
        Worker {
            id,
            rng: fastrand::Rng::with_seed(!worker_seed),
            faulty: client.table(table),
            proxy,
            direct,
            model: BTreeMap::new(),
            version: 0,
            report: Report::default(),
        }
    }

    async fn run(mut self) -> Report {
        for _ in 0..OPS_PER_WORKER {
            match self.next_step() {
                Step::Write { operations, batch } => self.write(operations, batch).await,
                Step::Query { partition_key } => self.query(&partition_key).await,
            }
        }
        for p in 0..PARTITIONS {
            let partition_key = self.partition_key(p);
            let truth = self.read_partition(&partition_key).await;
            let (lost, ghost) = diff(&self.expected_partition(&partition_key), &truth);
            self.report.defects.lost += lost.len() as u64;
            self.report.defects.ghost += ghost.len() as u64;
            for (class, rows) in [("final check: lost row", lost), ("final check: ghost row", ghost)] {
                for row in rows {
                    self.report
                        .example(class.to_owned(), format!("worker {} {partition_key}/{row}", self.id));
                }
            }
        }
        self.report.proxy = self.proxy.stats();
        self.report
    }

    fn partition_key(&self, p: usize) -> String {
        format!("w{:02}p{p}", self.id)
    }

    /// A step that is valid in the model: inserts only where nothing is, conditional writes
    /// with the version the model knows, deletes only of existing entities.
    fn next_step(&mut self) -> Step {
        let p = self.rng.usize(0..PARTITIONS);
        let partition_key = self.partition_key(p);
        match self.rng.u32(0..100) {
            0..10 => Step::Query { partition_key },
            10..25 => {
                let mut rows: Vec<usize> = (0..ROWS).collect();
                self.rng.shuffle(&mut rows);
                let n = self.rng.usize(2..=5);
                let operations = rows[..n]
                    .iter()
                    .map(|r| self.pick_write(EntityKey::new(&partition_key, row_key(*r))))
                    .collect();
                Step::Write { operations, batch: true }
            }
            _ => {
                let key = EntityKey::new(partition_key, row_key(self.rng.usize(0..ROWS)));
                Step::Write { operations: vec![self.pick_write(key)], batch: false }
            }
        }
    }

    fn pick_write(&mut self, key: EntityKey) -> Operation {
        let Some(row) = self.model.get(&key) else {
            return match self.rng.u32(0..4) {
                0 | 1 => Operation::Insert(self.content(key, false)),
                2 => Operation::InsertOrReplace(self.content(key, false)),
                _ => Operation::InsertOrMerge(self.content(key, true)),
            };
        };
        let known = IfMatch::ETag(row.etag.clone());
        match self.rng.u32(0..10) {
            0 | 1 => Operation::Replace { entity: self.content(key, false), if_match: known },
            2 => Operation::Replace { entity: self.content(key, false), if_match: IfMatch::Any },
            3 => Operation::Merge { entity: self.content(key, true), if_match: known },
            4 => Operation::Merge { entity: self.content(key, true), if_match: IfMatch::Any },
            5 => Operation::InsertOrReplace(self.content(key, false)),
            6 => Operation::InsertOrMerge(self.content(key, true)),
            7 => Operation::Delete { key, if_match: IfMatch::Any },
            _ => Operation::Delete { key, if_match: known },
        }
    }

    /// New content for `key`, with a version `v` no earlier write had, so the states before
    /// and after any write differ. Merged content sets one of three extra properties.
    fn content(&mut self, key: EntityKey, merge: bool) -> Entity {
        self.version += 1;
        let tag = format!("w{}-{}", self.id, self.version);
        let entity = Entity::new(key.partition_key, key.row_key).with("v", self.version);
        if merge { entity.with(format!("m{}", self.rng.u32(0..3)), tag) } else { entity.with("s", tag) }
    }

    async fn write(&mut self, operations: Vec<Operation>, batch: bool) {
        let kind = if batch { "batch" } else { kind(&operations[0]) };
        *self.report.ops.entry(kind).or_default() += 1;
        let keys: Vec<EntityKey> =
            operations.iter().map(|o| EntityKey::new(o.partition_key(), o.row_key())).collect();
        let before: Vec<Option<Properties>> =
            keys.iter().map(|k| self.model.get(k).map(|r| r.properties.clone())).collect();
        let after: Vec<Option<Properties>> =
            before.iter().zip(&operations).map(|(b, o)| apply(b.as_ref(), o)).collect();
        let late_before = late(&self.proxy.stats());

        let result = if batch {
            self.faulty.submit_transaction(operations.iter().cloned().collect::<Transaction>()).await
        } else {
            self.faulty.execute(operations[0].clone()).await.map(|outcome| vec![outcome])
        };
        self.proxy.settle().await;
        let what = format!("worker {} {kind} of {}", self.id, describe(&keys));

        match result {
            Ok(outcomes) => {
                self.report.ok += 1;
                self.learn(&keys, &after, &outcomes);
                if late(&self.proxy.stats()) != late_before {
                    // A request of this write reached Azurite after the client gave up on it
                    // (and then retried): a duplicate of a write changes the version only, but
                    // the model must know the latest one.
                    let truth = self.read(&keys).await;
                    if State::of(&truth, &before, &after) != State::After {
                        self.report.defects.diverged += 1;
                        let class = format!("{kind}: succeeded, table diverged");
                        self.report.example(class, format!("{what}: the table holds {}", show(&truth)));
                    }
                    self.adopt(&keys, truth);
                }
            }
            Err(error) => {
                let truth = self.read(&keys).await;
                let state = State::of(&truth, &before, &after);
                let report = &mut self.report;
                let (counter, defect) = match (error.may_have_applied(), error.is_transient(), state) {
                    (true, _, State::After) => (&mut report.ambiguous_applied, false),
                    (true, _, State::Before) => (&mut report.ambiguous_not_applied, false),
                    (false, true, State::Before) => (&mut report.transient_not_applied, false),
                    (false, true, State::After) => (&mut report.defects.unmarked_applied, true),
                    (false, false, _) => (&mut report.defects.wrong_errors, true),
                    (_, _, State::Neither) => (&mut report.defects.diverged, true),
                };
                *counter += 1;
                if defect {
                    let class = format!("{kind}: {}, write {state:?}", error_class(&error));
                    report.example(class, format!("{what}: {error:?}"));
                }
                self.adopt(&keys, truth);
            }
        }
    }

    async fn query(&mut self, partition_key: &str) {
        *self.report.ops.entry("query").or_default() += 1;
        let expected = self.expected_partition(partition_key);
        let stream = self.faulty.query().partition(partition_key).max_per_page(PAGE).stream();
        let results: Vec<Result<Entity, Error>> = stream.collect().await;
        self.proxy.settle().await;
        let mut got = Vec::new();
        let mut failure = None;
        for result in results {
            match result {
                Ok(entity) if entity.partition_key == partition_key => {
                    got.push((entity.row_key, entity.properties))
                }
                Ok(entity) => {
                    got.push((format!("{} of another partition", entity.row_key), entity.properties))
                }
                Err(error) => failure = Some(error),
            }
        }
        let what = format!("worker {} query of {partition_key}", self.id);
        match failure {
            None if got == expected => self.report.ok += 1,
            Some(e) if e.is_transient() && expected.starts_with(&got) => self.report.query_transient += 1,
            Some(e) if !e.is_transient() => {
                self.report.defects.wrong_errors += 1;
                self.report.example(format!("query: {}", error_class(&e)), format!("{what}: {e:?}"));
            }
            _ => {
                let truth = self.read_partition(partition_key).await;
                if truth == expected {
                    self.report.defects.wrong_pages += 1;
                    let message =
                        format!("{what}: got rows {:?}, expected {:?}", row_keys(&got), row_keys(&expected));
                    self.report.example("query: wrong page".to_owned(), message);
                } else {
                    // The query told the truth; the table drifted from the model.
                    let (lost, ghost) = diff(&expected, &truth);
                    self.report.defects.lost += lost.len() as u64;
                    self.report.defects.ghost += ghost.len() as u64;
                    let message = format!("{what}: the table lost {lost:?} and gained {ghost:?}");
                    self.report.example("query: the table drifted from the model".to_owned(), message);
                    self.adopt_partition(partition_key).await;
                }
            }
        }
    }

    /// Records the outcome of a successful write.
    fn learn(&mut self, keys: &[EntityKey], after: &[Option<Properties>], outcomes: &[WriteOutcome]) {
        for ((key, after), outcome) in keys.iter().zip(after).zip(outcomes) {
            match (after, &outcome.etag) {
                (Some(properties), Some(etag)) => {
                    self.model
                        .insert(key.clone(), Row { properties: properties.clone(), etag: etag.clone() });
                }
                // The SDK refuses a write answered without an ETag, so this cannot happen.
                (Some(_), None) => panic!("a successful write of {key} reported no ETag"),
                (None, _) => {
                    self.model.remove(key);
                }
            }
        }
    }

    /// Makes the model hold what the table holds for `keys`.
    fn adopt(&mut self, keys: &[EntityKey], truth: Vec<Option<Entity>>) {
        for (key, entity) in keys.iter().zip(truth) {
            match entity {
                Some(e) => {
                    let etag = e.etag.unwrap_or_else(|| panic!("the direct read of {key} has no ETag"));
                    self.model.insert(key.clone(), Row { properties: e.properties, etag });
                }
                None => {
                    self.model.remove(key);
                }
            }
        }
    }

    async fn adopt_partition(&mut self, partition_key: &str) {
        let keys: Vec<EntityKey> = (0..ROWS).map(|r| EntityKey::new(partition_key, row_key(r))).collect();
        let truth = self.read(&keys).await;
        self.adopt(&keys, truth);
    }

    /// The entities at `keys`, read without the proxy.
    async fn read(&self, keys: &[EntityKey]) -> Vec<Option<Entity>> {
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let read = self.direct.get_if_exists(&key.partition_key, &key.row_key).await;
            out.push(read.unwrap_or_else(|e| panic!("the direct read of {key} failed: {e:?}")));
        }
        out
    }

    /// A partition's rows in RowKey order, read without the proxy.
    async fn read_partition(&self, partition_key: &str) -> Vec<(String, Properties)> {
        let rows = self.direct.query().partition(partition_key).collect().await;
        let rows = rows.unwrap_or_else(|e| panic!("the direct query of {partition_key} failed: {e:?}"));
        rows.into_iter().map(|e| (e.row_key, e.properties)).collect()
    }

    /// A partition's rows as the model expects them, in RowKey order.
    fn expected_partition(&self, partition_key: &str) -> Vec<(String, Properties)> {
        self.model
            .iter()
            .filter(|(k, _)| k.partition_key == partition_key)
            .map(|(k, row)| (k.row_key.clone(), row.properties.clone()))
            .collect()
    }
}

/// The Azurite socket the proxy forwards to.
fn upstream(azurite: &Azurite) -> SocketAddr {
    let authority = azurite.endpoint.strip_prefix("http://").and_then(|rest| rest.split('/').next());
    authority.and_then(|a| a.parse().ok()).unwrap_or_else(|| {
        panic!(
            "the fault proxy needs an endpoint like http://127.0.0.1:<port>/<account>, not {}",
            azurite.endpoint
        )
    })
}

fn row_key(r: usize) -> String {
    format!("r{r:02}")
}

/// Counts that grow when a forward reached Azurite after its client stopped waiting.
fn late(stats: &ProxyStats) -> (u64, u64) {
    (stats.orphaned, stats.count(Fault::StallThenForward))
}

/// The content `operation` leaves where `before` was.
fn apply(before: Option<&Properties>, operation: &Operation) -> Option<Properties> {
    match operation {
        Operation::Insert(e) | Operation::InsertOrReplace(e) | Operation::Replace { entity: e, .. } => {
            Some(e.properties.clone())
        }
        Operation::InsertOrMerge(e) | Operation::Merge { entity: e, .. } => {
            let mut merged = before.cloned().unwrap_or_default();
            merged.extend(e.properties.clone());
            Some(merged)
        }
        Operation::Delete { .. } => None,
    }
}

/// What the table holds for a write's keys, compared with the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The state before the write: it was not applied.
    Before,
    /// The state after the write: it was applied (the two differ, see `Worker::content`).
    After,
    /// Anything else: part of a batch, or content no write produced.
    Neither,
}

impl State {
    fn of(truth: &[Option<Entity>], before: &[Option<Properties>], after: &[Option<Properties>]) -> State {
        let holds = |state: &[Option<Properties>]| {
            truth.iter().zip(state).all(|(t, s)| t.as_ref().map(|e| &e.properties) == s.as_ref())
        };
        if holds(after) {
            State::After
        } else if holds(before) {
            State::Before
        } else {
            State::Neither
        }
    }
}

/// The rows the model expects but the table lacks or holds at an older version (lost), and the
/// rows the table holds that the model does not expect or holds at a newer version (ghosts).
fn diff(expected: &[(String, Properties)], truth: &[(String, Properties)]) -> (Vec<String>, Vec<String>) {
    let expected: BTreeMap<_, _> = expected.iter().map(|(k, p)| (k, p)).collect();
    let truth: BTreeMap<_, _> = truth.iter().map(|(k, p)| (k, p)).collect();
    let version = |p: &Properties| match p.get("v") {
        Some(Value::Int64(v)) => *v,
        _ => i64::MIN,
    };
    let (mut lost, mut ghost) = (Vec::new(), Vec::new());
    for (key, want) in &expected {
        match truth.get(key) {
            None => lost.push((*key).clone()),
            Some(have) if have == want => {}
            Some(have) if version(have) < version(want) => lost.push((*key).clone()),
            Some(_) => ghost.push((*key).clone()),
        }
    }
    ghost.extend(truth.keys().filter(|k| !expected.contains_key(*k)).map(|k| (*k).clone()));
    (lost, ghost)
}

/// The operation's name in the summary.
fn kind(operation: &Operation) -> &'static str {
    match operation {
        Operation::Insert(_) => "insert",
        Operation::InsertOrReplace(_) => "insert-or-replace",
        Operation::InsertOrMerge(_) => "insert-or-merge",
        Operation::Replace { if_match: IfMatch::Any, .. } => "replace",
        Operation::Replace { .. } => "replace-if-match",
        Operation::Merge { if_match: IfMatch::Any, .. } => "merge",
        Operation::Merge { .. } => "merge-if-match",
        Operation::Delete { if_match: IfMatch::Any, .. } => "delete",
        Operation::Delete { .. } => "delete-if-match",
    }
}

fn error_class(error: &Error) -> String {
    let marker = if error.may_have_applied() { "marked may-have-applied" } else { "unmarked" };
    format!("{marker} {:?} error", error.kind())
}

fn describe(keys: &[EntityKey]) -> String {
    let rows: Vec<&str> = keys.iter().map(|k| k.row_key.as_str()).collect();
    format!("{}/{}", keys[0].partition_key, rows.join(","))
}

fn show(truth: &[Option<Entity>]) -> String {
    let rows: Vec<String> = truth
        .iter()
        .map(|t| t.as_ref().map_or("(none)".to_owned(), |e| format!("{:?}", e.properties)))
        .collect();
    rows.join("; ")
}

fn row_keys(rows: &[(String, Properties)]) -> Vec<&str> {
    rows.iter().map(|(k, _)| k.as_str()).collect()
}

/// What the workload saw, summed over workers.
#[derive(Debug, Default)]
struct Report {
    /// Operations by kind.
    ops: BTreeMap<&'static str, u64>,
    /// Operations that succeeded (queries with every row as expected).
    ok: u64,
    /// Errors marked "may have applied", by what the table then held.
    ambiguous_applied: u64,
    ambiguous_not_applied: u64,
    /// Unmarked transient write errors (retries ran out) that left the table unchanged.
    transient_not_applied: u64,
    /// Queries that failed with a transient error after a correct prefix of the rows.
    query_transient: u64,
    defects: Defects,
    /// Defects by class (operation, error, state): how many, and the first one described.
    examples: BTreeMap<String, (u64, String)>,
    proxy: ProxyStats,
}

/// What must never happen.
#[derive(Debug, Default)]
struct Defects {
    /// An error the model says the operation could not meet (404, 409, 412, decode, ...),
    /// without the "may have applied" marker.
    wrong_errors: u64,
    /// A transient error without the marker after which the table held the written state.
    unmarked_applied: u64,
    /// After an operation the table held neither the state before nor the state after it.
    diverged: u64,
    /// A query through the proxy returned rows other than the table's.
    wrong_pages: u64,
    /// Rows the table lacks (or holds at an older version) found by queries and the final check.
    lost: u64,
    /// Rows the table should not hold (or holds at a newer version).
    ghost: u64,
}

impl Defects {
    fn total(&self) -> u64 {
        self.wrong_errors + self.unmarked_applied + self.diverged + self.wrong_pages + self.lost + self.ghost
    }
}

impl Report {
    /// Records one case of a defect class (the counters in `defects` are kept by the caller).
    fn example(&mut self, class: String, message: String) {
        let (count, _) = self.examples.entry(class).or_insert((0, message));
        *count += 1;
    }

    fn described_defects(&self) -> String {
        let lines: Vec<String> = self
            .examples
            .iter()
            .map(|(class, (n, first))| format!("  {n:>4} x {class}; e.g. {first}"))
            .collect();
        lines.join("\n")
    }

    fn add(&mut self, other: Report) {
        for (kind, n) in other.ops {
            *self.ops.entry(kind).or_default() += n;
        }
        self.ok += other.ok;
        self.ambiguous_applied += other.ambiguous_applied;
        self.ambiguous_not_applied += other.ambiguous_not_applied;
        self.transient_not_applied += other.transient_not_applied;
        self.query_transient += other.query_transient;
        let (d, o) = (&mut self.defects, other.defects);
        d.wrong_errors += o.wrong_errors;
        d.unmarked_applied += o.unmarked_applied;
        d.diverged += o.diverged;
        d.wrong_pages += o.wrong_pages;
        d.lost += o.lost;
        d.ghost += o.ghost;
        for (class, (n, first)) in other.examples {
            self.examples.entry(class).or_insert((0, first)).0 += n;
        }
        self.proxy.add(&other.proxy);
    }

    fn summary(&self) -> String {
        let mut s = String::new();
        let ops: u64 = self.ops.values().sum();
        let _ = write!(s, "{ops} operations (");
        for (i, (kind, n)) in self.ops.iter().enumerate() {
            let _ = write!(s, "{}{kind} {n}", if i == 0 { "" } else { ", " });
        }
        let d = &self.defects;
        let _ = write!(
            s,
            "); proxy: {}; outcomes: {} ok, {} marked errors applied, {} marked errors not applied, \
             {} unmarked transient errors not applied, {} queries failed transiently; \
             DEFECTS: {} wrong errors, {} unmarked applied writes, {} diverged states, {} wrong query \
             pages, {} lost writes, {} ghost writes",
            self.proxy,
            self.ok,
            self.ambiguous_applied,
            self.ambiguous_not_applied,
            self.transient_not_applied,
            self.query_transient,
            d.wrong_errors,
            d.unmarked_applied,
            d.diverged,
            d.wrong_pages,
            d.lost,
            d.ghost,
        );
        s
    }
}
