//! `Edm.DateTime` text and .NET ticks.
//!
//! The service keeps 100 ns ticks and prints ISO 8601 UTC with up to seven fraction digits.
//! Keys in .NET code use ticks (100 ns since 0001-01-01T00:00:00Z), so the key codecs need the
//! exact conversion both ways.

use std::cell::Cell;

use arrayvec::ArrayString;
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, Timelike, Utc};

/// Ticks at the Unix epoch: 1970-01-01T00:00:00Z.
pub const UNIX_EPOCH_TICKS: i64 = 621_355_968_000_000_000;

/// Ticks of `DateTime.MaxValue` (9999-12-31T23:59:59.9999999Z), the base of inverted ticks.
pub const MAX_TICKS: i64 = 3_155_378_975_999_999_999;

/// The earliest instant the service stores: 1601-01-01T00:00:00Z.
pub const fn min_datetime() -> DateTime<Utc> {
    // Built when the crate compiles: every written date value is compared with both bounds.
    const MIN: DateTime<Utc> =
        DateTime::from_timestamp(-11_644_473_600, 0).expect("1601-01-01 is representable");
    MIN
}

/// The latest instant the service stores: 9999-12-31T23:59:59.9999999Z.
pub const fn max_datetime() -> DateTime<Utc> {
    const MAX: DateTime<Utc> =
        DateTime::from_timestamp(253_402_300_799, 999_999_900).expect("9999-12-31 is representable");
    MAX
}

/// Prints an instant as the service does: seven fraction digits, `Z`.
pub fn format_datetime(t: DateTime<Utc>) -> String {
    let mut out = String::with_capacity(28);
    write_datetime(t, ":", &mut out);
    out
}

/// Appends `t` as [`format_datetime`] prints it, with `colon` between hours, minutes and
/// seconds (ETags carry it percent-encoded, as `%3A`).
///
/// Every write formats a timestamp for its ETag, so years 0..=9999 (all the service stores)
/// are laid out by hand ([`Fields::write`]): `strftime` cost more than the rest of an insert.
/// Other years, and a colon too long for the buffer, go through chrono (`+10000`, `-0001`). A
/// leap second (chrono's second 59 with a fraction of a second or more) prints as second 60.
// Inlined: each caller passes a constant `colon`, so every offset of `Fields::write` folds to
// a constant and the copies of the colon become stores (as a call with a run-time colon,
// those copies were calls to `memcpy`, a third of an ETag's cost).
#[inline]
pub(crate) fn write_datetime(t: DateTime<Utc>, colon: &str, out: &mut String) {
    let t = truncate_to_ticks(t);
    // Fields of the naive UTC value: `DateTime`'s own accessors convert through the offset
    // on every call.
    let (date, time) = (t.naive_utc().date(), t.naive_utc().time());
    let Ok(year @ 0..=9999) = u32::try_from(date.year()) else {
        return write_with_chrono(t, colon, out);
    };
    let (second, nanos) = match time.nanosecond() {
        leap @ 1_000_000_000.. => (60, leap - 1_000_000_000),
        nanos => (time.second(), nanos),
    };
    let fields = Fields {
        year,
        month: date.month(),
        day: date.day(),
        hour: time.hour(),
        minute: time.minute(),
        second,
        ticks: nanos / 100,
    };
    if !fields.write(colon, out) {
        write_with_chrono(t, colon, out);
    }
}

/// [`write_datetime`] of the instant `secs` seconds and `nanos` nanoseconds after the Unix
/// epoch (as `DateTime::timestamp` and `timestamp_subsec_nanos` give them), the fields of a
/// year 0..=9999 worked out from the day count ([`civil_from_days`]) rather than through
/// chrono's calendar, which a write's timestamp then never enters. Leap seconds, other years
/// and instants chrono cannot hold are printed as `write_datetime` prints
/// `DateTime::from_timestamp(secs, nanos)` (the Unix epoch when it has none).
#[inline]
pub(crate) fn write_unix_time(secs: i64, nanos: u32, colon: &str, out: &mut String) {
    let (days, second_of_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    if let (Ok(year @ 0..=9999), 0..1_000_000_000) = (u32::try_from(year), nanos) {
        // `second_of_day < 86 400`: each field below fits a `u32`.
        let second_of_day = second_of_day as u32;
        let fields = Fields {
            year,
            month,
            day,
            hour: second_of_day / 3_600,
            minute: second_of_day / 60 % 60,
            second: second_of_day % 60,
            ticks: nanos / 100,
        };
        if fields.write(colon, out) {
            return;
        }
    }
    write_datetime(DateTime::from_timestamp(secs, nanos).unwrap_or_default(), colon, out);
}

/// The colon of an ETag's time, percent-encoded.
pub(crate) const ETAG_COLON: &str = "%3A";

/// Room for the text of a whole second [`write_etag_time`] remembers: the longest, of a year
/// of six digits and its sign (`+262142-12-31T23%3A59%3A59`), takes 26 bytes.
const SECOND_TEXT_CAPACITY: usize = 32;

thread_local! {
    /// The whole second of the last ETag time this thread printed, and its text up to the
    /// fraction (`2026-11-22T04%3A28%3A30`). No lock: each thread keeps its own.
    static LAST_ETAG_SECOND: Cell<Option<(i64, ArrayString<SECOND_TEXT_CAPACITY>)>> =
        const { Cell::new(None) };
}

/// Appends what [`write_unix_time`] appends with the colon [`ETAG_COLON`]: every write prints
/// its timestamp for its ETag, and the writes of a thread come many to a second, so the text of
/// the whole second is laid out once per second and copied, and only the fraction is printed
/// each time (a typed insert then cost 58 fewer instructions, an untyped one 69: ops_probe
/// `probe_inserts`, `probe_engine_inserts`).
///
/// The text of a second is only remembered for an instant chrono holds and that is no leap
/// second: `write_unix_time` prints those as the second's text, `.`, the seven digits of the
/// fraction's ticks and `Z`, for any fraction. (It prints an instant chrono cannot hold as the
/// Unix epoch, whatever the fraction.)
pub(crate) fn write_etag_time(secs: i64, nanos: u32, out: &mut String) {
    if let Some((second, text)) = LAST_ETAG_SECOND.get()
        && second == secs
        && nanos < 1_000_000_000
    {
        out.push_str(&text);
        write_fraction(nanos, out);
        return;
    }
    let start = out.len();
    write_unix_time(secs, nanos, ETAG_COLON, out);
    if nanos < 1_000_000_000 && DateTime::from_timestamp(secs, 0).is_some() {
        // The text without its fraction (`.` and 7 digits) and `Z`.
        let second = out.get(start..out.len().saturating_sub(FRACTION_LEN)).unwrap_or_default();
        if let Ok(text) = ArrayString::from(second) {
            LAST_ETAG_SECOND.set(Some((secs, text)));
        }
    }
}

/// Bytes of a printed fraction of a second and the `Z` after it: `.1234567Z`.
const FRACTION_LEN: usize = 9;

/// Appends the fraction of a second of `nanos` (below a second) and the `Z` after it, as
/// [`write_unix_time`] prints them: `.`, seven digits of 100 ns ticks, `Z`.
fn write_fraction(nanos: u32, out: &mut String) {
    // `10^7 + ticks` printed is `1` and then the seven padded digits, handed over as `&str`:
    // laid out as bytes, the text cost a UTF-8 check of its own, 84 instructions an insert.
    let mut digits = itoa::Buffer::new();
    let padded = digits.format(10_000_000 + nanos / 100);
    out.push('.');
    out.push_str(padded.get(1..).unwrap_or_default());
    out.push('Z');
}

/// The proleptic Gregorian `(year, month, day)` of the day `days` after 1970-01-01, for any
/// `days` an `i64` count of seconds can reach: the year counted from March (so the leap day
/// ends it), in 400-year eras of 146 097 days (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Days from 0000-03-01, the start of an era.
    let since_era_zero = days + 719_468;
    let era = since_era_zero.div_euclid(146_097);
    let day_of_era = since_era_zero.rem_euclid(146_097); // 0..=146_096
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365; // 0..=399
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100); // 0..=365
    let month_from_march = (5 * day_of_year + 2) / 153; // 0..=11
    // Both below 32 and 13: the casts are exact.
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// The printed fields of an instant of a year 0..=9999 (`second` 60 for a leap second),
/// `ticks` the 100 ns units of its fraction of a second.
struct Fields {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    ticks: u32,
}

impl Fields {
    /// Appends the fields as [`format_datetime`] prints them, `colon` between hours, minutes
    /// and seconds; `false` (nothing appended) when `colon` is too long for the buffer.
    // Always inlined, for the constant `colon` of each caller (see `write_datetime`).
    #[inline(always)]
    fn write(&self, colon: &str, out: &mut String) -> bool {
        // The text is laid out in one fixed buffer and appended whole: one capacity and UTF-8
        // check per instant rather than per field (three checks were a third of an ETag's
        // cost).
        let mut text = [0u8; 64];
        let minute = 13 + colon.len();
        let second = minute + 2 + colon.len();
        let end = second + 11;
        if end > text.len() {
            return false;
        }
        text[..13].copy_from_slice(b"0000-00-00T00");
        text[13..minute].copy_from_slice(colon.as_bytes());
        text[minute + 2..second].copy_from_slice(colon.as_bytes());
        text[second..end].copy_from_slice(b"00.0000000Z");
        put_digits(&mut text[0..4], self.year);
        put_digits(&mut text[5..7], self.month);
        put_digits(&mut text[8..10], self.day);
        put_digits(&mut text[11..13], self.hour);
        put_digits(&mut text[minute..minute + 2], self.minute);
        put_digits(&mut text[second..second + 2], self.second);
        put_digits(&mut text[second + 3..second + 10], self.ticks);
        // ASCII digits and punctuation, and the colon given as text: always UTF-8.
        out.push_str(std::str::from_utf8(&text[..end]).unwrap_or_default());
        true
    }
}

/// `00` to `99`, the two ASCII digits of each number below 100 back to back: numbers are
/// written two digits per division by 100, half the divisions of one digit at a time (every
/// write prints a timestamp of 21 digits for its ETag).
static DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut n = 0;
    while n < 100 {
        pairs[2 * n] = b'0' + (n / 10) as u8;
        pairs[2 * n + 1] = b'0' + (n % 10) as u8;
        n += 1;
    }
    pairs
};

/// Writes the last `slot.len()` decimal digits of `n` into `slot`, zero-padded: the whole of
/// `n` when it has at most that many digits.
// Inlined: callers pass slots of constant length, so the loop unrolls into a few multiplies.
#[inline]
fn put_digits(slot: &mut [u8], mut n: u32) {
    let mut rest = slot;
    while let [head @ .., tens, ones] = rest {
        // `n % 100 < 100`: both indices are below 200.
        let pair = (n % 100) as usize * 2;
        (*tens, *ones) = (DIGIT_PAIRS[pair], DIGIT_PAIRS[pair + 1]);
        n /= 100;
        rest = head;
    }
    if let [digit] = rest {
        *digit = b'0' + (n % 10) as u8;
    }
}

fn write_with_chrono(t: DateTime<Utc>, colon: &str, out: &mut String) {
    let base = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let text = format!("{base}.{:07}Z", t.timestamp_subsec_nanos() / 100);
    out.push_str(&text.replace(':', colon));
}

/// Prints an instant the way RFC 3339 tools expect (used in SAS times and headers).
pub fn format_rfc3339_seconds(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// An instant as an HTTP date (RFC 1123, `Mon, 01 Jan 2024 00:00:00 GMT`), the form of
/// `x-ms-date`.
#[doc(hidden)]
pub fn http_date(t: DateTime<Utc>) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let (date, time) = (t.naive_utc().date(), t.naive_utc().time());
    let day = DAYS[date.weekday().num_days_from_monday() as usize];
    let month = MONTHS[date.month0() as usize];
    // A leap second is second 59 with more than a second of nanoseconds: printed as 60.
    let second = time.second() + u32::from(time.nanosecond() >= 1_000_000_000);
    let Ok(year @ 0..=9999) = u32::try_from(date.year()) else {
        let (hour, minute) = (time.hour(), time.minute());
        return format!(
            "{day}, {:02} {month} {:04} {hour:02}:{minute:02}:{second:02} GMT",
            date.day(),
            date.year()
        );
    };
    // Laid out in one fixed buffer, as `write_datetime` does: every request signs a date, and
    // `format!` with its padded integers cost about three times as much.
    let mut text = *b"Ddd, 00 Mmm 0000 00:00:00 GMT";
    text[0..3].copy_from_slice(day.as_bytes());
    put_digits(&mut text[5..7], date.day());
    text[8..11].copy_from_slice(month.as_bytes());
    put_digits(&mut text[12..16], year);
    put_digits(&mut text[17..19], time.hour());
    put_digits(&mut text[20..22], time.minute());
    put_digits(&mut text[23..25], second);
    // ASCII names, digits and punctuation: always UTF-8.
    std::str::from_utf8(&text).unwrap_or_default().to_owned()
}

/// Error from [`parse_datetime`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Edm.DateTime `{0}`: expected yyyy-mm-ddThh:mm[:ss[.fffffff]][Z] in UTC")]
pub struct DateTimeParseError(pub String);

/// Parses `YYYY-MM-DDThh:mm[:ss[.fffffff]]` followed by `Z`, `+00:00` or nothing, the forms the
/// service and Azurite print: exactly four year digits and two digits in every other field,
/// a real calendar date and time (no leap second `:60`). Fraction digits need the seconds;
/// more than seven are truncated to the tick. Anything else is refused, such as a sign or a
/// fifth year digit (`+10000`), single-digit fields or another offset.
///
/// Every four-digit year parses (`0000` included); callers apply their own range: the
/// service stores 1601 to 9999 ([`min_datetime`], [`max_datetime`]).
pub fn parse_datetime(s: &str) -> Result<DateTime<Utc>, DateTimeParseError> {
    parse_bytes(s.as_bytes()).ok_or_else(|| DateTimeParseError(s.to_owned()))
}

/// [`parse_datetime`] on the text's bytes; `None` when it is not one of the forms.
///
/// Every row read back pays for its `Timestamp` here, so the fields are read digit by digit
/// at their fixed positions, without allocating; chrono only checks the calendar.
fn parse_bytes(s: &[u8]) -> Option<DateTime<Utc>> {
    let body = s.strip_suffix(b"Z").or_else(|| s.strip_suffix(b"+00:00")).unwrap_or(s);
    let (up_to_minutes, rest) = body.split_at_checked(16)?;
    let &[y0, y1, y2, y3, b'-', mo0, mo1, b'-', d0, d1, b'T', h0, h1, b':', mi0, mi1] = up_to_minutes else {
        return None;
    };
    // Then nothing, or `:ss` with an optional `.` and fraction digits.
    let (second, nanos) = match rest {
        [] => (0, 0),
        [b':', s0, s1] => (number(&[*s0, *s1])?, 0),
        [b':', s0, s1, b'.', fraction @ ..] => (number(&[*s0, *s1])?, fraction_nanos(fraction)?),
        _ => return None,
    };
    let year = i32::try_from(number(&[y0, y1, y2, y3])?).ok()?;
    let date = NaiveDate::from_ymd_opt(year, number(&[mo0, mo1])?, number(&[d0, d1])?)?;
    let time = NaiveTime::from_hms_nano_opt(number(&[h0, h1])?, number(&[mi0, mi1])?, second, nanos)?;
    Some(NaiveDateTime::new(date, time).and_utc())
}

/// The value of up to nine ASCII decimal digits; `None` if a byte is not a digit.
fn number(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0, |n, &b| b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0')))
}

/// The nanoseconds of fraction digits, truncated to the tick: the first seven digits count,
/// the others need only be digits. `None` when there are none or one is not a digit.
fn fraction_nanos(digits: &[u8]) -> Option<u32> {
    // Each digit is looked at once: `number` checks the ticks' digits as it reads them.
    let (ticks, beyond) = digits.split_at(digits.len().min(7));
    if ticks.is_empty() || !beyond.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(number(ticks)? * NANOS_PER_UNIT.get(ticks.len())?)
}

/// The nanoseconds of one unit of the last of `n` fraction digits, by `n` (1 to 7): 100 ns
/// per tick, and a factor of ten per digit short of seven (`.5` is 5 000 000 ticks). Looked
/// up, where a loop multiplied by ten per missing digit and every digit was checked twice:
/// both Edm.DateTime texts of a typed scan row (its own, its `Timestamp`) 147 instructions
/// fewer (callgrind, `scan_probe` decode).
const NANOS_PER_UNIT: [u32; 8] = [0, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100];

/// Drops sub-tick nanoseconds (a tick is 100 ns), as the service stores them.
// Inlined: each walk of a typed write truncates every DateTime field, nearly always already
// whole ticks, where the call cost more than the check.
#[inline]
pub fn truncate_to_ticks(t: DateTime<Utc>) -> DateTime<Utc> {
    let nanos = t.timestamp_subsec_nanos();
    let excess = nanos % 100;
    if excess == 0 { t } else { t - chrono::Duration::nanoseconds(i64::from(excess)) }
}

/// .NET ticks of an instant (100 ns units since 0001-01-01T00:00:00Z); `None` when the count
/// does not fit an `i64` (chrono reaches far beyond .NET's range).
pub fn to_ticks(t: DateTime<Utc>) -> Option<i64> {
    let sub = i64::from(t.timestamp_subsec_nanos() / 100);
    t.timestamp().checked_mul(10_000_000)?.checked_add(UNIX_EPOCH_TICKS)?.checked_add(sub)
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
    use proptest::prelude::{Just, Strategy};

    fn at(s: &str) -> DateTime<Utc> {
        parse_datetime(s).expect("test vector parses")
    }

    #[test]
    fn http_dates_read_as_rfc_1123() {
        // A leap second, a leap day, the first and last instants of years.
        let instants = [
            "2024-01-01T00:00:00Z",
            "2024-02-29T23:59:59.999Z",
            "1999-12-31T23:59:60.5Z",
            "2026-11-25T07:08:09Z",
            "0999-06-15T12:00:00Z",
            "9999-12-31T23:59:59Z",
        ];
        for text in instants {
            let t = DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc);
            assert_eq!(http_date(t), t.format("%a, %d %b %Y %H:%M:%S GMT").to_string(), "{text}");
        }
        assert_eq!(http_date(DateTime::from_timestamp(0, 0).unwrap()), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn dotnet_tick_vectors() {
        assert_eq!(to_ticks(at("1970-01-01T00:00:00Z")), Some(UNIX_EPOCH_TICKS));
        assert_eq!(to_ticks(at("2014-08-22T00:50:32Z")), Some(635_442_654_320_000_000));
        assert_eq!(to_ticks(max_datetime()), Some(MAX_TICKS));
        assert_eq!(to_ticks(DateTime::<Utc>::MAX_UTC), None);
        assert_eq!(to_ticks(DateTime::<Utc>::MIN_UTC), None);
        assert_eq!(from_ticks(635_442_654_320_000_000), Some(at("2014-08-22T00:50:32Z")));
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
        assert_eq!(format_datetime(at("2020-01-02T03:04:05.123456789Z")), "2020-01-02T03:04:05.1234567Z");
        for (fraction, nanos) in
            [("1", 100_000_000), ("12", 120_000_000), ("1234567", 123_456_700), ("123456789", 123_456_700)]
        {
            assert_eq!(
                at(&format!("2020-01-02T03:04:05.{fraction}Z")).timestamp_subsec_nanos(),
                nanos,
                "{fraction}"
            );
        }
        assert!(parse_datetime("2020-01-02").is_err());
        assert!(parse_datetime("2020-01-02T03:04:05.Z").is_err());
    }

    #[test]
    fn only_the_service_forms_parse() {
        for s in [
            "2020-01-02T03:04Z",
            "2020-01-02T03:04:05+00:00",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59.9999999Z",
        ] {
            parse_datetime(s).expect(s);
        }
        for s in [
            "10000-01-01T00:00:00Z",
            "+2020-01-02T03:04:05Z",
            "-0001-01-01T00:00:00Z",
            "2020-1-02T03:04:05Z",
            "2020-01-2T03:04:05Z",
            "2020-01-02T3:04:05Z",
            "2020-01-02T03:04:5Z",
            "2020-01-02 03:04:05Z",
            "2020-01-02t03:04:05z",
            "2020-01-02T03:04:05+01:00",
            "2020-01-02T03:04.5Z",
            "2020-02-30T00:00:00Z",
            "2016-12-31T23:59:60Z",
            "2020-01-02T24:00:00Z",
            "2020-01-02T03:04:05.12a",
            "2020-01-02T03:04:05.1234567aZ",
            "2020-01-02T03:04:05.123456789aZ",
            "2020-01-02T03:04:05ZZ",
            "2020-01-02T03:04:05.1234567Z ",
            "2020\u{ff11}01-02T03:04:05Z",
            "",
        ] {
            assert!(parse_datetime(s).is_err(), "{s}");
        }
    }

    /// The parser before the byte-level one, kept as the reference it must agree with.
    fn parse_reference(s: &str) -> Result<DateTime<Utc>, DateTimeParseError> {
        let err = || DateTimeParseError(s.to_owned());
        let body = s.strip_suffix('Z').or_else(|| s.strip_suffix("+00:00")).unwrap_or(s);
        let (main, frac) = match body.split_once('.') {
            Some((m, f)) => (m, Some(f)),
            None => (body, None),
        };
        let with_seconds = match main.len() {
            16 => false,
            19 => true,
            _ => return Err(err()),
        };
        let shaped = main.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            10 => b == b'T',
            13 | 16 => b == b':',
            _ => b.is_ascii_digit(),
        });
        if !shaped || (frac.is_some() && !with_seconds) {
            return Err(err());
        }
        let field =
            |from: usize, to: usize| main.get(from..to).and_then(|t| t.parse::<u32>().ok()).ok_or_else(err);
        let year = i32::try_from(field(0, 4)?).map_err(|_| err())?;
        let second = if with_seconds { field(17, 19)? } else { 0 };
        let date = NaiveDate::from_ymd_opt(year, field(5, 7)?, field(8, 10)?).ok_or_else(err)?;
        let time = NaiveTime::from_hms_opt(field(11, 13)?, field(14, 16)?, second).ok_or_else(err)?;
        let mut nanos: u32 = 0;
        if let Some(f) = frac {
            if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
            let digits = f.get(..9).unwrap_or(f);
            let padded = format!("{digits:0<9}");
            nanos = padded.parse::<u32>().map_err(|_| err())?;
            nanos -= nanos % 100;
        }
        let t = NaiveDateTime::new(date, time).and_utc();
        Ok(t + chrono::Duration::nanoseconds(i64::from(nanos)))
    }

    /// Texts near the accepted forms: a printed instant of any year `0000..=9999`, with or
    /// without seconds, with 0 to 12 fraction digits and any of the three endings, then
    /// (half the time) one byte replaced, inserted or removed by a byte that matters to
    /// the grammar.
    fn near_datetime() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let instant = -62_167_219_200i64..253_402_300_800;
        let ending = prop_oneof![Just("Z"), Just("+00:00"), Just(""), Just("+01:00"), Just("z")];
        let byte = prop_oneof![
            (b'0'..=b'9').prop_map(char::from),
            Just('-'),
            Just(':'),
            Just('T'),
            Just('.'),
            Just('Z'),
            Just('+'),
            Just(' '),
            Just('\u{e9}'),
            Just('\u{ff11}'),
        ];
        let edit = prop_oneof![Just(None), (0usize..32, 0u8..3, byte).prop_map(Some)];
        (instant, 0u32..1_000_000_000, any::<bool>(), 0usize..=12, ending, edit).prop_map(
            |(secs, nanos, seconds, width, ending, edit)| {
                let t = DateTime::from_timestamp(secs, nanos).unwrap_or_default();
                let full = t.format("%Y-%m-%dT%H:%M:%S%.9f").to_string();
                let mut text = match (seconds, width) {
                    (false, _) => full.get(..16).unwrap_or_default().to_owned(),
                    (true, 0) => full.get(..19).unwrap_or_default().to_owned(),
                    (true, w) => format!(
                        "{}{}",
                        full.get(..20).unwrap_or_default(),
                        &format!("{:0<12}", &full[20..])[..w]
                    ),
                };
                text.push_str(ending);
                if let Some((at, kind, c)) = edit {
                    let mut chars: Vec<char> = text.chars().collect();
                    let at = at.min(chars.len());
                    match kind {
                        0 if at < chars.len() => chars[at] = c,
                        1 => chars.insert(at, c),
                        _ if at < chars.len() => {
                            chars.remove(at);
                        }
                        _ => chars.push(c),
                    }
                    text = chars.into_iter().collect();
                }
                text
            },
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        #[test]
        fn byte_parser_agrees_with_the_reference(text in near_datetime()) {
            proptest::prop_assert_eq!(parse_datetime(&text), parse_reference(&text));
        }

        #[test]
        fn byte_parser_agrees_with_the_reference_on_any_text(text in "[0-9T:.Z+ -]{0,32}") {
            proptest::prop_assert_eq!(parse_datetime(&text), parse_reference(&text));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5_000))]
        #[test]
        fn digits_are_the_zero_padded_decimal_text(n in proptest::prelude::any::<u32>(), width in 0usize..12) {
            let mut slot = vec![b'x'; width];
            put_digits(&mut slot, n);
            let full = format!("{n:0width$}");
            // The last `width` digits of the zero-padded text.
            proptest::prop_assert_eq!(&slot[..], &full.as_bytes()[full.len() - width..]);
        }
    }

    /// The formatter before the digit-by-digit fast path: the reference it must match.
    fn strftime_reference(t: DateTime<Utc>) -> String {
        let t = truncate_to_ticks(t);
        let base = t.format("%Y-%m-%dT%H:%M:%S").to_string();
        format!("{base}.{:07}Z", t.timestamp_subsec_nanos() / 100)
    }

    proptest::proptest! {
        #[test]
        fn fast_formatting_matches_strftime(
            secs in -70_000_000_000i64..300_000_000_000,
            nanos in 0u32..1_000_000_000,
        ) {
            if let Some(t) = DateTime::from_timestamp(secs, nanos) {
                let mut with_escaped_colons = String::new();
                write_datetime(t, "%3A", &mut with_escaped_colons);
                proptest::prop_assert_eq!(format_datetime(t), strftime_reference(t));
                proptest::prop_assert_eq!(
                    with_escaped_colons,
                    strftime_reference(t).replace(':', "%3A")
                );
            }
        }
    }

    proptest::proptest! {
        /// Instants of every year chrono holds and beyond (a write's clock may be anywhere in
        /// an `i64` of ticks), with leap seconds.
        #[test]
        fn unix_time_prints_as_its_datetime_does(
            secs in proptest::prop_oneof![
                -70_000_000_000i64..300_000_000_000,
                -62_200_000_000i64..-62_100_000_000,
                253_402_200_000i64..253_402_400_000,
                proptest::prelude::any::<i64>(),
            ],
            nanos in proptest::prop_oneof![0u32..1_000_000_000, 1_000_000_000u32..2_000_000_000],
        ) {
            let t = DateTime::from_timestamp(secs, nanos).unwrap_or_default();
            let (mut expected, mut text) = (String::new(), String::new());
            write_datetime(t, "%3A", &mut expected);
            write_unix_time(secs, nanos, "%3A", &mut text);
            proptest::prop_assert_eq!(text, expected);
        }
    }

    /// An ETag time as `write_etag_time` prints it, after the thread printed `before`.
    fn etag_time_after(before: &[(i64, u32)], (secs, nanos): (i64, u32)) -> String {
        for &(secs, nanos) in before {
            write_etag_time(secs, nanos, &mut String::new());
        }
        let mut text = String::from("W/");
        write_etag_time(secs, nanos, &mut text);
        text
    }

    /// `write_unix_time` with the ETag colon, appended as `write_etag_time` appends.
    fn etag_time_reference(secs: i64, nanos: u32) -> String {
        let mut text = String::from("W/");
        write_unix_time(secs, nanos, ETAG_COLON, &mut text);
        text
    }

    proptest::proptest! {
        /// Runs of instants a few seconds apart (the second remembered, then not), near
        /// second, day and year ends and anywhere an `i64` reaches (where chrono holds no
        /// instant and the epoch is printed whatever the fraction), leap seconds among them:
        /// each printed as `write_unix_time` prints it.
        #[test]
        fn etag_times_print_as_unix_times_do(
            start in proptest::prop_oneof![
                (-2i64..3).prop_map(|day| day * 86_400 - 2),
                (1_600_000_000i64..1_900_000_000).prop_map(|s| s - s % 86_400 - 2),
                Just(1_483_228_799i64),
                Just(253_402_300_798i64),
                Just(-62_167_219_202i64),
                -70_000_000_000i64..300_000_000_000,
                proptest::prelude::any::<i64>(),
                Just(i64::MAX - 3),
            ],
            steps in proptest::collection::vec(
                (0i64..3, proptest::prop_oneof![
                    8 => 0u32..1_000_000_000,
                    1 => Just(0u32),
                    1 => Just(999_999_999u32),
                    1 => 1_000_000_000u32..2_000_000_000,
                ]),
                1..12,
            ),
        ) {
            let mut secs = start;
            for (step, nanos) in steps {
                secs = secs.saturating_add(step);
                proptest::prop_assert_eq!(
                    etag_time_after(&[], (secs, nanos)),
                    etag_time_reference(secs, nanos),
                    "{} s {} ns", secs, nanos
                );
            }
        }
    }

    #[test]
    fn etag_times_across_day_ends_print_as_unix_times_do() {
        // Every tenth of a second from two seconds before midnight to two after, of days
        // around the epoch, of a leap day and of the last day of year 9999, twice through.
        for midnight in [-86_400i64, 0, 86_400, 951_782_400, 253_402_300_800] {
            for _ in 0..2 {
                for tenth in -20..20i64 {
                    let (secs, nanos) =
                        (midnight + tenth.div_euclid(10), (tenth.rem_euclid(10) * 100_000_000) as u32);
                    assert_eq!(
                        etag_time_after(&[], (secs, nanos)),
                        etag_time_reference(secs, nanos),
                        "{secs} s {nanos} ns"
                    );
                }
            }
        }
        // A leap second, then the same second again, and an instant chrono cannot hold at two
        // fractions: neither is printed from a remembered second.
        let leap = (1_483_228_799, 1_500_000_000);
        assert_eq!(etag_time_after(&[(leap.0, 5)], leap), etag_time_reference(leap.0, leap.1));
        assert_eq!(etag_time_after(&[leap], (leap.0, 5)), etag_time_reference(leap.0, 5));
        for nanos in [0, 500_000_000] {
            assert_eq!(
                etag_time_after(&[(i64::MAX, 0)], (i64::MAX, nanos)),
                etag_time_reference(i64::MAX, nanos)
            );
        }
    }

    #[test]
    fn unix_time_prints_calendar_edges_as_its_datetime_does() {
        // Era, century and leap-day edges, the ends of four-digit years, a leap second.
        let dates = [
            "0000-01-01",
            "0000-02-29",
            "0000-03-01",
            "0001-01-01",
            "1600-02-29",
            "1700-03-01",
            "1899-12-31",
            "1900-03-01",
            "1969-12-31",
            "1970-01-01",
            "2000-02-29",
            "2000-03-01",
            "2100-02-28",
            "2400-12-31",
            "9999-12-31",
        ];
        for date in dates {
            let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").expect("a date");
            for time in
                [NaiveTime::MIN, NaiveTime::from_hms_nano_opt(23, 59, 59, 999_999_999).expect("a time")]
            {
                let t = day.and_time(time).and_utc();
                let (mut expected, mut text) = (String::new(), String::new());
                write_datetime(t, ":", &mut expected);
                write_unix_time(t.timestamp(), t.timestamp_subsec_nanos(), ":", &mut text);
                assert_eq!(text, expected, "{t:?}");
            }
        }
        let leap = DateTime::from_timestamp(1_483_228_799, 1_500_000_000).expect("valid");
        let mut text = String::new();
        write_unix_time(1_483_228_799, 1_500_000_000, ":", &mut text);
        assert_eq!(text, format_datetime(leap));
    }

    #[test]
    fn a_colon_too_long_for_the_buffer_prints_as_chrono_does() {
        let t = DateTime::from_timestamp(1_700_000_000, 123_456_789).expect("valid");
        let colon = "%".repeat(30);
        let mut text = String::new();
        write_datetime(t, &colon, &mut text);
        assert_eq!(text, strftime_reference(t).replace(':', &colon));
    }

    #[test]
    fn years_outside_four_digits_print_as_chrono_does() {
        let before_year_0 = DateTime::from_timestamp(-62_200_000_000, 5).expect("valid");
        let after_9999 = DateTime::from_timestamp(253_402_300_800, 0).expect("valid");
        for t in [before_year_0, after_9999] {
            assert_eq!(format_datetime(t), strftime_reference(t));
        }
    }

    #[test]
    fn a_leap_second_prints_as_second_60_with_seven_fraction_digits() {
        let leap = DateTime::from_timestamp(1_483_228_799, 1_500_000_000).expect("valid");
        // The strftime version printed the fraction past 1 s: `60.15000000Z`.
        assert_eq!(format_datetime(leap), "2016-12-31T23:59:60.5000000Z");
    }

    #[test]
    fn range_ends() {
        assert_eq!(format_datetime(min_datetime()), "1601-01-01T00:00:00.0000000Z");
        assert_eq!(format_datetime(max_datetime()), "9999-12-31T23:59:59.9999999Z");
    }
}
