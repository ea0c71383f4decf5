//! Checking an indexed table against what a clean rebuild of its indexes would produce.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use table_core::typed::{ENTITY_TYPE_PROPERTY, IndexKind, TableEntity};
use table_core::{Entity, EntityKey, Error, Result};

use super::cross_partition::drain_index_intents;
use super::lookup::LookupRow;
use super::rows::{PRIMARY_TIMESTAMP, index_keys, index_of, make_copy};
use crate::error;
use crate::markers::primary_of;
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
    /// Rows with `T`'s discriminator (`entity_type`) that `T` cannot read (e.g. written by a
    /// newer version of the type), with why: their index rows cannot be judged.
    pub unreadable: Vec<(EntityKey, String)>,
}

impl IndexReport {
    /// `true` when the indexes equal a clean rebuild and no intent is pending.
    pub fn is_consistent(&self) -> bool {
        self.missing.is_empty()
            && self.stale.is_empty()
            && self.outdated.is_empty()
            && self.pending_intents == 0
            && self.unreadable.is_empty()
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
    unreadable: Vec<(EntityKey, Error)>,
    actual_copies: BTreeMap<Slot, Entity>,
    actual_lists: BTreeMap<Slot, BTreeSet<EntityKey>>,
    expected_copies: BTreeMap<Slot, Entity>,
    expected_lists: BTreeMap<Slot, BTreeSet<EntityKey>>,
}

/// Scans the whole table, sorting rows into outbox intents, `T`'s index rows and `T`'s primaries.
async fn scan<T: TableEntity>(table: &TableClient) -> Result<Scan> {
    let mut scan = Scan::default();
    // As stored: the rows the SDK maintains are opened as such, the others as the
    // application's rows.
    let mut rows = table.raw().query().stream();
    while let Some(row) = rows.next().await {
        let row = row?;
        if is_outbox_partition(&row.partition_key) {
            scan.pending_intents += 1;
            continue;
        }
        let row = match index_of(&row).is_some() {
            true => table.open_maintained(row).await?,
            false => table.open(row).await?,
        };
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
        // Rows that are not `T` (other entity types sharing the table) are not primaries; a
        // row carrying `T`'s discriminator is, and one `T` cannot read is reported, never
        // skipped, since its index rows would otherwise look stale.
        let value = match T::from_entity(row.clone()) {
            Ok(value) => value,
            Err(e) if is_of_type::<T>(&row) => {
                scan.unreadable.push((row.key(), e));
                continue;
            }
            Err(_) => continue,
        };
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
            unreadable: self.unreadable.iter().map(|(key, e)| (key.clone(), e.to_string())).collect(),
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
        // The index rows of a primary this build cannot read are neither expected nor stale.
        let unreadable: BTreeSet<&EntityKey> = self.unreadable.iter().map(|(key, _)| key).collect();
        report.stale.extend(
            self.actual_copies
                .iter()
                .filter(|(slot, copy)| {
                    !self.expected_copies.contains_key(*slot)
                        && primary_of(copy).is_none_or(|primary| !unreadable.contains(&primary))
                })
                .map(|(slot, _)| slot.clone()),
        );
        for (slot, want) in &self.expected_lists {
            if self.actual_lists.get(slot).is_none_or(|have| !want.is_subset(have)) {
                report.missing.push(slot.clone());
            }
        }
        for (slot, have) in &self.actual_lists {
            let mut judged = have.iter().filter(|key| !unreadable.contains(key)).peekable();
            let stale = match self.expected_lists.get(slot) {
                // An empty list is stale; one naming only unreadable primaries is not judged.
                None => have.is_empty() || judged.peek().is_some(),
                Some(want) => !judged.all(|key| want.contains(key)),
            };
            if stale {
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
    let mut scan = scan::<T>(table).await?;
    if !scan.unreadable.is_empty() {
        // A rebuild would delete the index rows of primaries it cannot read.
        let count = scan.unreadable.len();
        let (key, cause) = scan.unreadable.swap_remove(0);
        return Err(error::invalid_input(format!(
            "cannot rebuild the indexes of `{}` in table {}: {count} of its rows cannot be read by this \
             build (first: {key}), and their index rows would be lost; nothing was changed",
            std::any::type_name::<T>(),
            table.name()
        ))
        .with_source(cause));
    }
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

/// `true` when `row` carries `T`'s discriminator (`entity_type`), so it is `T`'s whether or
/// not this build reads it.
fn is_of_type<T: TableEntity>(row: &Entity) -> bool {
    T::ENTITY_TYPE.is_some_and(|name| row.get(ENTITY_TYPE_PROPERTY).and_then(|v| v.as_str()) == Some(name))
}

/// A copy's custom properties without the timestamp marker (which records when, not what).
fn without_timestamp(row: &Entity) -> BTreeMap<&String, &table_core::Value> {
    row.properties.iter().filter(|(k, _)| k.as_str() != PRIMARY_TIMESTAMP).collect()
}
