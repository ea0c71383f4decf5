//! Deterministic fault injection: make chosen requests fail, before or after they take effect.
//!
//! Every public [`Engine`](super::Engine) method that corresponds to one service request
//! (table create/delete/list, get, each single write, query, batch) counts as one call,
//! numbered 1, 2, 3, ... from the engine's creation ([`Faults::calls`] is the number served so
//! far). Convenience writes (`insert`, `merge`, ...) count once. A fault is attached to a call
//! number, so a test that makes the same calls gets the same failures; nothing is random.
//!
//! A fault either fires [`FaultTiming::BeforeApply`] (the request has no effect, as a
//! throttled or rejected request) or [`FaultTiming::AfterApply`] (the request takes full effect
//! but the caller gets the error, as a response lost on the network or a crash right after
//! the request was sent).
//!
//! A `table-client` client over the engine treats these errors as the failures they stand
//! for: it retries them as its retry policy says (every request after a 408, 429 or 503;
//! after a 500, 502, 504 or a timeout, which may hide an applied request, only reads and
//! writes that are safe to send twice) and marks such a write's final error "may have
//! applied". A test that wants each fault to reach the caller sets
//! `RetryPolicy::none()` on the client's builder.

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::error::{Error, ErrorCode};

/// The error an injected fault produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InjectedError {
    /// A service error with this code and HTTP status.
    Service {
        /// The error code.
        code: ErrorCode,
        /// The HTTP status.
        status: u16,
    },
    /// The request timed out on the client side: kind [`ErrorKind::Timeout`](crate::error::ErrorKind::Timeout), no code or status.
    Timeout,
}

/// When an injected fault fires, relative to the request's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultTiming {
    /// The request fails and has no effect.
    BeforeApply,
    /// The request takes effect, then the caller gets the error.
    AfterApply,
}

/// One injected failure: which error, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSpec {
    /// The error the caller gets.
    pub error: InjectedError,
    /// Whether the request takes effect first.
    pub timing: FaultTiming,
}

impl FaultSpec {
    /// A service error with `code` and the status the service pairs with it, before applying.
    pub fn service(code: ErrorCode) -> Self {
        let status = code.status();
        FaultSpec { error: InjectedError::Service { code, status }, timing: FaultTiming::BeforeApply }
    }

    /// 503 `ServerBusy` (throttling), before applying.
    pub fn server_busy() -> Self {
        FaultSpec::service(ErrorCode::ServerBusy)
    }

    /// A client-side timeout, before applying.
    pub fn timeout() -> Self {
        FaultSpec { error: InjectedError::Timeout, timing: FaultTiming::BeforeApply }
    }

    /// Overrides the HTTP status of a service error (no effect on a timeout).
    #[must_use]
    pub fn with_status(mut self, new_status: u16) -> Self {
        if let InjectedError::Service { status, .. } = &mut self.error {
            *status = new_status;
        }
        self
    }

    /// Makes the fault fire after the request took effect.
    #[must_use]
    pub fn after_apply(mut self) -> Self {
        self.timing = FaultTiming::AfterApply;
        self
    }

    /// The error the caller receives.
    pub fn to_error(&self) -> Error {
        match &self.error {
            InjectedError::Service { code, status } => {
                Error::answered(*status, Some(code.clone()), "injected fault")
            }
            InjectedError::Timeout => Error::timeout("injected fault: timed out"),
        }
    }
}

/// The fault plan of one engine, shared by its clones. See the module docs for how calls are
/// counted.
#[derive(Debug, Default)]
pub struct Faults {
    calls: AtomicU64,
    // Lets calls skip the mutex while no fault is planned (the common case, and the benches).
    armed: AtomicBool,
    // A mutex, not a lock-free structure: planning is rare and the critical sections are a
    // map lookup; it is never held while a request runs.
    plan: Mutex<Plan>,
}

#[derive(Debug, Default)]
struct Plan {
    /// Call number -> fault, for one-off faults.
    once: BTreeMap<u64, FaultSpec>,
    /// Fail every `period`-th call after call number `after`.
    every: Option<Every>,
}

#[derive(Debug)]
struct Every {
    after: u64,
    period: NonZeroU64,
    spec: FaultSpec,
}

impl Faults {
    /// Fails the `n`-th call from now (`1` = the next call). A later plan for the same call
    /// replaces an earlier one.
    pub fn fail_call(&self, n: NonZeroU64, spec: FaultSpec) {
        let at = self.calls() + n.get();
        self.with_plan(|plan| {
            plan.once.insert(at, spec);
        });
    }

    /// Fails every `n`-th call from now on (the `n`-th, `2n`-th, ... call from now), replacing
    /// any earlier `fail_every` ([`clear`](Self::clear) removes it). A one-off fault planned
    /// for the same call wins.
    pub fn fail_every(&self, n: NonZeroU64, spec: FaultSpec) {
        let after = self.calls();
        self.with_plan(|plan| {
            plan.every = Some(Every { after, period: n, spec });
        });
    }

    /// Removes every planned fault. The call counter keeps counting.
    pub fn clear(&self) {
        self.with_plan(|plan| *plan = Plan::default());
    }

    /// The number of calls served so far (failed ones included).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Acquire)
    }

    /// Counts one call and returns the fault planned for it, if any.
    pub(crate) fn next_call(&self) -> Option<FaultSpec> {
        let call = self.calls.fetch_add(1, Ordering::AcqRel) + 1;
        if !self.armed.load(Ordering::Acquire) {
            return None;
        }
        let mut plan = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        let fault = match plan.once.remove(&call) {
            Some(spec) => Some(spec),
            None => {
                // One-off faults for calls already past can no longer fire (their call raced ahead).
                plan.once = plan.once.split_off(&call);
                plan.every
                    .as_ref()
                    .filter(|e| call > e.after && (call - e.after).is_multiple_of(e.period.get()))
                    .map(|e| e.spec.clone())
            }
        };
        // Disarm once nothing is left to fire, so later calls skip the mutex again.
        self.armed.store(!plan.once.is_empty() || plan.every.is_some(), Ordering::Release);
        fault
    }

    fn with_plan(&self, change: impl FnOnce(&mut Plan)) {
        let mut plan = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut plan);
        self.armed.store(!plan.once.is_empty() || plan.every.is_some(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn nth(n: u64) -> NonZeroU64 {
        NonZeroU64::new(n).expect("the tests count from 1")
    }

    fn fired(faults: &Faults, calls: usize) -> Vec<bool> {
        (0..calls).map(|_| faults.next_call().is_some()).collect()
    }

    #[test]
    fn fail_call_counts_from_now() {
        let faults = Faults::default();
        fired(&faults, 5);
        faults.fail_call(nth(2), FaultSpec::server_busy());
        assert_eq!(fired(&faults, 4), [false, true, false, false]);
        assert_eq!(faults.calls(), 9);
    }

    #[test]
    fn fail_every_repeats_and_clear_stops_it() {
        let faults = Faults::default();
        fired(&faults, 1);
        faults.fail_every(nth(3), FaultSpec::timeout());
        assert_eq!(fired(&faults, 7), [false, false, true, false, false, true, false]);
        faults.clear();
        assert_eq!(fired(&faults, 3), [false; 3]);
    }

    #[test]
    fn one_off_fault_wins_over_the_periodic_one() {
        let faults = Faults::default();
        faults.fail_every(nth(2), FaultSpec::timeout());
        faults.fail_call(nth(2), FaultSpec::server_busy().after_apply());
        assert_eq!(faults.next_call(), None);
        assert_eq!(faults.next_call(), Some(FaultSpec::server_busy().after_apply()));
        assert_eq!(faults.next_call(), None);
        assert_eq!(faults.next_call(), Some(FaultSpec::timeout()));
    }

    #[test]
    fn injected_errors_carry_code_status_and_kind() {
        let e = FaultSpec::server_busy().to_error();
        assert_eq!(e.code(), Some(&ErrorCode::ServerBusy));
        assert_eq!(e.status(), Some(503));
        assert!(e.is_transient());
        let e = FaultSpec::service(ErrorCode::InternalError).with_status(502).to_error();
        assert_eq!(e.status(), Some(502));
        let e = FaultSpec::timeout().to_error();
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert_eq!(e.code(), None);
    }
}
