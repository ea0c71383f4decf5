//! The captured Azurite page both benches decode, and its three readers: the serde-struct
//! floor, the generic `Entity` decoder followed by `from_entity` (the typed path before the
//! fast one), and the typed fast path (`decode_query_page_as`: the reader puts each property
//! in the type's slot for it, then the type's `read_through`, compiled for the JSON reader,
//! takes them where they lie).
//!
//! The page (`benches/fixtures/azurite_page_1000.json`): 1000 entities of eight properties of
//! eight EDM types, `odata.etag` and `Timestamp`, exactly as Azurite answers the client's
//! `Accept` header; regenerate it with `cargo run -p conformance --bin capture_page`.

use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer};
use table_client::wire::{decode_query_page, decode_query_page_as};
use table_client::{ETag, TableEntity};
use uuid::Uuid;

/// The captured page.
pub const AZURITE_PAGE: &[u8] = include_bytes!("../fixtures/azurite_page_1000.json");

/// The rows of [`AZURITE_PAGE`].
pub const AZURITE_PAGE_ROWS: u32 = 1000;

/// The page's rows as a derived entity.
#[derive(Debug, Clone, TableEntity)]
#[table(partition_key = "{partition}", row_key = "{row}", rename_all = "PascalCase")]
pub struct Customer {
    #[table(key_only)]
    pub partition: String,
    #[table(key_only)]
    pub row: String,
    pub name: String,
    pub age: i32,
    pub visits: i64,
    pub balance: f64,
    pub active: bool,
    pub joined: DateTime<Utc>,
    pub id: Uuid,
    pub avatar: Vec<u8>,
    #[table(timestamp)]
    pub timestamp: Option<DateTime<Utc>>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// The floor's page: only `value` is read.
#[derive(Deserialize)]
pub struct FloorPage {
    pub value: Vec<FloorRow>,
}

/// One row as a plain serde struct: typed fields, annotations ignored.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
#[allow(dead_code)] // Fields are decoded to be measured, not read.
pub struct FloorRow {
    #[serde(rename = "odata.etag")]
    etag: String,
    partition_key: String,
    row_key: String,
    timestamp: DateTime<Utc>,
    name: String,
    age: i32,
    /// `Edm.Int64` travels as a JSON string.
    #[serde(deserialize_with = "i64_from_string")]
    visits: i64,
    balance: f64,
    active: bool,
    joined: DateTime<Utc>,
    id: Uuid,
    /// `Edm.Binary` travels as base64.
    #[serde(deserialize_with = "bytes_from_base64")]
    avatar: Vec<u8>,
}

pub fn i64_from_string<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    <&str>::deserialize(d)?.parse().map_err(serde::de::Error::custom)
}

fn bytes_from_base64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    base64::engine::general_purpose::STANDARD
        .decode(<&str>::deserialize(d)?)
        .map_err(serde::de::Error::custom)
}

/// The floor: `serde_json::from_slice` into the plain struct.
pub fn floor(page: &[u8]) -> FloorPage {
    serde_json::from_slice(page).unwrap()
}

/// The typed fast path.
pub fn typed(page: &[u8]) -> Vec<Customer> {
    decode_query_page_as(page).unwrap()
}

/// Generic `Entity`s, then `from_entity`.
pub fn typed_via_entity(page: &[u8]) -> Vec<Customer> {
    decode_query_page(page).unwrap().into_iter().map(Customer::from_entity).collect::<Result<_, _>>().unwrap()
}

/// Checks that every reader reads the whole page, and the typed one the system properties.
pub fn check_readers() {
    let decoded = typed(AZURITE_PAGE);
    assert_eq!(decoded.len(), AZURITE_PAGE_ROWS as usize);
    assert!(decoded.iter().all(|c| c.timestamp.is_some() && c.etag.is_some()));
    assert_eq!(typed_via_entity(AZURITE_PAGE).len(), 1000);
    assert_eq!(floor(AZURITE_PAGE).value.len(), 1000);
}
