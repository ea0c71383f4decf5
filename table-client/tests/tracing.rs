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
