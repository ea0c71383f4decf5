use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p")]
enum Row {
    Employee { id: u32 },
    Pair(String, String),
}

fn main() {}
