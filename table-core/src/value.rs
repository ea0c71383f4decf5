//! Property values: the eight EDM types of the Table service, owned ([`Value`]) and borrowed
//! ([`ValueRef`]).
//!
//! Invariant kept by every constructor in this crate: a `DateTime` that reaches storage or the
//! wire has at most 100 ns precision (the service's tick); finer nanoseconds are truncated by
//! [`truncate_to_ticks`], never rounded.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::datetime::truncate_to_ticks;

/// The EDM type of a property, as named in `@odata.type` annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EdmType {
    /// `Edm.String`
    String,
    /// `Edm.Int32`
    Int32,
    /// `Edm.Int64`
    Int64,
    /// `Edm.Double`
    Double,
    /// `Edm.Boolean`
    Boolean,
    /// `Edm.DateTime`
    DateTime,
    /// `Edm.Guid`
    Guid,
    /// `Edm.Binary`
    Binary,
}

impl EdmType {
    /// Every EDM type, in the order declared: for tests that go through all of them.
    #[cfg(test)]
    pub(crate) const EVERY: [EdmType; 8] = [
        EdmType::String,
        EdmType::Int32,
        EdmType::Int64,
        EdmType::Double,
        EdmType::Boolean,
        EdmType::DateTime,
        EdmType::Guid,
        EdmType::Binary,
    ];

    /// The annotation value, e.g. `"Edm.Int64"`.
    pub fn as_str(self) -> &'static str {
        match self {
            EdmType::String => "Edm.String",
            EdmType::Int32 => "Edm.Int32",
            EdmType::Int64 => "Edm.Int64",
            EdmType::Double => "Edm.Double",
            EdmType::Boolean => "Edm.Boolean",
            EdmType::DateTime => "Edm.DateTime",
            EdmType::Guid => "Edm.Guid",
            EdmType::Binary => "Edm.Binary",
        }
    }

    /// Parses an annotation value; only the eight names the service accepts.
    pub fn from_annotation(s: &str) -> Option<EdmType> {
        Self::from_annotation_bytes(s.as_bytes())
    }

    /// [`from_annotation`](Self::from_annotation) of bytes not checked to be UTF-8 (a reader
    /// spares the check: the eight names are ASCII, so no other bytes name a type).
    pub fn from_annotation_bytes(b: &[u8]) -> Option<EdmType> {
        Some(match b {
            b"Edm.String" => EdmType::String,
            b"Edm.Int32" => EdmType::Int32,
            b"Edm.Int64" => EdmType::Int64,
            b"Edm.Double" => EdmType::Double,
            b"Edm.Boolean" => EdmType::Boolean,
            b"Edm.DateTime" => EdmType::DateTime,
            b"Edm.Guid" => EdmType::Guid,
            b"Edm.Binary" => EdmType::Binary,
            _ => return None,
        })
    }
}

impl std::fmt::Display for EdmType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A property value.
///
/// `PartialEq` treats two NaNs as equal so that a stored NaN round-trips and compares equal
/// to itself in tests. Filter semantics (IEEE: a NaN comparison is false except `ne`) live in
/// the filter evaluator, not here.
#[derive(Debug, Clone)]
pub enum Value {
    /// `Edm.String`: at most 32 768 UTF-16 code units.
    String(String),
    /// `Edm.Int32`
    Int32(i32),
    /// `Edm.Int64` (sent as a decimal string on the wire).
    Int64(i64),
    /// `Edm.Double`, including NaN and the infinities.
    Double(f64),
    /// `Edm.Boolean`
    Boolean(bool),
    /// `Edm.DateTime`: UTC, 100 ns precision, 1601-01-01 to 9999-12-31.
    DateTime(DateTime<Utc>),
    /// `Edm.Guid`
    Guid(Uuid),
    /// `Edm.Binary`: at most 65 536 bytes.
    Binary(Vec<u8>),
}

impl Value {
    /// The EDM type of this value.
    pub fn edm_type(&self) -> EdmType {
        match self {
            Value::String(_) => EdmType::String,
            Value::Int32(_) => EdmType::Int32,
            Value::Int64(_) => EdmType::Int64,
            Value::Double(_) => EdmType::Double,
            Value::Boolean(_) => EdmType::Boolean,
            Value::DateTime(_) => EdmType::DateTime,
            Value::Guid(_) => EdmType::Guid,
            Value::Binary(_) => EdmType::Binary,
        }
    }

    /// The string inside, if this is a `String`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Int32(a), Value::Int32(b)) => a == b,
            (Value::Int64(a), Value::Int64(b)) => a == b,
            (Value::Double(a), Value::Double(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Value::Boolean(a), Value::Boolean(b)) => a == b,
            (Value::DateTime(a), Value::DateTime(b)) => a == b,
            (Value::Guid(a), Value::Guid(b)) => a == b,
            (Value::Binary(a), Value::Binary(b)) => a == b,
            _ => false,
        }
    }
}

macro_rules! value_from {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self { Value::$variant(v.into()) }
        }
    )*};
}
value_from!(String => String, &str => String, i32 => Int32, i64 => Int64, f64 => Double,
    bool => Boolean, Uuid => Guid, Vec<u8> => Binary, &[u8] => Binary);
// The EDM types the typed fields store these in (`PropertyValue`), each widened exactly. Not
// `u64`: its typed form is a bit-cast into Int64, which an untyped value should not do unasked.
value_from!(i8 => Int32, i16 => Int32, u8 => Int32, u16 => Int32, u32 => Int64, f32 => Double);

impl From<DateTime<Utc>> for Value {
    fn from(v: DateTime<Utc>) -> Self {
        Value::DateTime(truncate_to_ticks(v))
    }
}

/// Number of UTF-16 code units in `s`: the unit the service measures keys and strings in.
/// A `const fn`, so that a derived type's property names are measured when it compiles.
pub const fn utf16_len(s: &str) -> usize {
    // Most strings are ASCII, one unit per byte: told apart a word at a time, where the count
    // below goes a byte at a time through the short strings that keys and names are.
    if s.is_ascii() {
        return s.len();
    }
    // Counted on bytes, which vectorises (every write sizes every string): each character has
    // exactly one byte that is not a continuation byte (`10xxxxxx`), and the characters of four
    // bytes (lead `11110xxx`), the ones above U+FFFF, take two units.
    let (bytes, mut units, mut at) = (s.as_bytes(), 0, 0);
    while at < bytes.len() {
        units += match bytes[at] {
            0x80..=0xBF => 0,
            0xF0..=0xFF => 2,
            _ => 1,
        };
        at += 1;
    }
    units
}

/// Compares two strings as the service does: ordinally by UTF-16 code units (.NET
/// `string.CompareOrdinal`). This differs from Rust's byte (code point) order only when a
/// character at or above U+10000 meets one in U+E000..=U+FFFF: its leading surrogate sorts first.
pub fn compare_ordinal(a: &str, b: &str) -> std::cmp::Ordering {
    let first_difference = a.chars().zip(b.chars()).find(|(x, y)| x != y);
    match first_difference {
        Some((x, y)) => {
            let (mut ux, mut uy) = ([0u16; 2], [0u16; 2]);
            let (ex, ey): (&[u16], &[u16]) = (x.encode_utf16(&mut ux), y.encode_utf16(&mut uy));
            ex.cmp(ey)
        }
        None => a.len().cmp(&b.len()),
    }
}

/// Parses an `Edm.Guid` in the one form the service reads and writes: hyphenated
/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, hex digits of either case. `None` for anything else,
/// including the braced, URN and unhyphenated forms that `Uuid::try_parse` also takes.
pub fn parse_guid(text: &str) -> Option<Uuid> {
    let hyphenated = text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| matches!(i, 8 | 13 | 18 | 23) == (b == b'-'));
    if hyphenated { Uuid::try_parse(text).ok() } else { None }
}

/// A [`Value`] borrowed from wherever it is held (an entity's field or map, the engine's
/// stored row), so that filters compare, writers write and typed fields read values alike
/// without cloning them.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// `Edm.String`
    Str(&'a str),
    /// `Edm.Int32`
    Int32(i32),
    /// `Edm.Int64`
    Int64(i64),
    /// `Edm.Double`
    Double(f64),
    /// `Edm.Boolean`
    Boolean(bool),
    /// `Edm.DateTime`
    DateTime(DateTime<Utc>),
    /// `Edm.Guid`
    Guid(Uuid),
    /// `Edm.Binary`
    Binary(&'a [u8]),
}

impl<'a> ValueRef<'a> {
    /// The value, borrowed.
    // Inlinable: the built-in field types read an owned value through it (`from_value`).
    #[inline]
    pub fn of(value: &'a Value) -> Self {
        match value {
            Value::String(s) => ValueRef::Str(s),
            Value::Int32(i) => ValueRef::Int32(*i),
            Value::Int64(i) => ValueRef::Int64(*i),
            Value::Double(d) => ValueRef::Double(*d),
            Value::Boolean(b) => ValueRef::Boolean(*b),
            Value::DateTime(t) => ValueRef::DateTime(*t),
            Value::Guid(g) => ValueRef::Guid(*g),
            Value::Binary(b) => ValueRef::Binary(b),
        }
    }

    /// The EDM type of the value.
    pub(crate) fn edm_type(self) -> EdmType {
        match self {
            ValueRef::Str(_) => EdmType::String,
            ValueRef::Int32(_) => EdmType::Int32,
            ValueRef::Int64(_) => EdmType::Int64,
            ValueRef::Double(_) => EdmType::Double,
            ValueRef::Boolean(_) => EdmType::Boolean,
            ValueRef::DateTime(_) => EdmType::DateTime,
            ValueRef::Guid(_) => EdmType::Guid,
            ValueRef::Binary(_) => EdmType::Binary,
        }
    }

    /// The owned value this views.
    // Inlinable: a field type's default `from_stored` converts a lent value through it.
    #[inline]
    pub(crate) fn to_value(self) -> Value {
        match self {
            ValueRef::Str(s) => Value::String(s.to_owned()),
            ValueRef::Int32(i) => Value::Int32(i),
            ValueRef::Int64(i) => Value::Int64(i),
            ValueRef::Double(d) => Value::Double(d),
            ValueRef::Boolean(b) => Value::Boolean(b),
            ValueRef::DateTime(t) => Value::DateTime(t),
            ValueRef::Guid(g) => Value::Guid(g),
            ValueRef::Binary(b) => Value::Binary(b.to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_parse_only_in_the_hyphenated_form() {
        let g = Uuid::from_u128(0x6826_0b3f_beab_45e2_b900_33e2_b442_e724);
        assert_eq!(parse_guid("68260b3f-beab-45e2-b900-33e2b442e724"), Some(g));
        assert_eq!(parse_guid("68260B3F-BEAB-45E2-B900-33E2B442E724"), Some(g));
        for text in [
            "{68260b3f-beab-45e2-b900-33e2b442e724}",
            "urn:uuid:68260b3f-beab-45e2-b900-33e2b442e724",
            "68260b3fbeab45e2b90033e2b442e724",
            "68260b3f-beab45e2-b900-33e2b442e7-24",
            "68260b3f-beab-45e2-b900-33e2b442e72g",
            "68260b3f-beab-45e2-b900-33e2b442e724 ",
            "",
        ] {
            assert_eq!(parse_guid(text), None, "{text}");
        }
    }

    #[test]
    fn narrow_numbers_are_the_values_their_typed_fields_store() {
        use crate::typed::PropertyValue;
        assert_eq!(Value::from(u8::MAX), Value::Int32(255));
        assert_eq!(Value::from(i8::MIN), Value::Int32(-128));
        assert_eq!(Value::from(u16::MAX), Value::Int32(65_535));
        assert_eq!(Value::from(i16::MIN), Value::Int32(-32_768));
        assert_eq!(Value::from(u32::MAX), Value::Int64(4_294_967_295));
        assert_eq!(Value::from(0.1f32), Value::Double(f64::from(0.1f32)));
        assert_eq!(Value::from(7u8), 7u8.to_value());
        assert_eq!(Value::from(-7i16), (-7i16).to_value());
        assert_eq!(Value::from(u32::MAX), u32::MAX.to_value());
        assert_eq!(Value::from(f32::NEG_INFINITY), f32::NEG_INFINITY.to_value());
        // Unsuffixed literals still default to i32 and f64 among the many `From`s.
        assert_eq!((Value::from(5), Value::from(0.5)), (Value::Int32(5), Value::Double(0.5)));
    }

    #[test]
    fn nan_equals_itself_for_round_trips() {
        assert_eq!(Value::Double(f64::NAN), Value::Double(f64::NAN));
        assert_ne!(Value::Double(0.0), Value::Int32(0));
    }

    #[test]
    fn utf16_length_counts_every_kind_of_character() {
        for text in ["", "abc", "é", "\u{7ff}\u{800}", "\u{ffff}", "\u{10000}", "a\u{10ffff}é中\u{1f600}z"]
        {
            let expected: usize = text.chars().map(char::len_utf16).sum();
            assert_eq!(utf16_len(text), expected, "{text:?}");
            assert_eq!(utf16_len(text), text.encode_utf16().count(), "{text:?}");
        }
    }

    #[test]
    fn string_size_counts_utf16_units() {
        assert_eq!(Value::from("ab").stored_size(), 4);
        assert_eq!(Value::from("😀").stored_size(), 4);
    }

    #[test]
    fn datetimes_are_truncated_to_ticks() {
        let t = DateTime::from_timestamp(1, 123_456_789).expect("valid instant");
        let Value::DateTime(v) = Value::from(t) else { unreachable!("From<DateTime> gives DateTime") };
        assert_eq!(v.timestamp_subsec_nanos(), 123_456_700);
    }

    #[test]
    fn ordinal_order_is_utf16_order() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_ordinal("", "Q"), Less);
        assert_eq!(compare_ordinal("Q", "p"), Less);
        assert_eq!(compare_ordinal("ab", "a"), Greater);
        // U+FF21 (fullwidth A) sorts after U+1F600 in code points, before it in UTF-16.
        assert_eq!("\u{ff21}".cmp("\u{1f600}"), Less);
        assert_eq!(compare_ordinal("\u{ff21}", "\u{1f600}"), Greater);
        assert_eq!(compare_ordinal("\u{1f600}", "\u{1f601}"), Less);
    }

    #[test]
    fn annotations_round_trip() {
        for t in EdmType::EVERY {
            assert_eq!(EdmType::from_annotation(t.as_str()), Some(t));
            assert_eq!(EdmType::from_annotation_bytes(t.as_str().as_bytes()), Some(t));
        }
        for bytes in [&b"Edm.\xff"[..], b"edm.string", b"Edm.String ", b""] {
            assert_eq!(EdmType::from_annotation_bytes(bytes), None, "{bytes:?}");
        }
        assert_eq!(EdmType::from_annotation("Edm.Foo"), None);
    }
}
