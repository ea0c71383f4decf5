//! Interop with the official Python SDK (`azure-data-tables`) through Azurite: entities of every
//! EDM type, extremes included, written by one side are read back by the other with the same
//! values and the same types, typed (`#[derive(TableEntity)]`) and untyped.
//!
//! These need the service, so they run on Azurite only; where Azurite or Python cannot run the
//! harness prints a loud banner and the test returns (`REQUIRE_AZURITE=1` / `REQUIRE_PYTHON=1`
//! turn that into a failure).
//!
//! Known deviation: `-0.0` written by our client comes back from Azurite as `0.0` (JavaScript's
//! JSON drops the sign); [`negative_zero_loses_its_sign_on_azurite`] records it.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use conformance::azurite::{Azurite, azurite, unique_table_name};
use conformance::python::{Python, python};
use table_client::datetime::parse_datetime;
use table_client::{ETag, EdmType, Entity, EntityKey, TableClient, TableEntity, TableServiceClient, Value};
use uuid::Uuid;

/// One property of every EDM type, named like the `typed_*` rows of `tests/python/interop.py`.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{partition}", row_key = "{row}")]
struct AllTypes {
    #[table(key_only)]
    partition: String,
    #[table(key_only)]
    row: String,
    i32_value: i32,
    i64_value: i64,
    f64_value: f64,
    bool_value: bool,
    string_value: String,
    datetime_value: DateTime<Utc>,
    guid_value: Uuid,
    binary_value: Vec<u8>,
    opt_i64: Option<i64>,
    opt_string: Option<String>,
    opt_datetime: Option<DateTime<Utc>>,
    #[table(timestamp)]
    timestamp: Option<DateTime<Utc>>,
    #[table(etag)]
    etag: Option<ETag>,
}

impl AllTypes {
    /// The base row of `interop.py`'s `typed_row()`.
    fn base(partition: &str, row: &str) -> AllTypes {
        AllTypes {
            partition: partition.into(),
            row: row.into(),
            i32_value: 1,
            i64_value: 1,
            f64_value: 0.5,
            bool_value: true,
            string_value: "typed".into(),
            datetime_value: at("2020-01-02T03:04:05.1234567Z"),
            guid_value: Uuid::parse_str("68260b3f-beab-45e2-b900-33e2b442e724").unwrap(),
            binary_value: vec![0, 1, 255],
            opt_i64: None,
            opt_string: None,
            opt_datetime: None,
            timestamp: None,
            etag: None,
        }
    }

    /// The value fields only (keys, Timestamp and ETag cleared), with the double as its bits
    /// and every NaN as one NaN, so `==` is exact: `-0.0 != 0.0`, `NaN == NaN`.
    fn exact(&self) -> (AllTypes, u64) {
        let bits = if self.f64_value.is_nan() { f64::NAN.to_bits() } else { self.f64_value.to_bits() };
        let values = AllTypes { f64_value: 0.0, timestamp: None, etag: None, ..self.clone() };
        (values, bits)
    }
}

fn at(s: &str) -> DateTime<Utc> {
    parse_datetime(s).unwrap()
}

/// The `typed_*` rows of `interop.py`, built independently here, in RowKey order.
fn typed_rows(partition: &str) -> Vec<AllTypes> {
    let base = |row| AllTypes::base(partition, row);
    let with_double = |row, f64_value| AllTypes { f64_value, ..base(row) };
    vec![
        with_double("typed_inf", f64::INFINITY),
        AllTypes {
            i32_value: i32::MAX,
            i64_value: i64::MAX,
            f64_value: f64::MAX,
            string_value: "é € 中文 😀 it's \"quoted\"".into(),
            datetime_value: at("9999-12-31T23:59:59.9999999Z"),
            guid_value: Uuid::max(),
            binary_value: (0..=255).collect(),
            opt_i64: Some(1 << 31),
            opt_string: Some("present".into()),
            opt_datetime: Some(at("2020-01-02T03:04:05.123456Z")),
            ..base("typed_max")
        },
        AllTypes {
            i32_value: i32::MIN,
            i64_value: i64::MIN,
            f64_value: f64::MIN,
            bool_value: false,
            string_value: String::new(),
            datetime_value: at("1601-01-01T00:00:00Z"),
            guid_value: Uuid::nil(),
            binary_value: Vec::new(),
            ..base("typed_min")
        },
        with_double("typed_nan", f64::NAN),
        with_double("typed_neg_inf", f64::NEG_INFINITY),
        AllTypes { i32_value: 0, i64_value: 0, ..with_double("typed_subnormal", 5e-324) },
    ]
}

/// Azurite and the Python SDK, or `None` after the harness's banner explained the skip.
fn peers() -> Option<(&'static Azurite, &'static Python)> {
    Some((azurite()?, python()?))
}

/// A fresh table on Azurite through our client (default SharedKey credential).
async fn our_table(azurite: &Azurite, prefix: &str) -> TableClient {
    let client = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    client.create_table(&unique_table_name(prefix)).await.unwrap()
}

/// Asserts two values are the same EDM type and the same value bit for bit (doubles by their
/// bits, any NaN equal to any NaN).
fn assert_identical(expected: &Value, actual: &Value, context: &str) {
    assert_eq!(expected.edm_type(), actual.edm_type(), "{context}: {expected:?} vs {actual:?}");
    match (expected, actual) {
        (Value::Double(e), Value::Double(a)) => assert!(
            e.to_bits() == a.to_bits() || (e.is_nan() && a.is_nan()),
            "{context}: {e:e} ({:#x}) vs {a:e} ({:#x})",
            e.to_bits(),
            a.to_bits()
        ),
        _ => assert_eq!(expected, actual, "{context}"),
    }
}

/// Asserts both lists hold the same keys with identical custom properties (order, Timestamp
/// and ETag aside).
fn assert_same_entities(expected: &[Entity], actual: &[Entity]) {
    let by_key = |entities: &[Entity]| -> BTreeMap<EntityKey, Entity> {
        entities.iter().map(|e| (e.key(), e.clone())).collect()
    };
    let (expected, actual) = (by_key(expected), by_key(actual));
    assert_eq!(expected.keys().collect::<Vec<_>>(), actual.keys().collect::<Vec<_>>());
    for (key, e) in &expected {
        let a = &actual[key];
        assert_eq!(
            e.properties.keys().collect::<Vec<_>>(),
            a.properties.keys().collect::<Vec<_>>(),
            "property names of {key:?}"
        );
        for (name, value) in &e.properties {
            assert_identical(value, &a.properties[name], &format!("{key:?} `{name}`"));
        }
    }
}

fn assert_same_typed(expected: &[AllTypes], actual: &[AllTypes]) {
    assert_eq!(expected.len(), actual.len(), "{actual:#?}");
    for (e, a) in expected.iter().zip(actual) {
        assert_eq!(e.exact(), a.exact(), "row {}", e.row);
    }
}

/// Every EDM type the corpus must cover.
const EVERY_EDM_TYPE: [EdmType; 8] = [
    EdmType::String,
    EdmType::Boolean,
    EdmType::Int32,
    EdmType::Int64,
    EdmType::Double,
    EdmType::DateTime,
    EdmType::Guid,
    EdmType::Binary,
];

fn assert_covers_every_edm_type(entities: &[Entity]) {
    for edm in EVERY_EDM_TYPE {
        assert!(
            entities.iter().any(|e| e.properties.values().any(|v| v.edm_type() == edm)),
            "the corpus has no {edm:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_written_by_the_python_sdk_read_back_exactly_untyped_and_typed() {
    let Some((azurite, python)) = peers() else {
        return;
    };
    let table = our_table(azurite, "pyw").await;
    let partition = "py 'w' é";
    let cs = azurite.connection_string.clone();
    let name = table.name().to_owned();
    let written = tokio::task::spawn_blocking(move || python.interop_write(&cs, &name, partition))
        .await
        .unwrap()
        .unwrap();
    assert_covers_every_edm_type(&written);

    // Untyped: the whole partition, every EDM type and extreme, exactly as the SDK wrote it;
    // and each row's ETag is the one the SDK got from its write.
    let read = table.query().partition(partition).collect().await.unwrap();
    assert_same_entities(&written, &read);
    for w in &written {
        let got = table.get(&w.partition_key, &w.row_key).await.unwrap();
        assert_same_entities(std::slice::from_ref(w), std::slice::from_ref(&got));
        assert_eq!(w.etag, got.etag, "ETag of row {}", w.row_key);
        assert!(got.timestamp.is_some());
    }

    // Typed: the `typed_*` rows as `AllTypes`, by query and by point read, equal to the values
    // written down independently in this file and to the SDK's own report.
    let expected = typed_rows(partition);
    let typed = table.typed::<AllTypes>();
    let queried = typed.query().partition(partition).row_key_prefix("typed_").collect().await.unwrap();
    assert_same_typed(&expected, &queried);
    let reported: Vec<AllTypes> = written
        .iter()
        .filter(|e| e.row_key.starts_with("typed_"))
        .map(|e| AllTypes::from_entity(e.clone()).unwrap())
        .collect();
    assert_same_typed(&expected, &reported);
    for (e, q) in expected.iter().zip(&queried) {
        let key = AllTypes::key(partition, &e.row).unwrap();
        let got = typed.get(&key).await.unwrap();
        assert_eq!(got.exact(), e.exact(), "row {}", e.row);
        assert!(got.timestamp.is_some() && got.etag.is_some());
        assert_eq!((&got.timestamp, &got.etag), (&q.timestamp, &q.etag));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entities_written_by_our_client_are_read_exactly_by_the_python_sdk() {
    let Some((azurite, python)) = peers() else {
        return;
    };
    let table = our_table(azurite, "rsw").await;

    // Typed: every field type at its extremes.
    let typed_partition = "rs typed";
    let rows = typed_rows(typed_partition);
    let typed = table.typed::<AllTypes>();
    let mut etags = BTreeMap::new();
    for row in &rows {
        etags.insert(row.row.clone(), typed.insert(row).await.unwrap());
    }
    // Untyped: the SDK's own corpus (every EDM type and extreme, the tricky row key, 64 KiB
    // binary, 32000-character string), written again by our client into another partition.
    let corpus_partition = "rs 'corpus' é";
    let cs = azurite.connection_string.clone();
    let name = table.name().to_owned();
    let corpus = tokio::task::spawn_blocking(move || python.interop_write(&cs, &name, "python source"))
        .await
        .unwrap()
        .unwrap();
    let corpus: Vec<Entity> = corpus
        .into_iter()
        .map(|mut e| {
            e.partition_key = corpus_partition.to_owned();
            e.etag = None;
            e
        })
        .collect();
    for e in &corpus {
        table.insert(e.clone()).await.unwrap();
    }

    let cs = azurite.connection_string.clone();
    let name = table.name().to_owned();
    let (typed_read, corpus_read) = tokio::task::spawn_blocking(move || {
        (
            python.interop_read(&cs, &name, typed_partition).unwrap(),
            python.interop_read(&cs, &name, corpus_partition).unwrap(),
        )
    })
    .await
    .unwrap();

    let ours: Vec<Entity> = rows.iter().map(|r| r.to_entity().unwrap()).collect();
    assert_covers_every_edm_type(&ours);
    assert_same_entities(&ours, &typed_read);
    for r in &typed_read {
        assert_eq!(r.etag.as_ref(), etags.get(&r.row_key), "row {}", r.row_key);
    }
    // And the SDK's view, read as our typed struct, is the struct we wrote.
    let back: Vec<AllTypes> = typed_read.into_iter().map(|e| AllTypes::from_entity(e).unwrap()).collect();
    assert_same_typed(&rows, &back);

    assert_covers_every_edm_type(&corpus);
    assert_same_entities(&corpus, &corpus_read);
}

/// Azurite deviation (protocol doc section 10): a `-0.0` we send comes back as `0.0` to both
/// clients, since Azurite's JavaScript JSON drops the sign. The real service keeps the sign;
/// this records the deviation so a fixed Azurite makes the test fail and be updated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_zero_loses_its_sign_on_azurite() {
    let Some((azurite, python)) = peers() else {
        return;
    };
    let table = our_table(azurite, "negzero").await;
    let row = AllTypes { f64_value: -0.0, ..AllTypes::base("z", "negative_zero") };
    table.typed::<AllTypes>().insert(&row).await.unwrap();
    let ours = table.get("z", "negative_zero").await.unwrap();
    let cs = azurite.connection_string.clone();
    let name = table.name().to_owned();
    let theirs =
        tokio::task::spawn_blocking(move || python.interop_read(&cs, &name, "z")).await.unwrap().unwrap();
    for (who, entity) in [("our client", &ours), ("the Python SDK", &theirs[0])] {
        assert_identical(
            &Value::Double(0.0),
            &entity.properties["f64_value"],
            &format!("-0.0 as read by {who}"),
        );
    }
}
