//! A server whose continuations do not advance (the same token again, or a cycle of tokens)
//! must end a listing with a `Decode` error: never page forever, never yield rows twice.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use table_client::auth::Credential;
use table_client::{ErrorKind, QueryStream, RetryPolicy, TableServiceClient};
use wiremock::matchers::{method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

async fn server_and_client() -> (MockServer, TableServiceClient) {
    let server = MockServer::start().await;
    let client = TableServiceClient::builder()
        .endpoint(&format!("{}/{ACCOUNT}", server.uri()))
        .credential(Credential::shared_key(ACCOUNT, KEY).unwrap())
        .retry(RetryPolicy::none())
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    (server, client)
}

/// A page of entities with these row keys, continuing at partition token `next`.
fn page(rows: &[&str], next: &str) -> ResponseTemplate {
    let value: Vec<serde_json::Value> = rows
        .iter()
        .map(|rk| serde_json::json!({"PartitionKey": "p", "RowKey": rk, "Timestamp": "2024-01-01T00:00:00Z"}))
        .collect();
    ResponseTemplate::new(200)
        .set_body_json(serde_json::json!({ "value": value }))
        .insert_header("x-ms-continuation-NextPartitionKey", next)
        .insert_header("x-ms-continuation-NextRowKey", "rk")
}

/// Drains `stream` (bounded in time: a loop is a failure, not a hang), returning the items
/// before the first error and that error's kind.
async fn drain<T>(mut stream: QueryStream<T>) -> (Vec<T>, Option<ErrorKind>) {
    let run = async {
        let mut items = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(item) => items.push(item),
                Err(e) => return (items, Some(e.kind())),
            }
        }
        (items, None)
    };
    tokio::time::timeout(Duration::from_secs(10), run).await.expect("the listing ends")
}

#[tokio::test]
async fn a_continuation_that_repeats_the_request_ends_the_query() {
    let (server, client) = server_and_client().await;
    let table = client.table("loops");
    Mock::given(method("GET"))
        .and(query_param_is_missing("NextPartitionKey"))
        .respond_with(page(&["a", "b"], "A"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("NextPartitionKey", "A"))
        .respond_with(page(&["c"], "A"))
        .mount(&server)
        .await;
    let (rows, error) = drain(table.query().stream()).await;
    assert_eq!(error, Some(ErrorKind::Decode));
    let keys: Vec<String> = rows.into_iter().map(|e| e.row_key).collect();
    assert_eq!(keys, ["a", "b"], "the page that sent its own token back is refused whole");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    // The same through `pages()`, resumed at the looping token.
    let (pages, error) = drain(table.query().resume("1:A:rk").pages()).await;
    assert_eq!((pages.len(), error), (0, Some(ErrorKind::Decode)));
}

#[tokio::test]
async fn alternating_continuations_end_the_query_without_repeating_rows() {
    let (server, client) = server_and_client().await;
    let table = client.table("loops");
    Mock::given(method("GET"))
        .and(query_param_is_missing("NextPartitionKey"))
        .respond_with(page(&["a"], "A"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("NextPartitionKey", "A"))
        .respond_with(page(&["b"], "B"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("NextPartitionKey", "B"))
        .respond_with(page(&["c"], "A"))
        .mount(&server)
        .await;
    let (rows, error) = drain(table.query().stream()).await;
    assert_eq!(error, Some(ErrorKind::Decode));
    let keys: Vec<String> = rows.into_iter().map(|e| e.row_key).collect();
    assert_eq!(keys, ["a", "b"], "nothing after the token that came back");
}

#[tokio::test]
async fn a_long_cycle_ends_the_query_with_an_error() {
    let (server, client) = server_and_client().await;
    let table = client.table("loops");
    Mock::given(method("GET"))
        .and(query_param_is_missing("NextPartitionKey"))
        .respond_with(page(&["start"], "T0"))
        .mount(&server)
        .await;
    // T0 -> T1 -> ... -> T6 -> T0: every page has rows, so a missed cycle would repeat them.
    for i in 0..7 {
        let rk = format!("row{i}");
        Mock::given(method("GET"))
            .and(query_param("NextPartitionKey", format!("T{i}")))
            .respond_with(page(&[rk.as_str()], &format!("T{}", (i + 1) % 7)))
            .mount(&server)
            .await;
    }
    let (rows, error) = drain(table.query().stream()).await;
    assert_eq!(error, Some(ErrorKind::Decode));
    assert!(rows.len() <= 3 * 8, "found within the bound: {} rows", rows.len());
}

#[tokio::test]
async fn a_table_listing_that_does_not_advance_ends_with_an_error() {
    let (server, client) = server_and_client().await;
    let tables = |names: &[&str], next: &str| {
        let value: Vec<serde_json::Value> =
            names.iter().map(|n| serde_json::json!({"TableName": n})).collect();
        ResponseTemplate::new(200)
            .set_body_json(serde_json::json!({ "value": value }))
            .insert_header("x-ms-continuation-NextTableName", next)
    };
    Mock::given(method("GET"))
        .and(path(format!("/{ACCOUNT}/Tables")))
        .and(query_param_is_missing("NextTableName"))
        .respond_with(tables(&["alpha"], "beta"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("NextTableName", "beta"))
        .respond_with(tables(&["beta"], "beta"))
        .mount(&server)
        .await;
    let (names, error) = drain(client.list_tables()).await;
    assert_eq!(error, Some(ErrorKind::Decode));
    assert_eq!(names.into_iter().collect::<BTreeSet<_>>(), BTreeSet::from(["alpha".to_owned()]));
}
