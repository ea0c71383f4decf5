//! Checking an indexed table against what a clean rebuild of its indexes would produce.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use table_core::typed::{IndexKind, TableEntity};
use table_core::{Entity, EntityKey, Result};

use super::cross_partition::drain_index_intents;
use super::lookup::LookupRow;
use super::rows::{PRIMARY_TIMESTAMP, index_keys, index_of, make_copy};
use crate::outbox::is_outbox_partition;
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

/// An index row's place: the index name and the row's key.
type Slot = (String, EntityKey);

/// What a full scan found: the index rows present, and those a rebuild from the primaries
/// would write.
#[derive(Default)]
struct Scan {
    primaries: usize,
    pending_intents: usize,
    actual_copies: BTreeMap<Slot, Entity>,
    actual_lists: BTreeMap<Slot, BTreeSet<EntityKey>>,
    expected_copies: BTreeMap<Slot, Entity>,
    expected_lists: BTreeMap<Slot, BTreeSet<EntityKey>>,
}

/// Scans the whole table, sorting rows into outbox intents, `T`'s index rows and `T`'s primaries.
async fn scan<T: TableEntity>(table: &TableClient) -> Result<Scan> {
    let mut scan = Scan::default();
    let mut rows = table.query().stream();
    while let Some(row) = rows.next().await {
        let row = row?;
        if is_outbox_partition(&row.partition_key) {
            scan.pending_intents += 1;
            continue;
        }
        if let Some(index) = index_of(&row).and_then(|name| T::indexes().iter().find(|i| i.name == name)) {
            let slot = (index.name.to_owned(), row.key());
            match index.kind {
                IndexKind::Secondary => {
                    scan.actual_copies.insert(slot, row);
                }
                IndexKind::Lookup => {
                    scan.actual_lists.insert(slot, LookupRow::from_entity(&row).keys);
                }
            }
            continue;
        }
        // Rows that are not `T` (other entity types sharing the table) are not primaries.
        let Ok(value) = T::from_entity(row.clone()) else { continue };
        scan.primaries += 1;
        for (index, key) in T::indexes().iter().zip(index_keys(Some(&value))?) {
            let Some(key) = key else { continue };
            let slot = (index.name.to_owned(), key.clone());
            match index.kind {
                IndexKind::Secondary => {
                    scan.expected_copies.insert(slot, make_copy(index, &key, &row));
                }
                IndexKind::Lookup => {
                    scan.expected_lists.entry(slot).or_default().insert(row.key());
                }
            }
        }
    }
    Ok(scan)
}

impl Scan {
    fn report(&self) -> IndexReport {
        let mut report = IndexReport {
            primaries: self.primaries,
            pending_intents: self.pending_intents,
            ..IndexReport::default()
        };
        for (slot, want) in &self.expected_copies {
            match self.actual_copies.get(slot) {
                None => report.missing.push(slot.clone()),
                Some(have) if without_timestamp(have) != without_timestamp(want) => {
                    report.outdated.push(slot.clone())
                }
                Some(_) => {}
            }
        }
        report.stale.extend(
            self.actual_copies.keys().filter(|slot| !self.expected_copies.contains_key(*slot)).cloned(),
        );
        for (slot, want) in &self.expected_lists {
            if self.actual_lists.get(slot).is_none_or(|have| !want.is_subset(have)) {
                report.missing.push(slot.clone());
            }
        }
        for (slot, have) in &self.actual_lists {
            if self.expected_lists.get(slot).is_none_or(|want| !have.is_subset(want)) {
                report.stale.push(slot.clone());
            }
        }
        report
    }
}

/// Scans the whole table and compares `T`'s index rows with a rebuild from its primaries.
pub(crate) async fn verify<T: TableEntity>(table: &TableClient) -> Result<IndexReport> {
    Ok(scan::<T>(table).await?.report())
}

/// Drains pending intents, then makes `T`'s index rows equal a rebuild from its primaries:
/// missing and outdated copies written, stale ones deleted, lookup lists rewritten. Returns
/// what was found before the repair.
pub(crate) async fn rebuild<T: TableEntity>(table: &TableClient) -> Result<IndexReport> {
    drain_index_intents::<T>(table).await?;
    let scan = scan::<T>(table).await?;
    let report = scan.report();
    for (slot, want) in &scan.expected_copies {
        if scan.actual_copies.get(slot).is_none_or(|have| without_timestamp(have) != without_timestamp(want))
        {
            table.insert_or_replace(want.clone()).await?;
        }
    }
    for (_, key) in scan.actual_copies.keys().filter(|slot| !scan.expected_copies.contains_key(*slot)) {
        table.remove(&key.partition_key, &key.row_key).await?;
    }
    let slots: BTreeSet<&Slot> = scan.expected_lists.keys().chain(scan.actual_lists.keys()).collect();
    for slot @ (name, key) in slots {
        let want = scan.expected_lists.get(slot).cloned().unwrap_or_default();
        if scan.actual_lists.get(slot) == Some(&want) {
            continue;
        }
        match T::indexes().iter().find(|i| i.name == name) {
            Some(index) if !want.is_empty() => {
                let row = LookupRow { keys: want, etag: None };
                table.insert_or_replace(row.to_entity(index, key)?).await?;
            }
            _ => {
                table.remove(&key.partition_key, &key.row_key).await?;
            }
        }
    }
    Ok(report)
}

/// A copy's custom properties without the timestamp marker (which records when, not what).
fn without_timestamp(row: &Entity) -> BTreeMap<&String, &table_core::Value> {
    row.properties.iter().filter(|(k, _)| k.as_str() != PRIMARY_TIMESTAMP).collect()
}
