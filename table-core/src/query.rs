//! One page of a query: what is asked ([`QueryRequest`]) and what comes back ([`Page`]), with
//! the continuation that resumes exactly where the page stopped.
//!
//! Continuation tokens are opaque: the service's own tokens (`1!24!...`), Azurite's (base64)
//! or the embedded engine's. A [`Continuation`] serialises to one string so a caller can store
//! it and resume a later query.

use crate::entity::Entity;
use crate::filter::Filter;

/// The position where the next page starts, as the server encoded it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Continuation {
    /// `NextPartitionKey` token.
    pub next_partition_key: String,
    /// `NextRowKey` token, when the server sent one.
    pub next_row_key: Option<String>,
}

/// A request for one page of entities.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryRequest {
    /// `$filter`.
    pub filter: Option<Filter>,
    /// `$select`: property names to return.
    pub select: Option<Vec<String>>,
    /// `$top`: at most this many entities in this page (1..=1000).
    pub top: Option<u32>,
    /// Where to resume.
    pub continuation: Option<Continuation>,
}

/// One page of entities.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// The entities, ordered by `PartitionKey` then `RowKey` (Azure Storage; Cosmos does not sort).
    pub entities: Vec<Entity>,
    /// Present when more entities may follow, even if this page is short or empty.
    pub continuation: Option<Continuation>,
}

/// A request for one page of table names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableQuery {
    /// `$filter` over `TableName`.
    pub filter: Option<Filter>,
    /// `$top`.
    pub top: Option<u32>,
    /// `NextTableName` token.
    pub next_table_name: Option<String>,
}

/// One page of table names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TablePage {
    /// Table names, in name order.
    pub tables: Vec<String>,
    /// `NextTableName` token, when more follow.
    pub next_table_name: Option<String>,
}
