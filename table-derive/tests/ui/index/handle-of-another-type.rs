use table_core::typed::SecondaryIndex;
use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
struct Employee {
    department: String,
    id: u32,
    email: String,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{region}", row_key = "{id}")]
struct Customer {
    region: String,
    id: u32,
    email: String,
}

/// Stands for `TypedTable<Customer>::get_by_index`, which takes `Customer`'s handles only.
fn get_by_index<I: SecondaryIndex<Entity = Customer>>(_: I) {}

fn main() {
    get_by_index(Employee::BY_EMAIL);
}
