//! Which endpoint a request goes to: the primary, or, for reads of a read-access
//! geo-redundant account (RA-GRS, RA-GZRS), its secondary while the primary fails.
//!
//! Rules (those of the official Storage SDKs' geo-redundant read policy):
//! - only reads (point reads, queries, table listings) ever go to the secondary; every write,
//!   and every read under [`LocationMode::PrimaryOnly`], goes to the primary;
//! - a read's first attempt goes to the primary; its retries (within the
//!   [`RetryPolicy`](crate::RetryPolicy), after its pauses) alternate between secondary and
//!   primary;
//! - a 404 from the secondary may only mean the data has not replicated yet: it is retried
//!   on the primary, and that read does not ask the secondary again. If no retry is left, the
//!   read fails with the primary's last error, never with the secondary's 404.
//!
//! The secondary endpoint is the primary's with `-secondary` after the account name: in the
//! host for Azure (`acct-secondary.table.core.windows.net`), in the first path segment for a
//! path-style endpoint (`http://127.0.0.1:10002/devstoreaccount1-secondary`), unless one is
//! given explicitly.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use reqwest::Url;
use table_core::Result;

use crate::error::invalid_input as invalid;
use crate::retry::{Failed, Failure};
use crate::wire::url::parse_endpoint;

/// Where the reads of a client may go. Writes always go to the primary endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LocationMode {
    /// Every request goes to the primary endpoint.
    #[default]
    PrimaryOnly,
    /// A read starts on the primary; when an attempt fails with an error the
    /// [`RetryPolicy`](crate::RetryPolicy) retries, the retries alternate between the
    /// secondary endpoint and the primary (for read-access geo-redundant accounts). A 404
    /// from the secondary is retried on the primary, which has the last word.
    PrimaryThenSecondary,
}

/// The secondary endpoint reads may use under `mode`: `None` for
/// [`LocationMode::PrimaryOnly`]; else `explicit` or, without one, the one derived from
/// `primary` (a normalised endpoint, see `parse_endpoint`). An `explicit` endpoint is checked
/// whatever the mode, so a wrong one is found before the mode changes.
pub(crate) fn read_secondary(
    mode: LocationMode,
    primary: &str,
    explicit: Option<&str>,
) -> Result<Option<String>> {
    let explicit = explicit.map(|given| parse_endpoint(given, "the secondary endpoint")).transpose()?;
    match (mode, explicit) {
        (LocationMode::PrimaryOnly, _) => Ok(None),
        (LocationMode::PrimaryThenSecondary, Some(given)) => Ok(Some(given)),
        (LocationMode::PrimaryThenSecondary, None) => derive_secondary(primary).map(Some),
    }
}

/// `primary` with `-secondary` after its account name: in the first DNS label of a host name
/// with dots, else (an IP address or a single-label host such as `localhost`: path style) in
/// the first path segment.
pub(crate) fn derive_secondary(primary: &str) -> Result<String> {
    let cannot = || {
        invalid(
            "cannot derive the secondary endpoint: the endpoint names no account (in its host or first \
             path segment); give `secondary_endpoint`",
        )
    };
    let mut url = Url::parse(primary).map_err(|e| cannot().with_source(e))?;
    match url.domain().filter(|host| host.contains('.')).map(str::to_owned) {
        Some(host) => {
            let (account, rest) = host.split_once('.').ok_or_else(cannot)?;
            url.set_host(Some(&format!("{account}-secondary.{rest}")))
                .map_err(|e| cannot().with_source(e))?;
        }
        None => {
            let path = url.path().to_owned();
            let mut segments = path.trim_start_matches('/').splitn(2, '/');
            let account = segments.next().filter(|a| !a.is_empty()).ok_or_else(cannot)?;
            let rest = segments.next().map(|r| format!("/{r}")).unwrap_or_default();
            url.set_path(&format!("/{account}-secondary{rest}"));
        }
    }
    parse_endpoint(url.as_str(), "the derived secondary endpoint")
}

/// The endpoint one attempt goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    Primary,
    Secondary,
}

/// The locations of one request's attempts, by the rules of the module docs. Lives for one
/// request: the retry loop asks it where each attempt goes and tells it how each one failed.
/// Its state is atomic only so the request's future stays `Send`: the attempts of one
/// request never run at the same time.
pub(crate) struct Route<'a> {
    primary: &'a str,
    /// `None` for writes and for clients that read the primary only.
    secondary: Option<&'a str>,
    attempts: AtomicU32,
    /// Cleared by a 404 from the secondary: the data may not have replicated yet.
    secondary_usable: AtomicBool,
}

impl<'a> Route<'a> {
    /// A route between `primary` and, when given, `secondary` (both normalised endpoints).
    pub(crate) fn new(primary: &'a str, secondary: Option<&'a str>) -> Self {
        Route { primary, secondary, attempts: AtomicU32::new(0), secondary_usable: AtomicBool::new(true) }
    }

    /// Where the next attempt goes: the primary first, then alternately the secondary (while
    /// it is usable) and the primary.
    pub(crate) fn next(&self) -> Location {
        let attempt = self.attempts.fetch_add(1, Ordering::Relaxed);
        match self.secondary.is_some() && self.secondary_usable.load(Ordering::Relaxed) && attempt % 2 == 1 {
            true => Location::Secondary,
            false => Location::Primary,
        }
    }

    /// `url` (made for the primary) for `location`.
    pub(crate) fn url(&self, location: Location, url: &str) -> String {
        match (location, self.secondary, url.strip_prefix(self.primary)) {
            (Location::Secondary, Some(secondary), Some(rest)) => format!("{secondary}{rest}"),
            _ => url.to_owned(),
        }
    }

    /// How the retry loop sees a failed attempt at `location`: a 404 from the secondary is
    /// [`Failure::NotReplicated`], retried on the primary (the secondary is no longer used);
    /// the retry loop ends a read with the previous attempt's error rather than that one.
    pub(crate) fn judge(&self, location: Location, failed: Failed) -> Failed {
        match (location, failed.failure) {
            (Location::Secondary, Failure::Answered(404)) => {
                self.secondary_usable.store(false, Ordering::Relaxed);
                Failed { failure: Failure::NotReplicated, ..failed }
            }
            _ => failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secondary_is_derived_from_the_account_name() {
        let derive = |primary: &str| derive_secondary(primary).unwrap();
        assert_eq!(
            derive("https://acct.table.core.windows.net"),
            "https://acct-secondary.table.core.windows.net"
        );
        assert_eq!(
            derive("http://127.0.0.1:10002/devstoreaccount1"),
            "http://127.0.0.1:10002/devstoreaccount1-secondary"
        );
        assert_eq!(derive("http://localhost:10002/acct/x"), "http://localhost:10002/acct-secondary/x");
        assert!(derive_secondary("http://127.0.0.1:10002").is_err());
    }

    #[test]
    fn reads_alternate_until_the_secondary_answers_404() {
        let route = Route::new("http://p/a", Some("http://s/a"));
        assert_eq!(route.next(), Location::Primary);
        let error = || crate::error::transport("t");
        let primary = Failed { failure: Failure::Answered(503), error: error(), asked_pause: None };
        assert_eq!(route.judge(Location::Primary, primary).failure, Failure::Answered(503));
        assert_eq!(route.next(), Location::Secondary);
        assert_eq!(route.url(Location::Secondary, "http://p/a/t()"), "http://s/a/t()");
        let missing =
            Failed { failure: Failure::Answered(404), error: error().with_status(404), asked_pause: None };
        let judged = route.judge(Location::Secondary, missing);
        assert_eq!(judged.failure, Failure::NotReplicated);
        assert_eq!(route.next(), Location::Primary);
        assert_eq!(route.next(), Location::Primary);
        assert_eq!(Route::new("http://p/a", None).url(Location::Secondary, "http://p/a/t"), "http://p/a/t");
    }
}
