use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "r", version = 2)]
struct Employee {
    department: String,
}

fn main() {}
