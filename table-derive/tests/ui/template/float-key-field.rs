use table_derive::TableEntity;

// Every integer type takes the integer specs (`shard: u16` here); a float is never a key.
#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{shard:05}", row_key = "{ratio}")]
struct Reading {
    shard: u16,
    ratio: f32,
}

fn main() {}
