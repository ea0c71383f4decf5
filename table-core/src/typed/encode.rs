//! The write side of the typed layer: a typed value's properties handed, one by one, to a
//! [`FieldSink`], borrowed from the value where they can be, so that the embedded engine checks
//! and stores it without building a list of its fields or a generic [`Entity`] (a `BTreeMap`
//! of owned names and values, built and dropped on every write).
//!
//! It mirrors the read side, where one generic derived decoder is compiled for each reader
//! (`TableEntity::read_through`): the derive generates one generic
//! [`TableEntity::write_through`], which hands the value's properties in ascending name order,
//! each name once (the order the row layout and the entity rules take them in), to whatever
//! sink it is compiled for, so that the sink's work inlines into the type's field reads. A
//! write prepares the value once ([`TableEntity::prepare_write`]: the keys and the JSON fields'
//! text, the steps that can fail, in `to_entity`'s order), then walks it as often as it needs:
//! the embedded engine walks it with the entity rules and the row's size
//! (`validate::EntityCheck`, `engine::row::RowSize`), then with the row encoder; a caller that
//! needs the [`Entity`] after all (to settle a write whose answer was lost), and a derived
//! type's `to_entity` (the HTTP backend's writes, batches), walk it into one with
//! [`written_entity`]: the walk is the one description of what a derived type writes.
//!
//! Why walks rather than a list of the fields built once: the list (a `Vec` of names and
//! values) had to be allocated, built, matched on each of its two walks and dropped, which cost
//! a typed insert more than walking the fields again does (ops_probe `probe_inserts`: 5,075
//! instructions with the list, 4,275 with the walks). Why two walks rather than one: a row is
//! one allocation of its exact size, which the first walk sums; a field's read is a borrow or a
//! copy of a number, cheap to repeat, and what is not (the keys, the JSON text) is prepared
//! once.
//!
//! Invariant: a walk hands exactly what the type's `to_entity` holds (same names and values),
//! every time it runs (a field's value is a function of the field, as
//! `PropertyValue::to_value` requires), so that every walk of one write sees the same entity,
//! and the stored row and every error of the write are those of the same write through
//! `to_entity`. Each name is a [`StaticName`], measured in UTF-16 units once (for a derived
//! type, when it compiles) rather than on every write.
//!
//! [`TableEntity::write_through`]: super::TableEntity::write_through
//! [`TableEntity::prepare_write`]: super::TableEntity::prepare_write

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::entity::Entity;
use crate::typed::{CheckedKey, TableEntity};
use crate::validate::{FieldSink, ViewName};
use crate::value::ValueRef;
use crate::value::{Value, utf16_len};

/// What a write works out once from a typed value, before it walks the value's properties
/// ([`TableEntity::prepare_write`](super::TableEntity::prepare_write)): the keys, and the text
/// of each `#[table(json)]` field (`None` for JSON `null`, an absent property), in field order.
/// Both are the steps of `to_entity` that can fail, and a JSON field's serialisation would
/// cost each walk again.
#[derive(Debug, Clone)]
pub struct PreparedWrite {
    partition_key: CheckedKey,
    row_key: CheckedKey,
    json: Vec<Option<String>>,
}

impl PreparedWrite {
    /// The keys, checked when they were built, and the JSON fields' text in field order (empty
    /// for a type without JSON fields, which then allocates nothing).
    #[inline]
    pub fn new(partition_key: CheckedKey, row_key: CheckedKey, json: Vec<Option<String>>) -> Self {
        PreparedWrite { partition_key, row_key, json }
    }

    /// The `PartitionKey`.
    pub(crate) fn partition_key(&self) -> &str {
        self.partition_key.as_str()
    }

    /// The `RowKey`.
    pub(crate) fn row_key(&self) -> &str {
        self.row_key.as_str()
    }

    /// The text of the `index`th JSON field; `None` for `null`, or for an index the value
    /// that prepared the write has no JSON field at.
    pub(crate) fn json(&self, index: usize) -> Option<&str> {
        self.json.get(index)?.as_deref()
    }
}

/// The [`Entity`] a walk of `value` writes, with the keys `prepared` (what `value`'s
/// `prepare_write` gave) holds, moved into it: a derived type's `to_entity`. `properties` is
/// the most the walk hands (the derive counts them), so that the list is allocated once.
pub fn written_entity<T: TableEntity>(value: &T, prepared: PreparedWrite, properties: usize) -> Entity {
    let mut walked = PropertyList(Vec::with_capacity(properties));
    value.write_through(&prepared, &mut walked);
    Entity {
        partition_key: prepared.partition_key.into_string(),
        row_key: prepared.row_key.into_string(),
        // The walk hands names in ascending order, which the map builds from in one pass:
        // inserted one by one, each would search the map from its root (ascending names
        // are the map's worst case), a tenth of a derived type's `to_entity`.
        properties: walked.0.into_iter().collect(),
        ..Entity::default()
    }
}

/// A sink that lists the properties of the walk ([`written_entity`]).
#[derive(Debug)]
struct PropertyList(Vec<(String, Value)>);

impl<N: ViewName + ?Sized> FieldSink<N> for PropertyList {
    fn property(&mut self, name: &N, value: ValueRef<'_>) {
        self.0.push((name.text().to_owned(), value.to_value()));
    }
}

/// One property value to write: borrowed from the field, or owned when the field's type makes
/// its value (a newtype's [`PropertyValue::to_value`](super::PropertyValue)).
#[derive(Debug, Clone)]
pub struct FieldValue<'a>(Field<'a>);

#[derive(Debug, Clone)]
enum Field<'a> {
    Borrowed(ValueRef<'a>),
    Owned(Value),
}

impl<'a> FieldValue<'a> {
    /// An owned value.
    pub fn owned(value: Value) -> Self {
        FieldValue(Field::Owned(value))
    }

    /// The value, borrowed.
    #[inline]
    pub(crate) fn get(&self) -> ValueRef<'_> {
        match &self.0 {
            Field::Borrowed(value) => *value,
            Field::Owned(value) => ValueRef::of(value),
        }
    }
}

/// Borrowed values, each of the EDM type its source type maps to (as `Value::from` does).
macro_rules! borrowed {
    ($($source:ty => $variant:ident),* $(,)?) => {$(
        impl<'a> From<$source> for FieldValue<'a> {
            #[inline]
            fn from(value: $source) -> Self {
                FieldValue(Field::Borrowed(ValueRef::$variant(value)))
            }
        }
    )*};
}
borrowed!(&'a str => Str, &'a [u8] => Binary, i32 => Int32, i64 => Int64, f64 => Double,
    bool => Boolean, DateTime<Utc> => DateTime, Uuid => Guid);

/// A property name fixed when the program compiles, with its length in UTF-16 code units
/// (which the entity size counts). The derive makes each of a type's names in a `const`
/// block, so the length is counted by the compiler, never on a write; it also checks each name
/// by the service's rule when the type compiles, so a write does not check it again (a name
/// made here by hand must be a valid property name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct StaticName {
    name: &'static str,
    utf16_len: usize,
}

impl StaticName {
    /// `name`, measured.
    pub const fn new(name: &'static str) -> Self {
        StaticName { name, utf16_len: utf16_len(name) }
    }
}

impl ViewName for StaticName {
    const CHECKED: bool = true;

    fn text(&self) -> &str {
        self.name
    }

    fn utf16_len(&self) -> usize {
        self.utf16_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::KeyName;

    #[test]
    fn the_property_list_lists_the_walk() {
        let mut list = PropertyList(Vec::new());
        list.property(&StaticName::new("A"), ValueRef::Int32(1));
        list.property(&StaticName::new("B"), FieldValue::owned(Value::from("b")).get());
        assert_eq!(list.0, [("A".to_owned(), Value::Int32(1)), ("B".to_owned(), Value::from("b"))]);
    }

    #[test]
    fn a_json_text_past_the_fields_prepared_is_absent() {
        let key = |which, text: &str| CheckedKey::new(which, text.to_owned()).expect("a valid key");
        let prepared = PreparedWrite::new(
            key(KeyName::PartitionKey, "p"),
            key(KeyName::RowKey, "r"),
            vec![Some("{}".into()), None],
        );
        assert_eq!((prepared.json(0), prepared.json(1), prepared.json(2)), (Some("{}"), None, None));
    }
}
