//! Index entities: the `Jones` entity lists the keys of every employee called Jones in the
//! department, so "all the Joneses" is one point read plus point reads of the employees, and
//! the list changes in the same transaction as the employee it concerns (ETag and retry).

use futures::TryStreamExt;
use table_client::{IfMatch, Result, TableEntity};

/// The guide's employee with a last-name index entity in its own partition.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
#[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    last_name: String,
}

async fn joneses(employees: &table_client::TypedTable<Employee>) -> Result<Vec<String>> {
    // The derive's handle builds the index entity's key from field values: `lastname_Jones`.
    let key = Employee::BY_LAST_NAME.key("Sales", "Jones")?;
    let found: Vec<Employee> = employees.lookup(Employee::BY_LAST_NAME, &key, 4).try_collect().await?;
    Ok(found.into_iter().map(|e| format!("{} ({})", e.first_name, e.id)).collect())
}

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "Employees").await?;
    let employees = table.typed::<Employee>();
    let sales = examples::staff().into_iter().filter(|e| e.department == "Sales");
    for e in sales {
        let employee =
            Employee { department: e.department, id: e.id, first_name: e.first_name, last_name: e.last_name };
        employees.insert(&employee).await?;
    }
    let jones = table.get("Sales", "lastname_Jones").await?;
    println!(
        "index entity `lastname_Jones` has properties {:?}",
        jones.properties.keys().collect::<Vec<_>>()
    );
    println!("Joneses in Sales: {:?}", joneses(&employees).await?);

    // A rename touches three entities in one transaction: the employee and both lists.
    let mut ken = employees.get(&Employee::key("Sales", 3)?).await?;
    ken.last_name = "Hall".into();
    employees.replace(&ken, IfMatch::Any).await?;
    println!("after Ken Jones became Ken Hall: {:?}", joneses(&employees).await?);
    let halls = employees.lookup(Employee::BY_LAST_NAME, &Employee::BY_LAST_NAME.key("Sales", "Hall")?, 4);
    let halls: Vec<Employee> = halls.try_collect().await?;
    println!("Halls in Sales: {}", halls.len());

    examples::delete_tables(&service, &[&table]).await
}
