//! How the HTTP client behaves on the wire, seen from the server (wiremock, and a raw socket
//! playing an HTTP proxy): `Retry-After` in both forms, the `User-Agent` with its application
//! id, one `x-ms-client-request-id` per call across its retries, a proxy or the caller's own
//! `reqwest::Client`, and reads from the secondary endpoint of a geo-redundant account.
//! Every server listens on 127.0.0.1.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use table_client::auth::Credential;
use table_client::{
    Entity, ErrorKind, LocationMode, RetryPolicy, TableServiceClient, TableServiceClientBuilder,
};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use support::raw_server;

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// Three retries after 1 ms at most, unless the service asks for more (up to 5 s).
fn builder() -> TableServiceClientBuilder {
    TableServiceClient::builder()
        .credential(Credential::shared_key(ACCOUNT, KEY).unwrap())
        .retry(RetryPolicy::default().max_retries(3).initial_backoff(Duration::from_millis(1)))
        .timeout(Duration::from_secs(5))
}

fn account_url(base: &str) -> String {
    format!("{base}/{ACCOUNT}")
}

fn entity_json() -> serde_json::Value {
    serde_json::json!({
        "odata.etag": "W/\"datetime'2024-01-01T00%3A00%3A00.0000001Z'\"",
        "PartitionKey": "p", "RowKey": "r", "Timestamp": "2024-01-01T00:00:00.0000001Z",
    })
}

fn entity() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(entity_json())
}

fn entity_path() -> String {
    format!("/{ACCOUNT}/wired(PartitionKey='p',RowKey='r')")
}

/// Answers the first `n` GETs with `first`, the later ones with an entity.
async fn first_then_entity(server: &MockServer, n: u64, first: ResponseTemplate) {
    Mock::given(method("GET")).respond_with(first).up_to_n_times(n).mount(server).await;
    Mock::given(method("GET")).respond_with(entity()).mount(server).await;
}

fn http_date(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_waited_out_on_429_and_503() {
    let server = MockServer::start().await;
    let table = builder().endpoint(&account_url(&server.uri())).build().unwrap().table("wired");
    for status in [429, 503] {
        server.reset().await;
        // Whole seconds: three seconds ahead is at least two from now.
        let date = http_date(chrono::Utc::now() + chrono::Duration::seconds(3));
        first_then_entity(&server, 1, ResponseTemplate::new(status).insert_header("Retry-After", date)).await;
        let started = Instant::now();
        table.get("p", "r").await.unwrap();
        // The policy's own backoff is at most 1 ms here: only the date explains the wait.
        assert!(
            started.elapsed() >= Duration::from_millis(1500),
            "{status}: retried after {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn retry_after_dates_past_far_or_unreadable_stay_within_the_policy() {
    let server = MockServer::start().await;
    let policy = RetryPolicy::default()
        .initial_backoff(Duration::from_millis(1))
        .max_backoff(Duration::from_millis(200));
    let table = builder().retry(policy).endpoint(&account_url(&server.uri())).build().unwrap().table("wired");
    let now = chrono::Utc::now();
    let values = [
        http_date(now - chrono::Duration::hours(1)),
        http_date(now + chrono::Duration::hours(1)),
        "Sunday, 06-Nov-94 08:49:37 GMT".to_owned(),
        "Sun Nov  6 08:49:37 1994".to_owned(),
        "soon, please".to_owned(),
    ];
    for value in values {
        server.reset().await;
        first_then_entity(
            &server,
            1,
            ResponseTemplate::new(503).insert_header("Retry-After", value.as_str()),
        )
        .await;
        let started = Instant::now();
        table.get("p", "r").await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{value:?}: retried after {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn retry_after_is_only_honoured_on_429_and_503() {
    let server = MockServer::start().await;
    let table = builder().endpoint(&account_url(&server.uri())).build().unwrap().table("wired");
    // A read is retried after a 500, with the policy's backoff whatever the answer asks.
    first_then_entity(&server, 1, ResponseTemplate::new(500).insert_header("Retry-After", "3")).await;
    let started = Instant::now();
    table.get("p", "r").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "retried after {:?}", started.elapsed());
}

/// The values of `name` in each request the server received, in order.
async fn header_values(server: &MockServer, name: &str) -> Vec<String> {
    let requests = server.received_requests().await.unwrap();
    requests
        .iter()
        .map(|r| r.headers.get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn every_attempt_of_a_call_carries_its_one_client_request_id_and_the_user_agent() {
    let server = MockServer::start().await;
    let table = builder()
        .application_id("inventory/2.1")
        .endpoint(&account_url(&server.uri()))
        .build()
        .unwrap()
        .table("wired");
    first_then_entity(&server, 2, ResponseTemplate::new(503)).await;
    table.get("p", "r").await.unwrap();
    table.get("p", "r").await.unwrap();

    let ids = header_values(&server, "x-ms-client-request-id").await;
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert!(uuid::Uuid::parse_str(&ids[0]).is_ok(), "{ids:?}");
    assert!(ids[0] == ids[1] && ids[1] == ids[2], "one id across a call's retries: {ids:?}");
    assert_ne!(ids[2], ids[3], "the next call has its own id");

    let expected = format!(
        "inventory/2.1 azsdk-rust-table-client/{} ({}; {})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    for agent in header_values(&server, "user-agent").await {
        assert_eq!(agent, expected);
    }
}

#[tokio::test]
async fn without_an_application_id_the_user_agent_names_the_sdk_alone() {
    let server = MockServer::start().await;
    Mock::given(method("GET")).respond_with(entity()).mount(&server).await;
    builder()
        .endpoint(&account_url(&server.uri()))
        .build()
        .unwrap()
        .table("wired")
        .get("p", "r")
        .await
        .unwrap();
    let agent = header_values(&server, "user-agent").await.remove(0);
    assert!(
        agent.starts_with(&format!("azsdk-rust-table-client/{} (", env!("CARGO_PKG_VERSION"))),
        "{agent}"
    );
}

#[test]
fn application_ids_follow_the_azure_sdk_rule() {
    let with =
        |id: &str| builder().endpoint("http://127.0.0.1:1/devstoreaccount1").application_id(id).build();
    assert!(with("inventory").is_ok());
    assert!(with(&"a".repeat(24)).is_ok());
    for bad in ["", "my app", "line\nbreak", "caf\u{e9}", &"a".repeat(25)] {
        let err = with(bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
        assert!(err.to_string().contains("application_id"), "{err}");
    }
}

/// A one-connection HTTP proxy on 127.0.0.1: it sends the head of the request it receives
/// (request line and headers) down the channel and answers with the entity `p`/`r`.
fn recording_proxy() -> (String, mpsc::Receiver<String>) {
    let (heads, received) = mpsc::channel();
    let url = raw_server(1, move |head, mut stream| {
        let body = entity_json().to_string();
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json;odata=minimalmetadata\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(answer.as_bytes());
        let _ = heads.send(String::from_utf8_lossy(head).into_owned());
    });
    (url, received)
}

/// An endpoint nothing listens on: a request that reaches the proxy did not go there.
const UNREACHABLE: &str = "http://127.0.0.1:1/devstoreaccount1";

fn assert_proxied(head: &str) {
    let request_line = head.lines().next().unwrap();
    assert_eq!(
        request_line,
        format!("GET {UNREACHABLE}/wired(PartitionKey='p',RowKey='r') HTTP/1.1"),
        "{head}"
    );
    assert!(head.to_ascii_lowercase().contains("user-agent: azsdk-rust-table-client/"), "{head}");
}

#[tokio::test]
async fn a_proxy_carries_every_request() {
    let (proxy, heads) = recording_proxy();
    let table = builder().proxy(&proxy).endpoint(UNREACHABLE).build().unwrap().table("wired");
    assert_eq!(table.get("p", "r").await.unwrap().row_key, "r");
    assert_proxied(&heads.recv_timeout(Duration::from_secs(5)).unwrap());
}

#[tokio::test]
async fn a_caller_s_own_client_is_used_as_built() {
    let (proxy, heads) = recording_proxy();
    let own = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(&proxy).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let table = builder().http_client(own).endpoint(UNREACHABLE).build().unwrap().table("wired");
    assert_eq!(table.get("p", "r").await.unwrap().row_key, "r");
    assert_proxied(&heads.recv_timeout(Duration::from_secs(5)).unwrap());
}

#[tokio::test]
async fn the_timeout_applies_to_a_caller_s_own_client() {
    let server = MockServer::start().await;
    Mock::given(method("GET")).respond_with(entity().set_delay(Duration::from_secs(3))).mount(&server).await;
    let table = builder()
        .http_client(reqwest::Client::new())
        .retry(RetryPolicy::none())
        .timeout(Duration::from_millis(200))
        .endpoint(&account_url(&server.uri()))
        .build()
        .unwrap()
        .table("wired");
    assert_eq!(table.get("p", "r").await.unwrap_err().kind(), ErrorKind::Timeout);
}

#[tokio::test]
async fn an_answer_from_a_redirect_a_caller_s_client_followed_is_refused() {
    let (server, elsewhere) = (MockServer::start().await, MockServer::start().await);
    Mock::given(method("GET")).respond_with(entity()).mount(&elsewhere).await;
    let target = format!("{}/moved?sig=SECRET", elsewhere.uri());
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(307).insert_header("Location", target.as_str()))
        .mount(&server)
        .await;
    // reqwest's default client follows redirects.
    let table =
        builder().http_client(reqwest::Client::new()).endpoint(&account_url(&server.uri())).build().unwrap();
    let err = table.table("wired").get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&format!("{}/moved", elsewhere.uri())) && !text.contains("SECRET"), "{text}");
}

#[test]
fn proxies_are_checked_when_the_client_is_built() {
    let with = |proxy: &str| builder().endpoint(UNREACHABLE).proxy(proxy).build();
    assert!(with("http://127.0.0.1:3128").is_ok());
    assert!(with("https://user:secret@proxy.example:8443/").is_ok());
    for bad in
        ["proxy.example:3128", "socks5://127.0.0.1:1080", "ftp://proxy", "http://proxy/path", "http://p?q=1"]
    {
        let err = with(bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
        assert!(err.to_string().contains("`proxy`"), "{err}");
    }
    let err = with("http://user:hunter2@proxy/x").unwrap_err();
    assert!(!err.to_string().contains("hunter2") && !format!("{err:?}").contains("hunter2"), "{err:?}");
    let both =
        builder().endpoint(UNREACHABLE).proxy("http://127.0.0.1:3128").http_client(reqwest::Client::new());
    assert_eq!(both.build().unwrap_err().kind(), ErrorKind::InvalidInput);
}

/// A self-signed root (a P-256 key, valid for a century) whose private key was thrown away.
const SOME_ROOT_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBfjCCASWgAwIBAgIUbrgJNyZ5AK7Je2oARhcG3qD6UiAwCgYIKoZIzj0EAwIw\nFDESMBAGA1UEAwwJdGVzdCByb290MCAXDTI2MTEyMzAyNDcyN1oYDzIxMjYxMDMw\nMDI0NzI3WjAUMRIwEAYDVQQDDAl0ZXN0IHJvb3QwWTATBgcqhkjOPQIBBggqhkjO\nPQMBBwNCAAQqM99OZIYC8NbpETdZaQ44ZyjCkpnXrB14VekWBJX3h6TX4r31RDxC\nb6Nrxs6bEMxDvvBlqpV61yydQPwfCovPo1MwUTAdBgNVHQ4EFgQUcRXuefXxTNMp\ntUgBcxoI/JFyuC4wHwYDVR0jBBgwFoAUcRXuefXxTNMptUgBcxoI/JFyuC4wDwYD\nVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiBKzIVdDJo69nYeTnRFw9iR\nvhW7eSQkJQ4I/mXZSFh5SAIgJfQxNMDKtI86fz+U23h1fs3fZIQi+dDARZdgOait\nYIo=\n-----END CERTIFICATE-----\n";

#[test]
fn root_certificates_and_an_own_client_are_refused_together() {
    let roots = || builder().endpoint(UNREACHABLE).root_certificate_pem(SOME_ROOT_PEM.as_bytes());
    assert!(roots().build().is_ok());
    let err = roots().http_client(reqwest::Client::new()).build().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("root_certificate_pem"), "{err}");
}

/// A primary that answers every request with 503 `ServerBusy`.
async fn busy_primary() -> MockServer {
    let primary = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(503).insert_header("x-ms-error-code", "ServerBusy"))
        .mount(&primary)
        .await;
    primary
}

async fn methods(server: &MockServer) -> Vec<String> {
    server.received_requests().await.unwrap().iter().map(|r| r.method.to_string()).collect()
}

#[tokio::test]
async fn reads_fall_back_to_the_secondary_and_writes_never_go_there() {
    let (primary, secondary) = (busy_primary().await, MockServer::start().await);
    Mock::given(method("GET")).and(path(entity_path())).respond_with(entity()).mount(&secondary).await;
    Mock::given(wiremock::matchers::any()).respond_with(ResponseTemplate::new(204)).mount(&secondary).await;
    let table = builder()
        .endpoint(&account_url(&primary.uri()))
        .location_mode(LocationMode::PrimaryThenSecondary)
        .secondary_endpoint(&account_url(&secondary.uri()))
        .build()
        .unwrap()
        .table("wired");

    assert_eq!(table.get("p", "r").await.unwrap().row_key, "r");
    assert_eq!(methods(&primary).await, ["GET"]);
    assert_eq!(methods(&secondary).await, ["GET"]);

    let err = table.insert_or_replace(Entity::new("p", "r")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Throttled);
    assert_eq!(
        methods(&primary).await.iter().filter(|m| *m == "PUT").count(),
        4,
        "the write is retried on the primary"
    );
    assert_eq!(methods(&secondary).await, ["GET"], "no write reaches the secondary");
}

#[tokio::test]
async fn one_read_keeps_its_client_request_id_across_locations() {
    let (primary, secondary) = (busy_primary().await, MockServer::start().await);
    Mock::given(method("GET")).respond_with(entity()).mount(&secondary).await;
    let table = builder()
        .endpoint(&account_url(&primary.uri()))
        .location_mode(LocationMode::PrimaryThenSecondary)
        .secondary_endpoint(&account_url(&secondary.uri()))
        .build()
        .unwrap()
        .table("wired");
    table.get("p", "r").await.unwrap();
    let on_primary = header_values(&primary, "x-ms-client-request-id").await;
    let on_secondary = header_values(&secondary, "x-ms-client-request-id").await;
    assert_eq!(on_primary, on_secondary);
}

#[tokio::test]
async fn a_404_from_the_secondary_sends_the_read_back_to_the_primary() {
    let (primary, secondary) = (MockServer::start().await, MockServer::start().await);
    first_then_entity(&primary, 1, ResponseTemplate::new(503)).await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404).insert_header("x-ms-error-code", "ResourceNotFound"))
        .mount(&secondary)
        .await;
    let client = |retries: u32| {
        builder()
            .retry(RetryPolicy::default().max_retries(retries).initial_backoff(Duration::from_millis(1)))
            .endpoint(&account_url(&primary.uri()))
            .location_mode(LocationMode::PrimaryThenSecondary)
            .secondary_endpoint(&account_url(&secondary.uri()))
            .build()
            .unwrap()
            .table("wired")
    };
    // Primary 503, secondary 404 (not replicated yet?), primary again: found.
    assert_eq!(client(3).get("p", "r").await.unwrap().row_key, "r");
    assert_eq!((methods(&primary).await.len(), methods(&secondary).await.len()), (2, 1));

    // With no retry left after the secondary's 404, the read fails as the primary did: a 404
    // from a replica that may lag says nothing about the data.
    primary.reset().await;
    secondary.reset().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(503)).mount(&primary).await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(404)).mount(&secondary).await;
    let err = client(1).get("p", "r").await.unwrap_err();
    assert_eq!((err.kind(), err.status()), (ErrorKind::Throttled, Some(503)), "{err:?}");

    // After the secondary's 404 it is not asked again, however many retries are left.
    primary.reset().await;
    secondary.reset().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(503)).mount(&primary).await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(404)).mount(&secondary).await;
    client(5).get("p", "r").await.unwrap_err();
    assert_eq!((methods(&primary).await.len(), methods(&secondary).await.len()), (5, 1));
}

#[tokio::test]
async fn the_secondary_is_derived_from_a_path_style_endpoint() {
    let server = MockServer::start().await;
    Mock::given(path(entity_path())).respond_with(ResponseTemplate::new(503)).mount(&server).await;
    let secondary_path = format!("/{ACCOUNT}-secondary/wired(PartitionKey='p',RowKey='r')");
    Mock::given(path(secondary_path)).respond_with(entity()).mount(&server).await;
    let service =
        builder().endpoint(&account_url(&server.uri())).location_mode(LocationMode::PrimaryThenSecondary);
    assert_eq!(service.build().unwrap().table("wired").get("p", "r").await.unwrap().row_key, "r");
}

#[tokio::test]
async fn reads_stay_on_the_primary_by_default() {
    let (primary, secondary) = (busy_primary().await, MockServer::start().await);
    Mock::given(method("GET")).respond_with(entity()).mount(&secondary).await;
    let table = builder()
        .endpoint(&account_url(&primary.uri()))
        .secondary_endpoint(&account_url(&secondary.uri()))
        .build()
        .unwrap()
        .table("wired");
    assert_eq!(table.get("p", "r").await.unwrap_err().kind(), ErrorKind::Throttled);
    assert!(methods(&secondary).await.is_empty());
}

#[tokio::test]
async fn a_connection_string_names_the_secondary_endpoint() {
    let (primary, secondary) = (busy_primary().await, MockServer::start().await);
    Mock::given(method("GET")).respond_with(entity()).mount(&secondary).await;
    let connection_string = format!(
        "AccountName={ACCOUNT};AccountKey={KEY};TableEndpoint={};TableSecondaryEndpoint={}",
        account_url(&primary.uri()),
        account_url(&secondary.uri())
    );
    let table = TableServiceClient::builder()
        .connection_string(&connection_string)
        .retry(RetryPolicy::default().initial_backoff(Duration::from_millis(1)))
        .location_mode(LocationMode::PrimaryThenSecondary)
        .build()
        .unwrap()
        .table("wired");
    assert_eq!(table.get("p", "r").await.unwrap().row_key, "r");
    assert_eq!(methods(&secondary).await, ["GET"]);

    let bad = format!("AccountName={ACCOUNT};AccountKey={KEY};TableSecondaryEndpoint=ftp://x");
    let err = TableServiceClient::builder().connection_string(&bad).build().unwrap_err();
    assert!(err.to_string().contains("TableSecondaryEndpoint"), "{err}");
}

#[test]
fn debug_output_never_shows_the_proxy_password() {
    let builder = builder().endpoint(UNREACHABLE).proxy("http://user:hunter2@127.0.0.1:3128");
    assert!(!format!("{builder:?}").contains("hunter2"), "{builder:?}");
    let client = builder.build().unwrap();
    assert!(!format!("{client:?}").contains("hunter2"), "{client:?}");
}

#[test]
fn a_secondary_endpoint_is_checked_whatever_the_location_mode() {
    for mode in [LocationMode::PrimaryOnly, LocationMode::PrimaryThenSecondary] {
        let built =
            builder().endpoint(UNREACHABLE).location_mode(mode).secondary_endpoint("not a url").build();
        assert_eq!(built.unwrap_err().kind(), ErrorKind::InvalidInput, "{mode:?}");
    }
    // Nothing to derive the secondary from: no account in the host or path.
    let underivable =
        builder().endpoint("http://127.0.0.1:1").location_mode(LocationMode::PrimaryThenSecondary);
    assert!(underivable.build().unwrap_err().to_string().contains("secondary"));
}
