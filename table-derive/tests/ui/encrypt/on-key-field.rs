use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
struct Employee {
    #[table(encrypt)]
    department: String,
    #[table(key_only)]
    id: u32,
}

fn main() {}
