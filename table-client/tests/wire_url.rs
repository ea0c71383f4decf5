//! Resource paths and query strings: protocol doc sections 1 and 6.

// Helpers outside #[test] functions unwrap test vectors too.
#![allow(clippy::unwrap_used)]

use table_client::wire::url::{
    encode_component, entities_path, entity_path, entity_query, resource_url, table_path, table_query,
    with_query,
};
use table_core::{CompareOp, Continuation, Filter, QueryRequest, TableQuery, Value};

#[test]
fn entity_paths_quote_and_encode_keys_like_the_python_sdk() {
    assert_eq!(
        entity_path("mytable", "a b'é%+x", "r1"),
        "mytable(PartitionKey='a%20b%27%27%C3%A9%25%2Bx',RowKey='r1')"
    );
    assert_eq!(entity_path("QryProbe", "p", "01"), "QryProbe(PartitionKey='p',RowKey='01')");
    assert_eq!(entity_path("t", "", "''"), "t(PartitionKey='',RowKey='%27%27%27%27')");
    assert_eq!(entity_path("t", "a-b.c_d~e", "😀"), "t(PartitionKey='a-b.c_d~e',RowKey='%F0%9F%98%80')");
}

#[test]
fn table_and_collection_paths() {
    assert_eq!(table_path("mytable"), "Tables('mytable')");
    assert_eq!(entities_path("mytable"), "mytable");
    assert_eq!(
        resource_url("http://127.0.0.1:10002/devstoreaccount1/", "Tables"),
        "http://127.0.0.1:10002/devstoreaccount1/Tables"
    );
    assert_eq!(
        resource_url("https://a.table.core.windows.net", "$batch"),
        "https://a.table.core.windows.net/$batch"
    );
}

#[test]
fn query_strings_match_the_python_sdk() {
    let request = QueryRequest {
        filter: Some(Filter::And(
            Box::new(Filter::Compare {
                property: "PartitionKey".into(),
                op: CompareOp::Eq,
                value: Value::String("p".into()),
            }),
            Box::new(Filter::Compare { property: "x".into(), op: CompareOp::Ge, value: Value::Int32(1) }),
        )),
        select: Some(vec!["x".into(), "RowKey".into()]),
        top: Some(1),
        continuation: None,
    };
    assert_eq!(
        entity_query(&request),
        "$filter=PartitionKey%20eq%20%27p%27%20and%20x%20ge%201&$select=x%2CRowKey&$top=1"
    );
}

#[test]
fn continuation_tokens_are_encoded() {
    let request = QueryRequest {
        continuation: Some(Continuation {
            next_partition_key: "1!4!MTM-".into(),
            next_row_key: Some("cGE=".into()),
        }),
        ..QueryRequest::default()
    };
    assert_eq!(entity_query(&request), "NextPartitionKey=1%214%21MTM-&NextRowKey=cGE%3D");
    let request = QueryRequest {
        continuation: Some(Continuation { next_partition_key: "a+b/c".into(), next_row_key: None }),
        ..QueryRequest::default()
    };
    assert_eq!(entity_query(&request), "NextPartitionKey=a%2Bb%2Fc");
    assert_eq!(entity_query(&QueryRequest::default()), "");
}

#[test]
fn table_query_strings() {
    let q = TableQuery {
        filter: Some(Filter::Compare {
            property: "TableName".into(),
            op: CompareOp::Ge,
            value: Value::String("a&b".into()),
        }),
        top: Some(5),
        next_table_name: Some("t 2".into()),
    };
    assert_eq!(table_query(&q), "$filter=TableName%20ge%20%27a%26b%27&$top=5&NextTableName=t%202");
    assert_eq!(table_query(&TableQuery::default()), "");
}

#[test]
fn reserved_query_characters_are_encoded() {
    assert_eq!(encode_component("/?:@&=+,$ %'"), "%2F%3F%3A%40%26%3D%2B%2C%24%20%25%27");
    assert_eq!(with_query("http://h/t()", ""), "http://h/t()");
    assert_eq!(with_query("http://h/t()", "a=1"), "http://h/t()?a=1");
    assert_eq!(with_query("http://h/t()?a=1", "b=2"), "http://h/t()?a=1&b=2");
}

proptest::proptest! {
    /// Paths are written in place as the quoting rule states it: each `'` doubled, then the
    /// whole key percent-encoded.
    #[test]
    fn paths_follow_the_quoting_rule(table in "[a-zA-Z0-9]{1,8}", pk in ".{0,12}", rk in "['a-z%+ é]{0,12}") {
        let literal = |key: &str| format!("'{}'", encode_component(&key.replace('\'', "''")));
        let expected = format!("{}(PartitionKey={},RowKey={})", encode_component(&table), literal(&pk), literal(&rk));
        proptest::prop_assert_eq!(entity_path(&table, &pk, &rk), expected);
        proptest::prop_assert_eq!(table_path(&pk), format!("Tables({})", literal(&pk)));
    }
}
