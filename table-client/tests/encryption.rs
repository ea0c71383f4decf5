//! Client-side encryption on the embedded engine: both formats round trip, rows written by the
//! Python package `azure-cosmosdb-table` 1.0.6 read back, tampering and misuse are typed errors.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use table_client::encryption::{
    AesKeyWrap, EncryptionFormat, EncryptionPolicy, KeyEncryptionKey, KeyFuture, KeyRing, RsaOaepKey,
};
use table_client::engine::Engine;
use table_client::typed::TableEntity;
use table_client::{
    Entity, ErrorKind, IfMatch, Operation, Result, TableClient, TableServiceClient, Transaction, Value,
};

/// A test-only RSA key (2048 bits, PKCS#8), and its public key.
const RSA_PEM: &str = include_str!("fixtures/encryption_rsa_key.pem");
const RSA_PUBLIC_PEM: &str = include_str!("fixtures/encryption_rsa_public.pem");

fn aes(id: &str, byte: u8) -> AesKeyWrap {
    AesKeyWrap::new(id, [byte; 32])
}

fn secret(_: &str, _: &str, name: &str) -> bool {
    name.starts_with("Secret")
}

/// A client with `policy` and a raw client over the same engine, both on table `crypt`.
async fn clients(policy: EncryptionPolicy) -> Result<(TableClient, TableClient)> {
    let engine = Engine::new();
    let raw = TableServiceClient::embedded(engine.clone()).create_table("crypt").await?;
    Ok((crypt_table(&engine, policy)?, raw))
}

/// Table `crypt` on `engine`, through a client with `policy`.
fn crypt_table(engine: &Engine, policy: EncryptionPolicy) -> Result<TableClient> {
    TableServiceClient::builder().engine(engine.clone()).encryption(policy).build().map(|s| s.table("crypt"))
}

fn policy(format: EncryptionFormat) -> EncryptionPolicy {
    EncryptionPolicy::new(aes("k1", 1)).encrypt_properties(secret).format(format)
}

fn sample() -> Entity {
    Entity::new("p", "r")
        .with("SecretEmpty", "")
        .with("SecretLong", "x".repeat(32 * 1024))
        .with("SecretEmoji", "🦀 crab 👩‍👩‍👧")
        .with("Plain", 42)
}

#[tokio::test]
async fn both_formats_round_trip_through_every_read_and_write() -> Result<()> {
    for format in [EncryptionFormat::Authenticated, EncryptionFormat::V1] {
        let (table, raw) = clients(policy(format)).await?;
        let etag = table.insert(sample()).await?;
        let stored = raw.get("p", "r").await?;
        assert!(matches!(stored.get("SecretEmoji"), Some(Value::Binary(_))), "{format:?}");
        assert_eq!(stored.get("Plain"), Some(&Value::Int32(42)));
        let read = table.get("p", "r").await?;
        assert_eq!(read.properties, sample().properties, "{format:?}");

        // Absent properties stay absent; replace, upsert, transaction and query all encrypt.
        table.replace(Entity::new("p", "r").with("SecretEmoji", "b"), IfMatch::ETag(etag)).await?;
        assert_eq!(
            table.get("p", "r").await?.properties,
            Entity::new("p", "r").with("SecretEmoji", "b").properties
        );
        table.insert_or_replace(Entity::new("p", "u").with("SecretA", "upsert")).await?;
        let batch: Transaction =
            [Operation::Insert(Entity::new("p", "b").with("SecretA", "batch"))].into_iter().collect();
        table.submit_transaction(batch).await?;
        assert!(matches!(raw.get("p", "b").await?.get("SecretA"), Some(Value::Binary(_))));
        let all = table.query().collect().await?;
        let texts: Vec<_> = all.iter().filter_map(|e| e.get("SecretA").or(e.get("SecretEmoji"))).collect();
        assert_eq!(texts, [&Value::from("batch"), &Value::from("b"), &Value::from("upsert")]);
        assert!(all.iter().all(|e| e.get("_ClientEncryptionMetadata1").is_none()));

        // A projection fetches the metadata it needs.
        let one = table.get_with_select("p", "u", Some(&["SecretA".to_owned()])).await?;
        assert_eq!(one.get("SecretA"), Some(&Value::from("upsert")));
    }
    Ok(())
}

/// `_encrypt_entity` of `azure-cosmosdb-table` 1.0.6 with an A256KW key of bytes 0..32
/// (content key 0x42 x 32 and entity IV 0x24 x 16 fixed in place of its random draws).
#[tokio::test]
async fn reads_a_row_the_python_package_encrypted_with_a256kw() -> Result<()> {
    let mut key = [0u8; 32];
    key.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    let policy = EncryptionPolicy::new(AesKeyWrap::new("local:kat", key)).encrypt_properties(secret);
    let (table, raw) = clients(policy).await?;
    let b64 = |s: &str| Value::Binary(STANDARD.decode(s).unwrap_or_default());
    raw.insert(
        Entity::new("pk", "rk")
            .with("Name", b64("AFgVPoHrrUIaxlsNs5EykA=="))
            .with("Age", 3)
            .with("_ClientEncryptionMetadata2", b64("QfaTaAbC8+XRKXCEAxz1rg=="))
            .with("_ClientEncryptionMetadata1", PYTHON_A256KW_METADATA),
    )
    .await?;
    let read = table.get("pk", "rk").await?;
    assert_eq!(read.properties, Entity::new("pk", "rk").with("Name", "héllo 🦀").with("Age", 3).properties);
    Ok(())
}

const PYTHON_A256KW_METADATA: &str = r#"{"WrappedContentKey": {"KeyId": "local:kat", "EncryptedKey": "Db4ooJNIiQZjXh9dg8m976HAEtBBbKXIZD7uTh8Uw7IIX8gxlJZxwA==", "Algorithm": "A256KW"}, "EncryptionAgent": {"Protocol": "1.0", "EncryptionAlgorithm": "AES_CBC_256"}, "ContentEncryptionIV": "JCQkJCQkJCQkJCQkJCQkJA==", "KeyWrappingMetadata": {"EncryptionLibrary": "Python 1.4.2"}}"#;

/// A row in the Java library's first variant of "1.0" (no `KeyWrappingMetadata`: PartitionKey
/// before RowKey in the IVs, a bracketed name list), built with the Python package's own IV
/// function in its Java mode, which also reads the list back as `[Name, Other]`.
#[tokio::test]
async fn reads_the_java_v1_variant_of_format_1_0() -> Result<()> {
    let mut key = [0u8; 32];
    key.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    let (table, raw) = clients(EncryptionPolicy::new(AesKeyWrap::new("local:java", key))).await?;
    let b64 = |s: &str| Value::Binary(STANDARD.decode(s).unwrap_or_default());
    raw.insert(
        Entity::new("pk", "rk")
            .with("Name", b64("Dv1iRF9x/wzDQquq0s0UJw=="))
            .with("_ClientEncryptionMetadata2", b64("xl8nd/X8SyLfsgXT8FkvUQ=="))
            .with("_ClientEncryptionMetadata1", JAVA_V1_METADATA),
    )
    .await?;
    assert_eq!(
        table.get("pk", "rk").await?.properties,
        Entity::new("pk", "rk").with("Name", "java v1 🦀").properties
    );
    Ok(())
}

const JAVA_V1_METADATA: &str = r#"{"WrappedContentKey": {"KeyId": "local:java", "EncryptedKey": "Db4ooJNIiQZjXh9dg8m976HAEtBBbKXIZD7uTh8Uw7IIX8gxlJZxwA==", "Algorithm": "A256KW"}, "EncryptionAgent": {"Protocol": "1.0", "EncryptionAlgorithm": "AES_CBC_256"}, "ContentEncryptionIV": "JCQkJCQkJCQkJCQkJCQkJA=="}"#;

/// The Python package's encryption with an RSA-OAEP (SHA-1) key, the fixture's.
#[tokio::test]
async fn reads_a_row_the_python_package_encrypted_with_rsa_oaep() -> Result<()> {
    let policy = EncryptionPolicy::new(RsaOaepKey::from_private_key_pem("local:rsa", RSA_PEM)?);
    let (table, raw) = clients(policy).await?;
    let b64 = |s: &str| Value::Binary(STANDARD.decode(s).unwrap_or_default());
    raw.insert(
        Entity::new("pk", "rk")
            .with("Name", b64("+Ewm1/yTRuHg4TnnB1IVMw=="))
            .with("Note", b64("p1Udto0hgRHUh+IDNOIFcg=="))
            .with("_ClientEncryptionMetadata2", b64("AOoxR87Z2t90MrNGc4OF4DBqMMbQdJNcsge7gCyJZ4I="))
            .with("_ClientEncryptionMetadata1", PYTHON_RSA_METADATA),
    )
    .await?;
    let read = table.get("pk", "rk").await?;
    assert_eq!(read.properties, Entity::new("pk", "rk").with("Name", "héllo 🦀").with("Note", "").properties);
    Ok(())
}

const PYTHON_RSA_METADATA: &str = r#"{"WrappedContentKey": {"KeyId": "local:rsa", "EncryptedKey": "GwL3pN7sz0YHaJIH+REmgo3IT/Wfl8yo8MbqdxmlaOzfXHxLoUr8LtLfZlWEmS3IXt8uhqxaYGL3v/q2jQfbWo4MRxSy0Gqu8MScTaoss5iim9UWyGqP2UEgzzDt0trilQ6h0QGG7cG5NFDutP3Ms6Mx+/xBAPD3ufD+dpXDlyoPFAlUaSOTBAyuMSFSOaJxVipeIUScOeV65bG7CDoPJEcKvoz4kvAM/fEoMneUwLAsF+Tz0DPP0V8xLbT8i9uHXgx2Ch1TbQE0JWckxfLoX2l7LOp4TsP/niWDA9pxMd+zmx68pGzeTsmbmmtcEqnSBeyvQBEhIpjlJHIEs2jt5A==", "Algorithm": "RSA-OAEP"}, "EncryptionAgent": {"Protocol": "1.0", "EncryptionAlgorithm": "AES_CBC_256"}, "ContentEncryptionIV": "rBGhbkAabwDQ9chpO91g3A==", "KeyWrappingMetadata": {"EncryptionLibrary": "Python 1.4.2"}}"#;

#[tokio::test]
async fn rsa_oaep_round_trips_and_a_public_key_only_writes() -> Result<()> {
    let private = RsaOaepKey::from_private_key_pem("rsa", RSA_PEM)?;
    let (table, raw) = clients(EncryptionPolicy::new(private).encrypt_properties(secret)).await?;
    table.insert(Entity::new("p", "r").with("SecretA", "rsa")).await?;
    assert_eq!(table.get("p", "r").await?.get("SecretA"), Some(&Value::from("rsa")));
    let e = RsaOaepKey::from_private_key_pem("rsa", "not a key").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);

    // A writer holding only the public key writes rows it cannot read back.
    let public = RsaOaepKey::from_public_key_pem("rsa", RSA_PUBLIC_PEM)?;
    let (writer, _) = clients(EncryptionPolicy::new(public).encrypt_properties(secret)).await?;
    writer.insert(Entity::new("p", "w").with("SecretA", "one way")).await?;
    let e = writer.get("p", "w").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    let _ = raw;
    Ok(())
}

/// Every bit of a value and of the name list, and the wrapped key: each change is a Crypto error.
#[tokio::test]
async fn the_authenticated_format_detects_every_flipped_bit() -> Result<()> {
    let (table, raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    table.insert(Entity::new("p", "r").with("SecretA", "abc")).await?;
    let stored = raw.get("p", "r").await?;
    for name in ["SecretA", "_ClientEncryptionMetadata2"] {
        let Some(Value::Binary(bytes)) = stored.get(name).cloned() else { panic!("{name} is not binary") };
        for bit in 0..bytes.len() * 8 {
            let mut changed = bytes.clone();
            changed[bit / 8] ^= 1 << (bit % 8);
            raw.insert_or_replace(stored.clone().with(name, changed)).await?;
            let e = table.get("p", "r").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Crypto, "{name} bit {bit}: {e}");
        }
    }
    let Some(Value::String(metadata)) = stored.get("_ClientEncryptionMetadata1").cloned() else { panic!() };
    for bit in 0..metadata.len() * 8 {
        let mut bytes = metadata.clone().into_bytes();
        bytes[bit / 8] ^= 1 << (bit % 8);
        let Ok(changed) = String::from_utf8(bytes) else { continue };
        raw.insert_or_replace(stored.clone().with("_ClientEncryptionMetadata1", changed)).await?;
        let e = table.get("p", "r").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Crypto, "metadata bit {bit}: {e}");
    }
    Ok(())
}

#[tokio::test]
async fn swapped_values_and_rows_fail_authentication() -> Result<()> {
    let (table, raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    table.insert(Entity::new("p", "r1").with("SecretA", "a1").with("SecretB", "b1")).await?;
    table.insert(Entity::new("p", "r2").with("SecretA", "a2").with("SecretB", "b2")).await?;
    let one = raw.get("p", "r1").await?;
    let two = raw.get("p", "r2").await?;
    let (a, b) = (one.get("SecretA").cloned(), one.get("SecretB").cloned());
    raw.insert_or_replace(
        one.clone()
            .with("SecretA", b.clone().unwrap_or(Value::Int32(0)))
            .with("SecretB", a.unwrap_or(Value::Int32(0))),
    )
    .await?;
    assert_eq!(table.get("p", "r1").await.unwrap_err().kind(), ErrorKind::Crypto);
    // Row r2's whole payload under r1's keys.
    let mut moved = two.clone();
    moved.row_key = "r1".into();
    raw.insert_or_replace(moved).await?;
    let e = table.get("p", "r1").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto, "{e}");
    assert!(e.to_string().contains("authentication"), "{e}");
    Ok(())
}

#[tokio::test]
async fn v1_failures_are_typed_errors() -> Result<()> {
    let (table, raw) = clients(policy(EncryptionFormat::V1)).await?;
    table.insert(Entity::new("p", "r").with("SecretA", "sixteen bytes!!!")).await?;
    let stored = raw.get("p", "r").await?;

    // (A wrong key: `wrong_and_unknown_keys_fail_and_a_key_ring_reads_rotated_rows`.)
    let Some(Value::Binary(bytes)) = stored.get("SecretA").cloned() else { panic!() };
    // Bad padding: the last block changed.
    let mut changed = bytes.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0x80;
    raw.insert_or_replace(stored.clone().with("SecretA", changed)).await?;
    assert_eq!(table.get("p", "r").await.unwrap_err().kind(), ErrorKind::Crypto);
    // Truncated to no whole block.
    raw.insert_or_replace(stored.clone().with("SecretA", bytes[..5].to_vec())).await?;
    assert_eq!(table.get("p", "r").await.unwrap_err().kind(), ErrorKind::Crypto);
    // Missing half of the metadata.
    let mut half = stored.clone();
    half.properties.remove("_ClientEncryptionMetadata2");
    raw.insert_or_replace(half).await?;
    let e = table.get("p", "r").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    assert!(e.to_string().contains("_ClientEncryptionMetadata2 is missing"), "{e}");
    Ok(())
}

#[tokio::test]
async fn wrong_and_unknown_keys_fail_and_a_key_ring_reads_rotated_rows() -> Result<()> {
    let engine = Engine::new();
    let with = |policy: EncryptionPolicy| crypt_table(&engine, policy);
    TableServiceClient::embedded(engine.clone()).create_table("crypt").await?;
    for format in [EncryptionFormat::Authenticated, EncryptionFormat::V1] {
        let old = with(EncryptionPolicy::new(aes("old", 1)).encrypt_properties(secret).format(format))?;
        old.insert_or_replace(Entity::new("p", "r").with("SecretA", "x")).await?;

        let wrong = with(EncryptionPolicy::new(aes("old", 9)))?.get("p", "r").await.unwrap_err();
        assert_eq!(wrong.kind(), ErrorKind::Crypto);
        assert!(wrong.to_string().contains("could not unwrap"), "{wrong}");

        let unknown = with(EncryptionPolicy::new(aes("new", 2)))?.get("p", "r").await.unwrap_err();
        assert_eq!(unknown.kind(), ErrorKind::Crypto);
        assert!(unknown.to_string().contains("`old`"), "{unknown}");

        let rotated =
            with(EncryptionPolicy::new(aes("new", 2)).key_resolver(KeyRing::new().with(aes("old", 1))))?;
        assert_eq!(rotated.get("p", "r").await?.get("SecretA"), Some(&Value::from("x")));
        let read_only =
            with(EncryptionPolicy::read_only(KeyRing::new().with(aes("old", 1))).encrypt_properties(secret))?;
        assert_eq!(read_only.get("p", "r").await?.get("SecretA"), Some(&Value::from("x")));
        let e = read_only.insert(Entity::new("p", "w").with("SecretA", "y")).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Crypto);
    }
    Ok(())
}

#[tokio::test]
async fn require_encryption_refuses_rows_in_clear() -> Result<()> {
    let (table, raw) = clients(policy(EncryptionFormat::Authenticated).require_encryption(true)).await?;
    raw.insert(Entity::new("p", "plain").with("SecretA", "in clear")).await?;
    raw.insert(Entity::new("p", "other").with("Public", "fine")).await?;
    let e = table.get("p", "plain").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    assert!(e.to_string().contains("`SecretA`"), "{e}");
    assert_eq!(table.get("p", "other").await?.get("Public"), Some(&Value::from("fine")));
    // An encrypted row with a property later written in clear beside it.
    table.insert(Entity::new("p", "mixed").with("SecretA", "sealed")).await?;
    raw.merge(Entity::new("p", "mixed").with("SecretB", "in clear"), IfMatch::Any).await?;
    assert_eq!(table.get("p", "mixed").await.unwrap_err().kind(), ErrorKind::Crypto);
    assert!(table.query().collect().await.is_err());
    Ok(())
}

#[tokio::test]
async fn merges_of_encrypted_properties_are_refused() -> Result<()> {
    let (table, raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    table.insert(Entity::new("p", "r").with("SecretA", "a")).await?;
    let e = table.merge(Entity::new("p", "r").with("SecretA", "b"), IfMatch::Any).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("replace it with its ETag"), "{e}");
    let e = table.insert_or_merge(Entity::new("p", "r").with("SecretB", "b")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let batch: Transaction = [
        Operation::Insert(Entity::new("p", "x").with("SecretA", "ok")),
        Operation::Merge { entity: Entity::new("p", "r").with("SecretA", "b"), if_match: IfMatch::Any },
    ]
    .into_iter()
    .collect();
    let e = table.submit_transaction(batch).await.unwrap_err();
    assert_eq!((e.kind(), e.batch_index()), (ErrorKind::InvalidInput, Some(1)));
    assert!(raw.get_if_exists("p", "x").await?.is_none());
    // Merging only properties in clear is fine.
    table.merge(Entity::new("p", "r").with("Public", 1), IfMatch::Any).await?;
    assert_eq!(table.get("p", "r").await?.get("SecretA"), Some(&Value::from("a")));
    Ok(())
}

#[tokio::test]
async fn a_ciphertext_over_the_binary_limit_is_too_large() -> Result<()> {
    let (table, _raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    // 32 768 characters of two UTF-8 bytes each: a legal string, a ciphertext over 64 KiB.
    let e = table.insert(Entity::new("p", "r").with("SecretA", "é".repeat(32 * 1024))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TooLarge, "{e}");
    assert!(e.to_string().contains("SecretA"), "{e}");
    Ok(())
}

#[tokio::test]
async fn only_strings_are_encrypted_and_metadata_names_are_reserved() -> Result<()> {
    let (table, _raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    let e = table.insert(Entity::new("p", "r").with("SecretN", 5)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("only strings"), "{e}");
    let e = table
        .insert(Entity::new("p", "r").with("SecretA", "a").with("_ClientEncryptionMetadata1", "x"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    Ok(())
}

#[tokio::test]
async fn format_1_0_marks_every_row_as_the_older_libraries_do() -> Result<()> {
    for (format, marked) in [(EncryptionFormat::V1, true), (EncryptionFormat::Authenticated, false)] {
        let (table, raw) = clients(policy(format)).await?;
        table.insert(Entity::new("p", "r").with("Public", "nothing secret")).await?;
        let stored = raw.get("p", "r").await?;
        assert_eq!(stored.get("_ClientEncryptionMetadata1").is_some(), marked, "{format:?}");
        assert_eq!(
            table.get("p", "r").await?.properties,
            Entity::new("p", "r").with("Public", "nothing secret").properties
        );
    }
    Ok(())
}

#[tokio::test]
async fn require_encryption_without_a_resolver_refuses_only_rows_without_metadata() -> Result<()> {
    let engine = Engine::new();
    let with = |policy: EncryptionPolicy| crypt_table(&engine, policy);
    let raw = TableServiceClient::embedded(engine.clone()).create_table("crypt").await?;
    // Format 1.0 marks a row with nothing to encrypt; a plain row has no metadata.
    with(EncryptionPolicy::new(aes("k1", 1)).format(EncryptionFormat::V1))?
        .insert(Entity::new("p", "marked").with("Public", "x"))
        .await?;
    raw.insert(Entity::new("p", "plain").with("Public", "y")).await?;
    let reader = with(EncryptionPolicy::new(aes("k1", 1)).require_encryption(true))?;
    assert_eq!(reader.get("p", "marked").await?.get("Public"), Some(&Value::from("x")));
    let e = reader.get("p", "plain").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    assert!(e.to_string().contains("the row is stored in clear"), "{e}");
    Ok(())
}

/// A typed entity converts to and from an entity, so the policy's resolver encrypts it too
/// (without any `#[table(encrypt)]` field).
#[derive(Debug, Clone, PartialEq, table_client::TableEntity)]
#[table(partition_key = "{team}", row_key = "{id}", rename_all = "PascalCase")]
struct Person {
    #[table(key_only)]
    team: String,
    #[table(key_only)]
    id: String,
    secret_notes: String,
    age: i32,
}

#[tokio::test]
async fn typed_entities_are_encrypted_through_the_resolver() -> Result<()> {
    let (table, raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    let ann = Person { team: "t".into(), id: "ann".into(), secret_notes: "🦀 private".into(), age: 34 };
    let people = table.typed::<Person>();
    people.insert(&ann).await?;
    assert!(matches!(raw.get("t", "ann").await?.get("SecretNotes"), Some(Value::Binary(_))));
    assert_eq!(people.get(&table_client::EntityKey::new("t", "ann")).await?, ann);
    Ok(())
}

/// A type whose `#[table(encrypt)]` fields are encrypted without any resolver.
#[derive(Debug, Clone, PartialEq, table_client::TableEntity)]
#[table(partition_key = "{team}", row_key = "{id}", rename_all = "PascalCase")]
struct Note {
    #[table(key_only)]
    team: String,
    #[table(key_only)]
    id: String,
    #[table(encrypt)]
    body: String,
    #[table(encrypt)]
    extra: Option<String>,
    #[table(json, encrypt)]
    tags: Vec<String>,
    views: i32,
}

fn notes() -> Vec<Note> {
    let note = |id: &str, body: String, extra: Option<&str>| Note {
        team: "t".into(),
        id: id.into(),
        body,
        extra: extra.map(String::from),
        tags: vec!["a".into(), "🦀".into()],
        views: 7,
    };
    vec![
        note("empty", String::new(), None),
        note("emoji", "🦀 crab 👩‍👩‍👧".into(), Some("")),
        note("long", "x".repeat(32 * 1024), Some("some")),
    ]
}

#[tokio::test]
async fn encrypt_fields_round_trip_and_are_stored_as_binary() -> Result<()> {
    for format in [EncryptionFormat::Authenticated, EncryptionFormat::V1] {
        let (table, raw) = clients(EncryptionPolicy::new(aes("k1", 1)).format(format)).await?;
        let typed = table.typed::<Note>();
        for note in notes() {
            typed.insert(&note).await?;
            let stored = raw.get("t", &note.id).await?;
            for property in ["Body", "Tags"] {
                assert!(matches!(stored.get(property), Some(Value::Binary(_))), "{property} {format:?}");
            }
            match note.extra {
                None => assert_eq!(stored.get("Extra"), None),
                Some(_) => assert!(matches!(stored.get("Extra"), Some(Value::Binary(_)))),
            }
            assert_eq!(stored.get("Views"), Some(&Value::Int32(7)));
            assert_eq!(typed.get(&note.entity_key()?).await?, note);
        }
        let mut read: Vec<Note> = typed.query().partition("t").collect().await?;
        read.sort_by(|a, b| a.id.cmp(&b.id));
        let mut want = notes();
        want.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(read, want, "{format:?}");
    }
    Ok(())
}

#[tokio::test]
async fn require_encryption_refuses_a_typed_row_with_an_encrypt_field_in_clear() -> Result<()> {
    // The policy has a resolver that names nothing, so only the type's list makes the row wrong.
    let policy =
        EncryptionPolicy::new(aes("k1", 1)).encrypt_properties(|_, _, _| false).require_encryption(true);
    let (table, raw) = clients(policy).await?;
    raw.insert(Entity::new("t", "plain").with("Body", "in clear").with("Tags", "[]").with("Views", 1))
        .await?;
    let typed = table.typed::<Note>();
    let e = typed.get(&table_client::EntityKey::new("t", "plain")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    assert!(e.to_string().contains("property `Body` is stored in clear"), "{e}");
    let e = typed.query().partition("t").collect().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    // The untyped client has no such list: the same row reads as stored.
    assert_eq!(table.get("t", "plain").await?.get("Body"), Some(&Value::from("in clear")));
    Ok(())
}

#[tokio::test]
async fn merges_of_a_type_with_encrypt_fields_are_refused_before_any_request() -> Result<()> {
    let engine = Engine::new();
    let service = TableServiceClient::builder()
        .engine(engine.clone())
        .encryption(EncryptionPolicy::new(aes("k1", 1)))
        .build()?;
    let typed = service.create_table("crypt").await?.typed::<Note>();
    let note = notes().remove(1);
    let before = engine.faults().calls();
    for e in
        [typed.merge(&note, IfMatch::Any).await.unwrap_err(), typed.insert_or_merge(&note).await.unwrap_err()]
    {
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        let message = e.to_string();
        assert!(message.contains("`Body`, `Extra`, `Tags` are encrypted"), "{message}");
        assert!(message.contains("replace it with its ETag"), "{message}");
    }
    assert_eq!(engine.faults().calls(), before, "no request was sent");
    Ok(())
}

#[tokio::test]
async fn encrypt_fields_are_never_written_in_clear() -> Result<()> {
    let engine = Engine::new();
    let plain = TableServiceClient::embedded(engine.clone()).create_table("crypt").await?;
    let note = notes().remove(1);
    // No policy: refused, not written in clear.
    let e = plain.typed::<Note>().insert(&note).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    assert!(e.to_string().contains("property `Body` is to be encrypted"), "{e}");
    // Nor through a typed transaction, or one on the untyped client.
    let e = plain.typed::<Note>().transaction().insert(&note).submit().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto, "{e}");
    let e = plain.typed_transaction().insert(&note).submit().await.unwrap_err();
    assert_eq!((e.kind(), e.batch_index()), (ErrorKind::Crypto, Some(0)), "{e}");
    assert_eq!(plain.get_if_exists("t", &note.id).await?, None);
    Ok(())
}

/// A type with an encrypted field and a lookup, whose index rows hold only keys.
#[derive(Debug, Clone, PartialEq, table_client::TableEntity)]
#[table(partition_key = "{team}", row_key = "{id}", rename_all = "PascalCase")]
#[table(lookup(name = "by_name", row_key = "name_{name}"))]
struct Member {
    #[table(key_only)]
    team: String,
    #[table(key_only)]
    id: String,
    name: String,
    #[table(encrypt)]
    ssn: String,
}

#[tokio::test]
async fn a_lookup_on_a_type_with_encrypt_fields_reads_decrypted_rows() -> Result<()> {
    use futures::TryStreamExt as _;
    let (table, raw) = clients(EncryptionPolicy::new(aes("k1", 1))).await?;
    let members = table.typed::<Member>();
    let ann = Member { team: "t".into(), id: "1".into(), name: "Ann".into(), ssn: "123".into() };
    members.insert(&ann).await?;
    assert!(matches!(raw.get("t", "1").await?.get("Ssn"), Some(Value::Binary(_))));
    let rows: Vec<Entity> = raw.query().collect().await?;
    assert_eq!(rows.len(), 2, "the row and its lookup entity");
    assert!(rows.iter().all(|row| !matches!(row.get("Ssn"), Some(Value::String(_)))), "{rows:?}");
    let key = Member::BY_NAME.key("t", "Ann")?;
    let found: Vec<Member> = members.lookup(Member::BY_NAME, &key, 2).try_collect().await?;
    assert_eq!(found, vec![ann]);
    Ok(())
}

/// A type with encrypted fields and a whole-entity index copy in its own partition.
#[derive(Debug, Clone, PartialEq, table_client::TableEntity)]
#[table(partition_key = "{team}", row_key = "{id}", rename_all = "PascalCase")]
#[table(index(name = "by_email", row_key = "email_{email}"))]
#[table(lookup(name = "by_name", row_key = "name_{name}"))]
struct Staff {
    #[table(key_only)]
    team: String,
    #[table(key_only)]
    id: String,
    name: String,
    email: String,
    #[table(encrypt)]
    ssn: String,
    #[table(encrypt)]
    notes: Option<String>,
}

/// The same fields, with the index copy in another partition (kept through the outbox).
#[derive(Debug, Clone, PartialEq, table_client::TableEntity)]
#[table(partition_key = "{team}", row_key = "{id}", rename_all = "PascalCase")]
#[table(index(name = "by_email", partition_key = "email", row_key = "{email}"))]
struct GlobalStaff {
    #[table(key_only)]
    team: String,
    #[table(key_only)]
    id: String,
    email: String,
    #[table(encrypt)]
    ssn: String,
}

fn staff(id: &str, email: &str) -> Staff {
    Staff {
        team: "t".into(),
        id: id.into(),
        name: format!("Name {id}"),
        email: email.into(),
        ssn: format!("ssn of {id} 🦀"),
        notes: Some("x".repeat(32 * 1024)),
    }
}

/// Asserts that the row at `pk`/`rk`, read raw, holds `properties` as ciphertext with metadata.
async fn assert_sealed(raw: &TableClient, pk: &str, rk: &str, properties: &[&str]) -> Result<Entity> {
    let row = raw.get(pk, rk).await?;
    for property in properties {
        assert!(matches!(row.get(property), Some(Value::Binary(_))), "{property} of {pk}/{rk}: {row:?}");
    }
    assert!(row.get("_ClientEncryptionMetadata1").is_some(), "{pk}/{rk}");
    Ok(row)
}

/// Stores `from`'s ciphertext and metadata in the row at `to` (a copy of `from` under `to`'s
/// keys, as a storage-level attacker would).
async fn transplant(raw: &TableClient, from: &Entity, to: (&str, &str)) -> Result<()> {
    let mut moved = from.clone();
    (moved.partition_key, moved.row_key) = (to.0.to_owned(), to.1.to_owned());
    raw.insert_or_replace(moved).await.map(drop)
}

#[tokio::test]
async fn index_copies_are_encrypted_for_their_own_keys_and_read_decrypted() -> Result<()> {
    for format in [EncryptionFormat::Authenticated, EncryptionFormat::V1] {
        let (table, raw) = clients(EncryptionPolicy::new(aes("k1", 1)).format(format)).await?;
        let typed = table.typed::<Staff>();
        let ann = staff("1", "ann@x");
        typed.insert(&ann).await?;
        let primary = assert_sealed(&raw, "t", "1", &["Ssn", "Notes"]).await?;
        let copy = assert_sealed(&raw, "t", "email_ann@x", &["Ssn", "Notes"]).await?;
        // Its own content key: not the primary's ciphertext.
        assert_ne!(copy.get("Ssn"), primary.get("Ssn"), "{format:?}");
        let key = Staff::BY_EMAIL.key("t", "ann@x")?;
        assert_eq!(typed.get_by_index::<Staff, _>(Staff::BY_EMAIL, &key).await?, ann, "{format:?}");
        let listed: Vec<Staff> = typed.query_index(Staff::BY_EMAIL).partition("t").collect().await?;
        assert_eq!(listed, vec![ann.clone()]);
        assert!(typed.verify_indexes().await?.is_consistent());

        // A new email moves the copy; the new copy is encrypted too.
        let moved = Staff { email: "ann@y".into(), ..ann.clone() };
        typed.replace(&moved, IfMatch::Any).await?;
        assert_eq!(raw.get_if_exists("t", "email_ann@x").await?, None);
        assert_sealed(&raw, "t", "email_ann@y", &["Ssn", "Notes"]).await?;
        assert!(typed.verify_indexes().await?.is_consistent());
    }
    Ok(())
}

#[tokio::test]
async fn a_copy_holding_another_rows_ciphertext_fails_authentication() -> Result<()> {
    let (table, raw) = clients(EncryptionPolicy::new(aes("k1", 1))).await?;
    let typed = table.typed::<Staff>();
    typed.insert(&staff("1", "ann@x")).await?;
    let primary = raw.get("t", "1").await?;
    let mut forged = primary.clone();
    forged.properties.extend(
        raw.get("t", "email_ann@x")
            .await?
            .properties
            .into_iter()
            .filter(|(name, _)| name.starts_with('_') && !name.starts_with("_Client")),
    );
    transplant(&raw, &forged, ("t", "email_ann@x")).await?;
    let key = Staff::BY_EMAIL.key("t", "ann@x")?;
    let e = typed.get_by_index::<Staff, _>(Staff::BY_EMAIL, &key).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto, "{e}");
    assert!(e.to_string().contains("authentication"), "{e}");
    Ok(())
}

#[tokio::test]
async fn cross_partition_copies_are_encrypted_for_their_own_keys() -> Result<()> {
    let (table, raw) = clients(EncryptionPolicy::new(aes("k1", 1))).await?;
    let typed = table.typed::<GlobalStaff>();
    let ann = GlobalStaff { team: "t".into(), id: "1".into(), email: "ann@x".into(), ssn: "123".into() };
    typed.insert(&ann).await?;
    let primary = assert_sealed(&raw, "t", "1", &["Ssn"]).await?;
    let copy = assert_sealed(&raw, "email", "ann@x", &["Ssn"]).await?;
    assert_ne!(copy.get("Ssn"), primary.get("Ssn"));
    let key = GlobalStaff::BY_EMAIL.key("ann@x")?;
    assert_eq!(typed.get_by_index::<GlobalStaff, _>(GlobalStaff::BY_EMAIL, &key).await?, ann);
    let listed: Vec<GlobalStaff> =
        typed.query_index(GlobalStaff::BY_EMAIL).partition("email").collect().await?;
    assert_eq!(listed, vec![ann.clone()]);
    assert!(typed.verify_indexes().await?.is_consistent());
    // The primary's ciphertext under the copy's keys fails.
    let mut forged = primary.clone();
    forged.properties.extend(
        copy.properties.into_iter().filter(|(name, _)| name.starts_with("_Primary") || name == "_Index"),
    );
    transplant(&raw, &forged, ("email", "ann@x")).await?;
    let e = typed.get_by_index::<GlobalStaff, _>(GlobalStaff::BY_EMAIL, &key).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto, "{e}");
    Ok(())
}

#[tokio::test]
async fn typed_transactions_encrypt_each_row_and_index_copy_for_its_own_keys() -> Result<()> {
    let engine = Engine::new();
    let raw = TableServiceClient::embedded(engine.clone()).create_table("crypt").await?;
    let service = TableServiceClient::builder()
        .engine(engine.clone())
        .encryption(EncryptionPolicy::new(aes("k1", 1)))
        .build()?;
    let table = service.table("crypt");
    let (typed, notes_table) = (table.typed::<Staff>(), table.typed::<Note>());
    let (ann, bob, note) = (staff("1", "ann@x"), staff("2", "bob@x"), notes().remove(1));
    // Two indexed values and a value of another encrypting type, from the untyped client.
    table.typed_transaction().insert(&ann).insert(&bob).insert(&note).submit().await?;
    for id in ["1", "2"] {
        assert_sealed(&raw, "t", id, &["Ssn", "Notes"]).await?;
    }
    assert_sealed(&raw, "t", "email_ann@x", &["Ssn", "Notes"]).await?;
    assert_sealed(&raw, "t", "email_bob@x", &["Ssn", "Notes"]).await?;
    assert_sealed(&raw, "t", &note.id, &["Body", "Tags"]).await?;
    assert_eq!(typed.get(&ann.entity_key()?).await?, ann);
    assert_eq!(notes_table.get(&note.entity_key()?).await?, note);
    let key = Staff::BY_EMAIL.key("t", "bob@x")?;
    assert_eq!(typed.get_by_index::<Staff, _>(Staff::BY_EMAIL, &key).await?, bob);
    assert!(typed.verify_indexes().await?.is_consistent());

    // A replace that moves a copy, and a delete, in one transaction.
    let moved = Staff { email: "ann@y".into(), ..ann.clone() };
    typed
        .transaction()
        .replace(&moved, IfMatch::Any)
        .delete::<Staff>(&bob.entity_key()?, IfMatch::Any)
        .submit()
        .await?;
    assert_sealed(&raw, "t", "email_ann@y", &["Ssn", "Notes"]).await?;
    assert_eq!(raw.get_if_exists("t", "email_ann@x").await?, None);
    assert_eq!(raw.get_if_exists("t", "email_bob@x").await?, None);
    assert!(typed.verify_indexes().await?.is_consistent());

    // Merges stay refused, before any request, with the reason.
    let before = engine.faults().calls();
    let e = typed
        .transaction()
        .insert(&staff("3", "c@x"))
        .merge(&moved, IfMatch::Any)
        .submit()
        .await
        .unwrap_err();
    assert_eq!((e.kind(), e.batch_index()), (ErrorKind::InvalidInput, Some(1)), "{e}");
    assert!(e.to_string().contains("replace it with its ETag"), "{e}");
    assert_eq!(engine.faults().calls(), before, "no request was sent");
    Ok(())
}

#[tokio::test]
async fn a_move_encrypts_again_for_the_target_what_was_stored_encrypted() -> Result<()> {
    for format in [EncryptionFormat::Authenticated, EncryptionFormat::V1] {
        let engine = Engine::new();
        let plain = TableServiceClient::embedded(engine.clone());
        let (raw, raw_archive) = (plain.create_table("crypt").await?, plain.create_table("archive").await?);
        // The writer encrypts a typed field and a property its resolver names.
        let writer =
            TableServiceClient::builder().engine(engine.clone()).encryption(policy(format)).build()?;
        let note = notes().remove(1);
        writer.table("crypt").typed::<Note>().insert(&note).await?;
        writer
            .table("crypt")
            .insert(Entity::new("t", "untyped").with("SecretA", "a").with("Plain", 1))
            .await?;
        let before = raw.get("t", &note.id).await?;
        // The mover knows neither the type nor the resolver: it still encrypts them again.
        let mover = TableServiceClient::builder()
            .engine(engine)
            .encryption(EncryptionPolicy::new(aes("k1", 1)).format(format))
            .build()?;
        let (source, target) = (mover.table("crypt"), mover.table("archive"));
        assert!(source.move_entity(&target, "t", &note.id).await?);
        assert!(source.move_entity(&target, "t", "untyped").await?);
        let moved = assert_sealed(&raw_archive, "t", &note.id, &["Body", "Extra", "Tags"]).await?;
        assert_ne!(moved.get("Body"), before.get("Body"), "{format:?}: a fresh content key");
        assert_sealed(&raw_archive, "t", "untyped", &["SecretA"]).await?;
        assert_eq!(raw_archive.get("t", "untyped").await?.get("Plain"), Some(&Value::Int32(1)));
        assert_eq!(writer.table("archive").typed::<Note>().get(&note.entity_key()?).await?, note);
        assert_eq!(target.get("t", "untyped").await?.get("SecretA"), Some(&Value::from("a")));
        assert_eq!(raw.get_if_exists("t", &note.id).await?, None);
        if format == EncryptionFormat::Authenticated {
            // Bound to its new row: the same ciphertext under other keys fails.
            transplant(&raw_archive, &moved, ("t", "elsewhere")).await?;
            let e = target.get("t", "elsewhere").await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Crypto, "{e}");
        }
    }
    Ok(())
}

#[tokio::test]
async fn wide_entities_encrypt_each_part_for_its_keys_and_keep_stored_encryption() -> Result<()> {
    use table_client::patterns::WideTable;
    let engine = Engine::new();
    let raw = TableServiceClient::embedded(engine.clone()).create_table("crypt").await?;
    let writer = TableServiceClient::builder()
        .engine(engine.clone())
        .encryption(policy(EncryptionFormat::Authenticated))
        .build()?;
    let wide = WideTable::new(writer.table("crypt"));
    let entity =
        (0..400).fold(Entity::new("p", "w"), |e, i| e.with(format!("Secret{i:03}"), format!("v{i}")));
    let parts = wide.write(&entity).await?;
    assert_eq!(parts, 2);
    for part in 0..parts {
        let row = assert_sealed(&raw, "p", &WideTable::part_row_key("w", part), &[]).await?;
        assert!(row.properties.values().filter(|v| matches!(v, Value::Binary(_))).count() > 100);
        assert!(row.properties.values().all(|v| !matches!(v, Value::String(s) if s.starts_with('v'))));
    }
    assert_eq!(wide.read("p", "w").await?.properties, entity.properties);

    // A client whose resolver names nothing reads it, changes it, and writes it back: what was
    // stored encrypted stays encrypted.
    let reader = WideTable::new(
        TableServiceClient::builder()
            .engine(engine)
            .encryption(EncryptionPolicy::new(aes("k1", 1)))
            .build()?
            .table("crypt"),
    );
    let mut changed = reader.read("p", "w").await?;
    changed.insert("Secret000", "changed");
    changed.insert("Plain", "in clear");
    reader.write(&changed).await?;
    let first = raw.get("p", &WideTable::part_row_key("w", 0)).await?;
    assert!(matches!(first.get("Secret000"), Some(Value::Binary(_))), "{first:?}");
    assert_eq!(first.get("Plain"), Some(&Value::from("in clear")));
    assert_eq!(wide.read("p", "w").await?.properties, changed.properties);
    Ok(())
}

#[tokio::test]
async fn large_string_parts_named_by_the_resolver_are_encrypted() -> Result<()> {
    use table_client::patterns::LargeProperty;
    let cv = LargeProperty::new("Cv")?;
    let named = cv.clone();
    let (table, raw) =
        clients(EncryptionPolicy::new(aes("k1", 1)).encrypt_properties(move |_, _, name| named.holds(name)))
            .await?;
    let text = "experience 🦀 ".repeat(10_000);
    let mut ann = Entity::new("p", "ann");
    let parts = cv.store(&mut ann, text.clone())?;
    assert!(parts > 1);
    table.insert(ann).await?;
    let names: Vec<String> = (0..parts).map(|i| cv.part_name(i)).collect();
    assert_sealed(&raw, "p", "ann", &names.iter().map(String::as_str).collect::<Vec<_>>()).await?;
    assert_eq!(cv.load(&table.get("p", "ann").await?)?, Some(Value::from(text)));
    Ok(())
}

#[tokio::test]
async fn index_entities_work_under_require_encryption() -> Result<()> {
    use futures::TryStreamExt as _;
    let (table, raw) = clients(EncryptionPolicy::new(aes("k1", 1)).require_encryption(true)).await?;
    let typed = table.typed::<Staff>();
    let (ann, bob) = (staff("1", "ann@x"), Staff { name: "Name 1".into(), ..staff("2", "bob@x") });
    typed.insert(&ann).await?;
    // Bob joins Ann's index entity, which holds only keys, in clear.
    typed.transaction().insert(&bob).submit().await?;
    assert!(raw.get("t", "name_Name 1").await?.get("_ClientEncryptionMetadata1").is_none());
    let key = Staff::BY_NAME.key("t", "Name 1")?;
    let found: Vec<Staff> = typed.lookup(Staff::BY_NAME, &key, 2).try_collect().await?;
    assert_eq!(found, vec![ann.clone(), bob]);
    assert!(typed.verify_indexes().await?.is_consistent());
    Ok(())
}

#[tokio::test]
async fn cross_partition_copies_and_drained_moves_work_under_require_encryption() -> Result<()> {
    use std::num::NonZeroU64;
    use table_client::engine::FaultSpec;
    let engine = Engine::new();
    let raw = TableServiceClient::embedded(engine.clone());
    let (crypt, archive) = (raw.create_table("crypt").await?, raw.create_table("archive").await?);
    let service = TableServiceClient::builder()
        .engine(engine.clone())
        .encryption(EncryptionPolicy::new(aes("k1", 1)).require_encryption(true))
        .build()?;
    let global = service.table("crypt").typed::<GlobalStaff>();
    let ann = GlobalStaff { team: "t".into(), id: "1".into(), email: "ann@x".into(), ssn: "123".into() };
    global.insert(&ann).await?;
    // A new email: the old copy is found (and removed) through its markers.
    let moved = GlobalStaff { email: "ann@y".into(), ..ann };
    global.replace(&moved, IfMatch::Any).await?;
    assert_eq!(crypt.get_if_exists("email", "ann@x").await?, None);
    assert!(global.verify_indexes().await?.is_consistent());

    // A move that fails after recording its intent (the outbox row, in clear), drained later.
    let (source, target) = (service.table("crypt"), service.table("archive"));
    engine.faults().fail_call(
        NonZeroU64::new(2).unwrap_or(NonZeroU64::MIN),
        FaultSpec::service(table_client::ErrorCode::AuthorizationFailure),
    );
    assert!(source.move_entity(&target, "t", "1").await.is_err());
    assert_eq!(source.drain_moves().await?, 1);
    assert_eq!(target.typed::<GlobalStaff>().get(&moved.entity_key()?).await?, moved);
    assert!(matches!(archive.get("t", "1").await?.get("Ssn"), Some(Value::Binary(_))));
    Ok(())
}

// Filters, `$select` and projections of `#[table(encrypt)]` fields, and `TypedTable::update`
// (the read-change-replace that stands in for a refused merge).

use table_client::typed::KeyRange;
use table_client::{Filter, KeyName, RetryPolicy, Violation};

/// `Note` with only its encrypted body: a typed projection.
#[derive(Debug, Clone, PartialEq, table_client::TableEntity)]
#[table(partition_key = "{team}", row_key = "{id}", rename_all = "PascalCase")]
struct NoteBody {
    #[table(key_only)]
    team: String,
    #[table(key_only)]
    id: String,
    #[table(encrypt)]
    body: String,
}

/// An engine, a client on it with an encrypting policy and table `crypt` holding `notes()`.
async fn engine_with_notes() -> Result<(Engine, TableClient)> {
    let engine = Engine::new();
    let service = TableServiceClient::builder()
        .engine(engine.clone())
        .encryption(EncryptionPolicy::new(aes("k1", 1)))
        .build()?;
    let table = service.create_table("crypt").await?;
    for note in notes() {
        table.typed::<Note>().insert(&note).await?;
    }
    Ok((engine, table))
}

/// The property named by a refused filter or select, and whether it was the select.
fn refused_property(e: &table_client::Error) -> Option<(String, bool)> {
    match e.violation()? {
        Violation::FilterOnEncryptedProperty { property, .. } => Some((property.clone(), false)),
        Violation::SelectOfEncryptedProperty { property, .. } => Some((property.clone(), true)),
        _ => None,
    }
}

#[tokio::test]
async fn filters_and_selects_naming_an_encrypt_field_are_refused_before_any_request() -> Result<()> {
    let (engine, table) = engine_with_notes().await?;
    let typed = table.typed::<Note>();
    let before = engine.faults().calls();
    let query = || typed.query().partition("t");
    let cases = [
        (query().filter_str("Body eq 'x'"), "Body", false),
        // However the text spells it: reversed operands, nested, negated, a bare property.
        (query().filter_str("Views gt 1 and not ('a' eq Extra)"), "Extra", false),
        (query().filter_str("(Views eq 7 or (Tags ge '[')) and Views lt 9"), "Tags", false),
        (query().filter_str("Body"), "Body", false),
        (query().filter(Filter::eq("Body", "x")), "Body", false),
        (
            typed.query_range_in("t", &KeyRange::prefix(KeyName::RowKey, "e")).filter_str("Body ne ''"),
            "Body",
            false,
        ),
        (query().select(["Views", "Extra"]), "Extra", true),
    ];
    for (query, property, select) in cases {
        let e = query.collect().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(refused_property(&e), Some((property.to_owned(), select)), "{e}");
        assert!(e.to_string().contains(&format!("names property \"{property}\"")), "{e}");
        assert!(e.to_string().contains("stores only the ciphertext"), "{e}");
    }
    // The typed table's untyped client knows the type too.
    let e = typed.untyped().query().filter_str("Body eq 'x'").collect().await.unwrap_err();
    assert_eq!(refused_property(&e), Some(("Body".to_owned(), false)), "{e}");
    let select = ["Body".to_owned()];
    let e = typed.untyped().get_with_select("t", "emoji", Some(&select)).await.unwrap_err();
    assert_eq!(refused_property(&e), Some(("Body".to_owned(), true)), "{e}");
    assert_eq!(engine.faults().calls(), before, "no request was sent");

    // Conditions on other properties run, and the rows come back decrypted.
    let mut read: Vec<Note> = query().filter_str("Views eq 7 and RowKey ne 'long'").collect().await?;
    read.sort_by(|a, b| a.id.cmp(&b.id));
    let mut want: Vec<Note> = notes().into_iter().filter(|n| n.id != "long").collect();
    want.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(read, want);
    // A client that serves no type names no encrypted property: its filter is sent as given.
    assert!(table.query().filter_str("Body eq 'x'").collect().await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn a_typed_projection_of_an_encrypt_field_fetches_the_metadata_and_decrypts() -> Result<()> {
    let (_engine, table) = engine_with_notes().await?;
    let bodies = table.typed::<NoteBody>();
    let emoji = bodies.get(&table_client::EntityKey::new("t", "emoji")).await?;
    assert_eq!(emoji.body, "🦀 crab 👩‍👩‍👧");
    let mut all: Vec<NoteBody> = bodies.query().partition("t").collect().await?;
    all.sort_by(|a, b| a.id.cmp(&b.id));
    let want: Vec<String> = {
        let mut notes = notes();
        notes.sort_by(|a, b| a.id.cmp(&b.id));
        notes.into_iter().map(|n| n.body).collect()
    };
    assert_eq!(all.into_iter().map(|n| n.body).collect::<Vec<_>>(), want);
    Ok(())
}

#[tokio::test]
async fn update_changes_encrypted_and_plain_types_under_the_read_etag() -> Result<()> {
    let (table, raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    let notes_table = table.typed::<Note>();
    let note = notes().remove(1);
    let key = note.entity_key()?;
    notes_table.insert(&note).await?;
    let etag = notes_table.update(&key, |n| n.body = format!("{} (seen)", n.body)).await?;
    let stored = raw.get("t", &note.id).await?;
    assert_eq!(stored.etag.as_ref(), Some(&etag));
    assert!(matches!(stored.get("Body"), Some(Value::Binary(_))), "re-encrypted, never in clear");
    assert_eq!(notes_table.get(&key).await?, Note { body: format!("{} (seen)", note.body), ..note });

    let people = table.typed::<Person>();
    let ann = Person { team: "t".into(), id: "ann".into(), secret_notes: "x".into(), age: 34 };
    people.insert(&ann).await?;
    people.update(&ann.entity_key()?, |p| p.age += 1).await?;
    assert_eq!(people.get(&ann.entity_key()?).await?.age, 35);

    let e = people.update(&table_client::EntityKey::new("t", "nobody"), |p| p.age += 1).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    Ok(())
}

/// Runs `write` to completion on a runtime of its own, in another thread: a concurrent writer
/// that gets in between a read and a write of the caller's runtime, which it blocks meanwhile.
fn write_meanwhile(write: impl Future<Output = Result<table_client::ETag>> + Send) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
            runtime
                .expect("a runtime for the concurrent writer")
                .block_on(write)
                .expect("the concurrent write");
        });
    });
}

#[tokio::test]
async fn update_rereads_and_applies_again_when_another_writer_got_in_between() -> Result<()> {
    let (table, _raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    let typed = table.typed::<Note>();
    let note = notes().remove(1);
    let key = note.entity_key()?;
    typed.insert(&note).await?;
    let mut seen = Vec::new();
    typed
        .update(&key, |n| {
            seen.push(n.views);
            if seen.len() == 1 {
                let other = Note { views: 100, ..n.clone() };
                write_meanwhile(typed.replace(&other, IfMatch::Any));
            }
            n.views += 1;
        })
        .await?;
    assert_eq!(seen, [7, 100], "the change ran again on the value the other writer stored");
    assert_eq!(typed.get(&key).await?.views, 101);
    Ok(())
}

/// A writer that gets in before every one of `update`'s replaces exhausts the contention
/// budget: the error is `Contention`, naming the attempts, with the last lost race as its
/// source, and the change ran once per attempt. The paused clock skips the pauses in between
/// (seconds each near the end of the budget).
#[tokio::test(start_paused = true)]
async fn update_gives_up_with_contention_when_every_attempt_loses_its_race() -> Result<()> {
    let (table, _raw) = clients(policy(EncryptionFormat::Authenticated)).await?;
    let typed = table.typed::<Note>();
    let note = notes().remove(1);
    let key = note.entity_key()?;
    typed.insert(&note).await?;
    let mut runs = 0_i32;
    let e = typed
        .update(&key, |n| {
            runs += 1;
            write_meanwhile(typed.replace(&Note { views: 1000 + runs, ..n.clone() }, IfMatch::Any));
            n.views = 0;
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Contention, "{e}");
    assert!(e.to_string().contains("on each of its 256 attempts"), "{e}");
    assert!(!e.may_have_applied(), "every replace was refused by its ETag: {e}");
    let source = std::error::Error::source(&e).expect("the last lost race");
    assert!(
        source.to_string().contains("412") || source.to_string().contains("UpdateConditionNotSatisfied"),
        "{source}"
    );
    assert_eq!(runs, 256, "the change runs once per attempt");
    assert_eq!(typed.get(&key).await?.views, 1256, "the other writer's last value stands");
    Ok(())
}

#[tokio::test]
async fn update_settles_a_lost_answer_and_reports_what_may_have_applied() -> Result<()> {
    use std::num::NonZeroU64;
    use table_client::engine::FaultSpec;
    let engine = Engine::new();
    let service = |retry: RetryPolicy| {
        TableServiceClient::builder()
            .engine(engine.clone())
            .encryption(EncryptionPolicy::new(aes("k1", 1)))
            .retry(retry.initial_backoff(std::time::Duration::from_millis(1)))
            .build()
    };
    let typed = service(RetryPolicy::default())?.create_table("crypt").await?.typed::<Note>();
    let note = notes().remove(1);
    let key = note.entity_key()?;
    typed.insert(&note).await?;
    let second = NonZeroU64::MIN.saturating_add(1);

    // The replace (the 2nd call) applies and its answer is lost; its retry fails the ETag, and
    // the stored entity shows this write: applied once, the change run once.
    engine.faults().fail_call(second, FaultSpec::timeout().after_apply());
    let mut runs = 0;
    typed
        .update(&key, |n| {
            runs += 1;
            n.views += 1;
        })
        .await?;
    assert_eq!((runs, typed.get(&key).await?.views), (1, 8));

    // Without retries the lost answer is the error, marked "may have applied": not repeated.
    let once = service(RetryPolicy::none())?.table("crypt").typed::<Note>();
    engine.faults().fail_call(second, FaultSpec::timeout().after_apply());
    let mut runs = 0;
    let e = once
        .update(&key, |n| {
            runs += 1;
            n.views += 1;
        })
        .await
        .unwrap_err();
    assert!(e.may_have_applied(), "{e}");
    assert_eq!((runs, typed.get(&key).await?.views), (1, 9));
    Ok(())
}

#[tokio::test]
async fn the_refused_merge_names_update_as_the_alternative() -> Result<()> {
    let (table, _raw) = clients(EncryptionPolicy::new(aes("k1", 1))).await?;
    let e = table.typed::<Note>().merge(&notes().remove(0), IfMatch::Any).await.unwrap_err();
    assert!(e.to_string().contains("`TypedTable::update` does so"), "{e}");
    Ok(())
}

#[tokio::test]
async fn over_http_a_refused_filter_or_select_sends_nothing() -> Result<()> {
    use table_client::auth::Credential;
    let server = wiremock::MockServer::start().await;
    let credential = Credential::shared_key(
        "devstoreaccount1",
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    )?;
    let service = TableServiceClient::builder()
        .endpoint(&format!("{}/devstoreaccount1", server.uri()))
        .credential(credential)
        .encryption(EncryptionPolicy::new(aes("k1", 1)))
        .build()?;
    let typed = service.table("crypt").typed::<Note>();
    let filtered = typed.query().partition("t").filter_str("Body eq 'x'").collect().await.unwrap_err();
    assert_eq!(refused_property(&filtered), Some(("Body".to_owned(), false)), "{filtered}");
    let selected = typed.query().partition("t").select(["Tags"]).collect().await.unwrap_err();
    assert_eq!(refused_property(&selected), Some(("Tags".to_owned(), true)), "{selected}");
    // Recorded requests: `Some`, empty.
    assert_eq!(server.received_requests().await.map(|requests| requests.len()), Some(0));
    Ok(())
}

// Key rotation: content keys re-wrapped under a new KEK, values untouched.

/// Rotation fixtures: an engine with table `crypt`, and a client on it with `policy`.
struct Rotating {
    engine: Engine,
}

impl Rotating {
    async fn new() -> Result<Rotating> {
        let engine = Engine::new();
        TableServiceClient::embedded(engine.clone()).create_table("crypt").await?;
        Ok(Rotating { engine })
    }

    fn with(&self, policy: EncryptionPolicy) -> Result<TableClient> {
        let service = TableServiceClient::builder().engine(self.engine.clone()).encryption(policy).build()?;
        Ok(service.table("crypt"))
    }

    fn raw(&self) -> TableClient {
        TableServiceClient::embedded(self.engine.clone()).table("crypt")
    }

    /// A client that writes under `old` in `format`.
    fn writer(&self, format: EncryptionFormat) -> Result<TableClient> {
        self.with(EncryptionPolicy::new(aes("old", 1)).encrypt_properties(secret).format(format))
    }

    /// A client that writes under `new` and reads rows under `old` too: the rotating one.
    fn rotator(&self) -> Result<TableClient> {
        self.with(EncryptionPolicy::new(aes("new", 2)).key_resolver(KeyRing::new().with(aes("old", 1))))
    }

    /// Every row as stored, by row key.
    async fn stored(&self) -> Result<Vec<Entity>> {
        self.raw().query().collect().await
    }
}

/// Four encrypted rows, two per format, and one in clear.
async fn rows_in_both_formats(fixture: &Rotating) -> Result<Vec<Entity>> {
    let rows = vec![
        Entity::new("p", "a").with("SecretA", "alpha").with("Plain", 1),
        Entity::new("p", "b").with("SecretA", "🦀").with("SecretB", "").with("Plain", 2),
        Entity::new("p", "c").with("SecretA", "x".repeat(5000)),
        Entity::new("p", "d").with("SecretB", "delta"),
        Entity::new("p", "e").with("Plain", 5),
    ];
    let formats = [EncryptionFormat::Authenticated, EncryptionFormat::V1];
    for (i, row) in rows.iter().take(4).enumerate() {
        fixture.writer(formats[i % 2])?.insert(row.clone()).await?;
    }
    fixture.raw().insert(rows[4].clone()).await?;
    Ok(rows)
}

/// The properties of a stored row but its envelope.
fn without_envelope(row: &Entity) -> Vec<(&String, &Value)> {
    row.properties.iter().filter(|(name, _)| *name != "_ClientEncryptionMetadata1").collect()
}

#[tokio::test]
async fn rotation_rewraps_both_formats_and_leaves_every_value_as_it_was() -> Result<()> {
    let fixture = Rotating::new().await?;
    let rows = rows_in_both_formats(&fixture).await?;
    let before = fixture.stored().await?;

    let progress = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = progress.clone();
    let report = fixture
        .rotator()?
        .rotate_encryption_key(aes("new", 2))
        .max_per_page(2)
        .on_progress(move |p| {
            if let Ok(mut seen) = seen.lock() {
                seen.push((p.done.rewrapped + p.done.not_encrypted, p.continuation.is_some()));
            }
        })
        .run()
        .await?;
    assert_eq!((report.rewrapped, report.current, report.not_encrypted, report.retried), (4, 0, 1, 0));
    let progress = progress.lock().map(|p| p.clone()).unwrap_or_default();
    assert_eq!(progress, [(2, true), (4, true), (5, false)]);

    // Only the envelope changed: every value, the name list and the clear row are the same bytes.
    let after = fixture.stored().await?;
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(without_envelope(old), without_envelope(new), "{}", old.key());
    }

    // The new key alone reads every row; the old key alone reads none of the encrypted ones.
    let new_only = fixture.with(EncryptionPolicy::new(aes("new", 2)))?;
    let read = new_only.query().collect().await?;
    for (row, written) in read.iter().zip(&rows) {
        assert_eq!(row.properties, written.properties, "{}", row.key());
    }
    let e = fixture.with(EncryptionPolicy::new(aes("old", 1)))?.get("p", "a").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    assert!(e.to_string().contains("`new`"), "{e}");

    // Running it again finds every encrypted row current and writes nothing.
    // The rotation is a `Send` future: it can run on its own task.
    let again = tokio::spawn(fixture.rotator()?.rotate_encryption_key(aes("new", 2)).run())
        .await
        .unwrap_or_else(|e| panic!("the rotation task failed: {e}"))?;
    assert_eq!((again.rewrapped, again.current, again.not_encrypted), (0, 4, 1));
    let unchanged = fixture.stored().await?;
    assert_eq!(
        unchanged.iter().map(|r| r.etag.clone()).collect::<Vec<_>>(),
        after.iter().map(|r| r.etag.clone()).collect::<Vec<_>>()
    );
    Ok(())
}

#[tokio::test]
async fn a_rotation_resumes_from_its_continuation_and_keeps_to_its_filter() -> Result<()> {
    let fixture = Rotating::new().await?;
    rows_in_both_formats(&fixture).await?;
    fixture
        .writer(EncryptionFormat::Authenticated)?
        .insert(Entity::new("q", "z").with("SecretA", "z"))
        .await?;

    let token = std::sync::Arc::new(std::sync::Mutex::new(None));
    let first = token.clone();
    fixture
        .rotator()?
        .rotate_encryption_key(aes("new", 2))
        .partition("p")
        .max_per_page(2)
        .on_progress(move |p| {
            if let Ok(mut first) = first.lock() {
                first.get_or_insert_with(|| p.continuation.as_ref().map(ToString::to_string));
            }
        })
        .run()
        .await?;
    let token = token.lock().ok().and_then(|t| t.clone().flatten()).unwrap_or_default();

    // A second rotation (to a third key) resumed after the first page visits only the rest of "p".
    let third = fixture.with(
        EncryptionPolicy::new(aes("third", 3))
            .key_resolver(KeyRing::new().with(aes("old", 1)).with(aes("new", 2))),
    )?;
    let report = third
        .rotate_encryption_key(aes("third", 3))
        .partition("p")
        .max_per_page(2)
        .resume(&token)
        .run()
        .await?;
    assert_eq!((report.rewrapped, report.not_encrypted), (2, 1));
    // The row of partition "q" was outside the filter: still under the old key.
    let old_only = fixture.with(EncryptionPolicy::new(aes("old", 1)))?;
    assert_eq!(old_only.get("q", "z").await?.get("SecretA"), Some(&Value::from("z")));
    Ok(())
}

#[tokio::test]
async fn an_unknown_old_key_is_a_crypto_error_naming_the_row() -> Result<()> {
    let fixture = Rotating::new().await?;
    rows_in_both_formats(&fixture).await?;
    let e = fixture
        .with(EncryptionPolicy::new(aes("new", 2)))?
        .rotate_encryption_key(aes("new", 2))
        .run()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    let message = e.to_string();
    assert!(message.contains("`old`") && message.contains("table crypt"), "{message}");
    assert!(message.contains(&Entity::new("p", "a").key().to_string()), "{message}");

    let e = fixture.raw().rotate_encryption_key(aes("new", 2)).run().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("no encryption policy"), "{e}");
    Ok(())
}

/// The new KEK, which has another writer replace the row being rotated just before its first
/// wrap: the rotation's conditional write then loses the race.
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
        let write = self.write.lock().ok().and_then(|mut w| w.take());
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
async fn a_concurrent_write_during_rotation_is_kept() -> Result<()> {
    // The writer uses the old key (the row is re-wrapped again) or already the new one (the
    // row is then current); either way its values survive.
    for (writer_key, rewrapped, current) in [(aes("old", 1), 1, 0), (aes("new", 2), 0, 1)] {
        let fixture = Rotating::new().await?;
        fixture.writer(EncryptionFormat::V1)?.insert(Entity::new("p", "a").with("SecretA", "before")).await?;
        let changed = Entity::new("p", "a").with("SecretA", "by the writer").with("Plain", 9);
        let writer = fixture.with(EncryptionPolicy::new(writer_key).encrypt_properties(secret))?;
        let new_key =
            Interfering { key: aes("new", 2), writer, write: std::sync::Mutex::new(Some(changed.clone())) };
        let report = fixture.rotator()?.rotate_encryption_key(new_key).run().await?;
        assert_eq!((report.rewrapped, report.current, report.retried), (rewrapped, current, 1));
        let read = fixture.with(EncryptionPolicy::new(aes("new", 2)))?.get("p", "a").await?;
        assert_eq!(read.properties, changed.properties);
    }
    Ok(())
}
