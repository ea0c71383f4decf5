use table_derive::{PropertyValue, TableEntity};

// A refused `crate` is reported on its value, and the code using the type adds no error.
#[derive(TableEntity)]
#[table(crate = "table core", partition_key = "{department}", row_key = "{id}")]
struct Employee {
    department: String,
    id: u32,
}

#[derive(PropertyValue)]
#[table(crate = 5)]
enum Contract {
    FullTime,
    #[table(rename = 1)]
    PartTime,
}

fn to_entity(e: &Employee) -> table_core::Result<table_core::Entity> {
    table_core::typed::TableEntity::to_entity(e)
}

fn main() {}
