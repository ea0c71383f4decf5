//! The conformance suite: every scenario runs on the embedded engine and on Azurite, so the
//! engine cannot drift from the service. Where Azurite is known to be laxer than the real
//! service, the scenario states the strict expectation for the engine and records Azurite's
//! deviation explicitly through [`Target::is_azurite`].

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::ops::Bound;

use chrono::{DateTime, Utc};
use conformance::target::{Target, unique_name};
use conformance::{scenario, token_scenario};
use futures::StreamExt;
use table_client::datetime::{max_datetime, min_datetime, parse_datetime};
use table_client::{
    Entity, ErrorCode, ErrorKind, Filter, IfMatch, Operation, TableClient, Transaction, Value, Violation,
};
use uuid::Uuid;

scenario!(
    table_lifecycle,
    crud_with_etags,
    every_edm_type_round_trips,
    filters,
    select_and_top,
    paging_across_pages_and_partitions,
    continuation_resumes_exactly,
    batches_apply_all_or_nothing,
    batch_rules_are_checked_before_sending,
    validation_errors_are_local_and_typed,
    delete_and_get_if_exists,
    ordinal_string_order,
    longest_keys,
    cross_type_comparisons,
    double_literals_and_negation,
    bulk_reports_each_transaction,
);

// The same scenarios with Microsoft Entra ID bearer tokens (HTTPS Azurite, `--oauth basic`):
// table and entity CRUD, query paging and continuation, entity-group transactions.
token_scenario!(
    table_lifecycle,
    crud_with_etags,
    paging_across_pages_and_partitions,
    continuation_resumes_exactly,
    batches_apply_all_or_nothing,
);

async fn table_lifecycle(t: Target) {
    let name = unique_name("life");
    let table = t.client.create_table(&name).await.unwrap();
    assert_eq!(table.name(), name);

    let again = t.client.create_table(&name).await.unwrap_err();
    assert_eq!(again.code(), Some(&ErrorCode::TableAlreadyExists));
    assert_eq!(again.status(), Some(409));
    let upper = t.client.create_table(&name.to_uppercase()).await.unwrap_err();
    assert_eq!(upper.code(), Some(&ErrorCode::TableAlreadyExists), "table names are case-insensitive");

    let (_, created) = t.client.create_table_if_not_exists(&name).await.unwrap();
    assert!(!created);

    let listed: Vec<String> =
        t.client.list_tables_with_prefix(&name[..12]).map(|r| r.unwrap()).collect().await;
    assert_eq!(listed, vec![name.clone()]);

    t.client.delete_table(&name).await.unwrap();
    let gone = t.client.delete_table(&name).await.unwrap_err();
    assert_eq!(gone.code(), Some(&ErrorCode::ResourceNotFound));
    assert_eq!(gone.status(), Some(404));
    assert!(!t.client.delete_table_if_exists(&name).await.unwrap());

    let missing = table.insert(Entity::new("p", "r")).await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::TableNotFound));
    assert_eq!(missing.kind(), ErrorKind::NotFound);
}

async fn crud_with_etags(t: Target) {
    let table = t.fresh_table().await;
    let e = Entity::new("p", "r").with("Name", "Ann").with("Age", 30);
    let etag1 = table.insert(e.clone()).await.unwrap();

    let dup = table.insert(e.clone()).await.unwrap_err();
    assert_eq!(dup.code(), Some(&ErrorCode::EntityAlreadyExists));
    assert_eq!(dup.kind(), ErrorKind::AlreadyExists);

    let read = table.get("p", "r").await.unwrap();
    assert_eq!(read.properties, e.properties);
    assert_eq!(read.etag.as_ref(), Some(&etag1));
    assert!(read.timestamp.is_some());

    // Replace drops properties not sent.
    let etag2 =
        table.replace(Entity::new("p", "r").with("Name", "Bob"), IfMatch::ETag(etag1.clone())).await.unwrap();
    assert_ne!(etag1, etag2);
    let read = table.get("p", "r").await.unwrap();
    assert_eq!(read.get("Name"), Some(&Value::from("Bob")));
    assert_eq!(read.get("Age"), None);

    // A stale ETag is refused and changes nothing.
    let stale = table
        .replace(Entity::new("p", "r").with("Name", "Eve"), IfMatch::ETag(etag1.clone()))
        .await
        .unwrap_err();
    assert_eq!(stale.code(), Some(&ErrorCode::UpdateConditionNotSatisfied));
    assert_eq!(stale.status(), Some(412));
    assert_eq!(stale.kind(), ErrorKind::PreconditionFailed);
    let stale =
        table.merge(Entity::new("p", "r").with("X", 1), IfMatch::ETag(etag1.clone())).await.unwrap_err();
    assert_eq!(stale.kind(), ErrorKind::PreconditionFailed);

    // Merge keeps other properties and may change a property's type.
    let etag3 = table.merge(Entity::new("p", "r").with("Age", "thirty"), IfMatch::ETag(etag2)).await.unwrap();
    let read = table.get("p", "r").await.unwrap();
    assert_eq!(read.get("Name"), Some(&Value::from("Bob")));
    assert_eq!(read.get("Age"), Some(&Value::from("thirty")));

    // Conditional writes on a missing entity are 404, whatever the ETag.
    let missing = table.replace(Entity::new("p", "nope"), IfMatch::Any).await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::ResourceNotFound));
    let missing = table.merge(Entity::new("p", "nope"), IfMatch::ETag(etag3.clone())).await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::ResourceNotFound));

    // Upserts insert when missing and replace/merge when present.
    table.insert_or_replace(Entity::new("p", "u").with("A", 1).with("B", 2)).await.unwrap();
    table.insert_or_replace(Entity::new("p", "u").with("A", 3)).await.unwrap();
    let read = table.get("p", "u").await.unwrap();
    assert_eq!(read.properties, Entity::new("p", "u").with("A", 3).properties);
    table.insert_or_merge(Entity::new("p", "u").with("C", true)).await.unwrap();
    table.insert_or_merge(Entity::new("p", "m").with("C", false)).await.unwrap();
    let read = table.get("p", "u").await.unwrap();
    assert_eq!(read.properties, Entity::new("p", "u").with("A", 3).with("C", true).properties);
    assert_eq!(table.get("p", "m").await.unwrap().get("C"), Some(&Value::Boolean(false)));

    // Delete with a stale ETag fails; with the current one it succeeds.
    let stale = table.delete("p", "r", IfMatch::ETag(etag1)).await.unwrap_err();
    assert_eq!(stale.kind(), ErrorKind::PreconditionFailed);
    table.delete("p", "r", IfMatch::ETag(etag3)).await.unwrap();
    let gone = table.get("p", "r").await.unwrap_err();
    assert_eq!(gone.code(), Some(&ErrorCode::ResourceNotFound));
    assert_eq!(gone.status(), Some(404));
}

async fn delete_and_get_if_exists(t: Target) {
    let table = t.fresh_table().await;
    assert_eq!(table.get_if_exists("p", "r").await.unwrap(), None);
    assert!(!table.delete_if_exists("p", "r").await.unwrap());
    table.insert(Entity::new("p", "r")).await.unwrap();
    assert!(table.get_if_exists("p", "r").await.unwrap().is_some());
    assert!(table.delete_if_exists("p", "r").await.unwrap());
    let missing = t.client.table(&unique_name("missing"));
    let err = missing.get_if_exists("p", "r").await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::TableNotFound), "a missing table is not a missing entity");
}

fn at(s: &str) -> DateTime<Utc> {
    parse_datetime(s).unwrap()
}

async fn every_edm_type_round_trips(t: Target) {
    let table = t.fresh_table().await;
    let e = Entity::new("types", "extremes")
        .with("S", "it's \"quoted\" – ünïcödé 😀")
        .with("SEmpty", "")
        .with("SMax", "x".repeat(32_768))
        .with("I32Min", i32::MIN)
        .with("I32Max", i32::MAX)
        .with("I64Min", i64::MIN)
        .with("I64Max", i64::MAX)
        .with("I64Small", 5_i64)
        .with("D", 0.1)
        .with("DWhole", 2.0)
        .with("DNeg", -1.5e300)
        .with("DTiny", 5e-324)
        .with("DNaN", f64::NAN)
        .with("DInf", f64::INFINITY)
        .with("DNegInf", f64::NEG_INFINITY)
        .with("BTrue", true)
        .with("BFalse", false)
        .with("T", Value::DateTime(at("2020-01-02T03:04:05.1234567Z")))
        .with("TMin", Value::DateTime(min_datetime()))
        .with("TMax", Value::DateTime(max_datetime()))
        .with("G", Uuid::parse_str("68260b3f-beab-45e2-b900-33e2b442e724").unwrap())
        .with("X", vec![0_u8, 1, 2, 255])
        .with("XEmpty", Vec::<u8>::new())
        .with("XMax", vec![7_u8; 65_536]);
    table.insert(e.clone()).await.unwrap();
    let read = table.get("types", "extremes").await.unwrap();
    assert_eq!(read.properties, e.properties);
    let queried = table.query().partition("types").collect().await.unwrap();
    assert_eq!(queried.len(), 1);
    assert_eq!(queried[0].properties, e.properties);
}

async fn seed_people(table: &TableClient) {
    let people = [
        ("Sales", "001", "Ann", 30, Some(true)),
        ("Sales", "002", "O'Neil", 41, Some(false)),
        ("Sales", "003", "Bob", 25, None),
        ("Support", "001", "Cy", 52, Some(true)),
    ];
    for (pk, rk, name, age, active) in people {
        let mut e = Entity::new(pk, rk).with("Name", name).with("Age", age);
        if let Some(a) = active {
            e.insert("Active", a);
        }
        table.insert(e).await.unwrap();
    }
}

async fn names(table: &TableClient, filter: Filter) -> Vec<String> {
    let rows = table.query().filter(filter).collect().await.unwrap();
    rows.iter().map(|e| e.get("Name").and_then(Value::as_str).unwrap().to_owned()).collect()
}

async fn filters(t: Target) {
    let table = t.fresh_table().await;
    seed_people(&table).await;

    assert_eq!(names(&table, Filter::eq("Name", "O'Neil")).await, ["O'Neil"]);
    assert_eq!(names(&table, Filter::gt("Age", 30)).await, ["O'Neil", "Cy"]);
    assert_eq!(
        names(&table, Filter::eq("PartitionKey", "Sales").and(Filter::le("Age", 30))).await,
        ["Ann", "Bob"]
    );
    assert_eq!(names(&table, Filter::eq("Age", 25).or(Filter::eq("Age", 52))).await, ["Bob", "Cy"]);
    // A missing property fails every comparison, `ne` included; `not` flips that.
    assert_eq!(names(&table, Filter::ne("Active", true)).await, ["O'Neil"]);
    assert_eq!(names(&table, !Filter::eq("Active", true)).await, ["O'Neil", "Bob"]);
    // A bare Boolean property.
    assert_eq!(names(&table, Filter::parse("Active").unwrap()).await, ["Ann", "Cy"]);
    // A value can never change the filter's shape.
    assert!(names(&table, Filter::eq("Name", "x' or Name ne 'y")).await.is_empty());
    // String filters parse locally.
    let rows = table
        .query()
        .filter_str("Name eq 'O''Neil' or (Age ge 50 and RowKey eq '001')")
        .collect()
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    let bad = table.query().filter_str("Age eq").collect().await.unwrap_err();
    assert_eq!(bad.code(), Some(&ErrorCode::InvalidInput));
    // Key prefix and range.
    let rows = table.query().row_key_range(Bound::Included("002"), Bound::Unbounded).collect().await.unwrap();
    assert_eq!(rows.len(), 2);
    let rows = table.query().filter(Filter::prefix("PartitionKey", "Sup")).collect().await.unwrap();
    assert_eq!(rows.len(), 1);
}

async fn select_and_top(t: Target) {
    let table = t.fresh_table().await;
    seed_people(&table).await;
    let rows = table.query().select(["Name"]).collect().await.unwrap();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert_eq!(row.properties.keys().collect::<Vec<_>>(), ["Name"]);
        assert!(!row.partition_key.is_empty() && row.etag.is_some());
    }
    let top = table.query().top(3).collect().await.unwrap();
    assert_eq!(top.iter().map(|e| e.row_key.as_str()).collect::<Vec<_>>(), ["001", "002", "003"]);
    let one = table.get_with_select("Sales", "001", Some(&["Age".to_owned()])).await.unwrap();
    assert_eq!(one.properties.keys().collect::<Vec<_>>(), ["Age"]);
}

async fn seed_rows(table: &TableClient, partitions: &[&str], per_partition: usize) -> Vec<(String, String)> {
    let ops = partitions.iter().flat_map(|pk| {
        (0..per_partition)
            .map(move |i| Operation::Insert(Entity::new(*pk, format!("{i:05}")).with("N", i as i32)))
    });
    let report = table.bulk(ops, 8).await;
    assert!(report.is_success(), "{:?}", report.failures().next());
    let mut keys: Vec<(String, String)> = partitions
        .iter()
        .flat_map(|pk| (0..per_partition).map(move |i| (pk.to_string(), format!("{i:05}"))))
        .collect();
    keys.sort();
    keys
}

async fn paging_across_pages_and_partitions(t: Target) {
    let table = t.fresh_table().await;
    let expected = seed_rows(&table, &["pa", "pb", "pc"], 900).await;

    let pages: Vec<_> = table.query().pages().map(|p| p.unwrap()).collect().await;
    assert!(pages.len() >= 3, "2700 rows need at least 3 pages, got {}", pages.len());
    assert!(pages.iter().all(|p| p.items.len() <= 1000));
    let keys: Vec<(String, String)> =
        pages.iter().flat_map(|p| &p.items).map(|e| (e.partition_key.clone(), e.row_key.clone())).collect();
    assert_eq!(keys, expected, "every row once, in PartitionKey/RowKey order");
    assert!(pages.last().unwrap().continuation.is_none());

    let small: Vec<_> = table.query().max_per_page(250).pages().map(|p| p.unwrap()).collect().await;
    assert!(small.len() >= 11);
    assert!(small.iter().all(|p| p.items.len() <= 250));
    assert_eq!(small.iter().map(|p| p.items.len()).sum::<usize>(), 2700);

    let top = table.query().top(1234).max_per_page(500).collect().await.unwrap();
    assert_eq!(top.len(), 1234);

    let filtered = table.query().filter(Filter::ge("N", 850)).collect().await.unwrap();
    assert_eq!(filtered.len(), 150);

    let across: BTreeSet<(String, String)> = table
        .query()
        .across_partitions(["pa", "pc"], 2)
        .map(|e| e.map(|e| (e.partition_key, e.row_key)).unwrap())
        .collect()
        .await;
    assert_eq!(across.len(), 1800);
}

async fn continuation_resumes_exactly(t: Target) {
    let table = t.fresh_table().await;
    let expected = seed_rows(&table, &["a", "b"], 150).await;
    let mut pages = table.query().max_per_page(100).pages();
    let first = pages.next().await.unwrap().unwrap();
    assert_eq!(first.items.len(), 100);
    let token = first.continuation.clone().unwrap().to_string();
    drop(pages);

    // Writes between pages: a row before the cursor and a row after it.
    table.insert(Entity::new("a", "00000x")).await.unwrap();
    table.insert(Entity::new("b", "zzz")).await.unwrap();
    table.delete("b", "00149", IfMatch::Any).await.unwrap();

    let rest = table.query().max_per_page(100).resume(&token).collect().await.unwrap();
    let mut seen: Vec<(String, String)> =
        first.items.iter().chain(&rest).map(|e| (e.partition_key.clone(), e.row_key.clone())).collect();
    let mut want = expected;
    want.retain(|k| k != &("b".to_owned(), "00149".to_owned()));
    want.push(("b".into(), "zzz".into()));
    want.sort();
    let before_cursor = ("a".to_owned(), "00000x".to_owned());
    seen.retain(|k| k != &before_cursor);
    assert_eq!(seen, want, "nothing lost or repeated across a resume");

    let garbage = table.query().resume("not a token").collect().await.unwrap_err();
    assert_eq!(garbage.kind(), ErrorKind::InvalidInput);
}

async fn batches_apply_all_or_nothing(t: Target) {
    let table = t.fresh_table().await;
    table.insert(Entity::new("p", "existing").with("V", 1)).await.unwrap();
    let existing_etag = table.get("p", "existing").await.unwrap().etag.unwrap();

    let ok = Transaction::new()
        .insert(Entity::new("p", "a").with("V", 1))
        .insert_or_replace(Entity::new("p", "b").with("V", 2))
        .insert_or_merge(Entity::new("p", "c").with("V", 3))
        .merge(Entity::new("p", "existing").with("W", 2), IfMatch::ETag(existing_etag.clone()));
    let outcomes = table.submit_transaction(ok).await.unwrap();
    assert_eq!(outcomes.len(), 4);
    assert!(outcomes.iter().all(|o| o.etag.is_some()));
    let merged = table.get("p", "existing").await.unwrap();
    assert_eq!(merged.get("V"), Some(&Value::Int32(1)));
    assert_eq!(merged.get("W"), Some(&Value::Int32(2)));

    let second = Transaction::new()
        .replace(Entity::new("p", "a").with("V", 10), IfMatch::Any)
        .delete("p", "b", IfMatch::Any)
        .delete("p", "c", IfMatch::ETag(outcomes[2].etag.clone().unwrap()));
    let outcomes = table.submit_transaction(second).await.unwrap();
    assert_eq!(outcomes.len(), 3);
    assert_eq!(table.get("p", "a").await.unwrap().get("V"), Some(&Value::Int32(10)));
    assert!(table.get_if_exists("p", "b").await.unwrap().is_none());

    // Operation 2 fails: nothing of the transaction is applied.
    let failing = Transaction::new()
        .insert(Entity::new("p", "new1"))
        .replace(Entity::new("p", "a").with("V", 99), IfMatch::Any)
        .insert(Entity::new("p", "existing"))
        .insert(Entity::new("p", "new2"));
    let err = table.submit_transaction(failing).await.unwrap_err();
    assert_eq!(err.batch_index(), Some(2));
    assert_eq!(err.code(), Some(&ErrorCode::EntityAlreadyExists));
    assert_eq!(err.status(), Some(409));
    assert!(table.get_if_exists("p", "new1").await.unwrap().is_none());
    assert_eq!(table.get("p", "a").await.unwrap().get("V"), Some(&Value::Int32(10)));

    let stale = Transaction::new()
        .insert(Entity::new("p", "new3"))
        .replace(Entity::new("p", "existing"), IfMatch::ETag(existing_etag));
    let err = table.submit_transaction(stale).await.unwrap_err();
    assert_eq!(err.batch_index(), Some(1));
    assert_eq!(err.kind(), ErrorKind::PreconditionFailed);
    assert!(table.get_if_exists("p", "new3").await.unwrap().is_none());

    let missing = t.client.table(&unique_name("nobatch"));
    let err = missing.submit_transaction(Transaction::new().insert(Entity::new("p", "x"))).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::TableNotFound));
}

async fn batch_rules_are_checked_before_sending(t: Target) {
    // The table does not exist: a rule violation must be reported without any request.
    let table = t.client.table(&unique_name("never"));
    let mixed = Transaction::new().insert(Entity::new("p", "a")).insert(Entity::new("q", "b"));
    let err = table.submit_transaction(mixed).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::CommandsInBatchActOnDifferentPartitions));
    assert_eq!(err.batch_index(), Some(1));

    let dup = Transaction::new().insert(Entity::new("p", "a")).delete("p", "a", IfMatch::Any);
    let err = table.submit_transaction(dup).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidDuplicateRow));
    assert_eq!(err.batch_index(), Some(1));

    let big: Transaction = (0..101).map(|i| Operation::Insert(Entity::new("p", format!("{i}")))).collect();
    let err = table.submit_transaction(big).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));

    let err = table.submit_transaction(Transaction::new()).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));

    let bad_key = Transaction::new().insert(Entity::new("p", "a")).insert(Entity::new("p", "b/c"));
    let err = table.submit_transaction(bad_key).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::OutOfRangeInput));
    assert_eq!(err.batch_index(), Some(1));

    // 100 operations of ~67 KB each (50 000 bytes as base64) exceed the 4 MiB body.
    let heavy: Transaction = (0..100)
        .map(|i| Operation::Insert(Entity::new("p", format!("{i}")).with("B", vec![1_u8; 50_000])))
        .collect();
    let err = table.submit_transaction(heavy).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::RequestBodyTooLarge));
}

async fn validation_errors_are_local_and_typed(t: Target) {
    // A table that does not exist: errors below must come from local checks, not the service.
    let table = t.client.table(&unique_name("never"));
    let err = table.insert(Entity::new("a#b", "r")).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::OutOfRangeInput));
    assert_eq!(err.status(), Some(400));
    assert!(err.violation().is_some());

    let err = table.insert(Entity::new("p", "k".repeat(1025))).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::KeyValueTooLarge));
    let err = table.insert(Entity::new("p", "r").with("S", "x".repeat(32_769))).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PropertyValueTooLarge));
    let err = table.insert(Entity::new("p", "r").with("bad-name", 1)).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PropertyNameInvalid));
    let err = table.get("p", "a?b").await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::OutOfRangeInput));

    let err = t.client.create_table("1bad").await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidResourceName));
    let err = t.client.table("ab").get("p", "r").await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::OutOfRangeInput));

    let filter = (0..16).fold(Filter::eq("A", 0), |f, i| f.or(Filter::eq("A", i)));
    let err = table.query().filter(filter).collect().await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
}

async fn ordinal_string_order(t: Target) {
    // Row keys are ordered, and compared in filters, by UTF-16 code units (.NET ordinal
    // order), not by Rust's code-point order: U+FF21 sorts after an astral character.
    let table = t.fresh_table().await;
    let keys =
        ["", "A", "B", "a", "z", "\u{e9}", "\u{3b1}", "\u{e000}", "\u{ff21}", "\u{1f600}", "\u{10000}"];
    for rk in keys {
        table.insert(Entity::new("p", rk)).await.unwrap();
    }
    let mut expected: Vec<&str> = keys.to_vec();
    expected.sort_by(|a, b| table_client::compare_ordinal(a, b));
    assert_eq!(expected[expected.len() - 1], "\u{ff21}");
    let rows = table.query().collect().await.unwrap();
    let got: Vec<&str> = rows.iter().map(|e| e.row_key.as_str()).collect();
    assert_eq!(got, expected);
    let above = table.query().filter(Filter::gt("RowKey", "\u{1f600}")).collect().await.unwrap();
    let got: Vec<&str> = above.iter().map(|e| e.row_key.as_str()).collect();
    assert_eq!(got, ["\u{e000}", "\u{ff21}"]);
}

async fn longest_keys(t: Target) {
    let table = t.fresh_table().await;
    let key = "k".repeat(1024);
    let result = table.insert(Entity::new(key.clone(), key.clone())).await;
    if t.is_azurite() {
        // Azurite deviation (protocol doc section 10.4): keys over 512 characters are refused
        // with InvalidInput, while the service accepts 1024.
        let err = result.unwrap_err();
        assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
    } else {
        result.unwrap();
        assert_eq!(table.get(&key, &key).await.unwrap().row_key, key);
    }
    let key = "k".repeat(512);
    table.insert(Entity::new(key.clone(), key.clone())).await.unwrap();
    assert_eq!(table.get(&key, &key).await.unwrap().partition_key, key);
}

async fn cross_type_comparisons(t: Target) {
    let table = t.fresh_table().await;
    table.insert(Entity::new("p", "r").with("I", 3).with("L", 3_i64).with("D", 3.0)).await.unwrap();
    let count = |f: Filter| {
        let table = table.clone();
        async move { table.query().filter(f).collect().await.map(|rows| rows.len()) }
    };
    // Same-type and widening comparisons agree everywhere.
    assert_eq!(count(Filter::eq("I", 3)).await.unwrap(), 1);
    assert_eq!(count(Filter::eq("L", 3_i64)).await.unwrap(), 1);
    assert_eq!(count(Filter::eq("D", 3.0)).await.unwrap(), 1);
    if t.is_azurite() {
        // Azurite deviations (protocol doc sections 6.2 and 10.7): an Int32 or Double property
        // against an Int64 literal is an HTTP 500; an Int64 property never equals an Int32 literal.
        assert_eq!(count(Filter::eq("I", 3_i64)).await.unwrap_err().status(), Some(500));
        assert_eq!(count(Filter::eq("L", 3)).await.unwrap(), 0);
    } else {
        // The service: Int64 and Double properties compare numerically with narrower literals;
        // an Int32 property against an Int64 literal is "not comparable" (eq false, ne true).
        assert_eq!(count(Filter::eq("L", 3)).await.unwrap(), 1);
        assert_eq!(count(Filter::eq("D", 3)).await.unwrap(), 1);
        assert_eq!(count(Filter::eq("D", 3_i64)).await.unwrap(), 1);
        assert_eq!(count(Filter::eq("I", 3_i64)).await.unwrap(), 0);
        assert_eq!(count(Filter::ne("I", 3_i64)).await.unwrap(), 1);
    }
    // Comparisons across unrelated types never match with eq.
    assert_eq!(count(Filter::eq("I", "3")).await.unwrap(), 0);
}

async fn double_literals_and_negation(t: Target) {
    // Doubles go out in plain decimal notation (Azurite matches nothing for `1e300`), and the
    // operand of every `not` in parentheses (Azurite refuses `not not A`).
    let table = t.fresh_table().await;
    let doubles =
        [("big", 1e300), ("max", f64::MAX), ("neg0", -0.0), ("tenth", 0.1), ("tiny", f64::from_bits(1))];
    for (rk, d) in doubles {
        table.insert(Entity::new("d", rk).with("D", d).with("A", rk == "big")).await.unwrap();
    }
    let keys = |f: Filter| {
        let table = table.clone();
        async move {
            let rows = table.query().filter(f).collect().await.unwrap();
            rows.into_iter().map(|e| e.row_key).collect::<Vec<_>>()
        }
    };
    assert_eq!(keys(Filter::eq("D", 1e300)).await, ["big"]);
    assert_eq!(keys(Filter::eq("D", f64::MAX)).await, ["max"]);
    assert_eq!(keys(Filter::eq("D", f64::from_bits(1))).await, ["tiny"]);
    assert_eq!(keys(Filter::eq("D", 0.1)).await, ["tenth"]);
    assert_eq!(keys(Filter::gt("D", 1e12)).await, ["big", "max"]);
    assert_eq!(keys(Filter::gt("D", 0.0).and(Filter::lt("D", 1e-300))).await, ["tiny"]);
    assert_eq!(keys(!!Filter::property("A")).await, ["big"]);
    assert_eq!(keys((!Filter::property("A")).and(!Filter::eq("D", 0.1))).await, ["max", "neg0", "tiny"]);
    // Infinity has no portable literal: refused locally, on every backend.
    let err = table.query().filter(Filter::lt("D", f64::INFINITY)).collect().await.unwrap_err();
    assert!(matches!(err.violation(), Some(Violation::FilterNonFiniteDouble { .. })), "{err}");
}

async fn bulk_reports_each_transaction(t: Target) {
    let table = t.fresh_table().await;
    table.insert(Entity::new("b", "taken")).await.unwrap();
    // Partition a: 150 inserts (two transactions); partition b: one transaction that fails on
    // its third operation; partition c: a row written twice (two transactions, in order).
    let mut ops: Vec<Operation> =
        (0..150).map(|i| Operation::Insert(Entity::new("a", format!("{i:03}")))).collect();
    ops.push(Operation::Insert(Entity::new("b", "x")));
    ops.push(Operation::Insert(Entity::new("b", "y")));
    ops.push(Operation::Insert(Entity::new("b", "taken")));
    ops.push(Operation::Insert(Entity::new("c", "r").with("V", 1)));
    ops.push(Operation::InsertOrReplace(Entity::new("c", "r").with("V", 2)));
    let report = table.bulk(ops, 4).await;
    let summary: Vec<(&str, usize, bool)> = report
        .transactions
        .iter()
        .map(|t| (t.partition_key.as_str(), t.operations.len(), t.result.is_ok()))
        .collect();
    assert_eq!(summary, [("a", 100, true), ("a", 50, true), ("b", 3, false), ("c", 1, true), ("c", 1, true)]);
    assert!(!report.is_success());
    let failed = report.failures().next().unwrap();
    let err = failed.result.as_ref().unwrap_err();
    assert_eq!(err.batch_index(), Some(2));
    assert_eq!(failed.operations[2], 152, "the failing operation's input position");
    assert!(report.etag(0).is_some() && report.etag(150).is_none());
    assert!(table.get_if_exists("b", "x").await.unwrap().is_none(), "the failed transaction applied nothing");
    assert_eq!(
        table.get("c", "r").await.unwrap().get("V"),
        Some(&Value::Int32(2)),
        "later operations on an entity win"
    );
    assert_eq!(table.query().partition("a").collect().await.unwrap().len(), 150);
}

#[tokio::test]
async fn streams_fetch_only_the_pages_consumed() {
    let target = Target::embedded();
    let engine = target.engine.clone().unwrap();
    let table = target.fresh_table().await;
    seed_rows(&table, &["p"], 1000).await;
    let before = engine.faults().calls();
    let first: Vec<Entity> =
        table.query().max_per_page(100).stream().take(150).map(|e| e.unwrap()).collect().await;
    assert_eq!(first.len(), 150);
    assert_eq!(engine.faults().calls() - before, 2, "150 rows of 100-row pages need exactly 2 requests");
}
