//! The untyped table client: the handle to one table and its single-entity operations, with
//! local validation before any request.
//!
//! A leaf of the client's import graph: the feature modules (queries in `query`,
//! transactions in `batch`, moves in `moves`, typed access in `typed_table`) extend
//! [`TableClient`] with their own `impl` blocks, and this module imports none of them.

use std::sync::Arc;

use table_core::engine::{CheckedKeys, Put, PutKind, Select, TableHandle};
use table_core::typed::{PreparedWrite, ReadEntity, TableEntity};
use table_core::{
    CheckedOperation, ETag, Entity, EntityKey, Error, ErrorKind, IfMatch, Operation, Result, Violation,
    WriteOutcome, validate_table_name,
};

use crate::backend::{Backend, Decode, Now, Write};
use crate::encryption::EncryptionPolicy;
use crate::error::{ambiguous, crypto};
use crate::outcome::{if_exists, is_entity_missing, require_etag};

/// A client for one table, working with untyped [`Entity`] values. Cheap to clone.
///
/// For typed access through `#[derive(TableEntity)]` structs use [`TableClient::typed`].
///
/// The entity operations, with optimistic concurrency through ETags:
///
/// ```rust
/// use table_client::{Entity, ErrorKind, IfMatch, TableServiceClient};
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let table = service.create_table("Employees").await?;
///
/// let v1 = table.insert(Entity::new("Sales", "empid_000001").with("Name", "Ann").with("Age", 34)).await?;
/// let ann = table.get("Sales", "empid_000001").await?;
/// assert!(table.get_if_exists("Sales", "empid_000002").await?.is_none());
///
/// // Replace only over the version read: a concurrent change makes it fail instead.
/// let v2 = table.replace(ann.clone().with("Age", 35), IfMatch::ETag(v1.clone())).await?;
/// let stale = table.replace(ann.with("Age", 36), IfMatch::ETag(v1)).await.unwrap_err();
/// assert_eq!(stale.kind(), ErrorKind::PreconditionFailed);
///
/// // Merge changes only the properties sent; `IfMatch::Any` takes any version.
/// table.merge(Entity::new("Sales", "empid_000001").with("Email", "ann@contoso.com"), IfMatch::Any).await?;
/// assert_eq!(table.get("Sales", "empid_000001").await?.properties.len(), 3);
///
/// // Upserts: create or overwrite (`insert_or_replace`) or create or combine (`insert_or_merge`).
/// table.insert_or_replace(Entity::new("Sales", "empid_000002").with("Name", "Bob")).await?;
/// table.insert_or_merge(Entity::new("Sales", "empid_000002").with("Age", 28)).await?;
///
/// table.delete("Sales", "empid_000001", IfMatch::ETag(v2)).await.unwrap_err(); // merged since
/// table.delete("Sales", "empid_000001", IfMatch::Any).await?;
/// assert!(table.delete_if_exists("Sales", "empid_000002").await?);
/// assert!(!table.delete_if_exists("Sales", "empid_000002").await?);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TableClient {
    backend: Backend,
    name: Arc<str>,
    /// The table `name` names, resolved at the first point read or typed whole-entity write
    /// and kept for the next ones (on the embedded engine; over HTTP it only names it). Shared
    /// by clones.
    handle: Arc<TableHandle>,
    /// The verdict on `name`, reached once per handle rather than once per request (every
    /// request still fails on an invalid name before it is sent).
    name_check: std::result::Result<(), Violation>,
    encryption: Option<Arc<EncryptionPolicy>>,
    /// The `#[table(encrypt)]` properties of the type a [`TypedTable`](crate::TypedTable)
    /// holds, encrypted on every write of this client and required encrypted on reads.
    encrypted: &'static [&'static str],
}

impl TableClient {
    pub(crate) fn new(backend: Backend, name: &str) -> Self {
        let name_check = validate_table_name(name);
        let name: Arc<str> = Arc::from(name);
        let handle = Arc::new(TableHandle::new(Arc::clone(&name)));
        TableClient { backend, name, handle, name_check, encryption: None, encrypted: &[] }
    }

    /// The client for a typed table whose type encrypts the properties `encrypted`.
    pub(crate) fn with_encrypted(mut self, encrypted: &'static [&'static str]) -> Self {
        self.encrypted = encrypted;
        self
    }

    /// The client with the service client's encryption policy.
    pub(crate) fn with_encryption(mut self, policy: Option<Arc<EncryptionPolicy>>) -> Self {
        self.encryption = policy;
        self
    }

    /// The operation as it is sent: encrypted by the client's policy, if any (which refuses a
    /// merge of an encrypted property). Without a policy, an entity with a property its type
    /// encrypts is refused rather than written in clear.
    pub(crate) async fn seal(&self, operation: Operation) -> Result<Operation> {
        self.seal_as(operation, self.encrypted).await
    }

    /// [`seal`](Self::seal), with `encrypted` (instead of this client's type) naming the
    /// properties always encrypted: for paths that write rows of several types, or rewrite
    /// rows read encrypted, and send the result through [`raw`](Self::raw).
    pub(crate) async fn seal_as(&self, operation: Operation, encrypted: &[&str]) -> Result<Operation> {
        match &self.encryption {
            Some(policy) => policy.seal_operation(&self.name, operation, encrypted).await,
            None => {
                let entity = match &operation {
                    Operation::Insert(e)
                    | Operation::InsertOrReplace(e)
                    | Operation::InsertOrMerge(e)
                    | Operation::Replace { entity: e, .. }
                    | Operation::Merge { entity: e, .. } => Some(e),
                    _ => None,
                };
                let clear = entity.and_then(|e| encrypted.iter().find(|p| e.properties.contains_key(**p)));
                match (entity, clear) {
                    (Some(e), Some(name)) => Err(crypto(format!(
                        "entity {} in table {}: property `{name}` is to be encrypted (marked \
                         `#[table(encrypt)]`, or read encrypted), but the client has no encryption policy (set \
                         one with `TableServiceClientBuilder::encryption`)",
                        e.key(),
                        self.name
                    ))),
                    _ => Ok(operation),
                }
            }
        }
    }

    /// A row as the caller sees it: decrypted by the client's policy, if any.
    pub(crate) async fn open(&self, entity: Entity) -> Result<Entity> {
        match &self.encryption {
            Some(policy) => policy.decrypt(&self.name, entity, self.encrypted).await,
            None => Ok(entity),
        }
    }

    /// `entity` decrypted by the client's policy, if any, then handed to `decode`.
    pub(crate) async fn open_as<T>(&self, entity: Entity, decode: Decode<T>) -> Result<T> {
        decode.decoder().decode(ReadEntity::from_entity(self.open(entity).await?))
    }

    /// The client's encryption policy, if any.
    pub(crate) fn encryption(&self) -> Option<&Arc<EncryptionPolicy>> {
        self.encryption.as_ref()
    }

    /// `true` when the client holds an encryption policy, so reads must decrypt before decoding.
    pub(crate) fn encrypts(&self) -> bool {
        self.encryption.is_some()
    }

    /// The `#[table(encrypt)]` properties of the type this client was made for (empty for an
    /// untyped client).
    pub(crate) fn encrypted(&self) -> &'static [&'static str] {
        self.encrypted
    }

    /// Refuses, before any request, a `$select` from the caller that names a property the
    /// client's type encrypts: the service holds only its ciphertext (a typed projection, whose
    /// list comes from its type, fetches the metadata and decrypts instead).
    pub(crate) fn check_caller_select(&self, select: &[String]) -> Result<()> {
        match select.iter().find(|name| self.encrypted.contains(&name.as_str())) {
            None => Ok(()),
            Some(property) => Err(Error::invalid(Violation::SelectOfEncryptedProperty {
                table: self.name.to_string(),
                property: property.clone(),
            })),
        }
    }

    /// This table without client-side encryption: reads return rows as stored, writes send
    /// operations as given (sealed beforehand with [`seal_as`](Self::seal_as)).
    pub(crate) fn raw(&self) -> TableClient {
        TableClient::new(self.backend.clone(), &self.name)
    }

    /// A row the SDK maintains (an index entity, an index copy, an outbox intent), read through
    /// [`raw`](Self::raw), as the SDK uses it: decrypted when stored encrypted, as stored
    /// otherwise. `require_encryption` guards the application's rows; these hold keys and
    /// markers, and an index copy of an encrypting type is stored encrypted.
    pub(crate) async fn open_maintained(&self, row: Entity) -> Result<Entity> {
        let encrypted =
            crate::encryption::METADATA_PROPERTIES.iter().any(|m| row.properties.contains_key(*m));
        match encrypted {
            true => self.open(row).await,
            false => Ok(row),
        }
    }

    /// [`get_if_exists`](Self::get_if_exists) of a row the SDK maintains
    /// ([`open_maintained`](Self::open_maintained)).
    pub(crate) async fn get_maintained(&self, partition_key: &str, row_key: &str) -> Result<Option<Entity>> {
        match self.raw().get_if_exists(partition_key, row_key).await? {
            Some(row) => self.open_maintained(row).await.map(Some),
            None => Ok(None),
        }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    /// A client for another table of the same account.
    pub(crate) fn sibling(&self, name: &str) -> TableClient {
        TableClient::new(self.backend.clone(), name).with_encryption(self.encryption.clone())
    }

    pub(crate) fn check_name(&self) -> Result<()> {
        self.name_check.clone().map_err(Error::invalid)
    }

    /// Inserts an entity; `AlreadyExists` (`EntityAlreadyExists`) if the key is taken.
    /// Returns the new ETag.
    pub async fn insert(&self, entity: Entity) -> Result<ETag> {
        self.write(Operation::Insert(entity)).await
    }

    /// Replaces an existing entity (all properties), if it matches `if_match`.
    pub async fn replace(&self, entity: Entity, if_match: IfMatch) -> Result<ETag> {
        self.write(Operation::Replace { entity, if_match }).await
    }

    /// Merges the entity's properties into the existing entity, if it matches `if_match`.
    pub async fn merge(&self, entity: Entity, if_match: IfMatch) -> Result<ETag> {
        self.write(Operation::Merge { entity, if_match }).await
    }

    /// Inserts the entity or replaces whatever has its key.
    pub async fn insert_or_replace(&self, entity: Entity) -> Result<ETag> {
        self.write(Operation::InsertOrReplace(entity)).await
    }

    /// Inserts the entity or merges it into whatever has its key.
    pub async fn insert_or_merge(&self, entity: Entity) -> Result<ETag> {
        self.write(Operation::InsertOrMerge(entity)).await
    }

    /// Deletes an entity, if it matches `if_match`; `NotFound` if missing.
    ///
    /// When an attempt's answer was lost and the retry finds the entity gone, the delete
    /// succeeds (the entity is gone, as asked); when the retry's ETag condition fails, the
    /// error is `Ambiguous` (see the crate docs, "Retries and ambiguous failures").
    pub async fn delete(&self, partition_key: &str, row_key: &str, if_match: IfMatch) -> Result<()> {
        let key = EntityKey::new(partition_key, row_key);
        self.execute(Operation::Delete { key, if_match }).await.map(drop)
    }

    /// Deletes an entity if it exists (any version); returns whether it existed.
    ///
    /// `Ambiguous` when an attempt's answer was lost and the retry found nothing: the entity
    /// is gone, but whether it existed (and this call removed it) cannot be known.
    pub async fn delete_if_exists(&self, partition_key: &str, row_key: &str) -> Result<bool> {
        let key = EntityKey::new(partition_key, row_key);
        let delete = Operation::Delete { key: key.clone(), if_match: IfMatch::Any };
        match self.execute_as_answered(delete).await {
            Ok(_) => Ok(true),
            Err(e) if is_entity_missing(&e) && e.may_have_applied() => Err(ambiguous(format!(
                "delete of entity {key} in table {}: the entity is gone, but an attempt whose answer \
                 was lost may have removed it, so whether it existed is unknown",
                self.name
            ))
            .with_source(e)),
            Err(e) if is_entity_missing(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Makes sure the entity is gone, without telling whether it was there (for rows the SDK
    /// maintains itself: outbox intents, stale index rows).
    pub(crate) async fn remove(&self, partition_key: &str, row_key: &str) -> Result<()> {
        if_exists(self.delete(partition_key, row_key, IfMatch::Any).await).map(drop)
    }

    /// Runs one write operation after validating it locally.
    ///
    /// A delete whose attempt's answer was lost settles as [`delete`](Self::delete) says; a
    /// replace or merge as the crate docs say ("Retries and ambiguous failures").
    pub async fn execute(&self, operation: Operation) -> Result<WriteOutcome> {
        let key = match &operation {
            Operation::Delete { key, .. } => Some(key.clone()),
            _ => None,
        };
        let result = self.execute_as_answered(operation).await;
        match (result, key) {
            (Err(e), Some(key)) if e.may_have_applied() => self.settle_delete(&key, e),
            (result, _) => result,
        }
    }

    /// [`execute`](Self::execute) without settling a delete's lost answer.
    async fn execute_as_answered(&self, operation: Operation) -> Result<WriteOutcome> {
        self.check_name()?;
        let operation = check_operation(self.seal(operation).await?)?;
        self.backend.execute(&self.name, Write::Checked(operation)).await
    }

    /// A delete failed after an attempt whose answer was lost. Its retry finding nothing is
    /// success: the entity is gone, as asked, whoever removed it. Its retry failing the ETag
    /// condition tells nothing: the entity exists with another version, because another writer
    /// changed it first or because the lost attempt deleted it and someone wrote it again.
    fn settle_delete(&self, key: &EntityKey, failure: Error) -> Result<WriteOutcome> {
        if is_entity_missing(&failure) {
            return Ok(WriteOutcome { etag: None });
        }
        if failure.kind() == ErrorKind::PreconditionFailed {
            return Err(ambiguous(format!(
                "delete of entity {key} in table {}: an attempt whose answer was lost may have \
                 applied, and the entity now exists with another version (changed first by another \
                 writer, or deleted by that attempt and written again)",
                self.name
            ))
            .with_source(failure));
        }
        Err(failure)
    }

    async fn write(&self, operation: Operation) -> Result<ETag> {
        require_etag(self.execute(operation).await?.etag)
    }

    /// `true` when [`put`](Self::put) stores a typed value without building an `Entity`: on
    /// the embedded engine, for a type that encrypts nothing and a client without an
    /// encryption policy (sealing works on the `Entity`).
    pub(crate) fn puts_through(&self) -> bool {
        matches!(self.backend, Backend::Embedded(_)) && self.encryption.is_none() && self.encrypted.is_empty()
    }

    /// Writes a typed value whole, `prepared` by its `prepare_write`: the write of the same
    /// entity as an [`Operation`] of `kind`, with the same checks, errors and retries. Its
    /// checks and its first attempt, made now ([`Now`]); the rest of the write is
    /// [`put_later`](Self::put_later)'s.
    // Inlined into the typed write's `try_write_whole`: left a call when a point read's code
    // changed, a typed insert cost 4,139.4 instructions rather than 4,089.5 (ops_probe).
    #[inline]
    pub(crate) fn try_put<'v, T: TableEntity>(
        &self,
        kind: PutKind,
        value: &'v T,
        prepared: PreparedWrite,
    ) -> Now<ETag, PendingPut<'v, T>> {
        if let Err(error) = self.check_name() {
            return Now::Answered(Err(error));
        }
        let put = match Put::new(kind, value, prepared) {
            Ok(put) => put,
            Err(rule) => return Now::Answered(Err(Error::invalid(rule))),
        };
        match self.backend.try_put(&self.handle, &put) {
            Now::Answered(outcome) => Now::Answered(outcome.and_then(|outcome| require_etag(outcome.etag))),
            Now::Later(first) => Now::Later(PendingPut { put, first }),
        }
    }

    /// The rest of a [`try_put`](Self::try_put) that went on `Later`.
    pub(crate) async fn put_later<T: TableEntity>(&self, pending: PendingPut<'_, T>) -> Result<ETag> {
        require_etag(self.backend.put(&self.handle, &pending.put, pending.first).await?.etag)
    }

    /// Reads one entity; `NotFound` (`ResourceNotFound`) if missing.
    pub async fn get(&self, partition_key: &str, row_key: &str) -> Result<Entity> {
        // Matched on what `try_get_selected_as` answers now rather than awaiting a shared
        // `async fn` doing so, as the typed point calls do (see `TypedTable`).
        match self.try_get_selected_as(partition_key, row_key, Ok(None), Decode::ENTITY) {
            Now::Answered(answer) => answer,
            Now::Later(read) => self.get_selected_later(read).await,
        }
    }

    /// Reads one entity, or `None` if it does not exist (a missing table is still an error).
    pub async fn get_if_exists(&self, partition_key: &str, row_key: &str) -> Result<Option<Entity>> {
        if_exists(self.get(partition_key, row_key).await)
    }

    /// Reads only the `select`ed properties of one entity (keys, Timestamp and ETag always come).
    ///
    /// On the client of a typed table ([`TypedTable::untyped`](crate::TypedTable::untyped)),
    /// naming a property its type encrypts fails with
    /// [`Violation::SelectOfEncryptedProperty`] before any request.
    pub async fn get_with_select(
        &self,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
    ) -> Result<Entity> {
        select.map(|select| self.check_caller_select(select)).transpose()?;
        self.get_as(partition_key, row_key, select, Decode::ENTITY).await
    }

    /// [`get_with_select`](Self::get_with_select), the entity as read handed to `decode` (a
    /// typed decoder, see [`Decode`]).
    pub(crate) async fn get_as<T>(
        &self,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
        decode: Decode<T>,
    ) -> Result<T> {
        let select = select.map(|select| self.read_select(select)).transpose();
        self.get_selected_as(partition_key, row_key, select.as_ref().map(Option::as_ref), decode).await
    }

    /// [`get_as`](Self::get_as) with a `select` made by [`read_select`](Self::read_select)
    /// (once, for every read of a type), or the rule it broke. The checks run in the same
    /// order: the table name, the keys, then the select.
    pub(crate) async fn get_selected_as<T>(
        &self,
        partition_key: &str,
        row_key: &str,
        select: std::result::Result<Option<&Select>, &Violation>,
        decode: Decode<T>,
    ) -> Result<T> {
        match self.try_get_selected_as(partition_key, row_key, select, decode) {
            Now::Answered(answer) => answer,
            Now::Later(read) => self.get_selected_later(read).await,
        }
    }

    /// [`get_selected_as`](Self::get_selected_as)'s checks and, without an encryption policy,
    /// its first attempt, made now ([`Now`]); the rest of the read is
    /// [`get_selected_later`](Self::get_selected_later)'s.
    pub(crate) fn try_get_selected_as<'k, T>(
        &self,
        partition_key: &'k str,
        row_key: &'k str,
        select: std::result::Result<Option<&'k Select>, &Violation>,
        decode: Decode<T>,
    ) -> Now<T, PendingRead<'k, T>> {
        if let Err(error) = self.check_name() {
            return Now::Answered(Err(error));
        }
        let keys = match CheckedKeys::new(partition_key, row_key) {
            Ok(keys) => keys,
            Err(rule) => return Now::Answered(Err(Error::invalid(rule))),
        };
        let select = match select {
            Ok(select) => select,
            Err(rule) => return Now::Answered(Err(Error::invalid(rule.clone()))),
        };
        let first = match &self.encryption {
            None => match self.backend.try_get_as(&self.handle, keys, select, decode) {
                Now::Answered(answer) => return Now::Answered(answer),
                Now::Later(first) => first,
            },
            // Read as an `Entity` and decrypted before `decode` sees it: nothing tried now.
            Some(_) => None,
        };
        Now::Later(PendingRead { keys, select, decode, first })
    }

    /// The rest of a [`try_get_selected_as`](Self::try_get_selected_as) that went on `Later`.
    pub(crate) async fn get_selected_later<T>(&self, read: PendingRead<'_, T>) -> Result<T> {
        let PendingRead { keys, select, decode, first } = read;
        match &self.encryption {
            None => self.backend.get_as(&self.handle, keys, select, decode, first).await,
            // The fast path reads ciphertext; decrypt the entity first, then decode it.
            Some(_) => {
                let entity = self.backend.get_as(&self.handle, keys, select, Decode::ENTITY, first).await?;
                self.open_as(entity, decode).await
            }
        }
    }
}

/// A typed whole-entity write that [`TableClient::try_put`] could not answer now: the write,
/// checked, and its first attempt's error, if one was made.
pub(crate) struct PendingPut<'v, T> {
    put: Put<'v, T>,
    first: Option<Error>,
}

/// A point read that [`TableClient::try_get_selected_as`] could not answer now: its checked
/// keys and select, its decoder, and its first attempt's error, if one was made.
pub(crate) struct PendingRead<'k, T> {
    keys: CheckedKeys<'k>,
    select: Option<&'k Select>,
    decode: Decode<T>,
    first: Option<Error>,
}

/// The local checks of one operation: keys always, the whole entity for writes. The embedded
/// engine does not repeat them for the [`CheckedOperation`] this returns.
pub(crate) fn check_operation(operation: Operation) -> Result<CheckedOperation> {
    CheckedOperation::new(operation).map_err(Error::invalid)
}

impl TableClient {
    /// `select` as a read of this client sends it ([`with_system_properties`]), checked and
    /// prepared for the engine.
    ///
    /// [`with_system_properties`]: Self::with_system_properties
    pub(crate) fn read_select(&self, select: &[String]) -> std::result::Result<Select, Violation> {
        Select::new(self.with_system_properties(select))
    }

    /// The service returns only what `$select` lists; the SDK always needs the keys and the
    /// Timestamp (from which the ETag of a projected row is rebuilt), so they are added, and
    /// with an encryption policy the two metadata properties that decrypt the row.
    pub(crate) fn with_system_properties(&self, select: &[String]) -> Vec<String> {
        let mut out = select.to_vec();
        let encryption = match self.encryption {
            Some(_) => &crate::encryption::METADATA_PROPERTIES[..],
            None => &[],
        };
        for system in table_core::RESERVED_PROPERTY_NAMES.iter().chain(encryption) {
            if !out.iter().any(|s| s == system) {
                out.push((*system).to_owned());
            }
        }
        out
    }
}
