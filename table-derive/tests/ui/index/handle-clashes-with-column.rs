use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(index(name = "email", row_key = "email_{email}"))]
struct Employee {
    department: String,
    id: u32,
    email: String,
}

fn main() {}
