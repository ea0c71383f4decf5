use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "a")]
struct A {
    x: i32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "b", entity_type = "B")]
struct B {
    x: i32,
}

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "c", entity_type = "B")]
struct C {
    x: i32,
}

#[derive(TableEntity)]
#[table(crate = "table_core")]
enum Row {
    A(A),
    B(B),
    C(C),
}

fn main() {}
