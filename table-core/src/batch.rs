//! Write operations, alone or grouped into an entity-group transaction (a batch), and the
//! rules the service checks on them before touching any data.
//!
//! Batch rules (protocol doc section 7): at least one and at most 100 operations, one
//! partition, one operation per row key, each entity valid, and a body of at most 4 MiB.
//! Violations name the failing operation's zero-based index where the service does.

use foldhash::fast::RandomState;
use hashbrown::HashSet;

use crate::entity::{ETag, Entity, EntityKey, IfMatch};
use crate::error::{Error, KeyName, Violation};
use crate::validate::{EntityView, FieldSink, validate_entity_with, validate_key};
use crate::value::ValueRef;

/// Most operations in one batch.
pub const MAX_BATCH_OPERATIONS: usize = 100;
/// Largest batch request body, in bytes.
pub const MAX_BATCH_BODY: usize = 4 * 1024 * 1024;

/// One write, as sent alone or inside a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// Insert; fails with `EntityAlreadyExists` when the key exists.
    Insert(Entity),
    /// Replace all properties; the entity must exist and match `if_match`.
    Replace {
        /// The new content.
        entity: Entity,
        /// The required version (`*` for any).
        if_match: IfMatch,
    },
    /// Merge the given properties into the existing entity, which must match `if_match`.
    Merge {
        /// The properties to set.
        entity: Entity,
        /// The required version (`*` for any).
        if_match: IfMatch,
    },
    /// Insert, or replace whatever is there.
    InsertOrReplace(Entity),
    /// Insert, or merge into whatever is there.
    InsertOrMerge(Entity),
    /// Delete; the entity must exist and match `if_match`.
    Delete {
        /// The entity to delete.
        key: EntityKey,
        /// The required version (`*` for any).
        if_match: IfMatch,
    },
}

impl Operation {
    /// The partition key the operation targets.
    pub fn partition_key(&self) -> &str {
        match self {
            Operation::Insert(e)
            | Operation::Replace { entity: e, .. }
            | Operation::Merge { entity: e, .. }
            | Operation::InsertOrReplace(e)
            | Operation::InsertOrMerge(e) => &e.partition_key,
            Operation::Delete { key, .. } => &key.partition_key,
        }
    }

    /// The row key the operation targets.
    pub fn row_key(&self) -> &str {
        match self {
            Operation::Insert(e)
            | Operation::Replace { entity: e, .. }
            | Operation::Merge { entity: e, .. }
            | Operation::InsertOrReplace(e)
            | Operation::InsertOrMerge(e) => &e.row_key,
            Operation::Delete { key, .. } => &key.row_key,
        }
    }

    /// The entity written, if the operation writes one.
    pub fn entity(&self) -> Option<&Entity> {
        match self {
            Operation::Insert(e)
            | Operation::Replace { entity: e, .. }
            | Operation::Merge { entity: e, .. }
            | Operation::InsertOrReplace(e)
            | Operation::InsertOrMerge(e) => Some(e),
            Operation::Delete { .. } => None,
        }
    }
}

/// What a successful write reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The entity's new version; `None` after a delete.
    pub etag: Option<ETag>,
}

/// An operation that passed [`validate_operation`], built only by [`CheckedOperation::new`]:
/// whoever receives one (the embedded engine's [`execute_checked`]) may skip that check, since
/// it could only have passed again.
///
/// [`execute_checked`]: crate::engine::Engine::execute_checked
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedOperation(Operation);

impl CheckedOperation {
    /// The operation, once [`validate_operation`] accepts it; its violation otherwise.
    pub fn new(operation: Operation) -> Result<Self, Violation> {
        validate_operation(&operation)?;
        Ok(Self(operation))
    }

    /// The checked operation.
    pub fn operation(&self) -> &Operation {
        &self.0
    }
}

/// Checks what the service checks on one operation before looking at stored data: the keys,
/// the `If-Match` ETag (which must be sendable as a header), and for writes of an entity the
/// whole entity ([`validate_entity`](crate::validate_entity)).
pub fn validate_operation(operation: &Operation) -> Result<(), Violation> {
    validate_operation_with(operation, ()).map(drop)
}

/// [`validate_operation`], handing the entity's properties (if the operation writes one) to
/// `sink` in the walk that checks them: the engine sums a row's size there. The sink, once
/// the operation passes.
pub(crate) fn validate_operation_with<S: FieldSink<str>>(
    operation: &Operation,
    sink: S,
) -> Result<S, Violation> {
    if let Operation::Replace { if_match, .. }
    | Operation::Merge { if_match, .. }
    | Operation::Delete { if_match, .. } = operation
    {
        validate_if_match(if_match)?;
    }
    match operation.entity() {
        Some(entity) => validate_entity_with(entity, sink),
        None => {
            validate_key(KeyName::PartitionKey, operation.partition_key())?;
            validate_key(KeyName::RowKey, operation.row_key())?;
            Ok(sink)
        }
    }
}

/// Checks an `If-Match` condition: an ETag must be sendable as a header (no control
/// characters).
pub(crate) fn validate_if_match(if_match: &IfMatch) -> Result<(), Violation> {
    match if_match {
        IfMatch::ETag(etag) if etag.as_str().chars().any(char::is_control) => {
            Err(Violation::ETag { etag: etag.as_str().to_owned() })
        }
        _ => Ok(()),
    }
}

/// Checks the batch rules, operation by operation in order, so the error names the first
/// failing operation: its entity ([`validate_operation`]), its partition (the first operation
/// with another partition key fails with `MixedPartitions`) and its row key (the second
/// occurrence fails with `DuplicateRow`). Per-operation errors carry the index
/// ([`Error::batch_index`]); an empty batch, more than [`MAX_BATCH_OPERATIONS`] operations and
/// an estimated body over [`MAX_BATCH_BODY`] ([`estimated_body_size`]) concern the whole
/// batch and carry none.
pub fn validate_batch(operations: &[Operation]) -> crate::Result<()> {
    validate_batch_with::<()>(operations).map(drop)
}

/// [`validate_batch`], with one sink per operation fed as [`validate_operation_with`] feeds
/// it, in the operations' order: the engine sums each row's size in the walk that checks it.
/// The body's estimate ([`estimated_body_size`]) is summed in that walk too.
pub(crate) fn validate_batch_with<S: FieldSink<str> + Default>(
    operations: &[Operation],
) -> crate::Result<Vec<S>> {
    let Some(first) = operations.first() else {
        return Err(Error::invalid(Violation::EmptyBatch));
    };
    if operations.len() > MAX_BATCH_OPERATIONS {
        return Err(Error::invalid(Violation::TooManyOperations {
            count: operations.len(),
            max: MAX_BATCH_OPERATIONS,
        }));
    }
    let partition_key = first.partition_key();
    // foldhash rather than the standard SipHash: a batch holds at most 100 keys, so no flood
    // of colliding keys can cost much, and SipHash cost a batch about 180 instructions per
    // operation more (ops_probe `probe_engine_batches`).
    let mut row_keys = HashSet::with_capacity_and_hasher(operations.len(), RandomState::default());
    let mut sinks = Vec::with_capacity(operations.len());
    let mut size = 0;
    for (index, op) in operations.iter().enumerate() {
        let (estimate, sink) = validate_operation_with(op, (BodyEstimate::default(), S::default()))
            .map_err(|v| Error::invalid(v).with_batch_index(index))?;
        size += part_size(op, estimate);
        sinks.push(sink);
        if op.partition_key() != partition_key {
            return Err(Error::invalid(Violation::MixedPartitions {
                index,
                expected: partition_key.to_owned(),
                found: op.partition_key().to_owned(),
            }));
        }
        if !row_keys.insert(op.row_key()) {
            return Err(Error::invalid(Violation::DuplicateRow { index, row_key: op.row_key().to_owned() }));
        }
    }
    if size > MAX_BATCH_BODY {
        return Err(Error::invalid(Violation::BatchTooLarge { size, max: MAX_BATCH_BODY }));
    }
    Ok(sinks)
}

/// Upper estimate of the MIME headers, request line and HTTP headers of one batch part,
/// excluding the keys in its URL.
const PART_OVERHEAD: usize = 512;

/// Estimates the size in bytes of the `$batch` body carrying `operations`: a fixed allowance
/// per part for headers and the request line, the keys percent-encoded in the URL (at most 3
/// bytes per byte), and the JSON body with exact string escaping, base64 for binary values,
/// upper bounds for other values and their `@odata.type` annotations. The client checks the
/// body it actually encodes; this lets the engine and callers refuse clearly oversized batches
/// without encoding them.
pub fn estimated_body_size(operations: &[Operation]) -> usize {
    operations
        .iter()
        .map(|op| {
            let mut estimate = BodyEstimate::default();
            if let Some(entity) = op.entity() {
                entity.properties(&mut estimate);
            }
            part_size(op, estimate)
        })
        .sum()
}

/// One operation's part of [`estimated_body_size`], its entity's properties estimated by
/// `properties`.
fn part_size(op: &Operation, properties: BodyEstimate) -> usize {
    let keys = op.partition_key().len() + op.row_key().len();
    let body = op.entity().map_or(0, |e| {
        r#"{"PartitionKey":"","RowKey":""}"#.len()
            + json_string_len(&e.partition_key)
            + json_string_len(&e.row_key)
            + properties.0
    });
    PART_OVERHEAD + 3 * keys + body
}

/// The JSON of an entity's custom properties, estimated as a walk hands them over: by
/// [`estimated_body_size`] alone, or in the walk that checks a batch's entities.
#[derive(Default)]
struct BodyEstimate(usize);

impl FieldSink<str> for BodyEstimate {
    #[inline(always)]
    fn property(&mut self, name: &str, value: ValueRef<'_>) {
        self.0 += json_property_len(name, value);
    }
}

/// `,"name":value` plus its annotation when the value needs one.
fn json_property_len(name: &str, value: ValueRef<'_>) -> usize {
    let name_len = json_string_len(name) + 4;
    let annotation = name_len + r#""@odata.type":"Edm.DateTime""#.len();
    match value {
        ValueRef::Str(s) => name_len + json_string_len(s) + 2,
        ValueRef::Boolean(_) => name_len + 5,
        ValueRef::Int32(_) => name_len + 11,
        ValueRef::Double(_) => name_len + 26 + annotation,
        ValueRef::Int64(_) => name_len + 22 + annotation,
        ValueRef::DateTime(_) => name_len + 30 + annotation,
        ValueRef::Guid(_) => name_len + 38 + annotation,
        ValueRef::Binary(b) => name_len + b.len().div_ceil(3) * 4 + 2 + annotation,
    }
}

/// Length of the text inside a JSON string literal: quotes and backslashes take 2 bytes,
/// other control characters up to 6 (`\u0001`).
fn json_string_len(s: &str) -> usize {
    // Counted over bytes: every character that is escaped is ASCII, and no byte of a longer
    // UTF-8 sequence is below 0x80. One table lookup per byte: the strings of a batch are
    // mostly short, where a `match` per byte, or a loop the compiler spreads over many bytes
    // at once, costs more (ops_probe `probe_engine_batches`).
    s.len() + s.bytes().map(|b| usize::from(ESCAPE_EXTRA[usize::from(b)])).sum::<usize>()
}

/// The bytes an escape adds to each byte in a JSON string literal.
const ESCAPE_EXTRA: [u8; 256] = {
    let mut extra = [0; 256];
    let mut b = 0;
    while b < 0x20 {
        extra[b] = 5;
        b += 1;
    }
    extra[b'"' as usize] = 1;
    extra[b'\\' as usize] = 1;
    extra
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn insert(pk: &str, rk: &str) -> Operation {
        Operation::Insert(Entity::new(pk, rk))
    }

    #[test]
    fn batch_sizes() {
        assert_eq!(validate_batch(&[]).expect_err("empty").violation(), Some(&Violation::EmptyBatch));
        let full: Vec<_> = (0..100).map(|i| insert("p", &i.to_string())).collect();
        validate_batch(&full).expect("100 operations are allowed");
        let over: Vec<_> = (0..101).map(|i| insert("p", &i.to_string())).collect();
        let e = validate_batch(&over).expect_err("101");
        assert_eq!(e.code(), Some(&ErrorCode::InvalidInput));
        assert_eq!(e.batch_index(), None);
    }

    #[test]
    fn mixed_partitions_name_the_first_foreign_operation() {
        let ops = [insert("p", "1"), insert("p", "2"), insert("q", "3"), insert("r", "4")];
        let e = validate_batch(&ops).expect_err("mixed");
        assert_eq!(e.code(), Some(&ErrorCode::CommandsInBatchActOnDifferentPartitions));
        assert_eq!(e.batch_index(), Some(2));
    }

    #[test]
    fn duplicate_rows_name_the_second_occurrence() {
        let delete = Operation::Delete { key: EntityKey::new("p", "1"), if_match: IfMatch::Any };
        let ops = [insert("p", "1"), insert("p", "2"), delete];
        let e = validate_batch(&ops).expect_err("duplicate");
        assert_eq!(e.code(), Some(&ErrorCode::InvalidDuplicateRow));
        assert_eq!(e.batch_index(), Some(2));
    }

    #[test]
    fn invalid_entities_carry_their_index() {
        let ops = [insert("p", "1"), insert("p", "bad/key")];
        let e = validate_batch(&ops).expect_err("bad key");
        assert_eq!(e.code(), Some(&ErrorCode::OutOfRangeInput));
        assert_eq!(e.batch_index(), Some(1));
        let delete = Operation::Delete { key: EntityKey::new("p", "#"), if_match: IfMatch::Any };
        let e = validate_batch(&[insert("p", "1"), delete]).expect_err("bad delete key");
        assert_eq!(e.batch_index(), Some(1));
    }

    #[test]
    fn oversized_bodies_are_refused() {
        // 100 entities of ~60 KB of JSON each exceed 4 MiB although each entity is valid.
        let ops: Vec<_> = (0..100)
            .map(|i| {
                Operation::Insert(
                    Entity::new("p", i.to_string())
                        .with("s", "x".repeat(30_000))
                        .with("t", "y".repeat(30_000)),
                )
            })
            .collect();
        assert!(estimated_body_size(&ops) > MAX_BATCH_BODY);
        let e = validate_batch(&ops).expect_err("too large");
        assert_eq!(e.code(), Some(&ErrorCode::RequestBodyTooLarge));
        assert!(estimated_body_size(&ops[..50]) < MAX_BATCH_BODY);
    }

    #[test]
    fn the_size_refused_is_the_estimate_of_the_batch() {
        // Every type and a delete, so that the estimate summed in the check walk meets each
        // value's form; the strings carry escapes.
        let ops: Vec<_> = (0..100)
            .map(|i| match i {
                0 => Operation::Delete { key: EntityKey::new("p", "gone"), if_match: IfMatch::Any },
                _ => Operation::InsertOrMerge(
                    Entity::new("p", format!("r\"{i}"))
                        .with("Text", "\u{1}\\x".repeat(10_000))
                        .with("Flag", true)
                        .with("Small", 7)
                        .with("Big", 7_i64)
                        .with("Ratio", 0.5)
                        .with("When", chrono::DateTime::UNIX_EPOCH)
                        .with("Id", uuid::Uuid::nil())
                        .with("Bytes", vec![0_u8; 1_000]),
                ),
            })
            .collect();
        let e = validate_batch(&ops).expect_err("too large");
        let size = estimated_body_size(&ops);
        assert_eq!(e.violation(), Some(&Violation::BatchTooLarge { size, max: MAX_BATCH_BODY }));
    }

    #[test]
    fn json_escapes_are_counted() {
        assert_eq!(json_string_len("ab"), 2);
        assert_eq!(json_string_len("a\"b"), 4);
        assert_eq!(json_string_len("\u{1}"), 6);
        assert_eq!(json_string_len("é"), 2);
    }

    use proptest::prelude::*;

    proptest! {
        /// The estimate is what serde_json writes for every string without control
        /// characters, and never less for one with them (which it counts at the longest
        /// escape, `\u0001`, where serde_json writes `\n` and the like in 2 bytes).
        #[test]
        fn the_json_string_estimate_bounds_what_is_written(
            chars in prop::collection::vec(
                prop_oneof![(0u8..0x80).prop_map(char::from), any::<char>()],
                0..40,
            ),
        ) {
            let s: String = chars.into_iter().collect();
            let written = serde_json::to_string(&s).expect("a string").len() - 2;
            if s.bytes().any(|b| b < b' ') {
                prop_assert!(json_string_len(&s) >= written, "{s:?}");
            } else {
                prop_assert_eq!(json_string_len(&s), written, "{:?}", s);
            }
        }
    }
}
