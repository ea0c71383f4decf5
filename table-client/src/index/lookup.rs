//! Index entities (`lookup(...)`): one row per indexed value listing the primary keys that
//! have it, e.g. last name -> employees.
//!
//! The list is stored as `"pk\trk"` lines in properties `Keys0`, `Keys1`, ... of at most 32 768
//! UTF-16 code units each (tab and newline cannot occur in keys, so the encoding is
//! unambiguous), so it grows past one property's 64 KiB; at the 1 MiB entity limit the write
//! fails with `EntityTooLarge` naming the lookup row, and nothing is lost.

use std::collections::BTreeSet;

use futures::StreamExt;
use table_core::typed::{IndexDef, KeyTemplates, TableEntity};
use table_core::{
    ETag, Entity, EntityKey, IfMatch, MAX_PROPERTY_VALUE_SIZE, Operation, Result, Value, check_entity,
    utf16_len,
};

use crate::markers::INDEX;
use crate::query::QueryStream;
use crate::table::TableClient;

const KEYS_PREFIX: &str = "Keys";

/// A lookup row as read: the listed keys and the ETag to write it back conditionally.
#[derive(Debug, Clone, Default)]
pub(crate) struct LookupRow {
    pub(crate) keys: BTreeSet<EntityKey>,
    /// `None` when the row does not exist yet.
    pub(crate) etag: Option<ETag>,
}

impl LookupRow {
    pub(crate) fn from_entity(entity: &Entity) -> LookupRow {
        let mut keys = BTreeSet::new();
        for (name, value) in &entity.properties {
            if let (true, Value::String(text)) = (name.starts_with(KEYS_PREFIX), value) {
                keys.extend(text.lines().filter_map(|line| {
                    let (pk, rk) = line.split_once('\t')?;
                    Some(EntityKey::new(pk, rk))
                }));
            }
        }
        LookupRow { keys, etag: entity.etag.clone() }
    }

    /// Reads the lookup row at `key` (empty when missing).
    pub(crate) async fn read(table: &TableClient, key: &EntityKey) -> Result<LookupRow> {
        Ok(table
            .get_maintained(&key.partition_key, &key.row_key)
            .await?
            .map(|e| LookupRow::from_entity(&e))
            .unwrap_or_default())
    }

    /// The operation that stores this list at `key` conditioned on the ETag read: insert when
    /// the row did not exist, delete when the list became empty, replace otherwise. `None` when
    /// nothing needs writing.
    pub(crate) fn write_op(&self, index: &IndexDef, key: &EntityKey) -> Result<Option<Operation>> {
        match (&self.etag, self.keys.is_empty()) {
            (None, true) => Ok(None),
            (Some(etag), true) => {
                Ok(Some(Operation::Delete { key: key.clone(), if_match: IfMatch::ETag(etag.clone()) }))
            }
            (None, false) => Ok(Some(Operation::Insert(self.to_entity(index, key)?))),
            (Some(etag), false) => Ok(Some(Operation::Replace {
                entity: self.to_entity(index, key)?,
                if_match: IfMatch::ETag(etag.clone()),
            })),
        }
    }

    /// The lookup row storing this list at `key`; `EntityTooLarge` past the 1 MiB limit.
    pub(crate) fn to_entity(&self, index: &IndexDef, key: &EntityKey) -> Result<Entity> {
        let mut entity = Entity::new(key.partition_key.clone(), key.row_key.clone()).with(INDEX, index.name);
        let max_units = MAX_PROPERTY_VALUE_SIZE / 2;
        let mut chunk = String::new();
        let mut chunk_units = 0;
        let mut n = 0;
        for k in &self.keys {
            let line_units = utf16_len(&k.partition_key) + utf16_len(&k.row_key) + 2;
            if chunk_units + line_units > max_units {
                entity.insert(format!("{KEYS_PREFIX}{n}"), std::mem::take(&mut chunk));
                n += 1;
                chunk_units = 0;
            }
            chunk.push_str(&k.partition_key);
            chunk.push('\t');
            chunk.push_str(&k.row_key);
            chunk.push('\n');
            chunk_units += line_units;
        }
        entity.insert(format!("{KEYS_PREFIX}{n}"), chunk);
        // The 1 MiB entity limit bounds a list: refuse clearly rather than drop keys.
        check_entity(&entity)?;
        Ok(entity)
    }
}

/// The entities listed by the lookup row at `key`, fetched `concurrency` at a time. Keys whose
/// entity no longer exists are skipped (a cross-partition lookup is eventually consistent).
pub(crate) fn lookup_stream<T: TableEntity + Send + 'static>(
    table: TableClient,
    templates: KeyTemplates,
    key: EntityKey,
    concurrency: usize,
) -> QueryStream<T> {
    QueryStream::new(async_stream::try_stream! {
        templates.check_key(&key)?;
        let row = LookupRow::read(&table, &key).await?;
        let typed = table.typed::<T>();
        let fetches = futures::stream::iter(row.keys.into_iter().map(|k| {
            let typed = typed.clone();
            async move { typed.get_if_exists(&k).await }
        }))
        .buffered(concurrency.max(1));
        futures::pin_mut!(fetches);
        while let Some(found) = fetches.next().await {
            if let Some(value) = found? {
                yield value;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use table_core::KeyName;
    use table_core::typed::{IndexKind, KeyTemplate};

    static TEMPLATE: KeyTemplate = KeyTemplate { key: KeyName::RowKey, text: "x", segments: &[] };
    static DEF: IndexDef = IndexDef {
        name: "by_x",
        kind: IndexKind::Lookup,
        same_partition: true,
        partition_key: &TEMPLATE,
        row_key: &TEMPLATE,
        projection: None,
    };

    #[test]
    fn lists_split_across_properties_and_read_back() {
        let keys: BTreeSet<EntityKey> =
            (0..5000).map(|i| EntityKey::new("Sales", format!("empid_{i:08}"))).collect();
        let row = LookupRow { keys: keys.clone(), etag: None };
        let entity = row.to_entity(&DEF, &EntityKey::new("Sales", "lastname_Jones")).unwrap();
        assert!(entity.properties.keys().filter(|k| k.starts_with(KEYS_PREFIX)).count() >= 2, "over 64 KiB");
        assert_eq!(LookupRow::from_entity(&entity).keys, keys);
    }

    #[test]
    fn a_list_over_the_entity_limit_is_a_clear_error() {
        let keys: BTreeSet<EntityKey> =
            (0..40_000).map(|i| EntityKey::new("Sales", format!("empid_{i:08}"))).collect();
        let row = LookupRow { keys, etag: None };
        let err = row.to_entity(&DEF, &EntityKey::new("Sales", "lastname_Jones")).unwrap_err();
        assert_eq!(err.code().map(|c| c.as_str()), Some("EntityTooLarge"));
    }
}
