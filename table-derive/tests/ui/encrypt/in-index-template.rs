use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(lookup(name = "by_email", partition_key = "email_{email}", row_key = "{id}"))]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(key_only)]
    id: u32,
    #[table(encrypt)]
    email: String,
}

fn main() {}
