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

// Filters and `$select` naming `#[table(encrypt)]` fields are refused locally, typed
// projections decrypt them, and `TypedTable::update` (the read-change-replace that stands in
// for a refused merge) changes them under the ETag read.

use table_client::{Filter, Origin, Violation};

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

/// A new table on Azurite holding `notes("t")`, and an encrypting client on it.
async fn table_with_notes(azurite: &Azurite, prefix: &str) -> TableClient {
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name(prefix)).await.unwrap();
    let encrypted = encrypting(azurite, table.name(), policy());
    for note in notes("t") {
        encrypted.typed::<Note>().insert(&note).await.unwrap();
    }
    encrypted
}

#[tokio::test]
async fn filters_and_selects_of_encrypt_fields_are_refused_locally_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let table = table_with_notes(azurite, "encfilter").await;
    let typed = table.typed::<Note>();
    let refused = [
        (typed.query().partition("t").filter_str("Views eq 7 and Body eq 'x'"), "Body"),
        (typed.query().partition("t").filter(Filter::ne("Extra", "")), "Extra"),
        (typed.query().partition("t").select(["Views", "Tags"]), "Tags"),
    ];
    for (query, property) in refused {
        let e = query.collect().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(matches!(e.service_code(), Some((_, Origin::Local))), "found before any request: {e}");
        assert!(
            matches!(
                e.violation(),
                Some(
                    Violation::FilterOnEncryptedProperty { property: p, .. }
                        | Violation::SelectOfEncryptedProperty { property: p, .. }
                ) if p == property
            ),
            "{e}"
        );
    }
    // Conditions on other properties are sent, and the rows come back decrypted.
    let read: Vec<Note> =
        typed.query().partition("t").filter_str("Views eq 7 and RowKey lt 'long'").collect().await.unwrap();
    assert_eq!(read, notes("t")[..2]);
}

#[tokio::test]
async fn a_typed_projection_of_an_encrypt_field_decrypts_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let table = table_with_notes(azurite, "encproj").await;
    let bodies = table.typed::<NoteBody>();
    let bodies_read: Vec<String> =
        bodies.query().partition("t").collect().await.unwrap().into_iter().map(|n| n.body).collect();
    assert_eq!(bodies_read, notes("t").into_iter().map(|n| n.body).collect::<Vec<_>>());
    let emoji = bodies.get(&EntityKey::new("t", "emoji")).await.unwrap();
    assert_eq!(emoji.body, notes("t")[0].body);
}

/// Runs the write `write` builds to completion on a runtime of its own, in another thread: a
/// concurrent writer that gets in between a read and a write of the caller's runtime, which it
/// blocks meanwhile (so it builds its own client there, sharing no connection with the caller).
fn write_meanwhile<F: Future<Output = ()>>(write: impl FnOnce() -> F + Send) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(write());
        });
    });
}

#[tokio::test]
async fn update_replaces_under_the_read_etag_and_rereads_on_conflict_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let table = table_with_notes(azurite, "encupdate").await;
    let typed = table.typed::<Note>();
    let note = notes("t").remove(0);
    let key = note.entity_key().unwrap();

    // The merge refusal names the alternative, which works.
    let e = typed.merge(&note, IfMatch::Any).await.unwrap_err();
    assert!(e.to_string().contains("`TypedTable::update` does so"), "{e}");
    typed.update(&key, |n| n.body.push_str(" (seen)")).await.unwrap();
    let stored = TableServiceClient::from_connection_string(&azurite.connection_string)
        .unwrap()
        .table(table.name())
        .get("t", &note.id)
        .await
        .unwrap();
    assert!(matches!(stored.get("Body"), Some(Value::Binary(_))), "re-encrypted, never in clear");
    assert_eq!(typed.get(&key).await.unwrap().body, format!("{} (seen)", note.body));

    // Another writer gets in between the read and the replace: the change runs again on its value.
    let mut seen = Vec::new();
    typed
        .update(&key, |n| {
            seen.push(n.views);
            if seen.len() == 1 {
                let other = Note { views: 100, ..n.clone() };
                write_meanwhile(|| async {
                    let writer = encrypting(azurite, table.name(), policy()).typed::<Note>();
                    writer.replace(&other, IfMatch::Any).await.unwrap();
                });
            }
            n.views += 1;
        })
        .await
        .unwrap();
    assert_eq!(seen, [7, 100]);
    assert_eq!(typed.get(&key).await.unwrap().views, 101);
}
