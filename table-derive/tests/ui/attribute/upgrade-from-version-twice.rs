use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee", version = 1)]
struct EmployeeV1 {
    id: u32,
}

fn upgrade(v1: EmployeeV1) -> Employee {
    Employee { id: v1.id }
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee", version = 3)]
#[table(upgrade_from(1 = upgrade, 1 = upgrade))]
struct Employee {
    id: u32,
}

fn main() {}
