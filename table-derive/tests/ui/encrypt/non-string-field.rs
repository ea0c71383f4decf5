use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "r")]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(encrypt)]
    salary: Option<i64>,
}

fn main() {}
