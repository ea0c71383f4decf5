//! A department summary kept in step with the employees it counts: the new employee and the
//! summary's `EmployeeCount` change in ONE entity-group transaction (both live in the
//! department's partition), and the summary is written with the ETag it was read with, so
//! concurrent hires retry instead of losing a count.

use examples::Employee;
use table_client::{ETag, Error, ErrorKind, IfMatch, Result, TableClient, TableEntity, Transaction};

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
    let department = employee.partition_key()?;
    for attempt in 1..=MAX_ATTEMPTS {
        let current = table.get_if_exists(&department, "summary").await?;
        let summary_write = match current.map(DepartmentSummary::from_entity).transpose()? {
            None => {
                let first =
                    DepartmentSummary { department: department.clone(), employee_count: 1, etag: None };
                Transaction::new().insert(first.to_entity()?)
            }
            Some(mut summary) => {
                let etag = summary.etag.take().map_or(IfMatch::Any, IfMatch::ETag);
                summary.employee_count += 1;
                Transaction::new().replace(summary.to_entity()?, etag)
            }
        };
        let transaction = summary_write.insert(employee.to_entity()?);
        match table.submit_transaction(transaction).await {
            Ok(_) => return Ok(attempt),
            // Operation 0 is the summary: someone else counted a hire since we read it.
            Err(e)
                if e.batch_index() == Some(0)
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
            let employee = Employee::new("Sales", id, &format!("Hire{id}"), "Smith", 30);
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

    examples::delete_tables(&service, &[&table]).await
}
