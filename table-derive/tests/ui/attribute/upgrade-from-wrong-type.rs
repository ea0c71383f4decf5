use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee", version = 2)]
struct EmployeeV2 {
    id: u32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Manager", version = 1)]
struct ManagerV1 {
    id: u32,
}

impl Employee {
    fn from_v2(v2: EmployeeV2) -> Employee {
        Employee { id: v2.id }
    }
}

fn from_manager(m: ManagerV1) -> table_core::Result<Employee> {
    Ok(Employee { id: m.id })
}

// Each function takes a type other than the one stored under the version it is listed at.
#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "Employee", version = 3)]
#[table(upgrade_from(1 = Employee::from_v2, 2 = from_manager))]
struct Employee {
    id: u32,
}

fn main() {}
