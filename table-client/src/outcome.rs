//! The outcome helpers every write path shares: telling a missing entity from a missing
//! table, reading "not found" as `None`, and requiring the ETag a write or a read must carry.
//!
//! A leaf: it depends on `table_core` and the crate's error constructors only, so any module of
//! the crate may use it.

use table_core::{ETag, Entity, Error, ErrorCode, ErrorKind, IfMatch, Result};

use crate::error;

/// `true` for a 404 about the entity, not about its table.
pub(crate) fn is_entity_missing(e: &Error) -> bool {
    e.kind() == ErrorKind::NotFound && e.code() != Some(&ErrorCode::TableNotFound)
}

/// `Ok(None)` where the entity does not exist; a missing table stays an error.
pub(crate) fn if_exists<T>(result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if is_entity_missing(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The condition "unchanged since `row` was read": a row read without an ETag is an error,
/// never an unconditional write.
pub(crate) fn read_if_match(row: &Entity) -> Result<IfMatch> {
    require_etag(row.etag.clone()).map(IfMatch::ETag)
}

/// The ETag a successful write must report.
pub(crate) fn require_etag(etag: Option<ETag>) -> Result<ETag> {
    etag.ok_or_else(|| error::decode("the service answered a write without an ETag"))
}
