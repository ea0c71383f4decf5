//! Wide entities: an employee's 400 survey answers exceed the 252 properties one row holds,
//! so the logical entity is stored as rows `<key>~0`, `<key>~1` in its partition, written in
//! one transaction and read back as one entity.

use table_client::patterns::WideTable;
use table_client::{Entity, Result};

fn survey(answers: usize) -> Entity {
    (0..answers).fold(Entity::new("Sales", "survey_empid_000001"), |e, q| {
        e.with(format!("Q{q:03}"), i32::try_from(q % 5 + 1).unwrap_or(1))
    })
}

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "Surveys").await?;
    let wide = WideTable::new(table.clone());

    let parts = wide.write(&survey(400)).await?;
    println!("400 answers written as {parts} rows in one transaction");
    let read = wide.read("Sales", "survey_empid_000001").await?;
    println!("read back as one entity with {} properties", read.properties.len());

    // Fewer answers next time: the row no longer needed goes in the same transaction.
    let parts = wide.write(&survey(120)).await?;
    let rows = table.query().partition("Sales").collect().await?;
    println!("120 answers: {parts} row, {} row(s) stored", rows.len());

    wide.delete("Sales", "survey_empid_000001").await?;
    examples::delete_tables(&service, &[&table]).await
}
