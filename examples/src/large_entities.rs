//! Large entities: an employee's CV (a few hundred KB) exceeds one property's 64 KiB, so it is
//! split across properties `Cv_0`, `Cv_1`, ... of the employee entity and joined on read; it is
//! written atomically with the employee, up to the entity's 1 MiB.

use examples::Employee;
use table_client::patterns::LargeProperty;
use table_client::{ErrorKind, Result, TableEntity, Value};

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "Employees").await?;
    let cv = LargeProperty::new("Cv")?;

    let ann = Employee::new("Sales", 1, "Ann", "Jones", 34);
    let text = "Ten years of selling widgets across the region. ".repeat(8_000);
    let mut entity = ann.to_entity()?;
    let parts = cv.store(&mut entity, text.clone())?;
    println!("{} characters stored as {parts} properties", text.len());
    table.insert(entity).await?;

    let mut stored = table.get("Sales", "empid_000001").await?;
    let read = cv.take(&mut stored)?;
    let employee = Employee::from_entity(stored)?;
    let intact = read.as_ref() == Some(&Value::String(text.clone()));
    println!(
        "read {} {} with a CV of {} characters, intact: {}",
        employee.first_name,
        employee.last_name,
        match &read {
            Some(Value::String(s)) => s.len(),
            _ => 0,
        },
        intact
    );
    examples::check(intact, "the CV to read back intact")?;

    // Past 1 MiB the entity cannot hold it: refused before any request.
    let mut entity = ann.to_entity()?;
    match cv.store(&mut entity, vec![0u8; 1_100_000]) {
        Err(e) if e.kind() == ErrorKind::TooLarge => println!("1.1 MB refused: {e}"),
        Err(e) => return Err(e),
        Ok(_) => {
            return Err(table_client::Error::other("1.1 MB fitted in one entity"));
        }
    }

    examples::delete_tables(&service, &[&table]).await
}
