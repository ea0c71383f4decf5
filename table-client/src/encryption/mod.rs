//! Client-side encryption of string properties, as the design guide's "Encrypting table data"
//! describes: the application names the properties to encrypt; they are stored as
//! `Edm.Binary` and come back as strings on read, with nothing to say when reading or
//! querying. Set an [`EncryptionPolicy`] on the client with
//! [`TableServiceClientBuilder::encryption`](crate::TableServiceClientBuilder::encryption).
//!
//! ```
//! use table_client::encryption::{AesKeyWrap, EncryptionPolicy};
//! use table_client::engine::Engine;
//! use table_client::{Entity, TableServiceClient, Value};
//!
//! # #[tokio::main]
//! # async fn main() -> table_client::Result<()> {
//! let engine = Engine::new();
//! let policy = EncryptionPolicy::new(AesKeyWrap::new("local:key1", [7; 32]))
//!     .encrypt_properties(|_pk, _rk, name| name == "Ssn");
//! let service = TableServiceClient::builder().engine(engine.clone()).encryption(policy).build()?;
//! let table = service.create_table("People").await?;
//! table.insert(Entity::new("p", "ann").with("Ssn", "123-45-6789").with("Age", 34)).await?;
//! assert_eq!(table.get("p", "ann").await?.get("Ssn"), Some(&Value::from("123-45-6789")));
//!
//! // A client without the policy sees the ciphertext and the metadata.
//! let raw = TableServiceClient::embedded(engine).table("People").get("p", "ann").await?;
//! assert!(matches!(raw.get("Ssn"), Some(Value::Binary(_))));
//! assert!(raw.get("_ClientEncryptionMetadata1").is_some());
//! # Ok(())
//! # }
//! ```
//!
//! # Keys
//!
//! Each entity write draws a random 32-byte content key; a [`KeyEncryptionKey`] (KEK) wraps
//! it, and the wrapped key is stored with the KEK's key id and algorithm. Reads find the KEK
//! by that key id ([`KeyResolver`], [`KeyRing`]), so rows written before a key rotation stay
//! readable. Local KEKs: [`AesKeyWrap`] (`A256KW`, RFC 3394) and [`RsaOaepKey`] (`RSA-OAEP`,
//! SHA-1); implement the trait over a key store such as Azure Key Vault.
//!
//! # Rotating keys
//!
//! [`TableClient::rotate_encryption_key`](crate::TableClient::rotate_encryption_key) re-wraps
//! the content key of every encrypted row (of a table, a partition or a filter) under a new
//! KEK, in both formats, writing only `_ClientEncryptionMetadata1`: no value is decrypted or
//! rewritten. Each write is conditioned on the row's ETag, so a concurrent writer is never
//! overwritten; a rotation reports its progress page by page, with a continuation to resume
//! from, and skips rows already under the new key, so it can be run again safely.
//!
//! # Formats
//!
//! Both formats store two metadata properties beside the encrypted ones:
//! - `_ClientEncryptionMetadata1` (`Edm.String`): a JSON object with `WrappedContentKey`
//!   (`KeyId`, `EncryptedKey` as base64, `Algorithm`), `EncryptionAgent` (`Protocol`,
//!   `EncryptionAlgorithm`), and for "1.0" only `ContentEncryptionIV` (16 bytes, base64) and
//!   `KeyWrappingMetadata` (`EncryptionLibrary`);
//! - `_ClientEncryptionMetadata2` (`Edm.Binary`): the JSON array of the encrypted property
//!   names, encrypted as a property of that name is.
//!
//! **Authenticated** (protocol `rs-gcm-1`, `AES_GCM_256`; the default for writes, read only by
//! this crate). Byte by byte:
//! - a value is `nonce (12 random bytes) || AES-256-GCM ciphertext of the UTF-8 string (same
//!   length) || tag (16 bytes)`;
//! - its associated data is the 8 ASCII bytes `rs-gcm-1`, a 0x00 byte, then PartitionKey,
//!   RowKey and the property name, each as its UTF-8 length (4 bytes, big-endian) followed by
//!   its UTF-8 bytes;
//! - the name list is sealed the same way under the name `_ClientEncryptionMetadata2`.
//!
//! A flipped bit anywhere in a value or the name list fails authentication; a value or list
//! moved to another row or property fails too (its associated data differs); a changed
//! wrapped key fails the KEK's unwrap (both local algorithms check integrity), and a changed
//! envelope otherwise fails to parse or names a key or format that is not there: every case
//! is an [`ErrorKind::Crypto`](crate::ErrorKind::Crypto) error. The wrapped key is outside the
//! associated data on purpose, so that a key rotation can re-wrap it alone.
//!
//! **"1.0"** (`AES_CBC_256`, the older .NET, Java and Python storage libraries, e.g. the
//! Python package `azure-cosmosdb-table` 1.0.6): always read; written with
//! [`EncryptionFormat::V1`]. A value is AES-256-CBC with PKCS#7 padding of the UTF-8 string,
//! under the IV = first 16 bytes of SHA-256(entity IV || RowKey || PartitionKey || name)
//! (PartitionKey first for the Java library's first variant, recognised by its metadata).
//! **This format is not authenticated**: a changed ciphertext is detected only when it
//! happens to break the padding or the UTF-8, which is not guaranteed; prefer the
//! authenticated format unless an older library must read the rows.
//!
//! # Typed entities
//!
//! A field marked `#[table(encrypt)]` (a `String`, an `Option<String>`, or a `json` field,
//! whose JSON text is encrypted) is encrypted on every write of its type, whatever the
//! policy's resolver says: single writes through a [`TypedTable`](crate::TypedTable), typed
//! transactions ([`TypedTransaction`](crate::TypedTransaction), each value with its own type's
//! fields), and every index copy. With
//! [`require_encryption`](EncryptionPolicy::require_encryption) a row holding it in clear fails
//! the read. Without a policy, such a write is refused rather than sent in clear. A merge of
//! such a type is refused, in a transaction too (read, change, and replace with the ETag). The
//! derive refuses `encrypt` on keys, on a `key_only` field, in index templates and in index
//! projections, and generates no filter column for it.
//!
//! # Rows under other keys
//!
//! The ciphertext is bound to the row it is stored in (its IVs, or its associated data, take
//! the row's keys), so a row written under other keys is encrypted afresh, under its own
//! content key:
//! - an `index(...)` copy, in the primary's partition (in the same transaction) or in another
//!   (through the outbox), holds the type's encrypted fields encrypted for the copy's keys;
//!   reads through copies ([`get_by_index`](crate::TypedTable::get_by_index),
//!   [`query_index`](crate::TypedTable::query_index)) decrypt them;
//! - a [move](crate::TableClient::move_entity) and a
//!   [wide entity](crate::patterns::WideTable) write rewrite rows: they encrypt **every
//!   property the row held encrypted where it was read** (the stored version, for a wide
//!   entity), plus the `#[table(encrypt)]` properties of the client's type and what the
//!   resolver names, so a row stored encrypted is never rewritten in clear, even by a client
//!   whose resolver does not name its properties;
//! - a [large property](crate::patterns::LargeProperty)'s parts are properties of their
//!   entity: the resolver names them ([`LargeProperty::holds`](crate::patterns::LargeProperty::holds)).
//!
//! Otherwise an untyped write (an [`Entity`](crate::Entity) built or read and written back)
//! encrypts only what the policy's
//! [`encrypt_properties`](EncryptionPolicy::encrypt_properties) names: name the same
//! properties there when rows of an encrypting type are also written untyped.
//!
//! # What is refused
//!
//! Only strings are encrypted (another type named by the policy fails the write); a merge of
//! an entity with an encrypted property is refused (see [`EncryptionPolicy`]), and so is a
//! merge of a type with `#[table(encrypt)]` fields, alone or in a typed transaction; the two
//! metadata names are reserved in an entity being encrypted. An encrypted field on a key, in an
//! index template or in an index projection is a compile error. Reads fail with
//! [`ErrorKind::Crypto`](crate::ErrorKind::Crypto), never with a garbled string, when a key is
//! unknown or wrong, a ciphertext fails to decrypt or authenticate, the metadata is
//! incomplete or unknown, or a row must be encrypted
//! ([`EncryptionPolicy::require_encryption`]) and is not. The rows the SDK maintains for
//! itself, which hold keys and markers only (`lookup(...)` index entities, outbox intents), are
//! read as stored when they carry no metadata, whatever `require_encryption` says.
//!
//! # Querying and changing encrypted fields
//!
//! The service holds only ciphertext, so a typed query whose filter (built, or written as
//! text) or `$select` names a `#[table(encrypt)]` property fails before any request
//! ([`Violation::FilterOnEncryptedProperty`](crate::Violation::FilterOnEncryptedProperty),
//! [`Violation::SelectOfEncryptedProperty`](crate::Violation::SelectOfEncryptedProperty)); so
//! does one from the typed table's [`untyped`](crate::TypedTable::untyped) client. To read
//! some fields, use a typed projection (a type with those fields, the encrypted ones marked
//! `#[table(encrypt)]`): its reads fetch the two metadata properties too, and decrypt. To
//! change some fields of a type that cannot be merged, use
//! [`TypedTable::update`](crate::TypedTable::update): it reads the value, applies the change
//! and replaces it under the ETag read, again when another writer got in between.

mod authenticated;
mod key;
mod legacy;
mod metadata;
mod policy;
mod rotation;

pub use key::{
    A256KW, AesKeyWrap, KeyEncryptionKey, KeyError, KeyFuture, KeyResolver, KeyRing, RSA_OAEP, ResolveFuture,
    RsaOaepKey,
};
pub(crate) use policy::stored_encrypted;
pub use policy::{EncryptionFormat, EncryptionPolicy};
pub use rotation::{KeyRotation, RotationProgress, RotationReport};

/// The two metadata properties an encrypted row carries, which a projection must fetch too.
pub(crate) const METADATA_PROPERTIES: [&str; 2] = [metadata::METADATA, metadata::PROPERTY_LIST];
