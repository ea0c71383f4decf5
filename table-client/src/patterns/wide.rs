//! The wide-entity pattern: a logical entity with more properties than one row holds (252
//! custom ones) is stored as several rows of one partition, RowKeys `<base>~0`, `<base>~1`, ...,
//! all written in ONE entity-group transaction so a reader never sees parts of two versions.
//!
//! Invariants: part 0 carries `_WideParts`, the number of parts of the current version; a
//! write replaces every part and deletes the parts a wider earlier version left, in the same
//! transaction, conditioned on the ETags it read (retrying on a concurrent change), so the
//! parts present are always exactly those part 0 counts. A logical entity is bounded by one
//! transaction: at most 100 rows and a 4 MiB request body.
//!
//! With an encryption policy, each part is encrypted for its own keys, and a part keeps room
//! for what encryption adds (two metadata properties, strings grown to ciphertext). A write
//! encrypts what the client's type and the policy's resolver name, and every property the
//! stored version held encrypted (it reads the stored parts whole to know), so a rewrite never
//! puts in clear what was stored encrypted.

use std::collections::BTreeMap;

use table_core::{
    Entity, EntityKey, Error, ErrorCode, ErrorKind, MAX_ENTITY_SIZE, MAX_PROPERTIES, Operation, Result,
    SYSTEM_PROPERTIES, Value, Violation, entity_size, property_size, validate_batch,
};

use crate::batch::Transaction;
use crate::contention::retry_races;
use crate::encryption::stored_encrypted;
use crate::error;
use crate::outcome::{is_entity_missing, read_if_match};
use crate::table::TableClient;

/// The part count, on part 0.
const PARTS: &str = "_WideParts";
/// Custom properties per row, leaving room for [`PARTS`].
const PART_PROPERTIES: usize = MAX_PROPERTIES - SYSTEM_PROPERTIES - 1;
/// Bytes per row kept free for [`PARTS`] (8 + 2 * 10 for its name, 4 for its value).
const PARTS_SIZE: usize = 32;
/// Properties per row kept free, when the client encrypts, for the two encryption metadata
/// properties.
const SEALED_PROPERTIES: usize = 2;
/// Bytes per row kept free, when the client encrypts, for the metadata envelope (a JSON string
/// with the key id, the wrapped content key and the format, under 2 KiB for key ids up to a
/// few hundred characters and RSA keys up to 4096 bits, stored as UTF-16) and the fixed part
/// of the sealed name list.
const SEALED_METADATA: usize = 8 * 1024;
/// The most a value grows when encrypted, beyond its UTF-8 bytes: a 12-byte nonce and a
/// 16-byte tag (authenticated format), or up to 16 bytes of padding ("1.0").
const SEALED_VALUE_OVERHEAD: usize = 32;

/// Reads and writes wide entities (over 252 properties) in one table. Cheap to clone.
///
/// ```rust
/// use table_client::patterns::WideTable;
/// use table_client::{Entity, TableServiceClient};
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let wide = WideTable::new(service.create_table("Surveys").await?);
/// let mut answers = Entity::new("Sales", "empid_000001");
/// for question in 0..400 {
///     answers = answers.with(format!("Q{question:03}"), question % 5);
/// }
/// let rows = wide.write(&answers).await?; // one transaction over several rows
/// assert_eq!(rows, 2);
/// assert_eq!(wide.read("Sales", "empid_000001").await?.properties.len(), 400);
/// assert!(wide.delete("Sales", "empid_000001").await?);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct WideTable {
    table: TableClient,
}

impl WideTable {
    /// Wide entities stored in `table`.
    pub fn new(table: TableClient) -> Self {
        WideTable { table }
    }

    /// The RowKey of part `part` of the wide entity `base`: `<base>~<part>`.
    pub fn part_row_key(base: &str, part: usize) -> String {
        format!("{base}~{part}")
    }

    /// Writes `entity` (its RowKey is the base) as as many rows as its properties need, in one
    /// transaction that also deletes the parts of a wider earlier version. Checked before any
    /// request: every property as the service would, and that the new parts fit in one
    /// transaction (`TooLarge` otherwise). Returns the number of parts written.
    pub async fn write(&self, entity: &Entity) -> Result<usize> {
        let key = entity.key();
        let encrypting = self.table.encrypts();
        let parts = split(entity, encrypting)?;
        let count = parts.len();
        let upserts: Vec<Operation> = parts.iter().cloned().map(Operation::InsertOrReplace).collect();
        check_one_transaction(&key, &upserts)?;
        let (key, parts, upserts) = (&key, &parts, &upserts);
        let step = || async move {
            let existing = match encrypting {
                false => self.parts(&self.table, &key.partition_key, &key.row_key, Columns::Keys).await?,
                // As stored and whole, to keep encrypted what the stored version had encrypted.
                true => self.parts(&self.table.raw(), &key.partition_key, &key.row_key, Columns::All).await?,
            };
            let mut encrypted: Vec<String> = self.table.encrypted().iter().map(|&p| p.to_owned()).collect();
            if encrypting {
                for stored in existing.values() {
                    let opened = self.table.open(stored.clone()).await?;
                    encrypted.extend(stored_encrypted(stored, &opened));
                }
            }
            let encrypted: Vec<&str> = encrypted.iter().map(String::as_str).collect();
            // Part 0 is conditioned on what was read, so two writers cannot interleave.
            let first = match existing.get(&0) {
                None => Operation::Insert(parts[0].clone()),
                Some(old) => Operation::Replace { entity: parts[0].clone(), if_match: read_if_match(old)? },
            };
            let leftovers = existing
                .range(count..)
                .map(|(_, old)| Ok(Operation::Delete { key: old.key(), if_match: read_if_match(old)? }))
                .collect::<Result<Vec<_>>>()?;
            let mut operations = Vec::with_capacity(count + leftovers.len());
            // Each part encrypted for its own keys, then sent as sealed.
            for operation in std::iter::once(first).chain(upserts[1..].iter().cloned()).chain(leftovers) {
                operations.push(self.table.seal_as(operation, &encrypted).await?);
            }
            check_one_transaction(key, &operations)?;
            self.table.raw().submit_transaction(operations.into_iter().collect()).await.map(|_| count)
        };
        retry_races(&format!("write of wide entity {key} in table {}", self.table.name()), is_race, step)
            .await
    }

    /// Reads the wide entity `base` of `partition_key`, its parts joined into one entity
    /// (Timestamp and ETag of part 0). `NotFound` when it does not exist.
    pub async fn read(&self, partition_key: &str, base: &str) -> Result<Entity> {
        let mut parts = self.parts(&self.table, partition_key, base, Columns::All).await?;
        let key = EntityKey::new(partition_key, base);
        let Some(mut first) = parts.remove(&0) else {
            return Err(error::refused(ErrorCode::ResourceNotFound, format!("no wide entity {key}")));
        };
        let count = match first.properties.remove(PARTS) {
            Some(Value::Int32(n)) => usize::try_from(n).ok(),
            _ => None,
        }
        .ok_or_else(|| error::decode(format!("part 0 of the wide entity {key} has no valid {PARTS}")))?;
        let mut entity = Entity {
            partition_key: partition_key.to_owned(),
            row_key: base.to_owned(),
            timestamp: first.timestamp,
            etag: first.etag.take(),
            properties: first.properties,
        };
        for index in 1..count {
            let part = parts
                .remove(&index)
                .ok_or_else(|| error::decode(format!("part {index} of the wide entity {key} is missing")))?;
            entity.properties.extend(part.properties);
        }
        Ok(entity)
    }

    /// Deletes every part of the wide entity `base` in one transaction; returns whether it
    /// existed.
    pub async fn delete(&self, partition_key: &str, base: &str) -> Result<bool> {
        let step = || async {
            let parts = self.parts(&self.table, partition_key, base, Columns::Keys).await?;
            if parts.is_empty() {
                return Ok(false);
            }
            let transaction: Transaction = parts
                .values()
                .map(|part| Ok(Operation::Delete { key: part.key(), if_match: read_if_match(part)? }))
                .collect::<Result<_>>()?;
            self.table.submit_transaction(transaction).await.map(|_| true)
        };
        let key = EntityKey::new(partition_key, base);
        retry_races(&format!("delete of wide entity {key} in table {}", self.table.name()), is_race, step)
            .await
    }

    /// The rows `<base>~<n>` present, by part number (other rows sharing the prefix, such as
    /// the parts of a base `<base>~x`, are left out).
    async fn parts(
        &self,
        table: &TableClient,
        partition_key: &str,
        base: &str,
        columns: Columns,
    ) -> Result<BTreeMap<usize, Entity>> {
        let prefix = format!("{base}~");
        let mut query = table.query().partition(partition_key).row_key_prefix(&prefix);
        if columns == Columns::Keys {
            // Keys, Timestamp and ETag always come; the part count is the one property needed.
            query = query.select([PARTS]);
        }
        let rows = query.collect().await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let suffix = row.row_key.strip_prefix(&prefix)?;
                let canonical =
                    suffix.bytes().all(|b| b.is_ascii_digit()) && (suffix == "0" || !suffix.starts_with('0'));
                let index = suffix.parse().ok().filter(|_| canonical)?;
                Some((index, row))
            })
            .collect())
    }
}

/// What [`WideTable::parts`] fetches of each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Columns {
    /// Keys and ETags only: enough to condition a replace or a delete.
    Keys,
    /// Every property.
    All,
}

/// Cuts the properties, in name order, into rows of at most [`PART_PROPERTIES`] properties and
/// 1 MiB; part 0 gets the part count. When `encrypting`, each row keeps room for what
/// client-side encryption adds: the two metadata properties ([`SEALED_PROPERTIES`],
/// [`SEALED_METADATA`]), and every string counted at its size as ciphertext.
fn split(entity: &Entity, encrypting: bool) -> Result<Vec<Entity>> {
    if entity.properties.contains_key(PARTS) {
        return Err(Error::invalid(Violation::PropertyNameInvalid {
            name: PARTS.to_owned(),
            reason: "it is reserved for the part count of wide entities",
        }));
    }
    let new_part = |index: usize| {
        Entity::new(entity.partition_key.clone(), WideTable::part_row_key(&entity.row_key, index))
    };
    let mut parts = vec![new_part(0)];
    // The size of the last part, kept as properties are added (not recomputed per property).
    let (max_properties, reserved) = match encrypting {
        true => (PART_PROPERTIES - SEALED_PROPERTIES, PARTS_SIZE + SEALED_METADATA),
        false => (PART_PROPERTIES, PARTS_SIZE),
    };
    let mut size = entity_size(&parts[0]);
    for (name, value) in &entity.properties {
        let added = match value {
            Value::String(text) if encrypting => sealed_size(name, value, text),
            _ => property_size(name, value),
        };
        let current = parts.last().expect("parts starts with part 0");
        let full = current.properties.len() >= max_properties || size + added + reserved > MAX_ENTITY_SIZE;
        // A property too big for any row stays alone in one; the write's check names it.
        if full && !current.properties.is_empty() {
            let next = new_part(parts.len());
            size = entity_size(&next);
            parts.push(next);
        }
        parts.last_mut().expect("parts starts with part 0").insert(name.clone(), value.clone());
        size += added;
    }
    let count = i32::try_from(parts.len()).unwrap_or(i32::MAX);
    parts[0].insert(PARTS, count);
    Ok(parts)
}

/// The largest share of the entity size a string property can take once encrypted: its
/// UTF-8 bytes as binary plus [`SEALED_VALUE_OVERHEAD`] (or its size in clear, if larger), and
/// its name's entry in the encrypted name list.
fn sealed_size(name: &str, value: &Value, text: &str) -> usize {
    let clear = value.stored_size();
    let sealed = text.len() + SEALED_VALUE_OVERHEAD;
    property_size(name, value) + sealed.saturating_sub(clear) + name.len() + 3
}

/// The transaction rules, with the limits of one transaction reported as `TooLarge` for the
/// wide entity (the broken rule stays in `source()`, its code in `code()`).
fn check_one_transaction(key: &EntityKey, operations: &[Operation]) -> Result<()> {
    validate_batch(operations).map_err(|e| match e.violation() {
        Some(Violation::TooManyOperations { .. } | Violation::BatchTooLarge { .. }) => error::too_large(
            format!(
                "the wide entity {key} needs {} rows written in one transaction, more than one \
                 transaction holds",
                operations.len()
            ),
            e,
        ),
        _ => e,
    })
}

/// A concurrent writer got in between the read and the transaction.
fn is_race(e: &Error) -> bool {
    e.kind() == ErrorKind::PreconditionFailed
        || (e.kind() == ErrorKind::AlreadyExists && e.code() == Some(&ErrorCode::EntityAlreadyExists))
        || is_entity_missing(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use table_core::MAX_PROPERTY_VALUE_SIZE;

    fn wide(n: usize) -> Entity {
        (0..n).fold(Entity::new("p", "w"), |e, i| e.with(format!("P{i:04}"), i as i32))
    }

    #[test]
    fn properties_fill_rows_in_name_order() {
        let parts = split(&wide(600), false).unwrap();
        let sizes: Vec<usize> = parts.iter().map(|p| p.properties.len()).collect();
        assert_eq!(sizes, [252, 251, 98]);
        assert_eq!(parts[2].row_key, "w~2");
        assert_eq!(parts[0].get(PARTS), Some(&Value::Int32(3)));
        assert_eq!(split(&wide(0), false).unwrap().len(), 1);
    }

    #[test]
    fn rows_keep_room_for_the_encryption_metadata() {
        let parts = split(&wide(600), true).unwrap();
        let sizes: Vec<usize> = parts.iter().map(|p| p.properties.len()).collect();
        assert_eq!(sizes, [250, 249, 102]);
        // 3-byte UTF-8 characters grow by half as ciphertext: fewer fit in a row.
        let text = "\u{4e2d}".repeat(30_000);
        let big = (0..34).fold(Entity::new("p", "w"), |e, i| e.with(format!("S{i:02}"), text.as_str()));
        let (clear, sealed) = (split(&big, false).unwrap(), split(&big, true).unwrap());
        assert!(sealed.len() > clear.len(), "{} parts in clear, {} encrypting", clear.len(), sealed.len());
    }

    #[test]
    fn rows_stay_under_the_entity_size() {
        let big = (0..40).fold(Entity::new("p", "w"), |e, i| e.with(format!("B{i:02}"), vec![0u8; 60_000]));
        let parts = split(&big, false).unwrap();
        assert!(parts.len() >= 3);
        assert!(parts.iter().all(|p| entity_size(p) <= MAX_ENTITY_SIZE));
        let err = check_one_transaction(
            &big.key(),
            &parts.into_iter().map(Operation::InsertOrReplace).collect::<Vec<_>>(),
        );
        assert!(err.is_ok(), "2.4 MB fits one transaction: {err:?}");
    }

    #[test]
    fn the_reserved_name_is_refused() {
        let e = wide(3).with(PARTS, 1);
        assert_eq!(split(&e, false).unwrap_err().kind(), ErrorKind::InvalidInput);
    }

    proptest::proptest! {
        // Each case moves megabytes; a few dozen cover the boundaries.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        #[test]
        fn parts_are_valid_rows_that_join_back(
            sizes in proptest::collection::vec(0usize..70_000, 0..600),
        ) {
            let entity = sizes.iter().enumerate().fold(Entity::new("p", "w"), |e, (i, n)| {
                e.with(format!("P{i:03}"), vec![1u8; (*n).min(MAX_PROPERTY_VALUE_SIZE)])
            });
            let parts = split(&entity, false).unwrap();
            let mut joined = BTreeMap::new();
            for part in &parts {
                proptest::prop_assert!(table_core::validate_entity(part).is_ok());
                joined.extend(part.properties.clone());
            }
            joined.remove(PARTS);
            proptest::prop_assert_eq!(joined, entity.properties);
        }
    }
}
