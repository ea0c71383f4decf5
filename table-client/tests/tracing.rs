//! Every HTTP request runs inside a `table_request` span that records the method, the URL
//! without its query string (a SAS signature must never reach logs), the status and the
//! service's request id.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use table_client::TableServiceClient;
use table_client::auth::Credential;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

type Fields = Arc<Mutex<Vec<(String, String)>>>;

/// Records every span field as `(name, value)`.
struct Capture(Fields);

struct Collect<'a>(&'a Fields);

impl Visit for Collect<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.lock().unwrap().push((field.name().to_owned(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.lock().unwrap().push((field.name().to_owned(), value.to_owned()));
    }
}

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        if attrs.metadata().name() == "table_request" {
            attrs.record(&mut Collect(&self.0));
        }
    }

    fn on_record(&self, _id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        values.record(&mut Collect(&self.0));
    }
}

#[tokio::test]
async fn requests_are_traced_with_the_service_request_id_and_no_secret() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(404)
                .insert_header("x-ms-request-id", "req-42")
                .set_body_string(r#"{"odata.error":{"code":"ResourceNotFound","message":{"value":"The specified resource does not exist."}}}"#),
        )
        .mount(&server)
        .await;
    let sas = "sv=2019-02-02&tn=t&sp=r&se=2099-01-01&sig=c2VjcmV0";
    let client = TableServiceClient::builder()
        .endpoint(&format!("{}/devstoreaccount1", server.uri()))
        .credential(Credential::sas(sas).unwrap())
        .build()
        .unwrap();

    let fields: Fields = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Capture(fields.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let err = client.table("tracetable").get("p", "r").await.unwrap_err();
    assert_eq!(err.request_id(), Some("req-42"));

    let fields = fields.lock().unwrap().clone();
    let get = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    assert_eq!(get("method").as_deref(), Some("GET"));
    assert_eq!(get("status").as_deref(), Some("404"));
    assert_eq!(get("request_id").as_deref(), Some("req-42"));
    let url = get("url").unwrap();
    assert!(url.ends_with("/devstoreaccount1/tracetable(PartitionKey='p',RowKey='r')"), "{url}");
    assert!(
        fields.iter().all(|(_, v)| !v.contains("c2VjcmV0")),
        "no field carries the signature: {fields:?}"
    );
}

#[tokio::test]
async fn the_span_records_the_client_request_id_every_attempt_carried() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).insert_header("x-ms-request-id", "req-1"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).insert_header("x-ms-request-id", "req-2").set_body_json(
            serde_json::json!({
                "odata.etag": "W/\"datetime'2024-01-01T00%3A00%3A00.0000001Z'\"",
                "PartitionKey": "p", "RowKey": "r", "Timestamp": "2024-01-01T00:00:00.0000001Z",
            }),
        ))
        .mount(&server)
        .await;
    let client = TableServiceClient::builder()
        .endpoint(&format!("{}/devstoreaccount1", server.uri()))
        .credential(Credential::Anonymous)
        .retry(table_client::RetryPolicy::default().initial_backoff(std::time::Duration::from_millis(1)))
        .build()
        .unwrap();

    let fields: Fields = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Capture(fields.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    client.table("tracetable").get("p", "r").await.unwrap();

    let sent: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.headers.get("x-ms-client-request-id").unwrap().to_str().unwrap().to_owned())
        .collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0], sent[1], "the retry carries the first attempt's id");
    let fields = fields.lock().unwrap().clone();
    let recorded: Vec<&str> =
        fields.iter().filter(|(n, _)| n == "client_request_id").map(|(_, v)| v.as_str()).collect();
    assert_eq!(recorded, [sent[0].as_str()], "{fields:?}");
    let last_request_id = fields.iter().rev().find(|(n, _)| n == "request_id").map(|(_, v)| v.as_str());
    assert_eq!(last_request_id, Some("req-2"), "the answer's own request id: {fields:?}");
}
