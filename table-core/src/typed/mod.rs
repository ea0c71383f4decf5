//! The typed layer: Rust structs as entities.
//!
//! [`TableEntity`] is what `#[derive(TableEntity)]` implements: the mapping between a struct and
//! an [`Entity`](crate::Entity), key construction from [`KeyTemplate`]s, the discriminator of
//! heterogeneous tables, projection, and index declarations ([`IndexDef`]). [`PropertyValue`] and
//! [`Property`] convert single fields, [`KeyValue`] writes them into keys, and [`Column`] builds
//! typed filters. Readers hand a typed decoder each entity as read, without building an
//! `Entity` (the hidden `EntityParts`/`PropertyList` of the `decode` module), and the embedded
//! engine stores a typed value's fields without building one either (`encode`).

mod column;
mod decode;
mod decoder;
mod encode;
mod entity;
mod field;
#[doc(hidden)]
pub mod grammar;
mod index;
pub(crate) mod private;
mod template;

#[doc(hidden)]
pub use crate::validate::FieldSink;
pub use column::{
    Column, ColumnValue, DateFormattedKey, KeyColumn, KeyEquality, KeyOperand, KeyOrder, OrderedWholeKey,
    PARTITION_KEY, PartOfCompositeKey, ROW_KEY, TIMESTAMP, UnorderedWholeKey,
};
#[doc(hidden)]
pub use decode::{EntityParts, EntityReader, PropertyBag, PropertyList, PropertySlots, ReadEntity, Taken};
#[doc(hidden)]
pub use decoder::Decoder;
pub(crate) use encode::written_entity;
pub use encode::{FieldValue, PreparedWrite, StaticName};
pub use entity::{ENTITY_TYPE_PROPERTY, ENTITY_VERSION_PROPERTY, TableEntity};
pub use field::{KeyValue, OrderedKeyValue, Property, PropertyValue, ValueError};
pub use index::{Index, IndexDef, IndexKind, LookupIndex, SecondaryIndex};
#[doc(hidden)]
pub use template::CheckedKey;
pub use template::{KeyBuilder, KeyRange, KeyTemplate, KeyTemplates, Segment};
