//! Client-side encryption on Azurite: both formats round trip through the real service, and
//! format "1.0" interoperates in both directions with the Python package
//! `azure-cosmosdb-table` 1.0.6 (`tests/python/encryption_interop.py`), with an `A256KW` and
//! an `RSA-OAEP` key. Key rotation re-wraps rows of both formats through the real service,
//! its ETag-conditioned writes keeping a concurrent writer's change, and rows the Python package
//! wrote, which it reads back with the new key.
//!
//! These need the service, so they run on Azurite only; where Azurite or Python cannot run the
//! harness prints a loud banner and the test returns (`REQUIRE_AZURITE=1` / `REQUIRE_PYTHON=1`
//! turn that into a failure).

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use conformance::azurite::{Azurite, azurite, unique_table_name};
use conformance::python::{CONNECTION_STRING_VAR, Python, python_cosmosdb_table};
use table_client::encryption::{
    AesKeyWrap, EncryptionFormat, EncryptionPolicy, KeyEncryptionKey, KeyFuture, KeyRing, RsaOaepKey,
};
use table_client::{Entity, TableClient, TableServiceClient, Value};

/// The test-only RSA key of table-client's encryption tests (PKCS#8 PEM).
const RSA_KEY_FILE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../table-client/tests/fixtures/encryption_rsa_key.pem");

/// The A256KW secret both sides use: 32 bytes of 7.
const AES_KEY: [u8; 32] = [7; 32];

/// The script's key ids.
const AES_KEY_ID: &str = "local:aes";
const RSA_KEY_ID: &str = "local:rsa";

/// Properties whose names start with "Secret" are encrypted, on both sides.
fn secret(_: &str, _: &str, name: &str) -> bool {
    name.starts_with("Secret")
}

/// The corpus of `encryption_interop.py`, built independently here, in RowKey order: no secret
/// at all, emoji, an empty string beside another secret, 32 768 characters.
fn corpus(partition: &str) -> Vec<Entity> {
    vec![
        Entity::new(partition, "absent").with("Plain", 1),
        Entity::new(partition, "emoji").with("SecretA", "🦀 crab 👩‍👩‍👧").with("Plain", 2),
        Entity::new(partition, "empty").with("SecretA", "").with("SecretB", "b").with("Plain", 3),
        Entity::new(partition, "long").with("SecretA", "x".repeat(32 * 1024)).with("Plain", 4),
    ]
}

fn kek(name: &str) -> Arc<dyn KeyEncryptionKey> {
    match name {
        "aes" => Arc::new(AesKeyWrap::new(AES_KEY_ID, AES_KEY)),
        _ => Arc::new(
            RsaOaepKey::from_private_key_pem(RSA_KEY_ID, &std::fs::read_to_string(RSA_KEY_FILE).unwrap())
                .unwrap(),
        ),
    }
}

/// A client for `table` on Azurite that encrypts with the KEK `name` in `format`.
fn encrypting(azurite: &Azurite, table: &str, name: &str, format: EncryptionFormat) -> TableClient {
    let policy =
        EncryptionPolicy::new(kek(name)).encrypt_properties(secret).format(format).require_encryption(true);
    let service = TableServiceClient::builder()
        .connection_string(&azurite.connection_string)
        .encryption(policy)
        .build()
        .unwrap();
    service.table(table)
}

fn script_env(azurite: &Azurite) -> Vec<(&'static str, String)> {
    vec![
        (CONNECTION_STRING_VAR, azurite.connection_string.clone()),
        ("ENCRYPTION_AES_KEY_HEX", AES_KEY.iter().map(|b| format!("{b:02x}")).collect()),
        ("ENCRYPTION_RSA_KEY_FILE", RSA_KEY_FILE.to_owned()),
    ]
}

fn run(python: &Python, azurite: &Azurite, verb: &str, table: &str, partition: &str, kek: &str) -> String {
    let env = script_env(azurite);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    python
        .run("encryption_interop.py", &[verb, "--table", table, "--partition", partition, "--kek", kek], &env)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The properties of `entity` as `encryption_interop.py read` prints them.
fn as_json(entity: &Entity) -> serde_json::Value {
    let properties: serde_json::Map<String, serde_json::Value> = entity
        .properties
        .iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(s) => serde_json::Value::from(s.as_str()),
                Value::Int32(n) => serde_json::Value::from(*n),
                other => panic!("unexpected {other:?} in the corpus"),
            };
            (name.clone(), value)
        })
        .collect();
    serde_json::Value::Object(properties)
}

/// Asserts `read` holds the rows of `expected` (keys and properties), in order; a failure
/// shows long strings by their length only.
fn assert_rows(read: &[Entity], expected: &[Entity], context: &str) {
    let shown = |rows: &[Entity]| -> Vec<String> {
        rows.iter()
            .map(|e| {
                let props: Vec<String> = e
                    .properties
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) if s.len() > 40 => format!("{k}=<{} chars>", s.chars().count()),
                        other => format!("{k}={other:?}"),
                    })
                    .collect();
                format!("{}: {}", e.row_key, props.join(", "))
            })
            .collect()
    };
    let same = read.len() == expected.len()
        && read.iter().zip(expected).all(|(r, e)| r.row_key == e.row_key && r.properties == e.properties);
    assert!(same, "{context}: read {:#?}\nexpected {:#?}", shown(read), shown(expected));
}

#[tokio::test]
async fn both_formats_round_trip_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("encround")).await.unwrap();
    for (partition, format) in [("gcm", EncryptionFormat::Authenticated), ("v1", EncryptionFormat::V1)] {
        let client = encrypting(azurite, table.name(), "aes", format);
        for entity in corpus(partition) {
            client.insert(entity).await.unwrap();
        }
        let stored = table.get(partition, "long").await.unwrap();
        assert!(matches!(stored.get("SecretA"), Some(Value::Binary(_))), "{format:?}");
        let read: Vec<Entity> = client.query().partition(partition).collect().await.unwrap();
        assert_rows(&read, &corpus(partition), &format!("{format:?}"));
    }
}

#[tokio::test]
async fn rows_the_python_package_encrypted_read_back() {
    let Some(azurite) = azurite() else { return };
    let Some(python) = python_cosmosdb_table() else { return };
    let table = unique_table_name("encpyread");
    for kek in ["aes", "rsa"] {
        run(python, azurite, "write", &table, kek, kek);
        let client = encrypting(azurite, &table, kek, EncryptionFormat::Authenticated);
        let stored =
            TableServiceClient::from_connection_string(&azurite.connection_string).unwrap().table(&table);
        assert!(matches!(stored.get(kek, "emoji").await.unwrap().get("SecretA"), Some(Value::Binary(_))));
        let read: Vec<Entity> = client.query().partition(kek).collect().await.unwrap();
        // The package writes every Python int as Edm.Int64.
        let expected: Vec<Entity> = corpus(kek)
            .into_iter()
            .map(|mut e| {
                if let Some(Value::Int32(n)) = e.properties.get("Plain").cloned() {
                    e.insert("Plain", Value::Int64(n.into()));
                }
                e
            })
            .collect();
        assert_rows(&read, &expected, kek);
    }
}

#[tokio::test]
async fn the_python_package_reads_our_format_1_0_rows() {
    let Some(azurite) = azurite() else { return };
    let Some(python) = python_cosmosdb_table() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("encpywrite")).await.unwrap();
    for kek in ["aes", "rsa"] {
        let client = encrypting(azurite, table.name(), kek, EncryptionFormat::V1);
        for entity in corpus(kek) {
            client.insert(entity).await.unwrap();
        }
        let printed: serde_json::Value =
            serde_json::from_str(&run(python, azurite, "read", table.name(), kek, kek)).unwrap();
        let expected: BTreeMap<String, serde_json::Value> =
            corpus(kek).iter().map(|e| (e.row_key.clone(), as_json(e))).collect();
        assert_eq!(printed["rows"], serde_json::to_value(expected).unwrap(), "{kek}");
    }
}

/// The new KEK of the rotation test, which has another writer replace one row just before its
/// first wrap, so the rotation's conditional write loses the race.
#[derive(Debug)]
struct Interfering {
    key: AesKeyWrap,
    writer: TableClient,
    write: std::sync::Mutex<Option<Entity>>,
}

impl KeyEncryptionKey for Interfering {
    fn key_id(&self) -> &str {
        self.key.key_id()
    }

    fn algorithm(&self) -> &str {
        self.key.algorithm()
    }

    fn wrap_key<'a>(&'a self, key: &'a [u8]) -> KeyFuture<'a> {
        let write = self.write.lock().unwrap().take();
        Box::pin(async move {
            if let Some(entity) = write {
                self.writer.insert_or_replace(entity).await?;
            }
            self.key.wrap_key(key).await
        })
    }

    fn unwrap_key<'a>(&'a self, wrapped: &'a [u8], algorithm: &'a str) -> KeyFuture<'a> {
        self.key.unwrap_key(wrapped, algorithm)
    }
}

#[tokio::test]
async fn key_rotation_rewraps_both_formats_on_azurite_and_keeps_concurrent_writes() {
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("encrotate")).await.unwrap();
    let mut written = Vec::new();
    for (partition, format, name) in
        [("gcm", EncryptionFormat::Authenticated, "aes"), ("v1", EncryptionFormat::V1, "rsa")]
    {
        let client = encrypting(azurite, table.name(), name, format);
        for entity in corpus(partition) {
            client.insert(entity.clone()).await.unwrap();
            written.push(entity);
        }
    }
    let before: Vec<Entity> = table.query().collect().await.unwrap();

    // The rotating client knows both old keys; another writer changes row v1/emoji mid-way.
    let new = || AesKeyWrap::new("local:new", [8; 32]);
    let changed = Entity::new("v1", "emoji").with("SecretA", "by the writer").with("Plain", 9);
    let writer = encrypting(azurite, table.name(), "rsa", EncryptionFormat::V1);
    let ring = KeyRing::new().with(kek("aes")).with(kek("rsa"));
    let rotator = TableServiceClient::builder()
        .connection_string(&azurite.connection_string)
        .encryption(EncryptionPolicy::new(new()).key_resolver(ring))
        .build()
        .unwrap()
        .table(table.name());
    let new_key = Interfering { key: new(), writer, write: std::sync::Mutex::new(Some(changed.clone())) };
    let report = rotator.rotate_encryption_key(new_key).run().await.unwrap();
    // Format 1.0 marks its row without secrets too; the authenticated format leaves it in clear.
    assert_eq!((report.rewrapped, report.not_encrypted, report.retried), (7, 1, 1), "{report:?}");

    // Only the envelopes changed, but on the row the writer replaced.
    let after: Vec<Entity> = table.query().collect().await.unwrap();
    let without_envelope = |row: &Entity| {
        let mut row = row.properties.clone();
        row.remove("_ClientEncryptionMetadata1");
        row
    };
    for (old, new) in before.iter().zip(&after).filter(|(old, _)| old.key() != changed.key()) {
        assert_eq!(without_envelope(old), without_envelope(new), "{}", old.key());
    }

    // The new key alone reads every row, the writer's change included.
    let reader = TableServiceClient::builder()
        .connection_string(&azurite.connection_string)
        .encryption(EncryptionPolicy::new(new()))
        .build()
        .unwrap()
        .table(table.name());
    let mut expected: Vec<Entity> =
        written.into_iter().map(|e| if e.key() == changed.key() { changed.clone() } else { e }).collect();
    expected.sort_by(|a, b| (&a.partition_key, &a.row_key).cmp(&(&b.partition_key, &b.row_key)));
    let read: Vec<Entity> = reader.query().collect().await.unwrap();
    assert_rows(&read, &expected, "after rotation");

    // A second run finds everything current.
    let again = rotator.rotate_encryption_key(new()).run().await.unwrap();
    assert_eq!((again.rewrapped, again.current, again.not_encrypted), (0, 7, 1), "{again:?}");
}

#[tokio::test]
async fn rows_the_python_package_wrote_are_rotated_and_it_reads_them_back() {
    let Some(azurite) = azurite() else { return };
    let Some(python) = python_cosmosdb_table() else { return };
    let table = unique_table_name("encpyrotate");
    // Python writes under its RSA key; the rotation moves the rows to its A256KW key.
    run(python, azurite, "write", &table, "rsa", "rsa");
    let rotator = TableServiceClient::builder()
        .connection_string(&azurite.connection_string)
        .encryption(EncryptionPolicy::new(kek("aes")).key_resolver(KeyRing::new().with(kek("rsa"))))
        .build()
        .unwrap()
        .table(&table);
    let report = rotator.rotate_encryption_key(kek("aes")).partition("rsa").run().await.unwrap();
    // The package marks every row it writes, even the one without secrets.
    assert_eq!((report.rewrapped, report.not_encrypted), (4, 0), "{report:?}");

    // Python, which now knows only its A256KW key, reads every row.
    let printed: serde_json::Value =
        serde_json::from_str(&run(python, azurite, "read", &table, "rsa", "aes")).unwrap();
    let expected: BTreeMap<String, serde_json::Value> =
        corpus("rsa").iter().map(|e| (e.row_key.clone(), as_json(e))).collect();
    assert_eq!(printed["rows"], serde_json::to_value(expected).unwrap());
}
