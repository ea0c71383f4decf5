//! What the examples share: the backend they run on and the design guide's employee data.
//!
//! Every example runs on a fresh embedded engine by default, and on any backend (Azure Table
//! Storage, Cosmos DB Table API, Azurite) when `AZURE_STORAGE_CONNECTION_STRING` is set. Tables
//! get a unique suffix so runs against a shared account never collide, and are deleted at the
//! end.

#![deny(missing_docs)]

use table_client::engine::Engine;
use table_client::{Result, TableClient, TableEntity, TableServiceClient, TableServiceClientBuilder};

/// Fails the example when an outcome it demonstrates did not happen, so a wrong answer is an
/// error exit rather than a line of output nobody reads.
pub fn check(holds: bool, what: &str) -> Result<()> {
    match holds {
        true => Ok(()),
        false => Err(table_client::Error::other(format!("expected {what}"))),
    }
}

/// The environment variable naming the backend.
pub const CONNECTION_STRING_VAR: &str = "AZURE_STORAGE_CONNECTION_STRING";

/// The service to run on: the connection string in [`CONNECTION_STRING_VAR`], or else a fresh
/// embedded engine. Prints which.
pub fn service() -> Result<TableServiceClient> {
    announce();
    builder(&Engine::new()).build()
}

/// The connection string in [`CONNECTION_STRING_VAR`], if set.
fn connection_string() -> Option<String> {
    std::env::var(CONNECTION_STRING_VAR).ok().filter(|cs| !cs.is_empty())
}

/// Prints the backend [`builder`] builds for, as the first line of an example's output.
pub fn announce() {
    match connection_string() {
        Some(_) => println!("backend: from {CONNECTION_STRING_VAR}"),
        None => println!("backend: embedded engine (set {CONNECTION_STRING_VAR} for another)"),
    }
}

/// A builder for the service of [`service`], on `engine` when no connection string is set:
/// for an example that needs several clients of one backend (with and without a setting).
pub fn builder(engine: &Engine) -> TableServiceClientBuilder {
    match connection_string() {
        Some(connection_string) => TableServiceClient::builder().connection_string(&connection_string),
        None => TableServiceClient::builder().engine(engine.clone()),
    }
}

/// A name starting with `base` that no other run uses (a letter-and-digit suffix from the
/// clock, as table names allow nothing else).
pub fn unique_name(base: &str) -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{base}{}", nanos % 1_000_000_000_000)
}

/// Creates a table named `base` plus a unique suffix.
pub async fn create_table(service: &TableServiceClient, base: &str) -> Result<TableClient> {
    service.create_table(&unique_name(base)).await
}

/// Deletes the tables an example created.
pub async fn delete_tables(service: &TableServiceClient, tables: &[&TableClient]) -> Result<()> {
    for table in tables {
        service.delete_table_if_exists(table.name()).await?;
    }
    Ok(())
}

/// An employee of the design guide: one partition per department, RowKey `empid_<id>`.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
#[table(entity_type = "Employee")]
pub struct Employee {
    /// The department, which is the PartitionKey.
    #[table(key_only)]
    pub department: String,
    /// The employee id, which is the RowKey.
    #[table(key_only)]
    pub id: u32,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Age.
    pub age: i32,
    /// Email address.
    pub email: String,
}

impl Employee {
    /// An employee with an email made from the names.
    pub fn new(department: &str, id: u32, first_name: &str, last_name: &str, age: i32) -> Self {
        Employee {
            department: department.to_owned(),
            id,
            first_name: first_name.to_owned(),
            last_name: last_name.to_owned(),
            age,
            email: format!("{}.{}@contoso.com", first_name.to_lowercase(), last_name.to_lowercase()),
        }
    }
}

/// The guide's sample staff: a few employees in Sales and Marketing, several called Jones.
pub fn staff() -> Vec<Employee> {
    vec![
        Employee::new("Sales", 1, "Ann", "Jones", 34),
        Employee::new("Sales", 2, "Don", "Hall", 29),
        Employee::new("Sales", 3, "Ken", "Jones", 41),
        Employee::new("Marketing", 4, "Eva", "Jones", 38),
        Employee::new("Marketing", 5, "Raj", "Patel", 25),
    ]
}
