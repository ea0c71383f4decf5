//! Quickstart: a typed entity, a typed transaction and a query stream (embedded engine by
//! default).

use futures::StreamExt;
use table_client::{TableEntity, TableServiceClient};

// PascalCase property names (`Name`, `Age`), as in the design guide and .NET entities, so rows
// written here read there and back.
#[derive(Debug, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    name: String,
    age: i32,
}

#[tokio::main]
async fn main() -> table_client::Result<()> {
    let conn = std::env::var("AZURE_STORAGE_CONNECTION_STRING").unwrap_or("UseEmbeddedEngine=true".into());
    let service = TableServiceClient::from_connection_string(&conn)?;
    let (table, _) = service.create_table_if_not_exists("Employees").await?;
    let employees = table.typed::<Employee>();

    let hire = |id, name: &str, age| Employee { department: "Sales".into(), id, name: name.into(), age };
    employees.insert_or_replace(&hire(1, "Ann", 34)).await?;

    // An entity-group transaction of typed values: both rows or neither (and the rows of any
    // index `Employee` declared, had it one).
    let batch = employees.transaction().insert_or_replace(&hire(2, "Bob", 28));
    batch.insert_or_replace(&hire(3, "Cy", 41)).submit().await?;

    // A typed query, streamed page by page: `PartitionKey eq 'Sales' and Age gt 30`.
    let mut over_30 = employees.query().partition("Sales").filter(Employee::AGE.gt(30)).stream();
    while let Some(employee) = over_30.next().await {
        let employee = employee?;
        println!("{} (empid {:06}) is {}", employee.name, employee.id, employee.age);
    }
    Ok(())
}
