//! Whole-entity writes of a typed value ([`Put`]): an insert, replace or insert-or-replace that
//! the engine stores straight from the value, through its `TableEntity::write_through`,
//! without building the [`Entity`](crate::Entity) an [`Operation`] carries or any list of its
//! fields. A `Put` is checked once, when it is made, by the rules and in the order
//! [`validate_operation`](crate::validate_operation) checks the same operation, so
//! [`Engine::put`](super::Engine::put) answers exactly as
//! [`Engine::execute`](super::Engine::execute) of that operation would.
//!
//! Flow: the value is prepared once (`TableEntity::prepare_write`: keys and JSON text, the
//! value's own errors, before any request), then walked twice, each walk compiled for its
//! sinks: `Put::new` walks it with the entity rules ([`EntityCheck`]) and the row's size
//! ([`RowSize`]) together, and the table, once the write passes its checks against the
//! stored row, walks it with the row encoder (`Row::sized`).

use super::row::RowSize;
use super::table::{Requires, RowWrite, Stores};
use crate::batch::{Operation, validate_if_match};
use crate::entity::IfMatch;
use crate::error::Violation;
use crate::typed::{FieldSink, PreparedWrite, StaticName, TableEntity, written_entity};
use crate::validate::{EntityCheck, EntityView};

/// Which whole-entity write a [`Put`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutKind {
    /// Insert; 409 `EntityAlreadyExists` when the key exists.
    Insert,
    /// Replace the stored entity, if it matches the condition.
    Replace(IfMatch),
    /// Insert, or replace whatever has the key.
    InsertOrReplace,
}

/// A checked whole-entity write of a typed value (see the module docs).
#[derive(Debug, Clone)]
pub struct Put<'a, T> {
    kind: PutKind,
    value: &'a T,
    /// `value`'s keys and JSON text.
    prepared: PreparedWrite,
    /// The properties' share of the row the write stores, and their number.
    row_size: RowSize,
    count: usize,
}

impl<'a, T: TableEntity> Put<'a, T> {
    /// The write of `value`, which `prepared` was prepared from (its `prepare_write`), once it
    /// passes the checks of the same operation: the `If-Match` ETag, then the entity
    /// ([`validate_entity`](crate::validate_entity)'s rules after the keys, in its order; the
    /// keys were checked when they were built).
    #[inline]
    pub fn new(kind: PutKind, value: &'a T, prepared: PreparedWrite) -> Result<Self, Violation> {
        if let PutKind::Replace(if_match) = &kind {
            validate_if_match(if_match)?;
        }
        let mut walk = (EntityCheck::new(prepared.partition_key(), prepared.row_key()), RowSize::default());
        value.write_through(&prepared, &mut walk);
        let (check, row_size) = walk;
        let count = check.count();
        check.finish()?;
        Ok(Put { kind, value, prepared, row_size, count })
    }

    /// Which write it is.
    pub fn kind(&self) -> &PutKind {
        &self.kind
    }

    /// The same write as an [`Operation`], for a caller that needs the entity it sends (to
    /// settle a write whose answer was lost).
    pub fn to_operation(&self) -> Operation {
        // A clone of the keys and JSON text: this runs only to settle a write whose answer was lost.
        let entity = written_entity(self.value, self.prepared.clone(), self.count);
        match &self.kind {
            PutKind::Insert => Operation::Insert(entity),
            PutKind::Replace(if_match) => Operation::Replace { entity, if_match: if_match.clone() },
            PutKind::InsertOrReplace => Operation::InsertOrReplace(entity),
        }
    }
}

impl<T: TableEntity> EntityView for Put<'_, T> {
    type Name = StaticName;

    const SAME_EVERY_WALK: bool = false;

    fn partition_key(&self) -> &str {
        self.prepared.partition_key()
    }

    fn row_key(&self) -> &str {
        self.prepared.row_key()
    }

    fn property_count(&self) -> usize {
        self.count
    }

    #[inline]
    fn properties<S: FieldSink<StaticName>>(&self, sink: &mut S) {
        self.value.write_through(&self.prepared, sink);
    }
}

impl<T: TableEntity> RowWrite for Put<'_, T> {
    type Entity = Self;

    fn key(&self) -> (&str, &str) {
        (self.prepared.partition_key(), self.prepared.row_key())
    }

    fn requires(&self) -> Requires<'_> {
        match &self.kind {
            PutKind::Insert => Requires::Absent,
            PutKind::Replace(if_match) => Requires::Present(if_match),
            PutKind::InsertOrReplace => Requires::Nothing,
        }
    }

    fn stores(&self) -> Option<Stores<'_, Self>> {
        Some(Stores::Sized { entity: self, size: self.row_size })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::{DateTime, Utc};
    use proptest::prelude::*;
    use table_derive::{PropertyValue, TableEntity};
    use uuid::Uuid;

    use super::*;
    use crate::batch::CheckedOperation;
    use crate::engine::row::Row;
    use crate::entity::{ETag, Entity};
    use crate::error::KeyName;
    use crate::typed::CheckedKey;
    use crate::validate::ViewName;
    use crate::value::{Value, ValueRef};

    #[derive(Debug, Clone, PartialEq, PropertyValue)]
    #[table(crate = "table_core")]
    enum Mood {
        Calm,
        #[table(rename = "up")]
        Excited,
    }

    /// Every supported field type, some names out of alphabetical field order (upper case,
    /// `_`, lower case sort apart), keys built from fields that may break the key rules.
    #[derive(Debug, Clone, TableEntity)]
    #[allow(dead_code)] // `cache`, `timestamp` and `etag` are there to be left out of writes.
    #[table(crate = "table_core", partition_key = "{region}_{day:%Y%m%d}", row_key = "{id:06}")]
    #[table(entity_type = "Every", version = 3)]
    struct Every {
        #[table(key_only)]
        region: String,
        day: DateTime<Utc>,
        #[table(key_only)]
        id: u32,
        #[table(rename = "Zed")]
        text: String,
        flag: bool,
        small: i32,
        #[table(rename = "_big")]
        big: i64,
        unsigned: u32,
        #[table(rename = "Wide")]
        wide: u64,
        real: f64,
        tiny: i8,
        short: i16,
        byte: u8,
        #[table(rename = "Word")]
        word: u16,
        single: f32,
        at: DateTime<Utc>,
        guid: Uuid,
        #[table(rename = "Bytes")]
        bytes: Vec<u8>,
        maybe_text: Option<String>,
        maybe_at: Option<DateTime<Utc>>,
        maybe_bytes: Option<Vec<u8>>,
        mood: Mood,
        maybe_mood: Option<Mood>,
        #[table(json)]
        doc: BTreeMap<String, i32>,
        /// Fails to serialise when it holds an entry (JSON keys must be strings).
        #[table(json, rename = "Bad")]
        bad: Option<BTreeMap<Vec<u8>, i32>>,
        #[table(skip)]
        cache: Option<String>,
        #[table(timestamp)]
        timestamp: Option<DateTime<Utc>>,
        #[table(etag)]
        etag: Option<ETag>,
    }

    /// An enum of entity types passes `prepare_write` and `write_through` on to its variant.
    #[derive(Debug, Clone, TableEntity)]
    #[table(crate = "table_core")]
    enum Stored {
        Every(Every),
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => ".{0,8}",
            1 => Just("x".repeat(32_768)),
            1 => Just("y".repeat(32_769)),
        ]
    }

    fn key_text() -> impl Strategy<Value = String> {
        prop_oneof![8 => "[a-z]{0,6}", 1 => "[a-z/#?\\\\\u{0}\u{7f}_]{0,4}", 1 => Just("k".repeat(1_020))]
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![8 => proptest::collection::vec(any::<u8>(), 0..8), 1 => Just(vec![7; 65_537])]
    }

    /// Instants inside and outside the service's range (1601 to 9999), with any nanoseconds.
    fn instant() -> impl Strategy<Value = DateTime<Utc>> {
        (-70_000_000_000i64..300_000_000_000, 0u32..1_000_000_000)
            .prop_map(|(secs, nanos)| DateTime::from_timestamp(secs, nanos).unwrap_or_default())
    }

    fn mood() -> impl Strategy<Value = Mood> {
        prop_oneof![Just(Mood::Calm), Just(Mood::Excited)]
    }

    fn every() -> impl Strategy<Value = Every> {
        let keys = (key_text(), instant(), prop_oneof![0u32..1_000_000, Just(1_000_000)]);
        let scalars =
            (text(), any::<bool>(), any::<i32>(), any::<i64>(), any::<u32>(), any::<u64>(), any::<f64>());
        let small = (any::<i8>(), any::<i16>(), any::<u8>(), any::<u16>(), any::<f32>());
        let others = (
            instant(),
            any::<u128>(),
            bytes(),
            proptest::option::of(text()),
            proptest::option::of(instant()),
        );
        let rest = (
            proptest::option::of(bytes()),
            mood(),
            proptest::option::of(mood()),
            proptest::collection::btree_map("[a-z]{1,3}", any::<i32>(), 0..3),
            proptest::option::of(proptest::collection::btree_map(
                proptest::collection::vec(any::<u8>(), 1),
                any::<i32>(),
                0..2,
            )),
        );
        (keys, scalars, small, others, rest).prop_map(
            |(
                (region, day, id),
                (text, flag, small, big, unsigned, wide, real),
                (tiny, short, byte, word, single),
                (at, guid, bytes, maybe_text, maybe_at),
                (maybe_bytes, mood, maybe_mood, doc, bad),
            )| Every {
                region,
                day,
                id,
                text,
                flag,
                small,
                big,
                unsigned,
                wide,
                real,
                tiny,
                short,
                byte,
                word,
                single,
                at,
                guid: Uuid::from_u128(guid),
                bytes,
                maybe_text,
                maybe_at,
                maybe_bytes,
                mood,
                maybe_mood,
                doc,
                bad,
                cache: Some("never stored".into()),
                timestamp: None,
                etag: None,
            },
        )
    }

    /// An `If-Match`, sometimes with a control character (refused before the entity is checked).
    fn if_match() -> impl Strategy<Value = IfMatch> {
        prop_oneof![Just(IfMatch::Any), "W/\"[a-z\u{1}]{0,3}\"".prop_map(|e| IfMatch::ETag(ETag::new(e)))]
    }

    fn stamp() -> (DateTime<Utc>, ETag) {
        let t = DateTime::from_timestamp(1_700_000_000, 123_456_700).expect("in range");
        (t, ETag::from_timestamp(t))
    }

    /// A `Put` of `kind` and the `CheckedOperation` of the same write through `to_entity`:
    /// both refused with the same error, or both accepted and encoding the same row; and the
    /// `Put`'s operation is that same write.
    fn same_write(value: &(impl TableEntity + std::fmt::Debug), kind: PutKind) -> Result<(), TestCaseError> {
        let (entity, prepared) = match (value.to_entity(), value.prepare_write()) {
            (Ok(entity), Ok(Some(prepared))) => (entity, prepared),
            (Err(generic), Err(fast)) => {
                prop_assert_eq!(generic.to_string(), fast.to_string());
                prop_assert_eq!(generic.violation(), fast.violation());
                return Ok(());
            }
            (generic, fast) => {
                return Err(TestCaseError::fail(format!("to_entity {generic:?}, prepare_write {fast:?}")));
            }
        };
        let operation = match &kind {
            PutKind::Insert => Operation::Insert(entity),
            PutKind::Replace(if_match) => Operation::Replace { entity, if_match: if_match.clone() },
            PutKind::InsertOrReplace => Operation::InsertOrReplace(entity),
        };
        match (CheckedOperation::new(operation.clone()), Put::new(kind, value, prepared)) {
            (Ok(checked), Ok(put)) => {
                prop_assert_eq!(put.to_operation(), operation);
                let (t, etag) = stamp();
                let generic =
                    Row::new(checked.operation().entity().expect("a whole-entity write"), t.into(), &etag);
                // As the engine stores it: sized by the walk that checked it.
                let fast =
                    Row::sized(&put, put.row_size, t.into(), &etag).expect("the walk Put::new checked");
                prop_assert_eq!(generic.bytes(), fast.bytes());
            }
            (Err(generic), Err(fast)) => prop_assert_eq!(generic, fast),
            (generic, fast) => {
                return Err(TestCaseError::fail(format!("generic {generic:?}, fast {fast:?}")));
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn fields_write_what_to_entity_writes(value in every(), if_match in if_match(), kind in 0..3) {
            let kind = match kind {
                0 => PutKind::Insert,
                1 => PutKind::Replace(if_match),
                _ => PutKind::InsertOrReplace,
            };
            same_write(&value, kind.clone())?;
            same_write(&Stored::Every(value), kind)?;
        }
    }

    /// An entity of any properties, in ascending name order, written through a sink by hand:
    /// what no derived type has room for in a test (more properties than the service takes,
    /// and more bytes).
    #[derive(Debug)]
    struct Bag(Vec<(StaticName, Value)>);

    impl TableEntity for Bag {
        fn to_entity(&self) -> crate::Result<Entity> {
            let mut entity = Entity::new("p", "r");
            for (name, value) in &self.0 {
                entity.insert(name.text(), value.clone());
            }
            Ok(entity)
        }

        fn prepare_write(&self) -> crate::Result<Option<PreparedWrite>> {
            let key = |which, text: &str| CheckedKey::new(which, text.to_owned());
            Ok(Some(PreparedWrite::new(key(KeyName::PartitionKey, "p")?, key(KeyName::RowKey, "r")?, vec![])))
        }

        fn write_through<S: FieldSink<StaticName>>(&self, _: &PreparedWrite, sink: &mut S) {
            for (name, value) in &self.0 {
                sink.property(name, ValueRef::of(value));
            }
        }

        fn from_entity(entity: Entity) -> crate::Result<Self> {
            Err(crate::Error::invalid(Violation::Value {
                property: entity.row_key,
                message: "unread".into(),
            }))
        }

        fn partition_key(&self) -> crate::Result<String> {
            Ok("p".into())
        }

        fn row_key(&self) -> crate::Result<String> {
            Ok("r".into())
        }
    }

    /// Names in ascending order, of more UTF-8 bytes than UTF-16 units (`é`) and of
    /// characters of two units (`𝐀`, above U+FFFF), so that an error's size counts both.
    static NAMES: std::sync::LazyLock<Vec<StaticName>> =
        std::sync::LazyLock::new(|| (0..260).map(|i| StaticName::new(format!("p𝐀é{i:03}").leak())).collect());

    /// A value of any type, small or at the edges of the property limits (strings counted in
    /// UTF-16 units, one of them in two-unit characters), or an instant the service refuses.
    fn bag_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => any::<i32>().prop_map(Value::Int32),
            2 => ".{0,6}".prop_map(Value::String),
            1 => prop_oneof![Just(32_768), Just(32_769)].prop_map(|n| Value::String("é".repeat(n))),
            1 => prop_oneof![Just(16_384), Just(16_385)].prop_map(|n| Value::String("𝐀".repeat(n))),
            2 => prop_oneof![Just(65_000), Just(65_536), Just(65_537)].prop_map(|n| Value::Binary(vec![7; n])),
            1 => instant().prop_map(Value::DateTime),
        ]
    }

    /// Few properties, or about as many as the service takes.
    fn bag() -> impl Strategy<Value = Bag> {
        prop_oneof![0usize..24, 248usize..=256]
            .prop_flat_map(|count| proptest::collection::vec(bag_value(), count))
            .prop_map(|values| Bag(NAMES.iter().copied().zip(values).collect()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The walk's checks (the property count, each property, the entity's size) agree with
        /// those of the same `Entity`, down to the size an error reports, and an accepted
        /// entity encodes to the same row.
        #[test]
        fn the_entity_limits_apply_to_a_walk_as_to_an_entity(value in bag(), kind in 0..3) {
            let kind = match kind {
                0 => PutKind::Insert,
                1 => PutKind::Replace(IfMatch::Any),
                _ => PutKind::InsertOrReplace,
            };
            same_write(&value, kind)?;
        }
    }
}
