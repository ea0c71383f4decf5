//! Retries with exponential backoff and full jitter for transient failures, and the rules that
//! decide which failed attempt may be sent again and which one leaves a write's outcome unknown.
//!
//! An attempt is *ambiguous* when the request may have reached the service and no trustworthy
//! answer came back: a timeout or a dropped connection after the request was sent, or a 500,
//! 502 or 504. Only requests that are safe to send twice are retried after an ambiguous
//! attempt; inserts and batches are replayed only when the service said it did not process
//! them (408, 429, 503) or the connection was never established. A write whose attempts
//! included an ambiguous one ends, if it fails, with [`Error::may_have_applied`] set.
//!
//! [`run`] is the one retry loop: both backends call it with their own attempt (an HTTP
//! exchange, or one call into the embedded engine, whose injected faults stand for the same
//! failures), so the rules above hold whichever backend serves a request.
//!
//! [`Error::may_have_applied`]: table_core::Error::may_have_applied

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use table_core::{Error, ErrorKind, Operation, Result};

/// How a request may be replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replay {
    /// A read: sending twice is sending once, and a failed read leaves nothing applied.
    Read,
    /// Sending twice has the effect of sending once (upserts, deletes, conditional writes).
    Idempotent,
    /// Sending twice may apply twice or fail spuriously (insert, batch, table creation).
    NotIdempotent,
}

impl Replay {
    /// How a single-entity write may be replayed: an insert's replay would fail with 409 after
    /// a lost success; every other write sent twice has the effect of sending it once.
    pub(crate) fn of(operation: &Operation) -> Replay {
        Replay::of_write(matches!(operation, Operation::Insert(_)))
    }

    /// [`of`](Self::of) a write that is an insert, or another write.
    pub(crate) fn of_write(insert: bool) -> Replay {
        match insert {
            true => Replay::NotIdempotent,
            false => Replay::Idempotent,
        }
    }
}

/// How a client retries failed requests, on every backend: the embedded engine's injected
/// faults ([`Engine::faults`](table_core::engine::Engine::faults)) go through the same policy,
/// so retry handling can be tested offline.
///
/// Retried, after a pause of exponential backoff with full jitter (or, over HTTP, the pause
/// the service asks for with `Retry-After` / `x-ms-retry-after-ms` when that is longer, up to
/// [`max_backoff`](Self::max_backoff)):
/// - every request, when the service said it did not process it (408, 429, 503 `ServerBusy`)
///   or the connection could not be established;
/// - requests that are safe to send twice (reads, queries, upserts, replaces, merges, deletes,
///   table deletion) also after an *ambiguous* attempt: a timeout or a connection dropped
///   after the request was sent, or a 500, 502 or 504, when the service may have processed it.
///
/// Never replayed after an ambiguous attempt: inserts, entity-group transactions and table
/// creation, whose second application would fail spuriously (409) or apply twice. Their
/// ambiguous failure is returned at once, marked [`Error::may_have_applied`].
///
/// Every write that fails after an ambiguous attempt carries that marker (reads never do), and
/// a retry's answer that only the first attempt could have caused is resolved rather than
/// reported: see the crate docs, "Retries and ambiguous failures".
///
/// [`Error::may_have_applied`]: table_core::Error::may_have_applied
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    max_retries: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 3 retries, 200 ms initial backoff doubling up to 5 s.
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// The budget of a write that lost a race to a concurrent writer (index maintenance, moves,
    /// wide entities): how often it re-reads and tries again, and the pauses in between, before
    /// it gives up with [`ErrorKind::Contention`](table_core::ErrorKind::Contention). The
    /// pauses grow to seconds because a row that N writers race for takes one write per round
    /// trip: the winners must be spread over N round trips, or every attempt collides again.
    pub(crate) const CONTENTION: RetryPolicy = RetryPolicy {
        max_retries: 255,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_secs(2),
    };

    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy { max_retries: 0, ..RetryPolicy::default() }
    }

    /// Retries after the first attempt. Default 3.
    #[must_use]
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Backoff before the first retry; doubles on each further retry. Default 200 ms.
    #[must_use]
    pub fn initial_backoff(mut self, d: Duration) -> Self {
        self.initial_backoff = d;
        self
    }

    /// Upper bound of one backoff. Default 5 s.
    #[must_use]
    pub fn max_backoff(mut self, d: Duration) -> Self {
        self.max_backoff = d;
        self
    }

    /// The number of retries allowed after the first attempt.
    pub(crate) const fn retries(&self) -> u32 {
        self.max_retries
    }

    /// The pause before retry number `retry` (0-based): the [backoff](Self::backoff), or the
    /// pause the service asked for (`Retry-After`) when that is longer, but never longer than
    /// `max_backoff`: a policy's bound on one pause holds whatever the server says.
    pub(crate) fn pause(&self, retry: u32, asked: Option<Duration>) -> Duration {
        let backoff = self.backoff(retry);
        asked.map_or(backoff, |asked| backoff.max(asked.min(self.max_backoff)))
    }

    /// A uniform draw in `[0, min(max, initial * 2^retry)]` ("full jitter"), so clients do not
    /// retry in lockstep.
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let exp = self.initial_backoff.saturating_mul(2u32.saturating_pow(retry.min(20)));
        let cap = exp.min(self.max_backoff);
        cap.mul_f64(fastrand::f64())
    }
}

/// The pause a `Retry-After` value asks for at `now`: whole seconds, or the time until an
/// HTTP-date (none for a date past: retry now). `None` for anything else, so the policy's
/// own backoff applies. [`RetryPolicy::pause`] caps it at the maximum backoff.
pub(crate) fn retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    // The three forms of RFC 9110 section 5.6.7: IMF-fixdate, then the obsolete RFC 850 and
    // asctime forms, which recipients must still accept.
    const HTTP_DATE: [&str; 3] =
        ["%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"];
    let date = HTTP_DATE.iter().find_map(|format| NaiveDateTime::parse_from_str(value, format).ok())?;
    Some((date.and_utc() - now).to_std().unwrap_or(Duration::ZERO))
}

/// How one attempt failed, as far as retrying and ambiguity are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The request was never sent (it could not be signed, or was refused locally).
    NotSent,
    /// The connection could not be established: the service never saw the request.
    ConnectFailed,
    /// The request was sent and no complete answer came back (timeout, dropped connection).
    Lost,
    /// The service answered with this error status.
    Answered(u16),
    /// A read's secondary endpoint answered 404: the data may not have replicated there yet,
    /// so the read is retried on the primary (see `location`).
    NotReplicated,
}

impl Failure {
    /// `true` when the service may have processed the request although the attempt failed.
    pub(crate) fn is_ambiguous(self) -> bool {
        matches!(self, Failure::Lost | Failure::Answered(500 | 502 | 504))
    }

    /// Whether the attempt may be sent again.
    pub(crate) fn is_retryable(self, replay: Replay) -> bool {
        if self.is_ambiguous() {
            // The service may have applied it: only if applying twice is applying once.
            return replay != Replay::NotIdempotent;
        }
        // The service did not process it: safe for every request.
        matches!(self, Failure::ConnectFailed | Failure::NotReplicated | Failure::Answered(408 | 429 | 503))
    }

    /// The failure an error describes, for backends that report errors only (the embedded
    /// engine, whose injected faults stand for a status or a client-side timeout: a timeout
    /// is [`Lost`](Failure::Lost) whether or not the engine applied the request, since a
    /// client that timed out cannot tell).
    pub(crate) fn of(error: &Error) -> Failure {
        match error.status() {
            Some(status) => Failure::Answered(status),
            None if error.kind() == ErrorKind::Timeout => Failure::Lost,
            None => Failure::NotSent,
        }
    }
}

/// One failed attempt, as the retry loop sees it.
pub(crate) struct Failed {
    /// How it failed.
    pub(crate) failure: Failure,
    /// The error returned if no retry follows.
    pub(crate) error: Error,
    /// The pause the service asked for before the next attempt (HTTP `Retry-After`).
    pub(crate) asked_pause: Option<Duration>,
}

impl Failed {
    /// A failed attempt known by its error alone (see [`Failure::of`]).
    pub(crate) fn of(error: Error) -> Failed {
        Failed { failure: Failure::of(&error), error, asked_pause: None }
    }
}

/// Runs `attempt` until it succeeds or `policy` and `replay` allow no further attempt,
/// pausing between attempts as the policy says. The final error of a write any of whose
/// attempts was ambiguous is marked [`Error::may_have_applied`] (a read's never is: it changes
/// nothing, whatever reached the service). A last attempt that failed as
/// [`Failure::NotReplicated`] says nothing about the data: the previous attempt's error is
/// returned instead.
pub(crate) async fn run<T, F>(
    policy: &RetryPolicy,
    replay: Replay,
    mut attempt: impl FnMut() -> F,
) -> Result<T>
where
    F: Future<Output = std::result::Result<T, Failed>>,
{
    let mut retry = 0;
    // Whether some attempt so far may have been processed without a trustworthy answer.
    let mut ambiguous = false;
    let mut previous: Option<Error> = None;
    loop {
        let failed = match attempt().await {
            Ok(value) => return Ok(value),
            Err(failed) => failed,
        };
        ambiguous |= failed.failure.is_ambiguous();
        if retry >= policy.retries() || !failed.failure.is_retryable(replay) {
            let error = match (failed.failure, previous) {
                (Failure::NotReplicated, Some(previous)) => previous,
                _ => failed.error,
            };
            return Err(match ambiguous && replay != Replay::Read {
                true => error.with_may_have_applied(),
                false => error,
            });
        }
        let pause = policy.pause(retry, failed.asked_pause);
        tracing::warn!(retry, ?pause, error = %failed.error, "retrying a transient failure");
        tokio::time::sleep(pause).await;
        previous = Some(failed.error);
        retry += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_the_service_asks_for_is_kept_up_to_the_bound() {
        let p = RetryPolicy::default()
            .initial_backoff(Duration::from_millis(1))
            .max_backoff(Duration::from_secs(2));
        assert_eq!(p.pause(0, Some(Duration::from_secs(1))), Duration::from_secs(1));
        assert_eq!(p.pause(0, Some(Duration::from_secs(60))), Duration::from_secs(2));
        assert!(p.pause(0, None) <= Duration::from_millis(1));
    }

    #[test]
    fn retry_after_reads_seconds_and_the_three_http_date_forms() {
        let now = DateTime::parse_from_rfc3339("1994-11-06T08:49:30Z").unwrap().with_timezone(&Utc);
        let seven = Some(Duration::from_secs(7));
        assert_eq!(retry_after(" 7 ", now), seven);
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), seven);
        assert_eq!(retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now), seven);
        assert_eq!(retry_after("Sun Nov  6 08:49:37 1994", now), seven);
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now), Some(Duration::ZERO));
        for unreadable in
            ["", "-1", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 CET", "Sun, 31 Feb 1994 08:49:37 GMT"]
        {
            assert_eq!(retry_after(unreadable, now), None, "{unreadable:?}");
        }
    }

    #[test]
    fn backoff_is_bounded_by_the_exponential_cap() {
        let p = RetryPolicy::default()
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_millis(350));
        for _ in 0..100 {
            assert!(p.backoff(0) <= Duration::from_millis(100));
            assert!(p.backoff(1) <= Duration::from_millis(200));
            assert!(p.backoff(5) <= Duration::from_millis(350));
        }
    }

    #[test]
    fn inserts_are_not_blindly_replayed() {
        use Failure::*;
        assert!(Answered(503).is_retryable(Replay::NotIdempotent));
        assert!(Answered(429).is_retryable(Replay::NotIdempotent));
        assert!(!Answered(500).is_retryable(Replay::NotIdempotent));
        assert!(!Lost.is_retryable(Replay::NotIdempotent));
        assert!(ConnectFailed.is_retryable(Replay::NotIdempotent));
        assert!(Answered(500).is_retryable(Replay::Idempotent));
        assert!(Lost.is_retryable(Replay::Idempotent));
        assert!(Lost.is_retryable(Replay::Read));
        assert!(!Answered(404).is_retryable(Replay::Idempotent));
        assert!(!NotSent.is_retryable(Replay::Idempotent));
    }

    #[test]
    fn only_attempts_the_service_may_have_processed_are_ambiguous() {
        use Failure::*;
        for failure in [Lost, Answered(500), Answered(502), Answered(504)] {
            assert!(failure.is_ambiguous(), "{failure:?}");
        }
        for failure in [NotSent, ConnectFailed, Answered(408), Answered(429), Answered(503), Answered(412)] {
            assert!(!failure.is_ambiguous(), "{failure:?}");
        }
        assert_eq!(Failure::of(&crate::error::timeout("t")), Lost);
        assert_eq!(Failure::of(&crate::error::transport("x")), NotSent);
    }
}
