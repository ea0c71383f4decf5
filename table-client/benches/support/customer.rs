//! The customer entity of the client benches: two key fields and eight stored properties of
//! six EDM types, spread over [`PARTITIONS`] partitions by number.

use chrono::{DateTime, Utc};
use table_client::TableEntity;
use uuid::Uuid;

/// Partitions the customers are spread over.
pub const PARTITIONS: u32 = 10;

/// A customer row: two key fields and eight stored properties of six EDM types.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(rename_all = "PascalCase")]
#[table(partition_key = "region{region:02}", row_key = "{number:08}")]
pub struct Customer {
    #[table(key_only)]
    pub region: u32,
    #[table(key_only)]
    pub number: u32,
    pub name: String,
    pub email: String,
    pub age: i32,
    pub balance: f64,
    pub visits: i64,
    pub active: bool,
    pub joined: DateTime<Utc>,
    pub id: Uuid,
}

/// Customer `number`, in partition `number % PARTITIONS`.
pub fn customer(number: u32) -> Customer {
    Customer {
        region: number % PARTITIONS,
        number,
        name: format!("customer number {number}"),
        email: format!("user{number}@example.com"),
        age: i32::try_from(number % 90).expect("below 90"),
        balance: f64::from(number) * 1.25,
        visits: 1_099_511_627_776 + i64::from(number),
        active: number.is_multiple_of(2),
        joined: DateTime::from_timestamp(1_700_000_000 + i64::from(number), 123_456_700).expect("in range"),
        id: Uuid::from_u128(u128::from(number)),
    }
}
