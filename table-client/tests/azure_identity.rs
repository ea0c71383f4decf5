//! The `azure-identity` feature: an `azure_core` credential (here a fake that counts its calls)
//! serves a client through `AzureIdentityCredential`, its token and expiry carried over and
//! its failure surfacing as an `Auth` error with the credential's message as the source.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::error::Error as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use azure_core::credentials::{AccessToken, TokenCredential, TokenRequestOptions};
use azure_core::time::{Duration, OffsetDateTime};
use table_client::auth::{AzureIdentityCredential, STORAGE_SCOPE};
use table_client::{ErrorKind, TableServiceClient};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// An `azure_core` credential that answers with a fixed token, or fails, and records the
/// scopes it was asked for.
#[derive(Debug, Default)]
struct FakeAzureCredential {
    fail: bool,
    calls: AtomicUsize,
    scopes: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl TokenCredential for FakeAzureCredential {
    async fn get_token(
        &self,
        scopes: &[&str],
        _options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.scopes.lock().unwrap().extend(scopes.iter().map(|s| (*s).to_owned()));
        if self.fail {
            return Err(azure_core::Error::with_message(
                azure_core::error::ErrorKind::Credential,
                "managed identity endpoint unreachable",
            ));
        }
        Ok(AccessToken::new("fake-azure-token", OffsetDateTime::now_utc() + Duration::hours(1)))
    }
}

#[tokio::test]
async fn an_azure_core_credential_authorizes_requests_with_its_token() {
    let server = MockServer::start().await;
    Mock::given(method("DELETE"))
        .and(path("/devstoreaccount1/Tables('Orders')"))
        .and(header("authorization", "Bearer fake-azure-token"))
        .respond_with(ResponseTemplate::new(204))
        .expect(2)
        .mount(&server)
        .await;
    let fake = Arc::new(FakeAzureCredential::default());
    let endpoint = format!("{}/devstoreaccount1", server.uri());
    let service =
        TableServiceClient::with_token_credential(&endpoint, AzureIdentityCredential::new(fake.clone()))
            .unwrap();
    service.delete_table("Orders").await.unwrap();
    // The token lives an hour: the second request reuses it.
    service.clone().delete_table("Orders").await.unwrap();
    assert_eq!(fake.calls.load(Ordering::SeqCst), 1);
    assert_eq!(*fake.scopes.lock().unwrap(), [STORAGE_SCOPE]);
}

#[tokio::test]
async fn a_failing_azure_core_credential_is_an_auth_error_with_its_message() {
    let server = MockServer::start().await;
    let fake = Arc::new(FakeAzureCredential { fail: true, ..FakeAzureCredential::default() });
    let endpoint = format!("{}/devstoreaccount1", server.uri());
    let service =
        TableServiceClient::with_token_credential(&endpoint, AzureIdentityCredential::new(fake)).unwrap();
    let err = service.delete_table("Orders").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    let source = err.source().unwrap().to_string();
    assert!(source.contains("managed identity endpoint unreachable"), "{source}");
    assert!(server.received_requests().await.unwrap().is_empty(), "nothing is sent without a token");
}
