use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department:ticks}", row_key = "{id:inverted_ticks}")]
struct Employee {
    department: String,
    id: u32,
}

fn main() {}
