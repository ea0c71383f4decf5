//! Retries with exponential backoff and full jitter for transient failures.
//!
//! Only requests that are safe to send twice are retried after an ambiguous failure (a timeout
//! or a dropped connection may hide a write that was applied). Inserts and batches are replayed
//! only when the service said it did not process them (408, 429, 503) or the connection was never
//! established.

use std::time::Duration;

/// How a request may be replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replay {
    /// Sending twice has the effect of sending once (reads, upserts, deletes, conditional writes).
    Idempotent,
    /// Sending twice may apply twice or fail spuriously (insert, batch).
    NotIdempotent,
}

/// Retry settings of a client.
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
    /// The pauses between attempts of a write that lost a race to a concurrent writer (index
    /// maintenance, wide entities): 1 ms doubling up to 50 ms, with the same full jitter.
    pub(crate) const CONTENTION: RetryPolicy = RetryPolicy {
        max_retries: u32::MAX,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(50),
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
    pub(crate) fn retries(&self) -> u32 {
        self.max_retries
    }

    /// The pause before retry number `retry` (0-based): a uniform draw in
    /// `[0, min(max, initial * 2^retry)]` ("full jitter"), so clients do not retry in lockstep.
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let exp = self.initial_backoff.saturating_mul(2u32.saturating_pow(retry.min(20)));
        let cap = exp.min(self.max_backoff);
        cap.mul_f64(fastrand::f64())
    }
}

/// Whether a failed attempt may be retried, from the status (if any answer came) and how the
/// transport failed.
pub(crate) fn is_retryable(replay: Replay, status: Option<u16>, connect_failed: bool) -> bool {
    match status {
        // The service refused before processing: safe for every request.
        Some(408 | 429 | 503) => true,
        // The service may have applied the write before failing.
        Some(500 | 502 | 504) => replay == Replay::Idempotent,
        Some(_) => false,
        None if connect_failed => true,
        None => replay == Replay::Idempotent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(is_retryable(Replay::NotIdempotent, Some(503), false));
        assert!(is_retryable(Replay::NotIdempotent, Some(429), false));
        assert!(!is_retryable(Replay::NotIdempotent, Some(500), false));
        assert!(!is_retryable(Replay::NotIdempotent, None, false));
        assert!(is_retryable(Replay::NotIdempotent, None, true));
        assert!(is_retryable(Replay::Idempotent, Some(500), false));
        assert!(is_retryable(Replay::Idempotent, None, false));
        assert!(!is_retryable(Replay::Idempotent, Some(404), false));
    }
}
