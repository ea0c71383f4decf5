use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(row_key = "empid_{id}")]
struct Employee {
    department: String,
    #[table(rename = "Id", rename = "ID")]
    id: u32,
}

fn main() {}
