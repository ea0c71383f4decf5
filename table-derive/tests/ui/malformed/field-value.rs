use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
struct Employee {
    department: String,
    id: u32,
    // The refused value does not hide `json`, so `Vec<String>` is not refused as a property.
    #[table(rename = 5, json)]
    tags: Vec<String>,
    // Nor does it hide `skip`, whose own conflict with `rename` is still reported.
    #[table(rename = 5, skip)]
    cache: usize,
    // A marker written with a value is reported, and still marks the field.
    #[table(skip = true)]
    size: usize,
}

fn main() {}
