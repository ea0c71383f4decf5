use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(index(name = "by_email", row_key = "email_{mail}", project(email, phone)))]
#[table(lookup(name = "by_name", row_key = "name_{email}", project(email)))]
struct Employee {
    department: String,
    id: u32,
    email: String,
}

fn main() {}
