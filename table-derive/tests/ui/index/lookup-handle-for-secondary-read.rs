use table_core::typed::SecondaryIndex;
use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
struct Employee {
    department: String,
    id: u32,
    last_name: String,
}

/// Stands for `TypedTable::get_by_index`, which takes secondary index handles only.
fn get_by_index<I: SecondaryIndex<Entity = Employee>>(_: I) {}

fn main() {
    get_by_index(Employee::BY_LAST_NAME);
}
