use table_derive::TableEntity;

// A refused index name is not reported missing, and the index's template is still checked;
// an index or projection written without its list is reported once.
#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(index(name = by_email, row_key = "email_{emial}"))]
#[table(lookup = "by_name")]
#[table(index(name = "by_id", row_key = "id_{id}", project = "email"))]
struct Employee {
    department: String,
    id: u32,
    email: String,
}

// A syntax error inside one index ends only that index: the lookup after it is still checked.
#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "{id}")]
#[table(index(name = "by_x" row_key = "x_{id}"), lookup(name = "by_email", row_key = "e_{emial}"))]
struct Manager {
    department: String,
    id: u32,
    email: String,
}

fn main() {}
