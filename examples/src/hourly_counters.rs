//! Data series: a day of hourly login counters is ONE entity with properties `Hour00`..`Hour23`,
//! so the whole day is one point read, and counting an hour is a merge that sends that one
//! property (with the ETag read, so concurrent increments are not lost).

use chrono::Utc;
use table_client::patterns::DataSeries;
use table_client::{Entity, EntityKey, ErrorKind, IfMatch, Result, TableClient};

/// Adds one to the counter of `hour`, re-reading and retrying on a concurrent change.
async fn count(table: &TableClient, hours: &DataSeries, key: &EntityKey, hour: usize) -> Result<()> {
    loop {
        let current = table.get(&key.partition_key, &key.row_key).await?;
        let counts = hours.load::<Option<i64>>(&current)?;
        let next = counts.get(hour).copied().flatten().unwrap_or(0) + 1;
        let change =
            Entity::new(key.partition_key.clone(), key.row_key.clone()).with(hours.slot_name(hour)?, next);
        let if_match = current.etag.map_or(IfMatch::Any, IfMatch::ETag);
        match table.merge(change, if_match).await {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::PreconditionFailed => continue,
            Err(e) => return Err(e),
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "LoginCounts").await?;
    let hours = DataSeries::new("Hour", 24)?;
    let key = EntityKey::new("web01", Utc::now().format("%Y%m%d").to_string());

    // Start the day at zero in every slot.
    let mut day = Entity::new(key.partition_key.clone(), key.row_key.clone());
    hours.store(&mut day, &[0i64; 24])?;
    table.insert(day).await?;

    // A merge of one slot: the other 23 are neither read nor sent.
    hours.merge_slot(&table, &key, 9, &120i64).await?;
    // Three logins at five in the afternoon, each a read and a conditional one-slot merge.
    for _ in 0..3 {
        count(&table, &hours, &key, 17).await?;
    }

    let counts: Vec<i64> = hours.load(&table.get(&key.partition_key, &key.row_key).await?)?;
    println!("Hour09 after merging one slot: {}", counts[9]);
    println!("Hour17 after three increments: {}", counts[17]);
    println!("whole day: {counts:?}");

    examples::delete_tables(&service, &[&table]).await
}
