use table_derive::TableEntity;

// The refused `partition_key` is not reported missing, and `row_key` is still checked; the
// refused `entity_type` does not make `version` ask for one.
#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = 1, row_key = "{bad_field}")]
#[table(entity_type = Employee, version = 2)]
struct Employee {
    department: String,
    id: u32,
}

fn main() {}
