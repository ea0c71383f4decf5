use chrono::{DateTime, Utc};
use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{day:%Y%m%d}", row_key = "{id}")]
struct Visit {
    #[table(key_only)]
    day: DateTime<Utc>,
    #[table(key_only)]
    id: String,
}

fn main() {
    let _ = Visit::DAY.eq(Utc::now());
}
