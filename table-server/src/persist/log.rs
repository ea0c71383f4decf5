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
//!   kill -9 of the process loses no answered write. With `sync`, it is also on the disk
//!   (`fdatasync`) before, so a power loss loses none either.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, PoisonError};

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
    file: File,
    number: u64,
    /// The length of its whole records (where a failed write is cut back to).
    len: u64,
    /// Bytes appended since the last rotation, across segments.
    since_rotation: u64,
    /// A failed write could not be cut back: nothing more may be appended.
    broken: bool,
}

/// One account's log: the [`Journal`] set on its engine.
#[derive(Debug)]
pub(crate) struct Log {
    dir: PathBuf,
    sync: bool,
    /// Past this many bytes since the last rotation, `checkpoint` is asked for a snapshot.
    checkpoint_bytes: u64,
    // A std `Mutex`: held only to append one frame (and, with `sync`, flush it), by the
    // engine's threads, never across an `.await`; it orders the appends.
    segment: Mutex<Segment>,
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
        let segment = Segment { file, number, len: FORMAT.len() as u64, since_rotation: 0, broken: false };
        Ok(Log {
            dir: dir.to_owned(),
            sync,
            checkpoint_bytes,
            segment: Mutex::new(segment),
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
        segment.file.sync_data()?;
        let file = create_with_header(&self.dir.join(segment_name(number)))?;
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
        let written = segment
            .file
            .write_all(frame)
            .and_then(|()| if self.sync { segment.file.sync_data() } else { Ok(()) });
        if let Err(e) = written {
            // Cut the partial frame away, so that later records do not follow garbage.
            let len = segment.len;
            if segment.file.set_len(len).is_err() {
                segment.broken = true;
            }
            return Err(e);
        }
        segment.len += frame.len() as u64;
        segment.since_rotation += frame.len() as u64;
        let full = segment.since_rotation >= self.checkpoint_bytes;
        drop(segment);
        if full && !self.asked.swap(true, Ordering::AcqRel) {
            // The checkpoint thread gone (at shutdown) only means no snapshot is taken early.
            let _ = self.checkpoint.send(());
        }
        Ok(())
    }
}

impl Journal for Log {
    fn record(&self, change: &Change) -> io::Result<()> {
        // Encoded before the segment's lock is taken: only the append is serialized.
        let frame = frame(&record::encode(change)?)?;
        self.append(&frame)
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

    #[test]
    fn segment_names_round_trip() {
        assert_eq!(segment_number(&segment_name(0x2a)), Some(0x2a));
        assert_eq!(segment_number("snapshot"), None);
        assert_eq!(segment_number("zz.wal"), None);
    }
}
