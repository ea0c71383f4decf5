//! The typed layer: Rust structs as entities, with each derive beside the trait it implements
//! (as sqlx's `encode` module holds the `Encode` trait and its derive). [`TableEntity`] and
//! [`PropertyValue`] each name a trait and the derive of the same name, so one import brings
//! both; the crate root re-exports the pair for `use table_client::TableEntity`.
//!
//! The derive's attributes are documented, with an example, on the [`TableEntity`] trait. The
//! rest is the typed vocabulary the derive generates code against: [`Property`] and
//! [`KeyValue`] for fields, [`KeyTemplate`]s and [`KeyRange`]s for keys, [`Column`]s for typed
//! filters, and [`IndexDef`]s for declared indexes.

// Listed, not globbed, so that nothing hidden in `table_core::typed` is re-exported: a public
// item added there is added here too.
pub use table_core::typed::{
    Column, ColumnValue, ENTITY_TYPE_PROPERTY, ENTITY_VERSION_PROPERTY, IndexDef, IndexKind, KeyBuilder,
    KeyRange, KeyTemplate, KeyValue, PARTITION_KEY, Property, PropertyValue, ROW_KEY, Segment, TIMESTAMP,
    TableEntity, ValueError,
};
pub use table_derive::{PropertyValue, TableEntity};
