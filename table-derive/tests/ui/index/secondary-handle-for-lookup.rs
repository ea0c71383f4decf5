use table_core::typed::LookupIndex;
use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
struct Employee {
    department: String,
    id: u32,
    email: String,
}

/// Stands for `TypedTable::lookup`, which takes lookup handles only.
fn lookup<I: LookupIndex<Entity = Employee>>(_: I) {}

fn main() {
    lookup(Employee::BY_EMAIL);
}
