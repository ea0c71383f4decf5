//! `table-server` against Azurite, the same workload through one HTTP client, side by side.
//!
//! Run: `cargo bench -p table-server --bench server` (about two minutes on 2 cores once built;
//! Azurite comes from the conformance harness, `conformance::azurite::azurite()`: without
//! Node.js only table-server's figures are printed).
//!
//! Both servers are separate processes on 127.0.0.1: the built `table-server` binary on a free
//! port (SharedKey on, as Azurite) and Azurite's `node` process, found as a descendant of this
//! process. Workload through `TableServiceClient::from_connection_string`, on a fresh table per
//! round: `ENTITIES` inserts, `ENTITIES` point gets, `SCANS` whole-table scans in pages of 1000
//! (spread over at most 16 tasks) and `BATCHES` batches of 100 inserts, each phase at 1, 16 and 64 tokio tasks sharing
//! the client. The backends alternate within each round (the order flips every round) so both
//! meet the same machine state. Printed per phase, concurrency and backend, as medians over
//! `ROUNDS` rounds: throughput (operations, i.e. entities, per second), p50/p99 latency of one
//! request (an insert, a get, a page, a batch), the server's CPU per request (the run time of
//! all its threads over the phase, over the requests), the client's (this process's threads,
//! which run the client and nothing else during a phase), and the ratio table-server/Azurite
//! for throughput and Azurite/table-server for the server's CPU per request (both: higher is
//! better for table-server). Run times are each thread's `/proc/<pid>/task/<tid>/schedstat`
//! (nanoseconds; a phase is far shorter than the 10 ms ticks of `/proc/<pid>/stat`).
//!
//! More table-server backends run beside the in-memory one, on the write phases (insert and
//! batch) only: `data-dir` (`--data-dir` in a fresh temporary directory) and `fsync` (the same
//! with `--fsync`). `TABLE_SERVER_BIN=<path>` benches another build of the binary in place of
//! this one; `TABLE_SERVER_BASE_BIN=<path>` adds a backend `base` running that build in memory,
//! every phase, so an older build and this one alternate in one run. The ratio columns compare
//! the in-memory table-server with each other backend (throughput: table-server's over the
//! backend's; server CPU per request: the backend's over table-server's). `SERVER_BENCH_BACKENDS`
//! (comma-separated names among `table-server`, `base`, `data-dir`, `fsync`, `Azurite`; default
//! all) picks the backends, `SERVER_BENCH_PHASES` the phases (comma-separated among `insert`,
//! `get`, `scan`, `batch`; default all; `get` and `scan` read what `insert` wrote), and
//! `SERVER_BENCH_ROUNDS` the number of rounds (default 5).
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
use table_client::{Entity, TableClient, TableServiceClient, Transaction};

/// Entities inserted and read per phase.
const ENTITIES: usize = 2000;
/// Batches of [`BATCH`] inserts per phase.
const BATCHES: usize = 64;
/// Inserts per batch.
const BATCH: usize = 100;
/// Rows per scanned page.
const PAGE: u32 = 1000;
/// Concurrent tasks sharing the client.
const CONCURRENCY: [usize; 3] = [1, 16, 64];
/// Whole-table scans per phase, spread over at most this many tasks.
const SCANS: usize = 16;
/// Rounds by default; medians are over these.
const ROUNDS: usize = 5;
const PHASES: [&str; 4] = ["insert", "get", "scan", "batch"];
/// The phases of the persisted backends: the writes (the reads are the in-memory engine's).
const WRITE_PHASES: [bool; 4] = [true, false, false, true];
const ALL_PHASES: [bool; 4] = [true; 4];

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
    pid: u32,
    /// Which of [`PHASES`] run on it.
    phases: [bool; 4],
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

/// Starts `binary` with `flags` (plus `--data-dir` in a fresh directory when `data_dir`).
fn start_table_server(binary: &std::ffi::OsStr, data_dir: bool, flags: &[&str]) -> (ServerProcess, String) {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = data_dir
        .then(|| std::env::temp_dir().join(format!("table-server-bench-{}-{port}", std::process::id())));
    let mut command = Command::new(binary);
    command.args(["--port", &port.to_string()]).args(flags).stdout(Stdio::null());
    if let Some(dir) = &dir {
        command.arg("--data-dir").arg(dir);
    }
    let child = command.spawn().expect("start table-server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "table-server did not listen on {port}");
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

fn entity(partition: usize, row: usize) -> Entity {
    Entity::new(format!("p{partition:03}"), format!("{row:08}"))
        .with("Name", format!("customer number {row}"))
        .with("Email", format!("user{row}@example.com"))
        .with("Age", i32::try_from(row % 90).unwrap())
        .with("Balance", row as f64 * 1.25)
        .with("Visits", 1_099_511_627_776 + row as i64)
        .with("Active", row.is_multiple_of(2))
}

/// Runs `work(i)` for i in 0..count over `tasks` tasks; returns (wall, sorted latencies).
async fn drive<F, Fut>(tasks: usize, count: usize, work: F) -> (Duration, Vec<Duration>)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let work = Arc::new(work);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
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
    let mut all = Vec::with_capacity(count);
    for h in handles {
        all.extend(h.await.unwrap());
    }
    let wall = started.elapsed();
    all.sort();
    (wall, all)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The backend's phases at `tasks` concurrency on a fresh table (`None` for a phase not run).
async fn round(backend: &Backend, tasks: usize) -> [Option<Sample>; 4] {
    let name = format!("bench{}", uuid::Uuid::new_v4().simple());
    let table: TableClient = backend.client.create_table(&name).await.expect("create table");
    let mut samples = [None; 4];
    for (phase, sample) in samples.iter_mut().enumerate() {
        if !backend.phases[phase] {
            continue;
        }
        let t = table.clone();
        let (cpu_before, client_before) = (cpu(backend.pid), cpu(std::process::id()));
        let (wall, latencies, ops) = match phase {
            0 => {
                let (w, l) = drive(tasks, ENTITIES, move |i| {
                    let t = t.clone();
                    async move {
                        t.insert(entity(i % 10, i)).await.expect("insert");
                    }
                })
                .await;
                (w, l, ENTITIES)
            }
            1 => {
                let (w, l) = drive(tasks, ENTITIES, move |i| {
                    let t = t.clone();
                    let i = i * 7919 % ENTITIES;
                    async move {
                        std::hint::black_box(
                            t.get(&format!("p{:03}", i % 10), &format!("{i:08}")).await.expect("get"),
                        );
                    }
                })
                .await;
                (w, l, ENTITIES)
            }
            2 => {
                let next = Arc::new(AtomicUsize::new(0));
                let started = Instant::now();
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
                let mut all = Vec::new();
                for h in handles {
                    all.extend(h.await.unwrap());
                }
                all.sort();
                (started.elapsed(), all, SCANS * ENTITIES)
            }
            _ => {
                let (w, l) = drive(tasks, BATCHES, move |b| {
                    let t = t.clone();
                    async move {
                        let batch =
                            (0..BATCH).fold(Transaction::new(), |tx, r| tx.insert(entity(100 + b, r)));
                        t.submit_transaction(batch).await.expect("batch");
                    }
                })
                .await;
                (w, l, BATCHES * BATCH)
            }
        };
        let (cpu, client_cpu) = (cpu(backend.pid) - cpu_before, cpu(std::process::id()) - client_before);
        let requests = u32::try_from(latencies.len()).unwrap();
        *sample = Some(Sample {
            ops_per_s: ops as f64 / wall.as_secs_f64(),
            p50: percentile(&latencies, 0.5),
            p99: percentile(&latencies, 0.99),
            cpu_per_request: cpu / requests,
            client_cpu_per_request: client_cpu / requests,
        });
    }
    backend.client.delete_table(&name).await.expect("delete table");
    samples
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
    let mut backends: Vec<Backend> = servers
        .iter()
        .map(|(name, (process, connection_string), phases)| Backend {
            name,
            client: TableServiceClient::from_connection_string(connection_string).unwrap(),
            pid: process.0.id(),
            phases: *phases,
        })
        .collect();
    if let Some(azurite) = wanted("Azurite").then(conformance::azurite::azurite).flatten() {
        backends.push(Backend {
            name: "Azurite",
            client: TableServiceClient::from_connection_string(&azurite.connection_string).unwrap(),
            pid: azurite_pid(),
            phases: ALL_PHASES,
        });
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // samples[backend][concurrency][phase] over rounds.
    let mut samples = vec![vec![vec![Vec::new(); PHASES.len()]; CONCURRENCY.len()]; backends.len()];
    let asked: Vec<bool> = PHASES.iter().map(|phase| listed("SERVER_BENCH_PHASES", phase)).collect();
    for backend in &mut backends {
        for (runs, asked) in backend.phases.iter_mut().zip(&asked) {
            *runs &= asked;
        }
    }
    runtime.block_on(async {
        for r in 0..rounds {
            for (c, &tasks) in CONCURRENCY.iter().enumerate() {
                for k in 0..backends.len() {
                    let b = if r % 2 == 0 { k } else { backends.len() - 1 - k };
                    for (phase, sample) in round(&backends[b], tasks).await.into_iter().enumerate() {
                        samples[b][c][phase].extend(sample);
                    }
                }
            }
            eprintln!("round {} of {rounds} done", r + 1);
        }
    });
    println!(
        "{:<6} {:>4} {:<13} {:>11} {:>10} {:>10} {:>12} {:>12} {:>9} {:>9}",
        "phase", "conc", "backend", "ops/s", "p50", "p99", "server cpu", "client cpu", "ops x", "cpu x"
    );
    for (phase, phase_name) in PHASES.iter().enumerate() {
        for (c, tasks) in CONCURRENCY.iter().enumerate() {
            let medians: Vec<Option<Sample>> = samples
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
                    "{:<6} {:>4} {:<13} {:>11.0} {:>10.2?} {:>10.2?} {:>12.2?} {:>12.2?} {ratios}",
                    phase_name,
                    tasks,
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
