//! High-volume delete by table rotation: login attempts go to one table per day
//! (`LoginAttempts<yyyymmdd>`), so dropping the days past the retention is one Delete Table
//! request per day instead of deleting every attempt.

use chrono::{Duration, Utc};
use table_client::patterns::{Period, TableRotation};
use table_client::{Entity, Result};

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let prefix = examples::unique_name("LoginAttempts");
    let rotation = TableRotation::new(service.clone(), &prefix, Period::Day)?;
    let now = Utc::now();
    for days_ago in [3, 2, 1, 0] {
        let at = now - Duration::days(days_ago);
        // The day's table is created on its first write, then known.
        let table = rotation.table_for_write(at).await?;
        for attempt in 0..5 {
            let row = Entity::new("user@contoso.com", format!("{}_{attempt}", at.timestamp()))
                .with("Succeeded", attempt == 4)
                .with("At", at);
            table.insert(row).await?;
        }
        println!("5 attempts -> {}", table.name());
    }
    println!("days with a table: {}", rotation.periods().await?.len());

    // Keep two days: everything from before yesterday's start goes, one request per day.
    let cutoff = Period::Day.start_of(now - Duration::days(1));
    for name in rotation.drop_older_than(cutoff).await? {
        println!("dropped {name}");
    }
    let today = rotation.table(now).query().collect().await?;
    println!("today's table still holds {} attempts", today.len());

    rotation.drop_older_than(now + Duration::days(2)).await?;
    Ok(())
}
