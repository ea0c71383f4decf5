//! A department summary kept in step with the employees it counts: the new employee, its index
//! entity by last name and the summary's `EmployeeCount` change in ONE typed transaction (all
//! live in the department's partition), and the summary is written with the ETag it was read
//! with, so concurrent hires retry instead of losing a count. The transaction keeps the
//! employee's index itself, reading the index entity and retrying when another hire changed it.

use table_client::{ETag, Error, ErrorKind, IfMatch, Result, TableClient, TableEntity};

/// An employee with an index entity per last name, beside it in the department's partition.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
#[table(entity_type = "Employee")]
#[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    first_name: String,
    last_name: String,
}

/// One per department partition, beside its employees.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "summary", rename_all = "PascalCase")]
#[table(entity_type = "DepartmentSummary")]
struct DepartmentSummary {
    #[table(key_only)]
    department: String,
    employee_count: i32,
    #[table(etag)]
    etag: Option<ETag>,
}

const MAX_ATTEMPTS: usize = 20;

/// Inserts `employee` and counts it, atomically; returns how many attempts it took.
async fn hire(table: &TableClient, employee: &Employee) -> Result<usize> {
    let department = employee.department.clone();
    let summaries = table.typed::<DepartmentSummary>();
    for attempt in 1..=MAX_ATTEMPTS {
        let transaction = table.typed_transaction().insert(employee);
        let transaction = match summaries.get_if_exists(&DepartmentSummary::key(&department)?).await? {
            None => transaction.insert(&DepartmentSummary {
                department: department.clone(),
                employee_count: 1,
                etag: None,
            }),
            Some(mut summary) => {
                let etag = summary.etag.take().map_or(IfMatch::Any, IfMatch::ETag);
                summary.employee_count += 1;
                transaction.replace(&summary, etag)
            }
        };
        match transaction.submit().await {
            Ok(_) => return Ok(attempt),
            // Operation 1 is the summary: someone else counted a hire since we read it. (A race
            // on the index entity is the transaction's own to retry: it never surfaces here.)
            Err(e)
                if e.batch_index() == Some(1)
                    && matches!(e.kind(), ErrorKind::PreconditionFailed | ErrorKind::AlreadyExists) => {}
            Err(e) => return Err(e),
        }
    }
    Err(Error::other(format!("the {department} summary kept changing")))
}

#[tokio::main]
async fn main() -> Result<()> {
    let service = examples::service()?;
    let table = examples::create_table(&service, "Employees").await?;

    // Five hires into Sales at once: each transaction either applies both writes or none.
    let hires = (1..=5u32).map(|id| {
        let table = table.clone();
        tokio::spawn(async move {
            let employee = Employee {
                department: "Sales".into(),
                id,
                first_name: format!("Hire{id}"),
                last_name: "Smith".into(),
            };
            hire(&table, &employee).await.map(|attempts| (id, attempts))
        })
    });
    for hire in hires.collect::<Vec<_>>() {
        let (id, attempts) = hire.await.map_err(|e| Error::other("a hire task failed").with_source(e))??;
        println!("hired employee {id} in {attempts} attempt(s)");
    }

    let summary = DepartmentSummary::from_entity(table.get("Sales", "summary").await?)?;
    let employees = table.query().partition("Sales").row_key_prefix("empid_").collect().await?;
    println!(
        "Sales summary says {} employees; the partition holds {}",
        summary.employee_count,
        employees.len()
    );
    if usize::try_from(summary.employee_count).ok() != Some(employees.len()) {
        return Err(Error::other("the summary lost a count"));
    }
    let report = table.typed::<Employee>().verify_indexes().await?;
    println!("the index by last name is consistent: {}", report.is_consistent());
    if !report.is_consistent() {
        return Err(Error::other(format!("the index by last name is out of step: {report:?}")));
    }

    examples::delete_tables(&service, &[&table]).await
}
