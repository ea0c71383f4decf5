//! The rows index maintenance writes: copies of a primary entity under an index key, and the
//! markers that tie them to their primary.

use chrono::{DateTime, Utc};
use table_core::typed::{IndexDef, PropertyBag, ReadEntity, TableEntity};
use table_core::{Entity, EntityKey, Result, Value};

use crate::markers::{INDEX, PRIMARY_PK, PRIMARY_RK};

/// The primary's `Timestamp` a cross-partition copy was made from: a copy is only ever
/// overwritten by one made from a state at least as new.
pub(crate) const PRIMARY_TIMESTAMP: &str = "_PrimaryTimestamp";

/// The copy of `primary` stored under `key` for `index`: every property, or the projected
/// ones, plus the markers.
pub(crate) fn make_copy(index: &IndexDef, key: &EntityKey, primary: &Entity) -> Entity {
    let mut copy = Entity::new(key.partition_key.clone(), key.row_key.clone());
    match index.projection {
        Some(names) => {
            for name in names {
                if let Some(v) = primary.properties.get(*name) {
                    copy.properties.insert((*name).to_owned(), v.clone());
                }
            }
        }
        None => copy.properties = primary.properties.clone(),
    }
    copy.insert(INDEX, index.name);
    copy.insert(PRIMARY_PK, primary.partition_key.clone());
    copy.insert(PRIMARY_RK, primary.row_key.clone());
    if !index.same_partition
        && let Some(ts) = primary.timestamp
    {
        copy.insert(PRIMARY_TIMESTAMP, Value::DateTime(ts));
    }
    copy
}

/// The index name a row is marked with.
pub(crate) fn index_of(row: &Entity) -> Option<&str> {
    row.get(INDEX)?.as_str()
}

/// The primary timestamp a cross-partition copy was made from.
pub(crate) fn copy_timestamp(row: &Entity) -> Option<DateTime<Utc>> {
    match row.get(PRIMARY_TIMESTAMP)? {
        Value::DateTime(t) => Some(*t),
        _ => None,
    }
}

/// Reads a copy as `R` (the indexed type, or a projection of it), as read by the backend:
/// the markers are removed and the primary's keys restored, so key-only fields parse from the
/// primary's keys.
pub(crate) fn read_copy<R: TableEntity>(mut row: ReadEntity<'_>) -> Result<R> {
    let primary = (row.properties.take(PRIMARY_PK), row.properties.take(PRIMARY_RK));
    let (Some(Value::String(partition_key)), Some(Value::String(row_key))) = primary else {
        let key = EntityKey::new(row.partition_key, row.row_key);
        return Err(crate::error::decode(format!("row {key} is not an index copy")));
    };
    for marker in [INDEX, PRIMARY_TIMESTAMP] {
        row.properties.take(marker);
    }
    row.partition_key = partition_key;
    row.row_key = row_key;
    R::from_parts(row)
}

/// A row read at an index key: the index it is marked with (`None` when unmarked) and the row
/// read as a copy (meaningful only for a row marked with the index asked for).
pub(crate) struct MarkedCopy<R> {
    pub(crate) index: Option<String>,
    pub(crate) copy: Result<R>,
}

/// Reads a row at an index key as [`MarkedCopy`], for a point read to check the marker that a
/// query over an index filters on.
pub(crate) fn read_marked_copy<R: TableEntity>(row: ReadEntity<'_>) -> Result<MarkedCopy<R>> {
    let index = match row.properties.peek(INDEX) {
        Some(Value::String(name)) => Some(name.clone()),
        _ => None,
    };
    Ok(MarkedCopy { index, copy: read_copy(row) })
}

/// `key`'s index keys of `value`, for every declared index (`None` where a value does not
/// produce one).
pub(crate) fn index_keys<T: TableEntity>(value: Option<&T>) -> Result<Vec<Option<EntityKey>>> {
    T::indexes()
        .iter()
        .map(|index| match value {
            Some(v) => v.index_key(index.name),
            None => Ok(None),
        })
        .collect()
}
