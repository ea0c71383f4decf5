use table_derive::TableEntity;

// Each malformed `upgrade_from` is reported, and its siblings are still checked.
#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "A", version = 2)]
#[table(upgrade_from = upgrade, rename_all = "Pascal")]
struct A {
    id: u32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "B", version = 2)]
#[table(upgrade_from(v1 = upgrade))]
struct B {
    id: u32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "C", version = 2)]
#[table(upgrade_from(1 = "upgrade"))]
struct C {
    id: u32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "D", version = 2)]
#[table(upgrade_from(99999999999 = upgrade, 1 = upgrade, 1 = other))]
struct D {
    id: u32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{id}", entity_type = "E", version = 2)]
#[table(upgrade_from(1 upgrade))]
#[table(upgrade_from(1 = upgrade))]
struct E {
    id: u32,
}

fn main() {}
