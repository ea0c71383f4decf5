//! Versions that upgrade: `upgrade_from(N = function)` reads rows stored by older versions of a
//! type, and an enum over the versions of one entity type dispatches on `EntityVersion`.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use chrono::{DateTime, Utc};
use table_core::typed::TableEntity;
use table_core::{ETag, Entity, Error, ErrorKind, Value, Violation};
use table_derive::TableEntity;

/// The first version: one name.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(entity_type = "Employee", version = 1)]
struct EmployeeV1 {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    name: String,
    #[table(etag)]
    etag: Option<ETag>,
}

/// The second: the name split in two. Reads version 1 rows through an infallible upgrade.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(entity_type = "Employee", version = 2, upgrade_from(1 = EmployeeV2::from_v1))]
struct EmployeeV2 {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    last_name: String,
    #[table(etag)]
    etag: Option<ETag>,
}

impl EmployeeV2 {
    fn from_v1(v1: EmployeeV1) -> EmployeeV2 {
        let (first, last) = v1.name.split_once(' ').unwrap_or((&v1.name, ""));
        // Left out on purpose: the derive carries the stored row's ETag whatever this says.
        EmployeeV2 {
            department: v1.department,
            id: v1.id,
            first_name: first.to_owned(),
            last_name: last.to_owned(),
            etag: None,
        }
    }
}

/// The third: an email added. Reads version 1 rows through a fallible chain over version 2,
/// and version 2 rows directly.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(entity_type = "Employee", version = 3)]
#[table(upgrade_from(1 = v1_to_v3, 2 = EmployeeV3::from_v2))]
struct EmployeeV3 {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    last_name: String,
    email: Option<String>,
    #[table(etag)]
    etag: Option<ETag>,
    #[table(timestamp)]
    updated: Option<DateTime<Utc>>,
}

impl EmployeeV3 {
    fn from_v2(v2: EmployeeV2) -> EmployeeV3 {
        EmployeeV3 {
            department: v2.department,
            id: v2.id,
            first_name: v2.first_name,
            last_name: v2.last_name,
            email: None,
            etag: None,
            updated: None,
        }
    }
}

fn v1_to_v3(v1: EmployeeV1) -> table_core::Result<EmployeeV3> {
    if v1.name.is_empty() {
        return Err(Error::other(format!("employee {} has no name to split", v1.id)));
    }
    Ok(EmployeeV3::from_v2(EmployeeV2::from_v1(v1)))
}

fn v1() -> EmployeeV1 {
    EmployeeV1 { department: "Sales".into(), id: 7, name: "Ann Smith".into(), etag: None }
}

fn v2() -> EmployeeV2 {
    EmployeeV2 {
        department: "Sales".into(),
        id: 7,
        first_name: "Ann".into(),
        last_name: "Smith".into(),
        etag: None,
    }
}

fn v3() -> EmployeeV3 {
    EmployeeV3 {
        department: "Sales".into(),
        id: 7,
        first_name: "Ann".into(),
        last_name: "Smith".into(),
        email: Some("ann@contoso.com".into()),
        etag: None,
        updated: None,
    }
}

/// The row as the service returns it: with an ETag and a Timestamp.
fn stored(mut entity: Entity) -> Entity {
    entity.etag = Some(ETag::new("W/\"datetime'2026-11-23T01%3A02%3A03Z'\""));
    entity.timestamp = Some("2026-11-23T01:02:03Z".parse().unwrap());
    entity
}

fn at_version(version: i32) -> Entity {
    let mut entity = v1().to_entity().unwrap();
    entity.insert("EntityVersion", version);
    entity
}

#[test]
fn the_current_version_round_trips_and_writes_its_version() {
    let entity = v3().to_entity().unwrap();
    assert_eq!(entity.get("EntityVersion"), Some(&Value::Int32(3)));
    assert_eq!(EmployeeV3::from_entity(entity).unwrap(), v3());
    assert_eq!(EmployeeV3::VERSION, Some(3));
}

#[test]
fn older_versions_upgrade_directly_and_through_a_chain() {
    let expected = EmployeeV3 { email: None, ..v3() };
    let from_v2 = EmployeeV3::from_entity(v2().to_entity().unwrap()).unwrap();
    assert_eq!(from_v2, expected);
    let from_v1 = EmployeeV3::from_entity(v1().to_entity().unwrap()).unwrap();
    assert_eq!(from_v1, expected);
    assert_eq!(EmployeeV2::from_entity(v1().to_entity().unwrap()).unwrap(), v2());

    // Written back, the upgraded value is the current version.
    assert_eq!(from_v1.to_entity().unwrap().get("EntityVersion"), Some(&Value::Int32(3)));
}

#[test]
fn upgraded_values_carry_the_stored_rows_etag_and_timestamp() {
    let row = stored(v1().to_entity().unwrap());
    let (etag, timestamp) = (row.etag.clone(), row.timestamp);
    let read = EmployeeV3::from_entity(row).unwrap();
    assert_eq!((read.etag, read.updated), (etag.clone(), timestamp));

    let read = EmployeeV2::from_entity(stored(v1().to_entity().unwrap())).unwrap();
    assert_eq!(read.etag, etag);
}

#[test]
fn a_failed_upgrade_is_the_upgrade_functions_error() {
    let nameless = EmployeeV1 { name: String::new(), ..v1() };
    let err = EmployeeV3::from_entity(nameless.to_entity().unwrap()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Other);
    assert!(err.to_string().contains("employee 7 has no name to split"), "{err}");
}

#[test]
fn a_newer_version_is_a_typed_error_naming_both_versions() {
    let err = EmployeeV3::from_entity(at_version(4)).unwrap_err();
    assert_eq!(
        err.violation(),
        Some(&Violation::NewerEntityVersion { entity_type: "Employee".into(), found: 4, current: 3 })
    );
    assert!(
        err.to_string().contains("stored by a newer version 4 of the type; this build reads up to version 3"),
        "{err}"
    );
    // A type without upgrades says the same.
    let err = EmployeeV1::from_entity(at_version(2)).unwrap_err();
    assert!(matches!(err.violation(), Some(Violation::NewerEntityVersion { found: 2, current: 1, .. })));
}

#[test]
fn an_older_version_without_an_upgrade_names_the_versions_read() {
    let err = EmployeeV3::from_entity(at_version(0)).unwrap_err();
    assert_eq!(
        err.violation(),
        Some(&Violation::UnreadableEntityVersion {
            entity_type: "Employee".into(),
            found: 0,
            reads: vec![1, 2, 3]
        })
    );
    assert!(err.to_string().contains("reads versions [1, 2, 3]"), "{err}");
    assert!(err.to_string().contains("upgrade_from(0 = ...)"), "{err}");
    let err = EmployeeV2::from_entity(at_version(0)).unwrap_err();
    assert!(
        matches!(err.violation(), Some(Violation::UnreadableEntityVersion { reads, .. }) if *reads == [1, 2])
    );
}

#[test]
fn a_missing_or_mistyped_version_is_a_value_error() {
    let mut missing = v1().to_entity().unwrap();
    missing.properties.remove("EntityVersion");
    let mut mistyped = v1().to_entity().unwrap();
    mistyped.insert("EntityVersion", "1");
    let mut other_type = v1().to_entity().unwrap();
    other_type.insert("EntityType", "Department");
    for (entity, property) in
        [(missing, "EntityVersion"), (mistyped, "EntityVersion"), (other_type, "EntityType")]
    {
        let err = EmployeeV3::from_entity(entity).unwrap_err();
        assert!(
            matches!(err.violation(), Some(Violation::Value { property: p, .. }) if p == property),
            "{err}"
        );
    }
}

#[test]
fn a_type_that_upgrades_selects_every_property() {
    assert!(EmployeeV1::select().is_some());
    assert_eq!(EmployeeV2::select(), None);
    assert_eq!(EmployeeV3::select(), None);
}

/// An enum over two versions of one entity type, each read as itself.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core")]
enum AnyEmployee {
    V1(EmployeeV1),
    V2(EmployeeV2),
}

/// An enum whose oldest variant is newer than some rows: they go to the oldest newer variant,
/// which upgrades them.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(crate = "table_core")]
enum RecentEmployee {
    V2(EmployeeV2),
    V3(EmployeeV3),
}

#[test]
fn enums_over_versions_dispatch_on_the_version() {
    assert_eq!(AnyEmployee::from_entity(v1().to_entity().unwrap()).unwrap(), AnyEmployee::V1(v1()));
    assert_eq!(AnyEmployee::from_entity(v2().to_entity().unwrap()).unwrap(), AnyEmployee::V2(v2()));
    assert_eq!(AnyEmployee::V1(v1()).to_entity().unwrap().get("EntityVersion"), Some(&Value::Int32(1)));
    assert_eq!(AnyEmployee::V2(v2()).to_entity().unwrap().get("EntityVersion"), Some(&Value::Int32(2)));

    let err = AnyEmployee::from_entity(at_version(3)).unwrap_err();
    assert!(matches!(err.violation(), Some(Violation::NewerEntityVersion { found: 3, current: 2, .. })));
    let mut missing = v1().to_entity().unwrap();
    missing.properties.remove("EntityVersion");
    assert!(matches!(
        AnyEmployee::from_entity(missing).unwrap_err().violation(),
        Some(Violation::Value { property, .. }) if property == "EntityVersion"
    ));

    assert_eq!(RecentEmployee::from_entity(v1().to_entity().unwrap()).unwrap(), RecentEmployee::V2(v2()));
    assert_eq!(RecentEmployee::from_entity(v3().to_entity().unwrap()).unwrap(), RecentEmployee::V3(v3()));
    let err = RecentEmployee::from_entity(Entity::new("Sales", "7").with("EntityType", "Robot")).unwrap_err();
    assert!(err.to_string().contains("unknown entity type \"Robot\""), "{err}");
}
