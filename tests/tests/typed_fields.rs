//! Field types whose EDM type differs from their Rust width, on every backend: `i8`, `i16`,
//! `u8` and `u16` fields are written as `Edm.Int32` and `f32` as `Edm.Double`, read back
//! exactly (extremes, NaN and the infinities included), filtered on, and a `u16` in a zero
//! padded key orders its rows. Rows another client wrote with a value the field cannot hold
//! are read errors naming the property, never wrapped or rounded values.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use conformance::scenario;
use conformance::target::Target;
use table_client::{EdmType, Entity, EntityKey, ErrorKind, TableEntity, TypedTable, Value, Violation};

/// A gauge per shard: the shard is a zero-padded `u16` partition key, every stored field is
/// one of the narrow types.
#[derive(Debug, Clone, TableEntity)]
#[table(partition_key = "{shard:05}", row_key = "{name}", rename_all = "PascalCase")]
struct Gauge {
    #[table(key_only)]
    shard: u16,
    #[table(key_only)]
    name: String,
    level: u8,
    offset: i8,
    count: u16,
    delta: i16,
    ratio: f32,
    peak: Option<u8>,
}

scenario!(
    narrow_fields_round_trip_as_int32_and_double,
    values_that_do_not_fit_a_narrow_field_are_read_errors
);

/// The gauges written: each type's extremes, an f32 that is not a short decimal, NaN and -inf.
fn gauges() -> [Gauge; 3] {
    [
        Gauge {
            shard: 0,
            name: "min".into(),
            level: u8::MIN,
            offset: i8::MIN,
            count: u16::MIN,
            delta: i16::MIN,
            ratio: f32::NEG_INFINITY,
            peak: None,
        },
        Gauge {
            shard: 7,
            name: "mid".into(),
            level: 200,
            offset: -1,
            count: 300,
            delta: 1,
            ratio: 0.1,
            peak: Some(255),
        },
        Gauge {
            shard: u16::MAX,
            name: "max".into(),
            level: u8::MAX,
            offset: i8::MAX,
            count: u16::MAX,
            delta: i16::MAX,
            ratio: f32::NAN,
            peak: Some(0),
        },
    ]
}

/// Gauges compared through `Debug`: NaN is not equal to itself, but prints the same.
fn shown(gauges: &[Gauge]) -> Vec<String> {
    gauges.iter().map(|g| format!("{g:?}")).collect()
}

async fn narrow_fields_round_trip_as_int32_and_double(t: Target) {
    let table = t.fresh_table().await;
    let typed: TypedTable<Gauge> = table.typed();
    let [min, mid, max] = gauges();
    for gauge in [&max, &min, &mid] {
        typed.insert(gauge).await.unwrap();
    }
    let key = Gauge::key(7, "mid").unwrap();
    assert_eq!(key, EntityKey::new("00007", "mid"));
    assert_eq!(shown(&[typed.get(&key).await.unwrap()]), shown(std::slice::from_ref(&mid)));
    // Zero padding keeps numeric order across partitions: 0, 7, 65535.
    let all = typed.query().table_scan().collect().await.unwrap();
    assert_eq!(shown(&all), shown(&[min.clone(), mid.clone(), max.clone()]));

    // On the wire the small integers are Int32 and the f32 a Double, widened exactly.
    let raw = table.get("00007", "mid").await.unwrap();
    for name in ["Level", "Offset", "Count", "Delta", "Peak"] {
        assert_eq!(raw.properties.get(name).map(Value::edm_type), Some(EdmType::Int32), "{name}");
    }
    assert_eq!(raw.properties.get("Level"), Some(&Value::Int32(200)));
    assert_eq!(raw.properties.get("Ratio"), Some(&Value::Double(f64::from(0.1f32))));
    let raw_min = table.get("00000", "min").await.unwrap();
    assert_eq!(raw_min.properties.get("Offset"), Some(&Value::Int32(-128)));
    assert!(!raw_min.properties.contains_key("Peak"), "None is not written");

    // Typed filters compare the stored Int32 and Double, and the key column the padded key.
    let high = typed.query().table_scan().filter(Gauge::LEVEL.ge(200)).collect().await.unwrap();
    assert_eq!(shown(&high), shown(&[mid.clone(), max.clone()]));
    let ratio = typed.query().table_scan().filter(Gauge::RATIO.eq(0.1)).collect().await.unwrap();
    assert_eq!(shown(&ratio), shown(std::slice::from_ref(&mid)));
    let negative = typed.query().table_scan().filter(Gauge::DELTA.lt(0)).collect().await.unwrap();
    assert_eq!(shown(&negative), shown(std::slice::from_ref(&min)));
    let from_7 = typed.query().table_scan().filter(Gauge::SHARD.ge(7)).collect().await.unwrap();
    assert_eq!(shown(&from_7), shown(&[mid, max]));
}

/// The property a typed read failed on, checking that it is a value error.
fn faulty_property(err: &table_client::Error) -> String {
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    match err.violation() {
        Some(Violation::Value { property, .. }) => property.clone(),
        other => panic!("expected a value error, got {other:?}: {err}"),
    }
}

async fn values_that_do_not_fit_a_narrow_field_are_read_errors(t: Target) {
    let table = t.fresh_table().await;
    let typed: TypedTable<Gauge> = table.typed();
    // What another client may write: Int64s that fit read as the narrow field.
    let row = |name: &str| {
        Entity::new("00001", name)
            .with("Level", Value::Int64(255))
            .with("Offset", -128)
            .with("Count", Value::Int64(65_535))
            .with("Delta", -32_768)
            .with("Ratio", 0.5)
    };
    table.insert(row("fits")).await.unwrap();
    let fits = typed.get(&EntityKey::new("00001", "fits")).await.unwrap();
    assert_eq!(
        (fits.level, fits.offset, fits.count, fits.delta, fits.ratio),
        (255, -128, 65_535, -32_768, 0.5)
    );

    for (name, property, value) in [
        ("level", "Level", Value::Int32(256)),
        ("offset", "Offset", Value::Int32(128)),
        ("count", "Count", Value::Int32(-1)),
        ("delta", "Delta", Value::Int64(40_000)),
        ("ratio", "Ratio", Value::Double(0.1)),
        ("peak", "Peak", Value::Int32(-1)),
    ] {
        table.insert(row(name).with(property, value)).await.unwrap();
        let err = typed.get(&EntityKey::new("00001", name)).await.unwrap_err();
        assert_eq!(faulty_property(&err), property);
    }
    // A shard key wider than a u16 is the key field's error.
    let wide = Entity::new("70000", "x").with("Level", 1).with("Offset", 1).with("Count", 1).with("Delta", 1);
    table.insert(wide.with("Ratio", 1.0)).await.unwrap();
    let err = typed.get(&EntityKey::new("70000", "x")).await.unwrap_err();
    assert!(err.to_string().contains("shard"), "{err}");
}
