//! The core of the Azure Table Storage SDK: the data model, the service's validation rules,
//! OData filters, key codecs, the traits `#[derive(TableEntity)]` implements, and an embedded
//! in-memory engine that behaves like the service.
//!
//! This crate has no network and no async runtime, so the engine can be embedded anywhere.
//! Applications normally depend on `table-client`, which re-exports everything here.

#![deny(missing_docs)]

pub mod batch;
pub mod datetime;
pub mod engine;
pub mod entity;
pub mod error;
pub mod filter;
mod identifier;
pub mod keys;
pub mod query;
pub mod typed;
pub mod validate;
pub mod value;

pub use batch::{MAX_BATCH_BODY, MAX_BATCH_OPERATIONS, Operation, WriteOutcome};
pub use entity::{ETag, Entity, EntityKey, IfMatch, Properties};
pub use error::{Error, ErrorCode, ErrorKind, KeyName, Result, Violation};
pub use filter::{CompareOp, Filter};
pub use query::{Continuation, Page, QueryRequest, TablePage, TableQuery};
pub use value::{EdmType, Value};

#[doc(hidden)]
pub use typed::private as __private;
pub use typed::{Column, KeyRange, Property, PropertyValue, TableEntity};
