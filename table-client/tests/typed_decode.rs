//! The typed fast paths (`TableEntity::from_parts`, over a reader's list or over the type's
//! property slots) against the generic one (`Entity`, then `from_entity`): on random, often
//! hostile, JSON entity bodies and query pages (read directly, and served by wiremock to a
//! `TypedTable` over HTTP), and on random rows of the embedded engine, all give the same value
//! or the same error.

// Helpers outside #[test] functions unwrap test vectors too.
#![allow(clippy::unwrap_used)]

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use table_client::auth::Credential;
use table_client::engine::Engine;
use table_client::wire::{
    JsonDecoder, decode_entity, decode_entity_as, decode_point_read, decode_query_page, decode_query_page_as,
    decode_query_page_each, read_entity, read_query_page,
};
use table_client::{
    ETag, Entity, EntityKey, PropertyValue, Result, RetryPolicy, TableClient, TableEntity,
    TableServiceClient, Value, Violation,
};
use table_core::QueryRequest;
use table_core::typed::{Decoder, PropertySlots};
use uuid::Uuid;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Note {
    text: String,
}

#[derive(Debug, Clone, PartialEq, PropertyValue)]
enum Color {
    Red,
    Green,
}

/// Every field type and role, the stored ones optional so that random entities often decode.
#[derive(Debug, Clone, TableEntity)]
#[table(partition_key = "{pk}", row_key = "r_{id}", entity_type = "Every", version = 2)]
struct Every {
    #[table(key_only)]
    pk: String,
    #[table(key_only)]
    id: u32,
    s: String,
    b: Option<bool>,
    i: Option<i32>,
    l: Option<i64>,
    u: Option<u32>,
    ul: Option<u64>,
    sb: Option<i8>,
    ss: Option<i16>,
    ub: Option<u8>,
    us: Option<u16>,
    d: Option<f64>,
    f: Option<f32>,
    t: Option<DateTime<Utc>>,
    g: Option<Uuid>,
    bin: Option<Vec<u8>>,
    color: Option<Color>,
    #[table(json)]
    note: Option<Note>,
    #[table(skip)]
    skipped: u8,
    #[table(timestamp)]
    ts: Option<DateTime<Utc>>,
    #[table(etag)]
    etag: Option<ETag>,
}

/// Every field type required, without a discriminator.
#[derive(Debug, Clone, TableEntity)]
#[table(partition_key = "{pk}", row_key = "{rk}")]
struct Strict {
    #[table(key_only)]
    pk: String,
    #[table(key_only)]
    rk: String,
    s: String,
    b: bool,
    i: i32,
    l: i64,
    u: u32,
    ul: u64,
    sb: i8,
    ss: i16,
    ub: u8,
    us: u16,
    d: f64,
    f: f32,
    t: DateTime<Utc>,
    g: Uuid,
    bin: Vec<u8>,
    color: Color,
    #[table(json)]
    note: Note,
}

#[derive(Debug, Clone, TableEntity)]
#[table(partition_key = "{pk}", row_key = "{rk}", entity_type = "Other")]
struct Other {
    #[table(key_only)]
    pk: String,
    #[table(key_only)]
    rk: String,
    s: Option<String>,
}

/// A heterogeneous table's rows, dispatched on `EntityType`.
#[derive(Debug, Clone, TableEntity)]
enum Any {
    Every(Every),
    Other(Other),
}

/// Stored property names: the fields' and two no type reads.
const NAMES: [&str; 20] = [
    "s",
    "b",
    "i",
    "l",
    "u",
    "ul",
    "sb",
    "ss",
    "ub",
    "us",
    "d",
    "f",
    "t",
    "g",
    "bin",
    "color",
    "note",
    "EntityType",
    "EntityVersion",
    "Extra",
];

/// An error's message and those of its sources: a reader's fault (which property, which
/// rule) is in the source of its "invalid ... JSON" error.
fn messages(error: &table_client::Error) -> String {
    let mut out = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        out = format!("{out}: {e}");
        source = e.source();
    }
    out
}

/// The same value or the same error. Values are compared through `Debug` (NaN is not equal to
/// itself); errors by kind and messages, which name the property and the rule.
fn agree<T: std::fmt::Debug>(generic: Result<T>, fast: Result<T>) -> std::result::Result<(), TestCaseError> {
    match (&generic, &fast) {
        (Ok(a), Ok(b)) => prop_assert_eq!(format!("{a:?}"), format!("{b:?}")),
        (Err(a), Err(b)) => {
            prop_assert_eq!(a.kind(), b.kind());
            prop_assert_eq!(messages(a), messages(b));
        }
        _ => prop_assert!(false, "generic {generic:?}, fast {fast:?}"),
    }
    Ok(())
}

/// A JSON value text, and the annotation it comes with (if any): mostly forms the service sends
/// for some type, with hostile ones (wrong annotations, wrong JSON types, extremes) among them.
fn member_value() -> impl Strategy<Value = (String, Option<&'static str>)> {
    let annotation = prop_oneof![
        4 => Just(None),
        1 => prop::sample::select(vec![
            "Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.Boolean", "Edm.DateTime",
            "Edm.Guid", "Edm.Binary", "Edm.Bogus",
        ])
        .prop_map(Some),
    ];
    let text = prop_oneof![
        "[a-zA-Z0-9 é\\\\\"]{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        any::<i32>().prop_map(|i| i.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<i64>().prop_map(|i| format!("\"{i}\"")),
        any::<u64>().prop_map(|u| u.to_string()),
        any::<i16>().prop_map(|i| i.to_string()),
        any::<f32>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::to_string(&f64::from(f)).unwrap()),
        any::<f64>()
            .prop_filter("finite", |d| d.is_finite())
            .prop_map(|d| serde_json::to_string(&d).unwrap()),
        prop::sample::select(vec![
            "true",
            "false",
            "null",
            "{}",
            "[1]",
            "1e999",
            "-0.0",
            "2147483648",
            "127",
            "128",
            "-129",
            "255",
            "256",
            "-1",
            "65535",
            "65536",
            "-32769",
            "\"65535\"",
            "0.1",
            "3.4028234663852886e38",
            "3.4028235677973366e38",
            "1.401298464324817e-45",
            "5e-324",
            "-2147483649",
            "18446744073709551615",
            "\"NaN\"",
            "\"Infinity\"",
            "\"-Infinity\"",
            "\"nan\"",
            "\"2020-01-02T03:04:05.1234567Z\"",
            "\"1601-01-01T00:00:00Z\"",
            "\"1600-12-31T23:59:59Z\"",
            "\"9999-12-31T23:59:59.9999999Z\"",
            "\"2020-13-01T00:00:00Z\"",
            "\"c9da6455-213d-42c9-9a79-3e9149a57833\"",
            "\"c9da6455213d42c99a793e9149a57833\"",
            "\"AQID\"",
            "\"AQI=\"",
            "\"!!\"",
            "\"Red\"",
            "\"Green\"",
            "\"Blue\"",
            "\"Every\"",
            "\"Other\"",
            "\"{\\\"text\\\":\\\"hi\\\"}\"",
            "\"{bad json\"",
            "\"null\"",
            "2",
            "1",
            "3",
        ])
        .prop_map(str::to_owned),
    ];
    (text, annotation)
}

/// The right form of each stored property of `Every` (so that decodes often succeed).
fn right_value(name: &str) -> (String, Option<&'static str>) {
    let (text, annotation) = match name {
        "s" => ("\"text\"", None),
        "b" => ("true", None),
        "i" => ("-7", None),
        "l" => ("\"-9223372036854775808\"", Some("Edm.Int64")),
        "u" => ("\"4294967295\"", Some("Edm.Int64")),
        "ul" => ("\"-1\"", Some("Edm.Int64")),
        "sb" => ("-128", None),
        "ss" => ("32767", Some("Edm.Int32")),
        "ub" => ("\"255\"", Some("Edm.Int64")),
        "us" => ("65535", None),
        "d" => ("\"NaN\"", Some("Edm.Double")),
        "f" => ("\"-Infinity\"", Some("Edm.Double")),
        "t" => ("\"2020-01-02T03:04:05.1234567Z\"", Some("Edm.DateTime")),
        "g" => ("\"c9da6455-213d-42c9-9a79-3e9149a57833\"", Some("Edm.Guid")),
        "bin" => ("\"AQID\"", Some("Edm.Binary")),
        "color" => ("\"Green\"", None),
        "note" => ("\"{\\\"text\\\":\\\"hi\\\"}\"", None),
        "EntityType" => ("\"Every\"", None),
        "EntityVersion" => ("2", None),
        _ => ("1.5", None),
    };
    (text.to_owned(), annotation)
}

/// One member of an entity object: `name`, its value text and annotation, and whether the
/// annotation comes after the value. A member without a value text is an annotation alone.
type Member = (String, String, Option<&'static str>, bool);

/// A change that makes a well-formed entity object hostile (or leaves it valid).
#[derive(Debug, Clone)]
enum Mutation {
    /// Another value and annotation for the member.
    Replace((String, Option<&'static str>)),
    Remove,
    /// The member twice.
    Repeat,
    /// A second annotation for the member, of another type or the same.
    AnnotateTwice(&'static str),
    /// The annotation after the value, or before it.
    MoveAnnotation,
}

fn mutation() -> impl Strategy<Value = (prop::sample::Index, Mutation)> {
    let kind = prop_oneof![
        4 => member_value().prop_map(Mutation::Replace),
        2 => Just(Mutation::Remove),
        1 => Just(Mutation::Repeat),
        1 => prop::sample::select(vec!["Edm.String", "Edm.Int64", "Edm.Double"]).prop_map(Mutation::AnnotateTwice),
        2 => Just(Mutation::MoveAnnotation),
    ];
    (any::<prop::sample::Index>(), kind)
}

/// An entity object: the right form of every member, then up to three mutations, shuffled.
fn entity_object() -> impl Strategy<Value = String> {
    let mut right: Vec<Member> = [
        ("PartitionKey", "\"p\""),
        ("RowKey", "\"r_7\""),
        ("Timestamp", "\"2021-05-06T07:08:09.5Z\""),
        ("odata.etag", "\"W/\\\"datetime'2021'\\\"\""),
    ]
    .into_iter()
    .map(|(name, text)| (name.to_owned(), text.to_owned(), None, false))
    .collect();
    right.extend(NAMES.iter().map(|name| {
        let (text, annotation) = right_value(name);
        ((*name).to_owned(), text, annotation, false)
    }));
    proptest::collection::vec(mutation(), 0..4)
        .prop_map(move |mutations| {
            let mut members = right.clone();
            for (at, change) in mutations {
                let i = at.index(members.len());
                match change {
                    Mutation::Replace((text, annotation)) => {
                        members[i].1 = text;
                        members[i].2 = annotation;
                    }
                    Mutation::Remove if members.len() > 1 => {
                        members.remove(i);
                    }
                    Mutation::Remove => {}
                    Mutation::Repeat => members.push(members[i].clone()),
                    Mutation::AnnotateTwice(edm) => {
                        members.push((members[i].0.clone(), String::new(), Some(edm), false));
                    }
                    Mutation::MoveAnnotation => members[i].3 = !members[i].3,
                }
            }
            members
        })
        .prop_shuffle()
        .prop_map(|members| {
            let mut out = Vec::new();
            for (name, text, annotation, after) in members {
                let value = format!("{}:{text}", serde_json::to_string(&name).unwrap());
                let note = annotation.map(|t| format!("\"{name}@odata.type\":\"{t}\""));
                if text.is_empty() {
                    out.extend(note);
                    continue;
                }
                match (note, after) {
                    (Some(note), true) => out.extend([value, note]),
                    (Some(note), false) => out.extend([note, value]),
                    (None, _) => out.push(value),
                }
            }
            format!("{{{}}}", out.join(","))
        })
}

fn check_entity<T: TableEntity + std::fmt::Debug>(
    body: &[u8],
    header: Option<&str>,
) -> std::result::Result<(), TestCaseError> {
    let generic = || decode_entity(body, header).and_then(T::from_entity);
    agree(generic(), read_entity(body, header, &PropertySlots::NONE).and_then(T::from_parts))?;
    agree(generic(), read_entity(body, header, T::PROPERTY_SLOTS).and_then(T::from_parts))?;
    agree(generic(), decode_entity_as::<T>(body, header))?;
    // A point read of the keys the body names (of any, when it cannot be read) reads alike.
    let (partition_key, row_key) =
        decode_entity(body, header).map(|e| (e.partition_key, e.row_key)).unwrap_or_default();
    agree(generic(), decode_point_read(body, header, &partition_key, &row_key, JsonDecoder::<T>::of()))
}

fn check_page<T: TableEntity + std::fmt::Debug>(body: &[u8]) -> std::result::Result<(), TestCaseError> {
    let generic = || {
        decode_query_page(body)
            .and_then(|page| page.into_iter().map(T::from_entity).collect::<Result<Vec<_>>>())
    };
    for slots in [&PropertySlots::NONE, T::PROPERTY_SLOTS] {
        agree(
            generic(),
            read_query_page(body, slots)
                .and_then(|page| page.into_iter().map(T::from_parts).collect::<Result<Vec<_>>>()),
        )?;
    }
    let each = decode_query_page_each(body, JsonDecoder::new(&PropertySlots::NONE, T::from_parts), 0);
    agree(generic(), each.and_then(|page| page.into_iter().collect::<Result<Vec<_>>>()))?;
    agree(generic(), decode_query_page_as::<T>(body))
}

/// A wiremock server answering point reads with one body and queries with another, and the
/// runtime it runs on (shared by every case: starting a server per case would dominate).
static SERVER: LazyLock<(tokio::runtime::Runtime, MockServer, TableClient)> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime.block_on(MockServer::start());
    let key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    let credential = Credential::shared_key("devstoreaccount1", key).unwrap();
    let client = TableServiceClient::builder()
        .endpoint(&format!("{}/devstoreaccount1", server.uri()))
        .credential(credential)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    (runtime, server, client.table("tbl"))
});

/// Serves `entity` to point reads and `page` to queries from now on.
async fn serve(server: &MockServer, entity: &str, page: &str) {
    server.reset().await;
    let json = |body: &str| {
        ResponseTemplate::new(200).insert_header("content-type", "application/json").set_body_string(body)
    };
    Mock::given(method("GET")).and(path_regex("PartitionKey")).respond_with(json(entity)).mount(server).await;
    Mock::given(method("GET"))
        .and(path("/devstoreaccount1/tbl"))
        .respond_with(json(page))
        .mount(server)
        .await;
}

/// A `TypedTable<T>`'s get and query over HTTP (slotted reads) against the untyped client's,
/// then `from_entity`.
async fn check_http<T: TableEntity + Send + 'static + std::fmt::Debug>(
    table: &TableClient,
) -> std::result::Result<(), TestCaseError> {
    let typed = table.typed::<T>();
    let generic = table.get("p", "r_7").await.and_then(T::from_entity);
    agree(generic, typed.get(&EntityKey::new("p", "r_7")).await)?;
    let generic = table.query().collect().await;
    let generic = generic.and_then(|page| page.into_iter().map(T::from_entity).collect::<Result<Vec<_>>>());
    agree(generic, typed.query().table_scan().collect().await)
}

/// A random stored value of any EDM type, extremes included.
fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec!["text", "Red", "Green", "Every", "Other", "{\"text\":\"a\"}", ""])
            .prop_map(Value::from),
        any::<i32>().prop_map(Value::Int32),
        prop::sample::select(vec![0, 1, 2, 3, -1, 127, 128, -129, 255, 256, 65_535, 65_536, -32_769])
            .prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        any::<f64>().prop_map(Value::Double),
        any::<f32>().prop_map(|f| Value::Double(f64::from(f))),
        any::<bool>().prop_map(Value::Boolean),
        (-11_644_473_600i64..253_402_300_800, 0u32..10_000_000)
            .prop_map(|(s, t)| Value::DateTime(DateTime::from_timestamp(s, t * 100).unwrap())),
        any::<u128>().prop_map(|g| Value::Guid(Uuid::from_u128(g))),
        proptest::collection::vec(any::<u8>(), 0..6).prop_map(Value::Binary),
    ]
}

/// A stored entity: each name absent, of its field's type, or of any type.
fn any_entity() -> impl Strategy<Value = Entity> {
    let right = |name: &str| match name {
        "s" | "note" => Value::from("{\"text\":\"a\"}"),
        "b" => Value::Boolean(false),
        "i" => Value::Int32(3),
        "l" | "u" | "ul" => Value::Int64(4),
        "sb" | "ss" | "ub" | "us" => Value::Int32(5),
        "d" => Value::Double(0.5),
        "f" => Value::Double(0.25),
        "t" => Value::DateTime(DateTime::from_timestamp(0, 0).unwrap()),
        "g" => Value::Guid(Uuid::nil()),
        "bin" => Value::Binary(vec![1]),
        "color" => Value::from("Red"),
        "EntityType" => Value::from("Every"),
        "EntityVersion" => Value::Int32(2),
        _ => Value::Int32(0),
    };
    let one = move |name: &'static str| {
        prop_oneof![40 => Just(Some(right(name))), 2 => any_value().prop_map(Some), 1 => Just(None)]
            .prop_map(move |v| v.map(|v| (name.to_owned(), v)))
    };
    let properties = NAMES.iter().map(|n| one(n)).collect::<Vec<_>>();
    (prop::sample::select(vec!["r_7", "r_7", "r_7", "r_x", "7"]), properties).prop_map(|(rk, properties)| {
        Entity {
            partition_key: "p".to_owned(),
            row_key: rk.to_owned(),
            properties: properties.into_iter().flatten().collect(),
            ..Entity::default()
        }
    })
}

fn check_engine<T: TableEntity + std::fmt::Debug>(
    engine: &Engine,
    key: (&str, &str),
    select: Option<&[String]>,
) -> std::result::Result<(), TestCaseError> {
    let request = QueryRequest { select: select.map(<[String]>::to_vec), ..QueryRequest::default() };
    // Without slots (the sorted list alone) and through `T`'s slots.
    for decode in [Decoder::new(&PropertySlots::NONE, T::from_parts), Decoder::<T>::of()] {
        agree(
            engine.get("tbl", key.0, key.1, select).and_then(T::from_entity),
            engine.get_as("tbl", key.0, key.1, select, decode),
        )?;
        agree(
            engine
                .query("tbl", &request)
                .and_then(|p| p.entities.into_iter().map(T::from_entity).collect::<Result<Vec<_>>>()),
            engine.query_as("tbl", &request, decode).map(|(items, _)| items),
        )?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn json_entities_decode_alike(object in entity_object(), header in prop::option::of(Just("W/\"datetime'x'\""))) {
        let body = object.as_bytes();
        check_entity::<Every>(body, header)?;
        check_entity::<Strict>(body, header)?;
        check_entity::<Other>(body, header)?;
        check_entity::<Any>(body, header)?;
    }

    #[test]
    fn json_pages_decode_alike(objects in proptest::collection::vec(entity_object(), 0..4)) {
        let body = format!("{{\"odata.metadata\":\"m\",\"value\":[{}]}}", objects.join(","));
        check_page::<Every>(body.as_bytes())?;
        check_page::<Strict>(body.as_bytes())?;
        check_page::<Any>(body.as_bytes())?;
    }

    #[test]
    fn http_reads_decode_alike(object in entity_object(), more in proptest::collection::vec(entity_object(), 0..3)) {
        let (runtime, server, table) = &*SERVER;
        let page = format!("{{\"odata.metadata\":\"m\",\"value\":[{}]}}", [object.clone()].into_iter().chain(more).collect::<Vec<_>>().join(","));
        runtime.block_on(async {
            serve(server, &object, &page).await;
            check_http::<Every>(table).await?;
            check_http::<Strict>(table).await?;
            check_http::<Other>(table).await?;
            check_http::<Any>(table).await
        })?;
    }

    #[test]
    fn engine_rows_decode_alike(entity in any_entity(), pick in any::<u32>()) {
        let engine = Engine::new();
        engine.create_table("tbl").unwrap();
        let key = (entity.partition_key.clone(), entity.row_key.clone());
        engine.insert("tbl", entity).unwrap();
        let key = (key.0.as_str(), key.1.as_str());
        let select: Vec<String> = NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| pick & (1 << i) != 0)
            .map(|(_, n)| (*n).to_owned())
            .collect();
        for select in [None, Some(select.as_slice())] {
            check_engine::<Every>(&engine, key, select)?;
            check_engine::<Strict>(&engine, key, select)?;
            check_engine::<Other>(&engine, key, select)?;
            check_engine::<Any>(&engine, key, select)?;
        }
    }
}

#[test]
fn a_well_formed_entity_decodes_directly_with_every_field() {
    let body = br#"{"odata.etag":"W/\"datetime'2021'\"","PartitionKey":"p","RowKey":"r_7",
        "Timestamp":"2021-05-06T07:08:09.5Z","EntityType":"Every","EntityVersion":2,"s":"text",
        "l@odata.type":"Edm.Int64","l":"-9223372036854775808","d":"Infinity","d@odata.type":"Edm.Double",
        "color":"Green","note":"{\"text\":\"hi\"}","Extra":1.5}"#;
    let every = Every::from_parts(read_entity(body, None, Every::PROPERTY_SLOTS).unwrap()).unwrap();
    assert_eq!((every.pk.as_str(), every.id, every.s.as_str()), ("p", 7, "text"));
    assert_eq!((every.l, every.d, every.color), (Some(i64::MIN), Some(f64::INFINITY), Some(Color::Green)));
    assert_eq!(every.note, Some(Note { text: "hi".into() }));
    assert_eq!(every.etag, Some(ETag::new("W/\"datetime'2021'\"")));
    assert!(every.ts.is_some() && every.t.is_none() && every.skipped == 0);
    assert!(matches!(
        Any::from_parts(read_entity(body, None, Any::PROPERTY_SLOTS).unwrap()).unwrap(),
        Any::Every(_)
    ));
}

#[test]
fn small_integers_and_f32_read_what_fits_and_refuse_the_rest_on_every_reader() {
    let body = |members: &str| {
        format!(
            r#"{{"PartitionKey":"p","RowKey":"r_7","EntityType":"Every","EntityVersion":2,"s":"t",{members}}}"#
        )
    };
    let fast = |members| decode_entity_as::<Every>(body(members).as_bytes(), None);
    let generic = |members| decode_entity(body(members).as_bytes(), None).and_then(Every::from_entity);
    let read = fast(r#""ub":"255","ub@odata.type":"Edm.Int64","sb":-128,"ss":"-3","ss@odata.type":"Edm.Int64","us":65535,"f":0.25"#).unwrap();
    assert_eq!(
        (read.sb, read.ss, read.ub, read.us, read.f),
        (Some(-128), Some(-3), Some(255), Some(65_535), Some(0.25))
    );
    for (members, fault) in [
        (r#""ub":256"#, "256 is out of range for u8"),
        (r#""ub":-1"#, "-1 is out of range for u8"),
        (r#""sb":128"#, "128 is out of range for i8"),
        (r#""ss":"-32769","ss@odata.type":"Edm.Int64""#, "-32769 is out of range for i16"),
        (r#""us":65536"#, "65536 is out of range for u16"),
        (r#""f":0.1"#, "0.1 is not exactly representable as f32"),
        (r#""f":1e300"#, "1e300 is not exactly representable as f32"),
        (r#""us":1.5"#, "expected Edm.Int32, found Edm.Double"),
    ] {
        let message = messages(&fast(members).unwrap_err());
        assert!(message.contains(fault), "{members}: {message}");
        assert_eq!(messages(&generic(members).unwrap_err()), message);
    }
}

#[test]
fn a_derived_type_has_a_slot_for_each_property_it_reads_in_name_order() {
    let slots = Every::PROPERTY_SLOTS;
    let mut names: Vec<&str> = NAMES.iter().copied().filter(|n| *n != "Extra").collect();
    names.sort_unstable();
    assert_eq!(slots.names, names.as_slice());
    for (i, name) in slots.names.iter().enumerate() {
        assert_eq!((slots.slot)(name), Some(i), "{name}");
    }
    assert_eq!((slots.slot)("Extra"), None);
    assert_eq!(Other::PROPERTY_SLOTS.names, ["EntityType", "s"]);
    // An enum reads through its variants' `from_parts`, over a list without slots.
    assert!(Any::PROPERTY_SLOTS.names.is_empty());
}

#[test]
fn slotted_faults_are_reported_in_name_order_with_the_others() {
    // `Extra` (no slot) sorts before `i` (a slot of `Every`): its fault is the one reported,
    // as by the generic reader.
    let body = br#"{"PartitionKey":"p","RowKey":"r_7","i":"x","i@odata.type":"Edm.Int32","Extra":"y","Extra@odata.type":"Edm.Guid"}"#;
    let generic = messages(&decode_entity(body, None).unwrap_err());
    assert!(generic.contains("property \"Extra\": \"y\" is not a hyphenated Edm.Guid"), "{generic}");
    assert_eq!(messages(&decode_entity_as::<Every>(body, None).unwrap_err()), generic);
    let twice = br#"{"PartitionKey":"p","s":"a","s":"b","Extra":1,"Extra":2}"#;
    let generic = messages(&decode_entity(twice, None).unwrap_err());
    assert!(generic.contains("\"Extra\" appears twice"), "{generic}");
    assert_eq!(messages(&decode_entity_as::<Every>(twice, None).unwrap_err()), generic);
}

#[test]
fn the_first_faulty_field_in_field_order_is_the_error_on_every_reader() {
    // Fields are read in property name order (`b` before `s`), the order rows store them in,
    // but `s` is declared first: its fault is the one reported, by every reader.
    let strict = Strict {
        pk: "p".into(),
        rk: "r".into(),
        s: "text".into(),
        b: true,
        i: 1,
        l: 2,
        u: 3,
        ul: 4,
        sb: -5,
        ss: 6,
        ub: 7,
        us: 8,
        d: 0.5,
        f: 0.25,
        t: DateTime::from_timestamp(0, 0).unwrap(),
        g: Uuid::nil(),
        bin: vec![1],
        color: Color::Red,
        note: Note { text: "n".into() },
    };
    let entity = strict.to_entity().unwrap().with("s", 1).with("b", 2);
    let engine = Engine::new();
    engine.create_table("tbl").unwrap();
    engine.insert("tbl", entity.clone()).unwrap();
    let faulty_property = |read: Result<Strict>| match read.unwrap_err().violation() {
        Some(Violation::Value { property, .. }) => property.clone(),
        other => panic!("not a value error: {other:?}"),
    };
    assert_eq!(faulty_property(Strict::from_entity(entity)), "s");
    assert_eq!(faulty_property(engine.get_as("tbl", "p", "r", None, Decoder::<Strict>::of())), "s");
    let page = engine
        .query_as("tbl", &QueryRequest::default(), Decoder::<Strict>::of())
        .map(|(mut rows, _)| rows.remove(0));
    assert_eq!(faulty_property(page), "s");
}

#[test]
fn a_key_only_string_that_is_its_whole_key_is_the_read_key_itself() {
    let entity = Entity::new("p", "r").with("EntityType", "Other");
    let (pk_at, rk_at) = (entity.partition_key.as_ptr(), entity.row_key.as_ptr());
    let other = Other::from_entity(entity).unwrap();
    assert_eq!((other.pk.as_str(), other.rk.as_str()), ("p", "r"));
    assert_eq!((other.pk.as_ptr(), other.rk.as_ptr()), (pk_at, rk_at), "the keys, not copies");
}
