//! Client-side encryption of typed fields: `#[table(encrypt)]` marks the fields a client with an
//! encryption policy stores encrypted (as `Edm.Binary`, under a fresh content key per row
//! wrapped by a key-encryption key) and decrypts on read, with nothing to say when reading or
//! querying.
//!
//! - A typed insert, get and query of a patient record whose notes and contacts are encrypted.
//! - The same row read by a client without the policy: ciphertext and the two metadata
//!   properties.
//! - A merge refused (an encrypted row is replaced whole, with its ETag), and the replace that
//!   does the job instead.
//! - `require_encryption`: a row written in clear by another program is refused.

use table_client::encryption::{AesKeyWrap, EncryptionPolicy};
use table_client::engine::Engine;
use table_client::{Entity, ErrorKind, IfMatch, Result, TableEntity, Value};

/// A patient: the name is searchable, the notes and contacts are encrypted.
#[derive(Debug, Clone, PartialEq, TableEntity)]
#[table(partition_key = "{ward}", row_key = "patient_{id:06}", rename_all = "PascalCase")]
struct Patient {
    #[table(key_only)]
    ward: String,
    #[table(key_only)]
    id: u32,
    name: String,
    #[table(encrypt)]
    notes: String,
    #[table(encrypt)]
    allergy: Option<String>,
    /// Encrypted as its JSON text.
    #[table(json, encrypt)]
    contacts: Vec<String>,
}

#[tokio::main]
async fn main() -> Result<()> {
    examples::announce();
    // In production the key-encryption key lives in a key store (implement `KeyEncryptionKey`
    // over it); a local A256KW key stands in here.
    let policy = EncryptionPolicy::new(AesKeyWrap::new("local:kek-1", [42; 32])).require_encryption(true);
    let engine = Engine::new();
    let service = examples::builder(&engine).encryption(policy).build()?;
    let plain = examples::builder(&engine).build()?;
    let table = examples::create_table(&service, "Patients").await?;
    let patients = table.typed::<Patient>();

    let ann = Patient {
        ward: "North".into(),
        id: 1,
        name: "Ann".into(),
        notes: "Recovering well 🩺".into(),
        allergy: Some("penicillin".into()),
        contacts: vec!["+1 555 0100".into()],
    };
    let etag = patients.insert(&ann).await?;
    let read = patients.get(&ann.entity_key()?).await?;
    examples::check(read == ann, "the encrypted fields to read back as written")?;
    println!("read back {}: notes {:?}, allergy {:?}", read.name, read.notes, read.allergy);

    // Without the policy, the stored row shows what the service holds.
    let stored = plain.table(table.name()).get("North", "patient_000001").await?;
    let binary =
        ["Notes", "Allergy", "Contacts"].iter().all(|p| matches!(stored.get(p), Some(Value::Binary(_))));
    examples::check(binary, "the encrypted fields to be stored as Edm.Binary")?;
    let notes_len = match stored.get("Notes") {
        Some(Value::Binary(bytes)) => bytes.len(),
        _ => 0,
    };
    println!(
        "stored: Name {:?}, Notes as {notes_len} bytes of ciphertext, metadata {}",
        stored.get("Name"),
        stored.get("_ClientEncryptionMetadata1").map_or("missing", |_| "present")
    );

    // A merge would leave the row's other encrypted fields under a content key it replaced.
    let update = Patient { notes: "Discharged".into(), ..ann.clone() };
    let refused = patients.merge(&update, IfMatch::ETag(etag.clone())).await;
    examples::check(refused.is_err_and(|e| e.kind() == ErrorKind::InvalidInput), "the merge to be refused")?;
    patients.replace(&update, IfMatch::ETag(etag)).await?;
    println!(
        "merge refused; replaced with the ETag: notes now {:?}",
        patients.get(&ann.entity_key()?).await?.notes
    );

    // A row another program wrote in clear is refused rather than trusted.
    let clear = Entity::new("North", "patient_000002")
        .with("Name", "Bob")
        .with("Notes", "in clear")
        .with("Contacts", "[]");
    plain.table(table.name()).insert(clear).await?;
    let all = patients.query().partition("North").collect().await;
    examples::check(all.is_err_and(|e| e.kind() == ErrorKind::Crypto), "a row in clear to be refused")?;
    println!("a row with Notes in clear is refused under require_encryption");

    examples::delete_tables(&service, &[&table]).await
}
