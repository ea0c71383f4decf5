use chrono::{DateTime, Utc};
use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{device}", row_key = "{at:inverted_ticks}")]
struct Reading {
    #[table(key_only)]
    device: String,
    #[table(key_only)]
    at: DateTime<Utc>,
    value: f64,
}

fn main() {
    // Equality is fine; order is not: the newest reading sorts first.
    let _ = Reading::AT.eq(Utc::now());
    let _ = Reading::AT.gt(Utc::now());
}
