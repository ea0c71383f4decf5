use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "r", rename_all = "Pascal")]
struct Employee {
    department: String,
}

fn main() {}
