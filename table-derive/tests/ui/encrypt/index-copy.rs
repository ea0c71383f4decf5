use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(index(name = "by_name", row_key = "name_{name}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    name: String,
    #[table(encrypt)]
    ssn: String,
}

fn main() {}
