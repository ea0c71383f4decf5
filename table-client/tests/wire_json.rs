//! JSON entity bodies: protocol doc section 4.

// Helpers outside #[test] functions unwrap test vectors too.
#![allow(clippy::unwrap_used)]

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use table_client::wire::{
    decode_entity, decode_query_page, decode_table, decode_table_list, encode_create_table, encode_entity,
};
use table_core::datetime::parse_datetime;
use table_core::{ETag, Entity, ErrorKind, Value};
use uuid::Uuid;

fn at(s: &str) -> DateTime<Utc> {
    parse_datetime(s).unwrap()
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn encodes_every_type_with_the_right_annotation() {
    let e = Entity::new("p", "r")
        .with("s", "text")
        .with("i", 5)
        .with("b", true)
        .with("l", 1_099_511_627_776i64)
        .with("d", 2.0)
        .with("t", at("2020-01-02T03:04:05.1234567Z"))
        .with("g", Uuid::parse_str("68260b3f-beab-45e2-b900-33e2b442e724").unwrap())
        .with("x", vec![1u8, 2]);
    let body = encode_entity(&e);
    assert_eq!(
        json(&body),
        json(
            r#"{"PartitionKey":"p","RowKey":"r","s":"text","i":5,"b":true,
            "l":"1099511627776","l@odata.type":"Edm.Int64",
            "d":2.0,"d@odata.type":"Edm.Double",
            "t":"2020-01-02T03:04:05.1234567Z","t@odata.type":"Edm.DateTime",
            "g":"68260b3f-beab-45e2-b900-33e2b442e724","g@odata.type":"Edm.Guid",
            "x":"AQI=","x@odata.type":"Edm.Binary"}"#
        )
    );
    // Keys first, then properties in name order, each annotation just before its value.
    assert!(
        body.starts_with(r#"{"PartitionKey":"p","RowKey":"r","b":true,"d@odata.type":"Edm.Double","d":2.0,"#),
        "{body}"
    );
}

#[test]
fn datetimes_are_written_with_seven_digits() {
    let body = encode_entity(&Entity::new("p", "r").with("t", at("2020-01-02T03:04:05Z")));
    assert!(body.contains(r#""t":"2020-01-02T03:04:05.0000000Z""#), "{body}");
}

#[test]
fn special_doubles_are_annotated_strings() {
    let e = Entity::new("p", "r").with("n", f64::NAN).with("pi", f64::INFINITY).with("ni", f64::NEG_INFINITY);
    assert_eq!(
        json(&encode_entity(&e)),
        json(
            r#"{"PartitionKey":"p","RowKey":"r","n":"NaN","n@odata.type":"Edm.Double",
            "pi":"Infinity","pi@odata.type":"Edm.Double","ni":"-Infinity","ni@odata.type":"Edm.Double"}"#
        )
    );
}

#[test]
fn timestamp_etag_and_reserved_names_are_never_written() {
    let mut e = Entity::new("p", "r").with("Timestamp", "x").with("a", 1);
    e.timestamp = Some(at("2020-01-01T00:00:00Z"));
    e.etag = Some(ETag::new("W/\"x\""));
    assert_eq!(encode_entity(&e), r#"{"PartitionKey":"p","RowKey":"r","a":1}"#);
}

#[test]
fn strings_are_escaped() {
    let body = encode_entity(&Entity::new("a\"b", "r\n").with("s", "\u{1}é"));
    assert_eq!(body, "{\"PartitionKey\":\"a\\\"b\",\"RowKey\":\"r\\n\",\"s\":\"\\u0001é\"}");
}

#[test]
fn create_table_body() {
    assert_eq!(encode_create_table("t1"), r#"{"TableName":"t1"}"#);
}

#[test]
fn every_type_round_trips() {
    let e = Entity::new("p'é", "r")
        .with("s", "")
        .with("i", i32::MIN)
        .with("b", false)
        .with("l", i64::MIN)
        .with("d", 0.1)
        .with("dz", -0.0)
        .with("big", 1e300)
        .with("n", f64::NAN)
        .with("t", at("1601-01-01T00:00:00Z"))
        .with("g", Uuid::new_v4())
        .with("x", Vec::<u8>::new());
    let back = decode_entity(encode_entity(&e).as_bytes(), None).unwrap();
    assert_eq!(back, e);
}

#[test]
fn decodes_nometadata_with_inference() {
    let body = br#"{"PartitionKey":"p","RowKey":"1","s":"x","i":5,"big":2147483648,"neg":-3,
        "d":3.0,"e":1e3,"b":true,"Timestamp":"2026-11-22T04:28:30.7063148Z"}"#;
    let e = decode_entity(body, None).unwrap();
    assert_eq!((e.partition_key.as_str(), e.row_key.as_str()), ("p", "1"));
    assert_eq!(e.get("s"), Some(&Value::String("x".into())));
    assert_eq!(e.get("i"), Some(&Value::Int32(5)));
    assert_eq!(e.get("big"), Some(&Value::Int64(2_147_483_648)));
    assert_eq!(e.get("neg"), Some(&Value::Int32(-3)));
    assert_eq!(e.get("d"), Some(&Value::Double(3.0)));
    assert_eq!(e.get("e"), Some(&Value::Double(1000.0)));
    assert_eq!(e.get("b"), Some(&Value::Boolean(true)));
    assert_eq!(e.timestamp, Some(at("2026-11-22T04:28:30.7063148Z")));
    assert_eq!(e.properties.len(), 7);
    // Rebuilt from the Timestamp text as received, like the Python SDK.
    assert_eq!(e.etag, Some(ETag::new("W/\"datetime'2026-11-22T04%3A28%3A30.7063148Z'\"")));
}

#[test]
fn etag_is_rebuilt_from_the_timestamp_text_verbatim() {
    // The service drops trailing zeros; the rebuilt ETag must keep the exact digits.
    let e = decode_entity(
        br#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2014-01-31T10:14:18.918655Z"}"#,
        None,
    )
    .unwrap();
    assert_eq!(e.etag.unwrap().as_str(), "W/\"datetime'2014-01-31T10%3A14%3A18.918655Z'\"");
}

#[test]
fn etag_header_is_used_without_odata_etag() {
    let body = br#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2020-01-01T00:00:00Z"}"#;
    let e = decode_entity(body, Some("W/\"datetime'2020-01-01T00%3A00%3A00.1Z'\"")).unwrap();
    assert_eq!(e.etag.unwrap().as_str(), "W/\"datetime'2020-01-01T00%3A00%3A00.1Z'\"");
    let e = decode_entity(br#"{"PartitionKey":"p","RowKey":"r"}"#, None).unwrap();
    assert_eq!(e.etag, None);
}

#[test]
fn decodes_minimalmetadata_with_annotations_after_values() {
    let body = br#"{"odata.metadata":"http://127.0.0.1:10002/devstoreaccount1/$metadata#t/@Element",
        "odata.etag":"W/\"datetime'2026-11-22T04%3A28%3A30.7063148Z'\"",
        "PartitionKey":"p","RowKey":"1",
        "l":"1099511627776","l@odata.type":"Edm.Int64",
        "t":"2020-01-02T03:04:05Z","t@odata.type":"Edm.DateTime",
        "g":"68260B3F-BEAB-45E2-B900-33E2B442E724","g@odata.type":"Edm.Guid",
        "x":"AQI=","x@odata.type":"Edm.Binary",
        "n":"NaN","n@odata.type":"Edm.Double",
        "ni":"-Infinity","ni@odata.type":"Edm.Double",
        "pi":"Infinity","pi@odata.type":"Edm.Double",
        "Timestamp":"2026-11-22T04:28:30.7063148Z"}"#;
    let e = decode_entity(body, Some("W/\"ignored\"")).unwrap();
    assert_eq!(e.get("l"), Some(&Value::Int64(1_099_511_627_776)));
    assert_eq!(e.get("t"), Some(&Value::DateTime(at("2020-01-02T03:04:05Z"))));
    assert_eq!(
        e.get("g"),
        Some(&Value::Guid(Uuid::parse_str("68260b3f-beab-45e2-b900-33e2b442e724").unwrap()))
    );
    assert_eq!(e.get("x"), Some(&Value::Binary(vec![1, 2])));
    assert_eq!(e.get("n"), Some(&Value::Double(f64::NAN)));
    assert_eq!(e.get("ni"), Some(&Value::Double(f64::NEG_INFINITY)));
    assert_eq!(e.get("pi"), Some(&Value::Double(f64::INFINITY)));
    assert_eq!(e.etag.unwrap().as_str(), "W/\"datetime'2026-11-22T04%3A28%3A30.7063148Z'\"");
    assert_eq!(e.properties.len(), 7);
}

#[test]
fn decodes_fullmetadata_with_annotations_before_values() {
    let body = br#"{"odata.type":"devstoreaccount1.t","odata.id":"http://h/t(PartitionKey='p',RowKey='1')",
        "odata.etag":"W/\"datetime'2026-11-22T04%3A28%3A30.7063148Z'\"","odata.editLink":"t(PartitionKey='p',RowKey='1')",
        "PartitionKey":"p","RowKey":"1","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2026-11-22T04:28:30.7063148",
        "l@odata.type":"Edm.Int64","l":"-5","PartitionKey@odata.type":"Edm.String","s@odata.type":"Edm.String","s":"v",
        "i@odata.type":"Edm.Int32","i":7,"d@odata.type":"Edm.Double","d":4}"#;
    let e = decode_entity(body, None).unwrap();
    assert_eq!(e.timestamp, Some(at("2026-11-22T04:28:30.7063148Z")));
    assert_eq!(e.get("l"), Some(&Value::Int64(-5)));
    assert_eq!(e.get("s"), Some(&Value::String("v".into())));
    assert_eq!(e.get("i"), Some(&Value::Int32(7)));
    assert_eq!(e.get("d"), Some(&Value::Double(4.0)));
    assert_eq!(e.properties.len(), 4);
}

#[test]
fn select_nulls_and_missing_keys_mean_absent() {
    let e = decode_entity(br#"{"a":null,"b":1,"b2@odata.type":"Edm.Int64","b2":null}"#, None).unwrap();
    assert_eq!(e.partition_key, "");
    assert_eq!(e.row_key, "");
    assert_eq!(e.properties.len(), 1);
    assert_eq!(e.get("b"), Some(&Value::Int32(1)));
}

#[test]
fn timestamp_accepts_zero_to_seven_digits() {
    for t in [
        "2020-01-02T03:04:05Z",
        "2020-01-02T03:04:05.1Z",
        "2020-01-02T03:04:05.000000Z",
        "2020-01-02T03:04:05.1234567",
    ] {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"r","Timestamp":"{t}"}}"#);
        assert!(decode_entity(body.as_bytes(), None).unwrap().timestamp.is_some(), "{t}");
    }
}

fn decode_error_of(body: &str) -> table_core::Error {
    let err = decode_entity(body.as_bytes(), None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{body}: {err:?}");
    err
}

#[test]
fn hostile_entities_are_decode_errors() {
    for body in [
        r#"{"PartitionKey":"p","RowKey":"r","a":{"b":1}}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":[1]}"#,
        r#"{"PartitionKey":1,"RowKey":"r"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","g":"nope","g@odata.type":"Edm.Guid"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","x":"!!","x@odata.type":"Edm.Binary"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","t":"2020-13-01T00:00:00Z","t@odata.type":"Edm.DateTime"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","l":"12a","l@odata.type":"Edm.Int64"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","l":"9223372036854775808","l@odata.type":"Edm.Int64"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","i":2147483648,"i@odata.type":"Edm.Int32"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","d":"INF","d@odata.type":"Edm.Double"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":1,"a@odata.type":"Edm.Foo"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":1,"a@odata.type":5}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":"1","a@odata.type":"Edm.Boolean"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":1,"a":2}"#,
        r#"{"PartitionKey":"p","RowKey":"r","u":18446744073709551615}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"yesterday"}"#,
        r#"{"PartitionKey":"p","RowKey":"r"} trailing"#,
        r#"[1,2]"#,
        r#"{"PartitionKey":"p""#,
        "",
    ] {
        decode_error_of(body);
    }
}

#[test]
fn annotation_values_are_read_unescaped_and_refused_unless_a_string_naming_a_type() {
    let e =
        decode_entity(br#"{"PartitionKey":"p","RowKey":"r","a":"5","a@odata.type":"Edm\u002eInt64"}"#, None);
    assert_eq!(e.unwrap().get("a"), Some(&Value::Int64(5)));
    for body in [
        &br#"{"PartitionKey":"p","RowKey":"r","a":1,"a@odata.type":null}"#[..],
        br#"{"PartitionKey":"p","RowKey":"r","a":1,"a@odata.type":true}"#,
        br#"{"PartitionKey":"p","RowKey":"r","a":1,"a@odata.type":["Edm.Int32"]}"#,
        br#"{"PartitionKey":"p","RowKey":"r","a":1,"a@odata.type":{"t":"Edm.Int32"}}"#,
        br#"{"PartitionKey":"p","RowKey":"r","a":1,"a@odata.type":"Edm.Int32\u0000"}"#,
        b"{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"a\":1,\"a@odata.type\":\"Edm.\xff\"}",
    ] {
        let err = decode_entity(body, None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decode, "{}: {err:?}", String::from_utf8_lossy(body));
    }
}

#[test]
fn decode_errors_name_the_property_in_their_source() {
    let err = decode_error_of(r#"{"PartitionKey":"p","RowKey":"r","g":"nope","g@odata.type":"Edm.Guid"}"#);
    let source = std::error::Error::source(&err).unwrap().to_string();
    assert!(source.contains("\"g\"") && source.contains("Edm.Guid"), "{source}");
}

#[test]
fn query_pages() {
    let body = br#"{"odata.metadata":"http://h/$metadata#t","value":[
        {"odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"1","a":1},
        {"odata.etag":"W/\"2\"","PartitionKey":"p","RowKey":"2","a":"x"}],"extra":{"ignored":[1]}}"#;
    let page = decode_query_page(body).unwrap();
    assert_eq!(page.len(), 2);
    assert_eq!(page[1].row_key, "2");
    assert_eq!(page[1].etag.as_ref().unwrap().as_str(), "W/\"2\"");
    assert_eq!(decode_query_page(br#"{"value":[]}"#).unwrap(), vec![]);
    for bad in [&br#"{}"#[..], br#"{"value":{}}"#, br#"{"value":[1]}"#, br#"{"value":[],"value":[]}"#] {
        assert_eq!(decode_query_page(bad).unwrap_err().kind(), ErrorKind::Decode);
    }
}

#[test]
fn table_lists_and_create_echo() {
    let body = br#"{"odata.metadata":"http://h/$metadata#Tables","value":[
        {"odata.type":"acct.Tables","odata.id":"http://h/Tables('t1')","odata.editLink":"Tables('t1')","TableName":"t1"},
        {"TableName":"T2"}]}"#;
    assert_eq!(decode_table_list(body).unwrap(), vec!["t1", "T2"]);
    assert_eq!(
        decode_table(br#"{"odata.metadata":"http://h/$metadata#Tables/@Element","TableName":"t1"}"#).unwrap(),
        "t1"
    );
    assert_eq!(decode_table_list(br#"{"value":[{}]}"#).unwrap_err().kind(), ErrorKind::Decode);
}

/// The Double read from `text`, the JSON number of an annotated property, read alone and in a
/// page (as its bits: `-0.0` is not `0.0`).
fn double_read_from(text: &str) -> u64 {
    let body = format!(r#"{{"PartitionKey":"p","RowKey":"r","d":{text},"d@odata.type":"Edm.Double"}}"#);
    let alone = decode_entity(body.as_bytes(), None).unwrap();
    let page = decode_query_page(format!(r#"{{"value":[{body}]}}"#).as_bytes()).unwrap();
    assert_eq!(alone.get("d"), page[0].get("d"), "{text}");
    match alone.get("d") {
        Some(Value::Double(d)) => d.to_bits(),
        other => panic!("{text} read as {other:?}"),
    }
}

/// An f64 from its bits, subnormals as likely as the rest (a uniform draw of bits rarely
/// makes one).
fn arb_finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![any::<u64>(), 0u64..(1 << 52), (1u64 << 63)..(1u64 << 63) + (1 << 52)]
        .prop_map(f64::from_bits)
        .prop_filter("finite", |d| d.is_finite())
}

#[test]
fn doubles_read_as_the_nearest_f64_at_the_edges_of_the_range() {
    for text in [
        "2.2250738585072011e-308",
        "2.2250738585072012e-308",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "4.9406564584124654e-324",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "9007199254740993.0",
        "8.988465674311580536566680e307",
        "7.4109846876186982e-323",
        "2.225073858507201136057409796709131975934819546351645648e-308",
        "-0.0",
        "-0",
        "-0e0",
        "1e23",
        "0.1",
    ] {
        assert_eq!(double_read_from(text), text.parse::<f64>().unwrap().to_bits(), "{text}");
    }
}

fn arb_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<String>().prop_map(Value::String),
        any::<i32>().prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        any::<f64>().prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        (-11_644_473_600i64..253_402_300_799, 0u32..10_000_000)
            .prop_map(|(s, t)| Value::DateTime(DateTime::from_timestamp(s, t * 100).unwrap())),
        any::<u128>().prop_map(|u| Value::Guid(Uuid::from_u128(u))),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
    ]
}

proptest! {
    /// Another writer may send a Double with 17 significant digits or more (or with a tail
    /// close to halfway between two f64s), not the shortest text: it reads as the f64 nearest
    /// its text, as Rust's correctly rounded parser reads it.
    #[test]
    fn doubles_in_any_decimal_form_read_as_the_nearest_f64(
        d in arb_finite_f64(),
        digits in 16usize..40,
        tail in prop_oneof![Just(""), Just("5"), Just("49999999"), Just("50000001")],
    ) {
        let long = format!("{d:.digits$e}");
        let (mantissa, exponent) = long.split_once('e').unwrap();
        for text in [format!("{d:?}"), long.clone(), format!("{mantissa}{tail}e{exponent}")] {
            prop_assert_eq!(double_read_from(&text), text.parse::<f64>().unwrap().to_bits(), "{}", text);
        }
    }

    #[test]
    fn arbitrary_entities_round_trip(
        pk in any::<String>(),
        rk in any::<String>(),
        props in proptest::collection::btree_map("[A-Za-z_][A-Za-z0-9_]{0,10}", arb_value(), 0..10),
    ) {
        let mut e = Entity::new(pk, rk);
        for (k, v) in props {
            if !["PartitionKey", "RowKey", "Timestamp"].contains(&k.as_str()) {
                e.insert(k, v);
            }
        }
        let back = decode_entity(encode_entity(&e).as_bytes(), None).unwrap();
        prop_assert_eq!(back, e);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_entity(&bytes, None);
        let _ = decode_query_page(&bytes);
        let _ = decode_table_list(&bytes);
    }

    #[test]
    fn arbitrary_json_objects_never_panic(
        members in proptest::collection::vec(
            (
                prop_oneof!["[a-z]{1,3}", "[a-z]{1,3}@odata\\.type", Just("PartitionKey".to_owned()),
                    Just("Timestamp".to_owned()), Just("odata.etag".to_owned())],
                prop_oneof![
                    Just(serde_json::Value::Null),
                    any::<bool>().prop_map(serde_json::Value::from),
                    any::<i64>().prop_map(serde_json::Value::from),
                    any::<f64>().prop_map(serde_json::Value::from),
                    "(Edm\\.(Int64|Guid|Binary|DateTime|Double|Int32|String|Foo))|.{0,12}".prop_map(serde_json::Value::from),
                    Just(serde_json::json!({"a": [1]})),
                ],
            ),
            0..12,
        )
    ) {
        let object: serde_json::Map<String, serde_json::Value> = members.into_iter().collect();
        let body = serde_json::to_vec(&object).unwrap();
        if let Err(e) = decode_entity(&body, None) {
            prop_assert_eq!(e.kind(), ErrorKind::Decode);
        }
        let page = serde_json::to_vec(&serde_json::json!({"value": [object]})).unwrap();
        if let Err(e) = decode_query_page(&page) {
            prop_assert_eq!(e.kind(), ErrorKind::Decode);
        }
    }
}

#[test]
fn an_etag_with_a_control_character_is_refused() {
    let body = br#"{"PartitionKey":"p","RowKey":"r","odata.etag":"W/\"x\"\r\nX-Injected: 1"}"#;
    let err = decode_entity(body, None).unwrap_err();
    assert_eq!(err.kind(), table_client::ErrorKind::Decode);
}

#[test]
fn a_member_given_twice_is_a_decode_error() {
    for body in [
        r#"{"PartitionKey":"p","RowKey":"r","PartitionKey":"q"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","RowKey":"s"}"#,
        r#"{"PartitionKey":null,"RowKey":"r","PartitionKey":"p"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2020-01-01T00:00:00Z","Timestamp":"2021-01-01T00:00:00Z"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":null,"Timestamp":"2021-01-01T00:00:00Z"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","odata.etag":"W/\"1\"","odata.etag":"W/\"2\""}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":null,"a":2}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":2,"a":null}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":"1","a@odata.type":"Edm.Int64","a@odata.type":"Edm.Int64"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.DateTime","Timestamp@odata.type":"Edm.DateTime"}"#,
    ] {
        let err = decode_error_of(body);
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(source.contains("twice"), "{body}: {source}");
        let page = format!(r#"{{"value":[{body}]}}"#);
        assert_eq!(decode_query_page(page.as_bytes()).unwrap_err().kind(), ErrorKind::Decode, "{page}");
    }
}

#[test]
fn datetimes_outside_the_service_range_or_form_are_decode_errors() {
    for t in [
        "0000-01-01T00:00:00Z",
        "1600-12-31T23:59:59.9999999Z",
        "10000-01-01T00:00:00Z",
        "+2020-01-01T00:00:00Z",
        "2020-1-1T00:00:00Z",
        "2020-01-01T00:00:00+01:00",
    ] {
        decode_error_of(&format!(
            r#"{{"PartitionKey":"p","RowKey":"r","t":"{t}","t@odata.type":"Edm.DateTime"}}"#
        ));
        decode_error_of(&format!(r#"{{"PartitionKey":"p","RowKey":"r","Timestamp":"{t}"}}"#));
    }
    for t in ["1601-01-01T00:00:00Z", "9999-12-31T23:59:59.9999999Z"] {
        let body = format!(
            r#"{{"PartitionKey":"p","RowKey":"r","t":"{t}","t@odata.type":"Edm.DateTime","Timestamp":"{t}"}}"#
        );
        let e = decode_entity(body.as_bytes(), None).unwrap();
        assert_eq!(e.get("t"), Some(&Value::DateTime(at(t))));
        assert_eq!(e.timestamp, Some(at(t)));
    }
}

#[test]
fn guids_only_in_the_hyphenated_form() {
    for g in [
        "{68260b3f-beab-45e2-b900-33e2b442e724}",
        "urn:uuid:68260b3f-beab-45e2-b900-33e2b442e724",
        "68260b3fbeab45e2b90033e2b442e724",
    ] {
        decode_error_of(&format!(
            r#"{{"PartitionKey":"p","RowKey":"r","g":"{g}","g@odata.type":"Edm.Guid"}}"#
        ));
    }
}

#[test]
fn an_empty_etag_or_etag_header_with_a_control_character_is_refused() {
    decode_error_of(r#"{"PartitionKey":"p","RowKey":"r","odata.etag":""}"#);
    let body = br#"{"PartitionKey":"p","RowKey":"r"}"#;
    assert_eq!(decode_entity(body, Some("W/\"x\"\u{1}")).unwrap_err().kind(), ErrorKind::Decode);
    assert_eq!(decode_entity(body, Some("")).unwrap_err().kind(), ErrorKind::Decode);
}

#[test]
fn pages_of_more_than_1000_items_are_refused_while_reading() {
    let entities = |n: usize| format!(r#"{{"value":[{}]}}"#, vec![r#"{"PartitionKey":"p"}"#; n].join(","));
    assert_eq!(decode_query_page(entities(1000).as_bytes()).unwrap().len(), 1000);
    assert_eq!(decode_query_page(entities(1001).as_bytes()).unwrap_err().kind(), ErrorKind::Decode);
    // Two million empty entities in 6 MB: refused at the 1001st, before the rest is read.
    let bomb = format!(r#"{{"value":[{}]}}"#, vec!["{}"; 2_000_000].join(","));
    let started = std::time::Instant::now();
    assert_eq!(decode_query_page(bomb.as_bytes()).unwrap_err().kind(), ErrorKind::Decode);
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());

    let tables = |n: usize| format!(r#"{{"value":[{}]}}"#, vec![r#"{"TableName":"t"}"#; n].join(","));
    assert_eq!(decode_table_list(tables(1000).as_bytes()).unwrap().len(), 1000);
    assert_eq!(decode_table_list(tables(1001).as_bytes()).unwrap_err().kind(), ErrorKind::Decode);
}

#[test]
fn entities_with_more_properties_than_the_service_allows_are_refused() {
    let entity = |n: usize| {
        let props: Vec<String> = (0..n).map(|i| format!(r#""p{i}":{i}"#)).collect();
        format!(r#"{{"PartitionKey":"p","RowKey":"r",{}}}"#, props.join(","))
    };
    assert_eq!(decode_entity(entity(252).as_bytes(), None).unwrap().properties.len(), 252);
    decode_error_of(&entity(253));
}

#[test]
fn a_success_body_carrying_a_service_error_is_an_error() {
    for member in ["odata.error", "error"] {
        let body = format!(
            r#"{{"{member}":{{"code":"InternalError","message":{{"value":"Server failed.\nRequestId:x"}}}},"value":[]}}"#
        );
        let err = decode_query_page(body.as_bytes()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decode);
        assert_eq!(err.code(), Some(&table_core::ErrorCode::InternalError));
        assert!(err.message().contains("Server failed."), "{err}");
        let err = decode_table_list(body.as_bytes()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decode);
    }
    // Whatever its shape, and wherever it sits.
    for body in [
        &br#"{"value":[],"odata.error":5}"#[..],
        br#"{"odata.error":null,"value":[]}"#,
        br#"{"odata.error":{}}"#,
    ] {
        assert_eq!(
            decode_query_page(body).unwrap_err().kind(),
            ErrorKind::Decode,
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    decode_error_of(r#"{"odata.error":{"code":"ResourceNotFound","message":{"value":"gone"}}}"#);
}

#[test]
fn bodies_that_are_not_utf8_are_refused_even_in_members_that_are_skipped() {
    // JSON is UTF-8 text: a body is checked as text as a whole, so a broken byte in a member
    // the reader passes over (control information, an unknown page member) fails it too.
    let entity = b"{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"odata.id\":\"\xff\"}";
    let err = decode_entity(entity, None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    let page = b"{\"odata.metadata\":\"\xc3\",\"value\":[{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}]}";
    let err = decode_query_page(page).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    // The same bodies with valid text read.
    assert!(decode_entity(br#"{"PartitionKey":"p","RowKey":"r","odata.id":"\u00ff"}"#, None).is_ok());
    let page = "{\"odata.metadata\":\"\u{e9}\",\"value\":[{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}]}";
    assert_eq!(decode_query_page(page.as_bytes()).unwrap().len(), 1);
}
