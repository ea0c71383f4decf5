use table_derive::TableEntity;

// A template that cannot be parsed is one error: the `key_only` field it names is not then
// reported as missing from the keys, nor the index as lacking a `row_key`.
#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "empid_{id")]
#[table(index(name = "by_email", row_key = "{email:6}"))]
struct Employee {
    department: String,
    #[table(key_only)]
    id: u32,
    email: String,
}

fn main() {}
