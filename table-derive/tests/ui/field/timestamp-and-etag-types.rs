use chrono::{DateTime, Utc};
use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "r")]
struct Employee {
    #[table(timestamp)]
    updated: DateTime<Utc>,
    #[table(etag)]
    etag: String,
}

fn main() {}
