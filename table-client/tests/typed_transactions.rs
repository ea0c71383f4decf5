//! Typed transactions on the embedded engine: values of several types in one partition written
//! all or none with the same-partition index rows they maintain, the batch limits counted with
//! those rows, cross-partition indexes refused, races retried, and errors naming the caller's
//! operation.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::num::NonZeroU64;
use std::time::Duration;

use table_client::engine::{Engine, FaultSpec};
use table_client::{
    ETag, ErrorCode, ErrorKind, IfMatch, RetryPolicy, TableClient, TableEntity, TableServiceClient,
    TypedTable, Violation,
};

/// Same-partition indexes: a unique copy by email and an index entity by last name.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
#[table(entity_type = "Employee")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
#[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    last_name: String,
    email: String,
}

/// No index: sent as given.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "summary", rename_all = "PascalCase")]
#[table(entity_type = "DepartmentSummary")]
struct DepartmentSummary {
    #[table(key_only)]
    department: String,
    employee_count: i32,
    #[table(etag)]
    etag: Option<ETag>,
}

/// A cross-partition index: one email partition for all departments.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "gempid_{id:06}")]
#[table(index(name = "by_email_global", partition_key = "email", row_key = "{email}"))]
struct GlobalEmployee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    email: String,
}

/// A large entity with a full copy under its title.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{owner}", row_key = "doc_{id}", rename_all = "PascalCase")]
#[table(index(name = "by_title", row_key = "title_{title}"))]
struct Document {
    #[table(key_only)]
    owner: String,
    #[table(key_only)]
    id: u32,
    title: String,
    // Eight parts of a body, each under the 64 KiB of one property.
    part0: String,
    part1: String,
    part2: String,
    part3: String,
    part4: String,
    part5: String,
    part6: String,
    part7: String,
}

fn employee(id: u32, last_name: &str) -> Employee {
    Employee {
        department: "Sales".into(),
        id,
        last_name: last_name.into(),
        email: format!("e{id}@contoso.com"),
    }
}

fn summary(count: i32) -> DepartmentSummary {
    DepartmentSummary { department: "Sales".into(), employee_count: count, etag: None }
}

/// A fresh engine and a table on it, served by a client with `retry`.
async fn table_with(retry: RetryPolicy) -> (Engine, TableClient) {
    let engine = Engine::new();
    let service = TableServiceClient::builder().engine(engine.clone()).retry(retry).build().unwrap();
    let table = service.create_table("txn").await.unwrap();
    (engine, table)
}

async fn table() -> (Engine, TableClient) {
    table_with(RetryPolicy::default()).await
}

async fn assert_consistent(employees: &TypedTable<Employee>) {
    let report = employees.verify_indexes().await.unwrap();
    assert!(report.is_consistent(), "{report:#?}");
}

/// The keys the lookup row at `row_key` lists (`None`: no row).
async fn listed(table: &TableClient, row_key: &str) -> Option<BTreeSet<String>> {
    let row = table.get_if_exists("Sales", row_key).await.unwrap()?;
    let text: String = row
        .properties
        .iter()
        .filter(|(name, _)| name.starts_with("Keys"))
        .filter_map(|(_, v)| v.as_str())
        .collect();
    Some(text.lines().map(|line| line.split('\t').nth(1).unwrap().to_owned()).collect())
}

fn ids(keys: &[&str]) -> Option<BTreeSet<String>> {
    Some(keys.iter().map(|k| (*k).to_owned()).collect())
}

/// Every row of the table, as text, to compare before and after a refused transaction.
async fn all_rows(table: &TableClient) -> Vec<String> {
    let rows = table.query().collect().await.unwrap();
    rows.iter().map(|e| format!("{:?} {:?} {:?}", e.key(), e.etag, e.properties)).collect()
}

#[tokio::test]
async fn values_of_several_types_and_their_index_rows_commit_together() {
    let (engine, table) = table().await;
    let employees = table.typed::<Employee>();
    let ann = employee(1, "Jones");
    let before = engine.faults().calls();
    let outcomes = employees.transaction().insert(&ann).insert(&summary(1)).submit().await.unwrap();
    // Ann's key and her index entity read, then one transaction (the summary is not read).
    assert_eq!(engine.faults().calls() - before, 3);
    assert_eq!(outcomes.len(), 2, "one outcome per write, in order; none for the index rows");
    let stored_ann = table.get("Sales", "empid_000001").await.unwrap();
    let stored_summary = table.get("Sales", "summary").await.unwrap();
    assert_eq!(outcomes[0].etag, stored_ann.etag);
    assert_eq!(outcomes[1].etag, stored_summary.etag);
    assert!(table.get_if_exists("Sales", "email_e1@contoso.com").await.unwrap().is_some());
    assert_eq!(listed(&table, "lastname_Jones").await, ids(&["empid_000001"]));
    assert_consistent(&employees).await;
}

#[tokio::test]
async fn replaces_that_move_index_keys_and_deletes_keep_the_indexes() {
    let (_engine, table) = table().await;
    let employees = table.typed::<Employee>();
    let (ann, bob) = (employee(1, "Jones"), employee(2, "Jones"));
    employees.transaction().insert(&ann).insert(&bob).insert(&summary(2)).submit().await.unwrap();
    assert_consistent(&employees).await;

    // Ann changes both indexed values; Bob leaves; the summary counts it.
    let ann = Employee { last_name: "Smith".into(), email: "ann.smith@contoso.com".into(), ..ann };
    let outcomes = table
        .typed_transaction()
        .replace(&ann, IfMatch::Any)
        .delete::<Employee>(&bob.entity_key().unwrap(), IfMatch::Any)
        .merge(&summary(1), IfMatch::Any)
        .submit()
        .await
        .unwrap();
    assert!(outcomes[0].etag.is_some() && outcomes[1].etag.is_none() && outcomes[2].etag.is_some());
    assert!(
        table.get_if_exists("Sales", "email_e1@contoso.com").await.unwrap().is_none(),
        "the old copy moved"
    );
    assert!(table.get_if_exists("Sales", "email_e2@contoso.com").await.unwrap().is_none(), "Bob's copy went");
    assert!(table.get_if_exists("Sales", "email_ann.smith@contoso.com").await.unwrap().is_some());
    assert_eq!(listed(&table, "lastname_Jones").await, None, "an emptied index entity is deleted");
    assert_eq!(listed(&table, "lastname_Smith").await, ids(&["empid_000001"]));
    assert_consistent(&employees).await;

    // Upserts keep them too, and a delete of the last employee leaves only the summary.
    let ann = Employee { last_name: "Jones".into(), ..ann };
    employees
        .transaction()
        .insert_or_replace(&ann)
        .insert_or_merge(&employee(3, "Jones"))
        .submit()
        .await
        .unwrap();
    assert_eq!(listed(&table, "lastname_Jones").await, ids(&["empid_000001", "empid_000003"]));
    assert_consistent(&employees).await;
    let keys = [ann.entity_key().unwrap(), employee(3, "").entity_key().unwrap()];
    let tx = employees.transaction().delete::<Employee>(&keys[0], IfMatch::Any);
    tx.delete::<Employee>(&keys[1], IfMatch::Any).submit().await.unwrap();
    assert_eq!(table.query().collect().await.unwrap().len(), 1, "only the summary is left");
}

#[tokio::test]
async fn two_joneses_in_one_transaction_make_one_write_of_their_index_entity() {
    let (engine, table) = table().await;
    let employees = table.typed::<Employee>();
    employees.insert(&employee(1, "Jones")).await.unwrap();
    let before = engine.faults().calls();
    employees
        .transaction()
        .insert(&employee(2, "Jones"))
        .insert(&employee(3, "Jones"))
        .submit()
        .await
        .unwrap();
    // Two primaries and the one index entity read, then one transaction.
    assert_eq!(engine.faults().calls() - before, 4);
    assert_eq!(
        listed(&table, "lastname_Jones").await,
        ids(&["empid_000001", "empid_000002", "empid_000003"])
    );
    assert_consistent(&employees).await;

    // Renames that cross over: one leaves Jones for Smith while another joins Jones.
    employees.insert(&employee(4, "Smith")).await.unwrap();
    employees
        .transaction()
        .replace(&employee(1, "Smith"), IfMatch::Any)
        .replace(&employee(4, "Jones"), IfMatch::Any)
        .submit()
        .await
        .unwrap();
    assert_eq!(
        listed(&table, "lastname_Jones").await,
        ids(&["empid_000002", "empid_000003", "empid_000004"])
    );
    assert_eq!(listed(&table, "lastname_Smith").await, ids(&["empid_000001"]));
    assert_consistent(&employees).await;
}

#[tokio::test]
async fn index_rows_that_push_a_transaction_over_100_operations_are_refused() {
    let (engine, table) = table().await;
    let employees = table.typed::<Employee>();
    table.typed::<DepartmentSummary>().insert(&summary(0)).await.unwrap();

    // 50 inserts: 50 copies and one index entity make 101 operations. Known from the values:
    // refused before any request.
    let tx = (1..=50).fold(employees.transaction(), |tx, id| tx.insert(&employee(id, "Jones")));
    let before = all_rows(&table).await;
    let calls = engine.faults().calls();
    let err = tx.submit().await.unwrap_err();
    assert_eq!(engine.faults().calls(), calls, "no request was sent");
    assert_eq!(
        err.violation(),
        Some(&Violation::IndexRowsOverBatchLimit { operations: 50, index_rows: 51, max: 100 })
    );
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.message().contains("51 index rows") && err.message().contains("101"), "{err}");
    assert_eq!(all_rows(&table).await, before);

    // 34 email changes: the old copies to delete are only known after reading (34 + 68 = 102),
    // so the reads happen, and nothing is written.
    for chunk in (1..=34).collect::<Vec<u32>>().chunks(25) {
        let tx = chunk.iter().fold(employees.transaction(), |tx, &id| tx.insert(&employee(id, "Jones")));
        tx.submit().await.unwrap();
    }
    let moved = |id| Employee { email: format!("new{id}@contoso.com"), ..employee(id, "Jones") };
    let tx = (1..=34).fold(employees.transaction(), |tx, id| tx.replace(&moved(id), IfMatch::Any));
    let before = all_rows(&table).await;
    let err = tx.submit().await.unwrap_err();
    assert_eq!(
        err.violation(),
        Some(&Violation::IndexRowsOverBatchLimit { operations: 34, index_rows: 68, max: 100 })
    );
    assert_eq!(all_rows(&table).await, before, "nothing was written");
    assert_consistent(&employees).await;

    // Within the limit, the same kind of transaction goes through.
    let tx = (1..=30).fold(employees.transaction(), |tx, id| tx.replace(&moved(id), IfMatch::Any));
    assert_eq!(tx.submit().await.unwrap().len(), 30);
    assert_consistent(&employees).await;
}

#[tokio::test]
async fn index_copies_that_push_the_body_over_4_mib_are_refused_before_writing() {
    let (engine, table) = table().await;
    // Nine documents of 240 000 characters fit one batch (about 2.2 MB); their copies double it.
    let part = "x".repeat(30_000);
    let document = |id| Document {
        owner: "ann".into(),
        id,
        title: format!("t{id}"),
        part0: part.clone(),
        part1: part.clone(),
        part2: part.clone(),
        part3: part.clone(),
        part4: part.clone(),
        part5: part.clone(),
        part6: part.clone(),
        part7: part.clone(),
    };
    let tx = (1..=9).fold(table.typed_transaction(), |tx, id| tx.insert(&document(id)));
    let before = engine.faults().calls();
    let err = tx.submit().await.unwrap_err();
    assert_eq!(engine.faults().calls() - before, 9, "the nine reads, and no write");
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    assert_eq!(err.code(), Some(&ErrorCode::RequestBodyTooLarge));
    assert!(err.message().contains("9 operations and the 9 index rows"), "{err}");
    assert!(table.query().collect().await.unwrap().is_empty());
}

#[tokio::test]
async fn types_with_a_cross_partition_index_are_refused_before_any_request() {
    let (engine, table) = table().await;
    let global = GlobalEmployee { department: "Sales".into(), id: 1, email: "ann@contoso.com".into() };
    let calls = engine.faults().calls();
    let err =
        table.typed_transaction().insert(&employee(1, "Jones")).insert(&global).submit().await.unwrap_err();
    assert_eq!(engine.faults().calls(), calls, "no request was sent");
    assert_eq!(err.batch_index(), Some(1));
    match err.violation() {
        Some(Violation::CrossPartitionIndexInTransaction { index: 1, entity_type, index_name }) => {
            assert!(entity_type.ends_with("GlobalEmployee"), "{entity_type}");
            assert_eq!(index_name, "by_email_global");
        }
        other => panic!("{other:?}: {err}"),
    }
    assert!(err.message().contains("one value at a time"), "{err}");
    assert!(table.query().collect().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failing_etag_condition_names_the_caller_s_operation_and_writes_nothing() {
    let (_engine, table) = table().await;
    let (employees, summaries) = (table.typed::<Employee>(), table.typed::<DepartmentSummary>());
    let stale = summaries.insert(&summary(0)).await.unwrap();
    summaries.replace(&summary(5), IfMatch::Any).await.unwrap();
    let ann_etag = employees.insert(&employee(1, "Jones")).await.unwrap();
    employees.replace(&employee(1, "Jones"), IfMatch::Any).await.unwrap();
    let before = all_rows(&table).await;

    // The summary is sent as given: the service's 412 is the caller's own, at operation 2.
    let err = employees
        .transaction()
        .insert(&employee(2, "Jones"))
        .insert(&employee(3, "Smith"))
        .replace(&summary(6), IfMatch::ETag(stale))
        .submit()
        .await
        .unwrap_err();
    assert_eq!((err.kind(), err.batch_index()), (ErrorKind::PreconditionFailed, Some(2)), "{err}");
    assert!(!err.may_have_applied());
    assert_eq!(all_rows(&table).await, before, "nothing was written, index rows included");

    // An indexed value's stale ETag is found on reading: the caller's operation 1.
    let err = employees
        .transaction()
        .insert(&employee(2, "Jones"))
        .replace(&employee(1, "Smith"), IfMatch::ETag(ann_etag))
        .submit()
        .await
        .unwrap_err();
    assert_eq!((err.kind(), err.batch_index()), (ErrorKind::PreconditionFailed, Some(1)), "{err}");
    assert_eq!(all_rows(&table).await, before);

    // Inserting over an existing entity, or replacing a missing one, is the caller's too.
    let err = employees.transaction().insert(&employee(2, "Jones")).insert(&employee(1, "Jones")).submit();
    let err = err.await.unwrap_err();
    assert_eq!((err.kind(), err.batch_index()), (ErrorKind::AlreadyExists, Some(1)), "{err}");
    let err =
        employees.transaction().replace(&employee(9, "Jones"), IfMatch::Any).submit().await.unwrap_err();
    assert_eq!((err.kind(), err.batch_index()), (ErrorKind::NotFound, Some(0)), "{err}");
    assert_eq!(all_rows(&table).await, before);
}

#[tokio::test]
async fn a_unique_index_conflict_names_the_index_and_operation_and_writes_nothing() {
    let (_engine, table) = table().await;
    let employees = table.typed::<Employee>();
    employees.insert(&employee(1, "Jones")).await.unwrap();
    let before = all_rows(&table).await;
    let taken = Employee { email: "e1@contoso.com".into(), ..employee(3, "Smith") };
    let err = employees
        .transaction()
        .insert(&employee(2, "Jones"))
        .insert(&taken)
        .insert(&summary(3))
        .submit()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::EntityAlreadyExists));
    assert_eq!(err.batch_index(), Some(1), "{err}");
    assert!(err.message().contains("`by_email`"), "{err}");
    assert_eq!(all_rows(&table).await, before, "operation 0's entity, copy and list entry were not written");
    assert_consistent(&employees).await;
}

#[tokio::test]
async fn two_writes_needing_one_row_are_refused_before_writing() {
    let (_engine, table) = table().await;
    let employees = table.typed::<Employee>();
    // One entity twice: the service's rule, checked on the caller's operations.
    let err =
        employees.transaction().insert(&employee(1, "Jones")).merge(&employee(1, "Jones"), IfMatch::Any);
    let err = err.submit().await.unwrap_err();
    assert!(matches!(err.violation(), Some(Violation::DuplicateRow { index: 1, .. })), "{err}");

    // One index copy for two writes: the same new email.
    let twin = Employee { email: "e1@contoso.com".into(), ..employee(2, "Smith") };
    let err = employees.transaction().insert(&employee(1, "Jones")).insert(&twin).submit().await.unwrap_err();
    match err.violation() {
        Some(Violation::SharedRowInTransaction { first: 0, index: 1, row_key, rows }) => {
            assert_eq!(row_key, "email_e1@contoso.com");
            assert!(rows.contains("index `by_email`"), "{rows}");
        }
        other => panic!("{other:?}: {err}"),
    }
    assert_eq!(err.batch_index(), Some(1));
    assert!(table.query().collect().await.unwrap().is_empty());

    // Nothing added, or a value that makes no entity: errors as for an untyped transaction.
    let err = employees.transaction().submit().await.unwrap_err();
    assert_eq!(err.violation(), Some(&Violation::EmptyBatch));
    let bad = Employee { department: "Sa/les".into(), ..employee(2, "Jones") };
    let err = employees.transaction().insert(&employee(1, "Jones")).insert(&bad).submit().await.unwrap_err();
    assert_eq!(err.batch_index(), Some(1), "{err}");
}

#[tokio::test]
async fn types_without_indexes_cost_one_request() {
    let (engine, table) = table().await;
    let other = DepartmentSummary { department: "Sales".into(), ..summary(0) };
    let before = engine.faults().calls();
    table.typed::<DepartmentSummary>().transaction().insert(&other).submit().await.unwrap();
    assert_eq!(engine.faults().calls() - before, 1);
}

/// A concurrent writer changes the index entity between the transaction's reads and its
/// write: the transaction's conditional write fails, and it reads again and succeeds. The
/// interleaving is fixed: the transaction's write is throttled once (a 503 the retry policy
/// sends again after a pause), and the other writer runs during that pause.
#[tokio::test]
async fn a_concurrent_writer_between_read_and_write_is_retried() {
    let retry = RetryPolicy::default()
        .initial_backoff(Duration::from_millis(20))
        .max_backoff(Duration::from_millis(20));
    let (engine, table) = table_with(retry).await;
    let employees = table.typed::<Employee>();
    let summaries = table.typed::<DepartmentSummary>();
    summaries.insert(&summary(0)).await.unwrap();
    employees.insert(&employee(1, "Jones")).await.unwrap();

    // Reads: employee 2's key, the Jones list; request 3 is the transaction.
    engine.faults().fail_call(NonZeroU64::new(3).unwrap(), FaultSpec::server_busy());
    let start = engine.faults().calls();
    let tx = employees.transaction().insert(&employee(2, "Jones")).insert_or_replace(&summary(2));
    let submitted = tokio::spawn(tx.submit());
    while engine.faults().calls() < start + 3 {
        tokio::task::yield_now().await;
    }
    // The transaction waits to send its write again: another Jones is hired meanwhile.
    employees.insert(&employee(3, "Jones")).await.unwrap();
    let outcomes = submitted.await.unwrap().unwrap();
    assert_eq!(outcomes.len(), 2);
    // 3 requests, the throttled write's resend, 3 by the other writer, then 2 reads and the write again.
    assert_eq!(engine.faults().calls() - start, 3 + 1 + 3 + 3);
    assert_eq!(
        listed(&table, "lastname_Jones").await,
        ids(&["empid_000001", "empid_000002", "empid_000003"])
    );
    assert_consistent(&employees).await;
}

/// The answer to the transaction's batch is lost (the engine applies it, the caller times out;
/// no client retry): upserts read again and write again, which is what they asked for; an
/// insert, which its own lost attempt could fail, reports the loss marked "may have applied",
/// never as `AlreadyExists`.
#[tokio::test]
async fn a_lost_answer_is_written_again_for_upserts_and_marked_for_inserts() {
    let (engine, table) = table_with(RetryPolicy::none()).await;
    let employees = table.typed::<Employee>();
    employees.insert(&employee(1, "Jones")).await.unwrap();

    // Reads: employees 1 and 2, the Jones and Smith lists; request 5 is the transaction.
    engine.faults().fail_call(NonZeroU64::new(5).unwrap(), FaultSpec::timeout().after_apply());
    let tx = employees
        .transaction()
        .insert_or_replace(&employee(1, "Smith"))
        .insert_or_merge(&employee(2, "Jones"));
    assert_eq!(tx.submit().await.unwrap().len(), 2);
    assert_eq!(listed(&table, "lastname_Jones").await, ids(&["empid_000002"]));
    assert_eq!(listed(&table, "lastname_Smith").await, ids(&["empid_000001"]));
    assert_consistent(&employees).await;

    // Reads: employee 3, the Jones list; request 3 is the transaction.
    engine.faults().fail_call(NonZeroU64::new(3).unwrap(), FaultSpec::timeout().after_apply());
    let err = employees.transaction().insert(&employee(3, "Jones")).submit().await.unwrap_err();
    assert!(err.may_have_applied(), "{err:?}");
    assert_ne!(err.kind(), ErrorKind::AlreadyExists);
    assert!(employees.get_if_exists(&employee(3, "").entity_key().unwrap()).await.unwrap().is_some());
    assert_consistent(&employees).await;
}
