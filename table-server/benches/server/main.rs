//! `table-server` against Azurite, the same workload through the same client, side by side.
//!
//! Run: `cargo bench -p table-server --bench server` (about five minutes on 2 cores once built;
//! Azurite comes from the conformance harness, `conformance::azurite::azurite()`: without
//! Node.js only table-server's figures are printed).
//!
//! Both servers are separate processes on 127.0.0.1: the built `table-server` binary on a free
//! port (SharedKey on, as Azurite) and Azurite's `node` process, found as a descendant of this
//! process. Workload, on a fresh table per round: `ENTITIES` inserts, `ENTITIES` point gets,
//! `SCANS` whole-table scans in pages of 1000 (spread over at most 16 tasks) and `BATCHES`
//! batches of 100 inserts, each phase at 1, 16 and 64 concurrent tasks. Two clients drive it:
//! - `sdk`: our `TableServiceClient` (from the account-key connection string, so SharedKey
//!   signed per request), shared by the tasks: what a user of our client sees;
//! - `lean`: a load generator that costs as little as possible per request, so that the server
//!   is what is measured (module [`lean`]: requests built before the phase and authorised by
//!   one account SAS, one keep-alive HTTP/1.1 connection per task, all on one thread, answers
//!   checked without decoding them).
//!
//! Each client creates and deletes its round's table itself and runs on its own runtime.
//!
//! The backends alternate within each round (the order flips every round) so both meet the
//! same machine state. Printed per phase, concurrency, client and backend, as medians over
//! `ROUNDS` rounds: throughput (operations, i.e. entities, per second), p50/p99 latency of one
//! request (an insert, a get, a page, a batch), the server's CPU per request (the run time of
//! all its threads over the phase, over the requests), the client's (this process's threads,
//! which run the client and nothing else during a phase), and, against table-server through
//! the same client, the ratio table-server/backend for throughput and backend/table-server for
//! the server's CPU per request (both: higher is better for table-server). Run times are each
//! thread's `/proc/<pid>/task/<tid>/schedstat` (nanoseconds; a phase is far shorter than the
//! 10 ms ticks of `/proc/<pid>/stat`).
//!
//! More table-server backends run beside the in-memory one, on the write phases (insert and
//! batch) only: `data-dir` (`--data-dir` in a fresh temporary directory) and `fsync` (the same
//! with `--fsync`). The backend `floor` (module [`floor`]), driven by the lean client only,
//! answers inserts and gets without doing anything: its figures are the round trip alone, the
//! most any server could reach through this client here, and its "ops x" is the share of it
//! that table-server reaches.
//!
//! `TABLE_SERVER_BIN=<path>` benches another build of the binary in place of this one;
//! `TABLE_SERVER_BASE_BIN=<path>` adds a backend `base` running that build in memory, every
//! phase, so an older build and this one alternate in one run. `SERVER_BENCH_BACKENDS`
//! (comma-separated names among `table-server`, `base`, `data-dir`, `fsync`, `floor`,
//! `Azurite`; default all) picks the backends, `SERVER_BENCH_CLIENTS` the clients
//! (comma-separated among `sdk`, `lean`; default both), `SERVER_BENCH_PHASES` the phases
//! (comma-separated among `insert`, `get`, `scan`, `batch`; default all; `get` and `scan` read
//! what `insert` wrote), and `SERVER_BENCH_ROUNDS` the number of rounds (default 5).
//!
//! A bench binary rather than criterion: one Azurite pass takes seconds.

// Bench setup fails loudly: an error is the bench's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use lean::{Connection, Target};
use table_client::{Entity, Operation, TableClient, TableServiceClient, Transaction};
use tokio::task::JoinHandle;

mod floor;
mod lean;

/// Entities inserted and read per phase.
const ENTITIES: usize = 2000;
/// Batches of [`BATCH`] inserts per phase.
const BATCHES: usize = 64;
/// Inserts per batch.
const BATCH: usize = 100;
/// Rows per scanned page.
const PAGE: u32 = 1000;
/// Concurrent tasks (with the lean client, each on its own connection).
const CONCURRENCY: [usize; 3] = [1, 16, 64];
/// Whole-table scans per phase, spread over at most this many tasks.
const SCANS: usize = 16;
/// Rounds by default; medians are over these.
const ROUNDS: usize = 5;
const PHASES: [&str; 4] = ["insert", "get", "scan", "batch"];
/// The phases of the persisted backends: the writes (the reads are the in-memory engine's).
const WRITE_PHASES: [bool; 4] = [true, false, false, true];
const ALL_PHASES: [bool; 4] = [true; 4];
/// The floor's backend name (module [`floor`]).
const FLOOR: &str = "floor";
/// The phases of the floor: those it can answer.
const FLOOR_PHASES: [bool; 4] = [true, true, false, false];

/// What drives the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// Our `TableServiceClient`, SharedKey signed, shared by the tasks.
    Sdk,
    /// The [`lean`] load generator.
    Lean,
}

impl Client {
    const ALL: [Client; 2] = [Client::Sdk, Client::Lean];

    /// Its name in `SERVER_BENCH_CLIENTS` and in the table.
    fn name(self) -> &'static str {
        match self {
            Client::Sdk => "sdk",
            Client::Lean => "lean",
        }
    }
}

/// One phase of one round on one backend.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    ops_per_s: f64,
    p50: Duration,
    p99: Duration,
    cpu_per_request: Duration,
    client_cpu_per_request: Duration,
}

struct Backend {
    name: &'static str,
    client: TableServiceClient,
    /// The same account for the lean client.
    lean: Arc<Target>,
    pid: u32,
    /// Which of [`PHASES`] run on it.
    phases: [bool; 4],
}

impl Backend {
    /// The backend at `connection_string` (with the account key), served by process `pid`.
    fn new(name: &'static str, connection_string: &str, pid: u32, phases: [bool; 4]) -> Backend {
        let client = TableServiceClient::from_connection_string(connection_string).unwrap();
        Backend { name, lean: Arc::new(Target::new(&client)), client, pid, phases }
    }

    /// Whether `client` drives it: the floor answers only the lean client's checks.
    fn driven_by(&self, client: Client) -> bool {
        client == Client::Lean || self.name != FLOOR
    }
}

/// A `table-server` process, killed when dropped (its data directory, if any, removed).
struct ServerProcess(Child, Option<std::path::PathBuf>);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        if let Some(dir) = &self.1 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `binary` with `flags` (plus `--data-dir` in a fresh directory when `data_dir`).
fn start_table_server(binary: &std::ffi::OsStr, data_dir: bool, flags: &[&str]) -> (ServerProcess, String) {
    let port = free_port();
    let dir = data_dir
        .then(|| std::env::temp_dir().join(format!("table-server-bench-{}-{port}", std::process::id())));
    let mut command = Command::new(binary);
    command.args(["--port", &port.to_string()]).args(flags);
    if let Some(dir) = &dir {
        command.arg("--data-dir").arg(dir);
    }
    launch(command, port, dir)
}

/// Starts the floor (module [`floor`]): this bench binary again, on a free port.
fn start_floor() -> (ServerProcess, String) {
    let port = free_port();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env(floor::FLOOR_PORT, port.to_string());
    launch(command, port, None)
}

/// Runs `command`, a server that listens on `port` (keeping `dir` until it is killed), and
/// returns it once it listens, with the development account's connection string on it.
fn launch(mut command: Command, port: u16, dir: Option<std::path::PathBuf>) -> (ServerProcess, String) {
    let child = command.stdout(Stdio::null()).spawn().expect("start the server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{command:?} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let endpoint = format!("http://127.0.0.1:{port}/{}", conformance::azurite::ACCOUNT_NAME);
    (ServerProcess(child, dir), conformance::azurite::Azurite::at(&endpoint).connection_string)
}

/// (ppid, comm) of a process.
fn stat(pid: u32) -> Option<(u32, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let ppid = text[close + 2..].split(' ').nth(1)?.parse().ok()?;
    Some((ppid, text[open + 1..close].to_owned()))
}

/// The `node` process among this process's descendants (Azurite under the harness's watchdog).
fn azurite_pid() -> u32 {
    let processes: Vec<(u32, u32, String)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| stat(pid).map(|(ppid, comm)| (pid, ppid, comm)))
        .collect();
    let mut ours = vec![std::process::id()];
    let mut i = 0;
    while i < ours.len() {
        let parent = ours[i];
        ours.extend(processes.iter().filter(|p| p.1 == parent).map(|p| p.0));
        i += 1;
    }
    processes
        .iter()
        .find(|p| ours.contains(&p.0) && p.2.starts_with("node"))
        .expect("Azurite's node process is a descendant of this process")
        .0
}

/// The CPU time so far of the process's threads (those that ended are not counted: the
/// servers' and the client's threads live as long as their process).
fn cpu(pid: u32) -> Duration {
    let nanos: u64 = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the process runs")
        .filter_map(|task| {
            let text = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
            text.split(' ').next()?.parse::<u64>().ok()
        })
        .sum();
    Duration::from_nanos(nanos)
}

/// The wall time and both processes' CPU time of one phase, from [`Clock::start`] to
/// [`Clock::stop`].
struct Measured {
    wall: Duration,
    server_cpu: Duration,
    client_cpu: Duration,
}

/// Started when everything a phase prepares is ready, just before its first request.
struct Clock {
    pid: u32,
    started: Instant,
    server_cpu: Duration,
    client_cpu: Duration,
}

impl Clock {
    /// Starts timing a phase against the server process `pid`.
    fn start(pid: u32) -> Clock {
        let (server_cpu, client_cpu) = (cpu(pid), cpu(std::process::id()));
        Clock { pid, started: Instant::now(), server_cpu, client_cpu }
    }

    fn stop(&self) -> Measured {
        Measured {
            wall: self.started.elapsed(),
            server_cpu: cpu(self.pid) - self.server_cpu,
            client_cpu: cpu(std::process::id()) - self.client_cpu,
        }
    }
}

/// Waits for the tasks of a phase, stops its clock and returns the sorted latencies.
async fn gather(clock: Clock, handles: Vec<JoinHandle<Vec<Duration>>>) -> (Measured, Vec<Duration>) {
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    let measured = clock.stop();
    all.sort();
    (measured, all)
}

/// Runs `work(i)` for i in 0..count over `tasks` tasks sharing the SDK client.
async fn drive<F, Fut>(clock: Clock, tasks: usize, count: usize, work: F) -> (Measured, Vec<Duration>)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let work = Arc::new(work);
    let next = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (work, next) = (work.clone(), next.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return latencies;
                    }
                    let t = Instant::now();
                    work(i).await;
                    latencies.push(t.elapsed());
                }
            })
        })
        .collect();
    gather(clock, handles).await
}

/// Sends `exchanges` over the connections `streams`, one task per connection, the i-th
/// exchange on connection i mod n (as wrk splits its load over connections).
async fn drive_lean(
    clock: Clock,
    streams: Vec<tokio::net::TcpStream>,
    exchanges: Vec<lean::Exchange>,
) -> (Measured, Vec<Duration>) {
    let mut queues: Vec<Vec<lean::Exchange>> = streams.iter().map(|_| Vec::new()).collect();
    let n = queues.len();
    for (i, exchange) in exchanges.into_iter().enumerate() {
        queues[i % n].push(exchange);
    }
    let handles = streams
        .into_iter()
        .zip(queues)
        .map(|(stream, queue)| {
            tokio::spawn(Connection::run(stream, |mut connection| async move {
                let mut latencies = Vec::with_capacity(queue.len());
                for exchange in queue {
                    let t = Instant::now();
                    connection.exchange(exchange).await;
                    latencies.push(t.elapsed());
                }
                latencies
            }))
        })
        .collect();
    gather(clock, handles).await
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The key of the `i`-th entity of the insert, get and scan phases.
fn key(i: usize) -> (String, String) {
    (format!("p{:03}", i % 10), format!("{i:08}"))
}

/// The `i`-th entity of the insert, get and scan phases.
fn entity(i: usize) -> Entity {
    let (partition_key, row_key) = key(i);
    with_properties(Entity::new(partition_key, row_key), i)
}

/// Row `row` of batch `batch` (its own partition).
fn batch_entity(batch: usize, row: usize) -> Entity {
    with_properties(Entity::new(format!("p{:03}", 100 + batch), format!("{row:08}")), row)
}

fn with_properties(entity: Entity, n: usize) -> Entity {
    entity
        .with("Name", format!("customer number {n}"))
        .with("Email", format!("user{n}@example.com"))
        .with("Age", i32::try_from(n % 90).unwrap())
        .with("Balance", n as f64 * 1.25)
        .with("Visits", 1_099_511_627_776 + n as i64)
        .with("Active", n.is_multiple_of(2))
}

/// The entity the `i`-th get reads: a spread of the inserted ones.
fn get_index(i: usize) -> usize {
    i * 7919 % ENTITIES
}

/// The backend's phases at `tasks` concurrency through `client` on a fresh table, created and
/// deleted through that client (`None` for a phase not run).
async fn round(backend: &Backend, client: Client, tasks: usize) -> [Option<Sample>; 4] {
    let name = format!("bench{}", uuid::Uuid::new_v4().simple());
    let table: TableClient = match client {
        Client::Sdk => backend.client.create_table(&name).await.expect("create table"),
        Client::Lean => {
            backend.lean.send_one(backend.lean.create_table(&name)).await;
            backend.client.table(&name)
        }
    };
    let mut samples = [None; 4];
    for (phase, sample) in samples.iter_mut().enumerate() {
        if !backend.phases[phase] {
            continue;
        }
        let (measured, latencies, ops) = match client {
            Client::Sdk => sdk_phase(backend.pid, &table, phase, tasks).await,
            Client::Lean => lean_phase(backend, &name, phase, tasks).await,
        };
        let requests = u32::try_from(latencies.len()).unwrap();
        *sample = Some(Sample {
            ops_per_s: ops as f64 / measured.wall.as_secs_f64(),
            p50: percentile(&latencies, 0.5),
            p99: percentile(&latencies, 0.99),
            cpu_per_request: measured.server_cpu / requests,
            client_cpu_per_request: measured.client_cpu / requests,
        });
    }
    match client {
        Client::Sdk => backend.client.delete_table(&name).await.expect("delete table"),
        Client::Lean => backend.lean.send_one(backend.lean.delete_table(&name)).await,
    }
    samples
}

/// One phase through the SDK client: (measures, sorted latencies, operations).
async fn sdk_phase(
    pid: u32,
    table: &TableClient,
    phase: usize,
    tasks: usize,
) -> (Measured, Vec<Duration>, usize) {
    let t = table.clone();
    let clock = Clock::start(pid);
    match phase {
        0 => {
            let (m, l) = drive(clock, tasks, ENTITIES, move |i| {
                let t = t.clone();
                async move {
                    t.insert(entity(i)).await.expect("insert");
                }
            })
            .await;
            (m, l, ENTITIES)
        }
        1 => {
            let (m, l) = drive(clock, tasks, ENTITIES, move |i| {
                let t = t.clone();
                let (partition_key, row_key) = key(get_index(i));
                async move {
                    std::hint::black_box(t.get(&partition_key, &row_key).await.expect("get"));
                }
            })
            .await;
            (m, l, ENTITIES)
        }
        2 => {
            let next = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..tasks.min(SCANS))
                .map(|_| {
                    let (t, next) = (t.clone(), next.clone());
                    tokio::spawn(async move {
                        let mut latencies = Vec::new();
                        while next.fetch_add(1, Ordering::Relaxed) < SCANS {
                            let mut pages = t.query().max_per_page(PAGE).pages();
                            let mut rows = 0;
                            let mut at = Instant::now();
                            while let Some(page) = pages.next().await {
                                rows += page.expect("page").items.len();
                                latencies.push(at.elapsed());
                                at = Instant::now();
                            }
                            assert_eq!(rows, ENTITIES, "the scan sees every row");
                        }
                        latencies
                    })
                })
                .collect();
            let (m, l) = gather(clock, handles).await;
            (m, l, SCANS * ENTITIES)
        }
        _ => {
            let (m, l) = drive(clock, tasks, BATCHES, move |b| {
                let t = t.clone();
                async move {
                    let batch = (0..BATCH).fold(Transaction::new(), |tx, r| tx.insert(batch_entity(b, r)));
                    t.submit_transaction(batch).await.expect("batch");
                }
            })
            .await;
            (m, l, BATCHES * BATCH)
        }
    }
}

/// One phase through the lean client, its requests and connections made before the clock
/// starts: (measures, sorted latencies, operations).
async fn lean_phase(
    backend: &Backend,
    table: &str,
    phase: usize,
    tasks: usize,
) -> (Measured, Vec<Duration>, usize) {
    let target = &backend.lean;
    let streams = target.connect(if phase == 2 { tasks.min(SCANS) } else { tasks }).await;
    match phase {
        0 => {
            let exchanges = (0..ENTITIES).map(|i| target.insert(table, &entity(i))).collect();
            let (m, l) = drive_lean(Clock::start(backend.pid), streams, exchanges).await;
            (m, l, ENTITIES)
        }
        1 => {
            let exchanges = (0..ENTITIES)
                .map(|i| {
                    let (partition_key, row_key) = key(get_index(i));
                    target.get(table, &partition_key, &row_key)
                })
                .collect();
            let (m, l) = drive_lean(Clock::start(backend.pid), streams, exchanges).await;
            (m, l, ENTITIES)
        }
        2 => {
            let next = Arc::new(AtomicUsize::new(0));
            let clock = Clock::start(backend.pid);
            let handles: Vec<_> = streams
                .into_iter()
                .map(|stream| {
                    let (target, table, next) = (target.clone(), table.to_owned(), next.clone());
                    tokio::spawn(Connection::run(stream, |mut connection| async move {
                        let mut latencies = Vec::new();
                        while next.fetch_add(1, Ordering::Relaxed) < SCANS {
                            let rows = connection.scan(&target, &table, PAGE, &mut latencies).await;
                            assert_eq!(rows, ENTITIES, "the scan sees every row");
                        }
                        latencies
                    }))
                })
                .collect();
            let (m, l) = gather(clock, handles).await;
            (m, l, SCANS * ENTITIES)
        }
        _ => {
            let exchanges = (0..BATCHES)
                .map(|b| {
                    let operations: Vec<Operation> =
                        (0..BATCH).map(|r| Operation::Insert(batch_entity(b, r))).collect();
                    target.batch(table, &operations)
                })
                .collect();
            let (m, l) = drive_lean(Clock::start(backend.pid), streams, exchanges).await;
            (m, l, BATCHES * BATCH)
        }
    }
}

fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn median_sample(samples: &[Sample]) -> Sample {
    Sample {
        ops_per_s: median(samples.iter().map(|s| s.ops_per_s).collect()),
        p50: median(samples.iter().map(|s| s.p50).collect()),
        p99: median(samples.iter().map(|s| s.p99).collect()),
        cpu_per_request: median(samples.iter().map(|s| s.cpu_per_request).collect()),
        client_cpu_per_request: median(samples.iter().map(|s| s.client_cpu_per_request).collect()),
    }
}

/// Whether the variable `list` (comma-separated names; unset: all) names `name`.
fn listed(list: &str, name: &str) -> bool {
    std::env::var(list).map_or(true, |names| names.split(',').any(|n| n.trim() == name))
}

/// Whether `SERVER_BENCH_BACKENDS` names the backend `name`.
fn wanted(name: &str) -> bool {
    listed("SERVER_BENCH_BACKENDS", name)
}

fn main() {
    floor::serve_if_asked();
    let binary =
        std::env::var_os("TABLE_SERVER_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_table-server").into());
    let base = std::env::var_os("TABLE_SERVER_BASE_BIN");
    let rounds =
        std::env::var("SERVER_BENCH_ROUNDS").map_or(ROUNDS, |n| n.parse().expect("a number of rounds"));
    // The in-memory table-server always runs: the ratios are against it.
    let mut servers = vec![("table-server", start_table_server(&binary, false, &[]), ALL_PHASES)];
    if let Some(base) = base.filter(|_| wanted("base")) {
        servers.push(("base", start_table_server(&base, false, &[]), ALL_PHASES));
    }
    if wanted("data-dir") {
        servers.push(("data-dir", start_table_server(&binary, true, &[]), WRITE_PHASES));
    }
    if wanted("fsync") {
        servers.push(("fsync", start_table_server(&binary, true, &["--fsync"]), WRITE_PHASES));
    }
    if wanted(FLOOR) {
        servers.push((FLOOR, start_floor(), FLOOR_PHASES));
    }
    let mut backends: Vec<Backend> = servers
        .iter()
        .map(|(name, (process, connection_string), phases)| {
            Backend::new(name, connection_string, process.0.id(), *phases)
        })
        .collect();
    if let Some(azurite) = wanted("Azurite").then(conformance::azurite::azurite).flatten() {
        backends.push(Backend::new("Azurite", &azurite.connection_string, azurite_pid(), ALL_PHASES));
    }
    let clients: Vec<Client> =
        Client::ALL.into_iter().filter(|c| listed("SERVER_BENCH_CLIENTS", c.name())).collect();
    let sdk_runtime = tokio::runtime::Runtime::new().unwrap();
    // The lean client runs on one thread, as wrk with one thread does: its CPU per request is
    // about a quarter lower than on the multi-threaded runtime (no second worker woken to look
    // for work at every request), and one thread keeps up with either server. Each client
    // stays on its own runtime, so no connection is left in a pool of the other.
    let lean_runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // samples[client][backend][concurrency][phase] over rounds.
    let mut samples =
        vec![vec![vec![vec![Vec::new(); PHASES.len()]; CONCURRENCY.len()]; backends.len()]; clients.len()];
    let asked: Vec<bool> = PHASES.iter().map(|phase| listed("SERVER_BENCH_PHASES", phase)).collect();
    for backend in &mut backends {
        for (runs, asked) in backend.phases.iter_mut().zip(&asked) {
            *runs &= asked;
        }
    }
    for r in 0..rounds {
        for (c, &tasks) in CONCURRENCY.iter().enumerate() {
            for (k, &client) in clients.iter().enumerate() {
                let runtime = match client {
                    Client::Sdk => &sdk_runtime,
                    Client::Lean => &lean_runtime,
                };
                for j in 0..backends.len() {
                    let b = if r % 2 == 0 { j } else { backends.len() - 1 - j };
                    if !backends[b].driven_by(client) {
                        continue;
                    }
                    for (phase, sample) in
                        runtime.block_on(round(&backends[b], client, tasks)).into_iter().enumerate()
                    {
                        samples[k][b][c][phase].extend(sample);
                    }
                }
            }
        }
        eprintln!("round {} of {rounds} done", r + 1);
    }
    println!(
        "{:<6} {:>4} {:<6} {:<13} {:>11} {:>10} {:>10} {:>12} {:>12} {:>9} {:>9}",
        "phase",
        "conc",
        "client",
        "backend",
        "ops/s",
        "p50",
        "p99",
        "server cpu",
        "client cpu",
        "ops x",
        "cpu x"
    );
    for (phase, phase_name) in PHASES.iter().enumerate() {
        for ((c, tasks), (k, client)) in
            CONCURRENCY.iter().enumerate().flat_map(|c| clients.iter().enumerate().map(move |k| (c, k)))
        {
            let medians: Vec<Option<Sample>> = samples[k]
                .iter()
                .map(|b| (!b[c][phase].is_empty()).then(|| median_sample(&b[c][phase])))
                .collect();
            let Some(ours) = medians[0] else { continue };
            for (b, m) in medians.iter().enumerate() {
                let Some(m) = m else { continue };
                let ratios = if b > 0 {
                    let cpu = m.cpu_per_request.as_secs_f64() / ours.cpu_per_request.as_secs_f64();
                    format!("{:>9.2} {cpu:>9.2}", ours.ops_per_s / m.ops_per_s)
                } else {
                    String::new()
                };
                println!(
                    "{:<6} {:>4} {:<6} {:<13} {:>11.0} {:>10.2?} {:>10.2?} {:>12.2?} {:>12.2?} {ratios}",
                    phase_name,
                    tasks,
                    client.name(),
                    backends[b].name,
                    m.ops_per_s,
                    m.p50,
                    m.p99,
                    m.cpu_per_request,
                    m.client_cpu_per_request
                );
            }
        }
    }
}
