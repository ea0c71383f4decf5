//! `TableServiceClient::builder()`: each check of `build()`, the options reaching the HTTP
//! backend whichever way it was chosen, and named embedded engines bound and unbound in the
//! process-wide registry.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures::StreamExt;
use table_client::auth::Credential;
use table_client::connection_string::DEVELOPMENT_KEY;
use table_client::engine::{Engine, registry};
use table_client::{Error, ErrorCode, ErrorKind, RetryPolicy, TableServiceClient, TableServiceClientBuilder};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const ACCOUNT: &str = "devstoreaccount1";
const ENDPOINT: &str = "http://127.0.0.1:10002/devstoreaccount1";

fn key() -> Credential {
    Credential::shared_key(ACCOUNT, DEVELOPMENT_KEY).unwrap()
}

fn account_string(endpoint: &str) -> String {
    format!("AccountName={ACCOUNT};AccountKey={DEVELOPMENT_KEY};TableEndpoint={endpoint}")
}

/// The error `build()` answers, which must be `InvalidInput` with a message containing `says`.
fn refused(builder: TableServiceClientBuilder, says: &str) -> Error {
    let err = builder.build().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.message().contains(says), "{:?} does not say {says:?}", err.message());
    err
}

// ---------------------------------------------------------------- checks of build()

#[test]
fn more_than_one_backend_is_refused_naming_them() {
    let builder = TableServiceClient::builder;
    refused(
        builder().connection_string("UseDevelopmentStorage=true").endpoint(ENDPOINT).credential(key()),
        "`connection_string` and `endpoint` were given",
    );
    refused(builder().endpoint(ENDPOINT).credential(key()).engine(Engine::new()), "`endpoint` and `engine`");
    refused(
        builder().connection_string("UseEmbeddedEngine=true").endpoint(ENDPOINT).engine(Engine::new()),
        "`connection_string` and `endpoint` and `engine`",
    );
    // The choice is checked before the connection string's own error.
    refused(builder().connection_string("AcountKey=typo").engine(Engine::new()), "choose one backend");
}

#[test]
fn no_backend_is_refused() {
    refused(TableServiceClient::builder(), "no backend");
    refused(TableServiceClient::builder().credential(key()).timeout(Duration::from_secs(1)), "no backend");
}

#[test]
fn a_zero_timeout_is_refused_on_every_backend() {
    let zero = || TableServiceClient::builder().timeout(Duration::ZERO);
    refused(zero().endpoint(ENDPOINT).credential(key()), "`timeout` must be more than zero");
    refused(zero().engine(Engine::new()), "`timeout` must be more than zero");
    refused(zero().connection_string("UseEmbeddedEngine=true"), "`timeout` must be more than zero");
}

#[test]
fn a_connection_string_error_waits_for_build() {
    let builder = TableServiceClient::builder().connection_string("AccountName=acct;AcountKey=x");
    refused(builder, "AcountKey");
    let err = TableServiceClient::builder()
        .connection_string("AccountName=acct;AccountKey=not*base64")
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    // A later, valid string replaces the broken one.
    TableServiceClient::builder()
        .connection_string("UseEmbeddedEngine=true;Bad")
        .connection_string("UseEmbeddedEngine=true")
        .build()
        .unwrap();
}

#[test]
fn a_credential_goes_only_with_an_endpoint() {
    refused(
        TableServiceClient::builder().connection_string("UseDevelopmentStorage=true").credential(key()),
        "a connection string carries its own",
    );
    refused(TableServiceClient::builder().engine(Engine::new()).credential(key()), "takes no `credential`");
    refused(TableServiceClient::builder().endpoint(ENDPOINT), "an `endpoint` needs a `credential`");
}

#[test]
fn an_invalid_endpoint_is_refused_without_echoing_it() {
    for endpoint in ["ftp://127.0.0.1/devstoreaccount1", "127.0.0.1:10002", "http://h/a?sig=hunter2secret"] {
        let err = refused(TableServiceClient::builder().endpoint(endpoint).credential(key()), "the endpoint");
        assert!(!format!("{err} {err:?}").contains("hunter2secret"), "{err:?}");
    }
}

#[test]
fn the_builder_never_shows_the_key() {
    let builder = TableServiceClient::builder()
        .connection_string(&account_string(ENDPOINT))
        .endpoint(ENDPOINT)
        .credential(key());
    let text = format!("{builder:?}");
    assert!(!text.contains(&DEVELOPMENT_KEY[..20]), "{text}");
}

// ---------------------------------------------------------------- what build() makes

/// A server that answers every request 503 `ServerBusy` (a transient failure), and the
/// number of requests one read through a client built from `builder` made.
async fn attempts(builder: impl FnOnce(&str) -> TableServiceClientBuilder) -> usize {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).set_body_string(
            r#"{"odata.error":{"code":"ServerBusy","message":{"value":"The server is busy."}}}"#,
        ))
        .mount(&server)
        .await;
    let client = builder(&format!("{}/{ACCOUNT}", server.uri())).build().unwrap();
    let err = client.table("busy").get("p", "r").await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::ServerBusy));
    server.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn the_retry_policy_reaches_the_backend_however_it_is_chosen() {
    let retries = || RetryPolicy::default().max_retries(2).initial_backoff(Duration::from_millis(1));
    let by_endpoint =
        attempts(|e| TableServiceClient::builder().endpoint(e).credential(key()).retry(retries())).await;
    assert_eq!(by_endpoint, 3);
    let by_string =
        attempts(|e| TableServiceClient::builder().connection_string(&account_string(e)).retry(retries()));
    assert_eq!(by_string.await, 3);
    let never =
        attempts(|e| TableServiceClient::builder().endpoint(e).credential(key()).retry(RetryPolicy::none()));
    assert_eq!(never.await, 1);
}

#[tokio::test]
async fn the_timeout_reaches_the_backend() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let client = TableServiceClient::builder()
        .connection_string(&account_string(&format!("{}/{ACCOUNT}", server.uri())))
        .retry(RetryPolicy::none())
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let err = client.table("slow").get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn an_engine_client_shares_the_engine_and_ignores_transport_options() {
    let engine = Engine::new();
    let client = TableServiceClient::builder()
        .engine(engine.clone())
        .retry(RetryPolicy::none())
        .timeout(Duration::from_nanos(1))
        .build()
        .unwrap();
    client.create_table("shared").await.unwrap();
    assert_eq!(engine.create_table("shared").unwrap_err().code(), Some(&ErrorCode::TableAlreadyExists));
    // The same options with an embedded connection string: accepted, and nothing times out.
    let private = TableServiceClient::builder()
        .connection_string("UseEmbeddedEngine=true")
        .timeout(Duration::from_nanos(1))
        .build()
        .unwrap();
    private.create_table("shared").await.unwrap();
}

// ---------------------------------------------------------------- named engines

async fn table_names(client: &TableServiceClient) -> Vec<String> {
    client.list_tables().map(Result::unwrap).collect().await
}

#[tokio::test]
async fn named_engines_are_shared_until_the_name_is_removed_or_cleared() {
    // The only test of this file that touches the process-wide registry, so no other test
    // unbinds its names underneath it.
    const FIRST: &str = "UseEmbeddedEngine=true;Name=builder-tests-first";
    const SECOND: &str = "UseEmbeddedEngine=true;Name=builder-tests-second";
    let old = TableServiceClient::from_connection_string(FIRST).unwrap();
    old.create_table("kept").await.unwrap();
    let same = TableServiceClient::builder().connection_string(FIRST).build().unwrap();
    assert_eq!(table_names(&same).await, ["kept"]);

    assert!(registry::remove("builder-tests-first").is_some());
    let fresh = TableServiceClient::from_connection_string(FIRST).unwrap();
    assert!(table_names(&fresh).await.is_empty(), "a new client after removal gets a fresh engine");
    assert_eq!(table_names(&old).await, ["kept"], "existing clients keep their engine");
    assert_eq!(table_names(&same).await, ["kept"]);

    let second = TableServiceClient::from_connection_string(SECOND).unwrap();
    second.create_table("alsokept").await.unwrap();
    fresh.create_table("dropped").await.unwrap();
    registry::clear();
    for name in [FIRST, SECOND] {
        let client = TableServiceClient::from_connection_string(name).unwrap();
        assert!(table_names(&client).await.is_empty(), "{name} is unbound by clear()");
    }
    assert_eq!(table_names(&second).await, ["alsokept"]);
    assert_eq!(table_names(&fresh).await, ["dropped"]);
}
