//! Faults the real server cannot be made to produce, served by wiremock (and a raw socket for
//! dropped connections): transient statuses and retries, timeouts, malformed answers, and
//! short or empty pages that still carry continuations. Every failure must be a typed error,
//! never a panic.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::net::TcpListener;
use std::time::Duration;

use futures::StreamExt;
use table_client::auth::Credential;
use table_client::{
    Entity, EntityKey, ErrorKind, IfMatch, RetryPolicy, TableClient, TableEntity, TableServiceClient,
    TableServiceClientBuilder, Transaction,
};
use wiremock::matchers::{header_exists, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use support::raw_server;

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn fast_retries() -> TableServiceClientBuilder {
    TableServiceClient::builder()
        .retry(RetryPolicy::default().max_retries(3).initial_backoff(Duration::from_millis(1)))
        .timeout(Duration::from_secs(5))
}

fn client_at(base: &str, options: TableServiceClientBuilder) -> TableServiceClient {
    let credential = Credential::shared_key(ACCOUNT, KEY).unwrap();
    options.endpoint(&format!("{base}/{ACCOUNT}")).credential(credential).build().unwrap()
}

async fn server_and_table() -> (MockServer, TableClient) {
    let server = MockServer::start().await;
    let table = client_at(&server.uri(), fast_retries()).table("faults");
    (server, table)
}

fn entity_json() -> serde_json::Value {
    serde_json::json!({
        "odata.etag": "W/\"datetime'2024-01-01T00%3A00%3A00.0000001Z'\"",
        "PartitionKey": "p", "RowKey": "r", "Timestamp": "2024-01-01T00:00:00.0000001Z",
        "N": 1
    })
}

fn entity_path() -> String {
    format!("/{ACCOUNT}/faults(PartitionKey='p',RowKey='r')")
}

#[tokio::test]
async fn reads_are_retried_after_503_and_429_then_succeed() {
    let (server, table) = server_and_table().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).insert_header("x-ms-error-code", "ServerBusy"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(429)).up_to_n_times(1).mount(&server).await;
    Mock::given(method("GET"))
        .and(path(entity_path()))
        .and(header_exists("authorization"))
        .and(header_exists("x-ms-date"))
        .respond_with(ResponseTemplate::new(200).set_body_json(entity_json()))
        .mount(&server)
        .await;
    let e = table.get("p", "r").await.unwrap();
    assert_eq!(e.get("N"), Some(&table_client::Value::Int32(1)));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn retries_stop_at_the_policy_limit() {
    let (server, table) = server_and_table().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(503)).mount(&server).await;
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert!(err.is_transient());
    assert_eq!(server.received_requests().await.unwrap().len(), 4, "1 attempt + 3 retries");
}

#[tokio::test]
async fn inserts_are_retried_on_429_but_not_replayed_after_500() {
    let (server, table) = server_and_table().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(204).insert_header("ETag", "W/\"datetime'2024-01-01T00%3A00%3A00Z'\""),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    table.insert(Entity::new("p", "r")).await.unwrap();
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    server.reset().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)).mount(&server).await;
    let err = table.insert(Entity::new("p", "r")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "an insert that may have applied is not replayed"
    );

    server.reset().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)).mount(&server).await;
    let err = table.submit_transaction(Transaction::new().insert(Entity::new("p", "r"))).await.unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "nor is a batch");
}

#[tokio::test]
async fn idempotent_writes_are_retried_after_500() {
    let (server, table) = server_and_table().await;
    Mock::given(method("PUT")).respond_with(ResponseTemplate::new(500)).up_to_n_times(1).mount(&server).await;
    Mock::given(method("PUT"))
        .respond_with(
            ResponseTemplate::new(204).insert_header("ETag", "W/\"datetime'2024-01-01T00%3A00%3A00Z'\""),
        )
        .mount(&server)
        .await;
    table.insert_or_replace(Entity::new("p", "r")).await.unwrap();
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_slow_answer_is_a_timeout() {
    let server = MockServer::start().await;
    let options =
        TableServiceClient::builder().retry(RetryPolicy::none()).timeout(Duration::from_millis(200));
    let table = client_at(&server.uri(), options).table("faults");
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(entity_json()).set_delay(Duration::from_secs(3)),
        )
        .mount(&server)
        .await;
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(std::error::Error::source(&err).is_some(), "the transport cause is kept as the source");
}

/// A server that accepts connections, reads each request's head, and drops them without
/// answering.
fn dropping_server() -> String {
    raw_server(16, |_, stream| drop(stream))
}

#[tokio::test]
async fn dropped_connections_are_transport_errors_and_reads_retry() {
    let base = dropping_server();
    let options = TableServiceClient::builder()
        .retry(RetryPolicy::default().max_retries(2).initial_backoff(Duration::from_millis(1)))
        .timeout(Duration::from_secs(5));
    let table = client_at(&base, options).table("faults");
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    assert!(err.is_transient());
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let table = client_at(&format!("http://127.0.0.1:{port}"), fast_retries()).table("faults");
    let err = table.insert(Entity::new("p", "r")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
}

#[tokio::test]
async fn malformed_json_is_a_decode_error() {
    let (server, table) = server_and_table().await;
    for body in [
        &b"{not json"[..],
        b"[]",
        b"{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"x\":{\"nested\":1}}",
        b"\xff\xfe",
    ] {
        server.reset().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(body))
            .mount(&server)
            .await;
        let err = table.get("p", "r").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decode, "{}", String::from_utf8_lossy(body));
    }
    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{\"value\":[1,2]}"))
        .mount(&server)
        .await;
    let err = table.query().collect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode);
}

#[tokio::test]
async fn malformed_batch_responses_are_decode_errors() {
    let (server, table) = server_and_table().await;
    let tx = || Transaction::new().insert(Entity::new("p", "a")).insert(Entity::new("p", "b"));
    let bodies = [
        ("multipart/mixed; boundary=batchresponse_x", "garbage"),
        ("multipart/mixed", "--batchresponse_x--"),
        ("text/plain", ""),
        (
            "multipart/mixed; boundary=batchresponse_x",
            "--batchresponse_x\r\nContent-Type: multipart/mixed; boundary=changesetresponse_y\r\n\r\n--changesetresponse_y\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\nETag: W/\"1\"\r\n\r\n--changesetresponse_y--\r\n--batchresponse_x--",
        ),
        // Two successful parts, but the second write reports no ETag.
        (
            "multipart/mixed; boundary=batchresponse_x",
            "--batchresponse_x\r\nContent-Type: multipart/mixed; boundary=changesetresponse_y\r\n\r\n--changesetresponse_y\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\nETag: W/\"1\"\r\n\r\n--changesetresponse_y\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n--changesetresponse_y--\r\n--batchresponse_x--",
        ),
    ];
    for (content_type, body) in bodies {
        server.reset().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(202).insert_header("Content-Type", content_type).set_body_string(body),
            )
            .mount(&server)
            .await;
        let err = table.submit_transaction(tx()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decode, "{content_type}: {body}");
        assert!(err.may_have_applied(), "a 202 whose parts cannot be read may have applied: {err:?}");
    }
}

#[tokio::test]
async fn short_and_empty_pages_with_continuations_are_followed() {
    let (server, table) = server_and_table().await;
    let page = |rows: &[&str]| {
        let value: Vec<serde_json::Value> = rows
            .iter()
            .map(|rk| serde_json::json!({"PartitionKey": "p", "RowKey": rk, "Timestamp": "2024-01-01T00:00:00Z"}))
            .collect();
        serde_json::json!({ "value": value })
    };
    Mock::given(method("GET"))
        .and(query_param("NextPartitionKey", "tok2"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(page(&[]))
                .insert_header("x-ms-continuation-NextPartitionKey", "tok3")
                .insert_header("x-ms-continuation-NextRowKey", "rk3"),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("NextPartitionKey", "tok3"))
        .and(query_param("NextRowKey", "rk3"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page(&["c"])))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(page(&["a", "b"]))
                .insert_header("x-ms-continuation-nextpartitionkey", "tok2"),
        )
        .up_to_n_times(2)
        .mount(&server)
        .await;
    let pages: Vec<_> = table.query().pages().map(|p| p.unwrap()).collect().await;
    let sizes: Vec<usize> = pages.iter().map(|p| p.items.len()).collect();
    assert_eq!(sizes, [2, 0, 1], "an empty page mid-query does not end it");
    let streamed: Vec<String> = table.query().stream().map(|e| e.unwrap().row_key).collect().await;
    assert_eq!(streamed, ["a", "b", "c"], "nor does it end a stream of the items");
    let token = pages[1].continuation.clone().unwrap();
    assert_eq!(token.next_partition_key, "tok3");
    assert_eq!(token.next_row_key.as_deref(), Some("rk3"));

    // Resuming from a stored token string sends the server's tokens back verbatim.
    let rest = table.query().resume(&token.to_string()).collect().await.unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].row_key, "c");
}

#[tokio::test]
async fn error_answers_keep_code_status_and_request_id() {
    let (server, table) = server_and_table().await;
    Mock::given(method("DELETE"))
        .respond_with(
            ResponseTemplate::new(412)
                .insert_header("x-ms-request-id", "req-123")
                .set_body_string(r#"{"odata.error":{"code":"UpdateConditionNotSatisfied","message":{"lang":"en-US","value":"The update condition specified in the request was not satisfied.\nRequestId:req-123\nTime:2024-01-01T00:00:00.0000000Z"}}}"#),
        )
        .mount(&server)
        .await;
    let err = table.delete("p", "r", IfMatch::Any).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PreconditionFailed);
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.request_id(), Some("req-123"));
    assert_eq!(
        err.message(),
        "entity (PartitionKey=\"p\", RowKey=\"r\") in table faults: The update condition specified in the \
         request was not satisfied."
    );
}

#[tokio::test]
async fn debug_output_never_shows_the_key() {
    let client = client_at("http://127.0.0.1:9", TableServiceClient::builder());
    let text = format!("{client:?}");
    assert!(!text.contains(KEY) && !text.contains(&KEY[..20]), "{text}");
}

fn empty_page() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(serde_json::json!({ "value": [] }))
}

#[tokio::test]
async fn unreadable_or_inconsistent_continuations_are_decode_errors_not_the_end() {
    let (server, table) = server_and_table().await;
    let non_ascii = &b"tok\xc3\xa9"[..];
    let answers = [
        empty_page().insert_header("x-ms-continuation-NextPartitionKey", non_ascii),
        empty_page()
            .insert_header("x-ms-continuation-NextPartitionKey", "tok")
            .insert_header("x-ms-continuation-NextRowKey", non_ascii),
        empty_page().insert_header("x-ms-continuation-NextPartitionKey", "tok\there"),
        empty_page().insert_header("x-ms-continuation-NextRowKey", "rk"),
        empty_page()
            .append_header("x-ms-continuation-NextPartitionKey", "tok1")
            .append_header("x-ms-continuation-NextPartitionKey", "tok2"),
    ];
    for (i, answer) in answers.into_iter().enumerate() {
        server.reset().await;
        Mock::given(method("GET")).respond_with(answer).mount(&server).await;
        let err = table.query().collect().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decode, "answer {i}: {err:?}");
        assert_eq!(server.received_requests().await.unwrap().len(), 1, "answer {i} is not retried");
    }

    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(empty_page().insert_header("x-ms-continuation-NextTableName", non_ascii))
        .mount(&server)
        .await;
    let client = client_at(&server.uri(), fast_retries());
    let tables: Vec<_> = client.list_tables().collect().await;
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0].as_ref().unwrap_err().kind(), ErrorKind::Decode);
}

#[tokio::test]
async fn etags_with_control_characters_are_refused_from_headers_and_batch_parts() {
    let (server, table) = server_and_table().await;
    let bad = "W/\"datetime'2024-01-01T00%3A00%3A00Z'\"\tX";
    Mock::given(method("PUT"))
        .respond_with(ResponseTemplate::new(204).insert_header("ETag", bad))
        .mount(&server)
        .await;
    let err = table.insert_or_replace(Entity::new("p", "r")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    assert!(err.may_have_applied(), "the service said the write applied: {err:?}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);

    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(entity_json()).insert_header("ETag", bad))
        .mount(&server)
        .await;
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    assert!(!err.may_have_applied());

    for etag in ["W/\"1\"\tX", "W/\"1\"\rX", ""] {
        server.reset().await;
        let body = format!(
            "--batchresponse_x\r\nContent-Type: multipart/mixed; boundary=changesetresponse_y\r\n\r\n\
             --changesetresponse_y\r\nContent-Type: application/http\r\n\r\n\
             HTTP/1.1 204 No Content\r\nETag: {etag}\r\n\r\n--changesetresponse_y--\r\n--batchresponse_x--"
        );
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(202)
                    .insert_header("Content-Type", "multipart/mixed; boundary=batchresponse_x")
                    .set_body_string(body),
            )
            .mount(&server)
            .await;
        let tx = Transaction::new().insert_or_replace(Entity::new("p", "a"));
        let err = table.submit_transaction(tx).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Decode, "{etag:?}: {err:?}");
    }
}

#[tokio::test]
async fn redirects_are_errors_and_never_followed() {
    let (server, table) = server_and_table().await;
    let elsewhere = MockServer::start().await;
    Mock::given(wiremock::matchers::any()).respond_with(ResponseTemplate::new(200)).mount(&elsewhere).await;
    let target = format!("{}/stolen?sig=SECRET#frag", elsewhere.uri());
    for status in [301, 302, 307, 308] {
        server.reset().await;
        Mock::given(wiremock::matchers::any())
            .respond_with(ResponseTemplate::new(status).insert_header("Location", target.as_str()))
            .mount(&server)
            .await;
        let err = table.get("p", "r").await.unwrap_err();
        assert_eq!(err.status(), Some(status));
        let text = err.to_string();
        assert!(text.contains(&status.to_string()), "{text}");
        assert!(text.contains(&format!("{}/stolen", elsewhere.uri())), "{text}");
        assert!(!text.contains("SECRET") && !text.contains("frag"), "{text}");
        let err = table.insert_or_replace(Entity::new("p", "r")).await.unwrap_err();
        assert_eq!(err.status(), Some(status));
        assert_eq!(server.received_requests().await.unwrap().len(), 2, "a redirect is not retried");
    }
    assert!(elsewhere.received_requests().await.unwrap().is_empty(), "nothing reaches the redirect target");
}

#[tokio::test]
async fn bodies_over_their_kind_s_limit_are_decode_errors() {
    let (server, table) = server_and_table().await;
    // A point read answers one entity: 16 MiB is more than any entity can print as.
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b' '; 16 << 20]))
        .mount(&server)
        .await;
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    assert!(err.message().contains("bytes"), "the error names the limit: {err}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "not retried");

    // A page of one entity asked for with $top=1: the same limit.
    let err = table.query().max_per_page(1).collect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");

    // An error body is small; a big one keeps its status, so a 503 is still retried.
    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).set_body_bytes(vec![b'x'; 1 << 20]))
        .mount(&server)
        .await;
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!((err.kind(), err.status()), (ErrorKind::Decode, Some(503)), "{err:?}");
    assert_eq!(server.received_requests().await.unwrap().len(), 4);

    // A write answered 2xx with an oversized body was applied all the same.
    server.reset().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("ETag", "W/\"datetime'2024-01-01T00%3A00%3A00Z'\"")
                .set_body_bytes(vec![b' '; 16 << 20]),
        )
        .mount(&server)
        .await;
    let err = table.insert(Entity::new("p", "r")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    assert!(err.may_have_applied());
}

/// A server that answers every request with a chunked body that never ends.
fn endless_body_server() -> String {
    raw_server(4, |_, mut stream| {
        // Each connection writes until the client hangs up, beside the others.
        std::thread::spawn(move || {
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, " ".repeat(64 * 1024));
            while stream.write_all(chunk.as_bytes()).is_ok() {}
        });
    })
}

#[tokio::test]
async fn an_endless_body_is_cut_at_its_limit() {
    let table = client_at(&endless_body_server(), fast_retries()).table("faults");
    let started = std::time::Instant::now();
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(4), "stopped at the limit, not the timeout");
}

fn rows(n: usize) -> serde_json::Value {
    let value: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"PartitionKey": "p", "RowKey": format!("{i:05}"), "Timestamp": "2024-01-01T00:00:00Z"}))
        .collect();
    serde_json::json!({ "value": value })
}

#[tokio::test]
async fn pages_with_more_items_than_asked_for_are_refused() {
    let (server, table) = server_and_table().await;
    Mock::given(method("GET"))
        .and(query_param("$top", "2"))
        .respond_with(ResponseTemplate::new(200).set_body_json(rows(3)))
        .mount(&server)
        .await;
    let err = table.query().max_per_page(2).collect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    assert!(err.message().contains("3 entities") && err.message().contains("at most 2"), "{err}");

    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(rows(1001)))
        .mount(&server)
        .await;
    let err = table.query().collect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");

    server.reset().await;
    let bomb = format!(r#"{{"value":[{}]}}"#, vec!["{}"; 2_000_000].join(","));
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string(bomb))
        .mount(&server)
        .await;
    let err = table.query().collect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");

    server.reset().await;
    let names: Vec<serde_json::Value> =
        (0..3).map(|i| serde_json::json!({"TableName": format!("t{i}")})).collect();
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({ "value": names })))
        .mount(&server)
        .await;
    let client = client_at(&server.uri(), fast_retries());
    let listed: Vec<_> = client.list_tables().collect().await;
    assert_eq!(listed.len(), 3, "at most 1000 names per page by default");
}

#[tokio::test]
async fn a_success_carrying_a_service_error_is_not_an_empty_page() {
    let (server, table) = server_and_table().await;
    let body = r#"{"odata.error":{"code":"OperationTimedOut","message":{"lang":"en-US","value":"Operation could not be completed within the specified time."}},"value":[]}"#;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string(body))
        .mount(&server)
        .await;
    let err = table.query().collect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    assert_eq!(err.code(), Some(&table_client::ErrorCode::OperationTimedOut));
    let client = client_at(&server.uri(), fast_retries());
    let listed: Vec<_> = client.list_tables().collect().await;
    assert_eq!(listed[0].as_ref().unwrap_err().kind(), ErrorKind::Decode);
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
}

/// The entity of [`entity_json`], typed.
#[derive(Debug, PartialEq, TableEntity)]
#[table(partition_key = "{partition}", row_key = "{row}")]
struct Counted {
    #[table(key_only)]
    partition: String,
    #[table(key_only)]
    row: String,
    #[table(rename = "N")]
    n: i32,
}

/// The error of a point read answered about another entity than the one asked for.
const ANOTHER_ENTITY: &str = "the service answered a point read with another entity's keys";

#[tokio::test]
async fn a_point_read_answered_with_another_entity_is_a_decode_error_typed_or_not() {
    let (server, table) = server_and_table().await;
    let typed = table.typed::<Counted>();
    let key = EntityKey::new("p", "r");
    let answer = |body: serde_json::Value| ResponseTemplate::new(200).set_body_json(body);
    // Another entity's keys, and even a value the type cannot read: the keys are the fault
    // reported, as no reading of another entity's answer is right.
    for (member, n) in [("PartitionKey", 1.into()), ("RowKey", 1.into()), ("RowKey", "one".into())] {
        let mut other = entity_json();
        other[member] = "someone-else".into();
        other["N"] = n;
        server.reset().await;
        Mock::given(method("GET")).and(path(entity_path())).respond_with(answer(other)).mount(&server).await;
        let untyped = table.get("p", "r").await.unwrap_err();
        let typed = typed.get(&key).await.unwrap_err();
        for err in [untyped, typed] {
            assert_eq!(err.kind(), ErrorKind::Decode, "{member}: {err:?}");
            assert_eq!((err.message(), err.status()), (ANOTHER_ENTITY, Some(200)), "{member}: {err:?}");
        }
    }
    // The keys asked for: the entity, or, typed, the fault of its value.
    server.reset().await;
    Mock::given(method("GET"))
        .and(path(entity_path()))
        .respond_with(answer(entity_json()))
        .mount(&server)
        .await;
    assert_eq!(table.get("p", "r").await.unwrap().get("N"), Some(&table_client::Value::Int32(1)));
    let read = typed.get(&key).await.unwrap();
    assert_eq!(read, Counted { partition: "p".into(), row: "r".into(), n: 1 });
    let mut unreadable = entity_json();
    unreadable["N"] = "one".into();
    server.reset().await;
    Mock::given(method("GET")).and(path(entity_path())).respond_with(answer(unreadable)).mount(&server).await;
    let err = typed.get(&key).await.unwrap_err();
    assert!(err.message().starts_with("property \"N\""), "{err:?}");
}

#[tokio::test]
async fn every_page_request_states_its_page_size() {
    // The answer's size is checked against `$top`; a service that does not stop at 1000 on its
    // own (Cosmos DB) is told to.
    let (server, table) = server_and_table().await;
    Mock::given(method("GET"))
        .and(query_param("$top", "1000"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({ "value": [] })))
        .mount(&server)
        .await;
    assert!(table.query().collect().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_pause_the_service_asks_for_is_waited_out_before_the_retry() {
    let (server, table) = server_and_table().await;
    for (name, value) in [("x-ms-retry-after-ms", "400"), ("Retry-After", "1")] {
        server.reset().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(429).insert_header(name, value))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_json(entity_json()))
            .mount(&server)
            .await;
        let started = std::time::Instant::now();
        table.get("p", "r").await.unwrap();
        // The policy's own backoff is at most 1 ms here: only the header explains the wait.
        let asked = if name == "Retry-After" { Duration::from_secs(1) } else { Duration::from_millis(400) };
        assert!(started.elapsed() >= asked, "{name}: retried after {:?}", started.elapsed());
    }
}

/// A page of `rows` rows whose row keys start at `first`, each with a long string, so that a
/// page of many rows is far longer than a page of few.
fn long_rows(first: usize, rows: usize) -> serde_json::Value {
    let value: Vec<serde_json::Value> = (first..first + rows)
        .map(|i| {
            serde_json::json!({
                "PartitionKey": "p", "RowKey": format!("{i:05}"), "Timestamp": "2024-01-01T00:00:00Z",
                "Text": "x".repeat(200)
            })
        })
        .collect();
    serde_json::json!({ "value": value })
}

#[tokio::test]
async fn each_page_reads_only_its_own_body_after_a_longer_one() {
    // Pages of one query come one after another over the same connection: a short page after
    // a long one must show its own rows and nothing of the long one's body.
    let (server, table) = server_and_table().await;
    Mock::given(method("GET"))
        .and(query_param("NextPartitionKey", "second"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(long_rows(500, 1))
                .insert_header("x-ms-continuation-NextPartitionKey", "third"),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("NextPartitionKey", "third"))
        .respond_with(ResponseTemplate::new(200).set_body_json(long_rows(600, 40)))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(long_rows(0, 300))
                .insert_header("x-ms-continuation-NextPartitionKey", "second"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let pages: Vec<Vec<String>> = table
        .query()
        .pages()
        .map(|p| p.unwrap().items.into_iter().map(|e| e.row_key).collect())
        .collect()
        .await;
    let expected: Vec<Vec<String>> = [(0, 300), (500, 1), (600, 40)]
        .into_iter()
        .map(|(first, rows)| (first..first + rows).map(|i| format!("{i:05}")).collect())
        .collect();
    assert_eq!(pages, expected);
}

/// A server that answers the first page of a query in full, with a continuation, and every
/// later request with a head declaring more bytes than it sends before closing the connection.
fn truncating_server() -> String {
    raw_server(16, |head, mut stream| {
        let first = !String::from_utf8_lossy(head).contains("NextPartitionKey");
        let body = long_rows(0, 50).to_string();
        let (declared, sent, more) = match first {
            true => (body.len(), body.as_str(), "x-ms-continuation-NextPartitionKey: next\r\n"),
            false => (body.len(), &body[..body.len() / 2], ""),
        };
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\
             Connection: close\r\n{more}\r\n{sent}"
        );
        let _ = stream.write_all(answer.as_bytes());
    })
}

#[tokio::test]
async fn a_page_cut_short_of_its_content_length_is_a_transport_error() {
    let table = client_at(&truncating_server(), fast_retries()).table("faults");
    let mut stream = table.query().stream();
    for _ in 0..50 {
        stream.next().await.unwrap().unwrap();
    }
    // The second page stops halfway: never a shorter page, nor the end of the query.
    let err = stream.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err:?}");
    assert!(stream.next().await.is_none());
}

/// A server that answers every request (`answers` of them) with `status` and `body` sent in
/// chunked transfer encoding, cut at `cuts` (byte offsets), each piece flushed and followed by
/// a pause so that the client reads it as a chunk of its own.
fn chunked_server(answers: usize, status: &'static str, body: Vec<u8>, cuts: Vec<usize>) -> String {
    raw_server(answers, move |_, mut stream| {
        let answer = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\
             Connection: close\r\n\r\n"
        );
        let _ = stream.write_all(answer.as_bytes());
        let bounds: Vec<usize> = [0].into_iter().chain(cuts.iter().copied()).chain([body.len()]).collect();
        for piece in bounds.windows(2).map(|w| &body[w[0]..w[1]]).filter(|p| !p.is_empty()) {
            let _ = stream.write_all(format!("{:x}\r\n", piece.len()).as_bytes());
            let _ = stream.write_all(piece);
            let _ = stream.write_all(b"\r\n");
            let _ = stream.flush();
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = stream.write_all(b"0\r\n\r\n");
    })
}

#[tokio::test]
async fn a_page_is_read_whole_in_one_chunk_or_many() {
    let body = long_rows(0, 300).to_string().into_bytes();
    let len = body.len();
    for cuts in [vec![], vec![1], vec![len / 2], (1..40).map(|i| i * len / 40).collect()] {
        let pieces = cuts.len() + 1;
        let server = chunked_server(1, "200 OK", body.clone(), cuts);
        let table = client_at(&server, fast_retries()).table("faults");
        let rows: Vec<String> =
            table.query().collect().await.unwrap().into_iter().map(|e| e.row_key).collect();
        let expected: Vec<String> = (0..300).map(|i| format!("{i:05}")).collect();
        assert_eq!(rows, expected, "a page of {len} bytes in {pieces} chunks");
    }
}

#[tokio::test]
async fn a_chunked_body_is_cut_at_its_limit_to_the_byte() {
    // An error body may take 64 KiB: the service's error, padded to the limit and one past it,
    // in one chunk, or with the limit crossed by the second or a later chunk.
    const LIMIT: usize = 64 * 1024;
    let error = r#"{"odata.error":{"code":"ResourceNotFound","message":{"lang":"en-US","value":"gone"}}}"#;
    let padded = |len: usize| format!("{error}{}", " ".repeat(len - error.len())).into_bytes();
    for cuts in [vec![], vec![LIMIT / 2], vec![100, LIMIT / 2, LIMIT - 10]] {
        let server = chunked_server(1, "404 Not Found", padded(LIMIT), cuts.clone());
        let err = client_at(&server, fast_retries()).table("faults").get("p", "r").await.unwrap_err();
        let code = err.code().map(|c| c.as_str());
        assert_eq!(
            code,
            Some("ResourceNotFound"),
            "{LIMIT} bytes cut at {cuts:?} are the service's error: {err:?}"
        );

        let server = chunked_server(1, "404 Not Found", padded(LIMIT + 1), cuts.clone());
        let err = client_at(&server, fast_retries()).table("faults").get("p", "r").await.unwrap_err();
        assert_eq!((err.kind(), err.status()), (ErrorKind::Decode, Some(404)), "{cuts:?}: {err:?}");
        assert!(err.message().contains(&format!("exceeds {LIMIT} bytes")), "{err}");
    }
}

#[tokio::test]
async fn an_empty_chunked_body_is_a_decode_error_not_a_panic() {
    let server = chunked_server(4, "200 OK", Vec::new(), vec![]);
    let table = client_at(&server, fast_retries()).table("faults");
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
    let err = table.query().collect().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode, "{err:?}");
}
