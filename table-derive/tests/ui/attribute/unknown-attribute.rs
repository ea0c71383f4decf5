use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}", rowkey = "x")]
struct Employee {
    department: String,
    #[table(skipped)]
    id: u32,
}

fn main() {}
