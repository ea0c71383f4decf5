//! Checking an indexed table against what a clean rebuild of its indexes would produce.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use table_core::typed::{IndexKind, TableEntity};
use table_core::{Entity, EntityKey, Result};

use super::lookup::LookupRow;
use super::outbox::is_outbox_partition;
use super::rows::{PRIMARY_TIMESTAMP, index_keys, index_of, make_copy};
use crate::table::TableClient;

/// The differences between a table's index rows and a clean rebuild from its primaries.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct IndexReport {
    /// Primaries of the type found.
    pub primaries: usize,
    /// Index rows a rebuild would write that are absent, or lookup lists missing a key
    /// (index name, row key).
    pub missing: Vec<(String, EntityKey)>,
    /// Index rows present that a rebuild would not write, or lookup lists with a key too many.
    pub stale: Vec<(String, EntityKey)>,
    /// Copies whose content differs from the rebuild's.
    pub outdated: Vec<(String, EntityKey)>,
    /// Outbox intents not yet drained.
    pub pending_intents: usize,
}

impl IndexReport {
    /// `true` when the indexes equal a clean rebuild and no intent is pending.
    pub fn is_consistent(&self) -> bool {
        self.missing.is_empty()
            && self.stale.is_empty()
            && self.outdated.is_empty()
            && self.pending_intents == 0
    }
}

/// Scans the whole table and compares `T`'s index rows with a rebuild from its primaries.
pub(crate) async fn verify<T: TableEntity>(table: &TableClient) -> Result<IndexReport> {
    let mut report = IndexReport::default();
    let mut actual_copies: BTreeMap<(String, EntityKey), Entity> = BTreeMap::new();
    let mut actual_lists: BTreeMap<(String, EntityKey), BTreeSet<EntityKey>> = BTreeMap::new();
    let mut expected_copies: BTreeMap<(String, EntityKey), Entity> = BTreeMap::new();
    let mut expected_lists: BTreeMap<(String, EntityKey), BTreeSet<EntityKey>> = BTreeMap::new();

    let rows = table.query().stream();
    futures::pin_mut!(rows);
    while let Some(row) = rows.next().await {
        let row = row?;
        if is_outbox_partition(&row.partition_key) {
            report.pending_intents += 1;
            continue;
        }
        if let Some(index) = index_of(&row).and_then(|name| T::indexes().iter().find(|i| i.name == name)) {
            let slot = (index.name.to_owned(), row.key());
            match index.kind {
                IndexKind::Secondary => {
                    actual_copies.insert(slot, row);
                }
                IndexKind::Lookup => {
                    actual_lists.insert(slot, LookupRow::from_entity(&row).keys);
                }
            }
            continue;
        }
        // Rows that are not `T` (other entity types sharing the table) are not primaries.
        let Ok(value) = T::from_entity(row.clone()) else {
            continue;
        };
        report.primaries += 1;
        for (index, key) in T::indexes().iter().zip(index_keys(Some(&value))?) {
            let Some(key) = key else { continue };
            let slot = (index.name.to_owned(), key.clone());
            match index.kind {
                IndexKind::Secondary => {
                    expected_copies.insert(slot, make_copy(index, &key, &row));
                }
                IndexKind::Lookup => {
                    expected_lists.entry(slot).or_default().insert(row.key());
                }
            }
        }
    }

    for (slot, want) in &expected_copies {
        match actual_copies.get(slot) {
            None => report.missing.push(slot.clone()),
            Some(have) if without_timestamp(have) != without_timestamp(want) => {
                report.outdated.push(slot.clone())
            }
            Some(_) => {}
        }
    }
    report.stale.extend(actual_copies.keys().filter(|slot| !expected_copies.contains_key(*slot)).cloned());
    for (slot, want) in &expected_lists {
        let have = actual_lists.get(slot);
        if have.is_none_or(|have| !want.is_subset(have)) {
            report.missing.push(slot.clone());
        }
    }
    for (slot, have) in &actual_lists {
        let want = expected_lists.get(slot);
        if want.is_none_or(|want| !have.is_subset(want)) {
            report.stale.push(slot.clone());
        }
    }
    Ok(report)
}

/// A copy's custom properties without the timestamp marker (which records when, not what).
fn without_timestamp(row: &Entity) -> BTreeMap<&String, &table_core::Value> {
    row.properties.iter().filter(|(k, _)| k.as_str() != PRIMARY_TIMESTAMP).collect()
}
