use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core")]
struct Employee {
    department: String,
}

fn main() {}
