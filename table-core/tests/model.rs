//! Model-based test of the embedded engine: random sequences of single writes, batches, point
//! reads and paged queries (with random writes between pages) run against the engine and
//! against a trivially correct reference (a `Vec` of entities, scanned linearly and sorted
//! with `compare_ordinal`). Every result is compared: entities with their properties and
//! ETags, continuations' presence, errors by code and batch index.

// Helpers outside `#[test]` functions panic on failure too; this whole file is test code.
#![allow(clippy::unwrap_used)]

use std::cmp::Ordering;
use std::collections::HashSet;
use std::num::NonZeroUsize;

use proptest::prelude::*;
use table_core::engine::{Engine, EngineOptions};
use table_core::{
    CompareOp, ETag, Entity, EntityKey, ErrorCode, Filter, IfMatch, Operation, QueryRequest, Value,
    compare_ordinal, validate_operation,
};

const T: &str = "Model";
const MISSING: &str = "Absent";

// ------------------------------------------------------------------ generated steps

#[derive(Debug, Clone)]
enum Cond {
    Any,
    Current,
    Stale(usize),
    Malformed,
}

#[derive(Debug, Clone)]
enum Write {
    Insert(Entity),
    Replace(Entity, Cond),
    Merge(Entity, Cond),
    InsertOrReplace(Entity),
    InsertOrMerge(Entity),
    Delete(EntityKey, Cond),
}

#[derive(Debug, Clone)]
enum Step {
    Single {
        missing_table: bool,
        write: Write,
    },
    Batch(Vec<Write>),
    Get {
        key: EntityKey,
        select: Option<Vec<String>>,
    },
    Query {
        filter: Option<Filter>,
        top: Option<u32>,
        select: Option<Vec<String>>,
        between: Vec<Option<Write>>,
    },
}

fn pk() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "c", "\u{ff21}", "\u{1f600}", ""]).prop_map(String::from),
        1 => Just("x/y".to_owned()), // invalid key character
    ]
}

fn rk() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["", "0", "1", "10", "2", "x", "\u{e000}", "\u{10000}"]).prop_map(String::from)
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0..4i32).prop_map(Value::Int32),
        prop::sample::select(vec!["x", "y", ""]).prop_map(Value::from),
        any::<bool>().prop_map(Value::Boolean),
    ]
}

fn entity() -> impl Strategy<Value = Entity> {
    (
        pk(),
        rk(),
        prop::collection::btree_map(
            prop::sample::select(vec!["n", "s", "f"]).prop_map(String::from),
            value(),
            0..3,
        ),
    )
        .prop_map(|(pk, rk, properties)| Entity { properties, ..Entity::new(pk, rk) })
}

fn cond() -> impl Strategy<Value = Cond> {
    prop_oneof![
        3 => Just(Cond::Any),
        4 => Just(Cond::Current),
        2 => any::<usize>().prop_map(Cond::Stale),
        1 => Just(Cond::Malformed),
    ]
}

fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        3 => entity().prop_map(Write::Insert),
        1 => (entity(), cond()).prop_map(|(e, c)| Write::Replace(e, c)),
        1 => (entity(), cond()).prop_map(|(e, c)| Write::Merge(e, c)),
        1 => entity().prop_map(Write::InsertOrReplace),
        1 => entity().prop_map(Write::InsertOrMerge),
        2 => (pk(), rk(), cond()).prop_map(|(p, r, c)| Write::Delete(EntityKey::new(p, r), c)),
    ]
}

/// Batches mostly within partition `b`, sometimes mixed or with a repeated row.
fn batch() -> impl Strategy<Value = Vec<Write>> {
    prop::collection::vec((write(), prop::bool::weighted(0.9)), 1..6).prop_map(|ws| {
        ws.into_iter()
            .map(|(mut w, same_partition)| {
                if same_partition {
                    set_partition(&mut w, "b");
                }
                w
            })
            .collect()
    })
}

fn set_partition(w: &mut Write, pk: &str) {
    match w {
        Write::Insert(e)
        | Write::Replace(e, _)
        | Write::Merge(e, _)
        | Write::InsertOrReplace(e)
        | Write::InsertOrMerge(e) => e.partition_key = pk.to_owned(),
        Write::Delete(k, _) => k.partition_key = pk.to_owned(),
    }
}

fn key_literal() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["", "0", "1", "2", "b", "c", "x", "\u{e000}", "\u{ff21}", "\u{10000}"])
        .prop_map(String::from)
}

fn op() -> impl Strategy<Value = CompareOp> {
    prop::sample::select(vec![
        CompareOp::Eq,
        CompareOp::Ne,
        CompareOp::Gt,
        CompareOp::Ge,
        CompareOp::Lt,
        CompareOp::Le,
    ])
}

fn leaf() -> impl Strategy<Value = Filter> {
    prop_oneof![
        (op(), key_literal()).prop_map(|(op, v)| Filter::compare("PartitionKey", op, v)),
        (op(), key_literal()).prop_map(|(op, v)| Filter::compare("RowKey", op, v)),
        (op(), 0..4i32).prop_map(|(op, v)| Filter::compare("n", op, v)),
        (op(), 0..2i32).prop_map(|(op, v)| Filter::compare("PartitionKey", op, v)), // type mismatch
        Just(Filter::property("f")),
    ]
}

fn filter() -> impl Strategy<Value = Filter> {
    leaf().prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            3 => (inner.clone(), inner.clone()).prop_map(|(a, b)| Filter::And(Box::new(a), Box::new(b))),
            1 => (inner.clone(), inner.clone()).prop_map(|(a, b)| Filter::Or(Box::new(a), Box::new(b))),
            1 => inner.prop_map(|a| Filter::Not(Box::new(a))),
        ]
    })
}

/// Mostly property names, sometimes one that is not (a comma would select two properties).
fn select() -> impl Strategy<Value = Option<Vec<String>>> {
    let entry = prop_oneof![
        12 => prop::sample::select(vec!["n", "s", "zz", "RowKey"]).prop_map(String::from),
        1 => prop::sample::select(vec!["n,s", "", "odata.etag"]).prop_map(String::from),
    ];
    prop::option::weighted(0.3, prop::collection::vec(entry, 0..3))
}

/// The code the engine answers for a `$select` list: none when every entry is a name (of the
/// generated entries, the empty one and those with `,` or `.` are not).
fn select_error(select: Option<&[String]>) -> Option<ErrorCode> {
    let bad = |n: &String| n.is_empty() || n.contains([',', '.']);
    select.is_some_and(|names| names.iter().any(bad)).then_some(ErrorCode::InvalidInput)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (prop::bool::weighted(0.05), write()).prop_map(|(missing_table, write)| Step::Single { missing_table, write }),
        2 => batch().prop_map(Step::Batch),
        2 => (pk(), rk(), select()).prop_map(|(p, r, select)| Step::Get { key: EntityKey::new(p, r), select }),
        3 => (
            prop::option::weighted(0.7, filter()),
            prop::option::weighted(0.7, prop_oneof![1..4u32, Just(0u32), Just(1001u32)]),
            select(),
            prop::collection::vec(prop::option::weighted(0.5, write()), 0..4),
        )
            .prop_map(|(filter, top, select, between)| Step::Query { filter, top, select, between }),
    ]
}

// ------------------------------------------------------------------ the reference model

#[derive(Debug, Default)]
struct Model {
    rows: Vec<Entity>,
    etags: Vec<ETag>,
    seen: HashSet<ETag>,
}

fn key_order(a: (&str, &str), b: (&str, &str)) -> Ordering {
    compare_ordinal(a.0, b.0).then_with(|| compare_ordinal(a.1, b.1))
}

fn is_well_formed(etag: &ETag) -> bool {
    let t = etag.as_str().strip_prefix("W/").unwrap_or(etag.as_str());
    t.len() >= 2 && t.starts_with('"') && t.ends_with('"')
}

impl Model {
    fn find(&self, pk: &str, rk: &str) -> Option<&Entity> {
        self.rows.iter().find(|e| e.partition_key == pk && e.row_key == rk)
    }

    fn if_match(&self, cond: &Cond, pk: &str, rk: &str) -> IfMatch {
        match cond {
            Cond::Any => IfMatch::Any,
            Cond::Current => match self.find(pk, rk).and_then(|e| e.etag.clone()) {
                Some(etag) => IfMatch::ETag(etag),
                None => IfMatch::ETag(ETag::new("W/\"never-issued\"")),
            },
            Cond::Stale(i) if !self.etags.is_empty() => {
                IfMatch::ETag(self.etags[i % self.etags.len()].clone())
            }
            Cond::Stale(_) => IfMatch::ETag(ETag::new("W/\"never-issued\"")),
            Cond::Malformed => IfMatch::ETag(ETag::new("malformed")),
        }
    }

    fn operation(&self, w: &Write) -> Operation {
        match w.clone() {
            Write::Insert(e) => Operation::Insert(e),
            Write::Replace(e, c) => {
                Operation::Replace { if_match: self.if_match(&c, &e.partition_key, &e.row_key), entity: e }
            }
            Write::Merge(e, c) => {
                Operation::Merge { if_match: self.if_match(&c, &e.partition_key, &e.row_key), entity: e }
            }
            Write::InsertOrReplace(e) => Operation::InsertOrReplace(e),
            Write::InsertOrMerge(e) => Operation::InsertOrMerge(e),
            Write::Delete(k, c) => {
                Operation::Delete { if_match: self.if_match(&c, &k.partition_key, &k.row_key), key: k }
            }
        }
    }

    /// Request-level checks: entity rules, then the `If-Match` syntax.
    fn check_request(op: &Operation) -> Result<(), ErrorCode> {
        validate_operation(op).map_err(|v| v.code())?;
        match op {
            Operation::Replace { if_match: IfMatch::ETag(t), .. }
            | Operation::Merge { if_match: IfMatch::ETag(t), .. }
            | Operation::Delete { if_match: IfMatch::ETag(t), .. }
                if !is_well_formed(t) =>
            {
                Err(ErrorCode::InvalidInput)
            }
            _ => Ok(()),
        }
    }

    /// Checks against the stored rows.
    fn check_row(&self, op: &Operation) -> Result<(), ErrorCode> {
        let current = self.find(op.partition_key(), op.row_key());
        match (op, current) {
            (Operation::Insert(_), Some(_)) => Err(ErrorCode::EntityAlreadyExists),
            (Operation::Replace { .. } | Operation::Merge { .. } | Operation::Delete { .. }, None) => {
                Err(ErrorCode::ResourceNotFound)
            }
            (
                Operation::Replace { if_match: IfMatch::ETag(t), .. }
                | Operation::Merge { if_match: IfMatch::ETag(t), .. }
                | Operation::Delete { if_match: IfMatch::ETag(t), .. },
                Some(row),
            ) if row.etag.as_ref() != Some(t) => Err(ErrorCode::UpdateConditionNotSatisfied),
            _ => Ok(()),
        }
    }

    /// Applies a checked operation with the ETag the engine issued; asserts the ETag is new and
    /// later than every earlier one.
    fn apply(&mut self, op: Operation, etag: Option<ETag>) {
        let (pk, rk) = (op.partition_key().to_owned(), op.row_key().to_owned());
        let old = self
            .rows
            .iter()
            .position(|e| e.partition_key == pk && e.row_key == rk)
            .map(|i| self.rows.remove(i));
        let (mut entity, merge) = match op {
            Operation::Delete { .. } => {
                assert_eq!(etag, None, "a delete reports no ETag");
                return;
            }
            Operation::Merge { entity, .. } | Operation::InsertOrMerge(entity) => (entity, true),
            Operation::Insert(entity)
            | Operation::Replace { entity, .. }
            | Operation::InsertOrReplace(entity) => (entity, false),
        };
        if let (true, Some(old)) = (merge, old) {
            let mut properties = old.properties;
            properties.extend(entity.properties);
            entity.properties = properties;
        }
        let etag = etag.expect("writes report an ETag");
        assert!(self.seen.insert(etag.clone()), "ETag {etag} issued twice");
        let ts = etag.timestamp().expect("engine ETags carry their timestamp");
        if let Some(last) = self.etags.last() {
            assert!(ts > last.timestamp().unwrap(), "timestamps increase strictly");
        }
        self.etags.push(etag.clone());
        entity.etag = Some(etag);
        entity.timestamp = Some(ts);
        self.rows.push(entity);
    }

    /// Matching rows at or after `cursor`, in key order.
    fn matching(&self, filter: Option<&Filter>, cursor: Option<&(String, String)>) -> Vec<&Entity> {
        let mut rows: Vec<&Entity> = self
            .rows
            .iter()
            .filter(|e| filter.is_none_or(|f| f.matches(e)))
            .filter(|e| {
                cursor
                    .is_none_or(|(p, r)| key_order((&e.partition_key, &e.row_key), (p, r)) != Ordering::Less)
            })
            .collect();
        rows.sort_by(|a, b| key_order((&a.partition_key, &a.row_key), (&b.partition_key, &b.row_key)));
        rows
    }
}

fn project(e: &Entity, select: Option<&[String]>) -> Entity {
    let mut e = e.clone();
    if let Some(names) = select {
        e.properties.retain(|n, _| names.contains(n));
    }
    e
}

fn codes<T>(r: &table_core::Result<T>) -> Option<(ErrorCode, Option<usize>)> {
    r.as_ref().err().map(|e| (e.code().cloned().unwrap(), e.batch_index()))
}

// ------------------------------------------------------------------ running a step on both

fn run_write(engine: &Engine, model: &mut Model, table: &str, w: &Write) {
    let op = model.operation(w);
    let expected = Model::check_request(&op)
        .and_then(|()| if table == T { Ok(()) } else { Err(ErrorCode::TableNotFound) })
        .and_then(|()| model.check_row(&op));
    let got = engine.execute(table, op.clone());
    assert_eq!(codes(&got), expected.clone().err().map(|c| (c, None)), "{op:?}");
    if let Ok(outcome) = got {
        model.apply(op, outcome.etag);
    }
}

fn run_batch(engine: &Engine, model: &mut Model, writes: &[Write]) {
    let ops: Vec<Operation> = writes.iter().map(|w| model.operation(w)).collect();
    let expected = (|| {
        let mut rows = HashSet::new();
        for (i, op) in ops.iter().enumerate() {
            validate_operation(op).map_err(|v| (v.code(), Some(i)))?;
            if op.partition_key() != ops[0].partition_key() {
                return Err((ErrorCode::CommandsInBatchActOnDifferentPartitions, Some(i)));
            }
            if !rows.insert(op.row_key()) {
                return Err((ErrorCode::InvalidDuplicateRow, Some(i)));
            }
        }
        for (i, op) in ops.iter().enumerate() {
            Model::check_request(op).map_err(|c| (c, Some(i)))?;
        }
        for (i, op) in ops.iter().enumerate() {
            model.check_row(op).map_err(|c| (c, Some(i)))?;
        }
        Ok(())
    })();
    let got = engine.submit_batch(T, ops.clone());
    assert_eq!(codes(&got), expected.clone().err(), "{ops:?}");
    if let Ok(outcomes) = got {
        assert_eq!(outcomes.len(), ops.len());
        for (op, outcome) in ops.into_iter().zip(outcomes) {
            model.apply(op, outcome.etag);
        }
    }
}

fn run_get(engine: &Engine, model: &Model, key: &EntityKey, select: Option<&[String]>) {
    let got = engine.get(T, &key.partition_key, &key.row_key, select);
    let expected = validate_operation(&Operation::Delete { key: key.clone(), if_match: IfMatch::Any })
        .map_err(|v| v.code())
        .and_then(|()| select_error(select).map_or(Ok(()), Err))
        .and_then(|()| model.find(&key.partition_key, &key.row_key).ok_or(ErrorCode::ResourceNotFound))
        .map(|e| project(e, select));
    match (got, expected) {
        (Ok(g), Ok(e)) => assert_eq!(g, e),
        (Err(g), Err(e)) => assert_eq!(g.code(), Some(&e)),
        (g, e) => panic!("get {key}: engine {g:?}, model {e:?}"),
    }
}

fn run_query(
    engine: &Engine,
    model: &mut Model,
    page_size: usize,
    filter: &Option<Filter>,
    top: Option<u32>,
    select: &Option<Vec<String>>,
    between: &[Option<Write>],
) {
    let mut request =
        QueryRequest { filter: filter.clone(), select: select.clone(), top, continuation: None };
    if top.is_some_and(|t| !(1..=1000).contains(&t)) {
        let err = engine.query(T, &request).unwrap_err();
        assert_eq!(err.code(), Some(&ErrorCode::InvalidInput));
        return;
    }
    if let Some(code) = select_error(select.as_deref()) {
        let err = engine.query(T, &request).unwrap_err();
        assert_eq!(err.code(), Some(&code));
        return;
    }
    let size = page_size.min(top.map_or(usize::MAX, |t| t as usize));
    let mut cursor: Option<(String, String)> = None;
    let mut writes = between.iter();
    loop {
        let page = engine.query(T, &request).unwrap();
        let matching = model.matching(filter.as_ref(), cursor.as_ref());
        let expected: Vec<Entity> =
            matching.iter().take(size).map(|e| project(e, select.as_deref())).collect();
        assert_eq!(page.entities, expected, "page after {cursor:?}");
        let next = matching.get(size).map(|e| (e.partition_key.clone(), e.row_key.clone()));
        assert_eq!(page.continuation.is_some(), next.is_some(), "continuation after {cursor:?}");
        let Some(token) = page.continuation else {
            return;
        };
        cursor = next;
        request.continuation = Some(token);
        if let Some(Some(w)) = writes.next() {
            run_write(engine, model, T, w);
        }
    }
}

fn run(steps: &[Step], page_size: usize) {
    let engine =
        Engine::with_options(EngineOptions::default().max_page_size(NonZeroUsize::new(page_size).unwrap()));
    engine.create_table(T).unwrap();
    let mut model = Model::default();
    for step in steps {
        match step {
            Step::Single { missing_table, write } => {
                run_write(&engine, &mut model, if *missing_table { MISSING } else { T }, write);
            }
            Step::Batch(writes) => run_batch(&engine, &mut model, writes),
            Step::Get { key, select } => run_get(&engine, &model, key, select.as_deref()),
            Step::Query { filter, top, select, between } => {
                run_query(&engine, &mut model, page_size, filter, *top, select, between);
            }
        }
    }
    // Finally the whole table, in one or more pages, equals the model.
    run_query(&engine, &mut model, page_size, &None, None, &None, &[]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn engine_behaves_like_the_reference_model(
        steps in prop::collection::vec(step(), 1..40),
        page_size in prop::sample::select(vec![1usize, 2, 3, 1000]),
    ) {
        run(&steps, page_size);
    }

    /// With pages cut at partition boundaries or by a scan budget, page shapes differ from
    /// the model's, but reading every page still yields exactly the matching rows, in order,
    /// and no page spans two partitions when splitting is on.
    #[test]
    fn shortened_pages_still_yield_exactly_the_matching_rows(
        writes in prop::collection::vec(write(), 0..40),
        filter in prop::option::of(filter()),
        split in any::<bool>(),
        budget in prop::option::of(1usize..5),
        top in prop::option::of(1u32..4),
    ) {
        let engine = Engine::with_options(EngineOptions::default().split_pages_at_partition_boundaries(split).scan_budget(budget.map(|b| NonZeroUsize::new(b).unwrap())));
        engine.create_table(T).unwrap();
        let mut model = Model::default();
        for w in &writes {
            run_write(&engine, &mut model, T, w);
        }
        let mut request = QueryRequest { filter: filter.clone(), top, ..QueryRequest::default() };
        let mut all = Vec::new();
        for _ in 0..1000 {
            let page = engine.query(T, &request).unwrap();
            prop_assert!(page.entities.len() <= top.map_or(1000, |t| t as usize));
            if split {
                prop_assert!(page.entities.windows(2).all(|w| w[0].partition_key == w[1].partition_key));
            }
            all.extend(page.entities);
            match page.continuation {
                Some(c) => request.continuation = Some(c),
                None => break,
            }
        }
        let expected: Vec<Entity> = model.matching(filter.as_ref(), None).into_iter().cloned().collect();
        prop_assert_eq!(all, expected);
    }
}
