//! Entities, their keys and ETags: the untyped ("dynamic") shape every row has.
//!
//! Properties live in a name-ordered map so that two entities with the same content compare
//! equal and print identically, whatever order the properties arrived in.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::value::Value;

/// The two-part primary key of an entity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntityKey {
    /// The `PartitionKey`: entities sharing it form one entity group.
    pub partition_key: String,
    /// The `RowKey`: unique within the partition.
    pub row_key: String,
}

impl EntityKey {
    /// A key from its two parts.
    pub fn new(partition_key: impl Into<String>, row_key: impl Into<String>) -> Self {
        EntityKey { partition_key: partition_key.into(), row_key: row_key.into() }
    }
}

impl std::fmt::Display for EntityKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "(PartitionKey={:?}, RowKey={:?})", self.partition_key, self.row_key)
    }
}

/// An opaque entity version, sent back in `If-Match` for optimistic concurrency.
///
/// The service's form is `W/"datetime'2026-11-22T04%3A28%3A30.7063148Z'"`; treat it as opaque
/// and echo it verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ETag(String);

impl ETag {
    /// Wraps an ETag string as received from the service.
    pub fn new(s: impl Into<String>) -> Self {
        ETag(s.into())
    }

    /// The ETag the service derives from an entity's timestamp.
    pub fn from_timestamp(t: DateTime<Utc>) -> Self {
        ETag::around_datetime(|text| crate::datetime::write_datetime(t, crate::datetime::ETAG_COLON, text))
    }

    /// [`from_timestamp`](Self::from_timestamp) of the instant `secs` seconds and `nanos`
    /// nanoseconds after the Unix epoch: an engine write's, which never builds a `DateTime`.
    pub(crate) fn from_unix_time(secs: i64, nanos: u32) -> Self {
        ETag::around_datetime(|text| crate::datetime::write_etag_time(secs, nanos, text))
    }

    /// The ETag of the date and time `write` appends, colons escaped.
    // Inlined, so each caller's `write` is too: formatted in place, as every write makes one.
    #[inline]
    fn around_datetime(write: impl FnOnce(&mut String)) -> Self {
        let mut text = String::with_capacity(48);
        text.push_str("W/\"datetime'");
        write(&mut text);
        text.push_str("'\"");
        ETag(text)
    }

    /// The ETag text, exactly as sent in `If-Match`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The timestamp of a `W/"datetime'...'"` ETag, if it has that form.
    pub fn timestamp(&self) -> Option<DateTime<Utc>> {
        let inner = self.0.strip_prefix("W/\"datetime'")?.strip_suffix("'\"")?;
        crate::datetime::parse_datetime(&inner.replace("%3A", ":")).ok()
    }
}

impl std::fmt::Display for ETag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The condition of a conditional write (`If-Match`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `*`: the entity must exist, any version.
    Any,
    /// The entity must exist with exactly this version.
    ETag(ETag),
}

impl IfMatch {
    /// The header value.
    pub fn as_header(&self) -> &str {
        match self {
            IfMatch::Any => "*",
            IfMatch::ETag(e) => e.as_str(),
        }
    }
}

impl From<ETag> for IfMatch {
    fn from(e: ETag) -> Self {
        IfMatch::ETag(e)
    }
}

/// Custom properties of an entity, ordered by name.
pub type Properties = BTreeMap<String, Value>;

/// One row: keys, the system properties the service maintains, and custom properties.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entity {
    /// The `PartitionKey`.
    pub partition_key: String,
    /// The `RowKey`.
    pub row_key: String,
    /// The `Timestamp` the service set on the last write; ignored when writing.
    pub timestamp: Option<DateTime<Utc>>,
    /// The version read with the entity; ignored when writing (use [`IfMatch`]).
    pub etag: Option<ETag>,
    /// Custom properties (never `PartitionKey`, `RowKey` or `Timestamp`).
    pub properties: Properties,
}

impl Entity {
    /// An entity with keys and no properties.
    pub fn new(partition_key: impl Into<String>, row_key: impl Into<String>) -> Self {
        Entity { partition_key: partition_key.into(), row_key: row_key.into(), ..Entity::default() }
    }

    /// Adds or replaces a property, builder style.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.properties.insert(name.into(), value.into());
        self
    }

    /// Adds or replaces a property, returning the previous value.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        self.properties.insert(name.into(), value.into())
    }

    /// A custom property by name.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.properties.get(name)
    }

    /// The entity's key.
    pub fn key(&self) -> EntityKey {
        EntityKey::new(self.partition_key.clone(), self.row_key.clone())
    }
}
