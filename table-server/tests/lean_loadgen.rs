//! The server bench's lean load generator (`benches/server/lean.rs`) against a table-server
//! with SharedKey and SAS checked: every phase's requests are accepted as the SDK's are, a
//! scan follows the continuation to the last row, and a wrong answer stops the bench instead
//! of being counted; and the answer checks on bodies no server here would send.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use futures::TryStreamExt;
use table_client::{Entity, Operation, TableServiceClient};
use table_core::engine::Engine;
use table_server::{Accounts, Config, DEV_ACCOUNT, DEV_KEY, Server};

#[path = "../benches/server/lean.rs"]
mod lean;

// The bench's entry point (`serve_if_asked`) is not used here.
#[allow(dead_code)]
#[path = "../benches/server/floor.rs"]
mod floor;

use lean::{Answer, Connection, Target, batch_answered, count_page_entities};

/// A server with SharedKey and SAS checked over a fresh engine holding the empty table `Lean`,
/// and an SDK client of its development account (with the key, as the bench's).
async fn start() -> (Server, TableServiceClient) {
    let engine = Engine::new();
    engine.create_table("Lean").unwrap();
    let config = Config {
        address: SocketAddr::from(([127, 0, 0, 1], 0)),
        accounts: Accounts::development(engine),
        auth: true,
    };
    let server = Server::bind(config).await.unwrap();
    let conn = format!(
        "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};\
         TableEndpoint=http://{}/{DEV_ACCOUNT}",
        server.local_addr()
    );
    (server, TableServiceClient::from_connection_string(&conn).unwrap())
}

fn entity(partition: &str, row: usize) -> Entity {
    Entity::new(partition, format!("{row:04}")).with("Name", format!("row {row}")).with("Age", 30)
}

/// Runs `work` on one connection to `target`.
async fn on_connection<T, F: Future<Output = T>>(target: &Target, work: impl FnOnce(Connection) -> F) -> T {
    let stream = target.connect(1).await.pop().unwrap();
    Connection::run(stream, work).await
}

#[tokio::test]
async fn every_phase_is_accepted_and_applied() {
    let (_server, service) = start().await;
    let target = Target::new(&service);
    let inserts: Vec<_> = (0..25).map(|i| target.insert("Lean", &entity("p", i))).collect();
    let gets: Vec<_> = (0..25).map(|i| target.get("Lean", "p", &format!("{i:04}"))).collect();
    let operations: Vec<Operation> = (0..10).map(|i| Operation::Insert(entity("q", i))).collect();
    let batch = target.batch("Lean", &operations);
    let scanned = &target;
    let (rows, pages) = on_connection(&target, |mut connection| async move {
        for exchange in inserts.into_iter().chain(gets).chain([batch]) {
            connection.exchange(exchange).await;
        }
        let mut latencies = Vec::new();
        let rows = connection.scan(scanned, "Lean", 7, &mut latencies).await;
        (rows, latencies.len())
    })
    .await;
    // 35 rows in pages of 7: five full pages, and the server may end with an empty one.
    assert_eq!(rows, 35, "the scan counts every row once");
    assert!(pages >= 5, "the scan followed the continuation ({pages} pages)");
    let stored: Vec<Entity> = service.table("Lean").query().collect().await.unwrap();
    assert_eq!(stored.len(), 35, "every insert and batch applied");
    assert_eq!(stored.iter().filter(|e| e.partition_key == "q").count(), 10);
}

/// The floor passes every check the lean client makes of the requests it runs on (a table
/// created and deleted, inserts, gets), so its figures count the same exchanges.
#[tokio::test]
async fn the_floor_answers_what_the_lean_client_checks_of_inserts_and_gets() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/{DEV_ACCOUNT}", listener.local_addr().unwrap());
    tokio::spawn(floor::serve(listener));
    let service = TableServiceClient::from_connection_string(&format!(
        "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};TableEndpoint={endpoint}"
    ))
    .unwrap();
    let target = Target::new(&service);
    let exchanges: Vec<_> = [target.create_table("Floor")]
        .into_iter()
        .chain((0..5).map(|i| target.insert("Floor", &entity("p", i))))
        .chain((0..5).map(|i| target.get("Floor", "p", &format!("{i:04}"))))
        .chain([target.delete_table("Floor")])
        .collect();
    on_connection(&target, |mut connection| async move {
        for exchange in exchanges {
            connection.exchange(exchange).await;
        }
    })
    .await;
}

#[tokio::test]
async fn tables_are_created_and_deleted() {
    let (_server, service) = start().await;
    let target = Target::new(&service);
    let tables = || async { service.query_tables(None).try_collect::<Vec<String>>().await.unwrap() };
    target.send_one(target.create_table("Made")).await;
    assert!(tables().await.contains(&"Made".to_owned()));
    target.send_one(target.delete_table("Made")).await;
    assert!(!tables().await.contains(&"Made".to_owned()));
}

#[tokio::test]
#[should_panic(expected = "404")]
async fn a_get_of_a_missing_entity_stops_the_bench() {
    let (_server, service) = start().await;
    let target = Target::new(&service);
    let get = target.get("Lean", "p", "absent");
    target.send_one(get).await;
}

#[tokio::test]
#[should_panic(expected = "unexpected answer")]
async fn a_batch_whose_operation_failed_stops_the_bench() {
    let (_server, service) = start().await;
    service.table("Lean").insert(entity("p", 1)).await.unwrap();
    let target = Target::new(&service);
    // The outer answer is 202 either way; only the part's status line says it failed.
    let operations: Vec<Operation> = (0..3).map(|i| Operation::Insert(entity("p", i))).collect();
    let batch = target.batch("Lean", &operations);
    target.send_one(batch).await;
}

#[tokio::test]
#[should_panic(expected = "403")]
async fn a_request_the_server_refuses_stops_the_bench() {
    let (server, service) = start().await;
    let target = Target::new(&service);
    // A SAS is checked against the account it was signed for: another key's is refused.
    let other = TableServiceClient::from_connection_string(&format!(
        "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey=b3RoZXIga2V5;\
         TableEndpoint=http://{}/{DEV_ACCOUNT}",
        server.local_addr()
    ))
    .unwrap();
    let forged = Target::new(&other);
    let insert = forged.insert("Lean", &entity("p", 1));
    target.send_one(insert).await;
}

#[test]
fn a_get_answer_is_the_entity_asked_for() {
    let asked = Answer::Entity(r#""RowKey":"0007""#.to_owned());
    assert!(asked.accepts(br#"{"odata.etag":"e","PartitionKey":"p","RowKey":"0007","Age":30}"#));
    assert!(!asked.accepts(br#"{"odata.etag":"e","PartitionKey":"p","RowKey":"0008","Age":30}"#));
    assert!(!asked.accepts(br#"{"odata.etag":"e","PartitionKey":"p","RowKey":"0007","Age":"#));
    assert!(!asked.accepts(b""));
}

#[test]
fn a_page_is_counted_by_its_entities() {
    let page = br#"{"odata.metadata":"m","value":[{"PartitionKey":"a","RowKey":"1"},{"PartitionKey":"a","RowKey":"2"}]}"#;
    assert_eq!(count_page_entities(page), 2);
    assert_eq!(count_page_entities(br#"{"odata.metadata":"m","value":[]}"#), 0);
}

#[test]
#[should_panic(expected = "not a query page")]
fn an_error_body_is_not_a_page() {
    count_page_entities(br#"{"odata.error":{"code":"x","message":{"value":"PartitionKey"}}}"#);
}

#[test]
#[should_panic(expected = "not a query page")]
fn a_cut_page_is_not_a_page() {
    count_page_entities(br#"{"odata.metadata":"m","value":[{"PartitionKey":"a","RowKey":"1"}"#);
}

#[test]
fn a_batch_answer_needs_every_part_and_every_part_2xx() {
    let part = |status: &str| {
        format!(
            "--changesetresponse_v\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 {status}\r\n\r\n\r\n"
        )
    };
    let body = |parts: &[&str]| {
        let parts: String = parts.iter().map(|s| part(s)).collect();
        format!("--batchresponse_u\r\n{parts}--changesetresponse_v--\r\n--batchresponse_u--\r\n")
    };
    assert!(batch_answered(body(&["204 No Content", "201 Created"]).as_bytes(), 2));
    assert!(!batch_answered(body(&["204 No Content", "201 Created"]).as_bytes(), 3), "a part missing");
    assert!(!batch_answered(body(&["409 Conflict"]).as_bytes(), 1), "a failed operation");
    assert!(!batch_answered(b"x\nHTTP/1.1 ", 1), "a status line cut short");
}
