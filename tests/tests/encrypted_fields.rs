//! `#[table(encrypt)]` fields on Azurite: typed writes store them as `Edm.Binary` in both
//! formats, typed gets and queries decrypt them, a row with such a field in clear is refused
//! under `require_encryption`, and a merge is refused before any request.
//!
//! These need the service; where Azurite cannot run the harness prints a loud banner and the
//! test returns (`REQUIRE_AZURITE=1` turns that into a failure).

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use conformance::azurite::{Azurite, azurite, unique_table_name};
use table_client::encryption::{AesKeyWrap, EncryptionFormat, EncryptionPolicy};
use table_client::typed::TableEntity;
use table_client::{Entity, EntityKey, ErrorKind, IfMatch, TableClient, TableServiceClient, Value};

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

/// Every field shape, in RowKey order: empty, emoji, 32 768 characters; `extra` None and Some.
fn notes(team: &str) -> Vec<Note> {
    let note = |id: &str, body: String, extra: Option<&str>| Note {
        team: team.into(),
        id: id.into(),
        body,
        extra: extra.map(String::from),
        tags: vec!["a".into(), "🦀".into()],
        views: 7,
    };
    vec![
        note("emoji", "🦀 crab 👩‍👩‍👧".into(), Some("")),
        note("empty", String::new(), None),
        note("long", "x".repeat(32 * 1024), Some("some")),
    ]
}

/// A client for `table` on Azurite with `policy`.
fn encrypting(azurite: &Azurite, table: &str, policy: EncryptionPolicy) -> TableClient {
    let service = TableServiceClient::builder()
        .connection_string(&azurite.connection_string)
        .encryption(policy)
        .build()
        .unwrap();
    service.table(table)
}

fn policy() -> EncryptionPolicy {
    EncryptionPolicy::new(AesKeyWrap::new("local:aes", [7; 32]))
}

#[tokio::test]
async fn encrypt_fields_round_trip_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("encfields")).await.unwrap();
    for (team, format) in [("gcm", EncryptionFormat::Authenticated), ("v1", EncryptionFormat::V1)] {
        let typed = encrypting(azurite, table.name(), policy().format(format)).typed::<Note>();
        for note in notes(team) {
            typed.insert(&note).await.unwrap();
            // Read without a policy: the ciphertext, as Binary.
            let stored = table.get(team, &note.id).await.unwrap();
            for property in ["Body", "Tags"] {
                assert!(matches!(stored.get(property), Some(Value::Binary(_))), "{property} {format:?}");
            }
            assert_eq!(stored.get("Extra").is_some(), note.extra.is_some(), "{format:?}");
            assert!(!matches!(stored.get("Extra"), Some(Value::String(_))), "{format:?}");
            assert_eq!(typed.get(&note.entity_key().unwrap()).await.unwrap(), note, "{format:?}");
        }
        let read: Vec<Note> = typed.query().partition(team).collect().await.unwrap();
        assert_eq!(read, notes(team), "{format:?}");
    }
}

#[tokio::test]
async fn require_encryption_refuses_an_encrypt_field_in_clear_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("encclear")).await.unwrap();
    table
        .insert(Entity::new("t", "plain").with("Body", "in clear").with("Tags", "[]").with("Views", 1))
        .await
        .unwrap();
    let policy = policy().encrypt_properties(|_, _, _| false).require_encryption(true);
    let typed = encrypting(azurite, table.name(), policy).typed::<Note>();
    let e = typed.get(&EntityKey::new("t", "plain")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto);
    assert!(e.to_string().contains("property `Body` is stored in clear"), "{e}");
    let e = typed.query().partition("t").collect().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto, "{e}");
}

#[tokio::test]
async fn merges_of_encrypt_fields_are_refused_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("encmerge")).await.unwrap();
    let typed = encrypting(azurite, table.name(), policy()).typed::<Note>();
    let note = notes("t").remove(0);
    let etag = typed.insert(&note).await.unwrap();
    let changed = Note { body: "changed".into(), ..note.clone() };
    for e in [
        typed.merge(&changed, IfMatch::ETag(etag.clone())).await.unwrap_err(),
        typed.insert_or_merge(&changed).await.unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("replace it with its ETag"), "{e}");
    }
    // The alternative the error names: replace with the ETag.
    typed.replace(&changed, IfMatch::ETag(etag)).await.unwrap();
    assert_eq!(typed.get(&note.entity_key().unwrap()).await.unwrap(), changed);
}
