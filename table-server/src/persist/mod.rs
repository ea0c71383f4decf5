//! Persistence (`--data-dir`): each account's engine kept in a directory across restarts, as
//! a write-ahead log plus snapshots, crash-safe under kill -9.
//!
//! Layout: `DIR/LOCK` (held locked by the live server: a second one is refused), and per
//! account `DIR/<account>/`: log segments (`log`), and `snapshot`, the engine's state as of
//! some moment plus the number of the first segment to replay over it.
//!
//! Invariants:
//! - The engine's journal ([`Log`]) writes each change to the log before the engine applies it,
//!   so every answered write is in the log (see `log` for what `sync` adds).
//! - Recovery = the snapshot, then every segment from its number on, in order
//!   ([`Engine::replay`]). A checkpoint ([`checkpoint`]) first rotates the log to a new
//!   segment `S`, then snapshots the engine table by table while writes go on, writes the
//!   snapshot beside the old one, syncs it, renames it over the old one and syncs the
//!   directory, and only then removes the segments before `S`. The snapshot sees every change
//!   recorded before `S` and maybe some after; the changes are full states, so replaying those
//!   from `S` on over it gives the engine's state (table-core's `journal` module). A crash at
//!   any step leaves either the old snapshot with all its segments, or the new one with its.
//! - A checkpoint runs when an account's log passes a size (on a thread of its own, never
//!   under an engine lock) and for every account at [`DataDir::close`].
//!
//! Not kept: the deleted-table cooldown ([`EngineOptions::deleted_table_cooldown`]). The service
//! blocks a deleted table's name for about 40 s whatever happens to its servers, so a table
//! deleted just before a restart could be re-created at once after it here, where the service
//! would answer 409 `TableBeingDeleted`. It is left out on purpose: the cooldown is a test option
//! of the engine that the binary never sets (off by default, as the name is reusable at once on
//! Azurite); keeping it would add the deletion's time to the record format, for an option only
//! an in-process user of [`DataDir`] can set.

mod log;
mod record;

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use table_core::engine::{Engine, EngineOptions};

use self::log::{Log, read_frames, segment_name, segment_number, sync_dir};
use self::record::FORMAT;

/// The snapshot's file name in an account's directory.
const SNAPSHOT: &str = "snapshot";

/// Where a snapshot is written before it replaces the last one.
const SNAPSHOT_TEMP: &str = "snapshot.tmp";

/// The log size past which a snapshot is taken, by default: 64 MiB.
pub const DEFAULT_CHECKPOINT_BYTES: NonZeroU64 =
    NonZeroU64::new(64 * 1024 * 1024).expect("64 MiB is not zero");

/// A data directory holding accounts' engines across restarts (see the module docs).
/// [`DataDir::engine`] recovers an account and keeps it persisted; [`DataDir::close`] takes
/// a last snapshot of each.
///
/// ```
/// use table_core::Entity;
/// use table_core::engine::EngineOptions;
/// use table_server::DataDir;
///
/// # fn main() -> std::io::Result<()> {
/// let root = std::env::temp_dir().join(format!("table-server-doc-{}", std::process::id()));
/// # let _ = std::fs::remove_dir_all(&root);
/// let data = DataDir::builder(&root).open()?;
/// let engine = data.engine("devstoreaccount1", EngineOptions::default())?;
/// engine.create_table("Kept").expect("a new table");
/// engine.insert("Kept", Entity::new("p", "r")).expect("a new row");
/// data.close()?;
///
/// // Opened again (as after a restart, or a kill -9 without the close): the row is back.
/// let data = DataDir::builder(&root).open()?;
/// let engine = data.engine("devstoreaccount1", EngineOptions::default())?;
/// assert!(engine.get("Kept", "p", "r", None).is_ok());
/// data.close()?;
/// # std::fs::remove_dir_all(&root)
/// # }
/// ```
#[derive(Debug)]
pub struct DataDir {
    root: PathBuf,
    sync: bool,
    checkpoint_bytes: NonZeroU64,
    /// Held locked while the directory is in use.
    _lock: File,
    // A std `Mutex`: accounts are opened and closed rarely, never across an `.await`.
    accounts: Mutex<Vec<Persisted>>,
}

/// An account's engine, its log, and the thread that takes its snapshots.
#[derive(Debug)]
struct Persisted {
    name: String,
    engine: Engine,
    log: Arc<Log>,
    checkpointer: Option<JoinHandle<()>>,
}

/// How to open a [`DataDir`]: [`DataDir::builder`].
#[derive(Debug)]
#[must_use]
pub struct DataDirBuilder {
    root: PathBuf,
    sync: bool,
    checkpoint_bytes: NonZeroU64,
}

impl DataDirBuilder {
    /// Whether each change is also flushed to the disk (`fdatasync`) before the engine call
    /// that made it returns, so that a power loss or OS crash loses no answered write either;
    /// calls that write at the same time share one flush (group commit), and a call that may
    /// show a change waits for its flush too. Default `false`: a change is written to the OS,
    /// which a kill of the process cannot lose.
    pub fn sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }

    /// How many bytes an account's log may grow by before a snapshot is taken. Default
    /// [`DEFAULT_CHECKPOINT_BYTES`].
    pub fn checkpoint_bytes(mut self, bytes: NonZeroU64) -> Self {
        self.checkpoint_bytes = bytes;
        self
    }

    /// Creates the directory if missing and locks it. Errors: it cannot be created or
    /// locked, or another live server holds it.
    pub fn open(self) -> io::Result<DataDir> {
        fs::create_dir_all(&self.root)?;
        let lock = File::options().create(true).truncate(false).write(true).open(self.root.join("LOCK"))?;
        lock.try_lock().map_err(|_| {
            io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is in use by another table-server", self.root.display()),
            )
        })?;
        Ok(DataDir {
            root: self.root,
            sync: self.sync,
            checkpoint_bytes: self.checkpoint_bytes,
            _lock: lock,
            accounts: Mutex::default(),
        })
    }
}

impl DataDir {
    /// A builder for the data directory at `root`.
    pub fn builder(root: impl Into<PathBuf>) -> DataDirBuilder {
        DataDirBuilder { root: root.into(), sync: false, checkpoint_bytes: DEFAULT_CHECKPOINT_BYTES }
    }

    /// The engine of `account` (made with `options`), as recovered from its directory, its
    /// changes logged from now on. Errors: the account's files cannot be read or written, a
    /// file is of another format, or a record other than a crash's cut-short last one is
    /// damaged (the error names the file; nothing is repaired or skipped).
    pub fn engine(&self, account: &str, options: EngineOptions) -> io::Result<Engine> {
        let dir = self.root.join(account);
        fs::create_dir_all(&dir)?;
        let engine = Engine::with_options(options);
        let next = recover(&dir, &engine)?;
        let (wake, woken) = mpsc::channel();
        let log = Arc::new(Log::create(&dir, next, self.sync, self.checkpoint_bytes.get(), wake)?);
        engine.set_journal(log.clone()).map_err(|e| io::Error::other(e.message().to_owned()))?;
        let checkpointer = {
            let (engine, log, dir, name) =
                (engine.clone(), Arc::clone(&log), dir.clone(), account.to_owned());
            std::thread::Builder::new().name(format!("checkpoint-{account}")).spawn(move || {
                // Ends when the log (its only sender) is dropped or at close.
                while woken.recv().is_ok() {
                    if let Err(e) = checkpoint(&dir, &engine, &log) {
                        eprintln!("table-server: snapshot of account {name} failed (its log keeps every change): {e}");
                    }
                }
            })?
        };
        let persisted = Persisted {
            name: account.to_owned(),
            engine: engine.clone(),
            log,
            checkpointer: Some(checkpointer),
        };
        self.accounts.lock().unwrap_or_else(PoisonError::into_inner).push(persisted);
        Ok(engine)
    }

    /// Takes a last snapshot of every account (so the next start replays little), after the
    /// server stopped answering. Errors: the first snapshot that failed (the logs still hold
    /// every change).
    pub fn close(self) -> io::Result<()> {
        let accounts = std::mem::take(&mut *self.accounts.lock().unwrap_or_else(PoisonError::into_inner));
        let mut result = Ok(());
        for mut account in accounts {
            let dir = self.root.join(&account.name);
            let taken = checkpoint(&dir, &account.engine, &account.log);
            result = result.and(taken);
            // The thread waits on the log's sender, which the engine keeps: it is left to end
            // with the process rather than joined.
            drop(account.checkpointer.take());
        }
        result
    }
}

/// Replays `dir`'s snapshot and segments into `engine`, cutting a crash's torn write off the
/// last segment; returns the number of the segment to log to next.
fn recover(dir: &Path, engine: &Engine) -> io::Result<u64> {
    let damaged = |file: &Path, what: String| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}: {what}", file.display()))
    };
    let replay = |file: &Path, payloads: Vec<&[u8]>| -> io::Result<()> {
        for payload in payloads {
            let change = record::decode(payload).map_err(|e| damaged(file, e))?;
            engine.replay(&change).map_err(|e| damaged(file, e.message().to_owned()))?;
        }
        Ok(())
    };
    // A snapshot not yet renamed into place was never the snapshot.
    match fs::remove_file(dir.join(SNAPSHOT_TEMP)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut first = 0;
    let snapshot = dir.join(SNAPSHOT);
    match fs::read(&snapshot) {
        Ok(bytes) => {
            let body =
                body(&bytes).ok_or_else(|| damaged(&snapshot, "not a snapshot of this format".into()))?;
            let (start, frames) =
                body.split_at_checked(8).ok_or_else(|| damaged(&snapshot, "no segment number".into()))?;
            first = u64::from_le_bytes(start.try_into().unwrap_or_default());
            let (payloads, _) = read_frames(frames, false).map_err(|e| damaged(&snapshot, e))?;
            replay(&snapshot, payloads)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut segments = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        if let Some(n) = name.to_str().and_then(segment_number) {
            if n < first {
                // Covered by the snapshot: what a crash after its rename left behind.
                fs::remove_file(dir.join(&name))?;
            } else {
                segments.push(n);
            }
        }
    }
    segments.sort_unstable();
    let mut expected = first;
    for (i, &n) in segments.iter().enumerate() {
        let path = dir.join(segment_name(n));
        if n != expected {
            return Err(damaged(&path, format!("segment {} is missing", segment_name(expected))));
        }
        expected = n + 1;
        let last = i + 1 == segments.len();
        let bytes = fs::read(&path)?;
        let Some(body) = body(&bytes) else {
            if last && FORMAT.starts_with(&bytes) {
                // Created by a rotation the crash cut short: it holds nothing.
                fs::remove_file(&path)?;
                sync_dir(dir)?;
                expected = n;
                continue;
            }
            return Err(damaged(&path, "not a log segment of this format".into()));
        };
        let (payloads, len) = read_frames(body, last).map_err(|e| damaged(&path, e))?;
        replay(&path, payloads)?;
        if FORMAT.len() + len < bytes.len() {
            // A torn last write: cut away, so records never follow it.
            let file = File::options().write(true).open(&path)?;
            file.set_len((FORMAT.len() + len) as u64)?;
            file.sync_all()?;
        }
    }
    Ok(expected)
}

/// The bytes after the format's header, if `bytes` starts with it.
fn body(bytes: &[u8]) -> Option<&[u8]> {
    bytes.strip_prefix(FORMAT.as_slice())
}

/// Rotates `log`, snapshots `engine` into `dir` and removes the segments the snapshot covers
/// (see the module docs for why each step comes where it does).
fn checkpoint(dir: &Path, engine: &Engine, log: &Log) -> io::Result<()> {
    log.checkpointing(|| snapshot(dir, engine, log))
}

fn snapshot(dir: &Path, engine: &Engine, log: &Log) -> io::Result<()> {
    let start = log.rotate()?;
    let temp = dir.join(SNAPSHOT_TEMP);
    let mut out = io::BufWriter::new(File::create(&temp)?);
    out.write_all(FORMAT)?;
    out.write_all(&start.to_le_bytes())?;
    engine.snapshot(|change| out.write_all(&log::frame(&record::encode(&change)?)?))?;
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    fs::rename(&temp, dir.join(SNAPSHOT))?;
    sync_dir(dir)?;
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        if name.to_str().and_then(segment_number).is_some_and(|n| n < start) {
            fs::remove_file(dir.join(name))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use table_core::{Entity, ErrorCode};

    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("persist-{name}-{}-{}", std::process::id(), fastrand::u64(..)));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn segments(dir: &Path) -> Vec<u64> {
        let mut found: Vec<u64> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok()?.file_name().to_str().and_then(segment_number))
            .collect();
        found.sort_unstable();
        found
    }

    #[test]
    fn each_account_is_kept_and_a_checkpoint_drops_the_segments_it_covers() {
        let root = temp_dir("accounts");
        let data_dir = DataDir::builder(&root).checkpoint_bytes(NonZeroU64::MAX).open().expect("opens");
        let one = data_dir.engine("acctone", EngineOptions::default()).expect("new account");
        let two = data_dir.engine("accttwo", EngineOptions::default()).expect("new account");
        one.create_table("Ones").expect("created");
        two.create_table("Twos").expect("created");
        let written = one.insert("Ones", Entity::new("p", "r").with("A", 1)).expect("inserted");
        let account = root.join("acctone");
        {
            let accounts = data_dir.accounts.lock().unwrap_or_else(PoisonError::into_inner);
            checkpoint(&account, &accounts[0].engine, &accounts[0].log).expect("a checkpoint");
        }
        assert_eq!(segments(&account), [1], "the segment the snapshot covers is gone");
        one.insert("Ones", Entity::new("p", "after")).expect("inserted");
        // Dropped without closing, as a killed server would leave it.
        drop(data_dir);

        let data_dir = DataDir::builder(&root).open().expect("reopens");
        let one = data_dir.engine("acctone", EngineOptions::default()).expect("recovered");
        let two = data_dir.engine("accttwo", EngineOptions::default()).expect("recovered");
        assert_eq!(one.get("Ones", "p", "r", None).expect("kept").etag, written.etag);
        assert!(one.get("Ones", "p", "after", None).is_ok(), "logged after the snapshot");
        assert!(two.create_table("Twos").is_err(), "the other account's table is kept too");
        assert!(one.create_table("Twos").is_ok(), "accounts do not share tables");
        data_dir.close().expect("a snapshot of each");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn with_sync_an_engine_call_returns_after_the_flush_covering_its_change() {
        let root = temp_dir("sync");
        let data_dir = DataDir::builder(&root).sync(true).open().expect("opens");
        let engine = data_dir.engine("acctone", EngineOptions::default()).expect("new account");
        let log = Arc::clone(&data_dir.accounts.lock().unwrap_or_else(PoisonError::into_inner)[0].log);
        engine.create_table("Synced").expect("created");
        engine.insert("Synced", Entity::new("p", "r")).expect("inserted");
        assert!(log.all_flushed(), "the insert returned before its flush");
        data_dir.close().expect("a last snapshot");
        let _ = fs::remove_dir_all(&root);
    }

    /// A disk for the log whose flushes a test holds in flight or makes fail; otherwise the
    /// OS's flush.
    #[derive(Default)]
    struct Disk {
        state: Mutex<DiskState>,
        changed: std::sync::Condvar,
    }

    #[derive(Default)]
    struct DiskState {
        /// Flushes that start wait until this is cleared.
        held: bool,
        /// Flushes that start from now on fail.
        failing: bool,
        /// Flushes started.
        entered: u64,
    }

    impl Disk {
        fn lock(&self) -> std::sync::MutexGuard<'_, DiskState> {
            self.state.lock().unwrap_or_else(PoisonError::into_inner)
        }

        fn set(&self, change: impl FnOnce(&mut DiskState)) {
            change(&mut self.lock());
            self.changed.notify_all();
        }

        fn entered(&self) -> u64 {
            self.lock().entered
        }

        /// Waits until a flush started after `before` flushes had.
        fn wait_until_entered(&self, before: u64) {
            eventually("a flush to start", || self.entered() > before);
        }

        fn flush(&self, file: &File) -> io::Result<()> {
            let mut state = self.lock();
            let fail = state.failing;
            state.entered += 1;
            while state.held {
                state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            drop(state);
            if fail { Err(io::Error::other("the disk failed (injected)")) } else { file.sync_data() }
        }
    }

    /// Ends the disk's hold when dropped: a test that fails while a flush is held then ends
    /// instead of waiting forever for the threads it started.
    struct Release<'a>(&'a Disk);

    impl Drop for Release<'_> {
        fn drop(&mut self) {
            self.0.set(|d| d.held = false);
        }
    }

    /// A synced data directory at `root` whose account `acctone` flushes to `disk`, with its
    /// engine and log.
    fn synced_on(root: &Path, disk: &Arc<Disk>) -> (DataDir, Engine, Arc<Log>) {
        let data_dir = DataDir::builder(root).sync(true).open().expect("opens");
        let engine = data_dir.engine("acctone", EngineOptions::default()).expect("new account");
        let log = Arc::clone(&data_dir.accounts.lock().unwrap_or_else(PoisonError::into_inner)[0].log);
        let disk = Arc::clone(disk);
        let set = log.flush_stand_in.set(log::FlushStandIn(Box::new(move |file| disk.flush(file))));
        assert!(set.is_ok(), "the log's first stand-in");
        (data_dir, engine, log)
    }

    /// Polls `done` until it holds; a stuck test fails after a generous while rather than hang.
    fn eventually(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "gave up waiting for {what}");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn with_sync_a_read_waits_for_the_flush_of_a_write_it_may_show() {
        let root = temp_dir("read-waits");
        let disk = Arc::new(Disk::default());
        let (data_dir, engine, log) = synced_on(&root, &disk);
        engine.create_table("Synced").expect("created");
        disk.set(|d| d.held = true);
        let before = disk.entered();
        std::thread::scope(|scope| {
            let _release = Release(&disk);
            let write = scope.spawn(|| engine.insert("Synced", Entity::new("p", "r")));
            disk.wait_until_entered(before);
            // The insert is in the OS and applied in memory; the flush covering it is in flight.
            let (answer, answered) = mpsc::channel();
            let engine = &engine;
            scope.spawn(move || answer.send(engine.get("Synced", "p", "r", None)));
            eventually("the read to wait for the flush", || {
                assert!(
                    answered.try_recv().is_err(),
                    "the read answered before the flush of the row it shows"
                );
                log.waiting() == 1
            });
            disk.set(|d| d.held = false);
            let read = answered.recv().expect("the read answers");
            assert!(read.is_ok(), "the row, once flushed: {read:?}");
            assert!(write.join().is_ok_and(|written| written.is_ok()), "the insert, once flushed");
        });
        data_dir.close().expect("a last snapshot");
        let _ = fs::remove_dir_all(&root);
    }

    /// The server may run on one worker thread (`--threads 1`): a write waiting for its flush
    /// hands that worker over, so the runtime's other tasks (other connections) go on.
    #[test]
    fn with_sync_a_write_waiting_for_its_flush_leaves_a_one_worker_runtime_to_other_tasks() {
        let root = temp_dir("one-worker");
        let disk = Arc::new(Disk::default());
        let (data_dir, engine, _log) = synced_on(&root, &disk);
        engine.create_table("Synced").expect("created");
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().expect("a runtime");
        disk.set(|d| d.held = true);
        let release = Release(&disk);
        let before = disk.entered();
        let writer = engine.clone();
        let write = runtime.spawn(async move { writer.insert("Synced", Entity::new("p", "r")).is_ok() });
        disk.wait_until_entered(before);
        let (ran, other_ran) = mpsc::channel();
        runtime.spawn(async move { ran.send(()) });
        let waited = other_ran.recv_timeout(std::time::Duration::from_secs(30));
        drop(release);
        assert!(waited.is_ok(), "another task ran while the write waited for its flush");
        assert!(runtime.block_on(write).is_ok_and(|inserted| inserted), "the insert, once flushed");
        data_dir.close().expect("a last snapshot");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn with_sync_a_failed_flush_fails_the_calls_it_covered_and_refuses_later_writes() {
        let root = temp_dir("flush-fails");
        let disk = Arc::new(Disk::default());
        let (data_dir, engine, log) = synced_on(&root, &disk);
        engine.create_table("Synced").expect("created");
        let kept = engine.insert("Synced", Entity::new("p", "kept")).expect("flushed");
        disk.set(|d| d.held = true);
        let before = disk.entered();
        let first = std::thread::scope(|scope| {
            let _release = Release(&disk);
            let first = scope.spawn(|| engine.insert("Synced", Entity::new("p", "first")));
            disk.wait_until_entered(before);
            // Two writes recorded while that flush runs: the next flush covers both, and fails.
            let engine = &engine;
            let covered = ["second", "third"]
                .map(|row| scope.spawn(move || engine.insert("Synced", Entity::new("p", row))));
            eventually("both writes to wait for the next flush", || log.waiting() == 2);
            disk.set(|d| {
                d.failing = true;
                d.held = false;
            });
            for write in covered {
                let e = write.join().expect("no panic").expect_err("its flush failed");
                assert_eq!((e.status(), e.code()), (Some(500), Some(&ErrorCode::InternalError)), "{e}");
                assert!(e.message().contains("took effect"), "says the write applied: {e}");
            }
            first.join().expect("no panic").expect("its own flush held")
        });
        // A flush that succeeds after a failed one proves nothing of the pages the OS may
        // have dropped: the log stays broken even when the disk answers again.
        disk.set(|d| d.failing = false);
        let e = engine.insert("Synced", Entity::new("p", "refused")).expect_err("the log is broken");
        assert_eq!(e.status(), Some(503), "{e}");
        assert!(e.message().contains("not applied"), "{e}");
        let e = engine.get("Synced", "p", "kept", None).expect_err("shows unflushed changes");
        assert_eq!(e.status(), Some(500), "{e}");
        // A write refused on its own grounds (a conflict) applied nothing, and never says so.
        let e = engine.insert("Synced", Entity::new("p", "second")).expect_err("rests on unflushed rows");
        assert_eq!(e.status(), Some(500), "{e}");
        assert!(e.message().contains("not applied") && !e.message().contains("took effect"), "{e}");
        // Dropped without closing, as a killed server would leave it.
        drop(engine);
        drop(log);
        drop(data_dir);

        let data_dir = DataDir::builder(&root).open().expect("reopens");
        let engine = data_dir.engine("acctone", EngineOptions::default()).expect("recovered");
        let etag = |row: &str| engine.get("Synced", "p", row, None).map(|found| found.etag);
        assert_eq!(etag("kept").ok(), Some(kept.etag), "flushed and answered");
        assert_eq!(etag("first").ok(), Some(first.etag), "flushed and answered");
        // What a failed flush answered is in the OS's hands: without a power loss it is kept.
        assert!(etag("second").is_ok() && etag("third").is_ok(), "applied, and answered so");
        let refused = etag("refused").expect_err("answered as not applied");
        assert_eq!(refused.code(), Some(&ErrorCode::ResourceNotFound), "{refused}");
        data_dir.close().expect("a last snapshot");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_directory_in_use_is_refused() {
        let root = temp_dir("lock");
        let held = DataDir::builder(&root).open().expect("opens");
        let e = DataDir::builder(&root).open().expect_err("held");
        assert!(e.to_string().contains("in use"), "{e}");
        drop(held);
        assert!(DataDir::builder(&root).open().is_ok(), "free again once closed");
        let _ = fs::remove_dir_all(&root);
    }
}
