//! The typed layer: Rust structs as entities, with each derive beside the trait it implements
//! (as sqlx's `encode` module holds the `Encode` trait and its derive). [`TableEntity`] and
//! [`PropertyValue`] each name a trait and the derive of the same name, so one import brings
//! both; the crate root re-exports the pair for `use table_client::TableEntity`.
//!
//! The derive's attributes are documented, with an example, on the [`TableEntity`] trait. The
//! rest is the typed vocabulary the derive generates code against: [`Property`] and
//! [`KeyValue`] for fields, [`KeyTemplate`]s and [`KeyRange`]s for keys, [`Column`]s for typed
//! filters ([`KeyColumn`]s for key-only fields), [`IndexDef`]s for declared indexes, and the
//! [`Index`] traits of the index handles the derive generates (`Employee::BY_EMAIL`).

// Listed, not globbed, so that nothing hidden in `table_core::typed` is re-exported: a public
// item added there is added here too.
pub use table_core::typed::{
    Column, ColumnValue, DateFormattedKey, ENTITY_TYPE_PROPERTY, ENTITY_VERSION_PROPERTY, Index, IndexDef,
    IndexKind, KeyBuilder, KeyColumn, KeyEquality, KeyOperand, KeyOrder, KeyRange, KeyTemplate, KeyTemplates,
    KeyValue, LookupIndex, OrderedKeyValue, OrderedWholeKey, PARTITION_KEY, PartOfCompositeKey, Property,
    PropertyValue, ROW_KEY, SecondaryIndex, Segment, TIMESTAMP, TableEntity, UnorderedWholeKey, ValueError,
};
pub use table_derive::{PropertyValue, TableEntity};
