//! Table SAS over HTTP with our client's own tokens ([`TableSasBuilder`]): what a token allows,
//! its key range (which Azurite ignores) on point operations, writes, queries and batches, and
//! the service's codes for everything else.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use chrono::{TimeDelta, Utc};
use futures::TryStreamExt;
use table_client::auth::{AccountKey, TableSasBuilder, TableSasPermissions};
use table_client::{TableClient, TableServiceClient, Transaction};
use table_core::engine::Engine;
use table_core::{Entity, IfMatch, SignedIdentifier};
use table_server::{Accounts, Config, DEV_ACCOUNT, DEV_KEY, Server};

/// A server over a fresh engine holding table `Sas` with entities (p, r) for p in a..=d,
/// r in 1..=3.
async fn start() -> (Server, Engine) {
    let engine = Engine::new();
    engine.create_table("Sas").unwrap();
    for pk in ["a", "b", "c", "d"] {
        for rk in ["1", "2", "3"] {
            engine.insert("Sas", Entity::new(pk, rk)).unwrap();
        }
    }
    let config = Config {
        address: SocketAddr::from(([127, 0, 0, 1], 0)),
        accounts: Accounts::development(engine.clone()),
        auth: true,
    };
    (Server::bind(config).await.unwrap(), engine)
}

fn builder(permissions: &str) -> TableSasBuilder {
    TableSasBuilder::new("Sas")
        .permissions(TableSasPermissions::parse(permissions).unwrap())
        .expiry(Utc::now() + TimeDelta::hours(1))
}

/// The table `Sas` reached with the token `builder` signs.
fn client(server: &Server, builder: &TableSasBuilder) -> TableClient {
    let key = AccountKey::new(DEV_ACCOUNT, DEV_KEY).unwrap();
    let token = builder.sign(&key).unwrap();
    let conn = format!(
        "TableEndpoint=http://{}/{DEV_ACCOUNT};SharedAccessSignature={}",
        server.local_addr(),
        token.as_query()
    );
    TableServiceClient::from_connection_string(&conn).unwrap().table("Sas")
}

fn code<T: std::fmt::Debug>(result: table_core::Result<T>) -> String {
    let error = result.unwrap_err();
    format!("{} {}", error.status().unwrap_or(0), error.code().map(ToString::to_string).unwrap_or_default())
}

#[tokio::test]
async fn permissions_are_enforced_per_operation() {
    let (server, _engine) = start().await;
    let reader = client(&server, &builder("r"));
    assert_eq!(reader.get("a", "1").await.unwrap().row_key, "1");
    // Versions from 2015-04-05 sign the same string (older .NET SDKs sign 2017-04-17).
    let older = client(&server, &builder("r").version("2017-04-17"));
    assert_eq!(older.get("a", "1").await.unwrap().row_key, "1");
    assert_eq!(reader.query().collect().await.unwrap().len(), 12);
    let mismatch = "403 AuthorizationPermissionMismatch";
    assert_eq!(code(reader.insert(Entity::new("a", "9")).await), mismatch);
    assert_eq!(code(reader.delete("a", "1", IfMatch::Any).await), mismatch);
    let adder = client(&server, &builder("a"));
    adder.insert(Entity::new("a", "9")).await.unwrap();
    assert_eq!(code(adder.get("a", "9").await), mismatch);
    assert_eq!(code(adder.insert_or_merge(Entity::new("a", "9")).await), mismatch, "an upsert needs a and u");
    let upserter = client(&server, &builder("au"));
    upserter.insert_or_replace(Entity::new("a", "9")).await.unwrap();
    let updater = client(&server, &builder("u"));
    updater.replace(Entity::new("a", "9"), IfMatch::Any).await.unwrap();
    assert_eq!(code(updater.delete("a", "9", IfMatch::Any).await), mismatch);
    client(&server, &builder("d")).delete("a", "9", IfMatch::Any).await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn the_key_range_bounds_points_writes_queries_and_batches() {
    let (server, engine) = start().await;
    let ranged = client(&server, &builder("raud").start_key("b", "2").end_key("c", "2"));
    let mut keys: Vec<(String, String)> =
        ranged.query().collect().await.unwrap().into_iter().map(|e| (e.partition_key, e.row_key)).collect();
    keys.sort();
    let expected =
        [("b", "2"), ("b", "3"), ("c", "1"), ("c", "2")].map(|(p, r)| (p.to_owned(), r.to_owned()));
    assert_eq!(keys, expected);
    assert!(ranged.get("c", "2").await.is_ok());
    assert_eq!(code(ranged.get("c", "3").await).split(' ').next(), Some("403"));
    assert_eq!(code(ranged.get("a", "1").await).split(' ').next(), Some("403"));
    assert!(code(ranged.insert(Entity::new("d", "0")).await).starts_with("403"));
    assert!(code(ranged.delete("b", "1", IfMatch::Any).await).starts_with("403"));
    assert!(engine.get("Sas", "b", "1", None).is_ok(), "the refused delete changed nothing");
    ranged.insert(Entity::new("b", "9")).await.unwrap();
    // A batch applies only when every operation is in range, all or nothing.
    let outside = Transaction::new().insert(Entity::new("c", "0")).insert(Entity::new("c", "5"));
    assert!(ranged.submit_transaction(outside).await.is_err());
    assert!(engine.get("Sas", "c", "0", None).is_err(), "no operation of the refused batch applied");
    let inside = Transaction::new().insert(Entity::new("c", "0")).delete("c", "1", IfMatch::Any);
    ranged.submit_transaction(inside).await.unwrap();
    let reader = client(&server, &builder("r"));
    let refused = Transaction::new().insert(Entity::new("a", "7"));
    assert!(reader.submit_transaction(refused).await.is_err(), "a batch write needs its permission");
    server.shutdown().await;
}

#[tokio::test]
async fn tokens_for_other_tables_times_policies_and_ip_have_the_services_codes() {
    let (server, engine) = start().await;
    let hour = TimeDelta::hours(1);
    let key = AccountKey::new(DEV_ACCOUNT, DEV_KEY).unwrap();
    let token = builder("r").sign(&key).unwrap();
    let service = TableServiceClient::from_connection_string(&format!(
        "TableEndpoint=http://{}/{DEV_ACCOUNT};SharedAccessSignature={}",
        server.local_addr(),
        token.as_query()
    ))
    .unwrap();
    // The signature holds, so what the token does not reach is the service's authorization
    // failure, not an authentication failure.
    let other = TableServiceClient::create_table(&service, "Other").await;
    assert_eq!(code(other), "403 AuthorizationFailure", "a table SAS cannot create tables");
    let listed = service.query_tables(None).try_collect::<Vec<_>>().await;
    assert_eq!(code(listed), "403 AuthorizationFailure", "nor list them");
    engine.create_table("Other").unwrap();
    assert_eq!(code(service.table("Other").get("a", "1").await), "403 AuthorizationFailure");
    // Tokens not valid yet or expired are refused by our client before sending: the
    // verifier's unit tests cover them.
    let ip = builder("r").ip("10.1.1.1-10.1.1.9");
    assert_eq!(code(client(&server, &ip).get("a", "1").await), "403 AuthorizationSourceIPMismatch");
    let local = builder("r").ip("127.0.0.1");
    assert!(client(&server, &local).get("a", "1").await.is_ok());
    let https = builder("r").protocol(table_client::auth::SasProtocol::Https);
    assert_eq!(code(client(&server, &https).get("a", "1").await), "403 AuthorizationProtocolMismatch");
    // Set and Get Table ACL over HTTP with the account key.
    let owner = TableServiceClient::from_connection_string(&format!(
        "DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};TableEndpoint=http://{}/{DEV_ACCOUNT}",
        server.local_addr()
    ))
    .unwrap()
    .table("Sas");
    let readers = SignedIdentifier::new("readers", "r").expiry(Utc::now() + hour);
    owner.set_access_policies(std::slice::from_ref(&readers)).await.unwrap();
    let stored = owner.get_access_policies().await.unwrap();
    assert_eq!(
        stored.iter().map(|p| (&p.id, &p.permissions)).collect::<Vec<_>>(),
        [(&readers.id, &readers.permissions)]
    );
    assert_eq!(engine.get_access_policies("Sas").unwrap().len(), 1);
    assert!(code(client(&server, &builder("raud")).get_access_policies().await).starts_with("403"));
    let by_policy = TableSasBuilder::new("Sas").policy_id("readers");
    assert!(client(&server, &by_policy).get("a", "1").await.is_ok());
    let missing = TableSasBuilder::new("Sas").policy_id("writers");
    assert_eq!(code(client(&server, &missing).get("a", "1").await), "403 AuthenticationFailed");
    server.shutdown().await;
}

/// Our client's account SAS: table management with the container resource type, entities
/// with the object type, each with its permission.
#[tokio::test]
async fn an_account_sas_reaches_what_its_resource_types_and_permissions_name() {
    use table_client::auth::{AccountSasBuilder, AccountSasPermissions, AccountSasResourceTypes};
    let (server, _engine) = start().await;
    let key = AccountKey::new(DEV_ACCOUNT, DEV_KEY).unwrap();
    let service = |srt: &str, sp: &str| {
        let token = AccountSasBuilder::new()
            .resource_types(AccountSasResourceTypes::parse(srt).unwrap())
            .permissions(AccountSasPermissions::parse(sp).unwrap())
            .expiry(Utc::now() + TimeDelta::hours(1))
            .sign(&key)
            .unwrap();
        TableServiceClient::from_connection_string(&format!(
            "TableEndpoint=http://{}/{DEV_ACCOUNT};SharedAccessSignature={}",
            server.local_addr(),
            token.as_query()
        ))
        .unwrap()
    };
    let manager = service("c", "lc");
    manager.create_table("Made").await.unwrap();
    // `w` creates tables too (the JavaScript SDK's account SAS permission for it); `a` does not.
    service("c", "w").create_table("Written").await.unwrap();
    assert_eq!(code(service("c", "a").create_table("Added").await), "403 AuthorizationPermissionMismatch");
    assert!(manager.query_tables(None).try_collect::<Vec<_>>().await.unwrap().contains(&"Made".to_owned()));
    assert_eq!(code(manager.table("Sas").get("a", "1").await), "403 AuthorizationResourceTypeMismatch");
    let objects = service("o", "rau");
    assert_eq!(objects.table("Sas").get("d", "3").await.unwrap().row_key, "3");
    objects.table("Made").insert_or_merge(Entity::new("x", "y")).await.unwrap();
    assert_eq!(
        code(objects.table("Made").delete("x", "y", IfMatch::Any).await),
        "403 AuthorizationPermissionMismatch"
    );
    let listed = objects.query_tables(None).try_collect::<Vec<_>>().await;
    assert_eq!(code(listed), "403 AuthorizationResourceTypeMismatch");
    server.shutdown().await;
}

/// The status and `odata.error` code of a `GET` of `path_and_query` sent as is, with
/// `authorization` when given.
async fn raw_get(server: &Server, path_and_query: &str, authorization: Option<&str>) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = format!(
        "GET {path_and_query} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAccept: application/json\r\n"
    );
    if let Some(value) = authorization {
        request.push_str(&format!(
            "Authorization: {value}\r\nx-ms-date: {}\r\n",
            table_client::auth::http_date(Utc::now())
        ));
    }
    request.push_str("\r\n");
    let mut stream = tokio::net::TcpStream::connect(server.local_addr()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status = answer.split(' ').nth(1).unwrap().parse().unwrap();
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let json: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    (status, json["odata.error"]["code"].as_str().unwrap_or_default().to_owned())
}

/// A request carrying both a SAS and an Authorization header is refused with a 400, as the
/// service refuses it, whichever of the two is valid.
#[tokio::test]
async fn a_sas_and_an_authorization_header_together_are_refused() {
    let (server, _engine) = start().await;
    let key = AccountKey::new(DEV_ACCOUNT, DEV_KEY).unwrap();
    let token = builder("r").sign(&key).unwrap();
    let path = format!("/{DEV_ACCOUNT}/Sas()?{}", token.as_query());
    assert_eq!(raw_get(&server, &path, None).await, (200, String::new()));
    let signed = table_client::auth::Credential::shared_key(DEV_ACCOUNT, DEV_KEY).unwrap();
    let header = signed.authorize("GET", &path, "", &table_client::auth::http_date(Utc::now())).unwrap();
    let (_, authorization) =
        header.headers.iter().find(|(name, _)| name.eq_ignore_ascii_case("Authorization")).unwrap();
    let both = raw_get(&server, &path, Some(authorization)).await;
    assert_eq!(both, (400, "InvalidAuthenticationInfo".to_owned()));
    server.shutdown().await;
}

/// The service reads a SAS's parameter names without regard to case (its query parameters are
/// a case-insensitive collection): a token whose names are upper-cased (`SIG=`, `SV=`) reaches
/// what it names, and a table it does not name stays out of reach.
#[tokio::test]
async fn sas_parameter_names_are_read_in_any_case() {
    let (server, _engine) = start().await;
    let key = AccountKey::new(DEV_ACCOUNT, DEV_KEY).unwrap();
    let token = builder("r").sign(&key).unwrap();
    let shouted: Vec<String> = token
        .as_query()
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) => format!("{}={value}", name.to_ascii_uppercase()),
            None => pair.to_owned(),
        })
        .collect();
    let shouted = shouted.join("&");
    assert!(shouted.contains("SIG=") && shouted.contains("SV="), "{shouted}");
    let read = raw_get(&server, &format!("/{DEV_ACCOUNT}/Sas()?{shouted}"), None).await;
    assert_eq!(read, (200, String::new()));
    let other = raw_get(&server, &format!("/{DEV_ACCOUNT}/Other()?{shouted}"), None).await;
    assert_eq!(other, (403, "AuthorizationFailure".to_owned()));
    server.shutdown().await;
}
