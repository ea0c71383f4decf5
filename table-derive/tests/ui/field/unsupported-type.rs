use std::collections::HashMap;
use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "r")]
struct Employee {
    size: usize,
    tags: Vec<String>,
    scores: HashMap<String, i32>,
    initial: Option<char>,
}

fn main() {}
