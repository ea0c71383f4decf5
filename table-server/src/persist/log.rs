//! The write-ahead log of one account: numbered segment files of framed records, and the
//! engine's [`Journal`] that appends to them.
//!
//! Layout: a segment is `{n:016x}.wal`, the format's header ([`FORMAT`]) then records; a
//! record is its payload's length and the payload's CRC-32, the CRC-32 of those 8 bytes (all
//! u32, little endian), then the payload ([`record`](super::record)). The snapshot file uses
//! the same frames. The frame head has a checksum of its own so that a damaged length is
//! found as damage rather than read as a record cut short by a crash.
//!
//! Invariants:
//! - A record is written to the OS (one `write` of the whole frame on a file opened for
//!   append) before the engine applies its change, hence before the request is answered: a
//!   kill -9 of the process loses no answered write.
//! - With `sync`, every engine call waits in [`Journal::settle`], after its locks are released,
//!   until the disk holds (`fdatasync`) every record appended before it ended, so a power loss
//!   loses no answered write either, and no answer shows a change a power loss could take back.
//!   Flushes are shared (group commit): one caller at a time flushes, covering every record
//!   appended until it starts; calls that come meanwhile append theirs and wait for the next
//!   flush, which one of them runs. A failed flush fails every call waiting for it and breaks
//!   the log (the OS may have dropped the unflushed pages, so later records could follow a hole).
//! - A failed write leaves the segment as it was (cut back to its last whole record); when
//!   even that fails the log refuses every later record rather than write after garbage.
//! - Records are appended in the order the engine applies them (the engine calls
//!   [`Journal::record`] under the lock that applies the change; the segment's mutex orders
//!   the appends). Rotation ([`Log::rotate`]) only takes that mutex, never an engine lock, so
//!   a snapshot taken after it cannot deadlock against writers.
//! - Reading ([`read_frames`]): what a crash leaves at the end of the last segment, a prefix
//!   of the last write (maybe followed by zeros, after a power loss), is dropped (the caller
//!   truncates it away); a damaged frame anywhere else, or one followed by other bytes, is
//!   corruption and an error, never skipped.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use table_core::engine::{Change, Journal};

use super::record::{self, FORMAT};

/// Bytes in front of a payload: its length, its CRC-32, and the CRC-32 of those two.
const FRAME_HEAD: usize = 12;

/// The largest payload a frame may announce: above any change the engine can make (a batch
/// is at most 4 MiB of request), so a larger length is damage, not a record.
const MAX_PAYLOAD: usize = 256 * 1024 * 1024;

/// The file name of segment `n`.
pub(crate) fn segment_name(n: u64) -> String {
    format!("{n:016x}.wal")
}

/// The segment number a file name names, if it names one.
pub(crate) fn segment_number(name: &str) -> Option<u64> {
    let hex = name.strip_suffix(".wal")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// `payload` framed: length, CRC-32, payload.
pub(crate) fn frame(payload: &[u8]) -> io::Result<Vec<u8>> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|_| payload.len() <= MAX_PAYLOAD)
        .ok_or_else(|| io::Error::other(format!("a record of {} bytes is too large", payload.len())))?;
    let mut out = Vec::with_capacity(FRAME_HEAD + payload.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    let head_crc = crc32fast::hash(&out);
    out.extend_from_slice(&head_crc.to_le_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// The payloads of the frames in `bytes` (a whole file after its header), and how many bytes
/// of whole frames they span. With `last` (the last segment), what a crash leaves after the
/// last whole frame (a cut frame, or a damaged one followed only by zeros) is dropped; any
/// other damage is an error saying where.
pub(crate) fn read_frames(bytes: &[u8], last: bool) -> Result<(Vec<&[u8]>, usize), String> {
    let mut payloads = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let word = |i: usize| u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
        let damage = if rest.len() < FRAME_HEAD {
            Damage::Cut
        } else if crc32fast::hash(&rest[..8]) != word(8) {
            Damage::Bad("a damaged record header", FRAME_HEAD)
        } else {
            let len = word(0) as usize;
            match rest.get(FRAME_HEAD..FRAME_HEAD + len) {
                None => Damage::Cut,
                Some(payload) if crc32fast::hash(payload) == word(4) => {
                    payloads.push(payload);
                    at += FRAME_HEAD + len;
                    continue;
                }
                Some(_) if FRAME_HEAD + len == rest.len() => Damage::Cut,
                Some(_) => Damage::Bad("a bad record checksum", FRAME_HEAD + len),
            }
        };
        // A crash cuts the last write short; a power loss may also leave zeros after it, so a
        // damaged frame is torn when nothing but zeros follows the bytes it spans.
        let torn = match damage {
            Damage::Cut => true,
            Damage::Bad(_, span) => rest.iter().rposition(|&b| b != 0).is_none_or(|i| i < span),
        };
        return match damage {
            _ if last && torn => Ok((payloads, at)),
            Damage::Cut => Err(format!("a record cut short at byte {at} of a segment that is not the last")),
            Damage::Bad(what, _) => Err(format!("{what} at byte {at}, with data after it")),
        };
    }
    Ok((payloads, at))
}

/// What is wrong with a frame.
enum Damage {
    /// The file ends inside it (or, for a bad checksum, right at its end).
    Cut,
    /// It is damaged: what is wrong, and how many bytes it spans (its head alone when the
    /// head is damaged).
    Bad(&'static str, usize),
}

/// A new file at `path` holding the format's header, synced, its directory synced too.
pub(crate) fn create_with_header(path: &Path) -> io::Result<File> {
    let mut file = OpenOptions::new().create_new(true).append(true).open(path)?;
    file.write_all(FORMAT)?;
    file.sync_all()?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(file)
}

/// Makes the directory's entries (a created, renamed or removed file) durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The segment being appended to.
#[derive(Debug)]
struct Segment {
    /// Shared with a flush in progress, which runs without the segment's lock.
    file: Arc<File>,
    number: u64,
    /// The length of its whole records (where a failed write is cut back to).
    len: u64,
    /// Bytes appended since the last rotation, across segments.
    since_rotation: u64,
    /// A failed write could not be cut back, or a flush failed: nothing more may be appended.
    broken: bool,
}

/// How far the disk holds the log, with `sync` (positions count records over the log's life).
#[derive(Debug, Default)]
struct Flushed {
    /// Every record up to this position is on the disk.
    upto: u64,
    /// A flush is running: the others wait for it to end rather than start their own.
    running: bool,
    /// A flush failed: the records after `upto` may be lost.
    failed: bool,
    /// Calls waiting for a running flush, for the tests of reads that wait.
    #[cfg(test)]
    waiting: usize,
}

/// A flush of a segment's file to the disk.
#[cfg(test)]
type Flush = dyn Fn(&File) -> io::Result<()> + Send + Sync;

/// Stands in for the OS's flush in tests, to hold a flush in flight or fail it.
#[cfg(test)]
pub(super) struct FlushStandIn(pub(super) Box<Flush>);

#[cfg(test)]
impl std::fmt::Debug for FlushStandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlushStandIn")
    }
}

/// One account's log: the [`Journal`] set on its engine.
#[derive(Debug)]
pub(crate) struct Log {
    dir: PathBuf,
    sync: bool,
    /// Past this many bytes since the last rotation, `checkpoint` is asked for a snapshot.
    checkpoint_bytes: u64,
    // A std `Mutex`: held only to append one frame, by the engine's threads, never across an
    // `.await`; it orders the appends.
    segment: Mutex<Segment>,
    /// Records appended over the log's life (stored under `segment`'s lock, after the append):
    /// the position a call's [`settle`](Journal::settle) waits for.
    appended: AtomicU64,
    /// `flushed.upto`, read without the lock by calls that have nothing to wait for (reads).
    flushed_upto: AtomicU64,
    // A std `Mutex` with its `Condvar`: the group commit's state, held for a few instructions,
    // never across the flush itself nor an `.await`.
    flushed: Mutex<Flushed>,
    flush_ended: Condvar,
    /// Flushes run, for the tests of the group commit.
    #[cfg(test)]
    flushes: AtomicU64,
    /// What flushes instead of the OS, when a test sets it.
    #[cfg(test)]
    pub(super) flush_stand_in: std::sync::OnceLock<FlushStandIn>,
    /// Whether a snapshot was asked for and not yet taken (so it is asked once).
    asked: AtomicBool,
    checkpoint: Sender<()>,
    // Held for a whole checkpoint, so two (the size's and the shutdown's) never overlap.
    checkpointing: Mutex<()>,
}

impl Log {
    /// A log appending to a new segment `number` in `dir`.
    pub(crate) fn create(
        dir: &Path,
        number: u64,
        sync: bool,
        checkpoint_bytes: u64,
        checkpoint: Sender<()>,
    ) -> io::Result<Log> {
        let file = create_with_header(&dir.join(segment_name(number)))?;
        let segment = Segment {
            file: Arc::new(file),
            number,
            len: FORMAT.len() as u64,
            since_rotation: 0,
            broken: false,
        };
        Ok(Log {
            dir: dir.to_owned(),
            sync,
            checkpoint_bytes,
            segment: Mutex::new(segment),
            appended: AtomicU64::new(0),
            flushed_upto: AtomicU64::new(0),
            flushed: Mutex::default(),
            flush_ended: Condvar::new(),
            #[cfg(test)]
            flushes: AtomicU64::new(0),
            #[cfg(test)]
            flush_stand_in: std::sync::OnceLock::new(),
            asked: AtomicBool::new(false),
            checkpoint,
            checkpointing: Mutex::new(()),
        })
    }

    /// Runs `checkpoint` alone among the log's checkpoints.
    pub(crate) fn checkpointing<T>(&self, checkpoint: impl FnOnce() -> T) -> T {
        let _alone = self.checkpointing.lock().unwrap_or_else(PoisonError::into_inner);
        checkpoint()
    }

    /// Starts a new segment and returns its number: every record appended from now on is in
    /// it or a later one. The snapshot that follows is asked for again only past the size.
    pub(crate) fn rotate(&self) -> io::Result<u64> {
        let mut segment = self.segment.lock().unwrap_or_else(PoisonError::into_inner);
        let number = segment.number + 1;
        // The old segment's records must outlive the files a snapshot replaces.
        self.sync_data(&segment.file)?;
        let file = Arc::new(create_with_header(&self.dir.join(segment_name(number)))?);
        *segment =
            Segment { file, number, len: FORMAT.len() as u64, since_rotation: 0, broken: segment.broken };
        self.asked.store(false, Ordering::Release);
        Ok(number)
    }

    fn append(&self, frame: &[u8]) -> io::Result<()> {
        let mut segment = self.segment.lock().unwrap_or_else(PoisonError::into_inner);
        if segment.broken {
            return Err(io::Error::other("an earlier write to the log failed and could not be undone"));
        }
        if let Err(e) = (&*segment.file).write_all(frame) {
            // Cut the partial frame away, so that later records do not follow garbage.
            let len = segment.len;
            if segment.file.set_len(len).is_err() {
                segment.broken = true;
            }
            return Err(e);
        }
        segment.len += frame.len() as u64;
        segment.since_rotation += frame.len() as u64;
        // Under the lock, so positions follow the order of the appends.
        self.appended.fetch_add(1, Ordering::Release);
        let full = segment.since_rotation >= self.checkpoint_bytes;
        drop(segment);
        if full && !self.asked.swap(true, Ordering::AcqRel) {
            // The checkpoint thread gone (at shutdown) only means no snapshot is taken early.
            let _ = self.checkpoint.send(());
        }
        Ok(())
    }

    /// Whether the disk holds every record appended so far.
    #[cfg(test)]
    pub(super) fn all_flushed(&self) -> bool {
        self.flushed_upto.load(Ordering::Acquire) >= self.appended.load(Ordering::Acquire)
    }

    /// Flushes `file`'s data to the disk (`fdatasync`).
    fn sync_data(&self, file: &File) -> io::Result<()> {
        #[cfg(test)]
        if let Some(stand_in) = self.flush_stand_in.get() {
            return (stand_in.0)(file);
        }
        file.sync_data()
    }

    /// The number of calls waiting for a running flush.
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.lock_flushed().waiting
    }

    fn lock_flushed(&self) -> MutexGuard<'_, Flushed> {
        self.flushed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until the disk holds every record up to `target`, flushing if no flush runs (see
    /// the module docs).
    fn flush_upto(&self, target: u64) -> io::Result<()> {
        let failed = || io::Error::other("an earlier flush of the log to the disk failed");
        let mut flushed = self.lock_flushed();
        loop {
            if flushed.upto >= target {
                return Ok(());
            }
            if flushed.failed {
                return Err(failed());
            }
            if !flushed.running {
                break;
            }
            #[cfg(test)]
            {
                flushed.waiting += 1;
            }
            flushed = self.flush_ended.wait(flushed).unwrap_or_else(PoisonError::into_inner);
            #[cfg(test)]
            {
                flushed.waiting -= 1;
            }
        }
        flushed.running = true;
        drop(flushed);
        // Every record up to `upto` is in `file` or in an older segment, which the rotation
        // that retired it flushed.
        let (file, upto) = {
            let segment = self.segment.lock().unwrap_or_else(PoisonError::into_inner);
            (Arc::clone(&segment.file), self.appended.load(Ordering::Acquire))
        };
        let result = self.sync_data(&file);
        #[cfg(test)]
        self.flushes.fetch_add(1, Ordering::Relaxed);
        let mut flushed = self.lock_flushed();
        flushed.running = false;
        match &result {
            Ok(()) => {
                flushed.upto = flushed.upto.max(upto);
                self.flushed_upto.store(flushed.upto, Ordering::Release);
            }
            Err(_) => flushed.failed = true,
        }
        self.flush_ended.notify_all();
        drop(flushed);
        if result.is_err() {
            self.segment.lock().unwrap_or_else(PoisonError::into_inner).broken = true;
        }
        result
    }
}

/// Runs `wait`, which blocks on the disk or on another call's flush. On a worker of a
/// multi-threaded tokio runtime (the server's), the worker's other tasks move to another
/// thread first, so the server's other connections go on, and their writes join the next flush.
fn blocking<T>(wait: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

impl Journal for Log {
    fn record(&self, change: &Change) -> io::Result<()> {
        // Encoded before the segment's lock is taken: only the append is serialized.
        let frame = frame(&record::encode(change)?)?;
        self.append(&frame)
    }

    fn settle(&self) -> io::Result<()> {
        if !self.sync {
            return Ok(());
        }
        // Every record this call appended, or whose change it saw, was appended before now.
        let target = self.appended.load(Ordering::Acquire);
        if self.flushed_upto.load(Ordering::Acquire) >= target {
            return Ok(());
        }
        blocking(|| self.flush_upto(target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(payloads: &[&[u8]]) -> Vec<u8> {
        payloads.iter().flat_map(|p| frame(p).unwrap_or_default()).collect()
    }

    #[test]
    fn whole_frames_read_back() {
        let bytes = frames(&[b"one", b"", b"three"]);
        let (read, len) = read_frames(&bytes, false).expect("whole");
        assert_eq!(read, [&b"one"[..], b"", b"three"]);
        assert_eq!(len, bytes.len());
    }

    #[test]
    fn a_torn_tail_of_the_last_segment_is_dropped_at_every_cut() {
        let bytes = frames(&[b"first", b"second record"]);
        let whole_first = FRAME_HEAD + 5;
        for cut in whole_first + 1..bytes.len() {
            let zeroed = [&bytes[..cut], &[0; 40][..]].concat();
            let (read, len) = read_frames(&zeroed, true).expect("zeros after a cut");
            assert_eq!((read, len), (vec![&b"first"[..]], whole_first), "cut at {cut}, zeros after");
            let (read, len) = read_frames(&bytes[..cut], true).expect("a torn tail is no error");
            assert_eq!((read, len), (vec![&b"first"[..]], whole_first), "cut at {cut}");
            assert!(read_frames(&bytes[..cut], false).is_err(), "not the last segment: cut at {cut}");
        }
    }

    #[test]
    fn a_corrupt_last_record_is_dropped_but_a_corrupt_middle_is_an_error() {
        let mut bytes = frames(&[b"first", b"second", b"third"]);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let (read, _) = read_frames(&bytes, true).expect("a bad last record is a torn write");
        assert_eq!(read, [&b"first"[..], b"second"]);

        let mut bytes = frames(&[b"first", b"second", b"third"]);
        bytes[FRAME_HEAD + 5 + FRAME_HEAD] ^= 1; // the first byte of "second"
        let e = read_frames(&bytes, true).expect_err("records follow the damage");
        assert!(e.contains("bad record checksum"), "{e}");
        // A damaged length is found by the head's checksum, not read as a cut record.
        let mut bytes = frames(&[b"first", b"second"]);
        bytes[0] = 0xff;
        let e = read_frames(&bytes, true).expect_err("a damaged length with records after it");
        assert!(e.contains("damaged record header"), "{e}");
    }

    /// A log with `sync` in a fresh directory (its checkpoint requests go nowhere).
    fn synced_log(name: &str) -> (Log, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("log-{name}-{}-{}", std::process::id(), fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let (wake, _) = std::sync::mpsc::channel();
        let log = Log::create(&dir, 0, true, u64::MAX, wake).unwrap_or_else(|e| panic!("a new log: {e}"));
        (log, dir)
    }

    #[test]
    fn one_flush_covers_every_record_appended_before_it() {
        let (log, dir) = synced_log("group");
        let flushes = || log.flushes.load(Ordering::Relaxed);
        for n in 0..3 {
            assert!(log.record(&Change::CreateTable(format!("t{n}"))).is_ok());
        }
        assert_eq!(flushes(), 0, "recording does not wait for the disk");
        assert!(log.settle().is_ok());
        assert_eq!(flushes(), 1, "one flush for the three records");
        assert!(log.settle().is_ok());
        assert_eq!(flushes(), 1, "nothing new to flush");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn concurrent_callers_each_return_after_a_flush_covering_their_record() {
        let (log, dir) = synced_log("concurrent");
        let (threads, each) = (8, 25);
        std::thread::scope(|scope| {
            for t in 0..threads {
                let log = &log;
                scope.spawn(move || {
                    for n in 0..each {
                        assert!(log.record(&Change::CreateTable(format!("t{t}x{n}"))).is_ok());
                        // This thread's record is at or before the position appended now.
                        let mine = log.appended.load(Ordering::Acquire);
                        assert!(log.settle().is_ok());
                        assert!(
                            log.flushed_upto.load(Ordering::Acquire) >= mine,
                            "answered before its flush"
                        );
                    }
                });
            }
        });
        let records = threads * each;
        assert_eq!(log.appended.load(Ordering::Relaxed), records as u64);
        assert!(log.flushes.load(Ordering::Relaxed) <= records as u64);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn segment_names_round_trip() {
        assert_eq!(segment_number(&segment_name(0x2a)), Some(0x2a));
        assert_eq!(segment_number("snapshot"), None);
        assert_eq!(segment_number("zz.wal"), None);
    }
}
