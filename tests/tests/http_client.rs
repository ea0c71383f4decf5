//! The HTTP client's own headers and routing against a real server (Azurite): a client with
//! an application id in its `User-Agent` still does its work, and a read-access geo-redundant
//! read reaches Azurite's secondary endpoint (`/devstoreaccount1-secondary`) when the primary
//! cannot be reached. Skips loudly where Azurite cannot run; fails with `REQUIRE_AZURITE=1`.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use conformance::azurite::{ACCOUNT_KEY, ACCOUNT_NAME, azurite, unique_table_name};
use table_client::auth::Credential;
use table_client::{Entity, LocationMode, RetryPolicy, TableServiceClient};

#[tokio::test]
async fn a_client_with_an_application_id_works_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let service = TableServiceClient::builder()
        .connection_string(&azurite.connection_string)
        .application_id("conformance/1.0")
        .build()
        .unwrap();
    let name = unique_table_name("useragent");
    let table = service.create_table(&name).await.unwrap();
    table.insert(Entity::new("p", "r").with("N", 1)).await.unwrap();
    assert_eq!(table.get("p", "r").await.unwrap().properties.len(), 1);
    assert_eq!(table.query().partition("p").collect().await.unwrap().len(), 1);
    service.delete_table(&name).await.unwrap();
}

#[tokio::test]
async fn a_read_reaches_the_secondary_when_the_primary_is_down() {
    let Some(azurite) = azurite() else { return };
    let admin = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let name = unique_table_name("secondary");
    let table = admin.create_table(&name).await.unwrap();
    table.insert(Entity::new("p", "r").with("N", 1)).await.unwrap();

    // Nothing listens on port 1: every attempt at the primary fails to connect.
    let geo = TableServiceClient::builder()
        .endpoint(&format!("http://127.0.0.1:1/{ACCOUNT_NAME}"))
        .secondary_endpoint(&format!("{}-secondary", azurite.endpoint))
        .location_mode(LocationMode::PrimaryThenSecondary)
        .credential(Credential::shared_key(ACCOUNT_NAME, ACCOUNT_KEY).unwrap())
        .retry(RetryPolicy::default().max_retries(1).initial_backoff(Duration::from_millis(1)))
        .build()
        .unwrap();
    let read = geo.table(&name).get("p", "r").await.unwrap();
    assert_eq!(read.properties.len(), 1);
    // A write never goes there: it fails on the unreachable primary.
    let write = geo.table(&name).insert_or_replace(Entity::new("p", "r")).await.unwrap_err();
    assert_eq!(write.kind(), table_client::ErrorKind::Transport);
    admin.delete_table(&name).await.unwrap();
}
