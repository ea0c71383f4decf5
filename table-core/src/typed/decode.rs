//! The typed fast path: one read entity handed to a decoder without building an [`Entity`].
//!
//! Flow. A reader (the JSON reader of the client's `wire` module, or the engine's stored row)
//! produces [`EntityParts`]: the keys, `Timestamp`, ETag and a [`PropertyList`] of the custom
//! properties, whose names borrow from the bytes read and whose values are already typed by
//! the one set of EDM rules that reader has. Then exactly one of two things happens:
//!
//! - untyped access calls [`EntityParts::into_entity`], the generic `Entity`;
//! - typed access calls [`TableEntity::from_parts`](super::TableEntity::from_parts), which
//!   the derive implements by taking each field's value out of the list, by name, with the very
//!   code its `from_entity` runs over an `Entity`'s map ([`PropertyBag`] abstracts the two).
//!
//! So a typed read differs from "generic `Entity`, then `from_entity`" only in where the values
//! wait meanwhile: no name is copied and no map node is allocated, yet every value, error and
//! error order is the same by construction (the property tests of the readers check it).
//!
//! Invariants: a [`PropertyList`] holds each name at most once, sorted by name (byte order, as
//! `String`'s `Ord`), so [`PropertyBag::take`] is a binary search and
//! [`EntityParts::into_entity`] fills the map from sorted input.

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use crate::entity::{ETag, Entity, Properties};
use crate::value::Value;

/// The parts of one read entity, `P` holding its custom properties: an `Entity`'s map, or a
/// [`PropertyList`] from a reader. Field names are those of [`Entity`], so generated decoding
/// code reads either alike.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EntityParts<P> {
    /// The `PartitionKey`.
    pub partition_key: String,
    /// The `RowKey`.
    pub row_key: String,
    /// The `Timestamp`, when read.
    pub timestamp: Option<DateTime<Utc>>,
    /// The ETag, when read.
    pub etag: Option<ETag>,
    /// The custom properties.
    pub properties: P,
}

/// The parts a reader hands over, properties borrowing from what it read.
pub type ReadEntity<'a> = EntityParts<PropertyList<'a>>;

impl From<Entity> for EntityParts<Properties> {
    fn from(entity: Entity) -> Self {
        let Entity { partition_key, row_key, timestamp, etag, properties } = entity;
        EntityParts { partition_key, row_key, timestamp, etag, properties }
    }
}

impl ReadEntity<'static> {
    /// The parts of an entity already built (e.g. one decrypted after reading), for a decoder.
    pub fn from_entity(entity: Entity) -> Self {
        let Entity { partition_key, row_key, timestamp, etag, properties } = entity;
        // A map iterates in ascending, unique name order: the list's invariant.
        let entries = properties.into_iter().map(|(name, value)| (Cow::Owned(name), Some(value))).collect();
        EntityParts { partition_key, row_key, timestamp, etag, properties: PropertyList { entries } }
    }
}

impl ReadEntity<'_> {
    /// The generic entity: every property not yet taken, names copied.
    pub fn into_entity(self) -> Entity {
        let EntityParts { partition_key, row_key, timestamp, etag, properties } = self;
        // From sorted, unique input the map is built in one pass (std bulk-builds it).
        let properties = properties
            .entries
            .into_iter()
            .filter_map(|(name, value)| Some((name.into_owned(), value?)))
            .collect();
        Entity { partition_key, row_key, timestamp, etag, properties }
    }
}

/// Where a decoder finds custom properties by name: an `Entity`'s map or a [`PropertyList`].
pub trait PropertyBag {
    /// Takes the property out (a second `take` of a name finds nothing).
    fn take(&mut self, name: &str) -> Option<Value>;

    /// The property, left in place.
    fn peek(&self, name: &str) -> Option<&Value>;
}

impl PropertyBag for Properties {
    fn take(&mut self, name: &str) -> Option<Value> {
        self.remove(name)
    }

    fn peek(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// The custom properties of a read entity: names (borrowed when the reader could) with their
/// values, sorted by name and each name once (see the module invariants).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PropertyList<'a> {
    /// `None` once taken.
    entries: Vec<(Cow<'a, str>, Option<Value>)>,
}

impl<'a> PropertyList<'a> {
    /// A list of properties given in ascending name order, each name once; `None` when they are
    /// not (the caller's order is its own invariant, so this is the checked door to it).
    pub fn from_sorted(entries: Vec<(Cow<'a, str>, Value)>) -> Option<Self> {
        if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
            return None;
        }
        Some(PropertyList { entries: entries.into_iter().map(|(n, v)| (n, Some(v))).collect() })
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.entries.binary_search_by(|(n, _)| n.as_ref().cmp(name)).ok()
    }
}

impl PropertyBag for PropertyList<'_> {
    fn take(&mut self, name: &str) -> Option<Value> {
        let at = self.find(name)?;
        self.entries[at].1.take()
    }

    fn peek(&self, name: &str) -> Option<&Value> {
        self.entries[self.find(name)?].1.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(names: &[&'static str]) -> Option<PropertyList<'static>> {
        PropertyList::from_sorted(names.iter().map(|n| (Cow::Borrowed(*n), Value::from(*n))).collect())
    }

    #[test]
    fn only_sorted_unique_names_make_a_list() {
        assert!(list(&["A", "B", "a"]).is_some());
        assert!(list(&["B", "A"]).is_none());
        assert!(list(&["A", "A"]).is_none());
    }

    #[test]
    fn a_taken_property_is_gone_for_the_entity_too() {
        let mut props = list(&["A", "B"]).expect("sorted");
        assert_eq!(props.peek("B"), Some(&Value::from("B")));
        assert_eq!(props.take("B"), Some(Value::from("B")));
        assert_eq!(props.take("B"), None);
        assert_eq!(props.peek("Z"), None);
        let parts = EntityParts { properties: props, ..ReadEntity::default() };
        assert_eq!(parts.into_entity().properties.keys().collect::<Vec<_>>(), ["A"]);
    }
}
