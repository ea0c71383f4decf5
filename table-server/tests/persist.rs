//! `--data-dir`: the binary keeps its data across restarts, and a kill -9 at any moment loses
//! no answered write. Concurrent writers drive inserts, merges, replaces, deletes and batches
//! through our HTTP client while the process is killed at random moments and restarted on the
//! same directory; after each restart every answered write is there with its ETag, and each
//! writer's unanswered request (at most one in flight) is either wholly applied or not at all.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use table_client::{
    ETag, Entity, ErrorKind, IfMatch, Operation, RetryPolicy, TableClient, TableServiceClient, Transaction,
    Value, WriteOutcome,
};
use table_server::{DEV_ACCOUNT, DEV_KEY};

const TABLE: &str = "Durable";
const WRITERS: usize = 4;
const ROWS: usize = 8;

/// A fresh, empty directory for one test.
fn data_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "table-server-{name}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A started server, killed (-9) when dropped, so a failing test leaves no process behind.
struct Server(Child);

impl Server {
    fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts the binary on `dir` (with `flags`) on a free port; the process and a client of the
/// development account that never retries, so an answer is exactly one attempt's.
fn start(dir: &Path, flags: &[&str]) -> (Server, TableServiceClient) {
    let (child, address) = start_at(dir, flags);
    (child, client_of(&address, DEV_ACCOUNT, DEV_KEY))
}

/// Starts the binary on `dir` (with `flags`) on a free port; the process and its address.
fn start_at(dir: &Path, flags: &[&str]) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_table-server"))
        .args(["--port", "0", "--data-dir"])
        .arg(dir)
        .args(flags)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut banner = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut banner).unwrap();
    let child = Server(child);
    let address = banner
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no banner: {banner:?}"))
        .to_owned();
    (child, address)
}

/// A client of `account` at `address` that never retries.
fn client_of(address: &str, account: &str, key: &str) -> TableServiceClient {
    let connection_string = format!(
        "DefaultEndpointsProtocol=http;AccountName={account};AccountKey={key};\
         TableEndpoint=http://{address}/{account};"
    );
    TableServiceClient::builder()
        .connection_string(&connection_string)
        .retry(RetryPolicy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn kill_9(server: &mut Server) {
    server.0.kill().unwrap();
    server.0.wait().unwrap();
}

/// A row as stored: its custom properties, and its ETag when known (an answered write's).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    properties: BTreeMap<String, Value>,
    etag: Option<ETag>,
}

/// One writer's partition: row key -> row (absent rows are missing).
type Rows = BTreeMap<String, Row>;

/// What a writer knows: the rows as its answered writes left them, and the rows its
/// unanswered request (if any) would leave.
#[derive(Debug, Default)]
struct Known {
    rows: Rows,
    in_flight: Option<Rows>,
}

fn partition(writer: usize) -> String {
    format!("w{writer}")
}

/// The rows `op` leaves over `rows`, ETags of the rows it writes unknown.
fn after(rows: &Rows, op: &Operation) -> Rows {
    let mut rows = rows.clone();
    let key = op.row_key().to_owned();
    match op {
        Operation::Delete { .. } => {
            rows.remove(&key);
        }
        Operation::Insert(e) | Operation::Replace { entity: e, .. } | Operation::InsertOrReplace(e) => {
            rows.insert(key, Row { properties: e.properties.clone().into_iter().collect(), etag: None });
        }
        Operation::Merge { entity: e, .. } | Operation::InsertOrMerge(e) => {
            let mut properties = rows.get(&key).map(|row| row.properties.clone()).unwrap_or_default();
            properties.extend(e.properties.clone());
            rows.insert(key, Row { properties, etag: None });
        }
    }
    rows
}

/// A random operation on a row of `writer`'s partition that applies given `rows` (the writer
/// is the partition's only writer, so its conditions hold); `n` makes values unique.
fn operation(writer: usize, rows: &Rows, n: u64, except: &[String]) -> Operation {
    let free: Vec<String> = (0..ROWS).map(|r| format!("r{r}")).filter(|r| !except.contains(r)).collect();
    let key = free[fastrand::usize(..free.len())].clone();
    let entity = Entity::new(partition(writer), key.as_str()).with("N", Value::Int64(n as i64));
    let entity = if n.is_multiple_of(3) {
        entity.with(format!("M{}", n % 5), Value::String(format!("m{n}")))
    } else {
        entity
    };
    match rows.get(&key) {
        None if n.is_multiple_of(2) => Operation::Insert(entity),
        None => Operation::InsertOrMerge(entity),
        Some(row) => {
            let if_match = row.etag.clone().map_or(IfMatch::Any, IfMatch::ETag);
            match n % 5 {
                0 => Operation::Replace { entity, if_match },
                1 => Operation::Merge { entity, if_match },
                2 => Operation::InsertOrReplace(entity),
                3 => Operation::InsertOrMerge(entity),
                _ => Operation::Delete {
                    key: table_client::EntityKey::new(partition(writer), key.as_str()),
                    if_match,
                },
            }
        }
    }
}

/// Writes until a request goes unanswered (the server was killed) or `stop`; every answered
/// write is folded into `known.rows` with its ETag, an unanswered one left in `in_flight`.
async fn write(
    table: TableClient,
    writer: usize,
    known: &mut Known,
    stop: &AtomicBool,
    answered: &AtomicUsize,
) {
    let mut n = fastrand::u64(..1 << 40);
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        if n.is_multiple_of(4) {
            // A batch of 2 to 4 operations on distinct rows: all or nothing.
            let mut ops: Vec<Operation> = Vec::new();
            let mut expected = known.rows.clone();
            for _ in 0..2 + fastrand::usize(..3) {
                let taken: Vec<String> = ops.iter().map(|op| op.row_key().to_owned()).collect();
                n += 1;
                let op = operation(writer, &known.rows, n, &taken);
                expected = after(&expected, &op);
                ops.push(op);
            }
            known.in_flight = Some(expected.clone());
            let batch = ops.iter().cloned().fold(Transaction::new(), Transaction::push);
            match table.submit_transaction(batch).await {
                Ok(outcomes) => settle(known, expected, ops.iter().zip(outcomes), answered),
                Err(e) => return unanswered(e, known),
            }
        } else {
            let op = operation(writer, &known.rows, n, &[]);
            let expected = after(&known.rows, &op);
            known.in_flight = Some(expected.clone());
            match table.execute(op.clone()).await {
                Ok(outcome) => settle(known, expected, [(&op, outcome)], answered),
                Err(e) => return unanswered(e, known),
            }
        }
    }
}

/// An answered request: its rows as expected, with the ETags the answer gave.
fn settle<'o>(
    known: &mut Known,
    mut expected: Rows,
    outcomes: impl IntoIterator<Item = (&'o Operation, WriteOutcome)>,
    answered: &AtomicUsize,
) {
    for (op, outcome) in outcomes {
        if let Some(row) = expected.get_mut(op.row_key()) {
            row.etag = outcome.etag;
        }
    }
    known.rows = expected;
    known.in_flight = None;
    answered.fetch_add(1, Ordering::Relaxed);
}

/// A failed request: only a lost connection (the kill) is expected; its write may or may not
/// have applied.
fn unanswered(e: table_client::Error, known: &Known) {
    assert!(
        matches!(e.kind(), ErrorKind::Transport | ErrorKind::Timeout) || e.status().is_none(),
        "a write failed with an answer: {e:?}"
    );
    assert!(known.in_flight.is_some());
}

/// The rows of `writer`'s partition as the server has them.
async fn stored(table: &TableClient, writer: usize) -> Rows {
    let entities: Vec<Entity> = table
        .query()
        .partition(&partition(writer))
        .stream()
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("the rows of writer {writer} are unreadable: {e}"));
    entities
        .into_iter()
        .map(|e| (e.row_key.clone(), Row { properties: e.properties.into_iter().collect(), etag: e.etag }))
        .collect()
}

/// Whether `actual` is `expected`, an unknown ETag in `expected` matching any.
fn agrees(actual: &Rows, expected: &Rows) -> bool {
    actual.len() == expected.len()
        && actual.iter().zip(expected).all(|((ka, a), (ke, e))| {
            ka == ke && a.properties == e.properties && (e.etag.is_none() || a.etag == e.etag)
        })
}

#[test]
fn kill_9_under_load_loses_no_answered_write() {
    kill_9_under_load("kill", &[]);
}

/// With `--fsync` the writers' flushes are shared (group commit) and answered only once on the
/// disk: the same guarantee holds, the kill striking while flushes are in flight.
#[test]
fn kill_9_under_load_with_fsync_loses_no_answered_write() {
    kill_9_under_load("kill-fsync", &["--fsync"]);
}

/// Writers at work, the server killed (-9) twelve times and restarted with `flags`; after
/// each restart every answered write is there.
fn kill_9_under_load(name: &str, flags: &[&str]) {
    let dir = data_dir(name);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // Small, so snapshots are taken (and killed mid-way) during the test too.
    let flags = [&["--checkpoint-bytes", "4096"], flags].concat();
    let mut known: Vec<Known> = (0..WRITERS).map(|_| Known::default()).collect();
    let answered = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let kills = 12;
    for round in 0..=kills {
        let (mut child, client) = start(&dir, &flags);
        let table = client.table(TABLE);
        runtime.block_on(async {
            if round == 0 {
                client.create_table(TABLE).await.unwrap();
            }
            // Every answered write is there with its ETag; an unanswered one wholly or not.
            for (writer, known) in known.iter_mut().enumerate() {
                let actual = stored(&table, writer).await;
                let before = agrees(&actual, &known.rows);
                let after = known.in_flight.as_ref().is_some_and(|rows| agrees(&actual, rows));
                assert!(
                    before || after,
                    "round {round}, writer {writer}: stored {actual:#?}\nanswered {:#?}\nin flight {:#?}",
                    known.rows,
                    known.in_flight
                );
                known.rows = actual;
                known.in_flight = None;
            }
        });
        if round == kills {
            kill_9(&mut child);
            break;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = std::mem::take(&mut known)
            .into_iter()
            .enumerate()
            .map(|(writer, mut mine)| {
                let (table, stop, answered) = (table.clone(), Arc::clone(&stop), Arc::clone(&answered));
                runtime.spawn(async move {
                    write(table, writer, &mut mine, &stop, &answered).await;
                    mine
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100 + fastrand::u64(..300)));
        kill_9(&mut child);
        known = runtime.block_on(async {
            let mut known = Vec::new();
            for writer in writers {
                known.push(writer.await.unwrap());
            }
            known
        });
        stop.store(true, Ordering::Relaxed);
    }
    let answered = answered.load(Ordering::Relaxed);
    assert!(answered > 100, "only {answered} answered writes: the test exercised little");
    let account = dir.join(DEV_ACCOUNT);
    assert!(account.join("snapshot").exists(), "no snapshot was taken");
    eprintln!("{kills} kills, {answered} answered writes, {:?}", began.elapsed());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn data_survives_a_graceful_restart_and_a_second_server_is_refused() {
    let dir = data_dir("restart");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mut child, client) = start(&dir, &[]);
    let etag = runtime.block_on(async {
        client.create_table(TABLE).await.unwrap();
        client.table(TABLE).insert(Entity::new("p", "r").with("A", 1)).await.unwrap()
    });

    // One server per directory.
    let second = Command::new(env!("CARGO_BIN_EXE_table-server"))
        .args(["--port", "0", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("in use"), "{second:?}");

    let stopped = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    assert!(child.0.wait().unwrap().success());
    let account = dir.join(DEV_ACCOUNT);
    assert!(account.join("snapshot").exists(), "a snapshot is taken at shutdown");

    let (mut child, client) = start(&dir, &[]);
    runtime.block_on(async {
        let row = client.table(TABLE).get("p", "r").await.unwrap();
        assert_eq!(row.etag, Some(etag.clone()));
        assert_eq!(row.properties.get("A"), Some(&Value::Int32(1)));
        // Later writes get later ETags.
        let next = client.table(TABLE).insert(Entity::new("p", "s")).await.unwrap();
        let stamped = client.table(TABLE).get("p", "s").await.unwrap().timestamp.unwrap();
        assert!(stamped > row.timestamp.unwrap() && next != etag);
    });
    kill_9(&mut child);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupt_record_in_the_middle_stops_the_start_loudly() {
    let dir = data_dir("corrupt");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mut child, client) = start(&dir, &[]);
    runtime.block_on(async {
        client.create_table(TABLE).await.unwrap();
        for r in 0..3 {
            client.table(TABLE).insert(Entity::new("p", format!("r{r}"))).await.unwrap();
        }
    });
    kill_9(&mut child);
    let account = dir.join(DEV_ACCOUNT);
    let segment = std::fs::read_dir(&account)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.extension().is_some_and(|ext| ext == "wal") && std::fs::metadata(path).unwrap().len() > 100
        })
        .unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    // A byte inside the first record (the table's creation), with records after it.
    bytes[8 + 12 + 2] ^= 0x40;
    std::fs::write(&segment, &bytes).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_table-server"))
        .args(["--port", "0", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!output.status.success(), "{output:?}");
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("cannot recover") && message.contains("checksum"), "{message}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_account_given_on_the_command_line_is_kept() {
    // Two accounts of the command line, each with its own engine, both recovered after a
    // kill -9: the binary persists every account it serves, not only the development one.
    let dir = data_dir("accounts");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let accounts = [("acct1", "a2V5LW9uZQ=="), ("acct2", "a2V5LXR3bw==")];
    let flags = ["--account", "acct1:a2V5LW9uZQ==", "--account", "acct2:a2V5LXR3bw=="];
    let (mut child, address) = start_at(&dir, &flags);
    let etags = runtime.block_on(async {
        let mut etags = Vec::new();
        for (account, key) in accounts {
            let client = client_of(&address, account, key);
            client.create_table(TABLE).await.unwrap();
            let entity = Entity::new("p", "r").with("Owner", account);
            etags.push(client.table(TABLE).insert(entity).await.unwrap());
        }
        etags
    });
    kill_9(&mut child);
    for (account, _) in accounts {
        assert!(dir.join(account).is_dir(), "{account} has no directory");
    }

    let (mut child, address) = start_at(&dir, &flags);
    runtime.block_on(async {
        for ((account, key), etag) in accounts.into_iter().zip(etags) {
            let row = client_of(&address, account, key).table(TABLE).get("p", "r").await.unwrap();
            assert_eq!(row.etag, Some(etag));
            assert_eq!(row.properties.get("Owner"), Some(&Value::String(account.to_owned())));
        }
    });
    kill_9(&mut child);
    std::fs::remove_dir_all(&dir).unwrap();
}
