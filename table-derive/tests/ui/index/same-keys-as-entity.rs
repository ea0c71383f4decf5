use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(index(row_key = "{id}"))]
#[table(index(name = "copy", row_key = "{id}"))]
struct Employee {
    department: String,
    id: u32,
}

fn main() {}
