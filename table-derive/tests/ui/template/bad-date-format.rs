use chrono::{DateTime, Utc};
use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{day:%m/%d/%Y}", row_key = "{at:%Q}")]
struct Reading {
    day: DateTime<Utc>,
    at: DateTime<Utc>,
}

fn main() {}
