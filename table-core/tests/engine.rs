//! The embedded engine's public behaviour, rule by rule (protocol doc sections 5-9).

// Helpers outside `#[test]` functions panic on failure too; this whole file is test code.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::num::{NonZeroU64, NonZeroUsize};
use std::time::Duration;

use table_core::engine::{CheckedKeys, Engine, EngineOptions, FaultSpec, Select, TableHandle, registry};
use table_core::typed::Decoder;
use table_core::{
    CompareOp, Continuation, Entity, EntityKey, ErrorCode, ErrorKind, Filter, IfMatch, Operation, Origin,
    QueryRequest, TableQuery, Value, Violation,
};

const T: &str = "People";

fn engine() -> Engine {
    let e = Engine::new();
    e.create_table(T).unwrap();
    e
}

fn engine_with(options: EngineOptions) -> Engine {
    let e = Engine::with_options(options);
    e.create_table(T).unwrap();
    e
}

/// A count the test knows is at least 1.
fn n(count: usize) -> NonZeroUsize {
    NonZeroUsize::new(count).unwrap()
}

/// A call number or period the test knows is at least 1.
fn nth(call: u64) -> NonZeroU64 {
    NonZeroU64::new(call).unwrap()
}

fn cmp(property: &str, op: CompareOp, value: impl Into<Value>) -> Filter {
    Filter::Compare { property: property.into(), op, value: value.into() }
}

fn and(a: Filter, b: Filter) -> Filter {
    Filter::And(Box::new(a), Box::new(b))
}

fn code<T: std::fmt::Debug>(r: table_core::Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code().cloned().unwrap()
}

fn keys(entities: &[Entity]) -> Vec<(String, String)> {
    entities.iter().map(|e| (e.partition_key.clone(), e.row_key.clone())).collect()
}

fn k(pk: &str, rk: &str) -> (String, String) {
    (pk.to_owned(), rk.to_owned())
}

/// Reads every page of a query, returning the pages.
fn all_pages(e: &Engine, request: &QueryRequest) -> Vec<Vec<Entity>> {
    let mut request = request.clone();
    let mut pages = Vec::new();
    loop {
        let page = e.query(T, &request).unwrap();
        pages.push(page.entities);
        match page.continuation {
            Some(c) => request.continuation = Some(c),
            None => return pages,
        }
    }
}

fn seed(e: &Engine, partitions: &[&str], rows: usize) {
    for pk in partitions {
        for r in 0..rows {
            e.insert(T, Entity::new(*pk, format!("{r:03}")).with("n", r as i32)).unwrap();
        }
    }
}

// ---------------------------------------------------------------- tables

#[test]
fn table_names_are_unique_ignoring_case_and_keep_their_case() {
    let e = Engine::new();
    e.create_table("MyTable").unwrap();
    let err = e.create_table("mytable").unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::TableAlreadyExists));
    assert_eq!(err.status(), Some(409));
    assert!(!e.create_table_if_not_exists("MYTABLE").unwrap());
    assert!(e.create_table_if_not_exists("Other").unwrap());
    let page = e.query_tables(&TableQuery::default()).unwrap();
    assert_eq!(page.tables, ["MyTable", "Other"]);
    // Entity operations find the table in any case.
    e.insert("MYTABLE", Entity::new("p", "r")).unwrap();
    e.get("mytable", "p", "r", None).unwrap();
}

#[test]
fn invalid_table_names_are_refused_with_the_service_codes() {
    let e = Engine::new();
    assert_eq!(code(e.create_table("a-bc")), ErrorCode::InvalidResourceName);
    assert_eq!(code(e.create_table("ab")), ErrorCode::OutOfRangeInput);
    assert_eq!(code(e.create_table("tables")), ErrorCode::InvalidResourceName);
}

#[test]
fn deleting_a_missing_table_is_resource_not_found() {
    let e = Engine::new();
    let err = e.delete_table("Nope").unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::ResourceNotFound));
    assert_eq!(err.status(), Some(404));
}

#[test]
fn a_deleted_table_loses_its_rows_and_its_name_is_free_by_default() {
    let e = engine();
    e.insert(T, Entity::new("p", "r")).unwrap();
    e.delete_table("people").unwrap();
    assert_eq!(code(e.get(T, "p", "r", None)), ErrorCode::TableNotFound);
    e.create_table(T).unwrap();
    assert_eq!(code(e.get(T, "p", "r", None)), ErrorCode::ResourceNotFound);
}

#[test]
fn the_deleted_table_cooldown_blocks_the_name() {
    let e = engine_with(EngineOptions::default().deleted_table_cooldown(Some(Duration::from_secs(3600))));
    e.delete_table(T).unwrap();
    let err = e.create_table(T).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::TableBeingDeleted));
    assert_eq!(err.status(), Some(409));
    assert_eq!(code(e.create_table_if_not_exists("PEOPLE")), ErrorCode::TableBeingDeleted);
    e.create_table("Others").unwrap();

    let expired = engine_with(EngineOptions::default().deleted_table_cooldown(Some(Duration::ZERO)));
    expired.delete_table(T).unwrap();
    expired.create_table(T).unwrap();
}

#[test]
fn tables_are_listed_in_name_order_with_prefix_filters_and_paging() {
    let e = Engine::new();
    for name in ["beta2", "Alpha", "beta1", "Gamma", "beta3", "delta"] {
        e.create_table(name).unwrap();
    }
    let all = e.query_tables(&TableQuery::default()).unwrap();
    assert_eq!(all.tables, ["Alpha", "beta1", "beta2", "beta3", "delta", "Gamma"]);
    assert_eq!(all.next_table_name, None);

    let prefix = and(cmp("TableName", CompareOp::Ge, "beta"), cmp("TableName", CompareOp::Lt, "betb"));
    let mut query = TableQuery { filter: Some(prefix), top: Some(2), next_table_name: None };
    let first = e.query_tables(&query).unwrap();
    assert_eq!(first.tables, ["beta1", "beta2"]);
    assert_eq!(first.next_table_name.as_deref(), Some("beta3"));
    query.next_table_name = first.next_table_name;
    let second = e.query_tables(&query).unwrap();
    assert_eq!(second.tables, ["beta3"]);
    assert_eq!(second.next_table_name, None);
}

#[test]
fn table_queries_check_top_and_tokens() {
    let e = engine();
    for top in [0, 1001] {
        let err = e.query_tables(&TableQuery { top: Some(top), ..TableQuery::default() }).unwrap_err();
        assert_eq!(err.violation(), Some(&Violation::Top { value: top.into() }));
    }
    let err = e
        .query_tables(&TableQuery { next_table_name: Some("not a name!".into()), ..TableQuery::default() })
        .unwrap_err();
    assert!(matches!(err.violation(), Some(Violation::Continuation { .. })));
    assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
}

#[test]
fn small_pages_apply_to_table_listings() {
    let e = Engine::with_options(EngineOptions::default().max_page_size(n(2)));
    for name in ["aaa", "bbb", "ccc"] {
        e.create_table(name).unwrap();
    }
    let page = e.query_tables(&TableQuery::default()).unwrap();
    assert_eq!(page.tables, ["aaa", "bbb"]);
    assert_eq!(page.next_table_name.as_deref(), Some("ccc"));
}

// ---------------------------------------------------------------- validation order

#[test]
fn entity_operations_on_a_missing_table_are_table_not_found() {
    let e = Engine::new();
    let err = e.insert("Missing", Entity::new("p", "r")).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::TableNotFound));
    assert_eq!(err.status(), Some(404));
    assert_eq!(code(e.get("Missing", "p", "r", None)), ErrorCode::TableNotFound);
    assert_eq!(code(e.query("Missing", &QueryRequest::default())), ErrorCode::TableNotFound);
    assert_eq!(code(e.delete("Missing", &EntityKey::new("p", "r"), IfMatch::Any)), ErrorCode::TableNotFound);
}

#[test]
fn entity_rules_are_checked_before_the_table() {
    let e = Engine::new();
    assert_eq!(code(e.insert("Missing", Entity::new("a/b", "r"))), ErrorCode::OutOfRangeInput);
    assert_eq!(code(e.get("Missing", "p", &"k".repeat(1025), None)), ErrorCode::KeyValueTooLarge);
    let big = Entity::new("p", "r").with("s", "x".repeat(32_769));
    assert_eq!(code(e.insert("Missing", big)), ErrorCode::PropertyValueTooLarge);
    assert_eq!(
        code(e.insert("Missing", Entity::new("p", "r").with("bad-name", 1))),
        ErrorCode::PropertyNameInvalid
    );
    let err = e.query("Missing", &QueryRequest { top: Some(0), ..QueryRequest::default() }).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
}

#[test]
fn table_existence_is_checked_before_the_entity() {
    let e = Engine::new();
    let err = e.replace("Missing", Entity::new("p", "r"), IfMatch::Any).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::TableNotFound));
}

// ---------------------------------------------------------------- writes

#[test]
fn insert_twice_is_entity_already_exists() {
    let e = engine();
    e.insert(T, Entity::new("p", "r")).unwrap();
    let err = e.insert(T, Entity::new("p", "r")).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::EntityAlreadyExists));
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
}

/// Runs `op` through the single-entity write that says the same, lending it the entity.
fn single_write(e: &Engine, op: &Operation) -> table_core::Result<table_core::WriteOutcome> {
    match op {
        Operation::Insert(entity) => e.insert(T, entity),
        Operation::Replace { entity, if_match } => e.replace(T, entity, if_match.clone()),
        Operation::Merge { entity, if_match } => e.merge(T, entity, if_match.clone()),
        Operation::InsertOrReplace(entity) => e.insert_or_replace(T, entity),
        Operation::InsertOrMerge(entity) => e.insert_or_merge(T, entity),
        Operation::Delete { key, if_match } => e.delete(T, key, if_match.clone()),
    }
}

/// The rows of `T` without their timestamps and ETags (which differ between two engines).
fn contents(e: &Engine) -> Vec<Entity> {
    all_pages(e, &QueryRequest::default())
        .into_iter()
        .flatten()
        .map(|mut row| {
            (row.timestamp, row.etag) = (None, None);
            row
        })
        .collect()
}

#[test]
fn single_entity_writes_lend_their_entity_and_answer_as_execute_does() {
    let stale = IfMatch::ETag(table_core::ETag::new("W/\"datetime'2001-01-01T00%3A00%3A00Z'\""));
    let unquoted = IfMatch::ETag(table_core::ETag::new("W/datetime"));
    let control = IfMatch::ETag(table_core::ETag::new("W/\"a\u{7}\""));
    let row = |rk: &str| Entity::new("p", rk).with("a", 1).with("b", "kept");
    let change = |rk: &str| Entity::new("p", rk).with("a", 2);
    let bad_key = Entity::new("p", "a/b").with("a", 1);
    let ops = vec![
        Operation::Insert(row("1")),
        Operation::Insert(row("1")),
        Operation::Insert(bad_key.clone()),
        Operation::Replace { entity: change("1"), if_match: IfMatch::Any },
        Operation::Replace { entity: change("missing"), if_match: IfMatch::Any },
        Operation::Replace { entity: change("1"), if_match: stale.clone() },
        Operation::Replace { entity: change("1"), if_match: unquoted.clone() },
        // Both the condition and the entity are bad: the condition is refused first.
        Operation::Replace { entity: bad_key.clone(), if_match: control.clone() },
        Operation::Insert(row("2")),
        Operation::Merge { entity: change("2"), if_match: IfMatch::Any },
        Operation::Merge { entity: change("missing"), if_match: IfMatch::Any },
        Operation::Merge { entity: bad_key.clone(), if_match: control },
        Operation::Merge { entity: change("2"), if_match: stale },
        Operation::Merge { entity: change("2"), if_match: unquoted },
        Operation::InsertOrReplace(change("3")),
        Operation::InsertOrReplace(row("3")),
        Operation::InsertOrReplace(bad_key.clone()),
        Operation::InsertOrMerge(change("4")),
        Operation::InsertOrMerge(row("4")),
        Operation::InsertOrMerge(change("4")),
        Operation::InsertOrMerge(bad_key),
    ];
    let (lent, executed) = (engine(), engine());
    for op in &ops {
        let answer = |r: table_core::Result<table_core::WriteOutcome>| {
            r.map(|w| w.etag.is_some()).map_err(|e| e.to_string())
        };
        assert_eq!(answer(single_write(&lent, op)), answer(executed.execute(T, op)), "{op:?}");
        assert_eq!(contents(&lent), contents(&executed), "after {op:?}");
    }
    // The caller still has every entity it lent, as it was.
    assert_eq!(ops[0], Operation::Insert(row("1")));
    assert_eq!(contents(&lent).len(), 4);
}

#[test]
fn reads_carry_the_timestamp_and_etag_of_the_last_write() {
    let e = engine();
    let written = e.insert(T, Entity::new("p", "r").with("a", 1)).unwrap();
    let read = e.get(T, "p", "r", None).unwrap();
    assert_eq!(read.etag, written.etag);
    let ts = read.timestamp.unwrap();
    assert_eq!(read.etag, Some(table_core::ETag::from_timestamp(ts)));
    assert_eq!(ts.timestamp_subsec_nanos() % 100, 0);
    assert_eq!(read.properties.len(), 1);
}

#[test]
fn every_write_gets_a_new_strictly_later_timestamp() {
    let e = engine();
    let mut etags = BTreeSet::new();
    let mut last = None;
    for i in 0..2000 {
        let outcome = e.insert_or_replace(T, Entity::new("p", "r").with("i", i)).unwrap();
        assert!(etags.insert(outcome.etag.unwrap().to_string()));
        let ts = e.get(T, "p", "r", None).unwrap().timestamp.unwrap();
        assert!(last.is_none_or(|l| ts > l));
        last = Some(ts);
    }
}

#[test]
fn replace_and_merge_need_an_existing_entity() {
    let e = engine();
    for if_match in [IfMatch::Any, IfMatch::ETag(table_core::ETag::new("W/\"x\""))] {
        let err = e.replace(T, Entity::new("p", "r"), if_match.clone()).unwrap_err();
        assert_eq!(err.code(), Some(&ErrorCode::ResourceNotFound));
        assert_eq!(err.status(), Some(404));
        assert_eq!(code(e.merge(T, Entity::new("p", "r"), if_match.clone())), ErrorCode::ResourceNotFound);
        assert_eq!(code(e.delete(T, &EntityKey::new("p", "r"), if_match)), ErrorCode::ResourceNotFound);
    }
}

#[test]
fn if_match_compares_etags_exactly() {
    let e = engine();
    let v1 = e.insert(T, Entity::new("p", "r")).unwrap().etag.unwrap();
    let v2 =
        e.replace(T, Entity::new("p", "r").with("a", 1), IfMatch::ETag(v1.clone())).unwrap().etag.unwrap();
    assert_ne!(v1, v2);
    for op in [
        e.replace(T, Entity::new("p", "r"), IfMatch::ETag(v1.clone())),
        e.merge(T, Entity::new("p", "r"), IfMatch::ETag(v1.clone())),
        e.delete(T, &EntityKey::new("p", "r"), IfMatch::ETag(v1.clone())),
    ] {
        let err = op.unwrap_err();
        assert_eq!(err.code(), Some(&ErrorCode::UpdateConditionNotSatisfied));
        assert_eq!(err.status(), Some(412));
        assert_eq!(err.kind(), ErrorKind::PreconditionFailed);
    }
    let v3 = e.merge(T, Entity::new("p", "r").with("b", 2), IfMatch::ETag(v2.clone())).unwrap().etag.unwrap();
    e.merge(T, Entity::new("p", "r"), IfMatch::Any).unwrap();
    assert_eq!(
        code(e.delete(T, &EntityKey::new("p", "r"), IfMatch::ETag(v3))),
        ErrorCode::UpdateConditionNotSatisfied
    );
    let current = e.get(T, "p", "r", None).unwrap().etag.unwrap();
    assert_eq!(e.delete(T, &EntityKey::new("p", "r"), IfMatch::ETag(current)).unwrap().etag, None);
    assert_eq!(code(e.get(T, "p", "r", None)), ErrorCode::ResourceNotFound);
}

#[test]
fn a_malformed_etag_is_invalid_input() {
    let e = engine();
    e.insert(T, Entity::new("p", "r")).unwrap();
    let err =
        e.replace(T, Entity::new("p", "r"), IfMatch::ETag(table_core::ETag::new("garbage"))).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.violation(), Some(&Violation::ETagSyntax { etag: "garbage".into() }));
    assert!(err.message().contains("\"garbage\""), "{err}");
}

#[test]
fn the_engine_answers_the_service_s_own_messages_naming_table_and_key() {
    let e = engine();
    let entity = |m: &str| format!("entity (PartitionKey=\"p\", RowKey=\"r\") in table {T}: {m}");
    let missing = e.get(T, "p", "r", None).unwrap_err();
    assert_eq!(missing.message(), entity("The specified resource does not exist."));
    let no_table = e.get("Nowhere", "p", "r", None).unwrap_err();
    assert_eq!(
        no_table.message(),
        "entity (PartitionKey=\"p\", RowKey=\"r\") in table Nowhere: The table specified does not exist."
    );
    e.insert(T, Entity::new("p", "r")).unwrap();
    let dup = e.insert(T, Entity::new("p", "r")).unwrap_err();
    assert_eq!(dup.message(), entity("The specified entity already exists."));
    let stale =
        e.replace(T, Entity::new("p", "r"), IfMatch::ETag(table_core::ETag::new("W/\"x\""))).unwrap_err();
    assert_eq!(stale.message(), entity("The update condition specified in the request was not satisfied."));
    let table_exists = e.create_table(T).unwrap_err();
    assert_eq!(table_exists.message(), format!("table {T}: The table specified already exists."));
    let gone = e.delete_table("Nowhere").unwrap_err();
    assert_eq!(gone.message(), "table Nowhere: The specified resource does not exist.");
}

#[test]
fn a_failing_batch_operation_names_its_entity() {
    let e = engine();
    let ops = vec![
        Operation::InsertOrReplace(Entity::new("p", "1")),
        Operation::Delete { key: EntityKey::new("p", "2"), if_match: IfMatch::Any },
    ];
    let err = e.submit_batch(T, ops).unwrap_err();
    assert_eq!(err.batch_index(), Some(1));
    assert_eq!(
        err.to_string(),
        format!(
            "batch operation 1: entity (PartitionKey=\"p\", RowKey=\"2\") in table {T}: The specified \
             resource does not exist. (ResourceNotFound, answered by the embedded engine; the service would \
             answer 404)"
        )
    );
}

#[test]
fn engine_errors_say_the_engine_answered_and_never_claim_http() {
    let e = engine();
    let missing = e.get(T, "p", "r", None).unwrap_err();
    assert_eq!(missing.service_code(), Some((&ErrorCode::ResourceNotFound, Origin::Engine)));
    assert_eq!(missing.status(), Some(404));
    assert!(!missing.to_string().contains("HTTP"), "{missing}");
    let invalid = e.get(T, "p", "a/b", None).unwrap_err();
    assert_eq!(invalid.origin(), Origin::Engine);
    assert!(!invalid.to_string().contains("HTTP"), "{invalid}");
}

#[test]
fn replace_stores_exactly_the_given_properties() {
    let e = engine();
    e.insert(T, Entity::new("p", "r").with("a", 1).with("b", "x")).unwrap();
    e.replace(T, Entity::new("p", "r").with("c", true), IfMatch::Any).unwrap();
    let read = e.get(T, "p", "r", None).unwrap();
    assert_eq!(read.properties, Entity::new("p", "r").with("c", true).properties);
}

#[test]
fn merge_overwrites_given_properties_keeps_others_and_may_change_types() {
    let e = engine();
    e.insert(T, Entity::new("p", "r").with("a", 1).with("b", "x")).unwrap();
    e.merge(T, Entity::new("p", "r").with("a", "now text").with("c", 2.5), IfMatch::Any).unwrap();
    let read = e.get(T, "p", "r", None).unwrap();
    let expected = Entity::new("p", "r").with("a", "now text").with("b", "x").with("c", 2.5);
    assert_eq!(read.properties, expected.properties);
}

#[test]
fn a_merge_whose_result_breaks_the_limits_is_refused_and_changes_nothing() {
    let e = engine();
    let wide =
        |from: usize| (from..from + 200).fold(Entity::new("p", "r"), |e, i| e.with(format!("p{i}"), 1));
    e.insert(T, wide(0)).unwrap();
    assert_eq!(code(e.merge(T, wide(200), IfMatch::Any)), ErrorCode::TooManyProperties);
    assert_eq!(code(e.insert_or_merge(T, wide(200))), ErrorCode::TooManyProperties);
    let batch = vec![Operation::Merge { entity: wide(200), if_match: IfMatch::Any }];
    let err = e.submit_batch(T, batch).unwrap_err();
    assert_eq!((err.code(), err.batch_index()), (Some(&ErrorCode::TooManyProperties), Some(0)));
    assert_eq!(e.get(T, "p", "r", None).unwrap().properties.len(), 200);
    // Overwriting existing properties keeps the count, so it passes.
    e.merge(T, wide(0).with("p0", 2), IfMatch::Any).unwrap();
}

#[test]
fn an_if_match_etag_with_a_control_character_is_invalid_input() {
    let e = engine();
    e.insert(T, Entity::new("p", "r")).unwrap();
    let bad = IfMatch::ETag(table_core::ETag::new("W/\"x\"\r\nX-Injected: 1"));
    assert_eq!(code(e.replace(T, Entity::new("p", "r"), bad.clone())), ErrorCode::InvalidInput);
    let batch = vec![
        Operation::Insert(Entity::new("p", "a")),
        Operation::Delete { key: EntityKey::new("p", "r"), if_match: bad },
    ];
    let err = e.submit_batch(T, batch).unwrap_err();
    assert_eq!((err.code(), err.batch_index()), (Some(&ErrorCode::InvalidInput), Some(1)));
}

#[test]
fn upserts_insert_when_missing_and_replace_or_merge_when_present() {
    let e = engine();
    e.insert_or_replace(T, Entity::new("p", "1").with("a", 1)).unwrap();
    e.insert_or_merge(T, Entity::new("p", "2").with("a", 1)).unwrap();
    e.insert_or_replace(T, Entity::new("p", "1").with("b", 2)).unwrap();
    e.insert_or_merge(T, Entity::new("p", "2").with("b", 2)).unwrap();
    assert_eq!(e.get(T, "p", "1", None).unwrap().properties, Entity::new("", "").with("b", 2).properties);
    assert_eq!(
        e.get(T, "p", "2", None).unwrap().properties,
        Entity::new("", "").with("a", 1).with("b", 2).properties
    );
}

#[test]
fn written_timestamps_and_etags_in_the_request_are_ignored() {
    let e = engine();
    let mut entity = Entity::new("p", "r");
    entity.etag = Some(table_core::ETag::new("W/\"mine\""));
    entity.timestamp = Some(chrono::DateTime::from_timestamp(0, 0).unwrap());
    let written = e.insert(T, entity).unwrap();
    let read = e.get(T, "p", "r", None).unwrap();
    assert_eq!(read.etag, written.etag);
    assert_ne!(read.timestamp, Some(chrono::DateTime::from_timestamp(0, 0).unwrap()));
}

#[test]
fn empty_keys_are_valid() {
    let e = engine();
    e.insert(T, Entity::new("", "")).unwrap();
    e.get(T, "", "", None).unwrap();
}

// ---------------------------------------------------------------- select

#[test]
fn select_keeps_keys_timestamp_and_etag_and_omits_absent_properties() {
    let e = engine();
    e.insert(T, Entity::new("p", "r").with("a", 1).with("b", 2).with("c", 3)).unwrap();
    let select = vec!["a".to_owned(), "c".to_owned(), "missing".to_owned()];
    let got = e.get(T, "p", "r", Some(&select)).unwrap();
    assert_eq!(got.properties, Entity::new("", "").with("a", 1).with("c", 3).properties);
    assert!(got.timestamp.is_some() && got.etag.is_some());
    assert_eq!((got.partition_key.as_str(), got.row_key.as_str()), ("p", "r"));

    let page =
        e.query(T, &QueryRequest { select: Some(vec!["b".into()]), ..QueryRequest::default() }).unwrap();
    assert_eq!(page.entities[0].properties, Entity::new("", "").with("b", 2).properties);
    assert!(page.entities[0].etag.is_some());
}

#[test]
fn a_prepared_select_reads_what_the_same_list_unprepared_reads() {
    let e = engine();
    e.insert(T, Entity::new("p", "r").with("a", 1).with("b", 2).with("c", 3)).unwrap();
    let lists: [&[&str]; 4] =
        [&["c", "a", "missing"], &["b", "b", "a", "b"], &["RowKey", "c", "Timestamp"], &[]];
    for list in lists {
        let list: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
        let prepared = Select::new(list.clone()).unwrap();
        assert_eq!(prepared.names(), list, "kept as given");
        let unprepared = e.get_as(T, "p", "r", Some(&list), Decoder::ENTITY).unwrap();
        let keys = CheckedKeys::new("p", "r").unwrap();
        let from_prepared = e.get_selected_as(T, keys, Some(&prepared), Decoder::ENTITY).unwrap();
        assert_eq!(from_prepared, unprepared, "{list:?}");
    }
}

#[test]
fn checked_keys_refuse_what_a_read_refuses_partition_key_first() {
    let e = engine();
    for (pk, rk) in [("a/b", "c#d"), ("ok", "c#d"), ("a\u{7f}", "ok"), (&*"k".repeat(1025), "ok")] {
        let read = e.get(T, pk, rk, None).unwrap_err();
        let rule = CheckedKeys::new(pk, rk).unwrap_err();
        assert_eq!(read.violation(), Some(&rule), "{pk:?} {rk:?}");
    }
    let keys = CheckedKeys::new("p", "r").unwrap();
    assert_eq!((keys.partition_key(), keys.row_key()), ("p", "r"));
}

#[test]
fn preparing_a_select_runs_the_rule_an_unprepared_read_runs() {
    let e = engine();
    let bad = vec!["a".to_owned(), "a,RowKey".to_owned()];
    let unprepared = e.get(T, "p", "r", Some(&bad)).unwrap_err();
    let rule = Select::new(bad).unwrap_err();
    assert_eq!(unprepared.violation(), Some(&rule));
    assert!(matches!(rule, Violation::SelectEntry { index: 1, .. }), "{rule:?}");
    // Unprepared, the keys are still checked first, in the service's order.
    let bad_key = e.get(T, "p/", "r", Some(&["a,b".to_owned()])).unwrap_err();
    assert!(matches!(bad_key.violation(), Some(Violation::KeyCharacter { .. })), "{bad_key:?}");
}

// ---------------------------------------------------------------- queries

#[test]
fn queries_filter_and_order_by_partition_then_row_key() {
    let e = engine();
    for (pk, rk, n) in [("b", "2", 5), ("a", "9", 1), ("b", "1", 7), ("a", "10", 3), ("c", "0", 9)] {
        e.insert(T, Entity::new(pk, rk).with("n", n)).unwrap();
    }
    let page = e.query(T, &QueryRequest::default()).unwrap();
    assert_eq!(keys(&page.entities), [k("a", "10"), k("a", "9"), k("b", "1"), k("b", "2"), k("c", "0")]);
    assert_eq!(page.continuation, None);

    let filtered = e
        .query(T, &QueryRequest { filter: Some(cmp("n", CompareOp::Ge, 5)), ..QueryRequest::default() })
        .unwrap();
    assert_eq!(keys(&filtered.entities), [k("b", "1"), k("b", "2"), k("c", "0")]);

    let partition = e
        .query(
            T,
            &QueryRequest {
                filter: Some(and(cmp("PartitionKey", CompareOp::Eq, "b"), cmp("RowKey", CompareOp::Gt, "1"))),
                ..QueryRequest::default()
            },
        )
        .unwrap();
    assert_eq!(keys(&partition.entities), [k("b", "2")]);
}

#[test]
fn keys_sort_in_utf16_ordinal_order() {
    let e = engine();
    // Code point order would put U+FF21 first; UTF-16 puts the surrogate pair of U+1F600 first.
    for rk in ["\u{ff21}", "\u{1f600}", "Q", "p", ""] {
        e.insert(T, Entity::new("p", rk)).unwrap();
    }
    let page = e.query(T, &QueryRequest::default()).unwrap();
    let rks: Vec<_> = page.entities.iter().map(|e| e.row_key.as_str()).collect();
    assert_eq!(rks, ["", "Q", "p", "\u{1f600}", "\u{ff21}"]);
    // A range filter agrees with the order.
    let tail = e
        .query(
            T,
            &QueryRequest {
                filter: Some(cmp("RowKey", CompareOp::Gt, "\u{1f600}")),
                ..QueryRequest::default()
            },
        )
        .unwrap();
    assert_eq!(keys(&tail.entities), [k("p", "\u{ff21}")]);
}

#[test]
fn top_must_be_between_1_and_1000() {
    let e = engine();
    for top in [0, 1001] {
        let err = e.query(T, &QueryRequest { top: Some(top), ..QueryRequest::default() }).unwrap_err();
        assert_eq!(err.violation(), Some(&Violation::Top { value: top.into() }));
        assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
    }
    e.query(T, &QueryRequest { top: Some(1000), ..QueryRequest::default() }).unwrap();
}

#[test]
fn a_filter_over_15_comparisons_is_invalid_input() {
    let e = engine();
    let mut f = cmp("n", CompareOp::Eq, 0);
    for i in 1..16 {
        f = Filter::Or(Box::new(f), Box::new(cmp("n", CompareOp::Eq, i)));
    }
    let err = e.query(T, &QueryRequest { filter: Some(f), ..QueryRequest::default() }).unwrap_err();
    assert!(matches!(err.violation(), Some(Violation::TooManyComparisons { .. })));
}

#[test]
fn pages_hold_at_most_top_and_1000_by_default() {
    let e = engine();
    seed(&e, &["a", "b"], 600);
    let pages = all_pages(&e, &QueryRequest::default());
    let sizes: Vec<_> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, [1000, 200]);
    let pages = all_pages(&e, &QueryRequest { top: Some(500), ..QueryRequest::default() });
    let sizes: Vec<_> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, [500, 500, 200]);
}

#[test]
fn a_continuation_is_present_exactly_when_more_matches_follow() {
    let e = engine();
    seed(&e, &["a"], 4);
    let request =
        QueryRequest { top: Some(2), filter: Some(cmp("n", CompareOp::Lt, 2)), ..QueryRequest::default() };
    let page = e.query(T, &request).unwrap();
    assert_eq!(page.entities.len(), 2);
    assert_eq!(page.continuation, None, "rows 2 and 3 do not match");
}

#[test]
fn paging_resumes_exactly_across_inserts_and_deletes() {
    let e = engine();
    seed(&e, &["a"], 6); // 000..005
    let mut request = QueryRequest { top: Some(2), ..QueryRequest::default() };
    let first = e.query(T, &request).unwrap();
    assert_eq!(keys(&first.entities), [k("a", "000"), k("a", "001")]);
    // Between pages: the next row to visit is deleted, a row behind the cursor and one ahead
    // of it are inserted.
    e.delete(T, &EntityKey::new("a", "002"), IfMatch::Any).unwrap();
    e.insert(T, Entity::new("a", "0005")).unwrap();
    e.insert(T, Entity::new("a", "0035")).unwrap();
    request.continuation = first.continuation;
    let rest: Vec<_> = all_pages(&e, &request).concat();
    assert_eq!(keys(&rest), [k("a", "003"), k("a", "0035"), k("a", "004"), k("a", "005")]);
}

#[test]
fn continuations_survive_their_string_form() {
    let e = engine();
    seed(&e, &["a b'é"], 3);
    let mut request = QueryRequest { top: Some(1), ..QueryRequest::default() };
    let first = e.query(T, &request).unwrap();
    let stored = first.continuation.unwrap().to_string();
    request.continuation = Some(stored.parse::<Continuation>().unwrap());
    let second = e.query(T, &request).unwrap();
    assert_eq!(keys(&second.entities), [k("a b'é", "001")]);
}

#[test]
fn a_garbage_continuation_is_invalid_input() {
    let e = engine();
    for token in [
        Continuation { next_partition_key: "!!!".into(), next_row_key: None },
        Continuation {
            next_partition_key: "YQ".into(),
            next_row_key: Some("/w".into()), // base64 of a lone 0xFF byte: not UTF-8
        },
    ] {
        let err =
            e.query(T, &QueryRequest { continuation: Some(token), ..QueryRequest::default() }).unwrap_err();
        assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
        assert!(matches!(err.violation(), Some(Violation::Continuation { .. })));
    }
}

#[test]
fn small_pages_still_return_everything_once() {
    let e = engine_with(EngineOptions::default().max_page_size(n(3)));
    seed(&e, &["a", "b", "c"], 4);
    let pages = all_pages(&e, &QueryRequest { top: Some(10), ..QueryRequest::default() });
    assert!(pages.iter().all(|p| p.len() <= 3));
    assert_eq!(pages.concat().len(), 12);
}

#[test]
fn split_pages_never_span_partitions_and_may_be_empty() {
    let e = engine_with(EngineOptions::default().split_pages_at_partition_boundaries(true));
    seed(&e, &["a", "b", "c"], 3);
    // Only partitions a and c have a row with n = 1 ... and b has none after deleting it.
    e.delete(T, &EntityKey::new("b", "001"), IfMatch::Any).unwrap();
    let pages =
        all_pages(&e, &QueryRequest { filter: Some(cmp("n", CompareOp::Eq, 1)), ..QueryRequest::default() });
    let shape: Vec<_> = pages.iter().map(|p| keys(p)).collect();
    assert_eq!(shape, [vec![k("a", "001")], vec![], vec![k("c", "001")]]);
}

#[test]
fn a_scan_budget_ends_pages_early_with_a_continuation() {
    let e = engine_with(EngineOptions::default().scan_budget(Some(n(2))));
    seed(&e, &["a"], 5);
    let pages =
        all_pages(&e, &QueryRequest { filter: Some(cmp("n", CompareOp::Ge, 4)), ..QueryRequest::default() });
    let shape: Vec<_> = pages.iter().map(Vec::len).collect();
    assert_eq!(shape, [0, 0, 1]);
}

// ---------------------------------------------------------------- batches

fn ins(rk: &str) -> Operation {
    Operation::Insert(Entity::new("p", rk))
}

#[test]
fn batch_rule_violations_name_the_operation() {
    let e = engine();
    let err = e.submit_batch(T, vec![]).unwrap_err();
    assert_eq!(err.violation(), Some(&Violation::EmptyBatch));

    let too_many: Vec<_> = (0..101).map(|i| ins(&i.to_string())).collect();
    let err = e.submit_batch(T, too_many).unwrap_err();
    assert!(matches!(err.violation(), Some(Violation::TooManyOperations { count: 101, .. })));

    let mixed = vec![ins("1"), Operation::Insert(Entity::new("q", "2")), ins("3")];
    let err = e.submit_batch(T, mixed).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::CommandsInBatchActOnDifferentPartitions));
    assert_eq!(err.batch_index(), Some(1));

    let duplicate = vec![ins("1"), ins("2"), ins("3"), Operation::InsertOrMerge(Entity::new("p", "2"))];
    let err = e.submit_batch(T, duplicate).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidDuplicateRow));
    assert_eq!(err.batch_index(), Some(3));

    let invalid = vec![ins("1"), ins("2"), Operation::Insert(Entity::new("p", "3").with("1x", 1))];
    let err = e.submit_batch(T, invalid).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PropertyNameInvalid));
    assert_eq!(err.batch_index(), Some(2));

    let bad_etag = vec![
        ins("1"),
        Operation::Delete {
            key: EntityKey::new("p", "2"),
            if_match: IfMatch::ETag(table_core::ETag::new("nope")),
        },
    ];
    let err = e.submit_batch(T, bad_etag).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
    assert_eq!(err.batch_index(), Some(1));

    let huge: Vec<_> = (0..100)
        .map(|i| {
            Operation::Insert(
                Entity::new("p", i.to_string()).with("s", "x".repeat(30_000)).with("t", "y".repeat(30_000)),
            )
        })
        .collect();
    let err = e.submit_batch(T, huge).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::RequestBodyTooLarge));

    assert!(e.query(T, &QueryRequest::default()).unwrap().entities.is_empty());
}

#[test]
fn a_batch_on_a_missing_table_fails_at_operation_0() {
    let e = Engine::new();
    let err = e.submit_batch("Missing", vec![ins("1"), ins("2")]).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::TableNotFound));
    assert_eq!(err.batch_index(), Some(0));
}

#[test]
fn a_failing_operation_aborts_the_whole_batch() {
    let e = engine();
    e.insert(T, Entity::new("p", "4").with("v", 1)).unwrap();
    let ops = vec![
        ins("1"),
        Operation::InsertOrReplace(Entity::new("p", "2")),
        Operation::Delete { key: EntityKey::new("p", "9"), if_match: IfMatch::Any }.clone(),
        ins("4"),
    ];
    let err = e.submit_batch(T, ops).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::ResourceNotFound));
    assert_eq!(err.batch_index(), Some(2));

    let ops = vec![ins("1"), ins("2"), ins("3"), ins("4")];
    let err = e.submit_batch(T, ops).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::EntityAlreadyExists));
    assert_eq!(err.batch_index(), Some(3));
    assert!(err.to_string().starts_with("batch operation 3: "));
    let page = e.query(T, &QueryRequest::default()).unwrap();
    assert_eq!(keys(&page.entities), [k("p", "4")]);
}

#[test]
fn a_successful_batch_applies_every_operation_in_order() {
    let e = engine();
    let v = e.insert(T, Entity::new("p", "m").with("a", 1)).unwrap().etag.unwrap();
    e.insert(T, Entity::new("p", "d")).unwrap();
    let outcomes = e
        .submit_batch(
            T,
            vec![
                ins("i"),
                Operation::Merge { entity: Entity::new("p", "m").with("b", 2), if_match: IfMatch::ETag(v) },
                Operation::Delete { key: EntityKey::new("p", "d"), if_match: IfMatch::Any },
                Operation::InsertOrMerge(Entity::new("p", "u").with("c", 3)),
            ],
        )
        .unwrap();
    assert_eq!(outcomes.len(), 4);
    assert_eq!(outcomes[2].etag, None);
    let etags: BTreeSet<_> =
        [0, 1, 3].iter().map(|&i| outcomes[i].etag.clone().unwrap().to_string()).collect();
    assert_eq!(etags.len(), 3, "each write has its own ETag");
    assert_eq!(e.get(T, "p", "m", None).unwrap().etag, outcomes[1].etag);
    let page = e.query(T, &QueryRequest::default()).unwrap();
    assert_eq!(keys(&page.entities), [k("p", "i"), k("p", "m"), k("p", "u")]);
    assert_eq!(page.entities[1].properties.len(), 2);
}

// ---------------------------------------------------------------- faults

#[test]
fn a_fault_before_apply_has_no_effect() {
    let e = engine();
    e.faults().fail_call(nth(1), FaultSpec::server_busy());
    let err = e.insert(T, Entity::new("p", "r")).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::ServerBusy));
    assert_eq!(err.status(), Some(503));
    assert!(err.is_transient());
    assert_eq!(code(e.get(T, "p", "r", None)), ErrorCode::ResourceNotFound);
}

#[test]
fn a_fault_after_apply_loses_only_the_response() {
    let e = engine();
    e.faults().fail_call(nth(1), FaultSpec::timeout().after_apply());
    let err = e.insert(T, Entity::new("p", "r")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    e.get(T, "p", "r", None).unwrap();

    e.faults().fail_call(nth(1), FaultSpec::server_busy().after_apply());
    e.submit_batch(T, vec![ins("b1"), ins("b2")]).unwrap_err();
    e.get(T, "p", "b2", None).unwrap();
}

#[test]
fn faults_count_every_request_once() {
    let e = Engine::new();
    assert_eq!(e.faults().calls(), 0);
    e.create_table(T).unwrap();
    e.insert(T, Entity::new("p", "r")).unwrap();
    e.delete(T, &EntityKey::new("p", "r"), IfMatch::Any).unwrap();
    e.query(T, &QueryRequest::default()).unwrap();
    e.query_tables(&TableQuery::default()).unwrap();
    e.get(T, "p", "r", None).unwrap_err();
    assert_eq!(e.faults().calls(), 6);

    e.faults().fail_every(nth(2), FaultSpec::service(ErrorCode::InternalError));
    let results: Vec<_> = (0..4).map(|i| e.insert(T, Entity::new("p", i.to_string())).is_ok()).collect();
    assert_eq!(results, [true, false, true, false]);
    e.faults().clear();
    assert!(e.insert(T, Entity::new("p", "x")).is_ok());
    assert!(e.insert(T, Entity::new("p", "y")).is_ok());
}

// ---------------------------------------------------------------- sharing

#[test]
fn clones_share_tables_across_threads() {
    let e = engine();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let e = e.clone();
            std::thread::spawn(move || {
                for i in 0..250 {
                    e.insert(T, Entity::new(format!("p{t}"), format!("{i:03}"))).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let all: Vec<_> = all_pages(&e, &QueryRequest::default()).concat();
    assert_eq!(all.len(), 1000);
    let etags: BTreeSet<_> = all.iter().map(|e| e.etag.clone().unwrap().to_string()).collect();
    assert_eq!(etags.len(), 1000);
}

#[test]
fn the_registry_shares_an_engine_per_name_until_the_name_is_unbound() {
    // The only test of this file that touches the process-wide registry, so no other test
    // unbinds its names underneath it.
    let first = registry::open("engine-tests-a");
    first.create_table(T).unwrap();
    assert_eq!(code(registry::open("engine-tests-a").create_table(T)), ErrorCode::TableAlreadyExists);

    let removed = registry::remove("engine-tests-a").unwrap();
    assert!(registry::remove("engine-tests-a").is_none());
    assert_eq!(code(removed.create_table(T)), ErrorCode::TableAlreadyExists);
    // The name binds a fresh engine; the handle taken before removal keeps its table.
    registry::open("engine-tests-a").create_table(T).unwrap();
    assert_eq!(code(first.create_table(T)), ErrorCode::TableAlreadyExists);

    let second = registry::open("engine-tests-b");
    second.create_table(T).unwrap();
    registry::clear();
    assert!(registry::remove("engine-tests-a").is_none());
    registry::open("engine-tests-b").create_table(T).unwrap();
    assert_eq!(code(second.create_table(T)), ErrorCode::TableAlreadyExists);
}

/// A checked operation runs as the same operation through `execute`: same outcomes, same
/// errors for everything the entity check does not cover (ETag syntax, missing table, key
/// conflicts), and the entity check refuses with the violation `execute` reports.
#[test]
fn checked_operations_run_like_unchecked_ones_minus_the_repeated_check() {
    use table_core::{CheckedOperation, ETag};
    let (checked, unchecked) = (engine(), engine());
    let ops = [
        Operation::Insert(Entity::new("p", "r").with("N", 1i32)),
        Operation::Insert(Entity::new("p", "r").with("N", 2i32)),
        Operation::Replace { entity: Entity::new("p", "r"), if_match: IfMatch::ETag(ETag::new("no quotes")) },
        Operation::Merge { entity: Entity::new("p", "missing"), if_match: IfMatch::Any },
        Operation::Delete { key: EntityKey::new("p", "r"), if_match: IfMatch::Any },
    ];
    for op in ops {
        let a = checked.execute_checked(T, &CheckedOperation::new(op.clone()).unwrap());
        let b = unchecked.execute(T, &op);
        assert_eq!(a.is_ok(), b.is_ok(), "{op:?}");
        if let (Err(a), Err(b)) = (&a, &b) {
            assert_eq!((a.kind(), a.code(), a.to_string()), (b.kind(), b.code(), b.to_string()), "{op:?}");
        }
    }
    let missing = checked.execute_checked(
        "Missing",
        &CheckedOperation::new(Operation::Insert(Entity::new("p", "r"))).unwrap(),
    );
    assert_eq!(code(missing), ErrorCode::TableNotFound);

    let invalid = Operation::Insert(Entity::new("p/", "r"));
    let violation = CheckedOperation::new(invalid.clone()).unwrap_err();
    let err = unchecked.execute(T, &invalid).unwrap_err();
    assert_eq!(err.violation(), Some(&violation));
}

#[test]
fn a_table_handle_reads_what_its_name_reads_through_deletes_and_re_creations() {
    let e = Engine::new();
    // In another case than the table's: names are case-insensitive.
    let handle = TableHandle::new("PEOPLE".into());
    let keys = CheckedKeys::new("p", "r").unwrap();
    let by_handle =
        |e: &Engine| e.get_selected_in(&handle, keys, None, Decoder::ENTITY).map(|row| row.properties);
    let by_name =
        |e: &Engine| e.get_selected_as("PEOPLE", keys, None, Decoder::ENTITY).map(|row| row.properties);
    let same = |e: &Engine, what: &str| match (by_handle(e), by_name(e)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
        (Err(a), Err(b)) => assert_eq!((a.code(), a.to_string()), (b.code(), b.to_string()), "{what}"),
        (a, b) => panic!("{what}: by handle {a:?}, by name {b:?}"),
    };
    same(&e, "before the table exists");
    assert_eq!(by_handle(&e).unwrap_err().code(), Some(&ErrorCode::TableNotFound));
    e.create_table(T).unwrap();
    same(&e, "before the entity exists");
    e.insert(T, Entity::new("p", "r").with("n", 1)).unwrap();
    same(&e, "the first table");
    e.delete_table(T).unwrap();
    same(&e, "once deleted");
    assert_eq!(by_handle(&e).unwrap_err().code(), Some(&ErrorCode::TableNotFound));
    // Re-created under the live handle: its reads go to the new table.
    e.create_table(T).unwrap();
    same(&e, "re-created, empty");
    e.insert(T, Entity::new("p", "r").with("n", 2)).unwrap();
    same(&e, "re-created");
    assert_eq!(by_handle(&e).unwrap().get("n"), Some(&Value::Int32(2)));
    // Another engine's table of the same name is not the one a handle found (a live one).
    let found = TableHandle::new(T.into());
    let read = |e: &Engine| e.get_selected_in(&found, keys, None, Decoder::ENTITY).unwrap().properties;
    assert_eq!(read(&e).get("n"), Some(&Value::Int32(2)));
    let other = engine();
    other.insert(T, Entity::new("p", "r").with("n", 3)).unwrap();
    assert_eq!(read(&other).get("n"), Some(&Value::Int32(3)));
}

#[test]
fn a_typed_value_whose_properties_change_while_it_is_written_stores_nothing() {
    use std::cell::Cell;
    use table_core::engine::{Put, PutKind};
    use table_core::typed::{PropertyValue, TableEntity, ValueError};
    use table_core::{EdmType, Value};

    /// A value that breaks `to_value`'s contract: each call answers a longer string.
    struct Growing(Cell<usize>);

    impl PropertyValue for Growing {
        const EDM_TYPE: EdmType = EdmType::String;

        fn to_value(&self) -> Value {
            self.0.set(self.0.get() + 1);
            Value::String("x".repeat(self.0.get()))
        }

        fn from_value(value: Value) -> Result<Self, ValueError> {
            match value {
                Value::String(s) => Ok(Growing(Cell::new(s.len()))),
                other => Err(ValueError::WrongType { expected: EdmType::String, found: other.edm_type() }),
            }
        }
    }

    #[derive(table_derive::TableEntity)]
    #[table(crate = "table_core", partition_key = "p", row_key = "r")]
    struct Note {
        text: Growing,
    }

    let e = Engine::new();
    e.create_table(T).unwrap();
    let handle = TableHandle::new(T.into());
    let note = Note { text: Growing(Cell::new(0)) };
    let prepared = note.prepare_write().unwrap().expect("a derived type writes through");
    // Checked with one string, then handed to the encoder as a longer one.
    let put = Put::new(PutKind::InsertOrReplace, &note, prepared).unwrap();
    let err = e.put(&handle, &put).unwrap_err();
    assert_eq!(err.violation(), Some(&Violation::UnstableValues), "{err}");
    assert!(err.to_string().contains("nothing was stored"), "{err}");
    assert_eq!(e.get(T, "p", "r", None).unwrap_err().code(), Some(&ErrorCode::ResourceNotFound));
}

#[test]
fn a_table_handle_writes_where_its_name_writes_through_deletes_and_re_creations() {
    use table_core::engine::{Put, PutKind};
    use table_core::typed::TableEntity;

    #[derive(table_derive::TableEntity)]
    #[table(crate = "table_core", partition_key = "p", row_key = "r")]
    struct Counter {
        n: i32,
    }

    let e = Engine::new();
    // In another case than the table's: names are case-insensitive.
    let handle = TableHandle::new("PEOPLE".into());
    let counters: Vec<Counter> = (0..5).map(|n| Counter { n }).collect();
    let put = |n: usize| {
        let prepared = counters[n].prepare_write().unwrap().expect("a derived type writes through");
        Put::new(PutKind::InsertOrReplace, &counters[n], prepared).unwrap()
    };
    // The same upsert by handle, then by name: both answer alike.
    let same = |e: &Engine, n: usize, what: &str| {
        let by_handle = e.put(&handle, &put(n));
        let by_name = e.insert_or_replace("PEOPLE", counters[n].to_entity().unwrap());
        match (&by_handle, &by_name) {
            (Ok(_), Ok(_)) => {}
            (Err(a), Err(b)) => assert_eq!((a.code(), a.to_string()), (b.code(), b.to_string()), "{what}"),
            (a, b) => panic!("{what}: by handle {a:?}, by name {b:?}"),
        }
        by_handle
    };
    let stored = |e: &Engine| e.get(T, "p", "r", None).unwrap().properties;
    assert_eq!(same(&e, 0, "before the table exists").unwrap_err().code(), Some(&ErrorCode::TableNotFound));
    e.create_table(T).unwrap();
    e.put(&handle, &put(1)).unwrap();
    assert_eq!(stored(&e).get("n"), Some(&Value::Int32(1)));
    e.delete_table(T).unwrap();
    assert_eq!(same(&e, 0, "once deleted").unwrap_err().code(), Some(&ErrorCode::TableNotFound));
    // Re-created under the live handle: its writes go to the new table.
    e.create_table(T).unwrap();
    e.put(&handle, &put(2)).unwrap();
    assert_eq!(stored(&e).get("n"), Some(&Value::Int32(2)));
    same(&e, 3, "re-created").unwrap();
    // Another engine's table of the same name is not the one the handle found.
    let other = engine();
    other.put(&handle, &put(4)).unwrap();
    assert_eq!(stored(&other).get("n"), Some(&Value::Int32(4)));
    assert_eq!(stored(&e).get("n"), Some(&Value::Int32(3)), "the first engine's row is untouched");
}
