//! The service's protocol-head rules on the media types and version of a request, on both HTTP
//! backends (table-server and Azurite), over raw HTTP: headers no client library leaves out
//! (`Accept`, `x-ms-version`) or gets wrong in two ways at once. The embedded engine has no
//! HTTP head.
//!
//! Azurite's deviations met here, recorded in [`the_protocol_head_rules_hold`]: it serves an
//! entity's update or delete without `Accept` (the service refuses every table and entity
//! request without one, 415 `AtomFormatNotSupported`), checks `Accept` before `Content-Type`,
//! and serves JSON to a request without `x-ms-version` or at a version before 2013-08-15 (the
//! service serves the first at its oldest version; neither has JSON there: 415
//! `JsonFormatNotSupported`).
//!
//! And in [`the_version_rules_hold`]: run with `--skipApiVersionCheck`, Azurite serves an
//! `x-ms-version` the service does not know (the service: 400 `InvalidHeaderValue`), names its
//! own newest version in every answer's `x-ms-version` (the service names the version it
//! served: a SAS request's `sv`, whatever its `x-ms-version`), and answers a bearer token
//! without `x-ms-version` with 403 `AuthorizationFailure`, taking no token without `--oauth`
//! (the service: 403 `AuthenticationFailed`, bearer tokens needing version 2017-11-09).

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use chrono::{TimeDelta, Utc};
use conformance::azurite::{azurite, unique_table_name};
use conformance::raw_http::{Account, Reply};
use table_client::auth::{AccountKey, TableSasBuilder, TableSasPermissions};

const JSON: &str = "application/json";
const MINIMAL: &str = "application/json;odata=minimalmetadata";

/// Sends `method` to `path` (below the account) with `headers` and `body`, signed.
async fn send(account: &Account, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    account.send(method, path, headers, body, true).await
}

/// The status and error code of `reply`: the service's OData error, or Azurite's own XML
/// `<Error><Code>`.
fn refusal(reply: &Reply) -> (u16, String) {
    let azurite_code = reply.body.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>"));
    let code = azurite_code.map_or_else(|| reply.code(), |(code, _)| code.to_owned());
    (reply.status, code)
}

/// A new table named from `prefix`, created in the form every SDK sends.
async fn create_table(account: &Account, prefix: &str) -> String {
    let table = unique_table_name(prefix);
    let headers = [("x-ms-version", "2019-02-02"), ("Content-Type", JSON), ("Accept", MINIMAL)];
    let created = send(account, "POST", "Tables", &headers, &format!(r#"{{"TableName":"{table}"}}"#)).await;
    assert_eq!(created.status, 201, "{created:?}");
    table
}

/// The answer the service gives, or on Azurite its recorded deviation.
fn expected(azurite: bool, service: (u16, &str), on_azurite: (u16, &str)) -> (u16, String) {
    let (status, code) = if azurite { on_azurite } else { service };
    (status, code.to_owned())
}

async fn the_protocol_head_rules_hold(account: Account, azurite: bool) {
    let version = ("x-ms-version", "2019-02-02");
    let table = create_table(&account, "media").await;
    let entity = format!("{table}(PartitionKey='p',RowKey='r')");
    let inserted = send(
        &account,
        "POST",
        &table,
        &[version, ("Content-Type", JSON), ("Accept", MINIMAL)],
        r#"{"PartitionKey":"p","RowKey":"r"}"#,
    )
    .await;
    assert_eq!(inserted.status, 201, "{inserted:?}");

    // Without `Accept`: refused whatever the verb; Azurite serves an entity's update and delete.
    let update =
        send(&account, "PUT", &entity, &[version, ("Content-Type", JSON), ("If-Match", "*")], "{}").await;
    let delete = send(&account, "DELETE", &entity, &[version, ("If-Match", "*")], "").await;
    for reply in [&update, &delete] {
        if azurite {
            assert_eq!(reply.status, 204, "{reply:?}");
        } else {
            assert_eq!(refusal(reply), (415, "AtomFormatNotSupported".to_owned()), "{reply:?}");
        }
    }
    let read = send(&account, "GET", &entity, &[version], "").await;
    assert_eq!(refusal(&read), (415, "AtomFormatNotSupported".to_owned()), "{read:?}");
    let delete_table = send(&account, "DELETE", &format!("Tables('{table}')"), &[version], "").await;
    assert_eq!(refusal(&delete_table), (415, "AtomFormatNotSupported".to_owned()), "{delete_table:?}");

    // Bad in both `Content-Type` and `Accept`: the service refuses the `Content-Type`.
    let both =
        [version, ("Content-Type", "application/json;odata=verbose"), ("Accept", "application/atom+xml")];
    let reply = send(&account, "POST", "Tables", &both, r#"{"TableName":"neither"}"#).await;
    assert_eq!(
        refusal(&reply),
        expected(azurite, (415, "JsonVerboseFormatNotSupported"), (415, "AtomFormatNotSupported")),
        "{reply:?}"
    );

    // No version: the service's oldest, which has no JSON; before 2013-08-15 likewise.
    let unversioned = send(&account, "GET", "Tables", &[("Accept", MINIMAL)], "").await;
    // Azurite runs with `--skipApiVersionCheck` here (without it, it refuses a version it does
    // not know with 400 `InvalidHeaderValue`).
    let old =
        send(&account, "GET", "Tables", &[("x-ms-version", "2012-02-12"), ("Accept", MINIMAL)], "").await;
    for reply in [&unversioned, &old] {
        if azurite {
            assert_eq!(reply.status, 200, "{reply:?}");
        } else {
            assert_eq!(refusal(reply), (415, "JsonFormatNotSupported".to_owned()), "{reply:?}");
        }
    }

    // The entity is there still, unless Azurite deleted it without `Accept`.
    let deleted =
        send(&account, "DELETE", &entity, &[version, ("Accept", MINIMAL), ("If-Match", "*")], "").await;
    assert_eq!(deleted.status, if azurite { 404 } else { 204 }, "{deleted:?}");
    let dropped =
        send(&account, "DELETE", &format!("Tables('{table}')"), &[version, ("Accept", MINIMAL)], "").await;
    assert_eq!(dropped.status, 204, "{dropped:?}");
}

/// The service's version rules: an `x-ms-version` it does not know is 400
/// `InvalidHeaderValue`; a SAS request is served at its `sv`, whatever its `x-ms-version`; a
/// bearer token needs 2017-11-09, so one without `x-ms-version` is 403 `AuthenticationFailed`.
async fn the_version_rules_hold(account: Account, azurite: bool) {
    let version = ("x-ms-version", "2019-02-02");
    let table = create_table(&account, "versions").await;

    // Days between two versions, text: Azurite (run here with `--skipApiVersionCheck`)
    // serves them.
    for unknown in ["2019-02-03", "2021-02-13", "garbage"] {
        let reply =
            send(&account, "GET", "Tables", &[("x-ms-version", unknown), ("Accept", MINIMAL)], "").await;
        if azurite {
            assert_eq!(reply.status, 200, "{unknown}: {reply:?}");
        } else {
            assert_eq!(refusal(&reply), (400, "InvalidHeaderValue".to_owned()), "{unknown}: {reply:?}");
        }
    }

    // A SAS signed at 2019-02-02 with an `x-ms-version` before JSON: served at its `sv`.
    let key = AccountKey::new(&account.name, &account.key).unwrap();
    let token = TableSasBuilder::new(&table)
        .permissions(TableSasPermissions::parse("r").unwrap())
        .expiry(Utc::now() + TimeDelta::hours(1))
        .sign(&key)
        .unwrap();
    let path = format!("{table}()?{}", token.as_query());
    let old = [("x-ms-version", "2012-02-12"), ("Accept", MINIMAL)];
    let reply = account.send("GET", &path, &old, "", false).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    // The service names the version it served; Azurite names its own newest on every answer.
    if !azurite {
        assert_eq!(reply.header("x-ms-version"), Some("2019-02-02"), "{reply:?}");
    }

    // A bearer token without `x-ms-version` (here over HTTP, which this Azurite takes no
    // token over either).
    let bearer = [("Authorization", "Bearer a.e30.c"), ("Accept", MINIMAL)];
    let reply = account.send("GET", "Tables", &bearer, "", false).await;
    assert_eq!(
        refusal(&reply),
        expected(azurite, (403, "AuthenticationFailed"), (403, "AuthorizationFailure")),
        "{reply:?}"
    );

    let dropped =
        send(&account, "DELETE", &format!("Tables('{table}')"), &[version, ("Accept", MINIMAL)], "").await;
    assert_eq!(dropped.status, 204, "{dropped:?}");
}

#[tokio::test]
async fn on_table_server() {
    the_protocol_head_rules_hold(Account::table_server(), false).await;
}

#[tokio::test]
async fn on_azurite() {
    let Some(azurite) = azurite() else { return };
    the_protocol_head_rules_hold(Account::azurite(azurite), true).await;
}

#[tokio::test]
async fn versions_on_table_server() {
    the_version_rules_hold(Account::table_server(), false).await;
}

#[tokio::test]
async fn versions_on_azurite() {
    let Some(azurite) = azurite() else { return };
    the_version_rules_hold(Account::azurite(azurite), true).await;
}
