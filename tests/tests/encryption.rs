//! Client-side encryption on Azurite: both formats round trip through the real service, and
//! format "1.0" interoperates in both directions with the Python package
//! `azure-cosmosdb-table` 1.0.6 (`tests/python/encryption_interop.py`), with an `A256KW` and
//! an `RSA-OAEP` key.
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
    AesKeyWrap, EncryptionFormat, EncryptionPolicy, KeyEncryptionKey, RsaOaepKey,
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
