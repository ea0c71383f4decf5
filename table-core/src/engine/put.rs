//! Whole-entity writes of a typed value's fields ([`Put`]): an insert, replace or
//! insert-or-replace that the engine stores straight from [`EntityFields`], without building
//! the [`Entity`] an [`Operation`] carries. A `Put` is checked once, when it is made, by the
//! rules and in the order [`validate_operation`](crate::validate_operation) checks the same
//! operation, so [`Engine::put`](super::Engine::put) answers exactly as
//! [`Engine::execute`](super::Engine::execute) of that operation would. The walk that checks
//! the properties also sums the size of the row they make, so storing it walks them once.

use super::row::RowSize;
use super::table::{Requires, RowWrite, Stores};
use crate::batch::{Operation, validate_if_match};
use crate::entity::IfMatch;
use crate::error::Violation;
use crate::typed::EntityFields;
use crate::validate::{EntityView, ViewName, validate_view};

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

/// A checked whole-entity write of a typed value's fields (see the module docs).
#[derive(Debug, Clone)]
pub struct Put<'a> {
    kind: PutKind,
    fields: EntityFields<'a>,
    /// The properties' share of the row the write stores.
    row_size: RowSize,
}

impl<'a> Put<'a> {
    /// The write, once it passes the checks of the same operation: the `If-Match` ETag, then
    /// the entity ([`validate_entity`](crate::validate_entity)'s rules, in its order).
    pub fn new(kind: PutKind, fields: EntityFields<'a>) -> Result<Self, Violation> {
        if let PutKind::Replace(if_match) = &kind {
            validate_if_match(if_match)?;
        }
        let mut row_size = RowSize::default();
        validate_view(&fields, |name, value| row_size.add(name.text(), value))?;
        Ok(Put { kind, fields, row_size })
    }

    /// Which write it is.
    pub fn kind(&self) -> &PutKind {
        &self.kind
    }

    /// The same write as an [`Operation`], for a caller that needs the entity it sends (to
    /// settle a write whose answer was lost).
    pub fn to_operation(&self) -> Operation {
        let entity = self.fields.to_entity();
        match &self.kind {
            PutKind::Insert => Operation::Insert(entity),
            PutKind::Replace(if_match) => Operation::Replace { entity, if_match: if_match.clone() },
            PutKind::InsertOrReplace => Operation::InsertOrReplace(entity),
        }
    }
}

impl<'a> RowWrite for Put<'a> {
    type Entity = EntityFields<'a>;

    fn key(&self) -> (&str, &str) {
        (self.fields.partition_key(), self.fields.row_key())
    }

    fn requires(&self) -> Requires<'_> {
        match &self.kind {
            PutKind::Insert => Requires::Absent,
            PutKind::Replace(if_match) => Requires::Present(if_match),
            PutKind::InsertOrReplace => Requires::Nothing,
        }
    }

    fn stores(&self) -> Option<Stores<'_, Self::Entity>> {
        Some(Stores::Sized { entity: &self.fields, size: self.row_size })
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
    use crate::entity::ETag;
    use crate::error::KeyName;
    use crate::typed::{CheckedKey, FieldValue, TableEntity};
    use crate::validate::validate_entity;
    use crate::value::Value;

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

    /// An enum of entity types passes `to_fields` on to its variant.
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
    /// both refused with the same error, or both accepted and encoding the same row.
    fn same_write(value: &impl TableEntity, kind: PutKind) -> Result<(), TestCaseError> {
        let (entity, fields) = match (value.to_entity(), value.to_fields()) {
            (Ok(entity), Ok(Some(fields))) => (entity, fields),
            (Err(generic), Err(fast)) => {
                prop_assert_eq!(generic.to_string(), fast.to_string());
                prop_assert_eq!(generic.violation(), fast.violation());
                return Ok(());
            }
            (generic, fast) => {
                return Err(TestCaseError::fail(format!("to_entity {generic:?}, to_fields {fast:?}")));
            }
        };
        prop_assert_eq!(fields.to_entity(), entity.clone());
        let operation = match &kind {
            PutKind::Insert => Operation::Insert(entity),
            PutKind::Replace(if_match) => Operation::Replace { entity, if_match: if_match.clone() },
            PutKind::InsertOrReplace => Operation::InsertOrReplace(entity),
        };
        match (CheckedOperation::new(operation), Put::new(kind, fields)) {
            (Ok(checked), Ok(put)) => {
                let (t, etag) = stamp();
                let generic =
                    Row::new(checked.operation().entity().expect("a whole-entity write"), t.into(), &etag);
                // As the engine stores it: sized by the walk that checked it.
                let fast = Row::sized(&put.fields, put.row_size, t.into(), &etag);
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

    /// Fields no derived type has room for in a test: more properties than the service takes,
    /// and more bytes. The checks of `Put::new` and of the same `Entity` agree, down to the
    /// size an error reports, which counts names of more UTF-8 bytes than UTF-16 units (`é`)
    /// and of characters of two units (`𝐀`, above U+FFFF).
    #[test]
    fn the_entity_limits_apply_to_fields_as_to_entities() {
        let names: Vec<&'static str> = (0..260).map(|i| &*format!("p𝐀é{i:03}").leak()).collect();
        for (count, each) in [(252, 1), (253, 1), (16, 65_536), (15, 65_536), (17, 65_000)] {
            let key = |which, text: &str| CheckedKey::new(which, text.to_owned()).unwrap();
            let mut fields =
                EntityFields::new(key(KeyName::PartitionKey, "p"), key(KeyName::RowKey, "r"), count);
            for name in &names[..count] {
                let value = if each == 1 {
                    FieldValue::from(1)
                } else {
                    FieldValue::owned(Value::Binary(vec![0; each]))
                };
                fields.push(name, Some(value));
            }
            let generic = validate_entity(&fields.to_entity());
            let fast = Put::new(PutKind::Insert, fields).map(drop);
            assert_eq!(generic, fast, "{count} properties of {each} bytes");
        }
    }
}
