use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee", version = 1)]
struct EmployeeV1 {
    id: u32,
}

fn upgrade_v1(v1: EmployeeV1) -> Employee {
    Employee { id: v1.id }
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee")]
#[table(upgrade_from(1 = upgrade_v1))]
struct Employee {
    id: u32,
}

fn main() {}
