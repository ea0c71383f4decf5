//! Compound-key range reads: a RowKey such as `review_{employee:06}_{at:ticks}` makes "all
//! reviews of one employee" a prefix and "those of one month" a range, both ordered scans of a
//! contiguous slice of the partition rather than filters over every row. The derive builds the
//! [`KeyRange`]s (`Type::row_key_prefix(..)`, `Type::row_key_range(..)`); these read them.

use table_core::typed::{KeyRange, TableEntity};

use crate::query::Query;
use crate::typed_table::TypedTable;

impl<T: TableEntity + Send + 'static> TypedTable<T> {
    /// The entities whose key lies in `range`, across the whole table (a PartitionKey range,
    /// or a RowKey range over every partition). A RowKey range, or a PartitionKey range open
    /// at one end, reads every partition: call [`Query::table_scan`] on the result to mean it.
    pub fn query_range(&self, range: &KeyRange) -> Query<T> {
        self.query().filter(range.to_filter())
    }

    /// The entities of `partition_key` whose key lies in `range` (usually a RowKey range):
    /// the guide's `PartitionKey eq .. and RowKey ge .. and RowKey le ..`.
    pub fn query_range_in(&self, partition_key: &str, range: &KeyRange) -> Query<T> {
        self.query().filter(range.in_partition(partition_key))
    }
}
