//! The engine's journal hook: every change is heard before it applies, a refused change is
//! not applied, and a snapshot taken while writes go on plus the changes heard since it began
//! rebuild the engine exactly.

// Helpers outside `#[test]` functions panic on failure too; this whole file is test code.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use table_core::engine::{Change, Engine, Journal};
use table_core::{
    Entity, EntityKey, ErrorCode, IfMatch, Metrics, Operation, QueryRequest, ServiceProperties,
    SignedIdentifier, TableQuery,
};

/// A journal that keeps what it hears, and refuses everything while `refuse` is set.
#[derive(Debug, Default)]
struct Recorder {
    changes: Mutex<Vec<Change>>,
    refuse: AtomicBool,
}

impl Journal for Recorder {
    fn record(&self, change: &Change) -> std::io::Result<()> {
        if self.refuse.load(Ordering::Relaxed) {
            return Err(std::io::Error::other("disk full"));
        }
        self.changes.lock().unwrap().push(change.clone());
        Ok(())
    }
}

impl Recorder {
    fn len(&self) -> usize {
        self.changes.lock().unwrap().len()
    }

    fn since(&self, start: usize) -> Vec<Change> {
        self.changes.lock().unwrap()[start..].to_vec()
    }
}

fn journaled() -> (Engine, Arc<Recorder>) {
    let engine = Engine::new();
    let recorder = Arc::new(Recorder::default());
    engine.set_journal(recorder.clone()).unwrap();
    (engine, recorder)
}

/// Everything a caller can read: service settings, then each table with its policies and
/// rows (timestamps and ETags included).
type State = (ServiceProperties, Vec<(String, Vec<SignedIdentifier>, Vec<Entity>)>);

fn state(engine: &Engine) -> State {
    let tables = engine.query_tables(&TableQuery::default()).unwrap().tables;
    let tables = tables
        .into_iter()
        .map(|name| {
            let rows = engine.query(&name, &QueryRequest::default()).unwrap().entities;
            let policies = engine.get_access_policies(&name).unwrap();
            (name, policies, rows)
        })
        .collect();
    (engine.get_service_properties().unwrap(), tables)
}

fn replayed(changes: &[Change]) -> Engine {
    let engine = Engine::new();
    for change in changes {
        engine.replay(change).unwrap();
    }
    engine
}

#[test]
fn a_refused_change_is_not_applied_and_says_so() {
    let (engine, recorder) = journaled();
    engine.create_table("Kept").unwrap();
    engine.insert("Kept", Entity::new("p", "r").with("A", 1)).unwrap();
    let before = state(&engine);
    recorder.refuse.store(true, Ordering::Relaxed);
    let refusals = [
        engine.create_table("Other").unwrap_err(),
        engine.delete_table("Kept").unwrap_err(),
        engine.insert("Kept", Entity::new("p", "new")).unwrap_err(),
        engine.merge("Kept", Entity::new("p", "r").with("B", 2), IfMatch::Any).unwrap_err(),
        engine.delete("Kept", &EntityKey::new("p", "r"), IfMatch::Any).unwrap_err(),
        engine
            .submit_batch(
                "Kept",
                [Operation::Insert(Entity::new("p", "b1")), Operation::Insert(Entity::new("p", "b2"))],
            )
            .unwrap_err(),
        engine.set_access_policies("Kept", &[SignedIdentifier::new("id", "r")]).unwrap_err(),
        engine
            .set_service_properties(&ServiceProperties {
                hour_metrics: Some(Metrics::enabled(true, Some(3))),
                ..Default::default()
            })
            .unwrap_err(),
    ];
    for e in refusals {
        assert_eq!(e.code(), Some(&ErrorCode::ServerBusy), "{e:?}");
        assert!(!e.may_have_applied(), "{e:?}");
        assert!(e.message().contains("not applied"), "{e:?}");
    }
    assert_eq!(state(&engine), before, "nothing of a refused change is applied");
    // A check that fails is answered as before, whatever the journal would say.
    let e = engine.insert("Kept", Entity::new("p", "r")).unwrap_err();
    assert_eq!(e.code(), Some(&ErrorCode::EntityAlreadyExists));
}

#[test]
fn a_batch_is_one_change_and_a_failing_batch_none() {
    let (engine, recorder) = journaled();
    engine.create_table("Tbl").unwrap();
    let start = recorder.len();
    let batch = [Operation::Insert(Entity::new("p", "1")), Operation::InsertOrMerge(Entity::new("p", "2"))];
    engine.submit_batch("Tbl", &batch).unwrap();
    assert_eq!(recorder.len(), start + 1);
    assert!(matches!(&recorder.since(start)[0], Change::Rows { rows, .. } if rows.len() == 2));
    let failing = [Operation::Insert(Entity::new("p", "3")), Operation::Insert(Entity::new("p", "1"))];
    assert_eq!(engine.submit_batch("Tbl", &failing).unwrap_err().batch_index(), Some(1));
    assert_eq!(recorder.len(), start + 1, "a failing batch is not heard");
}

#[test]
fn a_merge_is_heard_as_the_merged_row() {
    let (engine, recorder) = journaled();
    engine.create_table("Tbl").unwrap();
    engine.insert("Tbl", Entity::new("p", "r").with("A", 1)).unwrap();
    let outcome = engine.merge("Tbl", Entity::new("p", "r").with("B", 2), IfMatch::Any).unwrap();
    let last = recorder.since(recorder.len() - 1).remove(0);
    let Change::Rows { rows, .. } = last else { panic!("{last:?}") };
    let [table_core::engine::RowChange::Stored(row)] = &rows[..] else { panic!("{rows:?}") };
    assert_eq!(row.properties.len(), 2);
    assert_eq!(row.etag, outcome.etag);
    assert!(row.timestamp.is_some());
}

#[test]
fn writes_after_a_replay_are_stamped_after_every_replayed_row() {
    let (engine, recorder) = journaled();
    engine.create_table("Tbl").unwrap();
    // A row from the future: the restored clock must pass it.
    let future = chrono::Utc::now() + chrono::Duration::days(365);
    let mut row = Entity::new("p", "future");
    row.timestamp = Some(future);
    row.etag = Some(table_core::ETag::from_timestamp(future));
    let rows = vec![table_core::engine::RowChange::Stored(row)];
    let mut changes = recorder.since(0);
    changes.push(Change::Rows { table: "Tbl".to_owned(), rows });
    let restored = replayed(&changes);
    let written = restored.insert("Tbl", Entity::new("p", "next")).unwrap();
    let stamped = restored.get("Tbl", "p", "next", None).unwrap().timestamp.unwrap();
    assert!(stamped > future, "{stamped} after {future}");
    assert_ne!(written.etag, Some(table_core::ETag::from_timestamp(future)));
}

/// One step of a random history over two tables, a few keys, policies and settings.
#[derive(Debug, Clone)]
enum Step {
    CreateTable(usize),
    DeleteTable(usize),
    Write(usize, usize, u8, i32),
    /// A batch over these rows; `fail` makes its last operation an insert of a stored key.
    Batch(usize, Vec<(usize, u8)>, bool),
    Policies(usize, u8),
    Properties(u32),
}

const TABLES: [&str; 2] = ["Alpha", "beta"];

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        1 => (0..2usize).prop_map(Step::CreateTable),
        1 => (0..2usize).prop_map(Step::DeleteTable),
        4 => (0..2usize, 0..4usize, 0..6u8, any::<i32>()).prop_map(|(t, k, kind, v)| Step::Write(t, k, kind, v)),
        2 => (0..2usize, proptest::collection::vec((0..4usize, 0..6u8), 1..4), any::<bool>())
            .prop_map(|(t, ops, fail)| Step::Batch(t, ops, fail)),
        1 => (0..2usize, 0..3u8).prop_map(|(t, n)| Step::Policies(t, n)),
        1 => (1..30u32).prop_map(Step::Properties),
    ]
}

fn operation(engine: &Engine, table: &str, key: usize, kind: u8, value: i32) -> Operation {
    let row = format!("r{key}");
    let entity = Entity::new("p", row.as_str()).with(format!("P{}", value.rem_euclid(3)), value);
    // Conditional writes name the stored version when there is one, so most of them apply.
    let if_match = match engine.get(table, "p", &row, None) {
        Ok(stored) if value % 2 == 0 => IfMatch::ETag(stored.etag.unwrap()),
        _ => IfMatch::Any,
    };
    match kind {
        0 => Operation::Insert(entity),
        1 => Operation::Replace { entity, if_match },
        2 => Operation::Merge { entity, if_match },
        3 => Operation::InsertOrReplace(entity),
        4 => Operation::InsertOrMerge(entity),
        _ => Operation::Delete { key: EntityKey::new("p", row.as_str()), if_match },
    }
}

/// Runs `step`; its answer does not matter (many steps fail, and must change nothing).
fn run(engine: &Engine, step: &Step) {
    let _answer = match step {
        Step::CreateTable(t) => engine.create_table(TABLES[*t]),
        Step::DeleteTable(t) => engine.delete_table(TABLES[*t]),
        Step::Write(t, key, kind, value) => {
            engine.execute(TABLES[*t], operation(engine, TABLES[*t], *key, *kind, *value)).map(drop)
        }
        Step::Batch(t, ops, fail) => {
            let mut seen = std::collections::BTreeSet::new();
            let mut batch: Vec<Operation> = ops
                .iter()
                .filter(|(key, _)| seen.insert(*key))
                .map(|(key, kind)| operation(engine, TABLES[*t], *key, *kind, *key as i32))
                .collect();
            if *fail {
                let stored = (0..4).find(|key| {
                    !seen.contains(key) && engine.get(TABLES[*t], "p", &format!("r{key}"), None).is_ok()
                });
                if let Some(key) = stored {
                    batch.push(Operation::Insert(Entity::new("p", format!("r{key}"))));
                }
            }
            engine.submit_batch(TABLES[*t], batch).map(drop)
        }
        Step::Policies(t, n) => {
            let policies: Vec<SignedIdentifier> =
                (0..*n).map(|i| SignedIdentifier::new(format!("id{i}"), "ra")).collect();
            engine.set_access_policies(TABLES[*t], &policies)
        }
        Step::Properties(days) => engine.set_service_properties(&ServiceProperties {
            minute_metrics: Some(Metrics::enabled(false, Some(*days))),
            ..Default::default()
        }),
    };
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A random history, with a snapshot taken part way through while later steps run between
    /// its tables: the whole journal replayed, and the snapshot plus the journal from where it
    /// began, both rebuild the live engine's exact state.
    #[test]
    fn a_snapshot_and_the_journal_since_it_began_rebuild_the_engine(
        before in proptest::collection::vec(step(), 0..30),
        during in proptest::collection::vec(step(), 0..12),
        after in proptest::collection::vec(step(), 0..20),
    ) {
        let (engine, recorder) = journaled();
        for step in &before {
            run(&engine, step);
        }
        let start = recorder.len();
        let mut snapshot = Vec::new();
        let mut during = during.iter();
        engine
            .snapshot(|change| {
                snapshot.push(change);
                // Writes go on between the snapshot's pieces, as they do on a server.
                if let Some(step) = during.next() {
                    run(&engine, step);
                }
                Ok::<(), ()>(())
            })
            .unwrap();
        for step in during.chain(&after) {
            run(&engine, step);
        }
        let live = state(&engine);
        prop_assert_eq!(&state(&replayed(&recorder.since(0))), &live, "the whole journal");
        let mut fuzzy = snapshot;
        fuzzy.extend(recorder.since(start));
        prop_assert_eq!(&state(&replayed(&fuzzy)), &live, "the snapshot and the journal since it began");
    }
}
