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

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use conformance::azurite::{ACCOUNT_KEY, ACCOUNT_NAME, azurite, unique_table_name};
use conformance::raw_http::Reply;
use table_client::auth::{Credential, http_date};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const JSON: &str = "application/json";
const MINIMAL: &str = "application/json;odata=minimalmetadata";

/// An HTTP backend's account: where it is, and how to sign for it.
struct Account {
    /// `http://127.0.0.1:PORT/ACCOUNT`.
    endpoint: String,
    name: String,
    key: String,
}

impl Account {
    /// Sends `method` to `path` (below the account) with `headers` and `body`, signed with the
    /// account key, over a connection of its own.
    async fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let (host, account_path) = self.endpoint.strip_prefix("http://").unwrap().split_once('/').unwrap();
        let path = format!("/{account_path}/{path}");
        let content_type = headers.iter().find(|(n, _)| *n == "Content-Type").map_or("", |(_, v)| v);
        let credential = Credential::shared_key(&self.name, &self.key).unwrap();
        let signed =
            credential.authorize(method, &path, content_type, &http_date(chrono::Utc::now())).unwrap();
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        for (name, value) in
            signed.headers.iter().map(|(n, v)| (*n, v.as_str())).chain(headers.iter().copied())
        {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        let mut stream = TcpStream::connect(host).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        Reply::parse(&String::from_utf8(raw).unwrap()).unwrap()
    }
}

/// The status and error code of `reply`: the service's OData error, or Azurite's own XML
/// `<Error><Code>`.
fn refusal(reply: &Reply) -> (u16, String) {
    let azurite_code = reply.body.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>"));
    let code = azurite_code.map_or_else(|| reply.code(), |(code, _)| code.to_owned());
    (reply.status, code)
}

/// The answer the service gives, or on Azurite its recorded deviation.
fn expected(azurite: bool, service: (u16, &str), on_azurite: (u16, &str)) -> (u16, String) {
    let (status, code) = if azurite { on_azurite } else { service };
    (status, code.to_owned())
}

async fn the_protocol_head_rules_hold(account: Account, azurite: bool) {
    let version = ("x-ms-version", "2019-02-02");
    let table = unique_table_name("media");
    let created = account
        .send(
            "POST",
            "Tables",
            &[version, ("Content-Type", JSON), ("Accept", MINIMAL)],
            &format!(r#"{{"TableName":"{table}"}}"#),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let entity = format!("{table}(PartitionKey='p',RowKey='r')");
    let inserted = account
        .send(
            "POST",
            &table,
            &[version, ("Content-Type", JSON), ("Accept", MINIMAL)],
            r#"{"PartitionKey":"p","RowKey":"r"}"#,
        )
        .await;
    assert_eq!(inserted.status, 201, "{inserted:?}");

    // Without `Accept`: refused whatever the verb; Azurite serves an entity's update and delete.
    let update =
        account.send("PUT", &entity, &[version, ("Content-Type", JSON), ("If-Match", "*")], "{}").await;
    let delete = account.send("DELETE", &entity, &[version, ("If-Match", "*")], "").await;
    for reply in [&update, &delete] {
        if azurite {
            assert_eq!(reply.status, 204, "{reply:?}");
        } else {
            assert_eq!(refusal(reply), (415, "AtomFormatNotSupported".to_owned()), "{reply:?}");
        }
    }
    let read = account.send("GET", &entity, &[version], "").await;
    assert_eq!(refusal(&read), (415, "AtomFormatNotSupported".to_owned()), "{read:?}");
    let delete_table = account.send("DELETE", &format!("Tables('{table}')"), &[version], "").await;
    assert_eq!(refusal(&delete_table), (415, "AtomFormatNotSupported".to_owned()), "{delete_table:?}");

    // Bad in both `Content-Type` and `Accept`: the service refuses the `Content-Type`.
    let both =
        [version, ("Content-Type", "application/json;odata=verbose"), ("Accept", "application/atom+xml")];
    let reply = account.send("POST", "Tables", &both, r#"{"TableName":"neither"}"#).await;
    assert_eq!(
        refusal(&reply),
        expected(azurite, (415, "JsonVerboseFormatNotSupported"), (415, "AtomFormatNotSupported")),
        "{reply:?}"
    );

    // No version: the service's oldest, which has no JSON; before 2013-08-15 likewise.
    let unversioned = account.send("GET", "Tables", &[("Accept", MINIMAL)], "").await;
    // Azurite runs with `--skipApiVersionCheck` here (without it, it refuses a version it does
    // not know with 400 `InvalidHeaderValue`).
    let old = account.send("GET", "Tables", &[("x-ms-version", "2013-08-14"), ("Accept", MINIMAL)], "").await;
    for reply in [&unversioned, &old] {
        if azurite {
            assert_eq!(reply.status, 200, "{reply:?}");
        } else {
            assert_eq!(refusal(reply), (415, "JsonFormatNotSupported".to_owned()), "{reply:?}");
        }
    }

    // The entity is there still, unless Azurite deleted it without `Accept`.
    let deleted =
        account.send("DELETE", &entity, &[version, ("Accept", MINIMAL), ("If-Match", "*")], "").await;
    assert_eq!(deleted.status, if azurite { 404 } else { 204 }, "{deleted:?}");
    let dropped =
        account.send("DELETE", &format!("Tables('{table}')"), &[version, ("Accept", MINIMAL)], "").await;
    assert_eq!(dropped.status, 204, "{dropped:?}");
}

#[tokio::test]
async fn on_table_server() {
    let connection_string = conformance::server::connection_string();
    let field = |name: &str| {
        connection_string.split(';').find_map(|part| part.strip_prefix(name)).unwrap().to_owned()
    };
    let account =
        Account { endpoint: field("TableEndpoint="), name: field("AccountName="), key: field("AccountKey=") };
    the_protocol_head_rules_hold(account, false).await;
}

#[tokio::test]
async fn on_azurite() {
    let Some(azurite) = azurite() else { return };
    let account = Account {
        endpoint: azurite.endpoint.clone(),
        name: ACCOUNT_NAME.to_owned(),
        key: ACCOUNT_KEY.to_owned(),
    };
    the_protocol_head_rules_hold(account, true).await;
}
