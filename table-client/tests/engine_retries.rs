//! The client's retry policy on the embedded engine: faults injected into the engine
//! ([`Engine::faults`]) are retried, marked "may have applied" and settled exactly as the HTTP
//! backend's failures are, so retry handling can be tested offline.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::num::NonZeroU64;
use std::time::Duration;

use table_client::engine::{Engine, FaultSpec};
use table_client::{
    Entity, EntityKey, ErrorCode, ErrorKind, IfMatch, RetryPolicy, TableClient, TableEntity,
    TableServiceClient,
};

const MAX_RETRIES: u32 = 3;

/// A table on a fresh engine, served by a client with `policy`.
async fn table_with(policy: RetryPolicy) -> (Engine, TableClient) {
    let engine = Engine::new();
    let service = TableServiceClient::builder().engine(engine.clone()).retry(policy).build().unwrap();
    let table = service.create_table("retried").await.unwrap();
    (engine, table)
}

/// Retries with pauses of at most a millisecond.
fn fast_retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(MAX_RETRIES)
        .initial_backoff(Duration::from_millis(1))
        .max_backoff(Duration::from_millis(1))
}

fn entity(name: &str) -> Entity {
    let mut e = Entity::new("p", "r");
    e.properties.insert("Name".into(), name.into());
    e
}

fn next_call() -> NonZeroU64 {
    NonZeroU64::MIN
}

/// A lost answer: the engine applies the request, the client times out.
fn lost() -> FaultSpec {
    FaultSpec::timeout().after_apply()
}

#[tokio::test]
async fn a_throttled_read_is_retried_and_succeeds() {
    let (engine, table) = table_with(fast_retries()).await;
    table.insert(entity("ann")).await.unwrap();
    engine.faults().fail_call(next_call(), FaultSpec::server_busy());
    let before = engine.faults().calls();
    assert_eq!(table.get("p", "r").await.unwrap().properties, entity("ann").properties);
    assert_eq!(engine.faults().calls() - before, 2, "one throttled attempt, one retry");
}

#[tokio::test]
async fn faults_beyond_the_budget_surface_after_every_retry() {
    let (engine, table) = table_with(fast_retries()).await;
    engine.faults().fail_every(NonZeroU64::MIN, FaultSpec::server_busy());
    let before = engine.faults().calls();
    let err = table.get("p", "r").await.unwrap_err();
    engine.faults().clear();
    assert_eq!(err.code(), Some(&ErrorCode::ServerBusy), "{err:?}");
    assert!(!err.may_have_applied(), "{err:?}");
    assert_eq!(engine.faults().calls() - before, u64::from(MAX_RETRIES) + 1);
}

#[tokio::test]
async fn an_insert_whose_answer_was_lost_is_not_replayed() {
    let (engine, table) = table_with(fast_retries()).await;
    engine.faults().fail_call(next_call(), lost());
    let before = engine.faults().calls();
    let err = table.insert(entity("ann")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err:?}");
    assert!(err.may_have_applied(), "{err:?}");
    assert_eq!(engine.faults().calls() - before, 1, "an insert is never replayed after a lost answer");
    // It did apply: the marker told the truth.
    assert_eq!(table.get("p", "r").await.unwrap().properties, entity("ann").properties);
}

#[tokio::test]
async fn a_delete_whose_retry_finds_nothing_succeeds() {
    let (engine, table) = table_with(fast_retries()).await;
    let etag = table.insert(entity("ann")).await.unwrap();
    engine.faults().fail_call(next_call(), lost());
    table.delete("p", "r", IfMatch::ETag(etag)).await.unwrap();
    assert!(table.get_if_exists("p", "r").await.unwrap().is_none());
}

#[tokio::test]
async fn a_conditional_replace_whose_answer_was_lost_is_settled_by_reading_back() {
    let (engine, table) = table_with(fast_retries()).await;
    let etag = table.insert(entity("ann")).await.unwrap();
    engine.faults().fail_call(next_call(), lost());
    // The lost attempt applied; the retry's If-Match fails (412) and the read-back shows this
    // write, so the replace succeeds with the stored ETag.
    let new_etag = table.replace(entity("bob"), IfMatch::ETag(etag.clone())).await.unwrap();
    let stored = table.get("p", "r").await.unwrap();
    assert_eq!(stored.properties, entity("bob").properties);
    assert_eq!(stored.etag, Some(new_etag.clone()));
    assert_ne!(new_etag, etag);
}

#[tokio::test]
async fn a_conditional_replace_overtaken_by_another_writer_is_ambiguous() {
    // A pause long enough that the other writer surely runs before the retry.
    let slow =
        fast_retries().initial_backoff(Duration::from_millis(50)).max_backoff(Duration::from_millis(50));
    let (engine, table) = table_with(slow).await;
    let etag = table.insert(entity("ann")).await.unwrap();
    // The answer of the replace is lost, and another writer changes the entity before the
    // retry: the retry's 412 cannot be told from a condition that failed first.
    engine.faults().fail_call(next_call(), lost());
    let other = TableServiceClient::embedded(engine.clone()).table("retried");
    let replace = table.replace(entity("bob"), IfMatch::ETag(etag));
    let (result, ()) = tokio::join!(replace, async {
        // Runs while the replace pauses before its retry.
        other.insert_or_replace(entity("cy")).await.unwrap();
    });
    let err = result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Ambiguous, "{err:?}");
}

#[tokio::test]
async fn without_retries_every_fault_surfaces_at_once() {
    let (engine, table) = table_with(RetryPolicy::none()).await;
    table.insert(entity("ann")).await.unwrap();
    engine.faults().fail_call(next_call(), FaultSpec::server_busy());
    let before = engine.faults().calls();
    let err = table.get("p", "r").await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::ServerBusy), "{err:?}");
    assert_eq!(engine.faults().calls() - before, 1);
    // A write's ambiguous fault carries the marker, without retries too.
    engine.faults().fail_call(next_call(), FaultSpec::service(ErrorCode::InternalError));
    let err = table.insert_or_replace(entity("bob")).await.unwrap_err();
    assert!(err.may_have_applied(), "{err:?}");
}

#[tokio::test]
async fn the_default_client_over_an_engine_retries() {
    let engine = Engine::new();
    let table = TableServiceClient::embedded(engine.clone()).create_table("retried").await.unwrap();
    engine.faults().fail_call(next_call(), FaultSpec::server_busy());
    table.insert(entity("ann")).await.unwrap();
}

/// A typed row: `Name` under the keys `part` and `id`.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(rename_all = "PascalCase", partition_key = "{part}", row_key = "{id}")]
struct Person {
    #[table(key_only)]
    part: String,
    #[table(key_only)]
    id: String,
    name: String,
}

#[tokio::test]
async fn a_typed_point_read_is_retried_and_invalid_input_never_reaches_the_engine() {
    let (engine, table) = table_with(fast_retries()).await;
    let people = table.typed::<Person>();
    let ann = Person { part: "p".into(), id: "r".into(), name: "ann".into() };
    people.insert(&ann).await.unwrap();
    let key = Person::key("p", "r").unwrap();
    engine.faults().fail_call(next_call(), FaultSpec::server_busy());
    let before = engine.faults().calls();
    assert_eq!(people.get(&key).await.unwrap(), ann);
    assert_eq!(engine.faults().calls() - before, 2, "one throttled attempt, one retry");

    // Refused before any request, on every request of the handle, not only the first.
    let service = TableServiceClient::builder().engine(engine.clone()).build().unwrap();
    let misnamed = service.table("no-dashes").typed::<Person>();
    let before = engine.faults().calls();
    for _ in 0..2 {
        assert_eq!(misnamed.get(&key).await.unwrap_err().kind(), ErrorKind::InvalidInput);
        assert_eq!(misnamed.insert(&ann).await.unwrap_err().kind(), ErrorKind::InvalidInput);
        let bad_key = people.get(&EntityKey::new("p", "a/b")).await.unwrap_err();
        assert_eq!(bad_key.kind(), ErrorKind::InvalidInput);
    }
    assert_eq!(engine.faults().calls(), before, "nothing invalid reaches the engine");
}

#[tokio::test]
async fn typed_whole_writes_are_retried_and_settled_as_untyped_ones() {
    let (engine, table) = table_with(fast_retries()).await;
    let people = table.typed::<Person>();
    let person = |name: &str| Person { part: "p".into(), id: "r".into(), name: name.into() };
    // An insert's lost answer is not replayed.
    engine.faults().fail_call(next_call(), lost());
    let err = people.insert(&person("ann")).await.unwrap_err();
    assert!(err.may_have_applied(), "{err:?}");
    assert_eq!(people.get(&Person::key("p", "r").unwrap()).await.unwrap(), person("ann"), "it applied");
    let etag = table.get("p", "r").await.unwrap().etag.unwrap();

    // A replace's lost answer: the retry's If-Match fails, and the read-back shows the write.
    engine.faults().fail_call(next_call(), lost());
    let new_etag = people.replace(&person("bob"), IfMatch::ETag(etag.clone())).await.unwrap();
    let stored = table.get("p", "r").await.unwrap();
    assert_eq!(stored.properties, entity("bob").properties);
    assert_eq!(stored.etag, Some(new_etag.clone()));
    assert_ne!(new_etag, etag);

    // An upsert is replayed after a throttled attempt.
    engine.faults().fail_call(next_call(), FaultSpec::server_busy());
    let before = engine.faults().calls();
    people.insert_or_replace(&person("cy")).await.unwrap();
    assert_eq!(engine.faults().calls() - before, 2, "one throttled attempt, one retry");
    assert_eq!(table.get("p", "r").await.unwrap().properties, entity("cy").properties);
}

#[tokio::test]
async fn a_typed_write_the_entity_rules_refuse_fails_as_the_untyped_write_before_the_engine() {
    let (engine, table) = table_with(fast_retries()).await;
    let people = table.typed::<Person>();
    let long = Person { part: "p".into(), id: "r".into(), name: "x".repeat(32_769) };
    let before = engine.faults().calls();
    let typed = people.insert(&long).await.unwrap_err();
    let untyped = table.insert(long.to_entity().unwrap()).await.unwrap_err();
    assert_eq!(typed.to_string(), untyped.to_string());
    assert_eq!(typed.violation(), untyped.violation());
    assert_eq!(typed.origin(), untyped.origin());
    let bad_etag = IfMatch::ETag(table_client::ETag::new("W/\"a\u{1}\""));
    let typed = people.replace(&long, bad_etag.clone()).await.unwrap_err();
    let untyped = table.replace(long.to_entity().unwrap(), bad_etag).await.unwrap_err();
    assert_eq!(typed.violation(), untyped.violation(), "the If-Match is checked first");
    assert_eq!(engine.faults().calls(), before, "nothing invalid reaches the engine");
}

/// Runs `call` with its first attempt failing as `first` and every later one throttled (503);
/// returns its error and the number of attempts it made.
async fn fails_from<T: std::fmt::Debug>(
    engine: &Engine,
    first: FaultSpec,
    call: impl Future<Output = table_client::Result<T>>,
) -> (table_client::Error, u64) {
    engine.faults().fail_every(NonZeroU64::MIN, FaultSpec::server_busy());
    engine.faults().fail_call(next_call(), first);
    let before = engine.faults().calls();
    let err = call.await.unwrap_err();
    engine.faults().clear();
    (err, engine.faults().calls() - before)
}

// A point call (typed, or an untyped read) makes its first attempt before any future of the
// retry loop is built; when that attempt fails, the loop takes it as its own first: it counts
// in the retry budget, and its ambiguity marks the write's final error.
#[tokio::test]
async fn a_point_calls_failed_first_attempt_counts_in_the_retry_budget_and_marks_the_write() {
    let (engine, table) = table_with(fast_retries()).await;
    let people = table.typed::<Person>();
    let ann = Person { part: "p".into(), id: "r".into(), name: "ann".into() };
    people.insert(&ann).await.unwrap();
    let every_attempt = u64::from(MAX_RETRIES) + 1;
    let internal_error = || FaultSpec::service(ErrorCode::InternalError);

    // Writes sent twice with the effect of once: a 500 first (it may have applied), then 503s.
    let replace = fails_from(&engine, internal_error(), people.replace(&ann, IfMatch::Any)).await;
    let upsert = fails_from(&engine, internal_error(), people.insert_or_replace(&ann)).await;
    for (err, attempts) in [replace, upsert] {
        assert_eq!(attempts, every_attempt, "the first attempt counts: {err:?}");
        assert_eq!(err.code(), Some(&ErrorCode::ServerBusy), "{err:?}");
        assert!(err.may_have_applied(), "the first attempt's 500 marks it: {err:?}");
    }

    // An insert: after 503s alone, retried and not marked; after a first 500, ended at once.
    let bob = Person { id: "s".into(), ..ann.clone() };
    let (err, attempts) = fails_from(&engine, FaultSpec::server_busy(), people.insert(&bob)).await;
    assert_eq!(attempts, every_attempt);
    assert!(!err.may_have_applied(), "{err:?}");
    let (err, attempts) = fails_from(&engine, internal_error(), people.insert(&bob)).await;
    assert_eq!(attempts, 1, "an insert is not replayed after a 500");
    assert_eq!(err.code(), Some(&ErrorCode::InternalError), "{err:?}");
    assert!(err.may_have_applied(), "{err:?}");

    // Reads: the first attempt counts, and nothing marks them.
    let key = Person::key("p", "r").unwrap();
    let reads = [
        fails_from(&engine, internal_error(), people.get(&key)).await,
        fails_from(&engine, internal_error(), people.get_if_exists(&key)).await,
        fails_from(&engine, internal_error(), table.get("p", "r")).await,
        fails_from(&engine, internal_error(), table.get_if_exists("p", "r")).await,
    ];
    for (err, attempts) in reads {
        assert_eq!(attempts, every_attempt, "the first attempt counts: {err:?}");
        assert_eq!(err.code(), Some(&ErrorCode::ServerBusy), "{err:?}");
        assert!(!err.may_have_applied(), "{err:?}");
    }
}
