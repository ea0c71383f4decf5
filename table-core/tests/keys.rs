//! Key codecs: the .NET interop vectors and the order and round-trip invariants.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use table_core::compare_ordinal;
use table_core::datetime::{max_datetime, parse_datetime};
use table_core::keys::{self, KeyCodecError, KeySpec, KeyText};
use table_core::typed::KeyValue;

fn at(s: &str) -> DateTime<Utc> {
    parse_datetime(s).expect("test vector parses")
}

#[test]
fn dotnet_tick_vectors() {
    assert_eq!(keys::ticks(at("2014-08-22T00:50:32Z")).unwrap(), "0635442654320000000");
    assert_eq!(keys::inverted_ticks(at("2014-08-22T00:50:32Z")).unwrap(), "2519936321679999999");
    assert_eq!(keys::inverted_ticks(at("1970-01-01T00:00:00Z")).unwrap(), "2534023007999999999");
    assert_eq!(keys::inverted_ticks(max_datetime()).unwrap(), "0000000000000000000");
    assert_eq!(keys::parse_inverted_ticks("2519936321679999999").unwrap(), at("2014-08-22T00:50:32Z"));
}

#[test]
fn zero_padding_vectors() {
    assert_eq!(keys::zero_pad(123, 8).unwrap(), "00000123");
    assert_eq!(keys::zero_pad(0, 6).unwrap(), "000000");
    assert_eq!(keys::parse_zero_padded("00000123", 8).unwrap(), 123);
    assert_eq!(
        keys::zero_pad(1_234_567, 6),
        Err(KeyCodecError::TooWide { value: "1234567".into(), width: 6 })
    );
    assert_eq!(keys::zero_pad(-1, 6), Err(KeyCodecError::Negative { value: -1 }));
    assert!(keys::parse_zero_padded("0123", 8).is_err());
    assert!(keys::parse_zero_padded("0000012a", 8).is_err());
}

#[test]
fn ordered_vectors() {
    assert_eq!(keys::ordered(i128::from(i64::MIN)).unwrap(), "00000000000000000000");
    assert_eq!(keys::ordered(0).unwrap(), "09223372036854775808");
    assert_eq!(keys::ordered(i128::from(u64::MAX)).unwrap(), "27670116110564327423");
    assert!(keys::ordered(i128::from(u64::MAX) + 1).is_err());
    assert!(keys::parse_ordered("99999999999999999999").is_err());
    assert!(keys::parse_ordered("-1").is_err());
}

#[test]
fn date_formats_round_trip_at_their_precision() {
    let t = at("2014-08-22T00:50:32Z");
    assert_eq!(keys::date(t, "%Y%m%d").unwrap(), "20140822");
    assert_eq!(keys::parse_date("20140822", "%Y%m%d").unwrap(), at("2014-08-22T00:00:00Z"));
    assert_eq!(keys::parse_date("2014-08-22T00.50.32", "%Y-%m-%dT%H.%M.%S").unwrap(), t);
    assert!(keys::parse_date("2014-13-01", "%Y-%m-%d").is_err());
}

#[test]
fn prefix_successor_vectors() {
    assert_eq!(keys::prefix_successor("empid_").as_deref(), Some("empid`"));
    assert_eq!(keys::prefix_successor(""), None);
    assert_eq!(keys::prefix_successor("a\u{ffff}").as_deref(), Some("b"));
    assert_eq!(keys::prefix_successor("\u{d7ff}").as_deref(), Some("\u{10000}"));
    assert_eq!(keys::prefix_successor("\u{10ffff}").as_deref(), Some("\u{e000}"));
}

fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    // 0001-01-01 ..= 9999-12-31T23:59:59.9999999, at 100 ns.
    (-62_135_596_800i64..=253_402_300_799, 0u32..10_000_000)
        .prop_map(|(s, t)| DateTime::from_timestamp(s, t * 100).expect("in chrono's range"))
}

proptest! {
    #[test]
    fn ticks_round_trip_and_keep_order(a in instant(), b in instant()) {
        let (ta, tb) = (keys::ticks(a).unwrap(), keys::ticks(b).unwrap());
        prop_assert_eq!(ta.len(), 19);
        prop_assert_eq!(keys::parse_ticks(&ta).unwrap(), a);
        prop_assert_eq!(ta.cmp(&tb), a.cmp(&b));
        let (ia, ib) = (keys::inverted_ticks(a).unwrap(), keys::inverted_ticks(b).unwrap());
        prop_assert_eq!(keys::parse_inverted_ticks(&ia).unwrap(), a);
        prop_assert_eq!(ia.cmp(&ib), b.cmp(&a));
    }

    #[test]
    fn ordered_round_trips_and_keeps_numeric_order(a in any::<i64>(), b in any::<i64>(), u in any::<u64>()) {
        let (ea, eb) = (keys::ordered(a.into()).unwrap(), keys::ordered(b.into()).unwrap());
        prop_assert_eq!(ea.len(), 20);
        prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
        prop_assert_eq!(keys::parse_ordered(&ea).unwrap(), i128::from(a));
        let eu = keys::ordered(u.into()).unwrap();
        prop_assert_eq!(keys::parse_ordered(&eu).unwrap(), i128::from(u));
        prop_assert_eq!(ea.cmp(&eu), i128::from(a).cmp(&i128::from(u)));
    }

    #[test]
    fn zero_padding_round_trips_and_keeps_order(a in 0u32..1_000_000, b in 0u32..1_000_000) {
        let (ea, eb) = (keys::zero_pad(a.into(), 6).unwrap(), keys::zero_pad(b.into(), 6).unwrap());
        prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
        prop_assert_eq!(keys::parse_zero_padded(&ea, 6).unwrap(), i128::from(a));
    }

    #[test]
    fn prefix_successor_bounds_exactly_the_prefixed_strings(prefix in "\\PC{0,4}", s in "\\PC{0,6}") {
        use std::cmp::Ordering::*;
        let in_range = compare_ordinal(&s, &prefix) != Less
            && keys::prefix_successor(&prefix).is_none_or(|end| compare_ordinal(&s, &end) == Less);
        prop_assert_eq!(in_range, s.starts_with(&prefix));
        let extended = format!("{prefix}{s}");
        let in_range = keys::prefix_successor(&prefix).is_none_or(|end| compare_ordinal(&extended, &end) == Less);
        prop_assert!(in_range);
    }
}

/// The integer key formats as they were first written, through `i128` and `format!`: the
/// in-place writers must produce exactly these bytes.
fn reference_key(value: i128, spec: &KeySpec) -> Result<String, KeyCodecError> {
    match *spec {
        KeySpec::Plain => Ok(value.to_string()),
        KeySpec::ZeroPad(width) => {
            if value < 0 {
                return Err(KeyCodecError::Negative { value });
            }
            let digits = value.to_string();
            if digits.len() > width {
                return Err(KeyCodecError::TooWide { value: digits, width });
            }
            Ok("0".repeat(width - digits.len()) + &digits)
        }
        KeySpec::Ordered => Ok(format!("{:020}", value + (1i128 << 63))),
        _ => unreachable!("integer specs only"),
    }
}

/// Checks one integer against [`reference_key`], through `encode_key` and through `write_key`
/// appending to a key that already has text (which an error must leave as it was).
fn check_integer_key<T: KeyValue + Into<i128> + Copy>(value: T, spec: &KeySpec) -> Result<(), TestCaseError> {
    let expected = reference_key(value.into(), spec);
    prop_assert_eq!(&value.encode_key(spec), &expected);
    let mut out = KeyText::from(String::from("p_"));
    let written = value.write_key(spec, &mut out);
    match expected {
        // Past 22 digits (widths up to 24 here) the text outgrows what a key keeps inline.
        Ok(text) => prop_assert_eq!((written, String::from(out)), (Ok(()), format!("p_{text}"))),
        Err(e) => prop_assert_eq!((written, out.as_str()), (Err(e), "p_")),
    }
    Ok(())
}

/// Integers with the edges of every key integer type mixed in among uniform ones.
fn key_integer() -> impl Strategy<Value = i128> {
    let edges = [0, 1, -1, 9, 10, 99, 100, i128::from(i32::MIN), i128::from(i32::MAX), i128::from(u32::MAX)]
        .into_iter()
        .chain([i128::from(i8::MIN), i128::from(i8::MAX), i128::from(u8::MAX), 256, i128::from(i16::MIN)])
        .chain([i128::from(i16::MAX), i128::from(u16::MAX), 65_536])
        .chain([i128::from(i64::MIN), i128::from(i64::MAX), i128::from(u64::MAX), 1 << 63, (1 << 63) - 1])
        .chain([(1 << 64) - 10_000_000_000_000_000_000, 10_000_000_000_000_000_000]);
    prop_oneof![
        prop::sample::select(edges.collect::<Vec<_>>()),
        any::<i64>().prop_map(i128::from),
        any::<u64>().prop_map(i128::from),
        (0u32..20).prop_flat_map(|digits| 0..10i128.pow(digits).max(1)),
    ]
}

fn integer_spec() -> impl Strategy<Value = KeySpec> {
    prop_oneof![Just(KeySpec::Plain), Just(KeySpec::Ordered), (0usize..25).prop_map(KeySpec::ZeroPad)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn integer_keys_are_written_byte_for_byte_as_before(value in key_integer(), spec in integer_spec()) {
        if let Ok(v) = i8::try_from(value) { check_integer_key(v, &spec)?; }
        if let Ok(v) = i16::try_from(value) { check_integer_key(v, &spec)?; }
        if let Ok(v) = u8::try_from(value) { check_integer_key(v, &spec)?; }
        if let Ok(v) = u16::try_from(value) { check_integer_key(v, &spec)?; }
        if let Ok(v) = i32::try_from(value) { check_integer_key(v, &spec)?; }
        if let Ok(v) = i64::try_from(value) { check_integer_key(v, &spec)?; }
        if let Ok(v) = u32::try_from(value) { check_integer_key(v, &spec)?; }
        if let Ok(v) = u64::try_from(value) { check_integer_key(v, &spec)?; }
        // The i128 entry points agree with the reference too, out of range included.
        match spec {
            KeySpec::ZeroPad(width) => prop_assert_eq!(keys::zero_pad(value, width), reference_key(value, &spec)),
            KeySpec::Ordered => prop_assert_eq!(keys::ordered(value), reference_key(value, &spec)),
            _ => {}
        }
    }

    #[test]
    fn tick_keys_are_written_byte_for_byte_as_before(t in instant()) {
        let ticks = table_core::datetime::to_ticks(t).expect("in range");
        let max = table_core::datetime::MAX_TICKS;
        prop_assert_eq!(t.encode_key(&KeySpec::Ticks), Ok(format!("{ticks:019}")));
        prop_assert_eq!(t.encode_key(&KeySpec::InvertedTicks), Ok(format!("{:019}", max - ticks)));
        let mut out = KeyText::from(String::from("p_"));
        prop_assert_eq!(t.write_key(&KeySpec::InvertedTicks, &mut out), Ok(()));
        prop_assert_eq!(out.as_str(), format!("p_{:019}", max - ticks));
    }
}

#[test]
fn out_of_range_integers_keep_their_errors() {
    assert_eq!(keys::zero_pad(-5, 3), Err(KeyCodecError::Negative { value: -5 }));
    assert_eq!(
        keys::zero_pad(i128::from(u64::MAX) + 1, 30),
        Err(KeyCodecError::TooWide { value: "18446744073709551616".into(), width: 30 })
    );
    assert!(matches!(keys::ordered(i128::from(i64::MIN) - 1), Err(KeyCodecError::OutOfRange { .. })));
    assert!(matches!(keys::ordered(i128::from(u64::MAX) + 1), Err(KeyCodecError::OutOfRange { .. })));
    let mut out = KeyText::from(String::from("p_"));
    assert!(
        max_datetime()
            .checked_add_signed(chrono::TimeDelta::days(1))
            .is_some_and(|t| t.write_key(&KeySpec::Ticks, &mut out).is_err())
    );
    assert_eq!(out.as_str(), "p_");
}
