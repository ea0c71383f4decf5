//! Token credentials without a server that speaks OAuth: what `build` refuses (bearer tokens
//! over clear-text http to another host, a token credential beside a key or the embedded
//! engine, an unreadable root certificate), the connection-string form, the service's own
//! 401 `invalid_token` answer (Azurite answers 403; wiremock plays the service), and the
//! cache's refusals of unusable tokens before anything is sent.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::error::Error as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, TimeDelta, Utc};
use table_client::auth::{AccessToken, Credential, TokenCredential, TokenFuture};
use table_client::engine::Engine;
use table_client::{ErrorKind, TableServiceClient};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Hands out the scripted tokens in order (the last one again when they run out).
#[derive(Debug)]
struct Tokens {
    script: Vec<(&'static str, DateTime<Utc>)>,
    calls: AtomicUsize,
    scopes: Mutex<Vec<String>>,
}

impl Tokens {
    fn new(script: &[(&'static str, DateTime<Utc>)]) -> Tokens {
        Tokens { script: script.to_vec(), calls: AtomicUsize::new(0), scopes: Mutex::new(Vec::new()) }
    }

    fn valid(token: &'static str) -> Tokens {
        Tokens::new(&[(token, in_an_hour())])
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl TokenCredential for Tokens {
    fn get_token<'a>(&'a self, scopes: &'a [&'a str]) -> TokenFuture<'a> {
        Box::pin(async move {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            self.scopes.lock().unwrap().extend(scopes.iter().map(|s| (*s).to_owned()));
            let (token, expires_on) = self.script[call.min(self.script.len() - 1)];
            Ok(AccessToken::new(token, expires_on))
        })
    }
}

fn in_an_hour() -> DateTime<Utc> {
    Utc::now() + TimeDelta::hours(1)
}

/// A 204 to `DELETE Tables('tbl')` when it carries `Bearer <token>`.
fn delete_table_with(token: &str) -> Mock {
    Mock::given(method("DELETE"))
        .and(path("/devstoreaccount1/Tables('tbl')"))
        .and(header("authorization", format!("Bearer {token}").as_str()))
        .respond_with(ResponseTemplate::new(204))
}

#[test]
fn bearer_tokens_are_not_sent_in_clear_text_to_another_host() {
    for endpoint in ["http://myaccount.table.core.windows.net", "http://10.0.0.7:10002/devstoreaccount1"] {
        let err = TableServiceClient::with_token_credential(endpoint, Tokens::valid("t")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{endpoint}");
        assert!(err.to_string().contains("https"), "{err}");
    }
    for endpoint in [
        "https://myaccount.table.core.windows.net",
        "http://127.0.0.1:10002/devstoreaccount1",
        "http://localhost:10002/devstoreaccount1",
        "http://[::1]:10002/devstoreaccount1",
    ] {
        TableServiceClient::with_token_credential(endpoint, Tokens::valid("t")).unwrap();
    }
}

#[test]
fn a_token_credential_goes_with_an_endpoint_or_an_accounts_connection_string_only() {
    let both = TableServiceClient::builder()
        .endpoint("https://acct.table.core.windows.net")
        .credential(Credential::Anonymous)
        .token_credential(Tokens::valid("t"))
        .build()
        .unwrap_err();
    assert_eq!(both.kind(), ErrorKind::InvalidInput);
    let engine =
        TableServiceClient::builder().engine(Engine::new()).token_credential(Tokens::valid("t")).build();
    assert_eq!(engine.unwrap_err().kind(), ErrorKind::InvalidInput);
    let embedded = TableServiceClient::builder()
        .connection_string("UseEmbeddedEngine=true")
        .token_credential(Tokens::valid("t"))
        .build();
    assert_eq!(embedded.unwrap_err().kind(), ErrorKind::InvalidInput);
    // The connection string's endpoint is checked as the endpoint setter's is.
    let clear = TableServiceClient::builder()
        .connection_string("DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5")
        .token_credential(Tokens::valid("t"))
        .build();
    assert_eq!(clear.unwrap_err().kind(), ErrorKind::InvalidInput);
}

#[test]
fn a_root_certificate_bundle_without_a_certificate_is_refused_at_build() {
    let err = TableServiceClient::builder()
        .endpoint("https://acct.table.core.windows.net")
        .credential(Credential::Anonymous)
        .root_certificate_pem(b"not a certificate")
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("root certificate"), "{err}");
}

#[tokio::test]
async fn a_connection_strings_endpoint_takes_the_token_instead_of_its_key() {
    let server = MockServer::start().await;
    delete_table_with("from-entra").expect(1).mount(&server).await;
    let connection_string = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;TableEndpoint={}/devstoreaccount1",
        server.uri()
    );
    let service = TableServiceClient::builder()
        .connection_string(&connection_string)
        .token_credential(Tokens::valid("from-entra"))
        .build()
        .unwrap();
    service.delete_table("tbl").await.unwrap();
}

#[tokio::test]
async fn the_scope_is_storages_unless_configured() {
    let server = MockServer::start().await;
    delete_table_with("t1").expect(2).mount(&server).await;
    let endpoint = format!("{}/devstoreaccount1", server.uri());
    let storage = std::sync::Arc::new(Tokens::valid("t1"));
    TableServiceClient::with_token_credential(&endpoint, storage.clone())
        .unwrap()
        .delete_table("tbl")
        .await
        .unwrap();
    assert_eq!(*storage.scopes.lock().unwrap(), ["https://storage.azure.com/.default"]);

    let cosmos = std::sync::Arc::new(Tokens::valid("t1"));
    let service = TableServiceClient::builder()
        .endpoint(&endpoint)
        .token_credential(cosmos.clone())
        .token_scope("https://cosmos.azure.com/.default")
        .build()
        .unwrap();
    service.delete_table("tbl").await.unwrap();
    assert_eq!(*cosmos.scopes.lock().unwrap(), ["https://cosmos.azure.com/.default"]);
}

#[tokio::test]
async fn the_services_401_invalid_token_challenge_renews_the_token_once() {
    let server = MockServer::start().await;
    // The service's answer to an expired token (versions from 2019-12-12 answer with a
    // challenge; the body says only "see the www-authenticate header").
    let challenge = r#"Bearer authorization_uri=https://login.microsoftonline.com/tenant/oauth2/authorize resource_id=https://storage.azure.com error="invalid_token" error_description="The access token expiry UTC time is earlier than current UTC time.""#;
    let refusal = ResponseTemplate::new(401)
        .insert_header("x-ms-error-code", "InvalidAuthenticationInfo")
        .insert_header("www-authenticate", challenge)
        .set_body_string(r#"{"odata.error":{"code":"InvalidAuthenticationInfo","message":{"lang":"en-US","value":"Server failed to authenticate the request. Please refer to the information in the www-authenticate header."}}}"#);
    Mock::given(method("DELETE"))
        .and(header("authorization", "Bearer old"))
        .respond_with(refusal)
        .expect(1)
        .mount(&server)
        .await;
    delete_table_with("new").expect(1).mount(&server).await;
    let tokens = std::sync::Arc::new(Tokens::new(&[("old", in_an_hour()), ("new", in_an_hour())]));
    let endpoint = format!("{}/devstoreaccount1", server.uri());
    let service = TableServiceClient::with_token_credential(&endpoint, tokens.clone()).unwrap();
    service.delete_table("tbl").await.unwrap();
    assert_eq!(tokens.calls(), 2);
}

#[tokio::test]
async fn a_403_that_no_new_token_would_change_is_returned_without_a_renewal() {
    let server = MockServer::start().await;
    Mock::given(method("DELETE"))
        .respond_with(
            ResponseTemplate::new(403).insert_header("x-ms-error-code", "AuthorizationPermissionMismatch"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let tokens = std::sync::Arc::new(Tokens::valid("t1"));
    let endpoint = format!("{}/devstoreaccount1", server.uri());
    let err = TableServiceClient::with_token_credential(&endpoint, tokens.clone())
        .unwrap()
        .delete_table("tbl")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    assert_eq!(tokens.calls(), 1);
}

#[tokio::test]
async fn unusable_tokens_are_refused_before_anything_is_sent() {
    let server = MockServer::start().await;
    let endpoint = format!("{}/devstoreaccount1", server.uri());
    let expired = Tokens::new(&[("stale", Utc::now() - TimeDelta::seconds(1))]);
    let header_breaking = Tokens::new(&[("two\nlines", in_an_hour())]);
    let empty = Tokens::new(&[("", in_an_hour())]);
    for (credential, says) in [(expired, "expired"), (header_breaking, "header"), (empty, "empty")] {
        let service = TableServiceClient::with_token_credential(&endpoint, credential).unwrap();
        let err = service.delete_table("tbl").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Auth);
        assert!(err.to_string().contains(says), "{err}");
        assert!(err.source().is_none());
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}
