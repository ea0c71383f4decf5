//! Helpers for the design guide's patterns that are not index maintenance, one module each.
//!
//! - Log tail ([`TypedTable::latest`](crate::TypedTable::latest)): with an `inverted_ticks`
//!   RowKey the newest entity sorts first, so "latest n" is `top(n)` on the partition.
//! - Compound keys ([`TypedTable::query_range`](crate::TypedTable::query_range),
//!   [`query_range_in`](crate::TypedTable::query_range_in)): read by a leading-fields prefix or
//!   range of a key template, an efficient range scan instead of a filter on properties.
//! - High-volume delete ([`TableRotation`]): one table per period; dropping a table is one
//!   request instead of deleting millions of rows.
//! - Data series ([`DataSeries`]): a fixed array stored as one property per slot, so one slot
//!   is updated by a merge without reading the others.
//! - Wide entities ([`WideTable`]): more than 252 properties split across rows of one partition,
//!   written in one transaction so readers never see a mix of versions.
//! - Large entities ([`LargeProperty`]): one string or binary value over 64 KiB split across
//!   several properties of one entity, up to the 1 MiB entity limit.
//!
//! Every helper relies on the clients' own local validation (keys, names, sizes, batch rules),
//! so anything the service would refuse is refused before any request.

mod data_series;
mod key_range;
mod large;
mod log_tail;
mod rotation;
mod wide;

pub use data_series::DataSeries;
pub use large::LargeProperty;
pub use rotation::{Period, TableRotation};
pub use wide::WideTable;
