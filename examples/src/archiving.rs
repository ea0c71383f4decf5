//! Eventually consistent transactions: archiving an employee moves the entity from the
//! `Current` table to the `Archive` table (no transaction spans tables). An intent recorded
//! first makes it crash safe: after a crash at any step, draining leaves the employee in
//! exactly one of the two tables.

use examples::Employee;
use table_client::Result;

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let current = examples::create_table(&service, "Current").await?;
    let archive = examples::create_table(&service, "Archive").await?;
    for e in examples::staff() {
        current.typed::<Employee>().insert(&e).await?;
    }

    let leaver = Employee::key("Sales", 2)?;
    let moved = current.move_entity(&archive, &leaver.partition_key, &leaver.row_key).await?;
    println!("moved employee 2 to the archive: {moved}");
    let in_current = current.typed::<Employee>().get_if_exists(&leaver).await?;
    let in_archive = archive.typed::<Employee>().get(&leaver).await?;
    println!(
        "in Current: {}, in Archive: {} {}",
        in_current.is_some(),
        in_archive.first_name,
        in_archive.last_name
    );
    examples::check(moved && in_current.is_none(), "employee 2 in the archive only")?;

    // A process that crashed mid-move would leave an intent; a drain finishes it.
    println!("moves left to finish: {}", current.drain_moves().await?);
    let staff = current.typed::<Employee>().query().table_scan().collect().await?;
    println!("current staff: {}", staff.len());

    examples::delete_tables(&service, &[&current, &archive]).await
}
