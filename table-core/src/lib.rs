//! The core of the Azure Table Storage SDK: the data model, the service's validation rules,
//! OData filters, key codecs, the traits `#[derive(TableEntity)]` implements, and an embedded
//! in-memory engine that behaves like the service.
//!
//! This crate has no network and no async runtime, so the engine can be embedded anywhere.
//! Applications normally depend on `table-client`, which re-exports what they need from here.
//!
//! # Layout
//!
//! Every public item has one path. The root is the crate's vocabulary, flat: the data model
//! ([`Entity`], [`Value`], [`ETag`], ...), errors, filters, batch operations, query requests,
//! a table's stored access policies ([`SignedIdentifier`]), the service's settings
//! ([`ServiceProperties`]), and the service's limits and validation rules. The modules that
//! define them (`entity`, `value`, `error`, `filter`, `batch`, `query`, `validate`,
//! `access_policy`, `service_properties`) are private: each holds a few
//! items whose names already say what they are (`MAX_ENTITY_SIZE`, `validate_key`,
//! `Filter`), so a module prefix would only add a second thing to remember.
//!
//! Four modules are namespaces, because their items form a family read with its prefix:
//! - [`engine`]: the embedded service, its options and its fault injection;
//! - [`typed`]: the traits the derives implement, key templates and typed columns;
//! - [`keys`]: the key codecs (`keys::ticks`, `keys::ordered`, `keys::parse_date`);
//! - [`datetime`]: `Edm.DateTime` text and .NET ticks (`datetime::to_ticks`).
//!
//! Two hidden paths are not API and may change in any release: `__private`, which the code
//! the derives generate calls, and `typed::grammar`, which the derive reads while it expands.

#![deny(missing_docs)]

// The derives name `table_core::__private` (with `crate = "table_core"`): unit tests of derived
// types inside this crate find it here.
#[cfg(test)]
extern crate self as table_core;

mod access_policy;
mod batch;
pub mod datetime;
pub mod engine;
mod entity;
mod error;
mod filter;
mod identifier;
pub mod keys;
mod query;
mod service_properties;
mod text;
pub mod typed;
mod validate;
mod value;

pub use access_policy::{
    MAX_SIGNED_IDENTIFIER_ID_LEN, MAX_SIGNED_IDENTIFIERS, SignedIdentifier, validate_signed_identifiers,
};
pub use batch::{
    CheckedOperation, MAX_BATCH_BODY, MAX_BATCH_OPERATIONS, Operation, WriteOutcome, estimated_body_size,
    validate_batch, validate_operation,
};
pub use entity::{ETag, Entity, EntityKey, IfMatch, Properties};
pub use error::{Error, ErrorCode, ErrorKind, KeyName, Origin, Result, Violation};
pub use filter::{CompareOp, Filter, MAX_FILTER_COMPARISONS, MAX_FILTER_NESTING};
pub use query::{Continuation, Page, QueryRequest, TablePage, TableQuery};
pub use service_properties::{
    CORS_METHODS, CorsRule, GeoReplicationStatus, Logging, MAX_CORS_RULES, MAX_RETENTION_DAYS, Metrics,
    ServiceProperties, ServiceStatistics, validate_service_properties,
};
pub use validate::{
    MAX_ENTITY_SIZE, MAX_KEY_LEN, MAX_PROPERTIES, MAX_PROPERTY_NAME_LEN, MAX_PROPERTY_VALUE_SIZE,
    RESERVED_PROPERTY_NAMES, SYSTEM_PROPERTIES, check_entity, check_select, entity_size,
    is_forbidden_key_char, property_size, validate_entity, validate_key, validate_property_name,
    validate_select, validate_table_name, validate_value,
};
pub use value::{EdmType, Value, compare_ordinal, parse_guid, utf16_len};

/// Support for the code `#[derive(TableEntity)]` and `#[derive(PropertyValue)]` generate. Not a
/// public API: names here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::typed::private::*;
}
