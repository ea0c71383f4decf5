//! Stored access policies, service properties and statistics over HTTP, against wiremock:
//! the documented request shapes (paths, queries, XML bodies, the secondary location), answers
//! the real server never sends (malformed XML, another document), and the rules checked
//! locally, with nothing sent (the mock server receives no request). Round trips against a
//! real server are in the conformance suite (`tests/tests/service_surface.rs`).

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use chrono::{Duration, TimeZone, Utc};
use table_client::auth::{
    AccountSasBuilder, AccountSasPermissions, AccountSasResourceTypes, Credential, TableSasBuilder,
    TableSasPermissions,
};
use table_client::{
    CorsRule, ErrorKind, GeoReplicationStatus, Logging, Metrics, Origin, RetryPolicy, ServiceProperties,
    SignedIdentifier, TableServiceClient,
};
use wiremock::matchers::{body_string_contains, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn client(server: &MockServer, credential: Credential) -> TableServiceClient {
    TableServiceClient::builder()
        .endpoint(&format!("{}/{ACCOUNT}", server.uri()))
        .credential(credential)
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
}

fn keyed(server: &MockServer) -> TableServiceClient {
    client(server, Credential::shared_key(ACCOUNT, KEY).unwrap())
}

async fn assert_nothing_sent(server: &MockServer) {
    let received = server.received_requests().await.unwrap();
    assert!(received.is_empty(), "expected no request, got {received:?}");
}

#[tokio::test]
async fn access_policies_go_as_the_documented_xml_and_come_back() {
    let server = MockServer::start().await;
    Mock::given(method("PUT"))
        .and(path(format!("/{ACCOUNT}/orders")))
        .and(query_param("comp", "acl"))
        .and(header("content-type", "application/xml"))
        .and(body_string_contains(
            "<SignedIdentifiers><SignedIdentifier><Id>readers</Id><AccessPolicy><Start>2030-01-01T00:00:00Z</Start>\
             <Expiry>2030-02-01T00:00:00Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier>",
        ))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    // The service's answer: a byte order mark, fractional seconds, one policy without times.
    let answer = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier>\
        <Id>readers</Id><AccessPolicy><Start>2030-01-01T00:00:00.0000000Z</Start><Expiry>2030-02-01T00:00:00.0000000Z</Expiry>\
        <Permission>r</Permission></AccessPolicy></SignedIdentifier><SignedIdentifier><Id>writers</Id><AccessPolicy>\
        <Permission>au</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
    Mock::given(method("GET"))
        .and(path(format!("/{ACCOUNT}/orders")))
        .and(query_param("comp", "acl"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string(answer)
                .insert_header("content-type", "application/xml"),
        )
        .mount(&server)
        .await;

    let table = keyed(&server).table("orders");
    let readers = SignedIdentifier::new("readers", "r")
        .start(Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap())
        .expiry(Utc.with_ymd_and_hms(2030, 2, 1, 0, 0, 0).unwrap());
    table.set_access_policies(std::slice::from_ref(&readers)).await.unwrap();
    assert_eq!(table.get_access_policies().await.unwrap(), [readers, SignedIdentifier::new("writers", "au")]);
}

#[tokio::test]
async fn malformed_xml_answers_are_decode_errors() {
    let server = MockServer::start().await;
    let bodies = [
        ("/devstoreaccount1/orders", "<SignedIdentifiers><SignedIdentifier><Id>a</Id>"),
        ("/devstoreaccount1/", "<Error><Code>Nope</Code></Error>"),
        (
            "/devstoreaccount1-secondary/",
            "<StorageServiceStats><GeoReplication></GeoReplication></StorageServiceStats>",
        ),
    ];
    for (at, body) in bodies {
        Mock::given(method("GET"))
            .and(path(at))
            .respond_with(ResponseTemplate::new(200).set_body_string(body))
            .mount(&server)
            .await;
    }
    let service = keyed(&server);
    let policies = service.table("orders").get_access_policies().await.unwrap_err();
    let properties = service.get_properties().await.unwrap_err();
    let statistics = service.get_statistics().await.unwrap_err();
    for e in [policies, properties, statistics] {
        assert_eq!(e.kind(), ErrorKind::Decode, "{e:?}");
        assert_eq!(e.status(), Some(200), "{e:?}");
    }
}

#[tokio::test]
async fn another_document_never_reads_as_no_policies() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<EnumerationResults/>"))
        .mount(&server)
        .await;
    let e = keyed(&server).table("orders").get_access_policies().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Decode, "{e:?}");
}

#[tokio::test]
async fn service_properties_go_and_come_as_the_documented_xml() {
    let server = MockServer::start().await;
    Mock::given(method("PUT"))
        .and(path(format!("/{ACCOUNT}/")))
        .and(query_param("restype", "service"))
        .and(query_param("comp", "properties"))
        .and(body_string_contains(
            "<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>true</Enabled>\
             <IncludeAPIs>false</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy>\
             </HourMetrics><Cors><CorsRule><AllowedOrigins>https://a.example</AllowedOrigins>\
             <AllowedMethods>GET,PUT</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds>",
        ))
        .respond_with(ResponseTemplate::new(202))
        .expect(1)
        .mount(&server)
        .await;
    let answer = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Logging><Version>1.0</Version>\
        <Delete>true</Delete><Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>true</Enabled><Days>3</Days>\
        </RetentionPolicy></Logging><HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy>\
        <Enabled>false</Enabled></RetentionPolicy></HourMetrics><MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled>\
        <IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics><Cors/>\
        </StorageServiceProperties>";
    Mock::given(method("GET"))
        .and(query_param("comp", "properties"))
        .respond_with(ResponseTemplate::new(200).set_body_string(answer))
        .mount(&server)
        .await;

    let service = keyed(&server);
    let rule = CorsRule {
        allowed_origins: vec!["https://a.example".into()],
        allowed_methods: vec!["GET".into(), "PUT".into()],
        max_age_seconds: 5,
        ..CorsRule::default()
    };
    let change = ServiceProperties {
        hour_metrics: Some(Metrics::enabled(false, Some(7))),
        cors: Some(vec![rule]),
        ..ServiceProperties::default()
    };
    service.set_properties(&change).await.unwrap();
    let got = service.get_properties().await.unwrap();
    assert_eq!(
        got,
        ServiceProperties {
            logging: Some(Logging {
                delete: true,
                write: true,
                retention_days: Some(3),
                ..Logging::default()
            }),
            hour_metrics: Some(Metrics::disabled()),
            minute_metrics: Some(Metrics::enabled(true, None)),
            cors: Some(vec![]),
        }
    );
}

#[tokio::test]
async fn statistics_are_asked_of_the_secondary_location() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/{ACCOUNT}-secondary/")))
        .and(query_param("restype", "service"))
        .and(query_param("comp", "stats"))
        .respond_with(ResponseTemplate::new(200).set_body_string(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceStats><GeoReplication><Status>bootstrap</Status>\
             <LastSyncTime>Mon, 06 Jan 2025 10:00:00 GMT</LastSyncTime></GeoReplication></StorageServiceStats>",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let stats = keyed(&server).get_statistics().await.unwrap();
    assert_eq!(stats.status, GeoReplicationStatus::Bootstrap);
    assert_eq!(stats.last_sync_time, Some(Utc.with_ymd_and_hms(2025, 1, 6, 10, 0, 0).unwrap()));
}

#[tokio::test]
async fn statistics_use_the_configured_secondary_endpoint() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/elsewhere/"))
        .and(query_param("comp", "stats"))
        .respond_with(ResponseTemplate::new(200).set_body_string(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceStats><GeoReplication><Status>live</Status>\
             </GeoReplication></StorageServiceStats>",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let service = TableServiceClient::builder()
        .endpoint(&format!("{}/{ACCOUNT}", server.uri()))
        .secondary_endpoint(&format!("{}/elsewhere", server.uri()))
        .credential(Credential::shared_key(ACCOUNT, KEY).unwrap())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    assert_eq!(service.get_statistics().await.unwrap().status, GeoReplicationStatus::Live);
}

#[tokio::test]
async fn broken_rules_are_refused_locally_and_nothing_is_sent() {
    let server = MockServer::start().await;
    let service = keyed(&server);
    let table = service.table("orders");
    let six = vec![SignedIdentifier::new("p", "r"); 6];
    let long_id = [SignedIdentifier::new("x".repeat(65), "r")];
    let bad_permission = [SignedIdentifier::new("p", "rw")];
    let mut refusals = vec![
        table.set_access_policies(&six).await.unwrap_err(),
        table.set_access_policies(&long_id).await.unwrap_err(),
        table.set_access_policies(&bad_permission).await.unwrap_err(),
    ];
    let rule = CorsRule {
        allowed_origins: vec!["*".into()],
        allowed_methods: vec!["GET".into()],
        ..CorsRule::default()
    };
    let too_many_rules = ServiceProperties { cors: Some(vec![rule; 6]), ..ServiceProperties::default() };
    let no_days = ServiceProperties {
        minute_metrics: Some(Metrics::enabled(true, Some(0))),
        ..ServiceProperties::default()
    };
    refusals.push(service.set_properties(&too_many_rules).await.unwrap_err());
    refusals.push(service.set_properties(&no_days).await.unwrap_err());
    for e in &refusals {
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e:?}");
        assert!(matches!(e.service_code(), Some((_, Origin::Local))), "{e:?}");
    }
    assert!(refusals[0].to_string().contains("6 stored access policies; the limit is 5"), "{}", refusals[0]);
    assert!(refusals[1].to_string().contains("65 characters long"), "{}", refusals[1]);
    assert_nothing_sent(&server).await;
}

#[tokio::test]
async fn an_expired_or_not_yet_valid_sas_is_refused_before_sending() {
    let server = MockServer::start().await;
    let key = table_client::auth::AccountKey::new(ACCOUNT, KEY).unwrap();
    let table_sas = |start, expiry| {
        TableSasBuilder::new("orders")
            .permissions(TableSasPermissions::all())
            .start(start)
            .expiry(expiry)
            .sign(&key)
            .unwrap()
    };
    let now = Utc::now();
    let expired = table_sas(now - Duration::hours(2), now - Duration::hours(1));
    let early = table_sas(now + Duration::hours(1), now + Duration::hours(2));
    let expired_account = AccountSasBuilder::new()
        .resource_types(AccountSasResourceTypes::all())
        .permissions(AccountSasPermissions::all())
        .expiry(now - Duration::minutes(1))
        .sign(&key)
        .unwrap();
    for (token, says) in
        [(expired, "expired at"), (early, "not valid before"), (expired_account, "expired at")]
    {
        let service = client(&server, Credential::sas(token.as_query()).unwrap());
        let e = service.table("orders").get_if_exists("p", "r").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e:?}");
        assert_eq!(e.status(), None, "{e:?}");
        assert!(e.to_string().contains(says), "{e}");
    }
    // A token the portal wrote with a date-only expiry is read too.
    let portal = Credential::sas("sv=2019-02-02&ss=t&srt=sco&sp=r&se=2001-01-01&sig=x").unwrap();
    let e = client(&server, portal).table("orders").get_if_exists("p", "r").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e:?}");
    assert_nothing_sent(&server).await;
}

#[tokio::test]
async fn sas_urls_need_a_client_holding_the_account_key() {
    let server = MockServer::start().await;
    let sas = TableSasBuilder::new("orders")
        .permissions(TableSasPermissions::all())
        .expiry(Utc::now() + Duration::hours(1));
    let account_sas = AccountSasBuilder::new()
        .resource_types(AccountSasResourceTypes::all())
        .permissions(AccountSasPermissions::all())
        .expiry(Utc::now() + Duration::hours(1));

    let url = keyed(&server).table("orders").generate_sas_url(&sas).unwrap();
    assert!(url.starts_with(&format!("{}/{ACCOUNT}/orders?sv=2019-02-02&tn=orders&", server.uri())), "{url}");
    let url = keyed(&server).generate_account_sas_url(&account_sas).unwrap();
    assert!(
        url.starts_with(&format!("{}/{ACCOUNT}/?sv=2019-02-02&ss=t&srt=sco&sp=rwdlacup&se=", server.uri())),
        "{url}"
    );
    let other = keyed(&server).table("invoices").generate_sas_url(&sas).unwrap_err();
    assert_eq!(other.kind(), ErrorKind::InvalidInput, "{other:?}");

    let token = sas.sign(&table_client::auth::AccountKey::new(ACCOUNT, KEY).unwrap()).unwrap();
    let holders = [
        client(&server, Credential::sas(token.as_query()).unwrap()),
        client(&server, Credential::Anonymous),
        TableServiceClient::from_connection_string("UseEmbeddedEngine=true").unwrap(),
    ];
    for holder in holders {
        let e = holder.table("orders").generate_sas_url(&sas).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e:?}");
        let e = holder.generate_account_sas_url(&account_sas).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e:?}");
        assert!(e.to_string().contains("account key"), "{e}");
    }
    assert_nothing_sent(&server).await;
}
