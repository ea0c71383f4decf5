use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "email_{emial}")]
struct Employee {
    department: String,
    email: String,
}

fn main() {}
