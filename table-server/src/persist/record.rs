//! The stored form of an engine change ([`Change`]): what one log record or one snapshot
//! record holds, encoded with serde in postcard's format.
//!
//! Why postcard: a compact, documented, stable binary format for serde data (varint
//! integers, length-prefixed strings), well kept, with no schema to maintain beside the types
//! below; integrity is the framing's job (`log`, CRC-32 per record), not the format's.
//! Stored access policies and service settings are kept as the service's own XML, through the
//! client's codec that the server answers with, so their rules live in one place.
//!
//! Invariant: [`decode`] of [`encode`] gives back the change, timestamps and ETags included;
//! a change to these types changes the format, so [`FORMAT`] names its version and a file of
//! another version is refused, never misread.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use table_core::engine::{Change, RowChange};
use table_core::{ETag, Entity, EntityKey, Value};
use uuid::Uuid;

/// The format's version, written at the head of every file.
pub(crate) const FORMAT: &[u8; 8] = b"tsrv\x00\x00\x00\x01";

#[derive(Debug, Serialize, Deserialize)]
enum Record {
    CreateTable(String),
    DeleteTable(String),
    Rows { table: String, rows: Vec<StoredRow> },
    Policies { table: String, xml: String },
    ServiceProperties { xml: String },
}

#[derive(Debug, Serialize, Deserialize)]
enum StoredRow {
    Stored {
        partition_key: String,
        row_key: String,
        timestamp: Instant,
        etag: String,
        properties: Vec<(String, StoredValue)>,
    },
    Removed {
        partition_key: String,
        row_key: String,
    },
}

/// A UTC instant as seconds since the epoch and nanoseconds.
#[derive(Debug, Serialize, Deserialize)]
struct Instant(i64, u32);

#[derive(Debug, Serialize, Deserialize)]
enum StoredValue {
    String(String),
    Int32(i32),
    Int64(i64),
    Double(f64),
    Boolean(bool),
    DateTime(Instant),
    Guid([u8; 16]),
    Binary(Vec<u8>),
}

/// `change` in the stored format. Errors: the XML codec refuses the policies or settings
/// (they passed the engine's checks, so only a bug makes it refuse).
pub(crate) fn encode(change: &Change) -> std::io::Result<Vec<u8>> {
    let xml_error = |e: table_core::Error| std::io::Error::other(e.message().to_owned());
    let record = match change {
        Change::CreateTable(name) => Record::CreateTable(name.clone()),
        Change::DeleteTable(name) => Record::DeleteTable(name.clone()),
        Change::Rows { table, rows } => {
            Record::Rows { table: table.clone(), rows: rows.iter().map(stored_row).collect() }
        }
        Change::Policies { table, policies } => Record::Policies {
            table: table.clone(),
            xml: table_client::wire::encode_signed_identifiers(policies).map_err(xml_error)?,
        },
        Change::ServiceProperties(properties) => Record::ServiceProperties {
            xml: table_client::wire::encode_service_properties(properties).map_err(xml_error)?,
        },
    };
    postcard::to_stdvec(&record).map_err(std::io::Error::other)
}

/// The change `bytes` hold. Errors: bytes that are not a record of this format (a message
/// saying what failed).
pub(crate) fn decode(bytes: &[u8]) -> Result<Change, String> {
    let record: Record = postcard::from_bytes(bytes).map_err(|e| format!("undecodable record: {e}"))?;
    Ok(match record {
        Record::CreateTable(name) => Change::CreateTable(name),
        Record::DeleteTable(name) => Change::DeleteTable(name),
        Record::Rows { table, rows } => {
            Change::Rows { table, rows: rows.into_iter().map(row_change).collect::<Result<_, _>>()? }
        }
        Record::Policies { table, xml } => Change::Policies {
            table,
            policies: table_client::wire::decode_signed_identifiers(xml.as_bytes())
                .map_err(|e| format!("unreadable access policies: {}", e.message()))?,
        },
        Record::ServiceProperties { xml } => Change::ServiceProperties(
            table_client::wire::decode_service_properties(xml.as_bytes())
                .map_err(|e| format!("unreadable service properties: {}", e.message()))?,
        ),
    })
}

fn stored_row(change: &RowChange) -> StoredRow {
    match change {
        RowChange::Stored(entity) => StoredRow::Stored {
            partition_key: entity.partition_key.clone(),
            row_key: entity.row_key.clone(),
            // A stored row always has both; a default only if the engine broke its invariant.
            timestamp: instant(entity.timestamp.unwrap_or_default()),
            etag: entity.etag.as_ref().map(|etag| etag.as_str().to_owned()).unwrap_or_default(),
            properties: entity
                .properties
                .iter()
                .map(|(name, value)| (name.clone(), stored_value(value)))
                .collect(),
        },
        RowChange::Removed(key) => {
            StoredRow::Removed { partition_key: key.partition_key.clone(), row_key: key.row_key.clone() }
        }
    }
}

fn row_change(row: StoredRow) -> Result<RowChange, String> {
    Ok(match row {
        StoredRow::Stored { partition_key, row_key, timestamp, etag, properties } => {
            let mut entity = Entity::new(partition_key, row_key);
            entity.timestamp = Some(date_time(timestamp)?);
            entity.etag = Some(ETag::new(etag));
            for (name, value) in properties {
                entity.properties.insert(name, value_of(value)?);
            }
            RowChange::Stored(entity)
        }
        StoredRow::Removed { partition_key, row_key } => {
            RowChange::Removed(EntityKey::new(partition_key, row_key))
        }
    })
}

fn stored_value(value: &Value) -> StoredValue {
    match value {
        Value::String(s) => StoredValue::String(s.clone()),
        Value::Int32(n) => StoredValue::Int32(*n),
        Value::Int64(n) => StoredValue::Int64(*n),
        Value::Double(x) => StoredValue::Double(*x),
        Value::Boolean(b) => StoredValue::Boolean(*b),
        Value::DateTime(t) => StoredValue::DateTime(instant(*t)),
        Value::Guid(g) => StoredValue::Guid(*g.as_bytes()),
        Value::Binary(b) => StoredValue::Binary(b.clone()),
    }
}

fn value_of(value: StoredValue) -> Result<Value, String> {
    Ok(match value {
        StoredValue::String(s) => Value::String(s),
        StoredValue::Int32(n) => Value::Int32(n),
        StoredValue::Int64(n) => Value::Int64(n),
        StoredValue::Double(x) => Value::Double(x),
        StoredValue::Boolean(b) => Value::Boolean(b),
        StoredValue::DateTime(t) => Value::DateTime(date_time(t)?),
        StoredValue::Guid(g) => Value::Guid(Uuid::from_bytes(g)),
        StoredValue::Binary(b) => Value::Binary(b),
    })
}

fn instant(t: DateTime<Utc>) -> Instant {
    Instant(t.timestamp(), t.timestamp_subsec_nanos())
}

fn date_time(Instant(secs, nanos): Instant) -> Result<DateTime<Utc>, String> {
    DateTime::from_timestamp(secs, nanos).ok_or_else(|| format!("instant {secs}s {nanos}ns out of range"))
}

#[cfg(test)]
mod tests {
    use table_core::{Metrics, ServiceProperties, SignedIdentifier};

    use super::*;

    #[test]
    fn every_change_comes_back_as_it_went() {
        let at = DateTime::from_timestamp(1_700_000_000, 123_456_700).unwrap_or_default();
        let mut row = Entity::new("p", "r")
            .with("S", "text")
            .with("I", 7)
            .with("L", Value::Int64(-9))
            .with("D", Value::Double(-0.0))
            .with("B", true)
            .with("T", Value::DateTime(at))
            .with("G", Value::Guid(Uuid::from_u128(42)))
            .with("X", Value::Binary(vec![0, 255, 128]));
        row.timestamp = Some(at);
        row.etag = Some(ETag::from_timestamp(at));
        let changes = [
            Change::CreateTable("Tbl".into()),
            Change::DeleteTable("Tbl".into()),
            Change::Rows {
                table: "Tbl".into(),
                rows: vec![RowChange::Stored(row), RowChange::Removed(EntityKey::new("p", "gone"))],
            },
            Change::Policies {
                table: "Tbl".into(),
                policies: vec![
                    SignedIdentifier::new("id", "ra")
                        .expiry(DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()),
                ],
            },
            Change::ServiceProperties(ServiceProperties {
                hour_metrics: Some(Metrics::enabled(true, Some(5))),
                ..ServiceProperties::service_defaults()
            }),
        ];
        for change in changes {
            let bytes = encode(&change).expect("encodes");
            assert_eq!(decode(&bytes), Ok(change));
        }
        assert!(decode(&[0xff, 0xff]).is_err());
    }
}
