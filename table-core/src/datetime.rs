//! `Edm.DateTime` text and .NET ticks.
//!
//! The service keeps 100 ns ticks and prints ISO 8601 UTC with up to seven fraction digits.
//! Keys in .NET code use ticks (100 ns since 0001-01-01T00:00:00Z), so the key codecs need the
//! exact conversion both ways.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};

/// Ticks at the Unix epoch: 1970-01-01T00:00:00Z.
pub const UNIX_EPOCH_TICKS: i64 = 621_355_968_000_000_000;

/// Ticks of `DateTime.MaxValue` (9999-12-31T23:59:59.9999999Z), the base of inverted ticks.
pub const MAX_TICKS: i64 = 3_155_378_975_999_999_999;

/// The earliest instant the service stores: 1601-01-01T00:00:00Z.
pub fn min_datetime() -> DateTime<Utc> {
    DateTime::from_timestamp(-11_644_473_600, 0).expect("1601-01-01 is representable")
}

/// The latest instant the service stores: 9999-12-31T23:59:59.9999999Z.
pub fn max_datetime() -> DateTime<Utc> {
    DateTime::from_timestamp(253_402_300_799, 999_999_900).expect("9999-12-31 is representable")
}

/// Prints an instant as the service does: seven fraction digits, `Z`.
pub fn format_datetime(t: DateTime<Utc>) -> String {
    let t = crate::value::truncate_to_ticks(t);
    let base = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    format!("{base}.{:07}Z", t.timestamp_subsec_nanos() / 100)
}

/// Prints an instant the way RFC 3339 tools expect (used in SAS times and headers).
pub fn format_rfc3339_seconds(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Error from [`parse_datetime`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Edm.DateTime `{0}`: expected ISO 8601 UTC with 0-7 fraction digits")]
pub struct DateTimeParseError(pub String);

/// Parses `YYYY-MM-DDThh:mm[:ss[.fffffff]][Z]` (0-7 fraction digits, `Z` optional, as the
/// service and Azurite print). More than seven digits are truncated to the tick.
pub fn parse_datetime(s: &str) -> Result<DateTime<Utc>, DateTimeParseError> {
    let err = || DateTimeParseError(s.to_owned());
    let body = s
        .strip_suffix('Z')
        .or_else(|| s.strip_suffix("+00:00"))
        .unwrap_or(s);
    let (main, frac) = match body.split_once('.') {
        Some((m, f)) => (m, Some(f)),
        None => (body, None),
    };
    let naive = NaiveDateTime::parse_from_str(main, "%Y-%m-%dT%H:%M:%S")
        .or_else(|_| NaiveDateTime::parse_from_str(main, "%Y-%m-%dT%H:%M"))
        .map_err(|_| err())?;
    let mut nanos: u32 = 0;
    if let Some(f) = frac {
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let digits: String = f.chars().take(9).collect();
        let padded = format!("{digits:0<9}");
        nanos = padded.parse::<u32>().map_err(|_| err())?;
        nanos -= nanos % 100;
    }
    let t = naive.and_utc();
    Ok(t + chrono::Duration::nanoseconds(i64::from(nanos)))
}

/// .NET ticks of an instant (100 ns units since 0001-01-01T00:00:00Z).
pub fn to_ticks(t: DateTime<Utc>) -> i64 {
    let secs = t.timestamp();
    let sub = i64::from(t.timestamp_subsec_nanos() / 100);
    UNIX_EPOCH_TICKS + secs * 10_000_000 + sub
}

/// The instant of a tick count; `None` outside what chrono represents.
pub fn from_ticks(ticks: i64) -> Option<DateTime<Utc>> {
    let since_epoch = ticks.checked_sub(UNIX_EPOCH_TICKS)?;
    let secs = since_epoch.div_euclid(10_000_000);
    let sub = since_epoch.rem_euclid(10_000_000);
    DateTime::from_timestamp(secs, u32::try_from(sub * 100).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        parse_datetime(s).expect("test vector parses")
    }

    #[test]
    fn dotnet_tick_vectors() {
        assert_eq!(to_ticks(at("1970-01-01T00:00:00Z")), UNIX_EPOCH_TICKS);
        assert_eq!(
            to_ticks(at("2014-08-22T00:50:32Z")),
            635_442_654_320_000_000
        );
        assert_eq!(to_ticks(max_datetime()), MAX_TICKS);
        assert_eq!(
            from_ticks(635_442_654_320_000_000),
            Some(at("2014-08-22T00:50:32Z"))
        );
    }

    #[test]
    fn parses_every_fraction_width_with_or_without_z() {
        for s in [
            "2020-01-02T03:04:05Z",
            "2020-01-02T03:04:05",
            "2020-01-02T03:04:05.1Z",
            "2020-01-02T03:04:05.1234567Z",
            "2020-01-02T03:04:05.123456789Z",
        ] {
            parse_datetime(s).expect(s);
        }
        assert_eq!(
            format_datetime(at("2020-01-02T03:04:05.123456789Z")),
            "2020-01-02T03:04:05.1234567Z"
        );
        assert!(parse_datetime("2020-01-02").is_err());
        assert!(parse_datetime("2020-01-02T03:04:05.Z").is_err());
    }

    #[test]
    fn range_ends() {
        assert_eq!(
            format_datetime(min_datetime()),
            "1601-01-01T00:00:00.0000000Z"
        );
        assert_eq!(
            format_datetime(max_datetime()),
            "9999-12-31T23:59:59.9999999Z"
        );
    }
}
