use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "p", row_key = "{a}{b}")]
struct Pair {
    #[table(key_only)]
    a: String,
    b: String,
}

fn main() {}
