//! The serde-struct floor of a [`Customer`](super::customer::Customer) page: the same fields as
//! a plain `#[derive(Deserialize)]` struct, decoded with `serde_json::from_slice`, which the
//! benches hold a scan's client CPU per row against (issue 11's budget).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

/// A customer row as a plain serde struct: typed fields, annotations, ETag and `Timestamp`
/// ignored (the type keeps neither), keys as read.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
#[allow(dead_code)] // Fields are decoded to be measured, not read.
pub struct FloorCustomer {
    partition_key: String,
    row_key: String,
    name: String,
    email: String,
    age: i32,
    balance: f64,
    /// `Edm.Int64` travels as a JSON string.
    #[serde(deserialize_with = "super::page::i64_from_string")]
    visits: i64,
    active: bool,
    joined: DateTime<Utc>,
    id: Uuid,
}

/// A page of [`FloorCustomer`]s: only `value` is read.
#[derive(Deserialize)]
pub struct FloorCustomers {
    pub value: Vec<FloorCustomer>,
}
