//! A typed async client for Azure Table Storage, the Cosmos DB Table API, Azurite, and an
//! embedded in-memory engine that behaves like the service.
//!
//! This page is a guide: read it top to bottom once, then use the items' own docs. Every
//! example runs on the embedded engine (`cargo test -p table-client --doc`), so they stay true.
//!
//! # The model
//!
//! - A **service** ([`TableServiceClient`]) is one storage account (or one embedded engine):
//!   it creates, lists and deletes tables.
//! - A **table** ([`TableClient`]) holds entities; it reads and writes untyped [`Entity`]
//!   values and runs [`Query`]s and [`Transaction`]s.
//! - A **typed table** ([`TypedTable<T>`], from [`TableClient::typed`]) reads and writes a
//!   `#[derive(TableEntity)]` struct, builds its keys from templates and keeps its declared
//!   indexes correct on every write.
//! - An **entity** is a `PartitionKey`, a `RowKey` and up to 252 typed properties
//!   ([`Value`]). The partition key decides what can be read and written together: a point
//!   read names both keys, a query is fast inside one partition, and a transaction stays inside
//!   one partition.
//!
//! ```rust
//! use table_client::{Entity, TableServiceClient};
//!
//! #[tokio::main]
//! async fn main() -> table_client::Result<()> {
//!     let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
//!     let table = service.create_table("Employees").await?;
//!     table.insert(Entity::new("Sales", "empid_000001").with("Name", "Ann").with("Age", 34)).await?;
//!     let ann = table.get("Sales", "empid_000001").await?;
//!     assert_eq!(ann.properties.len(), 2);
//!     Ok(())
//! }
//! ```
//!
//! # Backends and connection strings
//!
//! [`TableServiceClient::from_connection_string`] picks the backend: `UseDevelopmentStorage=true`
//! (Azurite), account keys (`DefaultEndpointsProtocol=..;AccountName=..;AccountKey=..`), an
//! explicit `TableEndpoint=..` (Cosmos DB), a `SharedAccessSignature=..`, or
//! `UseEmbeddedEngine=true` (a private in-memory engine). `UseEmbeddedEngine=true;Name=shared`
//! names an engine: every client opened with the same name in this process sees the same
//! tables (see [`engine::registry`]). [`TableServiceClient::builder`] takes the same choices
//! one by one, with a [`RetryPolicy`] and a timeout; [`TableServiceClient::embedded`] wraps an
//! [`engine::Engine`] you keep a handle to (for fault injection, below). The same program runs
//! unchanged on every backend. To hand out access to one table, or one key range of it,
//! without the account key, sign a shared access signature with [`auth::TableSasBuilder`]
//! (or [`auth::AccountSasBuilder`] for the whole account); a client holding the key signs a
//! ready URL with [`TableClient::generate_sas_url`] and
//! [`TableServiceClient::generate_account_sas_url`]. A table's stored access policies
//! ([`TableClient::set_access_policies`]) let such a SAS be revoked; the account's settings
//! are [`TableServiceClient::get_properties`] and [`TableServiceClient::get_statistics`].
//! Accounts that allow only Microsoft Entra ID take bearer tokens from an
//! [`auth::TokenCredential`] ([`TableServiceClient::with_token_credential`], or
//! [`TableServiceClientBuilder::token_credential`] beside an endpoint or an account's
//! connection string); the `azure-identity` feature adapts the official Azure SDK's
//! credentials (managed identity and the others) to it.
//!
//! ```rust
//! use table_client::TableServiceClient;
//!
//! #[tokio::main]
//! async fn main() -> table_client::Result<()> {
//!     let writer = TableServiceClient::from_connection_string("UseEmbeddedEngine=true;Name=guide")?;
//!     let reader = TableServiceClient::from_connection_string("UseEmbeddedEngine=true;Name=guide")?;
//!     writer.create_table("Shared").await?;
//!     reader.table("Shared").query().collect().await?; // the same engine: the table exists
//!     table_client::engine::registry::remove("guide");
//!     Ok(())
//! }
//! ```
//!
//! **Over HTTP**, the builder also sets what production traffic needs: an
//! [`application_id`](TableServiceClientBuilder::application_id) that prefixes the
//! `User-Agent` (`myapp azsdk-rust-table-client/<version> (<os>; <arch>)`), a
//! [`proxy`](TableServiceClientBuilder::proxy) or your own `reqwest::Client`
//! ([`http_client`](TableServiceClientBuilder::http_client)), and a [`LocationMode`] that lets
//! reads of a read-access geo-redundant account fall back to its secondary endpoint (writes
//! always go to the primary). Each call sends one `x-ms-client-request-id`, kept across its
//! retries and recorded in its `table_request` tracing span beside the service's request id;
//! a 429 or 503 that asks for a pause (`Retry-After`, in seconds or as a date) gets it, up to
//! the policy's maximum backoff.
//!
//! # Typed and untyped access
//!
//! `#[derive(TableEntity)]` maps a struct to an entity. Key templates build the keys from
//! fields (`{id:06}` zero-pads, `{at:inverted_ticks}` sorts newest first); `key_only` fields
//! live only in the keys. The derive generates a key constructor (`Employee::key(..)`), one
//! per key from its fields (`Employee::partition_key_for(..)`, which builds a composite
//! partition such as `"{region}_{store:04}"` for [`Query::partition`]), prefix and range helpers,
//! and a filter column per stored property (`Employee::AGE`). A key-only field that is its
//! whole key has a column too, filtering on that key (`Employee::DEPARTMENT.eq("Sales")` is
//! `PartitionKey eq 'Sales'`); one that shares its key has none, and using it is a compile
//! error that points to the key helpers. [`TypedTable::untyped`] reaches the same table
//! untyped, for what no type describes.
//!
//! Property names are the Rust field names unless renamed. Write
//! `#[table(rename_all = "PascalCase")]` to store `first_name` as `FirstName`: the design
//! guide's property names and .NET entity classes use PascalCase, so rows written by either
//! side read on the other. The quickstart (`examples/src/quickstart.rs`)
//! does this.
//!
//! Fields may be any integer from `i8` to `u64` (`i8`, `i16`, `u8`, `u16` and `i32` stored as
//! `Edm.Int32`, the others as `Edm.Int64`; every one can be in a key), `f64` or `f32` (as
//! `Edm.Double`; an `f32` reads only a double it holds exactly), `String`, `bool`,
//! `DateTime<Utc>`, `Uuid`, `Vec<u8>`, an `Option` of one, a unit-only enum deriving
//! [`PropertyValue`], or any serde type with `#[table(json)]`. A stored value that does not fit
//! its field (256 for a `u8`) is a read error naming the property, never a wrapped value; the
//! full mapping is the table on [`PropertyValue`].
//!
//! Types evolve: `#[table(entity_type = "Employee", version = 2, upgrade_from(1 = from_v1))]`
//! reads rows stored by version 1 through `fn from_v1(old: EmployeeV1) -> Employee` and writes
//! version 2; a row from a newer version is a clear error, never a wrong value (see
//! [`TableEntity`] for versions and enums over them).
//!
//! ```rust
//! use table_client::{IfMatch, TableEntity, TableServiceClient};
//!
//! #[derive(Debug, Clone, PartialEq, TableEntity)]
//! #[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
//! struct Employee {
//!     #[table(key_only)]
//!     department: String,
//!     #[table(key_only)]
//!     id: u32,
//!     first_name: String,
//!     age: i32,
//! }
//!
//! #[tokio::main]
//! async fn main() -> table_client::Result<()> {
//!     let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
//!     let table = service.create_table("Employees").await?;
//!     let employees = table.typed::<Employee>();
//!     let mut ann = Employee { department: "Sales".into(), id: 1, first_name: "Ann".into(), age: 34 };
//!     let etag = employees.insert(&ann).await?;
//!
//!     // The stored entity, seen untyped: PascalCase names, keys from the templates.
//!     let row = table.get("Sales", "empid_000001").await?;
//!     assert!(row.properties.contains_key("FirstName"));
//!
//!     // Optimistic concurrency: the replace applies only over the version read.
//!     ann.age = 35;
//!     employees.replace(&ann, IfMatch::ETag(etag)).await?;
//!     assert_eq!(employees.get(&Employee::key("Sales", 1)?).await?.age, 35);
//!     Ok(())
//! }
//! ```
//!
//! # Queries and streams
//!
//! [`TableClient::query`] and [`TypedTable::query`] start a [`Query`]: add conditions
//! ([`Query::partition`], [`Query::filter`] with typed columns, row-key prefixes and ranges),
//! [`Query::select`] properties, cap the results with [`Query::top`]. Run it as a stream of
//! items ([`Query::stream`]), of pages with their continuation ([`Query::pages`]), or
//! [`Query::collect`] it. The stream follows continuation tokens lazily, one page in memory
//! at a time; [`QueryStream`] is `Unpin`, so a plain `while let Some(x) = s.next().await`
//! works without pinning. A page's continuation, as a string, resumes the query later
//! ([`Query::resume`]), even in another process.
//!
//! Name the partition whenever you can: a query without a `PartitionKey` condition scans the
//! whole table. A typed query checks the keys it compares with against the type's templates
//! before any request: `.partition("Sales")` on a type whose partition key is
//! `"{region}_{store:04}"` could never match, and fails with
//! [`Violation::QueryKeyMismatch`] instead of returning nothing.
//!
//! ```rust
//! use futures::StreamExt;
//! use table_client::{Entity, TableServiceClient};
//!
//! #[tokio::main]
//! async fn main() -> table_client::Result<()> {
//!     let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
//!     let table = service.create_table("Orders").await?;
//!     for n in 0..5 {
//!         table.insert(Entity::new("cust1", format!("order_{n}")).with("Total", n * 10)).await?;
//!     }
//!     let mut big = table.query().partition("cust1").filter_str("Total ge 20").stream();
//!     let mut count = 0;
//!     while let Some(order) = big.next().await {
//!         let _order: Entity = order?;
//!         count += 1;
//!     }
//!     assert_eq!(count, 3);
//!     Ok(())
//! }
//! ```
//!
//! # Transactions
//!
//! A [`Transaction`] is an entity-group transaction: up to 100 operations on one partition,
//! applied all or none, by [`TableClient::submit_transaction`]. It writes entities exactly as
//! given: it does not maintain a typed table's indexes. [`TableClient::bulk`] splits any
//! number of operations into transactions by partition and reports each (not atomic across
//! transactions).
//!
//! For typed values, [`TypedTable::transaction`] starts a [`TypedTransaction`]: values of any
//! `TableEntity` types in one partition (an employee and its department's summary), written
//! all or none **with** the same-partition index rows they change, in the same transaction.
//! It reads the indexed values' stored entities first and retries on its own when a concurrent
//! writer got in between; the index rows count toward the 100 operations. Types with a
//! cross-partition index are refused (no transaction spans partitions): write those one at a
//! time through their [`TypedTable`].
//!
//! ```rust
//! use table_client::{Entity, TableServiceClient, Transaction};
//!
//! #[tokio::main]
//! async fn main() -> table_client::Result<()> {
//!     let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
//!     let table = service.create_table("Accounts").await?;
//!     let batch = Transaction::new()
//!         .insert(Entity::new("acct1", "balance").with("Amount", 100))
//!         .insert(Entity::new("acct1", "audit_0001").with("Change", 100));
//!     let outcomes = table.submit_transaction(batch).await?;
//!     assert_eq!(outcomes.len(), 2);
//!     Ok(())
//! }
//! ```
//!
//! # Indexes and their request cost
//!
//! A type declares secondary indexes (`#[table(index(..))]`, copies of the entity under
//! another key) and index entities (`#[table(lookup(..))]`, lists of the keys that share a
//! value); every typed write keeps them correct. The derive generates a handle per index, named
//! after it in upper case (`Employee::BY_EMAIL` for `name = "by_email"`), whose methods build
//! the index's keys from field values (`key(..)`, `partition_key_for(..)`, `row_key_prefix(..)`,
//! ..., as the type's own key helpers). [`TypedTable::get_by_index`] reads through a unique
//! index, [`TypedTable::query_index`] queries an index's rows, and [`TypedTable::lookup`] reads
//! every entity an index entity lists; each takes a handle, so an index name cannot be
//! misspelt.
//! [`TypedTable::verify_indexes`] and [`TypedTable::rebuild_indexes`] check and repair them.
//!
//! What a write costs depends on where the index rows live:
//!
//! - **Same partition** as the entity (the index template has no `partition_key`): the
//!   current rows are read, then the entity and its index rows go in one entity-group
//!   transaction, so a change of an indexed value moves the copy atomically. Measured on the
//!   embedded engine: a typed insert or a replace that moves the index row costs **2
//!   requests** (1 without indexes), 3 with an index entity (its list is read too).
//! - **Another partition**: no transaction spans partitions, so a typed write first records an
//!   intent in an outbox row, then writes the primary entity, then the index rows (each read
//!   and written conditionally), then deletes the intent. A crash in between leaves the
//!   intent, and [`TypedTable::drain`] finishes it. Measured on the embedded engine, a typed
//!   insert of a type with one cross-partition index costs **8 requests** and a replace that
//!   changes the indexed value **10** (the example below counts them). Prefer
//!   same-partition indexes for write-heavy types.
//!
//! ```rust
//! use table_client::engine::Engine;
//! use table_client::{EntityKey, IfMatch, TableEntity, TableServiceClient};
//!
//! #[derive(Debug, Clone, PartialEq, TableEntity)]
//! #[table(partition_key = "{department}", row_key = "empid_{id:06}", rename_all = "PascalCase")]
//! #[table(index(name = "by_email", partition_key = "email", row_key = "{email}"))]
//! struct Employee {
//!     #[table(key_only)]
//!     department: String,
//!     #[table(key_only)]
//!     id: u32,
//!     email: String,
//! }
//!
//! #[tokio::main]
//! async fn main() -> table_client::Result<()> {
//!     let engine = Engine::new();
//!     let service = TableServiceClient::embedded(engine.clone());
//!     let employees = service.create_table("Employees").await?.typed::<Employee>();
//!
//!     let before = engine.faults().calls();
//!     let ann = Employee { department: "Sales".into(), id: 1, email: "ann@contoso.com".into() };
//!     employees.insert(&ann).await?;
//!     assert_eq!(engine.faults().calls() - before, 8);
//!
//!     let key = Employee::BY_EMAIL.key("ann@contoso.com")?;
//!     assert_eq!(key, EntityKey::new("email", "ann@contoso.com"));
//!     let found: Employee = employees.get_by_index(Employee::BY_EMAIL, &key).await?;
//!     assert_eq!(found, ann);
//!
//!     // Changing the indexed value moves the index row: 10 requests.
//!     let before = engine.faults().calls();
//!     let moved = Employee { email: "ann.lee@contoso.com".into(), ..ann };
//!     employees.replace(&moved, IfMatch::Any).await?;
//!     assert_eq!(engine.faults().calls() - before, 10);
//!     assert!(employees.verify_indexes().await?.is_consistent());
//!     Ok(())
//! }
//! ```
//!
//! # Pattern helpers
//!
//! [`patterns`] implements the design guide's table designs: the log tail
//! ([`TypedTable::latest`] over an `inverted_ticks` row key), data series
//! ([`patterns::DataSeries`]: many values in one entity), wide entities
//! ([`patterns::WideTable`]: more than 252 properties over several rows), large entities
//! ([`patterns::LargeProperty`]: a value split over several properties), table rotation
//! ([`patterns::TableRotation`]: one table per day or month, dropped whole) and key ranges
//! ([`TypedTable::query_range`]). The first five each have an example on their own page.
//!
//! # Client-side encryption
//!
//! [`encryption`] encrypts the string properties an [`encryption::EncryptionPolicy`] names
//! before they leave the process, and decrypts them on read, set once with
//! [`TableServiceClientBuilder::encryption`]: the design guide's "Encrypting table data".
//! New writes use an authenticated format (AES-256-GCM, each value bound to its keys and
//! property); rows of the older .NET, Java and Python libraries (format "1.0") are read, and
//! written on request. The per-entity content key is wrapped by a key-encryption key (local
//! `A256KW` or `RSA-OAEP`, or a key store through [`encryption::KeyEncryptionKey`]), and
//! [`TableClient::rotate_encryption_key`] re-wraps those keys under a new one without touching
//! the values. Typed entities mark fields `#[table(encrypt)]`; every write path (single writes,
//! typed transactions, index copies, moves, wide and large entities) encrypts each row for its
//! own keys. Merges of encrypted properties are refused ([`TypedTable::update`] reads, changes
//! and replaces instead), as are filters and selects naming them; failures are
//! [`ErrorKind::Crypto`].
//!
//! # Offline tests
//!
//! Unit tests need no server: open `UseEmbeddedEngine=true` (or [`TableServiceClient::embedded`])
//! and run the code under test; the engine enforces the service's rules (keys, sizes, ETags,
//! transactions, continuation). Keep the [`engine::Engine`] handle to inject failures with
//! [`engine::Engine::faults`]: an injected 503 or timeout goes through the client's retry
//! policy exactly as a network failure would, so retry handling is tested offline too.
//!
//! ```rust
//! use std::num::NonZeroU64;
//! use std::time::Duration;
//! use table_client::engine::{Engine, FaultSpec};
//! use table_client::{Entity, ErrorKind, RetryPolicy, TableServiceClient};
//!
//! #[tokio::main]
//! async fn main() -> table_client::Result<()> {
//!     let engine = Engine::new();
//!     let service = TableServiceClient::builder()
//!         .engine(engine.clone())
//!         .retry(RetryPolicy::default().initial_backoff(Duration::from_millis(1)))
//!         .build()?;
//!     let table = service.create_table("Retried").await?;
//!
//!     // The next request is throttled once: the retry policy sends it again, and it succeeds.
//!     engine.faults().fail_call(NonZeroU64::MIN, FaultSpec::server_busy());
//!     table.insert(Entity::new("p", "r")).await?;
//!
//!     // Without retries the same fault surfaces.
//!     let once = TableServiceClient::builder().engine(engine.clone()).retry(RetryPolicy::none()).build()?;
//!     engine.faults().fail_call(NonZeroU64::MIN, FaultSpec::server_busy());
//!     let err = once.table("Retried").get("p", "r").await.unwrap_err();
//!     assert_eq!(err.kind(), ErrorKind::Throttled);
//!     Ok(())
//! }
//! ```
//!
//! # Errors
//!
//! Every call returns [`Result`]; an [`Error`] says what went wrong and where:
//!
//! - [`Error::kind`] is the [`ErrorKind`] to match on (`NotFound`, `AlreadyExists`,
//!   `PreconditionFailed`, `Ambiguous`, ...);
//! - [`Error::service_code`] gives the service's [`ErrorCode`] with its [`Origin`]: answered
//!   by the service, by the embedded engine (as the service would), or found locally before
//!   any request (a [`Violation`] of the service's rules, checked up front);
//! - [`Error::may_have_applied`] says a failed write may nevertheless be stored (see below).
//!
//! ```rust
//! use table_client::{Entity, ErrorKind, Origin, TableServiceClient};
//!
//! #[tokio::main]
//! async fn main() -> table_client::Result<()> {
//!     let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
//!     let table = service.create_table("Errors").await?;
//!     let missing = table.get("p", "nobody").await.unwrap_err();
//!     assert_eq!(missing.kind(), ErrorKind::NotFound);
//!     assert!(matches!(missing.service_code(), Some((_, Origin::Engine))));
//!
//!     // A key with `/` breaks a service rule: refused before any request.
//!     let refused = table.insert(Entity::new("p", "a/b")).await.unwrap_err();
//!     assert!(matches!(refused.service_code(), Some((_, Origin::Local))));
//!     assert!(!refused.may_have_applied());
//!     Ok(())
//! }
//! ```
//!
//! # Layout
//!
//! This crate is the facade: applications depend on it alone. The root holds the client
//! ([`TableServiceClient`], [`TableClient`], [`TypedTable`], [`Query`] and its [`QueryStream`],
//! [`Transaction`], ...) and, re-exported once and flat, table-core's data model ([`Entity`],
//! [`Value`], ...), errors, [`Filter`], batch [`Operation`]s, the service's limits, and the
//! checks a caller may run before a request (names, keys and whole entities).
//!
//! Namespaces:
//! - [`typed`]: the traits the derives implement, each beside its derive (`TableEntity`,
//!   `PropertyValue`), and the typed vocabulary around them; the root also re-exports the
//!   two pairs, as sqlx does, for `use table_client::TableEntity`;
//! - [`auth`]: credentials, shared access signatures and token credentials;
//! - [`connection_string`]: the forms a connection string takes, their parser, and the
//!   development-storage (Azurite) account, key and endpoint;
//! - [`encryption`]: client-side encryption (policy, formats, key-encryption keys);
//! - [`patterns`]: higher-level table designs (data series, large and wide entities, rotated
//!   tables);
//! - [`engine`], [`keys`], [`datetime`]: table-core's namespaces, as they are there.
//!
//! Hidden, not API: `wire` (the HTTP encoding, reachable for this crate's wire tests and
//! benches and the workspace's fuzzers) and `__private` (what the code the derives generate
//! calls).
//!
//! # Retries and ambiguous failures
//!
//! A client retries a failed request as its [`RetryPolicy`] says
//! ([`TableServiceClientBuilder::retry`]), on every backend: the embedded engine's injected
//! faults ([`engine::Engine::faults`]) stand for the same failures and go through the same
//! retries, markers and settling, so all of this can be tested offline. Two kinds of
//! failure differ:
//!
//! - The service did **not** process the request: it answered 408, 429 or 503, or the
//!   connection could not be established. Every request is retried.
//! - The attempt is **ambiguous**: the request may have reached the service and no
//!   trustworthy answer came back (a timeout or a connection dropped after the request was
//!   sent, a 500, 502 or 504). Reads and writes that are safe to send twice are retried:
//!   queries and gets, upserts, replaces, merges, deletes and table deletion. Inserts,
//!   entity-group transactions and table creation are **never replayed**: a second
//!   application would fail spuriously (409) or apply twice, so their ambiguous failure is
//!   returned at once.
//!
//! **"May have applied".** Every error of a write that had an ambiguous attempt carries
//! [`Error::may_have_applied`]: the service may have applied the write although the call
//! failed. So does a write whose success answer cannot be read (a `Decode` error). Reads
//! never carry it; an error without it means the write was not applied. The
//! stored state is unknown, so resolve it by reading: `get_if_exists` the entity (or every
//! entity of a transaction, which applied entirely or not at all) and compare it with what was
//! written. An insert found with the properties sent was most likely applied by the lost
//! attempt; retrying the insert blindly would fail with `AlreadyExists`.
//!
//! **Answers the SDK settles itself.** A retry can get an answer that only the lost attempt
//! may have caused; it is never reported as if the caller's condition had failed:
//!
//! - A delete whose retry finds no entity (404) **succeeds**: the entity is gone, as asked.
//!   Its retry failing an ETag condition (412) is an [`ErrorKind::Ambiguous`] error: the entity
//!   exists with another version, because another writer changed it first or because the lost
//!   attempt deleted it and someone wrote it again. `delete_table` settles a 404 the same way.
//! - `delete_if_exists` and `delete_table_if_exists` whose retry finds nothing return
//!   `Ambiguous`: the entity or table is gone, but whether it existed is unknown.
//! - A replace or merge whose retry fails its condition (412) or finds no entity (404) reads
//!   the entity back. When the stored entity shows this write it **succeeds** with the stored
//!   ETag; otherwise it is `Ambiguous` ("may have applied, and the entity has changed since",
//!   the 412 as its source). "Shows this write" is judged by content: for a replace, the
//!   stored properties equal exactly the properties sent; for a merge, every property sent is
//!   stored with the value sent. Its limit: an identical write by another writer in between
//!   cannot be told apart, which leaves the stored state as the caller asked.
//! - Typed writes of indexed types re-read and apply an unconditional change again (its
//!   effect is the same); an insert, or a write under the caller's own ETag, reports the
//!   ambiguity instead.
//!
//! **Contention.** Index maintenance, moves and wide entities read, then write conditionally,
//! and retry when a concurrent writer got in between. They never report a 412, 409 or 404 the
//! caller did not ask for: when the races do not stop within the contention budget, the error
//! is [`ErrorKind::Contention`] (marked "may have applied" when part of the write, such as the
//! primary entity, was already applied; an outbox intent then lets a drain finish the rest).

#![deny(missing_docs)]

pub mod auth;
pub mod connection_string;
pub mod encryption;
pub mod patterns;
pub mod typed;
#[doc(hidden)]
pub mod wire;

mod access_policy;
mod backend;
mod batch;
mod builder;
mod contention;
mod error;
mod index;
mod location;
mod markers;
mod moves;
mod outbox;
mod outcome;
mod proxy;
mod query;
mod retry;
mod sas_url;
mod service;
mod service_properties;
mod table;
mod typed_table;
mod typed_transaction;
mod user_agent;

pub use batch::{BulkReport, Transaction, TransactionReport};
pub use builder::TableServiceClientBuilder;
pub use index::IndexReport;
pub use location::LocationMode;
pub use query::{MAX_PAGE_SIZE, Query, QueryPage, QueryShape, QueryStream};
pub use retry::RetryPolicy;
pub use service::TableServiceClient;
pub use table::TableClient;
// The convenience pair (as sqlx re-exports `Encode` at its root); documented under `typed`.
#[doc(no_inline)]
pub use typed::{PropertyValue, TableEntity};
pub use typed_table::TypedTable;
pub use typed_transaction::TypedTransaction;

pub use table_core::{
    CompareOp, Continuation, ETag, EdmType, Entity, EntityKey, Error, ErrorCode, ErrorKind, Filter, IfMatch,
    KeyName, MAX_BATCH_BODY, MAX_BATCH_OPERATIONS, MAX_ENTITY_SIZE, MAX_FILTER_COMPARISONS,
    MAX_FILTER_NESTING, MAX_KEY_LEN, MAX_PROPERTIES, MAX_PROPERTY_NAME_LEN, MAX_PROPERTY_VALUE_SIZE,
    Operation, Origin, Properties, Result, Value, Violation, WriteOutcome, compare_ordinal, entity_size,
    validate_entity, validate_key, validate_property_name, validate_table_name,
};
// The account and table settings: stored access policies and the service's properties.
pub use table_core::{
    CORS_METHODS, CorsRule, GeoReplicationStatus, Logging, MAX_CORS_RULES, MAX_RETENTION_DAYS,
    MAX_SIGNED_IDENTIFIER_ID_LEN, MAX_SIGNED_IDENTIFIERS, Metrics, ServiceProperties, ServiceStatistics,
    SignedIdentifier,
};
pub use table_core::{datetime, engine, keys};

#[doc(hidden)]
pub use table_core::__private;

const _: () = {
    const fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync_clone::<TableServiceClient>();
    assert_send_sync_clone::<TableClient>();
    assert_send_sync_clone::<TypedTable<Entity>>();
    assert_send_sync_clone::<Query<Entity>>();

    // Streams are polled in place (`while let Some(x) = s.next().await`) and moved across tasks.
    const fn assert_unpin_send<T: Unpin + Send + 'static>() {}
    assert_unpin_send::<QueryStream<Entity>>();
    assert_unpin_send::<QueryStream<QueryPage<Entity>>>();
};
