use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "r", entity_type = "Employee")]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(encrypt)]
    ssn: String,
}

#[derive(TableEntity)]
#[table(crate = "table_core")]
enum AnyEntity {
    Employee(Employee),
}

fn main() {}
