use table_derive::{PropertyValue, TableEntity};

#[derive(TableEntity)]
#[table(crate = "table_core")]
enum Color {
    Red,
    Green,
}

#[derive(PropertyValue)]
#[table(crate = "table_core")]
enum Shape {
    Circle(f64),
    #[table(rename = "Circle")]
    Square,
}

fn main() {}
