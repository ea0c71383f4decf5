//! Table scans on request: every query reports its shape, and a typed query that would read
//! the whole table fails before any request unless it called `.table_scan()`. Untyped queries
//! scan without asking. Checked on the embedded engine and over HTTP.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::ops::Bound;

use table_client::auth::Credential;
use table_client::engine::Engine;
use table_client::{
    Error, ErrorKind, Filter, QueryShape, TableClient, TableEntity, TableServiceClient, Violation,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(rename_all = "PascalCase")]
#[table(partition_key = "{department}", row_key = "{id:06}")]
struct Employee {
    department: String,
    #[table(key_only)]
    id: u32,
    age: i32,
}

/// A table on a fresh embedded engine (returned so requests can be counted) with two
/// employees in each of two partitions.
async fn seeded() -> (Engine, TableClient) {
    let engine = Engine::new();
    let service = TableServiceClient::builder().engine(engine.clone()).build().unwrap();
    let (table, _) = service.create_table_if_not_exists("scans").await.unwrap();
    let employees = table.typed::<Employee>();
    for (department, id) in [("Sales", 1), ("Sales", 2), ("Support", 3), ("Support", 4)] {
        employees.insert(&Employee { department: department.into(), id, age: 30 }).await.unwrap();
    }
    (engine, table)
}

fn assert_scan_refused(err: &Error, table: &str) {
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err:?}");
    assert_eq!(err.violation(), Some(&Violation::TableScanNotRequested { table: table.into() }));
    assert!(err.message().contains("call .table_scan() to scan the whole table deliberately"), "{err}");
    assert!(err.message().contains(table), "{err}");
}

#[tokio::test]
async fn a_typed_table_scan_is_refused_before_any_request_on_the_engine() {
    let (engine, table) = seeded().await;
    let employees = table.typed::<Employee>();
    let before = engine.faults().calls();
    for query in [
        employees.query(),
        employees.query().filter(Employee::AGE.gt(20)),
        employees.query().filter_str("Age gt 20"),
    ] {
        assert_eq!(query.shape().unwrap(), QueryShape::TableScan);
        assert_scan_refused(&query.collect().await.unwrap_err(), "scans");
    }
    let negated = employees.query().filter(!Filter::partition_key_eq("Sales")).collect().await.unwrap_err();
    assert_scan_refused(&negated, "scans");
    assert_eq!(engine.faults().calls(), before, "nothing was sent");
}

#[tokio::test]
async fn table_scan_opts_in_and_untyped_queries_scan_without_asking() {
    let (_, table) = seeded().await;
    let employees = table.typed::<Employee>();
    let all = employees.query().table_scan().collect().await.unwrap();
    assert_eq!(all.len(), 4);
    let older = employees.query().filter(Employee::AGE.ge(30)).table_scan().collect().await.unwrap();
    assert_eq!(older.len(), 4);
    assert_eq!(table.query().collect().await.unwrap().len(), 4, "untyped queries keep scanning");
}

#[tokio::test]
async fn bounded_typed_queries_need_no_opt_in() {
    let (_, table) = seeded().await;
    let employees = table.typed::<Employee>();
    let sales = Filter::partition_key_eq("Sales");
    let cases = [
        (employees.query().filter(sales.clone().and(Filter::eq("RowKey", "000001"))), QueryShape::Point, 1),
        (employees.query().partition("Sales"), QueryShape::PartitionScan, 2),
        (employees.query().partition("Sales").row_key_prefix("00000"), QueryShape::PartitionScan, 2),
        (employees.query().filter(sales.or(Filter::partition_key_eq("Support"))), QueryShape::Partitions, 4),
        (
            employees.query().filter(Filter::range(
                "PartitionKey",
                Bound::Included("Sa"),
                Bound::Excluded("Sb"),
            )),
            QueryShape::PartitionRange,
            2,
        ),
        (
            employees.query().filter_str("PartitionKey eq 'Support' and RowKey eq '000003'"),
            QueryShape::Point,
            1,
        ),
    ];
    for (query, shape, rows) in cases {
        assert_eq!(query.shape().unwrap(), shape, "{query:?}");
        assert_eq!(query.collect().await.unwrap().len(), rows);
    }
    let merged = employees.query().across_partitions(["Sales", "Support"], 2);
    assert_eq!(futures::StreamExt::collect::<Vec<_>>(merged).await.len(), 4, "one query per partition");
    assert_eq!(table.query().shape().unwrap(), QueryShape::TableScan, "untyped queries have a shape too");
    assert!(table.query().filter_str("Age eq").shape().is_err(), "an unparsable filter has no shape");
}

#[tokio::test]
async fn a_typed_table_scan_is_refused_before_any_request_over_http() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({ "value": [] })))
        .mount(&server)
        .await;
    let credential = Credential::shared_key("devstoreaccount1", "a2V5").unwrap();
    let service = TableServiceClient::builder()
        .endpoint(&format!("{}/devstoreaccount1", server.uri()))
        .credential(credential)
        .build()
        .unwrap();
    let employees = service.table("scans").typed::<Employee>();

    assert_scan_refused(&employees.query().collect().await.unwrap_err(), "scans");
    assert!(server.received_requests().await.unwrap().is_empty(), "refused before any request");

    assert!(employees.query().table_scan().collect().await.unwrap().is_empty());
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "the opted-in scan was sent");
}

/// A type with a same-partition index, whose copies `query_index` reads.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
struct Indexed {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    email: String,
}

#[tokio::test]
async fn index_queries_over_every_partition_need_the_opt_in_too() {
    let engine = Engine::new();
    let service = TableServiceClient::builder().engine(engine.clone()).build().unwrap();
    let (table, _) = service.create_table_if_not_exists("indexed").await.unwrap();
    let people = table.typed::<Indexed>();
    for (department, id) in [("Sales", 1), ("Support", 2)] {
        let email = format!("{id}@contoso.com");
        people.insert(&Indexed { department: department.into(), id, email }).await.unwrap();
    }
    let before = engine.faults().calls();
    let err = people.query_index::<Indexed, _>(Indexed::BY_EMAIL).collect().await.unwrap_err();
    assert_scan_refused(&err, "indexed");
    assert_eq!(engine.faults().calls(), before, "nothing was sent");

    let all = people.query_index::<Indexed, _>(Indexed::BY_EMAIL).table_scan().collect().await.unwrap();
    assert_eq!(all.len(), 2);
    let sales =
        people.query_index::<Indexed, _>(Indexed::BY_EMAIL).partition("Sales").collect().await.unwrap();
    assert_eq!(sales.len(), 1);
}
