//! Microsoft Entra ID bearer tokens against the HTTPS Azurite started with `--oauth basic`
//! (`azurite::azurite_oauth`): minted tokens authorize requests, the token cache makes one
//! credential call however many requests wait, a token refused as expired is renewed once and
//! the request succeeds, a token refused again ends in a typed `Auth` error (no loop), a
//! failing credential is a typed `Auth` error, and no `Debug` output shows a token.
//!
//! The conformance scenarios that also run with token auth are in `conformance.rs`
//! (`token_scenario!`). Azurite only, skipping loudly where it cannot run.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use conformance::azurite::{OAuthAzurite, azurite_oauth, unique_table_name};
use conformance::token::{MintingCredential, Script};
use table_client::auth::{Credential, STORAGE_SCOPE};
use table_client::{Entity, ErrorCode, ErrorKind, TableServiceClient};

/// A client of the OAuth Azurite whose tokens come from `credential`.
fn client(azurite: &OAuthAzurite, credential: &Arc<MintingCredential>) -> TableServiceClient {
    TableServiceClient::builder()
        .endpoint(&azurite.endpoint)
        .token_credential(Arc::clone(credential))
        .root_certificate_pem(azurite.ca_pem.as_bytes())
        .build()
        .unwrap()
}

#[tokio::test]
async fn minted_tokens_authorize_requests_and_are_fetched_once() {
    let Some(azurite) = azurite_oauth() else { return };
    let credential = Arc::new(MintingCredential::valid());
    let service = client(azurite, &credential);
    let table = service.create_table(&unique_table_name("token")).await.unwrap();
    table.insert(Entity::new("p", "r").with("N", 1)).await.unwrap();
    assert_eq!(table.get("p", "r").await.unwrap().properties.len(), 1);
    // A clone shares the cache.
    service.clone().table(table.name()).get("p", "r").await.unwrap();
    assert_eq!(credential.calls(), 1);
    assert_eq!(credential.scopes(), [STORAGE_SCOPE]);
}

#[tokio::test]
async fn requests_without_a_token_are_refused_by_this_azurite() {
    let Some(azurite) = azurite_oauth() else { return };
    // What makes the tests above pass is the token: without one the same server refuses.
    let anonymous = TableServiceClient::builder()
        .endpoint(&azurite.endpoint)
        .credential(Credential::Anonymous)
        .root_certificate_pem(azurite.ca_pem.as_bytes())
        .build()
        .unwrap();
    let err = anonymous.create_table(&unique_table_name("anon")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
}

#[tokio::test]
async fn a_token_refused_as_expired_is_renewed_once_and_the_request_succeeds() {
    let Some(azurite) = azurite_oauth() else { return };
    let credential = Arc::new(MintingCredential::new(Script::ExpiredFirst));
    let service = client(azurite, &credential);
    let table = service.create_table(&unique_table_name("renew")).await.unwrap();
    assert_eq!(credential.calls(), 2, "one token refused as expired, one renewal");
    table.insert(Entity::new("p", "r")).await.unwrap();
    assert_eq!(credential.calls(), 2, "the renewed token is cached");
}

#[tokio::test]
async fn a_token_refused_again_after_its_renewal_is_an_auth_error_not_a_loop() {
    let Some(azurite) = azurite_oauth() else { return };
    let credential = Arc::new(MintingCredential::new(Script::AlwaysExpired));
    let service = client(azurite, &credential);
    let err = service.create_table(&unique_table_name("stale")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert_eq!((err.code(), err.status()), (Some(&ErrorCode::AuthenticationFailed), Some(403)));
    assert_eq!(credential.calls(), 2, "one renewal, then the answer is returned");
}

#[tokio::test]
async fn a_failing_credential_is_an_auth_error_carrying_its_message() {
    let Some(azurite) = azurite_oauth() else { return };
    let credential = Arc::new(MintingCredential::new(Script::Fails));
    let service = client(azurite, &credential);
    let err = service.create_table(&unique_table_name("fails")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert!(err.to_string().contains(STORAGE_SCOPE), "{err}");
    let source = err.source().unwrap().to_string();
    assert!(source.contains("identity endpoint is unreachable"), "{source}");
    assert_eq!(credential.calls(), 1, "a credential failure is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_requests_wait_for_one_credential_call() {
    let Some(azurite) = azurite_oauth() else { return };
    // Tokens living 4 s are due for renewal after 2 s (half their lifetime, as they live less
    // than 10 minutes); each call takes 200 ms, so every request arrives while it runs.
    let credential = Arc::new(
        MintingCredential::new(Script::Valid { lifetime: TimeDelta::seconds(4) })
            .with_delay(Duration::from_millis(200)),
    );
    let service = client(azurite, &credential);
    let table = {
        let admin = client(azurite, &Arc::new(MintingCredential::valid()));
        let table = admin.create_table(&unique_table_name("flight")).await.unwrap();
        table.insert(Entity::new("p", "r")).await.unwrap();
        service.table(table.name())
    };
    let fifty = || {
        futures::future::join_all((0..50).map(|_| {
            let table = table.clone();
            tokio::spawn(async move { table.get("p", "r").await })
        }))
    };
    for result in fifty().await {
        result.unwrap().unwrap();
    }
    assert_eq!(credential.calls(), 1, "one call for the first token");

    tokio::time::sleep(Duration::from_millis(2200)).await;
    for result in fifty().await {
        result.unwrap().unwrap();
    }
    assert_eq!(credential.calls(), 2, "one call to renew it ahead of its expiry");
}

#[tokio::test]
async fn no_debug_output_shows_a_token() {
    let Some(azurite) = azurite_oauth() else { return };
    let credential = Arc::new(MintingCredential::new(Script::AlwaysExpired));
    let service = client(azurite, &credential);
    let err = service.create_table(&unique_table_name("debug")).await.unwrap_err();
    let token = credential.last_token().unwrap();
    let secret = token.secret();
    let printed = [
        format!("{service:?}"),
        format!("{:?}", service.table("t")),
        format!("{credential:?}"),
        format!("{token:?}"),
        format!("{err:?}"),
        err.to_string(),
    ];
    for text in printed {
        assert!(!text.contains(secret), "a token shows in: {text}");
        // Not even its signature-free parts (header and claims).
        assert!(!text.contains(secret.split('.').nth(1).unwrap()), "a token part shows in: {text}");
    }
}

#[tokio::test]
async fn the_https_azurite_is_trusted_through_the_root_certificate_setting_only() {
    let Some(azurite) = azurite_oauth() else { return };
    let credential = Arc::new(MintingCredential::valid());
    let untrusting = TableServiceClient::builder()
        .endpoint(&azurite.endpoint)
        .token_credential(Arc::clone(&credential))
        .retry(table_client::RetryPolicy::none())
        .build()
        .unwrap();
    let err = untrusting.create_table(&unique_table_name("untrusted")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err}");
    client(azurite, &credential).create_table(&unique_table_name("trusted")).await.unwrap();
}
