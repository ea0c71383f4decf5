//! The write side of the typed layer: a typed value as the fields it is stored as, borrowed
//! from the value where they can be, so that the embedded engine stores it without a generic
//! [`Entity`] (a `BTreeMap` of owned names and values, built and dropped on every write).
//!
//! [`EntityFields`] holds the keys and the custom properties in ascending name order, each name
//! once, as the engine's row layout and the entity rules (the `validate` module) take them;
//! [`TableEntity::to_fields`](super::TableEntity::to_fields), which the derive generates,
//! builds it. Invariant: a type's fields hold exactly what its `to_entity` holds
//! (same keys, names and values), so the stored row, and every error of the write, is the
//! same on either path. Each name is a [`StaticName`], measured in UTF-16 units once (for a
//! derived type, when it compiles) rather than on every write.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::entity::Entity;
use crate::typed::CheckedKey;
use crate::validate::{EntityView, ViewName};
use crate::value::ValueRef;
use crate::value::{Value, utf16_len};

/// One property value to write: borrowed from the field, or owned when the field's type makes
/// its value (a JSON field, a newtype's [`PropertyValue::to_value`](super::PropertyValue)).
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
/// block, so the length is counted by the compiler, never on a write. Ordered by name (the
/// length follows from the name).
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
    fn text(&self) -> &str {
        self.name
    }

    fn utf16_len(&self) -> usize {
        self.utf16_len
    }
}

/// A typed value's keys and custom properties, to be written whole (see the module docs).
#[derive(Debug, Clone)]
pub struct EntityFields<'a> {
    partition_key: CheckedKey,
    row_key: CheckedKey,
    /// In ascending name order, each name once. A `None` is a property left out (a derived
    /// type's `None` field): kept, so that a derived type's list is taken as it comes.
    properties: Vec<(StaticName, Option<FieldValue<'a>>)>,
    /// How many of `properties` are `Some`.
    count: usize,
}

impl<'a> EntityFields<'a> {
    /// The keys, with room for `capacity` properties. A write does not check the keys again:
    /// a [`CheckedKey`] passed [`validate_key`](crate::validate_key) when it was made (a derived
    /// `to_fields` passes the keys its key templates built and checked).
    pub fn new(partition_key: CheckedKey, row_key: CheckedKey, capacity: usize) -> Self {
        EntityFields { partition_key, row_key, properties: Vec::with_capacity(capacity), count: 0 }
    }

    /// The keys and `properties` (`None`s left out), whose names are in ascending order, each
    /// once: what a derived `to_fields` passes, its names sorted when the type expands (the
    /// derive refuses two fields of one name). Takes the list whole, without comparing names,
    /// which [`push`](Self::push) does per property; a list out of order is a bug in the
    /// caller, caught by debug builds.
    // A `Vec` rather than an array: a derived `to_fields` passes `vec![...]`, whose elements
    // are written straight into the allocation, where an array was built on the stack and
    // then copied into it (a `memcpy` of 448 bytes for eight properties: 76 instructions of a
    // typed insert, ops_probe `probe_inserts`). Inlined into `to_fields`.
    #[inline]
    pub fn from_sorted(
        partition_key: CheckedKey,
        row_key: CheckedKey,
        properties: Vec<(StaticName, Option<FieldValue<'a>>)>,
    ) -> Self {
        debug_assert!(
            properties.windows(2).all(|pair| pair[0].0 < pair[1].0),
            "property names out of order or repeated"
        );
        let count = properties.iter().filter(|(_, value)| value.is_some()).count();
        EntityFields { partition_key, row_key, properties, count }
    }

    /// Adds the property `name` (nothing for `None`), replacing one of that name, as
    /// `Entity::insert` does. `name` must be a valid property name, which a write does not
    /// check again (a derived type's names are checked when it compiles). Measures the name,
    /// which [`from_sorted`](Self::from_sorted) receives measured.
    pub fn push(&mut self, name: &'static str, value: Option<FieldValue<'a>>) {
        let Some(value) = value else {
            return;
        };
        let name = StaticName::new(name);
        let value = Some(value);
        match self.properties.last() {
            Some((last, _)) if *last >= name => {
                match self.properties.binary_search_by(|(existing, _)| existing.cmp(&name)) {
                    Ok(at) => {
                        let replaced = std::mem::replace(&mut self.properties[at].1, value);
                        if replaced.is_none() {
                            self.count += 1;
                        }
                    }
                    Err(at) => {
                        self.properties.insert(at, (name, value));
                        self.count += 1;
                    }
                }
            }
            _ => {
                self.properties.push((name, value));
                self.count += 1;
            }
        }
    }

    /// The properties there are, in ascending name order.
    fn present(&self) -> impl Iterator<Item = (&StaticName, &FieldValue<'a>)> {
        self.properties.iter().filter_map(|(name, value)| Some((name, value.as_ref()?)))
    }

    /// The same entity as an [`Entity`]: what the type's `to_entity` makes.
    pub fn to_entity(&self) -> Entity {
        Entity {
            partition_key: self.partition_key.as_str().to_owned(),
            row_key: self.row_key.as_str().to_owned(),
            timestamp: None,
            etag: None,
            properties: self
                .present()
                .map(|(name, value)| (name.name.to_owned(), value.get().to_value()))
                .collect(),
        }
    }
}

impl EntityView for EntityFields<'_> {
    const NAMES_CHECKED: bool = true;
    const KEYS_CHECKED: bool = true;

    type Name = StaticName;

    fn partition_key(&self) -> &str {
        self.partition_key.as_str()
    }

    fn row_key(&self) -> &str {
        self.row_key.as_str()
    }

    fn property_count(&self) -> usize {
        self.count
    }

    fn properties(&self) -> impl Iterator<Item = (&StaticName, ValueRef<'_>)> {
        self.present().map(|(name, value)| (name, value.get()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::KeyName;

    /// Fields with the keys `p` and `r`, and room for `capacity` properties.
    fn fields_p_r(capacity: usize) -> EntityFields<'static> {
        EntityFields::new(key(KeyName::PartitionKey, "p"), key(KeyName::RowKey, "r"), capacity)
    }

    fn key(which: KeyName, text: &str) -> CheckedKey {
        CheckedKey::new(which, text.to_owned()).expect("a valid key")
    }

    #[test]
    fn properties_stay_in_name_order_whatever_order_they_come_in() {
        let mut fields = fields_p_r(2);
        for (name, n) in [("B", 1), ("D", 2), ("A", 3), ("C", 4), ("B", 5)] {
            fields.push(name, Some(FieldValue::from(n)));
        }
        fields.push("E", None);
        let expected = Entity::new("p", "r").with("A", 3).with("B", 5).with("C", 4).with("D", 2);
        assert_eq!(fields.to_entity(), expected);
        let names: Vec<&str> = fields.properties().map(|(name, _)| name.text()).collect();
        assert_eq!(names, ["A", "B", "C", "D"]);
    }

    #[test]
    fn a_sorted_list_is_kept_as_it_is_without_its_nones() {
        let fields = EntityFields::from_sorted(
            key(KeyName::PartitionKey, "p"),
            key(KeyName::RowKey, "r"),
            vec![
                (StaticName::new("A"), Some(FieldValue::from(1))),
                (StaticName::new("B"), None),
                (StaticName::new("C"), Some(FieldValue::from("c"))),
            ],
        );
        assert_eq!(fields.to_entity(), Entity::new("p", "r").with("A", 1).with("C", "c"));
        assert_eq!(fields.property_count(), 2);
        let names: Vec<&str> = fields.properties().map(|(name, _)| name.text()).collect();
        assert_eq!(names, ["A", "C"]);
    }

    #[test]
    fn a_property_pushed_where_a_sorted_list_left_one_out_is_counted() {
        let mut fields = EntityFields::from_sorted(
            key(KeyName::PartitionKey, "p"),
            key(KeyName::RowKey, "r"),
            vec![(StaticName::new("A"), None), (StaticName::new("C"), Some(FieldValue::from(3)))],
        );
        fields.push("A", Some(FieldValue::from(1)));
        assert_eq!(fields.property_count(), 2);
        fields.push("C", Some(FieldValue::from(4)));
        fields.push("C", None);
        assert_eq!(fields.property_count(), 2);
        assert_eq!(fields.to_entity(), Entity::new("p", "r").with("A", 1).with("C", 4));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "out of order")]
    fn a_list_out_of_order_is_caught_in_debug_builds() {
        EntityFields::from_sorted(
            key(KeyName::PartitionKey, "p"),
            key(KeyName::RowKey, "r"),
            vec![(StaticName::new("B"), None), (StaticName::new("A"), None)],
        );
    }
}
