//! What a write reports when an attempt's answer was lost (wiremock plays a service that
//! applied the write and then failed to answer, with a 500/504 or an answer slower than the
//! client's timeout): a retry's answer that only the lost attempt may have caused is settled
//! (a delete finding nothing succeeds; a conditional replace or merge reads the entity back),
//! what cannot be settled is `Ambiguous`, and every other failure of such a write carries the
//! "may have applied" marker. Failures the service answered before processing carry nothing.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use table_client::auth::Credential;
use table_client::{
    ETag, Entity, Error, ErrorKind, IfMatch, RetryPolicy, TableClient, TableEntity, TableServiceClient,
    Transaction,
};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const OLD_ETAG: &str = "W/\"datetime'2024-01-01T00%3A00%3A00.0000001Z'\"";
const NEW_ETAG: &str = "W/\"datetime'2024-01-01T00%3A00%3A05.0000001Z'\"";
/// Past the client's timeout: the service applied the write, the client never hears of it.
const LATE: Duration = Duration::from_millis(1500);

fn client(server: &MockServer) -> TableServiceClient {
    TableServiceClient::builder()
        .endpoint(&format!("{}/{ACCOUNT}", server.uri()))
        .credential(Credential::shared_key(ACCOUNT, KEY).unwrap())
        .retry(RetryPolicy::default().max_retries(3).initial_backoff(Duration::from_millis(1)))
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap()
}

async fn server_and_table() -> (MockServer, TableClient) {
    let server = MockServer::start().await;
    let table = client(&server).table("lost");
    (server, table)
}

fn entity_path() -> String {
    format!("/{ACCOUNT}/lost(PartitionKey='p',RowKey='r')")
}

/// The service's error answer with `code`.
fn service_error(status: u16, code: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).insert_header("x-ms-error-code", code).set_body_string(format!(
        r#"{{"odata.error":{{"code":"{code}","message":{{"lang":"en-US","value":"{code}"}}}}}}"#
    ))
}

fn precondition_failed() -> ResponseTemplate {
    service_error(412, "UpdateConditionNotSatisfied")
}

fn not_found() -> ResponseTemplate {
    service_error(404, "ResourceNotFound")
}

/// The stored entity `p`/`r` with `properties`, at [`NEW_ETAG`].
fn stored(properties: serde_json::Value) -> ResponseTemplate {
    let mut body = serde_json::json!({
        "odata.etag": NEW_ETAG,
        "PartitionKey": "p", "RowKey": "r", "Timestamp": "2024-01-01T00:00:05.0000001Z",
    });
    body.as_object_mut().unwrap().extend(properties.as_object().unwrap().clone());
    ResponseTemplate::new(200).set_body_json(body)
}

/// Answers the first request of `verb` with `first`, the later ones with `then`.
async fn first_then(server: &MockServer, verb: &str, first: ResponseTemplate, then: ResponseTemplate) {
    Mock::given(method(verb)).respond_with(first).up_to_n_times(1).mount(server).await;
    Mock::given(method(verb)).respond_with(then).mount(server).await;
}

async fn methods(server: &MockServer) -> Vec<String> {
    server.received_requests().await.unwrap().iter().map(|r| r.method.to_string()).collect()
}

/// The error an `Ambiguous` error was settled from.
fn cause(e: &Error) -> &Error {
    std::error::Error::source(e).and_then(|s| s.downcast_ref::<Error>()).expect("the cause is kept")
}

fn written() -> Entity {
    Entity::new("p", "r").with("N", 2).with("Name", "new")
}

#[tokio::test]
async fn a_delete_whose_lost_attempt_applied_succeeds_when_the_retry_finds_nothing() {
    for lost in [ResponseTemplate::new(500), ResponseTemplate::new(204).set_delay(LATE)] {
        let (server, table) = server_and_table().await;
        first_then(&server, "DELETE", lost, not_found()).await;
        table.delete("p", "r", IfMatch::Any).await.unwrap();
        assert_eq!(methods(&server).await, ["DELETE", "DELETE"]);
    }
    // An ETag-conditioned delete too: the entity is gone, as asked.
    let (server, table) = server_and_table().await;
    first_then(&server, "DELETE", ResponseTemplate::new(504), not_found()).await;
    table.delete("p", "r", IfMatch::ETag(ETag::new(OLD_ETAG))).await.unwrap();
}

#[tokio::test]
async fn a_delete_that_finds_another_version_after_a_lost_attempt_is_ambiguous() {
    let (server, table) = server_and_table().await;
    first_then(&server, "DELETE", ResponseTemplate::new(500), precondition_failed()).await;
    let err = table.delete("p", "r", IfMatch::ETag(ETag::new(OLD_ETAG))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Ambiguous, "{err:?}");
    assert!(err.may_have_applied());
    assert!(err.message().contains("may have applied"), "{err}");
    assert_eq!(cause(&err).status(), Some(412));
}

#[tokio::test]
async fn a_delete_without_a_lost_attempt_keeps_its_answer() {
    let (server, table) = server_and_table().await;
    first_then(&server, "DELETE", ResponseTemplate::new(503), not_found()).await;
    let err = table.delete("p", "r", IfMatch::Any).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "a 503 was not processed: the entity was missing all along");
    assert!(!err.may_have_applied());
    assert!(!table.delete_if_exists("p", "r").await.unwrap());
}

#[tokio::test]
async fn delete_if_exists_cannot_tell_after_a_lost_attempt() {
    let (server, table) = server_and_table().await;
    first_then(&server, "DELETE", ResponseTemplate::new(204).set_delay(LATE), not_found()).await;
    let err = table.delete_if_exists("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Ambiguous, "{err:?}");
    assert!(err.message().contains("gone"), "{err}");
}

#[tokio::test]
async fn a_conditional_replace_whose_lost_attempt_applied_succeeds() {
    let (server, table) = server_and_table().await;
    Mock::given(method("PUT"))
        .and(header("If-Match", OLD_ETAG))
        .respond_with(ResponseTemplate::new(504))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT")).respond_with(precondition_failed()).mount(&server).await;
    Mock::given(method("GET"))
        .and(path(entity_path()))
        .respond_with(stored(serde_json::json!({"N": 2, "Name": "new"})))
        .mount(&server)
        .await;
    let etag = table.replace(written(), IfMatch::ETag(ETag::new(OLD_ETAG))).await.unwrap();
    assert_eq!(etag, ETag::new(NEW_ETAG), "the stored entity's version");
    assert_eq!(methods(&server).await, ["PUT", "PUT", "GET"]);
}

#[tokio::test]
async fn a_conditional_replace_over_a_changed_entity_is_ambiguous() {
    // Another property, a missing one, a different value: not this write.
    for properties in [
        serde_json::json!({"N": 2, "Name": "new", "Extra": true}),
        serde_json::json!({"N": 2}),
        serde_json::json!({"N": 3, "Name": "new"}),
    ] {
        let (server, table) = server_and_table().await;
        first_then(&server, "PUT", ResponseTemplate::new(500), precondition_failed()).await;
        Mock::given(method("GET")).respond_with(stored(properties.clone())).mount(&server).await;
        let err = table.replace(written(), IfMatch::ETag(ETag::new(OLD_ETAG))).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Ambiguous, "{properties}: {err:?}");
        assert!(err.may_have_applied());
        assert!(err.message().contains("may have applied") && err.message().contains("changed"), "{err}");
        assert_eq!(cause(&err).status(), Some(412));
    }
}

#[tokio::test]
async fn a_replace_whose_entity_vanished_after_a_lost_attempt_is_ambiguous() {
    let (server, table) = server_and_table().await;
    first_then(&server, "PUT", ResponseTemplate::new(204).set_delay(LATE), not_found()).await;
    Mock::given(method("GET")).respond_with(not_found()).mount(&server).await;
    let err = table.replace(written(), IfMatch::Any).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Ambiguous, "{err:?}");
    assert!(err.message().contains("no longer exists"), "{err}");
}

#[tokio::test]
async fn a_conditional_merge_is_settled_by_the_properties_it_sent() {
    let merge = || Entity::new("p", "r").with("N", 2);
    // Stored: the merged property plus one the merge left alone.
    let (server, table) = server_and_table().await;
    first_then(&server, "MERGE", ResponseTemplate::new(502), precondition_failed()).await;
    Mock::given(method("GET"))
        .respond_with(stored(serde_json::json!({"N": 2, "Other": "kept"})))
        .mount(&server)
        .await;
    let etag = table.merge(merge(), IfMatch::ETag(ETag::new(OLD_ETAG))).await.unwrap();
    assert_eq!(etag, ETag::new(NEW_ETAG));

    let (server, table) = server_and_table().await;
    first_then(&server, "MERGE", ResponseTemplate::new(502), precondition_failed()).await;
    Mock::given(method("GET"))
        .respond_with(stored(serde_json::json!({"N": 7, "Other": "kept"})))
        .mount(&server)
        .await;
    let err = table.merge(merge(), IfMatch::ETag(ETag::new(OLD_ETAG))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Ambiguous, "{err:?}");
}

#[tokio::test]
async fn a_412_after_a_refused_attempt_is_the_callers_own() {
    let (server, table) = server_and_table().await;
    first_then(&server, "PUT", ResponseTemplate::new(503), precondition_failed()).await;
    let err = table.replace(written(), IfMatch::ETag(ETag::new(OLD_ETAG))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PreconditionFailed, "{err:?}");
    assert!(!err.may_have_applied());
    assert_eq!(methods(&server).await, ["PUT", "PUT"], "nothing to settle: no entity read");
}

#[tokio::test]
async fn inserts_and_transactions_are_not_replayed_and_carry_the_marker() {
    for lost in [ResponseTemplate::new(500), ResponseTemplate::new(201).set_delay(LATE)] {
        let (server, table) = server_and_table().await;
        Mock::given(method("POST")).respond_with(lost.clone()).mount(&server).await;
        let err = table.insert(written()).await.unwrap_err();
        assert!(err.may_have_applied(), "{err:?}");
        assert!(err.to_string().contains("may have been applied"), "{err}");
        let tx = Transaction::new().insert(written()).insert(Entity::new("p", "s"));
        let err = table.submit_transaction(tx).await.unwrap_err();
        assert!(err.may_have_applied(), "{err:?}");
        assert_eq!(methods(&server).await, ["POST", "POST"], "one attempt each");
    }
}

#[tokio::test]
async fn an_insert_refused_before_processing_is_retried_and_unmarked() {
    let (server, table) = server_and_table().await;
    first_then(&server, "POST", ResponseTemplate::new(503), service_error(409, "EntityAlreadyExists")).await;
    let err = table.insert(written()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    assert!(!err.may_have_applied(), "the 503 was not processed: the conflict is someone else's");
}

#[tokio::test]
async fn an_idempotent_write_whose_retries_ran_out_after_a_lost_attempt_is_marked() {
    let (server, table) = server_and_table().await;
    first_then(&server, "PUT", ResponseTemplate::new(504), ResponseTemplate::new(503)).await;
    let err = table.insert_or_replace(written()).await.unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert!(err.may_have_applied(), "{err:?}");
    assert_eq!(methods(&server).await.len(), 4, "1 attempt + 3 retries");

    // An upsert retried after a lost attempt simply succeeds.
    let (server, table) = server_and_table().await;
    first_then(
        &server,
        "PUT",
        ResponseTemplate::new(204).set_delay(LATE),
        ResponseTemplate::new(204).insert_header("ETag", NEW_ETAG),
    )
    .await;
    assert_eq!(table.insert_or_replace(written()).await.unwrap(), ETag::new(NEW_ETAG));
}

#[tokio::test]
async fn reads_never_carry_the_marker() {
    let (server, table) = server_and_table().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(500)).mount(&server).await;
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert!(!err.may_have_applied());
}

#[tokio::test]
async fn a_write_answered_success_without_an_etag_may_have_applied() {
    let (server, table) = server_and_table().await;
    Mock::given(method("PUT")).respond_with(ResponseTemplate::new(204)).mount(&server).await;
    let err = table.insert_or_replace(written()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode);
    assert!(err.may_have_applied());
}

#[tokio::test]
async fn tables_are_settled_like_entities() {
    let server = MockServer::start().await;
    let service = client(&server);
    first_then(&server, "DELETE", ResponseTemplate::new(500), not_found()).await;
    service.delete_table("lost").await.unwrap();

    server.reset().await;
    first_then(&server, "DELETE", ResponseTemplate::new(500), not_found()).await;
    let err = service.delete_table_if_exists("lost").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Ambiguous, "{err:?}");

    server.reset().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(500)).mount(&server).await;
    let err = service.create_table_if_not_exists("lost").await.unwrap_err();
    assert!(err.may_have_applied(), "{err:?}");
    assert_eq!(methods(&server).await, ["POST"], "a table creation is not replayed");
}

/// An employee with cross-partition indexes only: each of its writes is single requests (no
/// transaction), so wiremock can play every step of the index maintenance.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(index(name = "by_email", partition_key = "email", row_key = "{email}"))]
#[table(lookup(name = "by_last_name", partition_key = "lastname", row_key = "{last_name}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    last_name: String,
    email: String,
}

fn ann(last_name: &str) -> Employee {
    Employee {
        department: "Sales".into(),
        id: 1,
        last_name: last_name.into(),
        email: "ann@contoso.com".into(),
    }
}

fn ann_path() -> String {
    format!("/{ACCOUNT}/lost(PartitionKey='Sales',RowKey='empid_000001')")
}

/// `employee` as the service returns it, at version `etag`.
fn stored_employee(employee: &Employee, etag: &str) -> ResponseTemplate {
    let json = table_client::wire::encode_entity(&employee.to_entity().unwrap());
    let mut body: serde_json::Value = serde_json::from_str(&json).unwrap();
    body["odata.etag"] = etag.into();
    body["Timestamp"] = "2024-01-01T00:00:05.0000001Z".into();
    ResponseTemplate::new(200).set_body_json(body)
}

/// Every other request of the index maintenance succeeds: index rows are absent, intents and
/// index rows are written, intents are removed.
async fn index_rows_absent(server: &MockServer) {
    Mock::given(method("GET")).respond_with(not_found()).mount(server).await;
    for verb in ["PUT", "POST"] {
        Mock::given(method(verb))
            .respond_with(ResponseTemplate::new(204).insert_header("ETag", NEW_ETAG))
            .mount(server)
            .await;
    }
    Mock::given(method("DELETE")).respond_with(ResponseTemplate::new(204)).mount(server).await;
}

#[tokio::test]
async fn an_indexed_delete_if_exists_whose_lost_attempt_may_have_removed_it_reports_it_existed() {
    let (server, table) = server_and_table().await;
    let typed = table.typed::<Employee>();
    Mock::given(method("GET"))
        .and(path(ann_path()))
        .respond_with(stored_employee(&ann("Jones"), OLD_ETAG))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path(ann_path()))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    // The retry finds another version: the lost delete applied and someone wrote it again, or
    // someone changed it first. The re-read then finds it gone.
    Mock::given(method("DELETE"))
        .and(path(ann_path()))
        .respond_with(precondition_failed())
        .mount(&server)
        .await;
    index_rows_absent(&server).await;
    let existed = typed.delete_if_exists(&ann("").entity_key().unwrap()).await.unwrap();
    assert!(existed, "it existed when the call began, and it is gone");
}

#[tokio::test]
async fn an_indexed_replace_whose_entity_vanished_after_a_lost_attempt_is_ambiguous() {
    let (server, table) = server_and_table().await;
    let typed = table.typed::<Employee>();
    Mock::given(method("GET"))
        .and(path(ann_path()))
        .respond_with(stored_employee(&ann("Jones"), OLD_ETAG))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path(ann_path()))
        .respond_with(ResponseTemplate::new(504))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT")).and(path(ann_path())).respond_with(not_found()).mount(&server).await;
    index_rows_absent(&server).await;
    let err = typed.replace(&ann("Smith"), IfMatch::Any).await.unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Ambiguous,
        "not NotFound: the lost attempt may have applied first: {err:?}"
    );
    assert!(err.may_have_applied());
}

#[tokio::test]
async fn an_unconditional_indexed_replace_is_applied_again_when_its_outcome_is_unknown() {
    let (server, table) = server_and_table().await;
    let typed = table.typed::<Employee>();
    let other_etag = "W/\"datetime'2024-01-01T00%3A00%3A03.0000001Z'\"";
    Mock::given(method("GET"))
        .and(path(ann_path()))
        .respond_with(stored_employee(&ann("Jones"), OLD_ETAG))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    // After the lost attempt, another writer's version: not this write.
    Mock::given(method("GET"))
        .and(path(ann_path()))
        .respond_with(stored_employee(&ann("Brown"), other_etag))
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path(ann_path()))
        .and(header("If-Match", OLD_ETAG))
        .respond_with(ResponseTemplate::new(504))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path(ann_path()))
        .and(header("If-Match", OLD_ETAG))
        .respond_with(precondition_failed())
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .and(path(ann_path()))
        .and(header("If-Match", other_etag))
        .respond_with(ResponseTemplate::new(204).insert_header("ETag", NEW_ETAG))
        .mount(&server)
        .await;
    index_rows_absent(&server).await;
    let etag = typed.replace(&ann("Smith"), IfMatch::Any).await.unwrap();
    assert_eq!(etag, ETag::new(NEW_ETAG));
}
