//! What errors say, through the public API on both backends: who decided them ([`Origin`]),
//! the status a server answered or the service would answer, and which table and entity a
//! not-found, already-exists or precondition-failed error is about. The HTTP side answers
//! through wiremock with the service's error bodies.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use table_client::auth::Credential;
use table_client::engine::Engine;
use table_client::{
    ETag, Entity, EntityKey, ErrorCode, ErrorKind, IfMatch, Origin, RetryPolicy, TableClient, TableEntity,
    TableServiceClient, Transaction,
};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const TABLE: &str = "Employees";

/// `message` prefixed with the entity `("p", "r")` of `TABLE`.
fn about_entity(message: &str) -> String {
    format!("entity (PartitionKey=\"p\", RowKey=\"r\") in table {TABLE}: {message}")
}

async fn embedded() -> TableClient {
    let client = TableServiceClient::builder().engine(Engine::new()).build().unwrap();
    client.create_table(TABLE).await.unwrap()
}

/// A client of a wiremock server, without retries: each test answers once.
async fn over_http() -> (MockServer, TableServiceClient) {
    let server = MockServer::start().await;
    let credential = Credential::shared_key(ACCOUNT, KEY).unwrap();
    let client = TableServiceClient::builder()
        .retry(RetryPolicy::default().max_retries(0))
        .timeout(Duration::from_secs(5))
        .endpoint(&format!("{}/{ACCOUNT}", server.uri()))
        .credential(credential)
        .build()
        .unwrap();
    (server, client)
}

/// A service error answer with `status`, `code` and the service's message.
fn answer(status: u16, code: &str, message: &str) -> ResponseTemplate {
    let body = serde_json::json!({
        "odata.error": { "code": code, "message": { "lang": "en-US", "value": format!("{message}\nRequestId:x") } }
    });
    ResponseTemplate::new(status).set_body_json(body)
}

#[tokio::test]
async fn engine_errors_name_table_and_key_and_never_claim_http() {
    let table = embedded().await;
    let missing = table.get("p", "r").await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    assert_eq!(missing.service_code(), Some((&ErrorCode::ResourceNotFound, Origin::Engine)));
    assert_eq!(missing.status(), Some(404), "the status the service would answer");
    assert_eq!(missing.message(), about_entity("The specified resource does not exist."));
    assert!(!missing.to_string().contains("HTTP"), "{missing}");
    assert!(missing.to_string().ends_with("the service would answer 404)"), "{missing}");

    table.insert(Entity::new("p", "r")).await.unwrap();
    let stale = ETag::new("W/\"datetime'2024-01-01T00%3A00%3A00.0000001Z'\"");
    let failed = table.replace(Entity::new("p", "r"), IfMatch::ETag(stale)).await.unwrap_err();
    assert_eq!(failed.service_code(), Some((&ErrorCode::UpdateConditionNotSatisfied, Origin::Engine)));
    assert_eq!(
        failed.message(),
        about_entity("The update condition specified in the request was not satisfied.")
    );

    let exists = table.insert(Entity::new("p", "r")).await.unwrap_err();
    assert_eq!(exists.message(), about_entity("The specified entity already exists."));

    let tx = Transaction::new().insert_or_replace(Entity::new("p", "a")).insert(Entity::new("p", "r"));
    let batch = table.submit_transaction(tx).await.unwrap_err();
    assert_eq!(batch.batch_index(), Some(1));
    assert_eq!(batch.message(), about_entity("The specified entity already exists."));
}

#[tokio::test]
async fn local_violations_carry_the_status_the_service_would_answer_not_an_http_one() {
    let table = embedded().await;
    let err = table.insert(Entity::new("p", "a/b")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(err.service_code().map(|(_, origin)| origin), Some(Origin::Local));
    assert_eq!(err.status(), Some(400));
    assert!(!err.to_string().contains("HTTP"), "{err}");
    assert!(err.to_string().contains("found locally; the service would answer 400"), "{err}");
}

#[tokio::test]
async fn http_404_and_412_name_table_and_key_and_keep_the_service_s_answer() {
    let (server, client) = over_http().await;
    let table = client.table(TABLE);
    Mock::given(method("GET"))
        .respond_with(answer(404, "ResourceNotFound", "The specified resource does not exist."))
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .respond_with(answer(
            412,
            "UpdateConditionNotSatisfied",
            "The update condition specified in the request was not satisfied.",
        ))
        .mount(&server)
        .await;

    let missing = table.get("p", "r").await.unwrap_err();
    assert_eq!(missing.service_code(), Some((&ErrorCode::ResourceNotFound, Origin::Service)));
    assert_eq!(missing.status(), Some(404));
    assert_eq!(missing.request_id(), Some("x"));
    assert_eq!(
        missing.to_string(),
        format!("{} (ResourceNotFound, HTTP 404)", about_entity("The specified resource does not exist."))
    );

    let stale = table.delete("p", "r", IfMatch::Any).await.unwrap_err();
    assert_eq!(stale.kind(), ErrorKind::PreconditionFailed);
    assert_eq!(stale.service_code(), Some((&ErrorCode::UpdateConditionNotSatisfied, Origin::Service)));
    assert_eq!(
        stale.message(),
        about_entity("The update condition specified in the request was not satisfied.")
    );
    assert!(stale.to_string().ends_with("(UpdateConditionNotSatisfied, HTTP 412)"), "{stale}");
}

#[tokio::test]
async fn http_table_errors_name_the_table() {
    let (server, client) = over_http().await;
    Mock::given(method("POST"))
        .respond_with(answer(409, "TableAlreadyExists", "The table specified already exists."))
        .mount(&server)
        .await;
    let err = client.create_table(TABLE).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    assert_eq!(err.message(), format!("table {TABLE}: The table specified already exists."));
    assert_eq!(err.service_code().map(|(_, origin)| origin), Some(Origin::Service));
}

#[tokio::test]
async fn a_refused_signature_says_why_in_the_message() {
    let (server, client) = over_http().await;
    // The service's answer to a wrong key: XML (after a byte order mark) even when JSON was
    // accepted, with the detail beside the message.
    let body = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code>\
        <Message>Server failed to authenticate the request. Make sure the value of Authorization header is \
        formed correctly including the signature.\nRequestId:9b2c\nTime:2026-11-23T06:00:00.1234567Z</Message>\
        <AuthenticationErrorDetail>The MAC signature found in the HTTP request 'c2ln' is not the same as any \
        computed signature. Server used following string to sign: 'POST\n\napplication/json\n\
        Mon, 23 Nov 2026 06:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables'.</AuthenticationErrorDetail></Error>";
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(403).set_body_raw(body, "application/xml"))
        .mount(&server)
        .await;
    let err = client.create_table(TABLE).await.unwrap_err();
    assert_eq!((err.kind(), err.code()), (ErrorKind::Auth, Some(&ErrorCode::AuthenticationFailed)));
    assert!(
        err.message().ends_with(
            "Detail: The MAC signature found in the HTTP request '<redacted>' is not the same as any computed \
             signature. Server used following string to sign: 'POST\\n\\napplication/json\\nMon, 23 Nov \
             2026 06:00:00 GMT\\n/devstoreaccount1/devstoreaccount1/Tables'."
        ),
        "{err}"
    );
    assert!(!format!("{err:?}").contains("c2ln"), "the request's signature is never printed: {err:?}");
}

/// A batch answer whose operation 1 failed with `EntityAlreadyExists` (the REST reference's
/// example).
const BATCH_FAILURE: &str = "--batchresponse_u\r
Content-Type: multipart/mixed; boundary=changesetresponse_v\r
\r
--changesetresponse_v\r
Content-Type: application/http\r
Content-Transfer-Encoding: binary\r
\r
HTTP/1.1 409 Conflict\r
Content-ID: 1\r
Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r
\r
{\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\",\"value\":\"1:The specified entity already exists.\\nRequestId:a1\"}}}\r
--changesetresponse_v--\r
--batchresponse_u--\r
";

#[tokio::test]
async fn an_http_batch_failure_names_the_failing_operation_s_entity() {
    let (server, client) = over_http().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(202)
                .set_body_raw(BATCH_FAILURE, "multipart/mixed; boundary=batchresponse_u"),
        )
        .mount(&server)
        .await;
    let tx = Transaction::new().insert_or_replace(Entity::new("p", "a")).insert(Entity::new("p", "r"));
    let err = client.table(TABLE).submit_transaction(tx).await.unwrap_err();
    assert_eq!(err.batch_index(), Some(1));
    assert_eq!(err.service_code(), Some((&ErrorCode::EntityAlreadyExists, Origin::Service)));
    assert_eq!(err.message(), about_entity("The specified entity already exists."));
}

#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "{id}")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
struct Employee {
    department: String,
    id: String,
    email: String,
}

#[tokio::test]
async fn indexed_writes_the_client_refuses_name_table_and_key_and_are_local() {
    let table = embedded().await.typed::<Employee>();
    let ada = Employee { department: "p".into(), id: "r".into(), email: "ada@example.com".into() };
    let missing = table.replace(&ada, IfMatch::Any).await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    assert_eq!(missing.message(), about_entity("The specified resource does not exist."));
    table.insert(&ada).await.unwrap();
    let stale = ETag::new("W/\"datetime'2024-01-01T00%3A00%3A00.0000001Z'\"");
    let failed = table.replace(&ada, IfMatch::ETag(stale)).await.unwrap_err();
    assert_eq!(failed.service_code(), Some((&ErrorCode::UpdateConditionNotSatisfied, Origin::Local)));
    assert_eq!(
        failed.message(),
        about_entity("The update condition specified in the request was not satisfied.")
    );
    assert!(table.get(&EntityKey::new("p", "r")).await.is_ok());
}
