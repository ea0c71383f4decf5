use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{cache}")]
struct Employee {
    department: String,
    #[table(skip, json)]
    cache: String,
}

fn main() {}
