use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "r")]
struct Employee {
    #[table(key_only, encrypt)]
    department: String,
}

fn main() {}
