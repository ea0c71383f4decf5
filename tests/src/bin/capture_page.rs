//! Captures one query page and one point read exactly as Azurite returns them, for the
//! `page_decode` group of the `wire` bench (table-client/benches/wire.rs) and the
//! `typed_decode` bench.
//!
//! ```text
//! cargo run -p conformance --bin capture_page
//! ```
//!
//! Starts Azurite through the harness (or uses `AZURITE_TABLE_ENDPOINT`), inserts 1000
//! entities with eight properties of eight EDM types (String, Int32, Int64, Double, Boolean,
//! DateTime, Guid, Binary) into a fresh table, reads one page of 1000 with the `Accept`
//! header the client sends, and writes the raw body to
//! `table-client/benches/fixtures/azurite_page_1000.json`; then reads the first of them alone,
//! a point read, into `azurite_point_read.json` beside it. Rerun it to regenerate the fixtures
//! (the benches read whatever bodies are there; only table name, timestamps and ETags change).

// A capture tool: every failure ends the run with its cause.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use bytes::Bytes;
use chrono::{DateTime, Duration, Utc};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use table_client::auth::{TableSasBuilder, TableSasPermissions};
use table_client::{Entity, Operation, TableServiceClient};
use uuid::Uuid;

/// Entities in the page (the service's largest page).
const ROWS: usize = 1000;

/// The client's `Accept` header for entity reads (JSON, minimal metadata).
const ACCEPT: &str = "application/json;odata=minimalmetadata";

/// The service version the client sends.
const API_VERSION: &str = "2019-02-02";

/// One row: the same shape as the bench's serde floor struct.
fn entity(i: usize) -> Entity {
    let n = i64::try_from(i).expect("small");
    let joined = DateTime::<Utc>::from_timestamp(1_700_000_000 + n * 3_607, 123_456_700).expect("in range");
    Entity::new("partition-0001", format!("row-{i:06}"))
        .with("Name", format!("customer number {i}"))
        .with("Age", i32::try_from(i % 90).expect("small"))
        .with("Visits", 1_099_511_627_776i64 + n)
        .with("Balance", n as f64 * 1.25 + 0.5)
        .with("Active", i.is_multiple_of(2))
        .with("Joined", joined)
        .with("Id", Uuid::from_u128(0x5eed_0000_0000_0000_0000_0000_0000_0000 + i as u128))
        .with("Avatar", (0..16).map(|b| (b * 31 + i) as u8).collect::<Vec<u8>>())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let azurite = conformance::azurite::azurite().expect("Azurite (Node.js and npm are needed)");
    let service = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let name = format!("capture{}", Uuid::new_v4().simple());
    let table = service.create_table(&name).await.unwrap();
    let report = table.bulk((0..ROWS).map(|i| Operation::Insert(entity(i))), 4).await;
    assert!(report.is_success(), "insert failed: {:?}", report.failures().next());

    let sas = TableSasBuilder::new(&name)
        .permissions(TableSasPermissions::parse("r").unwrap())
        .expiry(Utc::now() + Duration::hours(1));
    let table_url = table.generate_sas_url(&sas).unwrap();
    let client = Client::builder(TokioExecutor::new()).build_http();
    let body = read(&client, &format!("{table_url}&$top={ROWS}")).await;
    let page = table_client::wire::decode_query_page(&body).unwrap();
    assert_eq!(page.len(), ROWS, "one full page");
    write_fixture("azurite_page_1000.json", &body);

    // The SAS URL is the table's, its query after the name: the entity's path goes between.
    let (path, sas_query) = table_url.split_once('?').expect("a SAS URL has a query");
    let key = "(PartitionKey='partition-0001',RowKey='row-000000')";
    let body = read(&client, &format!("{path}{key}?{sas_query}")).await;
    table_client::wire::decode_entity(&body, None).unwrap();
    write_fixture("azurite_point_read.json", &body);
    service.delete_table(&name).await.unwrap();
}

/// The body of a GET of `url`, sent as the client sends its reads.
async fn read(client: &Client<HttpConnector, Empty<Bytes>>, url: &str) -> Bytes {
    let request = hyper::Request::get(url)
        .header("Accept", ACCEPT)
        .header("x-ms-version", API_VERSION)
        .header("DataServiceVersion", "3.0")
        .header("MaxDataServiceVersion", "3.0;NetFx")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(status.is_success(), "{status}: {}", String::from_utf8_lossy(&body));
    body
}

/// Writes `body` to the bench fixture `name`.
fn write_fixture(name: &str, body: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../table-client/benches/fixtures").join(name);
    std::fs::create_dir_all(path.parent().expect("a folder")).unwrap();
    std::fs::write(&path, body).unwrap();
    println!("{} bytes -> {}", body.len(), path.display());
}
