//! The account and table settings on every backend: stored access policies, service
//! properties and statistics round trips, and the local refusals of the service's rules
//! (nothing reaches the engine: its call count stays put). On Azurite alone: an account SAS
//! gives access within its services, resource types and permissions and is refused outside
//! them, and a table SAS naming a stored access policy (`si=`) takes its rights from it.
//!
//! Azurite implements Get/Set Table ACL, Get/Set Table Service Properties and Get Table
//! Service Stats (the latter only on the `-secondary` account path), so all of them run here.
//! Its one deviation met here: it requires `<Start>` and `<Expiry>` in every stored policy
//! (recorded in [`access_policies_round_trip`]).

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use chrono::{DateTime, Duration, DurationRound, Utc};
use conformance::azurite::{ACCOUNT_KEY, ACCOUNT_NAME, Azurite, azurite, unique_table_name};
use conformance::scenario;
use conformance::target::Target;
use futures::TryStreamExt;
use table_client::auth::{
    AccountSasBuilder, AccountSasPermissions, AccountSasResourceTypes, Credential, TableSasBuilder,
};
use table_client::{
    CorsRule, Entity, Error, ErrorKind, GeoReplicationStatus, Logging, Metrics, Origin, ServiceProperties,
    SignedIdentifier, TableServiceClient,
};

scenario!(
    access_policies_round_trip,
    broken_policy_rules_are_refused_before_any_request,
    service_properties_round_trip,
    statistics_say_live,
);

/// Now, to the second (the XML carries seconds).
fn now() -> DateTime<Utc> {
    Utc::now().duration_trunc(Duration::seconds(1)).unwrap()
}

async fn access_policies_round_trip(target: Target) {
    let table = target.fresh_table().await;
    assert_eq!(table.get_access_policies().await.unwrap(), []);
    let policies = [
        SignedIdentifier::new("readers", "r").start(now()).expiry(now() + Duration::days(1)),
        SignedIdentifier::new("x".repeat(64), "raud").start(now()).expiry(now() + Duration::hours(1)),
    ];
    table.set_access_policies(&policies).await.unwrap();
    assert_eq!(table.get_access_policies().await.unwrap(), policies);
    table.set_access_policies(&[]).await.unwrap();
    assert_eq!(table.get_access_policies().await.unwrap(), []);

    // A policy without times leaves them to each SAS. Azurite deviates: its schema requires
    // both <Start> and <Expiry>, and it answers 400 (DeserializationError) without them.
    let open = [SignedIdentifier::new("open", "r")];
    match (target.is_azurite(), table.set_access_policies(&open).await) {
        (false, Ok(())) => assert_eq!(table.get_access_policies().await.unwrap(), open),
        (true, Err(e)) => assert_eq!(
            (e.kind(), e.status(), e.origin()),
            (ErrorKind::InvalidInput, Some(400), Origin::Service)
        ),
        (_, other) => panic!("unexpected answer to a policy without times: {other:?}"),
    }

    let missing = target.client.table(&unique_table_name("missing")).get_access_policies().await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound, "{missing:?}");
}

async fn broken_policy_rules_are_refused_before_any_request(target: Target) {
    let table = target.fresh_table().await;
    let calls = target.engine.as_ref().map(|e| e.faults().calls());
    let refusals = [
        table.set_access_policies(&vec![SignedIdentifier::new("p", "r"); 6]).await.unwrap_err(),
        table.set_access_policies(&[SignedIdentifier::new("x".repeat(65), "r")]).await.unwrap_err(),
        table.set_access_policies(&[SignedIdentifier::new("p", "rl")]).await.unwrap_err(),
    ];
    for e in &refusals {
        assert_local_refusal(e);
    }
    assert_eq!(
        target.engine.as_ref().map(|e| e.faults().calls()),
        calls,
        "a refused request reached the engine"
    );
    assert_eq!(table.get_access_policies().await.unwrap(), [], "nothing was stored");
}

fn assert_local_refusal(e: &Error) {
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e:?}");
    assert!(matches!(e.service_code(), Some((_, Origin::Local))), "{e:?}");
}

async fn service_properties_round_trip(target: Target) {
    let service = &target.client;
    let before = service.get_properties().await.unwrap();
    assert!(
        before.logging.is_some() && before.hour_metrics.is_some() && before.minute_metrics.is_some(),
        "{before:?}"
    );

    let rule = CorsRule {
        allowed_origins: vec!["https://contoso.example".into()],
        allowed_methods: vec!["GET".into(), "MERGE".into()],
        allowed_headers: vec!["x-ms-meta-*".into()],
        exposed_headers: vec!["x-ms-request-id".into()],
        max_age_seconds: 300,
    };
    let logging =
        Logging { read: true, write: true, delete: false, retention_days: Some(7), ..Logging::default() };
    let wanted = ServiceProperties {
        logging: Some(logging),
        hour_metrics: Some(Metrics::enabled(true, Some(30))),
        minute_metrics: Some(Metrics::disabled()),
        cors: Some(vec![rule]),
    };
    service.set_properties(&wanted).await.unwrap();
    assert_eq!(service.get_properties().await.unwrap(), wanted);

    // A set changes only what it names.
    let change =
        ServiceProperties { minute_metrics: Some(Metrics::enabled(false, Some(1))), ..Default::default() };
    service.set_properties(&change).await.unwrap();
    let after = service.get_properties().await.unwrap();
    assert_eq!(after, ServiceProperties { minute_metrics: change.minute_metrics.clone(), ..wanted });

    let calls = target.engine.as_ref().map(|e| e.faults().calls());
    let too_long = ServiceProperties {
        logging: Some(Logging { retention_days: Some(366), ..Logging::default() }),
        ..Default::default()
    };
    assert_local_refusal(&service.set_properties(&too_long).await.unwrap_err());
    assert_eq!(target.engine.as_ref().map(|e| e.faults().calls()), calls);
    service.set_properties(&before).await.unwrap();
}

async fn statistics_say_live(target: Target) {
    let stats = target.client.get_statistics().await.unwrap();
    assert_eq!(stats.status, GeoReplicationStatus::Live);
    match target.is_azurite() {
        // Azurite answers the time of the request as the last sync.
        true => assert!(stats.last_sync_time.is_some(), "{stats:?}"),
        // The engine has no secondary.
        false => assert_eq!(stats.last_sync_time, None),
    }
}

fn admin(azurite: &Azurite) -> TableServiceClient {
    TableServiceClient::from_connection_string(&azurite.connection_string).unwrap()
}

/// A client using the SAS URL `url`: its endpoint before `?`, its token after.
fn from_sas_url(url: &str) -> TableServiceClient {
    let (endpoint, token) = url.split_once('?').unwrap();
    TableServiceClient::builder()
        .endpoint(endpoint)
        .credential(Credential::sas(token).unwrap())
        .build()
        .unwrap()
}

fn account_sas(resource_types: &str, permissions: &str) -> AccountSasBuilder {
    AccountSasBuilder::new()
        .resource_types(AccountSasResourceTypes::parse(resource_types).unwrap())
        .permissions(AccountSasPermissions::parse(permissions).unwrap())
        .start(Utc::now() - Duration::minutes(5))
        .expiry(Utc::now() + Duration::hours(1))
}

fn assert_denied(e: &Error, context: &str) {
    assert_eq!(e.kind(), ErrorKind::Auth, "{context}: {e:?}");
    assert_eq!(e.status(), Some(403), "{context}: {e:?}");
}

#[tokio::test]
async fn an_account_sas_reaches_tables_entities_and_settings() {
    let Some(azurite) = azurite() else { return };
    let url = admin(azurite).generate_account_sas_url(&account_sas("sco", "rwdlacu")).unwrap();
    let client = from_sas_url(&url);

    let name = unique_table_name("acctsas");
    let table = client.create_table(&name).await.unwrap();
    table.insert(Entity::new("p", "r").with("n", 1)).await.unwrap();
    assert_eq!(table.get("p", "r").await.unwrap().get("n"), Some(&table_client::Value::Int32(1)));
    let names: Vec<String> = client.list_tables().try_collect().await.unwrap();
    assert!(names.contains(&name), "{names:?}");
    client.get_properties().await.unwrap();
    client.delete_table(&name).await.unwrap();
}

#[tokio::test]
async fn an_account_sas_is_refused_outside_its_resource_types_and_permissions() {
    let Some(azurite) = azurite() else { return };
    let admin = admin(azurite);
    let name = unique_table_name("acctsasdeny");
    admin.create_table(&name).await.unwrap();
    admin.table(&name).insert(Entity::new("p", "r")).await.unwrap();

    // Objects only: entities are reachable, creating a table (a container) is not.
    let objects = from_sas_url(&admin.generate_account_sas_url(&account_sas("o", "rwdlacu")).unwrap());
    objects.table(&name).get("p", "r").await.unwrap();
    assert_denied(
        &objects.create_table(&unique_table_name("never")).await.unwrap_err(),
        "srt=o create table",
    );

    // Read and list only: reads work, every write is refused and nothing is written.
    let readers = from_sas_url(&admin.generate_account_sas_url(&account_sas("sco", "rl")).unwrap());
    readers.table(&name).get("p", "r").await.unwrap();
    assert_denied(&readers.table(&name).insert(Entity::new("p", "r2")).await.unwrap_err(), "sp=rl insert");
    assert_eq!(admin.table(&name).get_if_exists("p", "r2").await.unwrap(), None);
    admin.delete_table(&name).await.unwrap();
}

#[tokio::test]
async fn a_sas_naming_a_stored_access_policy_takes_its_rights_from_it() {
    let Some(azurite) = azurite() else { return };
    let admin = admin(azurite);
    let name = unique_table_name("storedpolicy");
    let table = admin.create_table(&name).await.unwrap();
    table.insert(Entity::new("p", "r")).await.unwrap();
    let readers = SignedIdentifier::new("readers", "r")
        .start(Utc::now() - Duration::minutes(5))
        .expiry(Utc::now() + Duration::hours(1));
    table.set_access_policies(&[readers]).await.unwrap();

    // No permissions and no expiry of its own: the policy supplies both.
    let url = table.generate_sas_url(&TableSasBuilder::new(&name).policy_id("readers")).unwrap();
    assert!(url.contains("si=readers") && !url.contains("sp="), "{url}");
    let (endpoint_and_table, token) = url.split_once('?').unwrap();
    let endpoint = endpoint_and_table.strip_suffix(&format!("/{name}")).unwrap();
    let holder = TableServiceClient::builder()
        .endpoint(endpoint)
        .credential(Credential::sas(token).unwrap())
        .build()
        .unwrap();
    holder.table(&name).get("p", "r").await.unwrap();
    assert_denied(&holder.table(&name).insert(Entity::new("p", "r2")).await.unwrap_err(), "policy r insert");

    // A SAS naming a policy the table does not hold is refused.
    let unknown = TableSasBuilder::new(&name)
        .policy_id("writers")
        .sign(&table_client::auth::AccountKey::new(ACCOUNT_NAME, ACCOUNT_KEY).unwrap())
        .unwrap();
    let stranger = TableServiceClient::builder()
        .endpoint(endpoint)
        .credential(Credential::sas(unknown.as_query()).unwrap())
        .build()
        .unwrap();
    assert_denied(&stranger.table(&name).get("p", "r").await.unwrap_err(), "unknown policy");
    admin.delete_table(&name).await.unwrap();
}
