//! The log-tail pattern: entities whose RowKey starts with `{at:inverted_ticks}` sort newest
//! first inside their partition, so the most recent ones are the first rows of a partition scan
//! and "latest n" needs no sort and reads only n rows.

use table_core::Result;
use table_core::typed::TableEntity;

use crate::typed_table::TypedTable;

impl<T: TableEntity + Send + 'static> TypedTable<T> {
    /// The first `n` entities of `partition_key` in RowKey order: the `n` newest when `T`'s
    /// RowKey template starts with an `inverted_ticks` field (the guide's log tail). Reads `n`
    /// rows at most, in as few pages as the service allows.
    pub async fn latest(&self, partition_key: &str, n: usize) -> Result<Vec<T>> {
        self.query().partition(partition_key).top(n).collect().await
    }
}
