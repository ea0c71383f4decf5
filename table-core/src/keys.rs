//! Key codecs: how one value becomes one segment of a `PartitionKey` or `RowKey`, and back.
//!
//! Every encoding here is exact (decode(encode(v)) == v) and, where it promises order, the
//! ordinal order of the encoded text equals the order of the values:
//!
//! - [`ticks`] / [`inverted_ticks`]: .NET ticks (100 ns since 0001-01-01T00:00:00Z), 19 digits,
//!   zero padded, as .NET's `DateTime.Ticks.ToString("d19")`; inverted ticks are
//!   [`MAX_TICKS`]` - ticks`, so the newest instant sorts first (the "log tail" pattern).
//! - [`zero_pad`]: decimal digits padded to a fixed width; a value that needs more digits is an
//!   error rather than a longer key, because a longer key would break the order.
//! - [`ordered`]: any integer from `i64::MIN` to `u64::MAX` as `value + 2^63` in 20 digits, so
//!   negative numbers sort before positive ones and every integer type shares one encoding
//!   (widening a field from `i32` to `i64` keeps its keys).
//! - [`date`]: a chrono `strftime` format; parsing back accepts formats with or without a time.
//!
//! The codecs know nothing about forbidden key characters: the key builder checks every
//! encoded segment with [`validate_key`](crate::validate_key). The `write_*` codecs append to
//! a [`KeyText`], the text a key is built in, which keeps short keys without an allocation.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use crate::datetime::{MAX_TICKS, from_ticks, to_ticks};
use crate::text::InlineText;

/// Digits of a tick count: `MAX_TICKS` has 19.
pub const TICKS_DIGITS: usize = 19;

/// Digits of an [`ordered`] integer: `u64::MAX + 2^63` has 20.
pub const ORDERED_DIGITS: usize = 20;

/// The offset [`ordered`] adds so that `i64::MIN` encodes as zero.
const ORDERED_OFFSET: i128 = 1 << 63;

/// Bytes of a [`KeyText`] kept in place: a key of zero-padded numbers and short literals
/// (`region03`, `00000123`), or of 19-digit ticks, fits. More would make every key, and
/// every typed write's fields, larger to move.
const KEY_INLINE: usize = 24;

/// A key, or the segment of one, being written ([`KeyValue::write_key`]): text of 24 bytes or
/// less is kept in place and longer text on the heap, so that the short keys a typed write
/// builds, and drops once the row is stored, cost no allocation. Text of any length (the
/// 1 KiB the service takes, and longer, for the key rules to refuse) is kept whole.
///
/// ```
/// use table_core::keys::{KeyText, write_ordered};
///
/// let mut key = KeyText::new();
/// key.push_str("region");
/// key.push_str("03_");
/// write_ordered(&mut key, 7i64.into());
/// assert_eq!(key.as_str(), "region03_09223372036854775815");
/// assert_eq!(String::from(key), "region03_09223372036854775815");
/// ```
///
/// [`KeyValue::write_key`]: crate::typed::KeyValue::write_key
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyText(InlineText<KEY_INLINE>);

impl KeyText {
    /// Empty text.
    #[inline]
    pub fn new() -> Self {
        KeyText(InlineText::new())
    }

    /// The text written so far.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Its length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.as_str().len()
    }

    /// `true` when nothing was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `text`.
    #[inline]
    pub fn push_str(&mut self, text: &str) {
        self.0.push_str(text);
    }

    /// Appends `c`.
    #[inline]
    pub fn push(&mut self, c: char) {
        self.0.push(c);
    }
}

impl Default for KeyText {
    fn default() -> Self {
        KeyText::new()
    }
}

impl From<String> for KeyText {
    fn from(text: String) -> Self {
        KeyText(InlineText::from(text))
    }
}

impl From<KeyText> for String {
    fn from(text: KeyText) -> Self {
        String::from(text.0)
    }
}

/// How one template field is written into a key (`{field}` or `{field:spec}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeySpec {
    /// `{field}`: the value's natural text (decimal, ISO 8601, hyphenated GUID, ...).
    Plain,
    /// `{field:06}`: a non-negative integer, zero padded to exactly this many digits.
    ZeroPad(usize),
    /// `{field:ticks}`: a `DateTime<Utc>` as 19-digit .NET ticks.
    Ticks,
    /// `{field:inverted_ticks}`: a `DateTime<Utc>` as 19-digit inverted ticks (newest first).
    InvertedTicks,
    /// `{field:ordered}`: an integer in the order-preserving 20-digit encoding.
    Ordered,
    /// `{field:%Y%m%d}`: a `DateTime<Utc>` in a chrono `strftime` format.
    Date(&'static str),
}

impl KeySpec {
    /// The exact length of every encoded value, when the spec fixes one.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            KeySpec::ZeroPad(width) => Some(*width),
            KeySpec::Ticks | KeySpec::InvertedTicks => Some(TICKS_DIGITS),
            KeySpec::Ordered => Some(ORDERED_DIGITS),
            KeySpec::Plain | KeySpec::Date(_) => None,
        }
    }
}

impl std::fmt::Display for KeySpec {
    /// The spec as written in a template, after the `:` (empty for [`KeySpec::Plain`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySpec::Plain => Ok(()),
            KeySpec::ZeroPad(width) => write!(f, "0{width}"),
            KeySpec::Ticks => f.write_str("ticks"),
            KeySpec::InvertedTicks => f.write_str("inverted_ticks"),
            KeySpec::Ordered => f.write_str("ordered"),
            KeySpec::Date(format) => f.write_str(format),
        }
    }
}

/// Why a value could not be encoded into, or decoded from, a key segment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyCodecError {
    /// An instant outside 0001-01-01 ..= 9999-12-31T23:59:59.9999999Z has no tick count.
    #[error("{instant} lies outside the range of .NET ticks (0001-01-01 to 9999-12-31)")]
    TicksOutOfRange {
        /// The instant, printed.
        instant: String,
    },
    /// A value needs more digits than the spec allows.
    #[error("{value} needs more than {width} digits")]
    TooWide {
        /// The value, printed.
        value: String,
        /// The allowed number of digits.
        width: usize,
    },
    /// Zero padding applies to non-negative integers only.
    #[error("{value} is negative and cannot be zero padded; use the `ordered` spec")]
    Negative {
        /// The value.
        value: i128,
    },
    /// A value lies outside the range of the Rust type it is decoded into.
    #[error("{value} is out of range for {ty}")]
    OutOfRange {
        /// The value, printed.
        value: String,
        /// The Rust type.
        ty: &'static str,
    },
    /// Key text does not have the form the spec writes.
    #[error("`{text}` is not {expected}")]
    Malformed {
        /// The text found in the key.
        text: String,
        /// What the spec writes, e.g. "19 digits of .NET ticks".
        expected: String,
    },
    /// A spec was applied to a type it does not encode (the derive rejects this at compile time).
    #[error("the key spec `{spec}` does not apply to {ty}")]
    UnsupportedSpec {
        /// The spec as written.
        spec: String,
        /// The Rust type.
        ty: &'static str,
    },
}

fn malformed(text: &str, expected: impl Into<String>) -> KeyCodecError {
    KeyCodecError::Malformed { text: text.to_owned(), expected: expected.into() }
}

/// `true` when `text` is exactly `width` ASCII digits.
fn is_digits(text: &str, width: usize) -> bool {
    text.len() == width && all_digits(text.as_bytes())
}

/// `true` when every byte of `bytes` is an ASCII digit: eight at a time ([`eight_digits`]),
/// then one at a time. A template's cut checks each fixed-width field with it.
#[inline(always)]
pub(crate) fn all_digits(bytes: &[u8]) -> bool {
    let (eights, rest) = bytes.as_chunks::<8>();
    eights.iter().all(|eight| eight_digits(*eight).is_some()) && rest.iter().all(u8::is_ascii_digit)
}

/// The number that `digits`, at most [`U64_SAFE_DIGITS`] of them (so it cannot overflow),
/// write in decimal; `None` when one of them is not an ASCII digit. Eight at a time
/// ([`eight_digits`]), then the rest one at a time.
#[inline(always)]
fn decimal_value(digits: &[u8]) -> Option<u64> {
    let (eights, rest) = digits.as_chunks::<8>();
    let mut value = 0u64;
    for eight in eights {
        value = value.wrapping_mul(100_000_000).wrapping_add(eight_digits(*eight)?);
    }
    // Each byte checked as it is folded, without a branch a digit: a byte that is no digit
    // wraps `byte - b'0'` above 9, which `bad` keeps until the end (the sum it spoils,
    // wrapping, is then thrown away).
    let (value, bad) = rest.iter().fold((value, false), |(n, bad), &byte| {
        let digit = byte.wrapping_sub(b'0');
        (n.wrapping_mul(10).wrapping_add(u64::from(digit)), bad | (digit > 9))
    });
    (!bad).then_some(value)
}

/// Eight ASCII digits, most significant first, as the number they write; `None` when a byte
/// is no digit. Read as one little-endian `u64`, the first digit in its lowest byte, and
/// checked and folded as a whole (a byte at a time, the eight digits of a key cost about 40
/// instructions to check and 40 more to fold):
/// - a digit is a byte `0x30..=0x39`: its high nibble is 3, and adding 6 to it does not carry
///   out of its low nibble (`0x3A` and above carry into the high nibble, making it 4; no
///   byte of high nibble 3 carries into the next byte);
/// - the digits' values (`x - "00000000"`, each byte 0 to 9) are then paired: each 16-bit lane
///   takes `10 * its low byte + its high byte` (the earlier digit is the more significant),
///   each 32-bit lane `100 * its low lane + its high lane`, then the whole `10_000 * low +
///   high`. No lane's sum overflows its width (99, 9 999, 99 999 999), so nothing carries
///   between lanes; the masks drop the neighbours' halves.
#[inline(always)]
fn eight_digits(eight: [u8; 8]) -> Option<u64> {
    const ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);
    const SIXES: u64 = u64::from_le_bytes([6; 8]);
    const HIGH_NIBBLES: u64 = u64::from_le_bytes([0xF0; 8]);
    let text = u64::from_le_bytes(eight);
    let digits = text & HIGH_NIBBLES == ZEROS && text.wrapping_add(SIXES) & HIGH_NIBBLES == ZEROS;
    if !digits {
        return None;
    }
    let values = text.wrapping_sub(ZEROS);
    let pairs = (values.wrapping_mul(10).wrapping_add(values >> 8)) & 0x00FF_00FF_00FF_00FF;
    let fours = (pairs.wrapping_mul(100).wrapping_add(pairs >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((fours.wrapping_mul(10_000).wrapping_add(fours >> 32)) & 0xFFFF_FFFF)
}

/// The 19-digit .NET tick count of an instant (`2014-08-22T00:50:32Z` -> `0635442654320000000`).
pub fn ticks(t: DateTime<Utc>) -> Result<String, KeyCodecError> {
    to_string(|out| write_ticks(out, t))
}

/// Appends [`ticks`] of an instant to `out`; on error `out` is left as it was.
pub fn write_ticks(out: &mut KeyText, t: DateTime<Utc>) -> Result<(), KeyCodecError> {
    write_padded(out, checked_ticks(t)?.unsigned_abs(), TICKS_DIGITS);
    Ok(())
}

/// The 19-digit inverted tick count, `MAX_TICKS - ticks`
/// (`2014-08-22T00:50:32Z` -> `2519936321679999999`).
pub fn inverted_ticks(t: DateTime<Utc>) -> Result<String, KeyCodecError> {
    to_string(|out| write_inverted_ticks(out, t))
}

/// Appends [`inverted_ticks`] of an instant to `out`; on error `out` is left as it was.
pub fn write_inverted_ticks(out: &mut KeyText, t: DateTime<Utc>) -> Result<(), KeyCodecError> {
    write_padded(out, (MAX_TICKS - checked_ticks(t)?).unsigned_abs(), TICKS_DIGITS);
    Ok(())
}

/// The ticks of an instant within .NET's range (0001-01-01 to 9999-12-31).
fn checked_ticks(t: DateTime<Utc>) -> Result<i64, KeyCodecError> {
    to_ticks(t)
        .filter(|ticks| (0..=MAX_TICKS).contains(ticks))
        .ok_or_else(|| KeyCodecError::TicksOutOfRange { instant: t.to_rfc3339() })
}

/// Reads a 19-digit tick count written by [`ticks`].
pub fn parse_ticks(text: &str) -> Result<DateTime<Utc>, KeyCodecError> {
    parse_tick_count(text).map(|(_, t)| t)
}

/// Reads a 19-digit inverted tick count written by [`inverted_ticks`].
pub fn parse_inverted_ticks(text: &str) -> Result<DateTime<Utc>, KeyCodecError> {
    let (inverted, _) = parse_tick_count(text)?;
    from_ticks(MAX_TICKS - inverted).ok_or_else(|| malformed(text, "19 digits of inverted ticks"))
}

fn parse_tick_count(text: &str) -> Result<(i64, DateTime<Utc>), KeyCodecError> {
    let expected = "19 digits of .NET ticks";
    if !is_digits(text, TICKS_DIGITS) {
        return Err(malformed(text, expected));
    }
    let count: i64 = text.parse().map_err(|_| malformed(text, expected))?;
    if count > MAX_TICKS {
        return Err(malformed(text, expected));
    }
    let instant = from_ticks(count).ok_or_else(|| malformed(text, expected))?;
    Ok((count, instant))
}

/// A non-negative integer as exactly `width` decimal digits (123 with width 8 -> `00000123`).
pub fn zero_pad(value: i128, width: usize) -> Result<String, KeyCodecError> {
    let Ok(magnitude) = u64::try_from(value) else {
        // Negative, or wider than any key integer type: both are errors of their own.
        return if value < 0 {
            Err(KeyCodecError::Negative { value })
        } else {
            Err(KeyCodecError::TooWide { value: value.to_string(), width })
        };
    };
    to_string(|out| write_zero_padded(out, KeyInt::from_parts(false, magnitude), width))
}

/// Appends [`zero_pad`] of `value` to `out`; on error `out` is left as it was.
// Inlined into the key writers, which a derived key builder inlines with a constant width.
#[inline]
pub fn write_zero_padded(out: &mut KeyText, value: KeyInt, width: usize) -> Result<(), KeyCodecError> {
    if value.negative {
        return Err(KeyCodecError::Negative { value: value.to_i128() });
    }
    let too_wide = || KeyCodecError::TooWide { value: value.magnitude.to_string(), width };
    let mut digits = itoa::Buffer::new();
    // Up to 18 digits, `10^width + value` fits a `u64` and is printed as `1` and then the
    // padded digits: appended in one piece, without the zeros appended first (a key number of
    // 8 digits and one of 2 cost 55 fewer instructions, ops_probe `probe_inserts`).
    if let Some(&bound) = POWERS_OF_TEN.get(width).filter(|_| width > 0) {
        if value.magnitude >= bound {
            return Err(too_wide());
        }
        let text = digits.format(bound + value.magnitude);
        out.push_str(text.get(1..).unwrap_or_default());
        return Ok(());
    }
    let text = digits.format(value.magnitude);
    if text.len() > width {
        return Err(too_wide());
    }
    push_padded(out, text, width);
    Ok(())
}

/// `10^n` at index `n`, for the widths whose `10^width + value` [`write_zero_padded`] prints
/// as one number: while `2 * 10^n` fits a `u64`.
static POWERS_OF_TEN: [u64; 19] = {
    let mut powers = [1u64; 19];
    let mut n = 1;
    while n < powers.len() {
        powers[n] = powers[n - 1] * 10;
        n += 1;
    }
    powers
};

/// Reads an integer written by [`zero_pad`] with the same width.
// Always inlined into the key decoders, which a derived decoder inlines with its `const`
// template: the width and the length of the text its cut took are then constants, and the
// reading of the digits unrolls (see `KeyTemplate::split_fields`).
#[inline(always)]
pub fn parse_zero_padded(text: &str, width: usize) -> Result<i128, KeyCodecError> {
    // Each byte checked as a digit as it is read, in one pass; read by hand, as `parse` of an
    // `i128` costs several times more on the few digits of a key. Up to 19 digits cannot
    // overflow a `u64` (below 10^19 < 2^64), so the widths of 32- and 64-bit fields are read
    // without the `i128` overflow checks, which cost about 25 instructions a digit (every
    // typed read of such a key field pays them), and eight digits at a time.
    let value = match text.len() {
        len if len != width => None,
        ..=U64_SAFE_DIGITS => decimal_value(text.as_bytes()).map(i128::from),
        _ => {
            let digit = |byte: u8| byte.is_ascii_digit().then(|| byte - b'0');
            text.bytes().try_fold(0i128, |n, byte| n.checked_mul(10)?.checked_add(i128::from(digit(byte)?)))
        }
    };
    value.ok_or_else(|| malformed(text, format!("{width} digits")))
}

/// Most decimal digits whose every value fits a `u64`.
const U64_SAFE_DIGITS: usize = 19;

/// An integer in `i64::MIN..=u64::MAX` as `value + 2^63` in 20 digits, so that text order is
/// numeric order (`i64::MIN` -> `00000000000000000000`, `0` -> `09223372036854775808`).
pub fn ordered(value: i128) -> Result<String, KeyCodecError> {
    let magnitude = u64::try_from(value.unsigned_abs()).ok();
    match magnitude {
        Some(magnitude) if value >= i128::from(i64::MIN) => to_string(|out| {
            write_ordered(out, KeyInt::from_parts(value < 0, magnitude));
            Ok(())
        }),
        _ => Err(KeyCodecError::OutOfRange {
            value: value.to_string(),
            ty: "the ordered encoding (i64::MIN to u64::MAX)",
        }),
    }
}

/// Appends [`ordered`] of `value` to `out`: every [`KeyInt`] is in its range.
pub fn write_ordered(out: &mut KeyText, value: KeyInt) {
    const OFFSET: u64 = 1 << 63;
    const TEN_POW_19: u64 = 10_000_000_000_000_000_000;
    if value.negative {
        // A negative KeyInt comes from an i64, so its magnitude is at most 2^63.
        write_padded(out, OFFSET - value.magnitude, ORDERED_DIGITS);
    } else if let Some(shifted) = value.magnitude.checked_add(OFFSET) {
        write_padded(out, shifted, ORDERED_DIGITS);
    } else {
        // Above u64::MAX (a u64 of 2^63 or more): `magnitude + 2^63` lies in [2^64, 2^64 + 2^63),
        // i.e. a leading digit 1 or 2 followed by 19 digits, computed without wider integers.
        let rest = value.magnitude - OFFSET; // value + 2^63 = 2^64 + rest
        let two_pow_64_low = 8_446_744_073_709_551_616; // 2^64 - 10^19
        let low = rest + two_pow_64_low; // < 10^19 + 2^63, fits u64
        let (lead, low) = if low >= TEN_POW_19 { (b'2', low - TEN_POW_19) } else { (b'1', low) };
        out.push(char::from(lead));
        write_padded(out, low, ORDERED_DIGITS - 1);
    }
}

/// An integer of any key integer type (`i8` to `i64`, `u8` to `u64`) as sign and magnitude, so
/// that the key writers need neither `i128` arithmetic nor an intermediate `String`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyInt {
    negative: bool,
    magnitude: u64,
}

impl KeyInt {
    /// `-magnitude` when `negative`, else `magnitude`; callers keep a negative magnitude at or
    /// below 2^63 (`i64::MIN`).
    fn from_parts(negative: bool, magnitude: u64) -> Self {
        Self { negative: negative && magnitude != 0, magnitude }
    }

    fn to_i128(self) -> i128 {
        let magnitude = i128::from(self.magnitude);
        if self.negative { -magnitude } else { magnitude }
    }
}

impl From<i64> for KeyInt {
    fn from(value: i64) -> Self {
        Self::from_parts(value < 0, value.unsigned_abs())
    }
}

impl From<u64> for KeyInt {
    fn from(value: u64) -> Self {
        Self::from_parts(false, value)
    }
}

/// `From` for the narrower key integer types, through the 64-bit type of their signedness.
macro_rules! key_int_from_narrower {
    ($($wide:ident <- $($ty:ident),*);*) => {$($(
        impl From<$ty> for KeyInt {
            fn from(value: $ty) -> Self {
                Self::from($wide::from(value))
            }
        }
    )*)*};
}
key_int_from_narrower!(i64 <- i8, i16, i32; u64 <- u8, u16, u32);

/// Appends `n` as exactly `width` digits; `n` must have at most `width` digits.
fn write_padded(out: &mut KeyText, n: u64, width: usize) {
    push_padded(out, itoa::Buffer::new().format(n), width);
}

/// Appends `digits` after as many zeros as make them `width` long. Padded by hand:
/// `format!("{:0width$}")` panics for widths above u16::MAX. The digits come from `itoa`, as
/// `&str` without a UTF-8 check: pushed a character at a time, a zero-padded key number cost
/// about twice as much (callgrind).
fn push_padded(out: &mut KeyText, digits: &str, width: usize) {
    push_zeros(out, width.saturating_sub(digits.len()));
    out.push_str(digits);
}

/// Appends `count` zeros, copied from a string of them rather than pushed a character at a time
/// (every fixed-width number of a key is padded).
fn push_zeros(out: &mut KeyText, mut count: usize) {
    const ZEROS: &str = "00000000000000000000";
    while count > 0 {
        let n = count.min(ZEROS.len());
        // ASCII: every cut is a character boundary, so `get` always succeeds.
        out.push_str(ZEROS.get(..n).unwrap_or_default());
        count -= n;
    }
}

/// Appends the decimal text of `value` (`-42`, `7`) to `out`, as `to_string` would write it.
pub fn write_plain(out: &mut KeyText, value: KeyInt) {
    if value.negative {
        out.push('-');
    }
    out.push_str(itoa::Buffer::new().format(value.magnitude));
}

/// Runs a key writer on new text, returned as a `String`.
fn to_string(write: impl FnOnce(&mut KeyText) -> Result<(), KeyCodecError>) -> Result<String, KeyCodecError> {
    let mut out = KeyText::new();
    write(&mut out)?;
    Ok(out.into())
}

/// Reads an integer written by [`ordered`].
pub fn parse_ordered(text: &str) -> Result<i128, KeyCodecError> {
    let expected = "20 digits of an ordered integer";
    if !is_digits(text, ORDERED_DIGITS) {
        return Err(malformed(text, expected));
    }
    let shifted: i128 = text.parse().map_err(|_| malformed(text, expected))?;
    let value = shifted - ORDERED_OFFSET;
    if value > i128::from(u64::MAX) {
        return Err(malformed(text, expected));
    }
    Ok(value)
}

/// An instant in a chrono `strftime` format (`%Y%m%d` -> `20140822`).
pub fn date(t: DateTime<Utc>, format: &str) -> Result<String, KeyCodecError> {
    use std::fmt::Write;
    let mut out = String::new();
    // chrono reports an invalid format only while writing; the derive checks formats at compile
    // time, so this error is for hand-written templates.
    write!(out, "{}", t.format(format))
        .map_err(|_| KeyCodecError::UnsupportedSpec { spec: format.to_owned(), ty: "DateTime<Utc>" })?;
    Ok(out)
}

/// Reads an instant written by [`date`]; a format without a time of day reads as midnight UTC.
pub fn parse_date(text: &str, format: &str) -> Result<DateTime<Utc>, KeyCodecError> {
    if let Ok(t) = DateTime::parse_from_str(text, format) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
        return Ok(t.and_utc());
    }
    NaiveDate::parse_from_str(text, format)
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| malformed(text, format!("a date in the format `{format}`")))
}

/// The smallest string greater than every string that starts with `prefix`, in the service's
/// ordinal UTF-16 order; `None` when no such string exists (an empty prefix, or one made only of
/// U+FFFF). `key ge prefix and key lt successor` then selects exactly the keys with that prefix.
pub fn prefix_successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = next_in_utf16_order(last) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The character right after `c` when characters are ordered by their UTF-16 code units:
/// U+0000..U+D7FF, then the supplementary planes (leading surrogates D800..DBFF), then
/// U+E000..U+FFFF.
fn next_in_utf16_order(c: char) -> Option<char> {
    match u32::from(c) {
        0xD7FF => Some('\u{10000}'),
        0x10FFFF => Some('\u{E000}'),
        0xFFFF => None,
        n => char::from_u32(n + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::compare_ordinal;
    use std::cmp::Ordering;

    #[test]
    fn spec_widths_and_text() {
        assert_eq!(KeySpec::ZeroPad(6).fixed_width(), Some(6));
        assert_eq!(KeySpec::InvertedTicks.fixed_width(), Some(19));
        assert_eq!(KeySpec::Ordered.fixed_width(), Some(20));
        assert_eq!(KeySpec::Date("%Y").fixed_width(), None);
        assert_eq!(KeySpec::ZeroPad(6).to_string(), "06");
        assert_eq!(KeySpec::InvertedTicks.to_string(), "inverted_ticks");
    }

    #[test]
    fn instants_outside_dotnet_range_have_no_ticks() {
        let before_year_one = DateTime::from_timestamp(-62_135_596_801, 0).expect("valid");
        assert!(matches!(ticks(before_year_one), Err(KeyCodecError::TicksOutOfRange { .. })));
        let after_9999 = DateTime::from_timestamp(253_402_300_800, 0).expect("valid");
        assert!(inverted_ticks(after_9999).is_err());
    }

    #[test]
    fn successor_follows_utf16_order() {
        assert_eq!(prefix_successor("pre").as_deref(), Some("prf"));
        assert_eq!(prefix_successor(""), None);
        assert_eq!(prefix_successor("a\u{ffff}").as_deref(), Some("b"));
        assert_eq!(prefix_successor("\u{ffff}\u{ffff}"), None);
        assert_eq!(prefix_successor("a\u{d7ff}").as_deref(), Some("a\u{10000}"));
        assert_eq!(prefix_successor("a\u{10ffff}").as_deref(), Some("a\u{e000}"));
        assert_eq!(prefix_successor("a\u{1f600}").as_deref(), Some("a\u{1f601}"));
    }

    #[test]
    fn next_char_is_the_next_utf16_string() {
        for c in ['a', '\u{d7ff}', '\u{e000}', '\u{fffe}', '\u{10000}', char::MAX] {
            let next = next_in_utf16_order(c).expect("has a successor");
            assert_eq!(
                compare_ordinal(&c.to_string(), &next.to_string()),
                Ordering::Less,
                "{c:?} < {next:?}"
            );
        }
    }

    #[test]
    fn zero_padding_any_width_never_panics() {
        assert_eq!(zero_pad(5, 70_000).map(|s| s.len()), Ok(70_000));
        assert!(zero_pad(1234, 3).is_err());
        assert_eq!(zero_pad(123, 8).as_deref(), Ok("00000123"));
    }

    #[test]
    fn zero_padding_writes_what_format_writes_at_every_width() {
        for width in 0..=45 {
            for value in [0, 7, 123, 99_999, i128::from(i64::MAX), i128::from(u64::MAX)] {
                let expected = format!("{value:0width$}");
                match zero_pad(value, width) {
                    Ok(text) => assert_eq!(text, expected, "{value} in {width}"),
                    Err(_) => assert!(expected.len() > width, "{value} in {width}"),
                }
            }
        }
        let wide = zero_pad(5, 70_000).expect("wide enough");
        assert!(wide.strip_suffix('5').is_some_and(|zeros| zeros.bytes().all(|b| b == b'0')));
    }

    /// A `u64` near a power of ten (one below, at, one above), or any.
    fn around_powers_of_ten() -> impl proptest::strategy::Strategy<Value = u64> {
        use proptest::prelude::*;
        prop_oneof![
            (0u32..20, -1i8..=1).prop_map(|(n, step)| 10u64.pow(n).saturating_add_signed(step.into())),
            any::<u64>(),
            0u64..1_000,
        ]
    }

    proptest::proptest! {
        /// Appended after text already written, as in a key, every width writes what `format!`
        /// writes, or refuses exactly the values `format!` would write wider, with the same
        /// error, and leaves the text as it was: on both sides of the widths whose padded
        /// digits are printed as one number (up to 18).
        #[test]
        fn zero_padded_keys_are_what_format_writes(value in around_powers_of_ten(), width in 0usize..24) {
            let mut out = KeyText::new();
            out.push_str("p_");
            let written = write_zero_padded(&mut out, KeyInt::from(value), width);
            let expected = format!("{value:0width$}");
            if expected.len() > width {
                let refused = KeyCodecError::TooWide { value: value.to_string(), width };
                proptest::prop_assert_eq!(written, Err(refused));
                proptest::prop_assert_eq!(out.as_str(), "p_");
            } else {
                proptest::prop_assert_eq!(written, Ok(()));
                proptest::prop_assert_eq!(out.as_str(), format!("p_{expected}"));
            }
        }

        /// The digits read by hand read as `str::parse` reads them, up to and past the
        /// largest `i128` (39 digits, so the second pattern is around where it overflows) and
        /// on both sides of the widths read in a `u64` (the third: 19 and 20 nines, and
        /// around `u64::MAX`), eight at a time or one at a time; anything but digits,
        /// anywhere among them (the last pattern: bytes beside the digits' range and of
        /// their high or low nibble among them), is refused, and so is any other width than
        /// the text's.
        #[test]
        fn zero_padded_digits_read_as_parse_reads_them(
            text in "[0-9]{1,45}|1701411834604692317316873037158841057[0-9]{2}|9{18,21}|1844674407370955161[0-9]{1,2}|[0-9+ -]{1,4}|[0-9]{0,12}[a/:;?@P\x00\x7fé٣ ][0-9]{0,12}",
        ) {
            let parsed = text.parse::<i128>().ok().filter(|_| text.bytes().all(|b| b.is_ascii_digit()));
            proptest::prop_assert_eq!(parse_zero_padded(&text, text.len()).ok(), parsed);
            proptest::prop_assert!(parse_zero_padded(&text, text.len() + 1).is_err());
            proptest::prop_assert!(parse_zero_padded(&text, text.len() - 1).is_err());
        }

        /// `all_digits`, eight bytes at a time, answers as a check of each byte does, for
        /// digits with any byte at all among them (most often one beside the digits' range).
        #[test]
        fn all_digits_checks_every_byte(
            digits in proptest::collection::vec(b'0'..=b'9', 0..40),
            other in proptest::prop_oneof![proptest::num::u8::ANY, b'('..=b'A', 0xB0u8..=0xB9],
            at in proptest::num::usize::ANY,
            insert in proptest::bool::ANY,
        ) {
            let mut bytes = digits;
            if insert {
                bytes.insert(at % (bytes.len() + 1), other);
            }
            proptest::prop_assert_eq!(all_digits(&bytes), bytes.iter().all(u8::is_ascii_digit));
        }
    }
}
