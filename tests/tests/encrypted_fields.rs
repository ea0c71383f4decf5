//! `#[table(encrypt)]` fields on Azurite: typed writes store them as `Edm.Binary` in both
//! formats, typed gets and queries decrypt them, a row with such a field in clear is refused
//! under `require_encryption`, and a merge is refused before any request. Rows stored under
//! other keys (index copies, typed transactions, moves, wide entities) are encrypted for their
//! own keys, and reads through index copies decrypt.
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

/// A type with encrypted fields, a whole-entity copy in its partition and a lookup.
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

/// The same fields with the copy in another partition (kept through the outbox).
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

/// The row at `pk`/`rk` read without a policy, asserting that `properties` are ciphertext
/// beside the encryption metadata.
async fn sealed(raw: &TableClient, pk: &str, rk: &str, properties: &[&str]) -> Entity {
    let row = raw.get(pk, rk).await.unwrap();
    for property in properties {
        assert!(matches!(row.get(property), Some(Value::Binary(_))), "{property} of {pk}/{rk}: {row:?}");
    }
    assert!(row.get("_ClientEncryptionMetadata1").is_some(), "{pk}/{rk}");
    row
}

/// Stores `from` as it is under the keys `to` (what a storage-level attacker could do).
async fn transplant(raw: &TableClient, from: &Entity, to: (&str, &str)) {
    let mut moved = from.clone();
    (moved.partition_key, moved.row_key) = (to.0.to_owned(), to.1.to_owned());
    raw.insert_or_replace(moved).await.unwrap();
}

#[tokio::test]
async fn index_copies_are_encrypted_for_their_own_keys_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("enccopies")).await.unwrap();
    let client = encrypting(azurite, table.name(), policy());
    let typed = client.typed::<Staff>();
    let ann = staff("1", "ann@x");
    typed.insert(&ann).await.unwrap();
    let primary = sealed(&table, "t", "1", &["Ssn", "Notes"]).await;
    let copy = sealed(&table, "t", "email_ann@x", &["Ssn", "Notes"]).await;
    assert_ne!(copy.get("Ssn"), primary.get("Ssn"), "the copy has its own content key");
    let key = Staff::BY_EMAIL.key("t", "ann@x").unwrap();
    assert_eq!(typed.get_by_index::<Staff, _>(Staff::BY_EMAIL, &key).await.unwrap(), ann);
    let listed: Vec<Staff> = typed.query_index(Staff::BY_EMAIL).partition("t").collect().await.unwrap();
    assert_eq!(listed, vec![ann.clone()]);
    assert!(typed.verify_indexes().await.unwrap().is_consistent());

    // The primary's ciphertext and metadata under the copy's keys fail authentication.
    let mut forged = primary.clone();
    forged.properties.extend(
        copy.properties.into_iter().filter(|(name, _)| name.starts_with('_') && !name.starts_with("_Client")),
    );
    transplant(&table, &forged, ("t", "email_ann@x")).await;
    let e = typed.get_by_index::<Staff, _>(Staff::BY_EMAIL, &key).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Crypto, "{e}");
    assert!(e.to_string().contains("authentication"), "{e}");

    // A cross-partition copy, through the outbox.
    let global = client.typed::<GlobalStaff>();
    let bob = GlobalStaff { team: "g".into(), id: "2".into(), email: "bob@x".into(), ssn: "456".into() };
    global.insert(&bob).await.unwrap();
    let primary = sealed(&table, "g", "2", &["Ssn"]).await;
    let copy = sealed(&table, "email", "bob@x", &["Ssn"]).await;
    assert_ne!(copy.get("Ssn"), primary.get("Ssn"));
    let key = GlobalStaff::BY_EMAIL.key("bob@x").unwrap();
    assert_eq!(global.get_by_index::<GlobalStaff, _>(GlobalStaff::BY_EMAIL, &key).await.unwrap(), bob);
    let listed: Vec<GlobalStaff> =
        global.query_index(GlobalStaff::BY_EMAIL).partition("email").collect().await.unwrap();
    assert_eq!(listed, vec![bob]);
}

#[tokio::test]
async fn typed_transactions_encrypt_rows_and_copies_on_azurite() {
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("enctx")).await.unwrap();
    for (format, team) in [(EncryptionFormat::Authenticated, "t"), (EncryptionFormat::V1, "v1")] {
        let client = encrypting(azurite, table.name(), policy().format(format));
        let typed = client.typed::<Staff>();
        let with_team = |s: Staff| Staff { team: team.into(), ..s };
        let (ann, bob) = (with_team(staff("1", "ann@x")), with_team(staff("2", "bob@x")));
        let note = Note { team: team.into(), ..notes("t").remove(0) };
        client.typed_transaction().insert(&ann).insert(&bob).insert(&note).submit().await.unwrap();
        for rk in ["1", "2", "email_ann@x", "email_bob@x"] {
            sealed(&table, team, rk, &["Ssn", "Notes"]).await;
        }
        sealed(&table, team, &note.id, &["Body", "Tags"]).await;
        assert_eq!(typed.get(&ann.entity_key().unwrap()).await.unwrap(), ann, "{format:?}");
        let key = Staff::BY_EMAIL.key(team, "bob@x").unwrap();
        assert_eq!(typed.get_by_index::<Staff, _>(Staff::BY_EMAIL, &key).await.unwrap(), bob);
        assert_eq!(client.typed::<Note>().get(&note.entity_key().unwrap()).await.unwrap(), note);

        let moved = Staff { email: "ann@y".into(), ..ann.clone() };
        typed.transaction().replace(&moved, IfMatch::Any).submit().await.unwrap();
        sealed(&table, team, "email_ann@y", &["Ssn", "Notes"]).await;
        assert_eq!(table.get_if_exists(team, "email_ann@x").await.unwrap(), None);
        let e = typed.transaction().merge(&moved, IfMatch::Any).submit().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("replace it with its ETag"), "{e}");
    }
    assert!(
        encrypting(azurite, table.name(), policy())
            .typed::<Staff>()
            .verify_indexes()
            .await
            .unwrap()
            .is_consistent()
    );
}

#[tokio::test]
async fn moves_and_wide_entities_stay_encrypted_on_azurite() {
    use table_client::patterns::WideTable;
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let source = raw.create_table(&unique_table_name("encmove")).await.unwrap();
    let archive = raw.create_table(&unique_table_name("encarchive")).await.unwrap();
    let note = notes("t").remove(0);
    encrypting(azurite, source.name(), policy()).typed::<Note>().insert(&note).await.unwrap();
    // A mover that knows neither the type nor a resolver keeps the fields encrypted.
    let mover = encrypting(azurite, source.name(), policy());
    let target = encrypting(azurite, archive.name(), policy());
    assert!(mover.move_entity(&target, "t", &note.id).await.unwrap());
    let moved = sealed(&archive, "t", &note.id, &["Body", "Extra", "Tags"]).await;
    assert_eq!(target.typed::<Note>().get(&note.entity_key().unwrap()).await.unwrap(), note);
    transplant(&archive, &moved, ("t", "elsewhere")).await;
    assert_eq!(target.get("t", "elsewhere").await.unwrap_err().kind(), ErrorKind::Crypto);

    // A wide entity: every part encrypted for its keys, and kept so by a client whose resolver
    // names nothing.
    let secret = |_: &str, _: &str, name: &str| name.starts_with("Secret");
    let wide = WideTable::new(encrypting(azurite, source.name(), policy().encrypt_properties(secret)));
    let entity =
        (0..400).fold(Entity::new("w", "e"), |e, i| e.with(format!("Secret{i:03}"), format!("v{i}")));
    assert_eq!(wide.write(&entity).await.unwrap(), 2);
    for part in 0..2 {
        sealed(&source, "w", &WideTable::part_row_key("e", part), &["Secret000", "Secret399"][part..=part])
            .await;
    }
    assert_eq!(wide.read("w", "e").await.unwrap().properties, entity.properties);
    let reader = WideTable::new(encrypting(azurite, source.name(), policy()));
    let mut changed = reader.read("w", "e").await.unwrap();
    changed.insert("Secret000", "changed");
    reader.write(&changed).await.unwrap();
    sealed(&source, "w", &WideTable::part_row_key("e", 0), &["Secret000"]).await;
    assert_eq!(wide.read("w", "e").await.unwrap().properties, changed.properties);
}

#[tokio::test]
async fn index_entities_work_under_require_encryption_on_azurite() {
    use futures::TryStreamExt as _;
    let Some(azurite) = azurite() else { return };
    let raw = TableServiceClient::from_connection_string(&azurite.connection_string).unwrap();
    let table = raw.create_table(&unique_table_name("encrequire")).await.unwrap();
    let typed = encrypting(azurite, table.name(), policy().require_encryption(true)).typed::<Staff>();
    let ann = staff("1", "ann@x");
    let bob = Staff { name: ann.name.clone(), ..staff("2", "bob@x") };
    typed.insert(&ann).await.unwrap();
    // Bob joins Ann's index entity, which holds only keys, in clear.
    typed.transaction().insert(&bob).submit().await.unwrap();
    let key = Staff::BY_NAME.key("t", &ann.name).unwrap();
    let found: Vec<Staff> = typed.lookup(Staff::BY_NAME, &key, 2).try_collect().await.unwrap();
    assert_eq!(found, vec![ann, bob]);
    assert!(typed.verify_indexes().await.unwrap().is_consistent());
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
