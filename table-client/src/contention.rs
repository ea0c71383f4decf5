//! Retrying read-then-conditional-write steps that lose to concurrent writers, within the
//! contention budget ([`RetryPolicy::CONTENTION`]): shared by index maintenance, entity moves
//! and wide entities. Past the budget the error is `ErrorKind::Contention`, never the lost
//! race's own 412, 409 or 404.

use table_core::{Error, Result};

use crate::error;
use crate::retry::RetryPolicy;

/// How many times a write tries (re-reading in between) while concurrent writers keep
/// changing what it read: the contention budget, [`RetryPolicy::CONTENTION`].
pub(crate) const MAX_ATTEMPTS: usize = RetryPolicy::CONTENTION.retries() as usize + 1;

/// Runs `step` again, after a short jittered pause, while it fails with an error `is_race`
/// accepts (a concurrent writer got in between a read and a conditional write), within the
/// contention budget; when the races do not stop, a [`contention`] error about `subject` (the
/// last race's error as its source), never the race's own 412, 409 or 404.
pub(crate) async fn retry_races<T, F, Fut>(subject: &str, is_race: fn(&Error) -> bool, step: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    retry_races_within(&RetryPolicy::CONTENTION, subject, is_race, step).await
}

/// [`retry_races`] with the budget and pauses of `policy`.
async fn retry_races_within<T, F, Fut>(
    policy: &RetryPolicy,
    subject: &str,
    is_race: fn(&Error) -> bool,
    mut step: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut retry = 0;
    loop {
        match step().await {
            Err(e) if is_race(&e) && retry < policy.retries() => {
                tokio::time::sleep(policy.backoff(retry)).await;
                retry += 1;
            }
            Err(e) if is_race(&e) => return Err(contention(subject, retry + 1, e)),
            result => return result,
        }
    }
}

/// The error of a write about `subject` whose `attempts` all lost to a concurrent writer;
/// `last` is the last attempt's error. The caller adds the "may have applied" marker when an
/// earlier step of the write did apply.
pub(crate) fn contention(subject: &str, attempts: u32, last: Error) -> Error {
    error::contention(format!(
        "{subject}: concurrent writers changed what the write read on each of its {attempts} attempts \
         (the contention budget)"
    ))
    .with_source(last)
}

/// A short pause with jitter between attempts, so contending writers spread out.
pub(crate) async fn backoff(attempt: usize) {
    let retry = u32::try_from(attempt).unwrap_or(u32::MAX);
    tokio::time::sleep(RetryPolicy::CONTENTION.backoff(retry)).await;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use table_core::{ErrorCode, ErrorKind};

    use super::*;

    fn is_lost_race(e: &Error) -> bool {
        e.kind() == ErrorKind::PreconditionFailed
    }

    fn lost_race() -> Error {
        Error::service(ErrorCode::UpdateConditionNotSatisfied)
    }

    #[tokio::test]
    async fn races_past_the_budget_are_a_contention_error_never_the_412() {
        let policy = RetryPolicy::default().max_retries(3).initial_backoff(Duration::from_millis(1));
        let attempts = AtomicU32::new(0);
        let step = || async {
            attempts.fetch_add(1, Ordering::Relaxed);
            Err::<(), _>(lost_race())
        };
        let err = retry_races_within(&policy, "write of x", is_lost_race, step).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Contention);
        assert!(err.is_transient() && !err.may_have_applied());
        assert!(err.message().starts_with("write of x: ") && err.message().contains("4 attempts"), "{err}");
        assert_eq!(attempts.load(Ordering::Relaxed), 4, "1 attempt + 3 retries");
        let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<Error>());
        assert_eq!(source.and_then(Error::status), Some(412));
    }

    #[tokio::test]
    async fn other_errors_and_successes_come_back_as_they_are() {
        let policy = RetryPolicy::default().max_retries(3).initial_backoff(Duration::from_millis(1));
        let attempts = AtomicU32::new(0);
        let step = || async {
            match attempts.fetch_add(1, Ordering::Relaxed) {
                0 => Err(lost_race()),
                _ => Ok(7),
            }
        };
        assert_eq!(retry_races_within(&policy, "x", is_lost_race, step).await.unwrap(), 7);
        let step = || async { Err::<(), _>(crate::error::auth("denied")) };
        let err = retry_races_within(&policy, "x", is_lost_race, step).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Auth);
    }
}
