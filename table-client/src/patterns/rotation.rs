//! Table rotation, the guide's high-volume delete pattern: entities of one period (a day, a
//! month) live in their own table, `<prefix><period>` (e.g. `LoginAttempts20261122`), so that
//! deleting a period's millions of rows is one Delete Table request instead of millions of
//! entity deletes (and costs no transactions against the live tables).
//!
//! Invariants: a period's table name is the prefix followed by exactly the period's label
//! (`%Y%m%d` or `%Y%m`); listing parses only names of that exact form, so other tables sharing
//! the prefix are never touched. Tables this handle created or saw are cached so writes do not
//! pay a create request each; the cache is shared by clones.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Datelike, Months, NaiveDate, Utc};
use futures::StreamExt;
use table_core::{Error, Result, validate_table_name};

use crate::error;
use crate::service::TableServiceClient;
use crate::table::TableClient;

/// How long one table of a [`TableRotation`] covers (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Period {
    /// One table per UTC day, labelled `%Y%m%d` (`20261122`).
    Day,
    /// One table per UTC month, labelled `%Y%m` (`202611`).
    Month,
}

impl Period {
    /// The label of the period holding `at`, as it appears in table names.
    pub fn label(self, at: DateTime<Utc>) -> String {
        match self {
            Period::Day => at.format("%Y%m%d").to_string(),
            Period::Month => at.format("%Y%m").to_string(),
        }
    }

    /// The first instant of the period holding `at`.
    pub fn start_of(self, at: DateTime<Utc>) -> DateTime<Utc> {
        let day = at.date_naive();
        let first = match self {
            Period::Day => day,
            Period::Month => day.with_day(1).unwrap_or(day),
        };
        first.and_time(chrono::NaiveTime::MIN).and_utc()
    }

    /// The first instant after the period starting at `start` (`None` past chrono's range).
    fn end_from(self, start: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Period::Day => start.checked_add_days(chrono::Days::new(1)),
            Period::Month => start.checked_add_months(Months::new(1)),
        }
    }

    /// The start of the period a label names; `None` unless `label` is exactly what
    /// [`label`](Self::label) prints for that period.
    pub fn parse(self, label: &str) -> Option<DateTime<Utc>> {
        let digits = |range: std::ops::Range<usize>| -> Option<u32> {
            let part = label.get(range)?;
            part.bytes().all(|b| b.is_ascii_digit()).then(|| part.parse().ok())?
        };
        let (width, day) = match self {
            Period::Day => (8, digits(6..8)?),
            Period::Month => (6, 1),
        };
        if label.len() != width {
            return None;
        }
        let year = i32::try_from(digits(0..4)?).ok()?;
        let date = NaiveDate::from_ymd_opt(year, digits(4..6)?, day)?;
        Some(date.and_time(chrono::NaiveTime::MIN).and_utc())
    }
}

/// A family of tables, one per [`Period`], named `<prefix><label>`. Cheap to clone; clones
/// share the cache of tables known to exist.
///
/// ```rust
/// use chrono::{Duration, Utc};
/// use table_client::patterns::{Period, TableRotation};
/// use table_client::{Entity, TableServiceClient};
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let rotation = TableRotation::new(service, "LoginAttempts", Period::Day)?;
/// let now = Utc::now();
/// for days_ago in 0..3 {
///     let at = now - Duration::days(days_ago);
///     // The day's table (`LoginAttempts20261122`) is created on its first write.
///     let table = rotation.table_for_write(at).await?;
///     table.insert(Entity::new("user@contoso.com", at.timestamp().to_string())).await?;
/// }
/// // Dropping a day is one Delete Table request, however many rows it holds.
/// let dropped = rotation.drop_older_than(Period::Day.start_of(now - Duration::days(1))).await?;
/// assert_eq!(dropped.len(), 1);
/// assert_eq!(rotation.periods().await?.len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TableRotation {
    service: TableServiceClient,
    prefix: Arc<str>,
    period: Period,
    // A std mutex: it guards a set lookup or insert, never held across an `.await`.
    known: Arc<Mutex<HashSet<String>>>,
}

impl TableRotation {
    /// A rotation of tables `<prefix><label>`. Fails when such names break the table naming
    /// rules (the prefix must start with a letter, hold only ASCII letters and digits, and
    /// leave room for the label within 63 characters).
    pub fn new(service: TableServiceClient, prefix: &str, period: Period) -> Result<Self> {
        validate_table_name(&format!("{prefix}{}", period.label(DateTime::UNIX_EPOCH)))
            .map_err(Error::invalid)?;
        Ok(TableRotation { service, prefix: Arc::from(prefix), period, known: Arc::default() })
    }

    /// The period each table covers.
    pub fn period(&self) -> Period {
        self.period
    }

    /// The name of the table holding instant `at`.
    pub fn table_name(&self, at: DateTime<Utc>) -> String {
        format!("{}{}", self.prefix, self.period.label(at))
    }

    /// The table of the period holding `at`, without any request (for reads: operations on a
    /// period that has no table fail with `TableNotFound`).
    pub fn table(&self, at: DateTime<Utc>) -> TableClient {
        self.service.table(&self.table_name(at))
    }

    /// The table of the period holding `at`, created first unless this handle already knows
    /// it exists (for writes).
    pub async fn table_for_write(&self, at: DateTime<Utc>) -> Result<TableClient> {
        let name = self.table_name(at);
        if self.known().contains(&name) {
            return Ok(self.service.table(&name));
        }
        let (table, _) = self.service.create_table_if_not_exists(&name).await?;
        self.known().insert(name);
        Ok(table)
    }

    /// The starts of the periods that have a table, oldest first.
    pub async fn periods(&self) -> Result<Vec<DateTime<Utc>>> {
        let mut names = self.service.list_tables_with_prefix(&self.prefix);
        let mut periods = Vec::new();
        while let Some(name) = names.next().await {
            if let Some(start) = name?.strip_prefix(&*self.prefix).and_then(|label| self.period.parse(label))
            {
                periods.push(start);
            }
        }
        periods.sort();
        Ok(periods)
    }

    /// Deletes the table of every period that ended at or before `cutoff` (all its data is
    /// older than the cutoff; the period holding `cutoff` is kept). Returns the deleted names,
    /// oldest first.
    pub async fn drop_older_than(&self, cutoff: DateTime<Utc>) -> Result<Vec<String>> {
        let mut dropped = Vec::new();
        for start in self.periods().await? {
            let end = self.period.end_from(start).ok_or_else(|| {
                error::invalid_input(format!("the period starting {start} ends past the supported dates"))
            })?;
            if end > cutoff {
                break;
            }
            let name = self.table_name(start);
            self.known().remove(&name);
            if self.service.delete_table_if_exists(&name).await? {
                dropped.push(name);
            }
        }
        Ok(dropped)
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // The set holds names only; one left by a panicking holder is still valid.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use table_core::ErrorKind;

    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn labels_parse_back_to_the_period_start() {
        let t = at("2026-11-22T17:05:00Z");
        assert_eq!(Period::Day.label(t), "20261122");
        assert_eq!(Period::Month.label(t), "202611");
        assert_eq!(Period::Day.parse("20261122"), Some(at("2026-11-22T00:00:00Z")));
        assert_eq!(Period::Month.parse("202611"), Some(at("2026-11-01T00:00:00Z")));
        assert_eq!(Period::Day.start_of(t), at("2026-11-22T00:00:00Z"));
        assert_eq!(Period::Month.start_of(t), at("2026-11-01T00:00:00Z"));
        assert_eq!(Period::Month.end_from(at("2026-12-01T00:00:00Z")), Some(at("2027-01-01T00:00:00Z")));
    }

    #[test]
    fn other_suffixes_are_not_periods() {
        for bad in ["2026112", "202611220", "20261322", "20260230", "2026112x", "Archive", ""] {
            assert_eq!(Period::Day.parse(bad), None, "{bad}");
        }
        for bad in ["20261", "2026111", "202613", "+20261"] {
            assert_eq!(Period::Month.parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn prefixes_that_cannot_name_tables_are_refused() {
        let service = TableServiceClient::embedded(table_core::engine::Engine::new());
        for bad in ["", "1Logins", "Login_Attempts", &"L".repeat(56)] {
            let err = TableRotation::new(service.clone(), bad, Period::Day).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}");
        }
        assert!(TableRotation::new(service, &"L".repeat(55), Period::Day).is_ok());
    }
}
