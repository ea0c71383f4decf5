use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "r", rename_all = "PascalCase")]
struct Employee {
    first_name: String,
    #[table(rename = "FirstName")]
    given_name: String,
    #[table(rename = "Row Key")]
    row: String,
    #[table(rename = "RowKey")]
    other: String,
}

fn main() {}
