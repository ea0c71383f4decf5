use table_derive::TableEntity;

#[derive(TableEntity)]
#[table(crate = "table_core", partition_key = "{department}", row_key = "r")]
struct Employee {
    #[table(key_only)]
    department: String,
    #[table(encrypt)]
    ssn: String,
}

fn main() {
    // The service sees only ciphertext: no typed filter on an encrypted field.
    let _ = Employee::SSN.eq("123-45-6789".to_owned());
}
