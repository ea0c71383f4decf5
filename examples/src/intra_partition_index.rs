//! Intra-partition secondary index: each employee is stored under `empid_<id>` and, in the
//! same department partition and the same transaction, under `email_<email>`, so both a lookup
//! by id and a lookup by email are point reads. Changing the email moves the copy atomically.

use table_client::{ErrorKind, IfMatch, Result, TableEntity};

/// The guide's employee with a unique email index in its own partition.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    last_name: String,
    email: String,
}

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "Employees").await?;
    let employees = table.typed::<Employee>();
    for e in examples::staff() {
        let mut indexed = Employee {
            department: e.department,
            id: e.id,
            first_name: e.first_name,
            last_name: e.last_name,
            email: e.email,
        };
        if indexed.id == 3 {
            indexed.email = "ken@contoso.com".into();
        }
        employees.insert(&indexed).await?;
    }

    let by_id = employees.get(&Employee::key("Sales", 1)?).await?;
    println!("by id:    empid_000001 -> {} {}", by_id.first_name, by_id.last_name);
    // The derive's handle builds the index key from field values: `email_ken@contoso.com`.
    let key = Employee::BY_EMAIL.key("Sales", "ken@contoso.com")?;
    let by_email: Employee = employees.get_by_index(Employee::BY_EMAIL, &key).await?;
    println!("by email: email_ken@contoso.com -> employee {}", by_email.id);

    // A second employee with a taken email is refused, and nothing is written.
    let clash = Employee { id: 9, ..by_email.clone() };
    let err = employees.insert(&clash).await.map(drop).err();
    let refused = err.is_some_and(|e| e.kind() == ErrorKind::AlreadyExists);
    println!("duplicate email refused: {refused}");
    examples::check(refused, "the duplicate email to be refused")?;

    // Changing the email deletes the old copy and writes the new one in one transaction.
    let mut ken = by_email;
    ken.email = "ken.jones@contoso.com".into();
    employees.replace(&ken, IfMatch::Any).await?;
    let moved: Vec<Employee> = employees
        .query_index(Employee::BY_EMAIL)
        .partition(&Employee::BY_EMAIL.partition_key_for("Sales")?)
        .row_key_prefix("email_ken")
        .collect()
        .await?;
    println!(
        "after the change, Sales emails starting with `ken`: {:?}",
        moved.iter().map(|e| &e.email).collect::<Vec<_>>()
    );
    let consistent = employees.verify_indexes().await?.is_consistent();
    println!("indexes consistent: {consistent}");
    examples::check(consistent, "consistent indexes")?;
    examples::check(
        moved.iter().map(|e| e.email.as_str()).eq(["ken.jones@contoso.com"]),
        "the moved email copy",
    )?;

    examples::delete_tables(&service, &[&table]).await
}
