use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{region}", row_key = "{score}")]
struct Player {
    region: Option<String>,
    score: f64,
}

fn main() {}
