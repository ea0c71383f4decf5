//! Authorization against Azurite: SharedKey, SharedKeyLite, table SAS tokens from our
//! `TableSasBuilder` (full, read-only, expired: refused locally), wrong keys, the SAS connection-string form, and
//! that no `Debug` output of a client or an error shows a key or a signature.
//!
//! Authorization only exists over HTTP, so these run on Azurite alone (skipping loudly where it
//! cannot run, failing with `REQUIRE_AZURITE=1`). Azurite's deviation on `$batch` (protocol doc
//! section 2.3) is recorded by [`a_table_sas_on_batch_must_be_signed_for_batch_on_azurite`].

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use chrono::{Duration, Utc};
use conformance::azurite::{ACCOUNT_KEY, ACCOUNT_NAME, Azurite, azurite, unique_table_name};
use futures::StreamExt;
use table_client::auth::{AccountKey, Credential, SasToken, TableSasBuilder, TableSasPermissions};
use table_client::{
    Entity, Error, ErrorCode, ErrorKind, Filter, IfMatch, RetryPolicy, TableClient, TableServiceClient,
    Transaction, Value,
};

/// The development account's key, as the SAS builder signs with it.
fn account_key() -> AccountKey {
    AccountKey::new(ACCOUNT_NAME, ACCOUNT_KEY).unwrap()
}

/// The client with the harness's account-key connection string (SharedKey).
fn admin(azurite: &Azurite) -> TableServiceClient {
    TableServiceClient::from_connection_string(&azurite.connection_string).unwrap()
}

fn with_credential(azurite: &Azurite, credential: Credential) -> TableServiceClient {
    TableServiceClient::builder().endpoint(&azurite.endpoint).credential(credential).build().unwrap()
}

/// A table SAS for `table` with `permissions`, valid from a minute ago for an hour.
fn sas_for(table: &str, permissions: &str) -> SasToken {
    TableSasBuilder::new(table)
        .permissions(TableSasPermissions::parse(permissions).unwrap())
        .start(Utc::now() - Duration::minutes(1))
        .expiry(Utc::now() + Duration::hours(1))
        .sign(&account_key())
        .unwrap()
}

fn sas_client(azurite: &Azurite, token: &SasToken) -> TableServiceClient {
    with_credential(azurite, Credential::sas(token.as_query()).unwrap())
}

/// A fresh table, created with the account key (a table SAS cannot create tables).
async fn fresh_table(azurite: &Azurite, prefix: &str) -> String {
    let name = unique_table_name(prefix);
    admin(azurite).create_table(&name).await.unwrap();
    name
}

fn assert_auth_error(e: &Error, code: Option<ErrorCode>, context: &str) {
    assert_eq!(e.kind(), ErrorKind::Auth, "{context}: {e:?}");
    assert_eq!(e.status(), Some(403), "{context}: {e:?}");
    if let Some(code) = code {
        assert_eq!(e.code(), Some(&code), "{context}: {e:?}");
    }
}

/// Every entity operation and a query, each checked by its effect.
async fn crud_and_query(table: &TableClient) {
    let e = Entity::new("p", "r1").with("n", 1).with("s", "it's");
    let etag = table.insert(e.clone()).await.unwrap();
    let got = table.get("p", "r1").await.unwrap();
    assert_eq!(got.properties, e.properties);
    assert_eq!(got.etag.as_ref(), Some(&etag));

    let etag = table.replace(Entity::new("p", "r1").with("n", 2), IfMatch::ETag(etag)).await.unwrap();
    table.merge(Entity::new("p", "r1").with("m", true), IfMatch::ETag(etag)).await.unwrap();
    table.insert_or_replace(Entity::new("p", "r2").with("n", 3)).await.unwrap();
    table.insert_or_merge(Entity::new("p", "r2").with("m", false)).await.unwrap();
    assert_eq!(table.get_if_exists("p", "missing").await.unwrap(), None);

    let rows = table.query().partition("p").filter(Filter::gt("n", 1)).collect().await.unwrap();
    let seen: Vec<(&str, Option<&Value>, Option<&Value>)> =
        rows.iter().map(|e| (e.row_key.as_str(), e.get("n"), e.get("m"))).collect();
    assert_eq!(
        seen,
        [
            ("r1", Some(&Value::Int32(2)), Some(&Value::Boolean(true))),
            ("r2", Some(&Value::Int32(3)), Some(&Value::Boolean(false))),
        ]
    );

    table.delete("p", "r1", IfMatch::Any).await.unwrap();
    assert!(table.delete_if_exists("p", "r2").await.unwrap());
    assert!(!table.delete_if_exists("p", "r2").await.unwrap());
    assert!(table.query().collect().await.unwrap().is_empty());
}

/// Table management through a service client, then the entity operations.
async fn full_account_access(client: &TableServiceClient, prefix: &str) {
    let name = unique_table_name(prefix);
    let table = client.create_table(&name).await.unwrap();
    crud_and_query(&table).await;
    let listed: Vec<String> = client.list_tables_with_prefix(&name).map(|r| r.unwrap()).collect().await;
    assert_eq!(listed, std::slice::from_ref(&name));
    client.delete_table(&name).await.unwrap();
}

#[tokio::test]
async fn shared_key_from_the_connection_string_works() {
    let Some(azurite) = azurite() else { return };
    full_account_access(&admin(azurite), "sharedkey").await;
}

#[tokio::test]
async fn shared_key_lite_works() {
    let Some(azurite) = azurite() else { return };
    let credential = Credential::shared_key_lite(ACCOUNT_NAME, ACCOUNT_KEY).unwrap();
    full_account_access(&with_credential(azurite, credential), "sharedkeylite").await;
}

#[tokio::test]
async fn a_raud_table_sas_allows_crud_and_queries_on_its_table() {
    let Some(azurite) = azurite() else { return };
    let name = fresh_table(azurite, "sasraud").await;
    let token = sas_for(&name, "raud");
    assert!(token.as_query().contains("sp=raud"), "{token:?}");
    let client = sas_client(azurite, &token);
    crud_and_query(&client.table(&name)).await;

    // The SAS is for one table: listing tables needs more (protocol doc section 2.3).
    let listing = client.list_tables().next().await.unwrap().unwrap_err();
    assert_auth_error(&listing, None, "listing tables with a table SAS");
}

#[tokio::test]
async fn a_read_only_sas_reads_but_every_write_is_a_typed_403() {
    let Some(azurite) = azurite() else { return };
    let name = fresh_table(azurite, "sasread").await;
    admin(azurite).table(&name).insert(Entity::new("p", "r").with("n", 1)).await.unwrap();
    let table = sas_client(azurite, &sas_for(&name, "r")).table(&name);

    assert_eq!(table.get("p", "r").await.unwrap().get("n"), Some(&Value::Int32(1)));
    assert_eq!(table.query().partition("p").collect().await.unwrap().len(), 1);

    let denied = Some(ErrorCode::AuthorizationPermissionMismatch);
    let insert = table.insert(Entity::new("p", "new")).await.unwrap_err();
    assert_auth_error(&insert, denied.clone(), "insert");
    let merge = table.merge(Entity::new("p", "r").with("n", 2), IfMatch::Any).await.unwrap_err();
    assert_auth_error(&merge, denied.clone(), "merge");
    let delete = table.delete("p", "r", IfMatch::Any).await.unwrap_err();
    assert_auth_error(&delete, denied, "delete");
    // Nothing changed.
    let after = admin(azurite).table(&name).query().collect().await.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].get("n"), Some(&Value::Int32(1)));
}

#[tokio::test]
async fn an_expired_sas_a_wrong_key_and_a_foreign_signature_are_auth_errors() {
    let Some(azurite) = azurite() else { return };
    let name = fresh_table(azurite, "sasbad").await;

    let expired = TableSasBuilder::new(&name)
        .permissions(TableSasPermissions::all())
        .start(Utc::now() - Duration::hours(2))
        .expiry(Utc::now() - Duration::hours(1))
        .sign(&account_key())
        .unwrap();
    // Its own `se` says so: refused before sending (no status: no server answered).
    let err = sas_client(azurite, &expired).table(&name).get_if_exists("p", "r").await.unwrap_err();
    assert_eq!((err.kind(), err.status()), (ErrorKind::Auth, None), "expired SAS: {err:?}");

    // A valid key of another account's shape: well-formed base64, wrong secret.
    let wrong = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==";
    for credential in [
        Credential::shared_key(ACCOUNT_NAME, wrong).unwrap(),
        Credential::shared_key_lite(ACCOUNT_NAME, wrong).unwrap(),
    ] {
        let client = with_credential(azurite, credential.clone());
        let err = client.create_table(&unique_table_name("never")).await.unwrap_err();
        assert_auth_error(&err, None, &format!("{credential:?} create table"));
        let err = client.table(&name).get_if_exists("p", "r").await.unwrap_err();
        assert_auth_error(&err, None, &format!("{credential:?} get"));
    }
    let foreign = TableSasBuilder::new(&name)
        .permissions(TableSasPermissions::all())
        .expiry(Utc::now() + Duration::hours(1))
        .sign(&AccountKey::new(ACCOUNT_NAME, wrong).unwrap())
        .unwrap();
    let err = sas_client(azurite, &foreign).table(&name).insert(Entity::new("p", "r")).await.unwrap_err();
    assert_auth_error(&err, None, "SAS signed with a wrong key");
}

#[tokio::test]
async fn the_sas_connection_string_form_works() {
    let Some(azurite) = azurite() else { return };
    let name = fresh_table(azurite, "sascs").await;
    let token = sas_for(&name, "raud");
    let connection_string =
        format!("SharedAccessSignature={};TableEndpoint={};", token.as_query(), azurite.endpoint);
    let client = TableServiceClient::from_connection_string(&connection_string).unwrap();
    crud_and_query(&client.table(&name)).await;
    // A leading `?`, as the portal shows it, is accepted too.
    let with_mark = connection_string.replace("Signature=", "Signature=?");
    let client = TableServiceClient::from_connection_string(&with_mark).unwrap();
    assert_eq!(client.table(&name).query().collect().await.unwrap(), []);
}

/// The `sig` value of a token, raw and percent-decoded.
fn signature_forms(token: &SasToken) -> [String; 2] {
    let sig = token.as_query().split('&').find_map(|pair| pair.strip_prefix("sig=")).unwrap().to_owned();
    let decoded = sig.replace("%2F", "/").replace("%2B", "+").replace("%3D", "=");
    [sig, decoded]
}

fn assert_no_secret(debug: &str, secrets: &[&str], context: &str) {
    for secret in secrets {
        assert!(!debug.contains(secret), "{context} shows a secret: {debug}");
    }
}

#[tokio::test]
async fn debug_output_never_shows_a_key_or_a_signature() {
    let Some(azurite) = azurite() else { return };
    let name = fresh_table(azurite, "debug").await;
    let token = sas_for(&name, "r");
    let [sig, sig_decoded] = signature_forms(&token);
    let secrets = [ACCOUNT_KEY, sig.as_str(), sig_decoded.as_str()];
    let sas_cs = format!("SharedAccessSignature={};TableEndpoint={}", token.as_query(), azurite.endpoint);
    let clients = [
        ("account key connection string", admin(azurite)),
        (
            "UseDevelopmentStorage",
            TableServiceClient::from_connection_string("UseDevelopmentStorage=true").unwrap(),
        ),
        ("SharedKey", with_credential(azurite, Credential::shared_key(ACCOUNT_NAME, ACCOUNT_KEY).unwrap())),
        (
            "SharedKeyLite",
            with_credential(azurite, Credential::shared_key_lite(ACCOUNT_NAME, ACCOUNT_KEY).unwrap()),
        ),
        ("SAS credential", sas_client(azurite, &token)),
        ("SAS connection string", TableServiceClient::from_connection_string(&sas_cs).unwrap()),
    ];
    for (form, client) in &clients {
        let table = client.table(&name);
        for debug in [
            format!("{client:?}"),
            format!("{client:#?}"),
            format!("{table:?}"),
            format!("{:?}", table.query()),
        ] {
            assert_no_secret(&debug, &secrets, form);
        }
        // Errors answered by the service, and errors of requests that never got an answer.
        let answered = table.insert(Entity::new("p", "r")).await;
        if let Err(e) = answered {
            assert_no_secret(&format!("{e:?} {e}"), &secrets, form);
        }
    }
    let redacted = format!("{:?}", Credential::sas(token.as_query()).unwrap());
    assert!(redacted.contains("sig=<redacted>"), "{redacted}");

    // A request that fails in transport: the error (and its source chain) must not carry the
    // signed URL.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let unreachable = TableServiceClient::builder()
        .endpoint(&format!("http://127.0.0.1:{port}/{ACCOUNT_NAME}"))
        .credential(Credential::sas(token.as_query()).unwrap())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let err = unreachable.table(&name).get("p", "r").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err:?}");
    let mut chain = format!("{err:?} {err}");
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        chain.push_str(&format!(" {s:?} {s}"));
        source = s.source();
    }
    assert_no_secret(&chain, &secrets, "a transport error");
}

/// Azurite deviation (protocol doc sections 2.3 and 10): the real service accepts a table SAS
/// on `POST /$batch` for that table's entities; Azurite takes the resource from the URL and
/// only accepts a SAS signed for the table name `$batch`. Recorded, not skipped: when Azurite
/// is fixed the first assertion fails and this test must be updated.
#[tokio::test]
async fn a_table_sas_on_batch_must_be_signed_for_batch_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let name = fresh_table(azurite, "sasbatch").await;
    let transaction = || {
        Transaction::new()
            .insert(Entity::new("p", "a").with("n", 1))
            .insert(Entity::new("p", "b").with("n", 2))
    };

    let table_sas = sas_client(azurite, &sas_for(&name, "raud")).table(&name);
    let err = table_sas.submit_transaction(transaction()).await.unwrap_err();
    assert_auth_error(
        &err,
        Some(ErrorCode::AuthorizationFailure),
        "a table SAS on $batch (Azurite deviation)",
    );
    assert!(table_sas.query().collect().await.unwrap().is_empty(), "nothing applied");

    let batch_sas = sas_client(azurite, &sas_for("$batch", "raud")).table(&name);
    let outcomes = batch_sas.submit_transaction(transaction()).await.unwrap();
    assert_eq!(outcomes.len(), 2);
    let rows = table_sas.query().partition("p").collect().await.unwrap();
    assert_eq!(rows.iter().map(|e| e.row_key.as_str()).collect::<Vec<_>>(), ["a", "b"]);
}
