use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee", version = 1)]
struct EmployeeV1 {
    id: u32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee", version = 2)]
struct EmployeeV2 {
    id: u32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee", version = 2)]
struct EmployeeV2Again {
    id: u32,
}

// Two versions of one type are told apart; the same version twice is not.
#[derive(TableEntity)]
#[table(crate = "table_core")]
enum AnyEmployee {
    V1(EmployeeV1),
    V2(EmployeeV2),
    Again(EmployeeV2Again),
}

#[derive(TableEntity)]
#[table(crate = "table_core", upgrade_from(1 = f))]
enum Attributed {
    V1(EmployeeV1),
}

fn main() {}
