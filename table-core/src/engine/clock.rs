//! The engine's write clock: the `Timestamp` of every write, as a [`Stamp`].
//!
//! Invariant: each call to [`Clock::tick`] returns an instant strictly later than every earlier
//! one, at the service's 100 ns resolution, so ETags (derived from timestamps) are unique per
//! write even when many writes land within one tick of the system clock, or the system clock
//! steps backwards.
//!
//! A write's timestamp stays a [`Stamp`] (seconds and nanoseconds since the Unix epoch) from
//! the clock to the row and the ETag: a `DateTime` would be built from a day count through
//! chrono's calendar, and the row's header then turned back into one, on every write.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};

use crate::entity::ETag;

/// 100 ns ticks per second.
const TICKS_PER_SECOND: i64 = 10_000_000;

/// A strictly monotonic UTC clock with 100 ns ticks.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    /// The last tick handed out, in 100 ns units since the Unix epoch.
    last: AtomicI64,
}

impl Clock {
    /// The next timestamp: the system time, or one tick after the previous timestamp when the
    /// system clock has not moved past it.
    pub(crate) fn tick(&self) -> Stamp {
        let now = system_ticks();
        let previous = self
            .last
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| Some(now.max(last.saturating_add(1))))
            // The closure always returns `Some`, so the update cannot fail; both arms carry
            // the previous value.
            .unwrap_or_else(|last| last);
        Stamp::of_ticks(now.max(previous.saturating_add(1)))
    }
}

impl Clock {
    /// Makes every later tick strictly later than `timestamp` (a restored row's), so the
    /// ETags of writes after a restore keep increasing.
    pub(crate) fn observe(&self, timestamp: DateTime<Utc>) {
        let ticks = timestamp.timestamp().saturating_mul(TICKS_PER_SECOND)
            + i64::from(timestamp.timestamp_subsec_nanos() / 100);
        self.last.fetch_max(ticks, Ordering::AcqRel);
    }
}

fn system_ticks() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, ticks_of)
}

/// `since_epoch` in whole ticks, saturating at `i64::MAX`: seconds and the fraction's ticks
/// apart, since dividing the 128-bit nanosecond count is a library call on every write.
fn ticks_of(since_epoch: Duration) -> i64 {
    i64::try_from(since_epoch.as_secs())
        .unwrap_or(i64::MAX)
        .saturating_mul(TICKS_PER_SECOND)
        .saturating_add(i64::from(since_epoch.subsec_nanos() / 100))
}

/// The instant of a write: `secs` seconds and `nanos` nanoseconds after the Unix epoch, as
/// `DateTime::timestamp` and `timestamp_subsec_nanos` give them (`nanos` of 1 s or more for a
/// leap second). Ordered as the instants are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Stamp {
    secs: i64,
    nanos: u32,
}

impl Stamp {
    /// The instant `ticks` 100 ns units after the Unix epoch.
    fn of_ticks(ticks: i64) -> Stamp {
        // `rem_euclid` is in 0..TICKS_PER_SECOND: the nanoseconds fit a `u32`.
        Stamp {
            secs: ticks.div_euclid(TICKS_PER_SECOND),
            nanos: (ticks.rem_euclid(TICKS_PER_SECOND) * 100) as u32,
        }
    }

    /// Seconds and nanoseconds since the Unix epoch.
    pub(crate) fn unix(self) -> (i64, u32) {
        (self.secs, self.nanos)
    }

    /// The ETag of a write at this instant (`ETag::from_timestamp` of it).
    pub(crate) fn etag(self) -> ETag {
        ETag::from_unix_time(self.secs, self.nanos)
    }
}

impl From<DateTime<Utc>> for Stamp {
    fn from(t: DateTime<Utc>) -> Stamp {
        Stamp { secs: t.timestamp(), nanos: t.timestamp_subsec_nanos() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_the_nanoseconds_over_100_saturating() {
        let secs = [0, 1, 1_700_000_000, 922_337_203_685, 922_337_203_686, u64::MAX];
        for (secs, nanos) in
            secs.into_iter().flat_map(|s| [0, 99, 100, 123_456_789, 999_999_999].map(|n| (s, n)))
        {
            let since_epoch = Duration::new(secs, nanos);
            let expected = i64::try_from(since_epoch.as_nanos() / 100).unwrap_or(i64::MAX);
            assert_eq!(ticks_of(since_epoch), expected, "{since_epoch:?}");
        }
    }

    #[test]
    fn ticks_are_strictly_increasing_and_whole_ticks() {
        let clock = Clock::default();
        let mut previous = clock.tick();
        for _ in 0..10_000 {
            let t = clock.tick();
            assert!(t > previous);
            assert_eq!(t.unix().1 % 100, 0);
            previous = t;
        }
    }

    fn datetime(stamp: Stamp) -> DateTime<Utc> {
        let (secs, nanos) = stamp.unix();
        DateTime::from_timestamp(secs, nanos).expect("in range")
    }

    #[test]
    fn stamps_of_ticks_are_the_instants_a_datetime_gives() {
        for ticks in [-10_000_001i64, -1, 0, 1, 17_000_000_001_234_567, 2_534_023_007_999_999_999] {
            let t = DateTime::from_timestamp(ticks.div_euclid(TICKS_PER_SECOND), 0).expect("in range")
                + chrono::Duration::nanoseconds(ticks.rem_euclid(TICKS_PER_SECOND) * 100);
            assert_eq!(Stamp::of_ticks(ticks), Stamp::from(t), "{ticks}");
            assert_eq!(Stamp::of_ticks(ticks).etag(), ETag::from_timestamp(t), "{ticks}");
        }
    }

    #[test]
    fn a_clock_observing_a_later_timestamp_ticks_after_it() {
        let clock = Clock::default();
        let ahead = system_ticks() + 1_000 * TICKS_PER_SECOND;
        clock.observe(datetime(Stamp::of_ticks(ahead)));
        clock.observe(datetime(Stamp::of_ticks(ahead - 5)));
        assert_eq!(clock.tick(), Stamp::of_ticks(ahead + 1), "never moved back by an earlier one");
    }

    #[test]
    fn a_clock_ahead_of_the_system_keeps_counting_ticks() {
        let clock = Clock::default();
        let ahead = system_ticks() + 1_000 * TICKS_PER_SECOND;
        clock.last.store(ahead, Ordering::Release);
        assert_eq!(clock.tick(), Stamp::of_ticks(ahead + 1));
        assert_eq!(clock.tick(), Stamp::of_ticks(ahead + 2));
    }
}
