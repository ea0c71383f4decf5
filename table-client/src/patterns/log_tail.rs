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
    ///
    /// ```rust
    /// use chrono::{DateTime, Duration, Utc};
    /// use table_client::{TableEntity, TableServiceClient};
    ///
    /// #[derive(Debug, Clone, PartialEq, TableEntity)]
    /// #[table(partition_key = "{employee}", row_key = "{submitted:inverted_ticks}", rename_all = "PascalCase")]
    /// struct ExpenseClaim {
    ///     #[table(key_only)]
    ///     employee: String,
    ///     #[table(key_only)]
    ///     submitted: DateTime<Utc>,
    ///     amount: f64,
    /// }
    ///
    /// # #[tokio::main]
    /// # async fn main() -> table_client::Result<()> {
    /// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
    /// let claims = service.create_table("Claims").await?.typed::<ExpenseClaim>();
    /// let now = Utc::now();
    /// for days_ago in 0..5 {
    ///     let submitted = now - Duration::days(days_ago);
    ///     claims.insert(&ExpenseClaim { employee: "ann".into(), submitted, amount: days_ago as f64 }).await?;
    /// }
    /// // The two newest claims, read as the first two rows of the partition.
    /// let newest = claims.latest("ann", 2).await?;
    /// assert_eq!(newest.iter().map(|c| c.amount).collect::<Vec<_>>(), [0.0, 1.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn latest(&self, partition_key: &str, n: usize) -> Result<Vec<T>> {
        self.query().partition(partition_key).top(n).collect().await
    }
}
