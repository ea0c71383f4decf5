//! The encryption policy of a client: which key wraps new content keys, which keys read old
//! rows, which format new writes use, which properties are encrypted, and whether a row read
//! in clear is an error. It encrypts whole entities before writing and decrypts them after
//! reading, in either format.
//!
//! Invariants: a property is either returned as the string it was, or the read fails with
//! [`ErrorKind::Crypto`](table_core::ErrorKind::Crypto) naming the table, entity and
//! property; decryption never yields garbage or a partial entity. The two metadata properties
//! never reach the caller of a read. A merge never carries an encrypted property.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use rand_core::{OsRng, RngCore};
use table_core::{Entity, EntityKey, Error, Operation, Result, Value};

use super::authenticated::{self, NONCE};
use super::key::{KeyEncryptionKey, KeyResolver};
use super::legacy;
use super::metadata::{self, METADATA, Metadata, PROPERTY_LIST, Scheme, push_json_string};
use crate::error::{crypto, invalid_input};

/// The format of new writes. Reads take either, whatever the policy writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EncryptionFormat {
    /// AES-256-GCM per property, bound to its partition key, row key and name (protocol
    /// `rs-gcm-1`, laid out in the [module docs](crate::encryption)). Tampering with a value,
    /// the name list or the wrapped key, or moving a value to another row or property, fails
    /// the read. Only this crate reads it. The default.
    #[default]
    Authenticated,
    /// Protocol "1.0" of the older .NET, Java and Python storage libraries (AES-256-CBC),
    /// for rows those libraries must read. NOT authenticated: a changed or moved ciphertext is
    /// not reliably detected (often as bad padding, not always). As those libraries do, every
    /// entity written carries the metadata, even with no property to encrypt.
    V1,
}

/// Which properties of an untyped entity to encrypt: `(partition key, row key, property name)
/// -> bool`.
type PropertyResolver = dyn Fn(&str, &str, &str) -> bool + Send + Sync;

/// Client-side encryption of string properties, set on a client with
/// [`TableServiceClientBuilder::encryption`](crate::TableServiceClientBuilder::encryption).
///
/// Writes (insert, replace, the upserts, transactions, bulk) encrypt the string properties
/// [`encrypt_properties`](Self::encrypt_properties) names (and typed writes through a
/// [`TypedTable`](crate::TypedTable) the type's `#[table(encrypt)]` fields), under a fresh
/// random content key per entity wrapped by the [key-encryption key](Self::new), and store
/// them as `Edm.Binary` beside two metadata properties (`_ClientEncryptionMetadata1` and
/// `2`, so an entity keeps at most 250 properties of its own). Merges (`merge`, `insert_or_merge`) of an entity with
/// such a property are refused: the stored row's encrypted properties are listed in its
/// metadata, under its own content key, which a merge would overwrite and leave the others
/// unreadable; read, change, and `replace` with the ETag instead.
///
/// Reads (get, queries) decrypt every row that carries the metadata, in either format, with
/// the key its metadata names: the [resolver](Self::key_resolver) first, then the policy's
/// own key. Rows without metadata come back as stored, unless
/// [`require_encryption`](Self::require_encryption) says they must not.
///
/// ```
/// use table_client::encryption::{AesKeyWrap, EncryptionFormat, EncryptionPolicy};
///
/// let policy = EncryptionPolicy::new(AesKeyWrap::new("local:key1", [7; 32]))
///     .encrypt_properties(|_pk, _rk, name| name == "Ssn" || name == "Notes")
///     .format(EncryptionFormat::Authenticated)
///     .require_encryption(true);
/// # let _ = policy;
/// ```
#[derive(Clone)]
pub struct EncryptionPolicy {
    key: Option<Arc<dyn KeyEncryptionKey>>,
    resolver: Option<Arc<dyn KeyResolver>>,
    format: EncryptionFormat,
    require_encryption: bool,
    properties: Option<Arc<PropertyResolver>>,
}

impl fmt::Debug for EncryptionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptionPolicy")
            .field("key", &self.key)
            .field("resolver", &self.resolver)
            .field("format", &self.format)
            .field("require_encryption", &self.require_encryption)
            .field("encrypts_properties", &self.properties.is_some())
            .finish()
    }
}

impl EncryptionPolicy {
    /// A policy whose writes wrap content keys with `key`, which also reads the rows it wrapped.
    /// No property is encrypted until [`encrypt_properties`](Self::encrypt_properties) names
    /// some.
    pub fn new(key: impl KeyEncryptionKey + 'static) -> Self {
        EncryptionPolicy { key: Some(Arc::new(key)), ..Self::empty() }
    }

    /// A policy that only reads: rows are decrypted with the keys `resolver` finds; a write
    /// that would encrypt fails with [`ErrorKind::Crypto`](table_core::ErrorKind::Crypto).
    pub fn read_only(resolver: impl KeyResolver + 'static) -> Self {
        EncryptionPolicy { resolver: Some(Arc::new(resolver)), ..Self::empty() }
    }

    fn empty() -> Self {
        EncryptionPolicy {
            key: None,
            resolver: None,
            format: EncryptionFormat::default(),
            require_encryption: false,
            properties: None,
        }
    }

    /// Finds the key of each row's key id when reading, before the policy's own key (keep the
    /// old keys here after a rotation). Default: only the policy's own key.
    pub fn key_resolver(mut self, resolver: impl KeyResolver + 'static) -> Self {
        self.resolver = Some(Arc::new(resolver));
        self
    }

    /// The format of new writes. Default: [`EncryptionFormat::Authenticated`].
    pub fn format(mut self, format: EncryptionFormat) -> Self {
        self.format = format;
        self
    }

    /// When `true`, reading a row in clear is an error
    /// ([`ErrorKind::Crypto`](table_core::ErrorKind::Crypto)): a row without metadata that has
    /// a property [`encrypt_properties`](Self::encrypt_properties) names (any row without
    /// metadata when no resolver is set), or an encrypted row with such a property not
    /// encrypted. Default: `false`.
    pub fn require_encryption(mut self, require: bool) -> Self {
        self.require_encryption = require;
        self
    }

    /// The properties to encrypt: `resolver(partition_key, row_key, name)` answers for each
    /// property of each entity written. Only strings can be encrypted: a named property of
    /// another type fails the write with
    /// [`ErrorKind::InvalidInput`](table_core::ErrorKind::InvalidInput). Default: none.
    pub fn encrypt_properties(
        mut self,
        resolver: impl Fn(&str, &str, &str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.properties = Some(Arc::new(resolver));
        self
    }

    /// `true` when property `name` of `entity` is encrypted: named by the resolver, or among
    /// `typed`, the `#[table(encrypt)]` properties of the type written or read.
    fn encrypts(&self, partition_key: &str, row_key: &str, name: &str, typed: &[&str]) -> bool {
        typed.contains(&name) || self.properties.as_ref().is_some_and(|f| f(partition_key, row_key, name))
    }

    /// The operation as it is sent: an insert, replace or upsert with its named properties
    /// (and those in `typed`) encrypted; a merge refused when it has one; a delete as it is.
    pub(crate) async fn seal_operation(
        &self,
        table: &str,
        operation: Operation,
        typed: &[&str],
    ) -> Result<Operation> {
        Ok(match operation {
            Operation::Insert(entity) => Operation::Insert(self.encrypt(table, entity, typed).await?),
            Operation::InsertOrReplace(entity) => {
                Operation::InsertOrReplace(self.encrypt(table, entity, typed).await?)
            }
            Operation::Replace { entity, if_match } => {
                Operation::Replace { entity: self.encrypt(table, entity, typed).await?, if_match }
            }
            Operation::Merge { entity, .. } | Operation::InsertOrMerge(entity)
                if entity.properties.keys().any(|name| {
                    self.encrypts(&entity.partition_key, &entity.row_key, name, typed) || is_metadata(name)
                }) =>
            {
                return Err(self.merge_refused(table, &entity, typed));
            }
            other => other,
        })
    }

    fn merge_refused(&self, table: &str, entity: &Entity, typed: &[&str]) -> Error {
        let what = match entity.properties.keys().find(|name| {
            self.encrypts(&entity.partition_key, &entity.row_key, name, typed) || is_metadata(name)
        }) {
            Some(name) if is_metadata(name) => format!("property `{name}` is encryption metadata"),
            Some(name) => format!("property `{name}` is encrypted"),
            None => "a property is encrypted".to_owned(),
        };
        invalid_input(format!(
            "merge of entity {} in table {table}: {what}, and an encrypted entity cannot be merged: the \
             stored row lists its encrypted properties in its metadata, under its own content key, which \
             a merge would replace and leave the other encrypted properties unreadable; read the entity, \
             change it, and replace it with its ETag instead",
            entity.key()
        ))
    }

    /// `entity` as a client with this policy writes it to `table` (named in errors only): the
    /// string properties [`encrypt_properties`](Self::encrypt_properties) names encrypted, plus
    /// the two metadata properties. With none named, the authenticated format leaves the
    /// entity as it is; "1.0" still adds the metadata (an empty list), as the older libraries
    /// do, whose readers with their own `require_encryption` refuse a row without.
    ///
    /// Errors: [`ErrorKind::InvalidInput`](table_core::ErrorKind::InvalidInput) for a named
    /// property that is not a string, or an entity with a metadata property of its own;
    /// [`ErrorKind::Crypto`](table_core::ErrorKind::Crypto) when the policy has no key for
    /// writes, the key cannot wrap, or the random generator fails.
    pub async fn encrypt_entity(&self, table: &str, entity: Entity) -> Result<Entity> {
        self.encrypt(table, entity, &[]).await
    }

    /// [`encrypt_entity`](Self::encrypt_entity), also encrypting the properties in `typed`.
    async fn encrypt(&self, table: &str, mut entity: Entity, typed: &[&str]) -> Result<Entity> {
        // A first pass checks before anything is drawn; the second seals and lists, so the list
        // names exactly what was sealed.
        let (mut count, mut first, mut not_string) = (0, None, None);
        for (name, value) in &entity.properties {
            if self.encrypts(&entity.partition_key, &entity.row_key, name, typed) {
                count += 1;
                first = first.or(Some(name));
                if not_string.is_none() && !matches!(value, Value::String(_)) {
                    not_string = Some((name, value));
                }
            }
        }
        let compatible = self.format == EncryptionFormat::V1 && self.key.is_some();
        if count == 0 && !compatible {
            return Ok(entity);
        }
        let at = || format!("entity {} in table {table}", entity.key());
        if let Some(reserved) = entity.properties.keys().find(|name| is_metadata(name)) {
            return Err(invalid_input(format!(
                "{}: the property name `{reserved}` is reserved for the encryption metadata",
                at()
            )));
        }
        if let Some((name, value)) = not_string {
            return Err(not_a_string(&at(), name, value));
        }
        let key = self.key.as_ref().ok_or_else(|| {
            crypto(format!(
                "{}: property `{}` is to be encrypted, but the encryption policy is read-only (no \
                 key-encryption key for writes)",
                at(),
                first.map_or("", String::as_str)
            ))
        })?;
        let draw = Draw::new(self.format, count)
            .map_err(|e| crypto(format!("{}: the random source failed", at())).with_source(e))?;
        let wrapped_key = key.wrap_key(&draw.content_key).await.map_err(|e| {
            crypto(format!(
                "{}: the key-encryption key `{}` could not wrap the content key",
                at(),
                key.key_id()
            ))
            .with_source(e)
        })?;
        let scheme = match self.format {
            EncryptionFormat::Authenticated => Scheme::Gcm,
            EncryptionFormat::V1 => Scheme::V1 { entity_iv: draw.entity_iv, java_v1: false },
        };
        let mut cipher =
            ContentCipher::new(scheme, &draw.content_key, &entity.partition_key, &entity.row_key);
        // The JSON array of the names sealed, as serde_json writes a list of strings.
        let mut list = String::with_capacity(2 + count * 16);
        list.push('[');
        let mut sealed = 0;
        let Entity { partition_key, row_key, properties, .. } = &mut entity;
        // Each value is replaced where it lies; a failure drops the whole entity.
        for (name, value) in properties.iter_mut() {
            if !self.encrypts(partition_key, row_key, name, typed) {
                continue;
            }
            let Value::String(text) = value else {
                // Only a resolver that changed its answer since the first pass gets here.
                let at = format!("entity {} in table {table}", EntityKey::new(&**partition_key, &**row_key));
                return Err(not_a_string(&at, name, value));
            };
            *value = Value::Binary(cipher.seal(name, draw.nonce(sealed), text.as_bytes())?);
            if sealed > 0 {
                list.push(',');
            }
            push_json_string(&mut list, name);
            sealed += 1;
        }
        list.push(']');
        let list = cipher.seal(PROPERTY_LIST, draw.nonce(sealed), list.as_bytes())?;
        let metadata = Metadata::json(scheme, key.key_id(), key.algorithm(), &wrapped_key);
        entity.properties.insert(PROPERTY_LIST.to_owned(), Value::Binary(list));
        entity.properties.insert(METADATA.to_owned(), Value::String(metadata));
        Ok(entity)
    }

    /// A row read from `table` (named in errors only) as a client with this policy returns it:
    /// its encrypted properties strings again, the metadata removed, in either format. A row
    /// without metadata comes back as it is, unless
    /// [`require_encryption`](Self::require_encryption) refuses it.
    ///
    /// Errors, all [`ErrorKind::Crypto`](table_core::ErrorKind::Crypto): half of the metadata
    /// missing or mistyped; an envelope that does not parse or names an unknown format; no key
    /// for its key id; the key failing to unwrap; the name list or a value failing to
    /// authenticate ("1.0": to decrypt, or to be UTF-8); a listed property that is not binary;
    /// a row in clear that must be encrypted.
    pub async fn decrypt_entity(&self, table: &str, entity: Entity) -> Result<Entity> {
        self.decrypt(table, entity, &[]).await
    }

    /// [`decrypt_entity`](Self::decrypt_entity) of a row of a type whose `#[table(encrypt)]`
    /// properties are `typed`: with `require_encryption`, one of them in clear fails the read.
    pub(crate) async fn decrypt(&self, table: &str, mut entity: Entity, typed: &[&str]) -> Result<Entity> {
        let at = |entity: &Entity| format!("entity {} in table {table}", entity.key());
        let metadata = entity.properties.remove(METADATA);
        let list = entity.properties.remove(PROPERTY_LIST);
        let (metadata, list) = match (metadata, list) {
            (None, None) => {
                self.check_in_clear(table, &entity, None, typed)?;
                return Ok(entity);
            }
            (Some(Value::String(metadata)), Some(Value::Binary(list))) => (metadata, list),
            (metadata, list) => {
                let state = |name: &str, v: &Option<Value>, want: &str| match v {
                    None => format!("{name} is missing"),
                    Some(v) => format!("{name} is {} instead of {want}", v.edm_type()),
                };
                return Err(crypto(format!(
                    "{}: the encryption metadata is incomplete: {}, {}",
                    at(&entity),
                    state(METADATA, &metadata, "Edm.String"),
                    state(PROPERTY_LIST, &list, "Edm.Binary")
                )));
            }
        };
        let metadata = Metadata::parse(&metadata).map_err(|e| crypto(format!("{}: {e}", at(&entity))))?;
        let content_key = self.unwrap(&|| at(&entity), &metadata).await?;
        let mut cipher =
            ContentCipher::new(metadata.scheme, &content_key, &entity.partition_key, &entity.row_key);
        let failed = |entity: &Entity, what: &str| {
            crypto(format!(
                "{}: {what} failed {}",
                at(entity),
                match metadata.scheme {
                    Scheme::Gcm =>
                        "authentication (changed, moved from another row or property, or sealed under another key)",
                    Scheme::V1 { .. } =>
                        "to decrypt (bad padding or not UTF-8: a wrong key, or a changed or moved ciphertext)",
                }
            ))
        };
        let list = cipher.open(PROPERTY_LIST, list).and_then(|list| String::from_utf8(list).ok());
        let names = (list.as_deref())
            .and_then(|list| cipher.names(list))
            .ok_or_else(|| failed(&entity, &format!("the list of encrypted properties ({PROPERTY_LIST})")))?;
        // Each value is opened in its own buffer and replaced where it lies; a failure drops the
        // whole entity, so no partly decrypted entity escapes.
        let mut properties = std::mem::take(&mut entity.properties);
        for name in &names {
            match properties.get_mut(name.as_ref()) {
                // Not selected by a projection, or never written.
                None => {}
                Some(value) => {
                    let Value::Binary(sealed) = value else {
                        return Err(crypto(format!(
                            "{}: property `{name}` is listed as encrypted but is {} instead of Edm.Binary",
                            at(&entity),
                            value.edm_type()
                        )));
                    };
                    let text = cipher
                        .open(name, std::mem::take(sealed))
                        .and_then(|plain| String::from_utf8(plain).ok())
                        .ok_or_else(|| failed(&entity, &format!("property `{name}`")))?;
                    *value = Value::String(text);
                }
            }
        }
        entity.properties = properties;
        self.check_in_clear(table, &entity, Some(&names), typed)?;
        Ok(entity)
    }

    /// With `require_encryption`: a property the policy (or `typed`) encrypts that the row
    /// holds in clear (not among `encrypted`, `None` for a row without metadata) fails the
    /// read; without a property resolver, so does any row without metadata.
    fn check_in_clear(
        &self,
        table: &str,
        entity: &Entity,
        encrypted: Option<&[Cow<'_, str>]>,
        typed: &[&str],
    ) -> Result<()> {
        if !self.require_encryption {
            return Ok(());
        }
        let clear = entity
            .properties
            .keys()
            .find(|name| {
                self.encrypts(&entity.partition_key, &entity.row_key, name, typed)
                    && !encrypted.is_some_and(|list| list.iter().any(|listed| listed == *name))
            })
            .map(|name| format!("property `{name}` is"))
            .or_else(|| (self.properties.is_none() && encrypted.is_none()).then(|| "the row is".to_owned()));
        match clear {
            None => Ok(()),
            Some(what) => Err(crypto(format!(
                "entity {} in table {table}: encryption is required, but {what} stored in clear \
                 (written without encryption, or its encryption metadata was removed)",
                entity.key()
            ))),
        }
    }

    /// The content key of a row: unwrapped by the key its metadata names. `at` names the row
    /// in errors (called only on failure: formatting it is not free).
    pub(crate) async fn unwrap(
        &self,
        at: &(dyn Fn() -> String + Sync),
        metadata: &Metadata<'_>,
    ) -> Result<[u8; 32]> {
        let key_id = &metadata.key_id;
        let mut key = None;
        if let Some(resolver) = &self.resolver {
            key = resolver.resolve(key_id).await.map_err(|e| {
                let at = at();
                crypto(format!("{at}: the key resolver failed to find the key-encryption key `{key_id}`"))
                    .with_source(e)
            })?;
        }
        let key = match (key, &self.key) {
            (Some(key), _) => key,
            (None, Some(own)) if own.key_id() == key_id => own.clone(),
            (None, own) => {
                let at = at();
                return Err(crypto(format!(
                    "{at}: no key-encryption key has the key id `{key_id}` the row was encrypted with ({})",
                    match own {
                        Some(own) => format!(
                            "the policy's key is `{}`; add older keys to its key resolver",
                            own.key_id()
                        ),
                        None => "the key resolver does not know it".to_owned(),
                    }
                )));
            }
        };
        let unwrapped = key.unwrap_key(&metadata.wrapped_key, &metadata.algorithm).await.map_err(|e| {
            let at = at();
            crypto(format!(
                "{at}: the key-encryption key `{key_id}` could not unwrap the content key (algorithm {:?})",
                metadata.algorithm
            ))
            .with_source(e)
        })?;
        <[u8; 32]>::try_from(unwrapped.as_slice()).map_err(|_| {
            let at = at();
            crypto(format!(
                "{at}: the key-encryption key `{key_id}` unwrapped a content key of {} bytes instead of 32",
                unwrapped.len()
            ))
        })
    }
}

/// The properties `stored` (a row as stored) holds encrypted, given the same row `opened` by a
/// policy: binary there and strings once opened, since decryption turns exactly the listed
/// properties back into strings. A path that rewrites a row (a move, a wide entity's parts)
/// encrypts these again, so what was stored encrypted is never rewritten in clear.
pub(crate) fn stored_encrypted(stored: &Entity, opened: &Entity) -> Vec<String> {
    (stored.properties.iter())
        .filter(|(name, value)| {
            matches!(value, Value::Binary(_))
                && matches!(opened.properties.get(*name), Some(Value::String(_)))
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// The error for property `name` of the entity `at` names, to be encrypted but not a string.
fn not_a_string(at: &str, name: &str, value: &Value) -> Error {
    invalid_input(format!(
        "{at}: property `{name}` is to be encrypted, but only strings can be (it is {})",
        value.edm_type()
    ))
}

/// The two metadata property names.
fn is_metadata(name: &str) -> bool {
    name == METADATA || name == PROPERTY_LIST
}

/// The random values of one entity write, drawn from the operating system's source at once.
///
/// Not from a user-space generator such as `rand`'s thread-local one: its buffered output may
/// repeat in both processes after a fork, and a repeated content key and nonce would break
/// AES-GCM; a system call per entity is the price (about half a microsecond here).
struct Draw {
    content_key: [u8; 32],
    /// The entity IV ("1.0" only).
    entity_iv: [u8; 16],
    /// The nonces one after the other (authenticated only).
    nonces: Vec<u8>,
}

impl Draw {
    /// A content key, and what `format` needs for an entity of `values` encrypted values: an
    /// entity IV ("1.0", which derives the IVs of its values from it), or a nonce per value and
    /// one for the name list (authenticated). Only what is needed is drawn: the kernel's cost
    /// grows with each 64 bytes.
    fn new(format: EncryptionFormat, values: usize) -> std::result::Result<Draw, rand_core::Error> {
        let mut draw = Draw { content_key: [0; 32], entity_iv: [0; 16], nonces: Vec::new() };
        // One system call for all of them: it costs more than the copies.
        match format {
            EncryptionFormat::V1 => {
                let mut bytes = [0; 48];
                OsRng.try_fill_bytes(&mut bytes)?;
                draw.content_key.copy_from_slice(&bytes[..32]);
                draw.entity_iv.copy_from_slice(&bytes[32..]);
            }
            EncryptionFormat::Authenticated => {
                let mut bytes = vec![0; 32 + (values + 1) * NONCE];
                OsRng.try_fill_bytes(&mut bytes)?;
                draw.content_key.copy_from_slice(&bytes[..32]);
                bytes.drain(..32);
                draw.nonces = bytes;
            }
        }
        Ok(draw)
    }

    /// Nonce `i`, if that many were drawn.
    fn nonce(&self, i: usize) -> Option<&[u8; NONCE]> {
        self.nonces.get(i * NONCE..)?.first_chunk()
    }
}

/// The content cipher of one entity, in its format.
// Large (the expanded key schedules), but only ever a local of one call: boxing it would cost
// an allocation per entity.
#[allow(clippy::large_enum_variant)]
enum ContentCipher<'a> {
    V1(legacy::Cipher<'a>),
    Gcm(authenticated::Cipher),
}

impl<'a> ContentCipher<'a> {
    fn new(scheme: Scheme, key: &'a [u8; 32], partition_key: &str, row_key: &str) -> Self {
        match scheme {
            Scheme::V1 { entity_iv, java_v1 } => {
                ContentCipher::V1(legacy::Cipher::new(key, entity_iv, java_v1, partition_key, row_key))
            }
            Scheme::Gcm => ContentCipher::Gcm(authenticated::Cipher::new(key, partition_key, row_key)),
        }
    }

    /// Seals the value of property `name`; the authenticated format needs a fresh `nonce`
    /// (and fails closed without one), "1.0" takes none.
    fn seal(&mut self, name: &str, nonce: Option<&[u8; NONCE]>, plaintext: &[u8]) -> Result<Vec<u8>> {
        match self {
            ContentCipher::V1(c) => Ok(c.seal(name, plaintext)),
            ContentCipher::Gcm(c) => {
                let nonce =
                    nonce.ok_or_else(|| crypto(format!("no nonce was drawn for property `{name}`")))?;
                c.seal(name, nonce, plaintext)
                    .ok_or_else(|| crypto(format!("property `{name}` is too long for AES-GCM")))
            }
        }
    }

    /// Opens the value of property `name` in its own buffer.
    fn open(&mut self, name: &str, value: Vec<u8>) -> Option<Vec<u8>> {
        match self {
            ContentCipher::V1(c) => c.open(name, value),
            ContentCipher::Gcm(c) => c.open(name, value),
        }
    }

    /// The encrypted names from the decrypted name list.
    fn names<'l>(&self, list: &'l str) -> Option<Vec<Cow<'l, str>>> {
        match self {
            ContentCipher::V1(c) => c.names(list),
            ContentCipher::Gcm(_) => metadata::names(list),
        }
    }
}
