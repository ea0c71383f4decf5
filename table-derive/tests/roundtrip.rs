//! Round trips struct -> Entity -> struct for every supported field type, extremes included.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use table_core::typed::TableEntity;
use table_derive::{PropertyValue, TableEntity};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, PropertyValue)]
#[table(crate = "table_core")]
enum Color {
    Red,
    Green,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Blob {
    tags: Vec<String>,
    n: Option<i64>,
}

#[derive(Debug, Clone, TableEntity)]
#[table(crate = "table_core", partition_key = "{pk}", row_key = "{rk}")]
struct Everything {
    pk: String,
    rk: String,
    s: String,
    b: bool,
    i: i32,
    l: i64,
    u: u32,
    w: u64,
    d: f64,
    tiny: i8,
    short: i16,
    byte: u8,
    word: u16,
    single: f32,
    oword: Option<u16>,
    t: DateTime<Utc>,
    g: Uuid,
    x: Vec<u8>,
    color: Color,
    #[table(json)]
    blob: Blob,
    os: Option<String>,
    ol: Option<i64>,
    ot: Option<DateTime<Utc>>,
    #[table(json)]
    oblob: Option<Blob>,
}

impl PartialEq for Everything {
    fn eq(&self, o: &Self) -> bool {
        // NaN must come back as NaN, and -0.0 as -0.0: compare bits.
        self.d.to_bits() == o.d.to_bits()
            && self.single.to_bits() == o.single.to_bits()
            && (self.tiny, self.short, self.byte, self.word, self.oword)
                == (o.tiny, o.short, o.byte, o.word, o.oword)
            && (self.pk.as_str(), self.rk.as_str(), self.s.as_str(), self.b, self.i, self.l)
                == (o.pk.as_str(), o.rk.as_str(), o.s.as_str(), o.b, o.i, o.l)
            && (self.u, self.w, self.t, self.g, &self.x, &self.color) == (o.u, o.w, o.t, o.g, &o.x, &o.color)
            && (&self.blob, &self.os, self.ol, self.ot, &self.oblob) == (&o.blob, &o.os, o.ol, o.ot, &o.oblob)
    }
}

/// Key text: any characters the service allows, up to the 1024-unit limit.
fn key() -> impl Strategy<Value = String> {
    prop_oneof!["[^/\\\\#?\\x00-\\x1f\\x7f-\\x9f]{0,40}", Just(String::new()), Just("k".repeat(1024)),]
}

/// Instants at 100 ns precision within the service's range.
fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    (-11_644_473_600i64..=253_402_300_799, 0u32..10_000_000)
        .prop_map(|(s, t)| DateTime::from_timestamp(s, t * 100).expect("in range"))
}

fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(f64::MIN_POSITIVE),
    ]
}

fn single() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<f32>(),
        Just(f32::NAN),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(-0.0),
        Just(f32::MIN_POSITIVE),
        Just(f32::MAX),
    ]
}

fn blob() -> impl Strategy<Value = Blob> {
    (proptest::collection::vec(".{0,8}", 0..3), any::<Option<i64>>()).prop_map(|(tags, n)| Blob { tags, n })
}

prop_compose! {
    fn everything()(
        (pk, rk) in (key(), key()),
        s in ".{0,64}",
        (b, i, l, u, w) in (any::<bool>(), any::<i32>(), any::<i64>(), any::<u32>(), any::<u64>()),
        d in double(),
        (tiny, short, byte, word, single, oword) in
            (any::<i8>(), any::<i16>(), any::<u8>(), any::<u16>(), single(), any::<Option<u16>>()),
        t in instant(),
        g in any::<u128>().prop_map(Uuid::from_u128),
        x in proptest::collection::vec(any::<u8>(), 0..64),
        color in prop_oneof![Just(Color::Red), Just(Color::Green)],
        blob in blob(),
        (os, ol, ot) in (proptest::option::of(".{0,8}"), any::<Option<i64>>(), proptest::option::of(instant())),
        oblob in proptest::option::of(blob()),
    ) -> Everything {
        Everything { pk, rk, s, b, i, l, u, w, d, tiny, short, byte, word, single, oword, t, g, x, color, blob, os, ol, ot, oblob }
    }
}

proptest! {
    #[test]
    fn every_type_round_trips(e in everything()) {
        let entity = e.to_entity().unwrap();
        prop_assert_eq!(entity.properties.contains_key("os"), e.os.is_some());
        prop_assert_eq!(entity.properties.contains_key("oblob"), e.oblob.is_some());
        let back = Everything::from_entity(entity).unwrap();
        prop_assert_eq!(back, e);
    }
}

fn extremes() -> Everything {
    Everything {
        pk: "p".repeat(1024),
        rk: String::new(),
        s: String::new(),
        b: false,
        i: i32::MIN,
        l: i64::MIN,
        u: u32::MAX,
        w: u64::MAX,
        d: f64::NAN,
        tiny: i8::MIN,
        short: i16::MIN,
        byte: u8::MAX,
        word: u16::MAX,
        single: f32::MIN_POSITIVE,
        oword: Some(0),
        t: table_core::datetime::max_datetime(),
        g: Uuid::max(),
        x: Vec::new(),
        color: Color::Red,
        blob: Blob { tags: vec![], n: Some(i64::MAX) },
        os: Some(String::new()),
        ol: Some(i64::MAX),
        ot: Some(table_core::datetime::min_datetime()),
        oblob: None,
    }
}

#[test]
fn extremes_round_trip() {
    let e = extremes();
    let back = Everything::from_entity(e.to_entity().unwrap()).unwrap();
    assert_eq!(back, e);
}

#[test]
fn small_integers_are_int32_and_f32_a_double() {
    let entity = extremes().to_entity().unwrap();
    let edm = |name: &str| entity.properties.get(name).map(table_core::Value::edm_type);
    for name in ["tiny", "short", "byte", "word", "oword"] {
        assert_eq!(edm(name), Some(table_core::EdmType::Int32), "{name}");
    }
    assert_eq!(
        entity.properties.get("single"),
        Some(&table_core::Value::Double(f64::from(f32::MIN_POSITIVE)))
    );
}

#[test]
fn datetimes_keep_100ns_and_drop_finer() {
    let t = DateTime::from_timestamp(1, 123_456_789).unwrap();
    let e = Everything { t, ..extremes() };
    let back = Everything::from_entity(e.to_entity().unwrap()).unwrap();
    assert_eq!(back.t.timestamp_subsec_nanos(), 123_456_700);
}
