//! Versions that upgrade, on both backends: rows written by an older version of a type are read,
//! queried and rewritten by the newer one (`upgrade_from`), and index maintenance decodes the
//! stored old version through the same upgrade.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use chrono::{DateTime, Utc};
use conformance::scenario;
use conformance::target::Target;
use table_client::{ETag, EntityKey, ErrorKind, IfMatch, TableEntity, TypedTable, Value, Violation};

/// The first version: one name, an index by email.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(entity_type = "Employee", version = 1, rename_all = "PascalCase")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
struct EmployeeV1 {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    name: String,
    email: String,
}

/// The second: the name split in two; version 1 rows upgrade. Same index.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(entity_type = "Employee", version = 2, rename_all = "PascalCase")]
#[table(upgrade_from(1 = Employee::from_v1))]
#[table(index(name = "by_email", row_key = "email_{email}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    last_name: String,
    email: String,
    #[table(etag)]
    etag: Option<ETag>,
    #[table(timestamp)]
    updated: Option<DateTime<Utc>>,
}

impl Employee {
    fn from_v1(v1: EmployeeV1) -> Employee {
        let (first, last) = v1.name.split_once(' ').unwrap_or((&v1.name, ""));
        Employee {
            department: v1.department,
            id: v1.id,
            first_name: first.to_owned(),
            last_name: last.to_owned(),
            email: v1.email,
            etag: None,
            updated: None,
        }
    }
}

/// Either version, each read as itself.
#[derive(Debug, Clone, PartialEq, TableEntity)]
enum AnyEmployee {
    V1(EmployeeV1),
    V2(Employee),
}

fn v1(id: u32, name: &str) -> EmployeeV1 {
    EmployeeV1 {
        department: "Sales".into(),
        id,
        name: name.into(),
        email: format!("{}@contoso.com", name.to_lowercase().replace(' ', ".")),
    }
}

/// The stored `EntityVersion` of the primary row.
async fn stored_version(table: &TypedTable<Employee>, key: &EntityKey) -> Option<Value> {
    let row = table.untyped().get(&key.partition_key, &key.row_key).await.unwrap();
    row.get("EntityVersion").cloned()
}

scenario!(
    old_rows_are_read_queried_and_migrated,
    index_rows_follow_a_replace_of_an_older_version,
    rows_of_a_newer_version_are_reported_not_skipped_by_index_audits,
);

async fn old_rows_are_read_queried_and_migrated(t: Target) {
    let raw = t.fresh_table().await;
    let old = raw.typed::<EmployeeV1>();
    let etag = old.insert(&v1(1, "Ann Smith")).await.unwrap();
    old.insert(&v1(2, "Bob Jones")).await.unwrap();

    let table = raw.typed::<Employee>();
    let key = EmployeeV1::key("Sales", 1).unwrap();
    let ann = table.get(&key).await.unwrap();
    assert_eq!((ann.first_name.as_str(), ann.last_name.as_str()), ("Ann", "Smith"));
    // The upgraded value carries the stored row's ETag and Timestamp.
    assert_eq!(ann.etag.as_ref(), Some(&etag));
    let stored = raw.get(&key.partition_key, &key.row_key).await.unwrap();
    assert_eq!(ann.updated, stored.timestamp);
    assert!(ann.updated.is_some());

    // Queries ask for every property, so the old rows' `Name` arrives to be upgraded.
    let all = table.query().partition("Sales").collect().await.unwrap();
    assert_eq!(all.iter().map(|e| e.last_name.as_str()).collect::<Vec<_>>(), ["Smith", "Jones"]);
    let bob = table.query().partition("Sales").filter(Employee::EMAIL.eq("bob.jones@contoso.com")).collect();
    assert_eq!(bob.await.unwrap().len(), 1);

    // Writing the upgraded value back, conditionally on the ETag read, stores version 2.
    let mut ann = ann;
    ann.last_name = "Smith-Jones".into();
    let new_etag = table.replace(&ann, IfMatch::ETag(etag.clone())).await.unwrap();
    assert_eq!(stored_version(&table, &key).await, Some(Value::Int32(2)));
    let row = raw.get(&key.partition_key, &key.row_key).await.unwrap();
    assert_eq!(row.get("Name"), None, "the replace dropped the old shape");
    let read = table.get(&key).await.unwrap();
    assert_eq!((read.last_name.as_str(), read.etag), ("Smith-Jones", Some(new_etag)));

    // The old type cannot read what the new one wrote, and says why.
    let err = old.get(&key).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        matches!(err.violation(), Some(Violation::NewerEntityVersion { found: 2, current: 1, .. })),
        "{err}"
    );

    // An enum over both versions reads each row as the version that wrote it (the enum
    // declares no index, so its query names the primaries' rows itself).
    let mixed = raw.typed::<AnyEmployee>().query().partition("Sales").row_key_prefix("empid_");
    let mixed = mixed.collect().await.unwrap();
    assert!(
        matches!(&mixed[..], [AnyEmployee::V2(a), AnyEmployee::V1(b)] if a.id == 1 && b.id == 2),
        "{mixed:?}"
    );
}

async fn index_rows_follow_a_replace_of_an_older_version(t: Target) {
    let raw = t.fresh_table().await;
    raw.typed::<EmployeeV1>().insert(&v1(1, "Ann Smith")).await.unwrap();
    let table = raw.typed::<Employee>();
    let report = table.verify_indexes().await.unwrap();
    assert!(report.is_consistent() && report.primaries == 1, "{report:#?}");

    // The index copy written by version 1 reads as version 2 too.
    let old_copy = EntityKey::new("Sales", "email_ann.smith@contoso.com");
    let mut ann: Employee = table.get_by_index(Employee::BY_EMAIL, &old_copy).await.unwrap();
    assert_eq!(ann.first_name, "Ann");

    // The replace decodes the stored version 1 primary to find its index rows: the old copy
    // goes, the new one comes, in the same transaction.
    ann.email = "ann@contoso.com".into();
    table.replace(&ann, IfMatch::Any).await.unwrap();
    let err = table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &old_copy).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let new_copy = EntityKey::new("Sales", "email_ann@contoso.com");
    let moved: Employee = table.get_by_index(Employee::BY_EMAIL, &new_copy).await.unwrap();
    assert_eq!(moved.email, "ann@contoso.com");
    let copy_row = raw.get(&new_copy.partition_key, &new_copy.row_key).await.unwrap();
    assert_eq!(copy_row.get("EntityVersion"), Some(&Value::Int32(2)));
    assert_eq!(stored_version(&table, &EmployeeV1::key("Sales", 1).unwrap()).await, Some(Value::Int32(2)));
    let report = table.verify_indexes().await.unwrap();
    assert!(report.is_consistent() && report.primaries == 1, "{report:#?}");
    assert_eq!(raw.query().collect().await.unwrap().len(), 2, "one primary and one copy");
}

/// A row of the type that this build cannot read (a newer version wrote it) is the type's all
/// the same: an index audit reports it rather than counting its index rows as stale, and a
/// rebuild refuses to run rather than delete them.
async fn rows_of_a_newer_version_are_reported_not_skipped_by_index_audits(t: Target) {
    let raw = t.fresh_table().await;
    let table = raw.typed::<Employee>();
    let ann = Employee::from_v1(v1(1, "Ann Smith"));
    table.insert(&ann).await.unwrap();
    // Version 3 of the type rewrites the row (and keeps its index copy, written as it was).
    let mut newer = raw.get("Sales", "empid_000001").await.unwrap();
    newer.properties.insert("EntityVersion".into(), Value::Int32(3));
    raw.insert_or_replace(newer).await.unwrap();

    let report = table.verify_indexes().await.unwrap();
    assert!(!report.is_consistent(), "{report:#?}");
    assert_eq!(report.primaries, 0);
    assert!(report.stale.is_empty(), "the copy of an unreadable primary is not judged: {report:#?}");
    assert_eq!(report.unreadable.len(), 1, "{report:#?}");
    assert_eq!(report.unreadable[0].0, EntityKey::new("Sales", "empid_000001"));
    assert!(report.unreadable[0].1.contains("newer version 3"), "{report:#?}");

    let err = table.rebuild_indexes().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("nothing was changed"), "{err}");
    let copy = EntityKey::new("Sales", "email_ann.smith@contoso.com");
    assert!(raw.get_if_exists(&copy.partition_key, &copy.row_key).await.unwrap().is_some(), "the copy stays");
}
