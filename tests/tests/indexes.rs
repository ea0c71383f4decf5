//! Automatic index maintenance, on both backends: same-partition indexes and index entities
//! change atomically with their primary; cross-partition ones are eventually consistent and,
//! after a crash at any request, a drain restores exactly what a clean rebuild would produce.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::num::NonZeroU64;
use std::time::Duration;

use conformance::scenario;
use conformance::target::Target;
use futures::StreamExt;
use table_client::engine::{Engine, FaultSpec, FaultTiming};
use table_client::typed::LookupIndex;
use table_client::{
    Entity, EntityKey, ErrorCode, ErrorKind, IfMatch, RetryPolicy, TableClient, TableEntity,
    TableServiceClient, TypedTable,
};

/// Same-partition indexes: a unique full copy by email, and an index entity by last name.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(entity_type = "Employee")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
#[table(index(name = "by_email_card", row_key = "card_{email}", project(first_name, email)))]
#[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    last_name: String,
    age: i32,
    email: String,
}

/// The same entity as [`Employee`] before it declared any index.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(entity_type = "Employee")]
struct UnindexedEmployee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    last_name: String,
    age: i32,
    email: String,
}

/// The projection read from the `by_email_card` copies.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
struct EmployeeCard {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    email: String,
}

/// Cross-partition indexes: a copy in one `email` partition, and an index entity per last name
/// in a `lastname` partition.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}")]
#[table(entity_type = "GlobalEmployee")]
#[table(index(name = "by_email", partition_key = "email", row_key = "{email}"))]
#[table(lookup(name = "by_last_name", partition_key = "lastname", row_key = "{last_name}"))]
struct GlobalEmployee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    last_name: String,
    email: String,
}

/// A summary beside the employees of its department, without indexes.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "summary")]
#[table(entity_type = "DepartmentSummary")]
struct DepartmentSummary {
    #[table(key_only)]
    department: String,
    employee_count: i32,
}

fn employee(id: u32, last_name: &str, email: &str) -> Employee {
    Employee {
        department: "Sales".into(),
        id,
        first_name: format!("First{id}"),
        last_name: last_name.into(),
        age: 30,
        email: email.into(),
    }
}

fn global(department: &str, id: u32, last_name: &str, email: &str) -> GlobalEmployee {
    GlobalEmployee { department: department.into(), id, last_name: last_name.into(), email: email.into() }
}

async fn assert_consistent<T: TableEntity + Send + 'static>(table: &TypedTable<T>) {
    let report = table.verify_indexes().await.unwrap();
    assert!(report.is_consistent(), "{report:#?}");
}

async fn lookup_ids<T: TableEntity + Send + 'static, I: LookupIndex<Entity = T>>(
    table: &TypedTable<T>,
    index: I,
    key: EntityKey,
    id: fn(&T) -> u32,
) -> BTreeSet<u32> {
    let stream = table.lookup(index, &key, 4);
    stream.map(|r| id(&r.unwrap())).collect().await
}

/// The ids the index entity of Sales employees called `last_name` lists.
async fn jones_ids(table: &TypedTable<Employee>, last_name: &str) -> BTreeSet<u32> {
    let key = Employee::BY_LAST_NAME.key("Sales", last_name).unwrap();
    lookup_ids(table, Employee::BY_LAST_NAME, key, |e| e.id).await
}

/// The ids the cross-partition index entity of employees called `last_name` lists.
async fn global_ids(table: &TypedTable<GlobalEmployee>, last_name: &str) -> BTreeSet<u32> {
    let key = GlobalEmployee::BY_LAST_NAME.key(last_name).unwrap();
    lookup_ids(table, GlobalEmployee::BY_LAST_NAME, key, |e| e.id).await
}

scenario!(
    same_partition_copies_follow_every_write,
    unique_index_conflicts_write_nothing,
    stale_etags_change_nothing,
    index_entities_follow_inserts_renames_and_deletes,
    concurrent_writers_all_land_in_the_index_entity,
    contended_unconditional_writes_never_fail_a_precondition,
    index_entity_lists_grow_past_one_property,
    typed_queries_skip_index_rows,
    cross_partition_indexes_converge_without_a_crash,
    moves_leave_the_entity_in_exactly_one_table,
    rebuild_adds_indexes_to_existing_data,
    typed_transactions_keep_same_partition_indexes,
    index_reads_refuse_keys_their_templates_cannot_build,
    index_reads_return_only_that_index_s_copies,
);

async fn same_partition_copies_follow_every_write(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    let mut ann = employee(1, "Jones", "ann@contoso.com");
    table.insert(&ann).await.unwrap();
    let by_email = Employee::BY_EMAIL.key("Sales", "ann@contoso.com").unwrap();
    assert_eq!(by_email, EntityKey::new("Sales", "email_ann@contoso.com"));
    assert_eq!(table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &by_email).await.unwrap(), ann);
    let card_key = Employee::BY_EMAIL_CARD.key("Sales", "ann@contoso.com").unwrap();
    let card: EmployeeCard = table.get_by_index(Employee::BY_EMAIL_CARD, &card_key).await.unwrap();
    assert_eq!(card.first_name, "First1");
    assert_consistent(&table).await;

    // Changing the indexed field moves the copy in the same transaction.
    ann.email = "ann.jones@contoso.com".into();
    table.replace(&ann, IfMatch::Any).await.unwrap();
    let err = table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &by_email).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let moved = Employee::BY_EMAIL.key("Sales", "ann.jones@contoso.com").unwrap();
    assert_eq!(table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &moved).await.unwrap(), ann);
    assert_consistent(&table).await;

    // A merge that leaves the indexed field alone refreshes the copy's content.
    ann.age = 31;
    table.merge(&ann, IfMatch::Any).await.unwrap();
    assert_eq!(table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &moved).await.unwrap().age, 31);
    ann.age = 32;
    table.insert_or_replace(&ann).await.unwrap();
    assert_eq!(table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &moved).await.unwrap().age, 32);
    assert_consistent(&table).await;

    let key = ann.entity_key().unwrap();
    table.delete(&key, IfMatch::Any).await.unwrap();
    assert_eq!(
        table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &moved).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert!(!table.delete_if_exists(&key).await.unwrap());
    let report = table.verify_indexes().await.unwrap();
    assert!(report.is_consistent() && report.primaries == 0, "{report:#?}");
    let rows = table.untyped().query().collect().await.unwrap();
    assert!(rows.is_empty(), "every copy and index entity went with the primary: {rows:?}");
}

async fn index_reads_return_only_that_index_s_copies(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    let ann = employee(1, "Jones", "ann@contoso.com");
    table.insert(&ann).await.unwrap();
    let ann_key = Employee::BY_EMAIL.key("Sales", "ann@contoso.com").unwrap();
    // Under keys `by_email` builds: another index's copy, and a row written around the SDK.
    let mut foreign = table.untyped().get(&ann_key.partition_key, &ann_key.row_key).await.unwrap();
    let other = Employee::BY_EMAIL.key("Sales", "bob@contoso.com").unwrap();
    (foreign.partition_key, foreign.row_key) = (other.partition_key.clone(), other.row_key.clone());
    foreign.insert("_Index", "by_email_card");
    table.untyped().insert(foreign).await.unwrap();
    let plain = Employee::BY_EMAIL.key("Sales", "cy@contoso.com").unwrap();
    let row = Entity::new(plain.partition_key.clone(), plain.row_key.clone()).with("Note", "not a copy");
    table.untyped().insert(row).await.unwrap();

    for key in [&other, &plain] {
        let err = table.get_by_index::<Employee, _>(Employee::BY_EMAIL, key).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{key}: {err}");
        assert!(err.message().contains("not a copy of index `by_email`"), "{err}");
    }
    let listed: Vec<Employee> =
        table.query_index(Employee::BY_EMAIL).partition("Sales").collect().await.unwrap();
    assert_eq!(listed, vec![ann.clone()], "the query skips the same rows");
    assert_eq!(table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &ann_key).await.unwrap(), ann);
}

async fn unique_index_conflicts_write_nothing(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    table.insert(&employee(1, "Jones", "same@contoso.com")).await.unwrap();
    let err = table.insert(&employee(2, "Smith", "same@contoso.com")).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::EntityAlreadyExists));
    assert!(err.message().contains("by_email"), "{err}");
    let second = employee(2, "Smith", "x").entity_key().unwrap();
    assert!(table.get_if_exists(&second).await.unwrap().is_none(), "the primary was not written either");
    // Changing another employee's email onto a taken one fails the same way.
    let mut bob = employee(3, "Brown", "bob@contoso.com");
    table.insert(&bob).await.unwrap();
    bob.email = "same@contoso.com".into();
    assert_eq!(table.replace(&bob, IfMatch::Any).await.unwrap_err().kind(), ErrorKind::AlreadyExists);
    assert_eq!(table.get(&bob.entity_key().unwrap()).await.unwrap().email, "bob@contoso.com");
    assert_consistent(&table).await;
}

async fn stale_etags_change_nothing(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    let mut ann = employee(1, "Jones", "ann@contoso.com");
    let first = table.insert(&ann).await.unwrap();
    ann.age = 40;
    table.replace(&ann, IfMatch::ETag(first.clone())).await.unwrap();
    ann.email = "other@contoso.com".into();
    let err = table.replace(&ann, IfMatch::ETag(first.clone())).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PreconditionFailed);
    let err = table.delete(&ann.entity_key().unwrap(), IfMatch::ETag(first)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PreconditionFailed);
    let stored = table.get(&ann.entity_key().unwrap()).await.unwrap();
    assert_eq!((stored.age, stored.email.as_str()), (40, "ann@contoso.com"));
    assert_consistent(&table).await;
}

async fn index_entities_follow_inserts_renames_and_deletes(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    for id in 1..=3 {
        table.insert(&employee(id, "Jones", &format!("e{id}@contoso.com"))).await.unwrap();
    }
    assert_eq!(jones_ids(&table, "Jones").await, BTreeSet::from([1, 2, 3]));

    // A rename touches three entities in one transaction: the employee and both lists.
    let mut two = employee(2, "Smith", "e2@contoso.com");
    table.replace(&two, IfMatch::Any).await.unwrap();
    assert_eq!(jones_ids(&table, "Jones").await, BTreeSet::from([1, 3]));
    assert_eq!(jones_ids(&table, "Smith").await, BTreeSet::from([2]));
    assert_consistent(&table).await;

    two.age = 50;
    table.merge(&two, IfMatch::Any).await.unwrap();
    table.delete(&two.entity_key().unwrap(), IfMatch::Any).await.unwrap();
    assert!(jones_ids(&table, "Smith").await.is_empty());
    assert!(
        table.untyped().get_if_exists("Sales", "lastname_Smith").await.unwrap().is_none(),
        "an empty list is deleted"
    );
    assert_consistent(&table).await;
}

async fn concurrent_writers_all_land_in_the_index_entity(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    let writers = (1..=32).map(|id| {
        let table = table.clone();
        tokio::spawn(async move { table.insert(&employee(id, "Jones", &format!("e{id}@contoso.com"))).await })
    });
    for writer in futures::future::join_all(writers).await {
        writer.unwrap().unwrap();
    }
    assert_eq!(jones_ids(&table, "Jones").await, (1..=32).collect::<BTreeSet<u32>>());
    assert_consistent(&table).await;
}

/// 64 writers, each renaming its own employee between Jones and Smith 4 times without a
/// condition (an upsert or a replace or merge with `IfMatch::Any`), so that every write
/// changes the shared index entities of both names: each write loses races to the others, and
/// none may surface a 412 it did not ask for (nor any other error: the contention budget
/// covers this load).
async fn contended_unconditional_writes_never_fail_a_precondition(t: Target) {
    const WRITERS: u32 = 64;
    const ROUNDS: u32 = 4;
    let table = t.fresh_table().await.typed::<Employee>();
    let writers = (1..=WRITERS).map(|id| {
        let table = table.clone();
        tokio::spawn(async move {
            let mut failures = Vec::new();
            for round in 0..ROUNDS {
                let last_name = if round % 2 == 0 { "Jones" } else { "Smith" };
                let value = employee(id, last_name, &format!("e{id}@contoso.com"));
                let result = match (round, id % 2) {
                    (0, 0) => table.insert_or_replace(&value).await,
                    (0, _) => table.insert_or_merge(&value).await,
                    (_, 0) => table.replace(&value, IfMatch::Any).await,
                    (_, _) => table.merge(&value, IfMatch::Any).await,
                };
                if let Err(e) = result {
                    failures.push(format!("employee {id}, write {round}: {e:?}"));
                }
            }
            failures
        })
    });
    let failures: Vec<String> =
        futures::future::join_all(writers).await.into_iter().flat_map(|w| w.unwrap()).collect();
    assert!(failures.is_empty(), "{} of {} writes failed: {failures:#?}", failures.len(), WRITERS * ROUNDS);
    assert_eq!(jones_ids(&table, "Smith").await, (1..=WRITERS).collect::<BTreeSet<u32>>());
    assert_consistent(&table).await;
}

async fn index_entity_lists_grow_past_one_property(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    // 2000 keys of 19 UTF-16 units (`Sales\tempid_000001\n`) need two 32 768-unit properties.
    let n = 2000;
    for id in 1..=n {
        table.insert(&employee(id, "Jones", &format!("e{id}@contoso.com"))).await.unwrap();
    }
    let row = table.untyped().get("Sales", "lastname_Jones").await.unwrap();
    assert!(row.properties.keys().filter(|k| k.starts_with("Keys")).count() >= 2);
    assert_eq!(jones_ids(&table, "Jones").await.len(), n as usize);
}

async fn typed_queries_skip_index_rows(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    for id in 1..=3 {
        table.insert(&employee(id, "Jones", &format!("e{id}@contoso.com"))).await.unwrap();
    }
    let all = table.query().partition("Sales").collect().await.unwrap();
    assert_eq!(all.iter().map(|e| e.id).collect::<Vec<_>>(), [1, 2, 3]);
    let copies: Vec<EmployeeCard> = table
        .query_index(Employee::BY_EMAIL_CARD)
        .partition(&Employee::BY_EMAIL_CARD.partition_key_for("Sales").unwrap())
        .collect()
        .await
        .unwrap();
    assert_eq!(copies.len(), 3);
    assert_eq!(table.untyped().query().collect().await.unwrap().len(), 3 + 3 + 3 + 1);
}

async fn cross_partition_indexes_converge_without_a_crash(t: Target) {
    let table = t.fresh_table().await.typed::<GlobalEmployee>();
    let mut ann = global("Sales", 1, "Jones", "ann@contoso.com");
    table.insert(&ann).await.unwrap();
    table.insert(&global("Support", 2, "Jones", "bob@contoso.com")).await.unwrap();
    let ann_key = GlobalEmployee::BY_EMAIL.key("ann@contoso.com").unwrap();
    assert_eq!(ann_key, EntityKey::new("email", "ann@contoso.com"));
    let copy: GlobalEmployee = table.get_by_index(GlobalEmployee::BY_EMAIL, &ann_key).await.unwrap();
    assert_eq!(copy, ann);
    assert_eq!(global_ids(&table, "Jones").await, BTreeSet::from([1, 2]));

    ann.email = "ann.jones@contoso.com".into();
    ann.last_name = "Smith".into();
    table.replace(&ann, IfMatch::Any).await.unwrap();
    let err = table.get_by_index::<GlobalEmployee, _>(GlobalEmployee::BY_EMAIL, &ann_key).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(global_ids(&table, "Jones").await, BTreeSet::from([2]));
    assert_eq!(global_ids(&table, "Smith").await, BTreeSet::from([1]));
    assert_consistent(&table).await;

    table.delete(&ann.entity_key().unwrap(), IfMatch::Any).await.unwrap();
    assert_consistent(&table).await;
    assert_eq!(table.drain().await.unwrap(), 0, "a clean run leaves no intent behind");
}

async fn moves_leave_the_entity_in_exactly_one_table(t: Target) {
    let current = t.fresh_table().await;
    let archive = t.fresh_table().await;
    current.insert(table_client::Entity::new("Sales", "empid_000001").with("Name", "Ann")).await.unwrap();
    assert!(current.move_entity(&archive, "Sales", "empid_000001").await.unwrap());
    assert!(current.get_if_exists("Sales", "empid_000001").await.unwrap().is_none());
    assert_eq!(
        archive.get("Sales", "empid_000001").await.unwrap().get("Name").and_then(|v| v.as_str()),
        Some("Ann")
    );
    assert!(!current.move_entity(&archive, "Sales", "empid_000001").await.unwrap());
    assert_eq!(current.drain_moves().await.unwrap(), 0);
}

async fn rebuild_adds_indexes_to_existing_data(t: Target) {
    let table = t.fresh_table().await;
    let before = table.typed::<UnindexedEmployee>();
    for (id, last_name) in [(1, "Jones"), (2, "Jones"), (3, "Smith")] {
        // The same properties and discriminator, written by the type without indexes.
        let e = employee(id, last_name, &format!("e{id}@contoso.com")).to_entity().unwrap();
        before.insert(&UnindexedEmployee::from_entity(e).unwrap()).await.unwrap();
    }
    // A copy left behind by something that bypassed the SDK.
    let orphan = table_client::Entity::new("Sales", "email_gone@contoso.com")
        .with("_Index", "by_email")
        .with("_PrimaryPartitionKey", "Sales")
        .with("_PrimaryRowKey", "empid_000009");
    table.insert(orphan).await.unwrap();

    let employees = table.typed::<Employee>();
    let found = employees.rebuild_indexes().await.unwrap();
    assert_eq!(found.primaries, 3);
    assert_eq!(found.missing.len(), 3 + 3 + 2, "two copies per employee and two lists: {found:#?}");
    assert_eq!(found.stale, [("by_email".to_owned(), EntityKey::new("Sales", "email_gone@contoso.com"))]);
    assert_consistent(&employees).await;
    assert_eq!(jones_ids(&employees, "Jones").await, BTreeSet::from([1, 2]));
    let e3 = Employee::BY_EMAIL.key("Sales", "e3@contoso.com").unwrap();
    let copy: Employee = employees.get_by_index(Employee::BY_EMAIL, &e3).await.unwrap();
    assert_eq!(copy.last_name, "Smith");
    // From now on, writes keep the rebuilt indexes in step.
    employees.replace(&employee(3, "Jones", "e3@contoso.com"), IfMatch::Any).await.unwrap();
    assert_consistent(&employees).await;
    assert_eq!(
        employees.rebuild_indexes().await.unwrap(),
        table_client::IndexReport { primaries: 3, ..Default::default() }
    );
}

/// Employees and their department's summary written together (the design guide's
/// denormalization pattern): the index rows of every employee change in the same entity-group
/// transaction, all or none, and errors name the caller's operation.
async fn typed_transactions_keep_same_partition_indexes(t: Target) {
    let table = t.fresh_table().await;
    let employees = table.typed::<Employee>();
    let count = |employee_count| DepartmentSummary { department: "Sales".into(), employee_count };
    let (ann, bob) = (employee(1, "Jones", "ann@contoso.com"), employee(2, "Jones", "bob@contoso.com"));
    let outcomes =
        employees.transaction().insert(&ann).insert(&bob).insert(&count(2)).submit().await.unwrap();
    assert_eq!(outcomes.len(), 3);
    let summary_etag = outcomes[2].etag.clone().unwrap();
    assert_eq!(table.get("Sales", "summary").await.unwrap().etag, Some(summary_etag.clone()));
    assert!(table.get_if_exists("Sales", "card_bob@contoso.com").await.unwrap().is_some());
    let jones = table.get("Sales", "lastname_Jones").await.unwrap();
    let listed = jones.get("Keys0").and_then(|v| v.as_str()).unwrap().lines().count();
    assert_eq!(listed, 2, "both Joneses in one write of their index entity");
    assert_consistent(&employees).await;

    // Ann moves both indexed values, Bob leaves, the summary follows over the version written.
    let ann = employee(1, "Smith", "ann.smith@contoso.com");
    let outcomes = table
        .typed_transaction()
        .replace(&ann, IfMatch::Any)
        .delete::<Employee>(&bob.entity_key().unwrap(), IfMatch::Any)
        .replace(&count(1), IfMatch::ETag(summary_etag.clone()))
        .submit()
        .await
        .unwrap();
    assert!(outcomes[1].etag.is_none());
    assert!(table.get_if_exists("Sales", "email_ann@contoso.com").await.unwrap().is_none());
    assert!(table.get_if_exists("Sales", "email_ann.smith@contoso.com").await.unwrap().is_some());
    assert!(table.get_if_exists("Sales", "lastname_Jones").await.unwrap().is_none(), "the emptied list went");
    assert_consistent(&employees).await;

    // Failures write nothing, index rows included, and name the caller's operation: the stale
    // summary (2) ...
    let rows = || async { table.query().collect().await.unwrap().len() };
    let before = rows().await;
    let cy = employee(3, "Jones", "cy@contoso.com");
    let tx = employees.transaction().insert(&cy).insert(&employee(4, "Brown", "dee@contoso.com"));
    let err = tx.replace(&count(3), IfMatch::ETag(summary_etag)).submit().await.unwrap_err();
    assert_eq!((err.kind(), err.batch_index()), (ErrorKind::PreconditionFailed, Some(2)), "{err}");
    // ... and a unique index that holds the key already (1).
    let taken = employee(5, "Brown", "ann.smith@contoso.com");
    let err = employees.transaction().insert(&cy).insert(&taken).submit().await.unwrap_err();
    assert_eq!((err.code(), err.batch_index()), (Some(&ErrorCode::EntityAlreadyExists), Some(1)), "{err}");
    assert!(err.message().contains("by_email"), "{err}");
    assert_eq!(rows().await, before);
    assert!(employees.get_if_exists(&cy.entity_key().unwrap()).await.unwrap().is_none());
    assert_consistent(&employees).await;

    // A type with a cross-partition index cannot be kept atomically: refused, nothing sent.
    let global = global("Sales", 9, "Jones", "g@contoso.com");
    let err = table.typed_transaction().insert(&cy).insert(&global).submit().await.unwrap_err();
    assert!(
        matches!(
            err.violation(),
            Some(table_client::Violation::CrossPartitionIndexInTransaction { index: 1, .. })
        ),
        "{err}"
    );
    assert_eq!(rows().await, before);
}

/// Index reads check their key against the index's templates before any request: the
/// primary's key is no key of the email index (it would read the entity itself), and an email
/// key is no key of the last-name index entity.
async fn index_reads_refuse_keys_their_templates_cannot_build(t: Target) {
    let table = t.fresh_table().await.typed::<Employee>();
    let ann = employee(1, "Jones", "ann@contoso.com");
    table.insert(&ann).await.unwrap();
    let calls = t.engine.as_ref().map(|e| e.faults().calls());
    let primary = ann.entity_key().unwrap();
    let err = table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &primary).await.unwrap_err();
    assert!(
        matches!(err.violation(), Some(table_client::Violation::QueryKeyMismatch { template, .. }) if template == "email_{email}"),
        "{err}"
    );
    let email = Employee::BY_EMAIL.key("Sales", "ann@contoso.com").unwrap();
    let mut listed = table.lookup(Employee::BY_LAST_NAME, &email, 4);
    let err = listed.next().await.unwrap().unwrap_err();
    assert!(
        matches!(err.violation(), Some(table_client::Violation::QueryKeyMismatch { template, .. }) if template == "lastname_{last_name}"),
        "{err}"
    );
    let err = table
        .query_index::<Employee, _>(Employee::BY_EMAIL)
        .partition("Sales")
        .filter_str("RowKey eq 'empid_000001'")
        .collect()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(t.engine.as_ref().map(|e| e.faults().calls()), calls, "nothing was sent");
    // The keys the handles build read what they name.
    assert_eq!(table.get_by_index::<Employee, _>(Employee::BY_EMAIL, &email).await.unwrap(), ann);
}

/// A fresh embedded engine with the tables `names`, served by a client with the `retry`
/// policy, and the engine for fault injection.
async fn fresh_engine(names: &[&str], retry: RetryPolicy) -> (Engine, Vec<TableClient>) {
    let engine = Engine::new();
    let client = TableServiceClient::builder().engine(engine.clone()).retry(retry).build().unwrap();
    let mut tables = Vec::new();
    for name in names {
        tables.push(client.create_table(name).await.unwrap());
    }
    (engine, tables)
}

/// Retries with pauses of at most a millisecond.
fn fast_retries() -> RetryPolicy {
    RetryPolicy::default().initial_backoff(Duration::from_millis(1)).max_backoff(Duration::from_millis(1))
}

async fn seed_globals(table: &TableClient) {
    let typed = table.typed::<GlobalEmployee>();
    typed.insert(&global("Sales", 1, "Jones", "ann@contoso.com")).await.unwrap();
    typed.insert(&global("Sales", 2, "Jones", "bob@contoso.com")).await.unwrap();
}

/// Renames one employee (new email, new last name) and deletes another.
async fn rename_and_delete(table: &TableClient) -> table_client::Result<()> {
    let typed = table.typed::<GlobalEmployee>();
    typed.replace(&global("Sales", 1, "Smith", "ann.smith@contoso.com"), IfMatch::Any).await?;
    typed.delete(&global("Sales", 2, "", "").entity_key()?, IfMatch::Any).await
}

fn fault(timing: FaultTiming) -> FaultSpec {
    let mut spec = FaultSpec::server_busy();
    spec.timing = timing;
    spec
}

// A crash ends the writer: no retry follows the failed request (`RetryPolicy::none()`, or the
// client would retry the injected 503 and the write would succeed).
#[tokio::test]
async fn cross_partition_indexes_survive_a_crash_at_every_request() {
    // A clean run tells how many requests the write makes.
    let (engine, tables) = fresh_engine(&["crash"], RetryPolicy::none()).await;
    seed_globals(&tables[0]).await;
    let before = engine.faults().calls();
    rename_and_delete(&tables[0]).await.unwrap();
    let requests = engine.faults().calls() - before;
    assert!(requests >= 8, "the write makes {requests} requests");

    for n in (1..=requests).filter_map(NonZeroU64::new) {
        for timing in [FaultTiming::BeforeApply, FaultTiming::AfterApply] {
            let (engine, tables) = fresh_engine(&["crash"], RetryPolicy::none()).await;
            let table = &tables[0];
            seed_globals(table).await;
            engine.faults().fail_call(n, fault(timing));
            assert!(rename_and_delete(table).await.is_err(), "request {n} ({timing:?}) was planned to fail");
            engine.faults().clear();
            let typed = table.typed::<GlobalEmployee>();
            typed.drain().await.unwrap();
            let report = typed.verify_indexes().await.unwrap();
            assert!(report.is_consistent(), "crash at request {n} ({timing:?}): {report:#?}");
            // The primaries are in their old or new state, never anything else.
            let ann = typed.get(&global("Sales", 1, "", "").entity_key().unwrap()).await.unwrap();
            assert!(["Jones", "Smith"].contains(&ann.last_name.as_str()));
        }
    }
}

// A crash, without retries: see `cross_partition_indexes_survive_a_crash_at_every_request`.
#[tokio::test]
async fn moves_survive_a_crash_at_every_request() {
    let seed = |table: TableClient| async move {
        table.insert(table_client::Entity::new("Sales", "empid_000001").with("Name", "Ann")).await.unwrap();
    };
    let (engine, tables) = fresh_engine(&["current", "archive"], RetryPolicy::none()).await;
    seed(tables[0].clone()).await;
    let before = engine.faults().calls();
    tables[0].move_entity(&tables[1], "Sales", "empid_000001").await.unwrap();
    let requests = engine.faults().calls() - before;
    assert!(requests >= 4, "the move makes {requests} requests");

    for n in (1..=requests).filter_map(NonZeroU64::new) {
        for timing in [FaultTiming::BeforeApply, FaultTiming::AfterApply] {
            let (engine, tables) = fresh_engine(&["current", "archive"], RetryPolicy::none()).await;
            let (current, archive) = (&tables[0], &tables[1]);
            seed(current.clone()).await;
            engine.faults().fail_call(n, fault(timing));
            assert!(current.move_entity(archive, "Sales", "empid_000001").await.is_err());
            engine.faults().clear();
            current.drain_moves().await.unwrap();
            let here = current.get_if_exists("Sales", "empid_000001").await.unwrap().is_some();
            let there = archive.get_if_exists("Sales", "empid_000001").await.unwrap().is_some();
            assert!(
                here != there,
                "crash at request {n} ({timing:?}): in current {here}, in archive {there}"
            );
            assert_eq!(
                current.query().collect().await.unwrap().len(),
                usize::from(here),
                "no intent is left"
            );
        }
    }
}

/// One indexed write, for the lost-answer sweep.
#[derive(Debug, Clone, Copy)]
enum Write {
    /// Ann (cross-partition indexes) renamed Smith with a new email, `IfMatch::Any`.
    GlobalRename,
    /// Ann's delete, `IfMatch::Any`.
    GlobalDelete,
    /// Bob's delete-if-exists.
    GlobalDeleteIfExists,
    /// A new employee, upserted by merge.
    GlobalUpsert,
    /// A new employee, inserted.
    GlobalInsert,
    /// Employee 1 (same-partition indexes, one transaction) renamed, `IfMatch::Any`.
    LocalRename,
    /// A new employee with same-partition indexes, inserted.
    LocalInsert,
}

impl Write {
    fn is_local(self) -> bool {
        matches!(self, Write::LocalRename | Write::LocalInsert)
    }

    async fn seed(self, table: &TableClient) {
        if self.is_local() {
            table.typed::<Employee>().insert(&employee(1, "Jones", "e1@contoso.com")).await.unwrap();
        } else {
            seed_globals(table).await;
        }
    }

    /// Runs the write; `Some(existed)` for a delete-if-exists.
    async fn run(self, table: &TableClient) -> table_client::Result<Option<bool>> {
        let (globals, locals) = (table.typed::<GlobalEmployee>(), table.typed::<Employee>());
        let key = |id| global("Sales", id, "", "").entity_key().unwrap();
        let cy = global("Sales", 3, "Jones", "cy@contoso.com");
        match self {
            Write::GlobalRename => globals
                .replace(&global("Sales", 1, "Smith", "ann.smith@contoso.com"), IfMatch::Any)
                .await
                .map(drop),
            Write::GlobalDelete => globals.delete(&key(1), IfMatch::Any).await,
            Write::GlobalDeleteIfExists => return globals.delete_if_exists(&key(2)).await.map(Some),
            Write::GlobalUpsert => globals.insert_or_merge(&cy).await.map(drop),
            Write::GlobalInsert => globals.insert(&cy).await.map(drop),
            Write::LocalRename => {
                locals.replace(&employee(1, "Smith", "e1.smith@contoso.com"), IfMatch::Any).await.map(drop)
            }
            Write::LocalInsert => locals.insert(&employee(2, "Jones", "e2@contoso.com")).await.map(drop),
        }
        .map(|()| None)
    }

    /// The primaries of the write's type, as text (without versions), in key order.
    async fn primaries(self, table: &TableClient) -> Vec<String> {
        match self.is_local() {
            true => table.typed::<Employee>().query().partition("Sales").collect().await.map(debug),
            false => table.typed::<GlobalEmployee>().query().partition("Sales").collect().await.map(debug),
        }
        .unwrap()
    }

    /// Drains and verifies the indexes of the write's type.
    async fn assert_consistent_after_drain(self, table: &TableClient, at: &str) {
        let report = match self.is_local() {
            true => {
                table.typed::<Employee>().drain().await.unwrap();
                table.typed::<Employee>().verify_indexes().await.unwrap()
            }
            false => {
                table.typed::<GlobalEmployee>().drain().await.unwrap();
                table.typed::<GlobalEmployee>().verify_indexes().await.unwrap()
            }
        };
        assert!(report.is_consistent(), "{at}: {report:#?}");
    }
}

fn debug<T: std::fmt::Debug>(values: Vec<T>) -> Vec<String> {
    values.iter().map(|v| format!("{v:?}")).collect()
}

/// An indexed write whose answer is lost at any one of its requests (the engine applies the
/// request, the caller times out): it succeeds with the clean run's outcome, or fails with an
/// error that is never a 404, 409 or 412 the caller did not cause, and that is marked "may have
/// applied" unless nothing changed; a drain then leaves the indexes exact. Without retries
/// the lost answer reaches the index maintenance as it is; with them, the client's retry and
/// settling come first.
#[tokio::test]
async fn lost_answers_never_become_false_errors() {
    for (write, retry) in [
        Write::GlobalRename,
        Write::GlobalDelete,
        Write::GlobalDeleteIfExists,
        Write::GlobalUpsert,
        Write::GlobalInsert,
        Write::LocalRename,
        Write::LocalInsert,
    ]
    .into_iter()
    .flat_map(|write| [(write, RetryPolicy::none()), (write, fast_retries())])
    {
        // A clean run tells the requests the write makes and the state it leaves.
        let (engine, tables) = fresh_engine(&["lost"], retry.clone()).await;
        write.seed(&tables[0]).await;
        let before = write.primaries(&tables[0]).await;
        let calls = engine.faults().calls();
        let answer = write.run(&tables[0]).await.unwrap();
        let requests = engine.faults().calls() - calls;
        let after = write.primaries(&tables[0]).await;

        for n in (1..=requests).filter_map(std::num::NonZeroU64::new) {
            let (engine, tables) = fresh_engine(&["lost"], retry.clone()).await;
            let table = &tables[0];
            write.seed(table).await;
            // The request applies, and its answer is lost: the caller times out.
            engine.faults().fail_call(n, FaultSpec::timeout().after_apply());
            let result = write.run(table).await;
            engine.faults().clear();
            let now = write.primaries(table).await;
            let at = format!("{write:?} with {retry:?}, answer of request {n} of {requests} lost");
            // With retries, an unconditional change of a same-partition index settles any lost
            // answer, its transaction's included: re-reading and writing again is what it asked
            // for.
            if matches!(write, Write::LocalRename) && retry != RetryPolicy::none() {
                assert!(result.is_ok(), "{at}: {result:?}");
            }
            match &result {
                Ok(got) => assert_eq!((got, &now), (&answer, &after), "{at}"),
                Err(e) => {
                    use table_client::ErrorKind::{AlreadyExists, NotFound, PreconditionFailed};
                    assert!(
                        !matches!(e.kind(), NotFound | PreconditionFailed | AlreadyExists),
                        "{at}: {e:?}"
                    );
                    match e.may_have_applied() {
                        true => assert!(now == before || now == after, "{at}: {now:#?}"),
                        false => assert_eq!(
                            now, before,
                            "{at}: an unmarked error must mean nothing applied: {e:?}"
                        ),
                    }
                }
            }
            write.assert_consistent_after_drain(table, &at).await;
        }
    }
}
