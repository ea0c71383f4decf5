//! Typed access: a [`TypedTable<T>`] reads and writes `#[derive(TableEntity)]` values, builds
//! their keys from the key templates, selects exactly the properties `T` reads, and keeps the
//! indexes `T` declares up to date on every write (see the `index` module for the semantics).
//!
//! Typed reads (gets, queries, index copies) build no generic `Entity`: the backend
//! hands each entity as read (from the JSON body, or the engine's stored row) to
//! `TableEntity::from_parts`, which the derive generates beside `from_entity` with the same
//! checks and errors (see `table_core::typed`'s `decode` module). The exception is a client
//! with an encryption policy: each row is built as an `Entity` and decrypted in place (the key
//! unwrap is async, and the values change type), then handed to `from_parts`.
//!
//! Typed whole-entity writes (insert, replace, insert-or-replace) of a type without indexes
//! build no generic `Entity` on the embedded engine either: the value is prepared
//! (`TableEntity::prepare_write`: its keys and JSON text) and its properties handed straight to
//! the entity rules, then to the engine's row encoder (`TableEntity::write_through`), with the
//! errors and retries of the same write through `to_entity`. Merges (which combine
//! with the stored row), indexed types (whose index rows are batched as entities), HTTP and
//! clients that encrypt go through `to_entity`.
//!
//! Point reads and whole-entity writes on the embedded engine are answered without building a
//! future when they can be (see the backend's `Now`): their checks and first attempt run in
//! the public method's own body (`try_write_whole`, `TableClient::try_get_selected_as`), and
//! only a first attempt that fails, or a path that must wait (HTTP, encryption, indexes),
//! goes on through the async path (`write_whole_later`, `TableClient::get_selected_later`),
//! whose retry loop takes that attempt as its first.

use std::marker::PhantomData;

use table_core::engine::{PutKind, Select};
use table_core::typed::{LookupIndex, ReadEntity, SecondaryIndex, TableEntity};
use table_core::{
    ETag, EntityKey, ErrorCode, ErrorKind, Filter, IfMatch, Operation, Result, Violation, WriteOutcome,
};

use crate::backend::{Decode, Now};
use crate::contention;
use crate::error::{decode, invalid_input, refused};
use crate::index::{self, Change, IndexReport};
use crate::outcome::{if_exists, require_etag};
use crate::query::{Query, QueryStream};
use crate::table::{PendingPut, PendingRead, TableClient};

/// A table holding entities of type `T`. Cheap to clone.
///
/// Typed writes, reads and queries of a `#[derive(TableEntity)]` struct:
///
/// ```rust
/// use futures::StreamExt;
/// use table_client::{IfMatch, TableEntity, TableServiceClient};
///
/// #[derive(Debug, Clone, PartialEq, TableEntity)]
/// #[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
/// struct Employee {
///     #[table(key_only)]
///     department: String,
///     #[table(key_only)]
///     id: u32,
///     name: String,
///     age: i32,
/// }
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let employees = service.create_table("Employees").await?.typed::<Employee>();
/// let hire = |id, name: &str, age| Employee { department: "Sales".into(), id, name: name.into(), age };
///
/// let etag = employees.insert(&hire(1, "Ann", 34)).await?;
/// employees.insert_or_replace(&hire(2, "Bob", 28)).await?;
/// employees.replace(&hire(1, "Ann", 35), IfMatch::ETag(etag)).await?;
/// assert_eq!(employees.get(&Employee::key("Sales", 1)?).await?.age, 35);
/// assert!(employees.get_if_exists(&Employee::key("Sales", 9)?).await?.is_none());
///
/// // A typed query: `PartitionKey eq 'Sales' and Age gt 30`, streamed without pinning.
/// let mut over_30 = employees.query().partition("Sales").filter(Employee::AGE.gt(30)).stream();
/// while let Some(employee) = over_30.next().await {
///     assert_eq!(employee?.name, "Ann");
/// }
/// assert!(employees.delete_if_exists(&Employee::key("Sales", 2)?).await?);
/// # Ok(())
/// # }
/// ```
///
/// Index reads: a unique same-partition index (`get_by_index`, `query_index`) and an index
/// entity listing every employee with a last name (`lookup`). Both live in the employee's
/// partition, so each insert below is one entity-group transaction, after reading the current
/// rows: 3 requests. The derive generates a handle per index (`Employee::BY_EMAIL`,
/// `Employee::BY_LAST_NAME`) that builds its keys from field values and that the reads take,
/// so a misspelt index, or a lookup read as a secondary index, does not compile.
///
/// ```rust
/// use futures::TryStreamExt;
/// use table_client::{TableEntity, TableServiceClient};
///
/// #[derive(Debug, Clone, PartialEq, TableEntity)]
/// #[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
/// #[table(index(name = "by_email", row_key = "email_{email}"))]
/// #[table(lookup(name = "by_last_name", row_key = "lastname_{last_name}"))]
/// struct Employee {
///     #[table(key_only)]
///     department: String,
///     #[table(key_only)]
///     id: u32,
///     last_name: String,
///     email: String,
/// }
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let engine = table_client::engine::Engine::new();
/// let service = table_client::TableServiceClient::embedded(engine.clone());
/// let employees = service.create_table("Employees").await?.typed::<Employee>();
/// let jones = |id, email: &str| Employee {
///     department: "Sales".into(), id, last_name: "Jones".into(), email: email.into(),
/// };
/// let before = engine.faults().calls();
/// employees.insert(&jones(1, "ann@contoso.com")).await?;
/// assert_eq!(engine.faults().calls() - before, 3);
/// employees.insert(&jones(2, "ken@contoso.com")).await?;
///
/// // Index keys from field values, in template order: department, then email.
/// let key = Employee::BY_EMAIL.key("Sales", "ken@contoso.com")?;
/// let ken: Employee = employees.get_by_index(Employee::BY_EMAIL, &key).await?;
/// assert_eq!(ken.id, 2);
/// let emails: Vec<Employee> = employees
///     .query_index(Employee::BY_EMAIL)
///     .partition(&Employee::BY_EMAIL.partition_key_for("Sales")?)
///     .filter(Employee::BY_EMAIL.row_key_prefix()?.to_filter())
///     .collect()
///     .await?;
/// assert_eq!(emails.len(), 2);
/// let key = Employee::BY_LAST_NAME.key("Sales", "Jones")?;
/// let all_jones: Vec<Employee> = employees.lookup(Employee::BY_LAST_NAME, &key, 4).try_collect().await?;
/// assert_eq!(all_jones.len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TypedTable<T> {
    table: TableClient,
    /// What a point read of `T` selects, as sent (see [`TableClient::read_select`]), or the
    /// rule it breaks; `None` when `T` reads every property. Made once per handle: the
    /// names depend only on `T` and the client's encryption policy.
    select: Option<std::result::Result<Select, Violation>>,
    _entity: PhantomData<fn() -> T>,
}

impl<T> Clone for TypedTable<T> {
    fn clone(&self) -> Self {
        TypedTable { table: self.table.clone(), select: self.select.clone(), _entity: PhantomData }
    }
}

impl TableClient {
    /// Typed access to this table's entities of type `T`.
    pub fn typed<T: TableEntity>(&self) -> TypedTable<T> {
        let table = self.clone().with_encrypted(T::ENCRYPTED_PROPERTIES);
        let select = select_of::<T>().map(|select| table.read_select(&select));
        TypedTable { table, select, _entity: PhantomData }
    }
}

impl<T: TableEntity + Send + 'static> TypedTable<T> {
    /// The untyped client of the same table. With an encryption policy, its writes still
    /// encrypt the `#[table(encrypt)]` properties of `T`.
    pub fn untyped(&self) -> &TableClient {
        &self.table
    }

    /// `true` when writes must maintain index rows.
    fn indexed() -> bool {
        !T::indexes().is_empty()
    }

    async fn indexed_write(&self, change: Change) -> Result<ETag> {
        require_etag(index::apply::<T>(&self.table, change).await?.and_then(|written| written.etag))
    }

    /// Writes `value` whole, as `kind` says: for an indexed type, with its index rows (see the
    /// `index` module); otherwise through its [`TableEntity::write_through`] when the client
    /// stores it without building an `Entity` (see [`TableClient::puts_through`]) and the type
    /// writes through a sink, else as `to_entity`. What can be done now is ([`Now`]): the
    /// checks and the first attempt of a write through; the rest is
    /// [`write_whole_later`](Self::write_whole_later)'s.
    fn try_write_whole<'v>(&self, value: &'v T, kind: PutKind) -> Now<ETag, WholeWrite<'v, T>> {
        if Self::indexed() || !self.table.puts_through() {
            return Now::Later(WholeWrite::AsEntity(kind));
        }
        match value.prepare_write() {
            Ok(Some(prepared)) => match self.table.try_put(kind, value, prepared) {
                Now::Answered(answer) => Now::Answered(answer),
                Now::Later(pending) => Now::Later(WholeWrite::Through(pending)),
            },
            Ok(None) => Now::Later(WholeWrite::AsEntity(kind)),
            Err(error) => Now::Answered(Err(error)),
        }
    }

    /// The rest of a [`try_write_whole`](Self::try_write_whole) that went on `Later`.
    async fn write_whole_later(&self, value: &T, later: WholeWrite<'_, T>) -> Result<ETag> {
        let kind = match later {
            WholeWrite::Through(pending) => return self.table.put_later(pending).await,
            WholeWrite::AsEntity(kind) => kind,
        };
        let entity = value.to_entity()?;
        if Self::indexed() {
            let change = match kind {
                PutKind::Insert => Change::Insert(entity),
                PutKind::Replace(if_match) => Change::Replace(entity, if_match),
                PutKind::InsertOrReplace => Change::InsertOrReplace(entity),
            };
            return self.indexed_write(change).await;
        }
        match kind {
            PutKind::Insert => self.table.insert(entity).await,
            PutKind::Replace(if_match) => self.table.replace(entity, if_match).await,
            PutKind::InsertOrReplace => self.table.insert_or_replace(entity).await,
        }
    }

    // Insert, replace and insert-or-replace each match on what `try_write_whole` answers now,
    // rather than await a shared `async fn` doing so: that future, which holds the retry
    // loop's, would be set up on every call (a typed insert 4,133.7 rather than 4,108.6
    // instructions, ops_probe `probe_inserts`).

    /// Inserts `value`; `AlreadyExists` if its key (or a unique same-partition index key) is
    /// taken. Returns the new ETag.
    pub async fn insert(&self, value: &T) -> Result<ETag> {
        match self.try_write_whole(value, PutKind::Insert) {
            Now::Answered(answer) => answer,
            Now::Later(later) => self.write_whole_later(value, later).await,
        }
    }

    /// Replaces the stored entity with `value`, if it matches `if_match`.
    pub async fn replace(&self, value: &T, if_match: IfMatch) -> Result<ETag> {
        match self.try_write_whole(value, PutKind::Replace(if_match)) {
            Now::Answered(answer) => answer,
            Now::Later(later) => self.write_whole_later(value, later).await,
        }
    }

    /// Merges `value`'s stored properties into the stored entity, if it matches `if_match`
    /// (`None` fields are left as they are).
    ///
    /// A type with `#[table(encrypt)]` fields is never merged: the call fails with
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before any request (see
    /// [`EncryptionPolicy`](crate::encryption::EncryptionPolicy)); change it with
    /// [`update`](Self::update) instead, which reads the value, changes it, and replaces it
    /// with its ETag.
    pub async fn merge(&self, value: &T, if_match: IfMatch) -> Result<ETag> {
        refuse_encrypted_merge::<T>(self.table.name())?;
        if Self::indexed() {
            return self.indexed_write(Change::Merge(value.to_entity()?, if_match)).await;
        }
        self.table.merge(value.to_entity()?, if_match).await
    }

    /// Inserts `value` or replaces whatever has its key.
    pub async fn insert_or_replace(&self, value: &T) -> Result<ETag> {
        match self.try_write_whole(value, PutKind::InsertOrReplace) {
            Now::Answered(answer) => answer,
            Now::Later(later) => self.write_whole_later(value, later).await,
        }
    }

    /// Inserts `value` or merges it into whatever has its key. Refused for a type with
    /// `#[table(encrypt)]` fields, as [`merge`](Self::merge) is.
    pub async fn insert_or_merge(&self, value: &T) -> Result<ETag> {
        refuse_encrypted_merge::<T>(self.table.name())?;
        if Self::indexed() {
            return self.indexed_write(Change::InsertOrMerge(value.to_entity()?)).await;
        }
        self.table.insert_or_merge(value.to_entity()?).await
    }

    /// Deletes the entity with `key` (and its index rows), if it matches `if_match`.
    pub async fn delete(&self, key: &EntityKey, if_match: IfMatch) -> Result<()> {
        if Self::indexed() {
            return index::apply::<T>(&self.table, Change::Delete(key.clone(), if_match)).await.map(drop);
        }
        self.table.delete(&key.partition_key, &key.row_key, if_match).await
    }

    /// Deletes the entity with `key` if it exists; returns whether it existed.
    ///
    /// For a type without indexes, `Ambiguous` when an attempt's answer was lost and the retry
    /// found nothing (see [`TableClient::delete_if_exists`]); an indexed type reads the entity
    /// first, so then it answers `true`: the entity existed when the call began, and is gone.
    pub async fn delete_if_exists(&self, key: &EntityKey) -> Result<bool> {
        if Self::indexed() {
            return Ok(index::apply::<T>(&self.table, Change::DeleteIfExists(key.clone())).await?.is_some());
        }
        self.table.delete_if_exists(&key.partition_key, &key.row_key).await
    }

    /// Reads the entity with `key`, applies `change` to the value, and replaces the entity with
    /// the changed value under the ETag it was read with; returns the new ETag. This is the
    /// read-modify-write that stands in for [`merge`](Self::merge), and the way to change a
    /// type with `#[table(encrypt)]` fields, which cannot be merged. It works for any type.
    ///
    /// When another writer changes the entity in between (the replace fails its condition), it
    /// reads again and applies `change` to the new value, within the client's contention budget
    /// (the same as index maintenance and moves use). So `change` may run more than once, each
    /// time on the value just read: make it depend on that value only. The entity is replaced
    /// whole: properties `T` does not read (a projection's missing fields) are removed, as by
    /// [`replace`](Self::replace); indexes are kept up to date as on every typed write.
    ///
    /// Errors, in the order met: those of the read (`NotFound` when no entity has `key`,
    /// decryption errors); `NotFound` when the entity was deleted before the replace; those of
    /// the replace; [`ErrorKind::Contention`](crate::ErrorKind::Contention) when concurrent
    /// writers changed the entity before each of the attempts the budget allows (nothing was
    /// written). As for every write, an error with
    /// [`may_have_applied`](crate::Error::may_have_applied) (an
    /// [`ErrorKind::Ambiguous`](crate::ErrorKind::Ambiguous) one when the entity has changed
    /// since) means the changed value may be stored: read it to know; such an attempt is never
    /// repeated blindly.
    ///
    /// ```rust
    /// use table_client::encryption::{AesKeyWrap, EncryptionPolicy};
    /// use table_client::{TableEntity, TableServiceClient};
    ///
    /// #[derive(Debug, Clone, PartialEq, TableEntity)]
    /// #[table(partition_key = "{team}", row_key = "{id}", rename_all = "PascalCase")]
    /// struct Patient {
    ///     #[table(key_only)]
    ///     team: String,
    ///     #[table(key_only)]
    ///     id: u32,
    ///     #[table(encrypt)]
    ///     diagnosis: String,
    ///     visits: i32,
    /// }
    ///
    /// # #[tokio::main]
    /// # async fn main() -> table_client::Result<()> {
    /// let policy = EncryptionPolicy::new(AesKeyWrap::new("local:key1", [7; 32]));
    /// let service = TableServiceClient::builder()
    ///     .connection_string("UseEmbeddedEngine=true")
    ///     .encryption(policy)
    ///     .build()?;
    /// let patients = service.create_table("Patients").await?.typed::<Patient>();
    /// let ann = Patient { team: "ward1".into(), id: 7, diagnosis: "flu".into(), visits: 1 };
    /// patients.insert(&ann).await?;
    ///
    /// // A merge of an encrypted type is refused; `update` reads, changes and replaces.
    /// let key = Patient::key("ward1", 7)?;
    /// patients.update(&key, |p| p.visits += 1).await?;
    /// assert_eq!(patients.get(&key).await?.visits, 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn update(&self, key: &EntityKey, mut change: impl FnMut(&mut T)) -> Result<ETag> {
        let select = select_of::<T>();
        // The budget's loop written out (as index maintenance does): `contention::retry_races`
        // takes a step closure, which cannot lend `change` to the future it returns.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let read = self.table.get_as(
                &key.partition_key,
                &key.row_key,
                select.as_deref(),
                Decode::new(T::PROPERTY_SLOTS, with_etag::<T>),
            );
            let (mut value, etag) = read.await?;
            // Never an unconditional replace: it could overwrite a concurrent change.
            let etag = etag.ok_or_else(|| {
                decode(format!("entity {key} in table {} was read without an ETag", self.table.name()))
            })?;
            change(&mut value);
            match self.replace(&value, IfMatch::ETag(etag)).await {
                // Not applied: another writer changed the entity since it was read.
                Err(e) if e.kind() == ErrorKind::PreconditionFailed && !e.may_have_applied() => {
                    if attempts == contention::MAX_ATTEMPTS {
                        let subject = format!("update of entity {key} in table {}", self.table.name());
                        return Err(contention::contention(
                            &subject,
                            u32::try_from(attempts).unwrap_or(u32::MAX),
                            e,
                        ));
                    }
                    contention::backoff(attempts - 1).await;
                }
                result => return result,
            }
        }
    }

    /// Reads the entity with `key`; `NotFound` if missing.
    pub async fn get(&self, key: &EntityKey) -> Result<T> {
        // Answered here rather than by awaiting a shared `async fn`, as `insert` is.
        match self.try_get(key) {
            Now::Answered(answer) => answer,
            Now::Later(read) => self.table.get_selected_later(read).await,
        }
    }

    /// Reads the entity with `key`, or `None` if it does not exist.
    pub async fn get_if_exists(&self, key: &EntityKey) -> Result<Option<T>> {
        if_exists(match self.try_get(key) {
            Now::Answered(answer) => answer,
            Now::Later(read) => self.table.get_selected_later(read).await,
        })
    }

    /// A point read of `key`, selecting what `T` reads: its checks and first attempt, made
    /// now ([`Now`]); the rest is [`TableClient::get_selected_later`]'s.
    fn try_get<'a>(&'a self, key: &'a EntityKey) -> Now<T, PendingRead<'a, T>> {
        let select = self.select.as_ref().map(|select| select.as_ref()).transpose();
        self.table.try_get_selected_as(&key.partition_key, &key.row_key, select, Decode::of())
    }

    /// A query returning `T`s, selecting exactly the properties `T` reads. For an indexed
    /// type, index rows and outbox intents sharing the table are left out.
    ///
    /// A query that does not bound the PartitionKey reads the whole table: it must say so with
    /// [`Query::table_scan`], or its first poll fails before any request (see [`Query`]).
    pub fn query(&self) -> Query<T> {
        let mut query = Query::new(self.table.clone(), Decode::of()).scans_on_request();
        if let Some(templates) = T::key_templates() {
            query = query.keys_follow(templates);
        }
        if let Some(select) = T::select() {
            query = query.select_for_type(select);
        }
        if Self::indexed() {
            // Every string is >= '', so this is false exactly on the rows that carry `_Index`.
            query = query.filter(!Filter::ge(index::INDEX_PROPERTY, ""));
        }
        query
    }

    /// Runs one untyped write operation (no index maintenance).
    pub async fn execute(&self, operation: Operation) -> Result<WriteOutcome> {
        self.table.execute(operation).await
    }

    /// Reads, as `R` (`T` or a projection of it), the copy stored under `key` by the secondary
    /// index `index` (a handle such as `Employee::BY_EMAIL`, whose `key(..)` builds `key`).
    /// Copies of cross-partition indexes are eventually consistent.
    ///
    /// Errors: [`Violation::QueryKeyMismatch`](table_core::Violation::QueryKeyMismatch),
    /// before any request, when `key` cannot be a key of the index's templates; `NotFound`
    /// when no copy of `index` is stored there (as [`query_index`](Self::query_index), a row
    /// not marked as one, such as another index's, is not returned).
    pub async fn get_by_index<R: TableEntity, I: SecondaryIndex<Entity = T>>(
        &self,
        index: I,
        key: &EntityKey,
    ) -> Result<R> {
        let def = index.def();
        def.key_templates().check_key(key)?;
        let (pk, rk) = (&key.partition_key, &key.row_key);
        let read = self
            .table
            .get_as(pk, rk, None, Decode::new(R::PROPERTY_SLOTS, index::read_marked_copy::<R>))
            .await?;
        if read.index.as_deref() != Some(def.name) {
            let message = format!("the row there is not a copy of index `{}`", def.name);
            return Err(
                refused(ErrorCode::ResourceNotFound, message).about(self.table.name(), Some((pk, rk)))
            );
        }
        read.copy
    }

    /// A query over the copies of the secondary index `index` (a handle such as
    /// `Employee::BY_EMAIL`), read as `R`; narrow it with the query's key filters, built with
    /// the handle's key helpers (`.partition(&Employee::BY_EMAIL.partition_key_for(..)?)`,
    /// `Employee::BY_EMAIL.row_key_prefix(..)`). The keys it compares with are checked
    /// against the index's templates, and, like [`TypedTable::query`], reading the copies of
    /// every partition needs [`Query::table_scan`].
    pub fn query_index<R: TableEntity + Send + 'static, I: SecondaryIndex<Entity = T>>(
        &self,
        index: I,
    ) -> Query<R> {
        let def = index.def();
        Query::new(self.table.clone(), Decode::new(R::PROPERTY_SLOTS, index::read_copy::<R>))
            .scans_on_request()
            .keys_follow(def.key_templates())
            .filter(Filter::eq(index::INDEX_PROPERTY, def.name))
    }

    /// The entities listed by the index entity of `index` (a handle such as
    /// `Employee::BY_LAST_NAME`) stored at `key` (built with the handle's `key(..)`), fetched
    /// up to `concurrency` at a time (0 counts as 1). When `key` cannot be a key of the index's
    /// templates, the first poll fails with
    /// [`Violation::QueryKeyMismatch`](table_core::Violation::QueryKeyMismatch) before any
    /// request.
    pub fn lookup<I: LookupIndex<Entity = T>>(
        &self,
        index: I,
        key: &EntityKey,
        concurrency: usize,
    ) -> QueryStream<T> {
        index::lookup_stream::<T>(self.table.clone(), index.def().key_templates(), key.clone(), concurrency)
    }

    /// Finishes the cross-partition index work that crashed writers left in the outbox; returns
    /// how many intents were finished.
    pub async fn drain(&self) -> Result<usize> {
        index::drain_index_intents::<T>(&self.table).await
    }

    /// Compares the table's index rows with a clean rebuild from its `T` primaries (a full
    /// table scan: for tests and audits).
    pub async fn verify_indexes(&self) -> Result<IndexReport> {
        index::verify::<T>(&self.table).await
    }

    /// Drains pending intents, then makes the index rows equal a clean rebuild from the `T`
    /// primaries (for an index added to existing data, or rows written around the SDK). A full
    /// table scan; run it while no other writer changes `T`. Returns what it found before the
    /// repair.
    pub async fn rebuild_indexes(&self) -> Result<IndexReport> {
        index::rebuild::<T>(&self.table).await
    }
}

/// The value of an entity as read, with the ETag it was read with.
fn with_etag<T: TableEntity>(read: ReadEntity<'_>) -> Result<(T, Option<ETag>)> {
    let etag = read.etag.clone();
    Ok((T::from_parts(read)?, etag))
}

fn select_of<T: TableEntity>() -> Option<Vec<String>> {
    T::select().map(|names| names.iter().map(|s| (*s).to_owned()).collect())
}

/// Refuses a merge of a type with `#[table(encrypt)]` fields into `table`: the stored row
/// lists its encrypted properties in its metadata under its own content key, which a merge
/// would replace and leave the other encrypted properties unreadable.
pub(crate) fn refuse_encrypted_merge<T: TableEntity>(table: &str) -> Result<()> {
    match T::ENCRYPTED_PROPERTIES {
        [] => Ok(()),
        properties => Err(invalid_input(format!(
            "merge of a `{}` into table {table}: its properties {} are encrypted (`#[table(encrypt)]`), \
             and an encrypted entity cannot be merged: the stored row lists its encrypted properties in \
             its metadata, under its own content key, which a merge would replace and leave the other \
             encrypted properties unreadable; read the value, change it, and replace it with its ETag \
             instead: `TypedTable::update` does so, retrying when another writer got in between",
            std::any::type_name::<T>(),
            properties.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// A whole-entity write that [`TypedTable::try_write_whole`] could not answer now.
enum WholeWrite<'v, T> {
    /// A write through the value's sink, checked, whose first attempt was made or is due.
    Through(PendingPut<'v, T>),
    /// A write of the value's `Entity`, of this kind: nothing done yet.
    AsEntity(PutKind),
}
