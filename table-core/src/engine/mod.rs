//! The embedded engine: an in-process implementation of the Table service's data plane that
//! behaves like the real service (protocol doc sections 5-9), for tests and embedded use.
//!
//! [`Engine`] is a cheap `Clone` handle over shared state; clones see the same tables. Each
//! public method is one service request: it validates its input in the service's order
//! (request shape, keys, values and sizes, then table existence, then entity existence and
//! `If-Match`), then takes effect atomically or not at all. Every write gets a new, strictly
//! increasing `Timestamp` (100 ns resolution, UTC) and the ETag derived from it.
//!
//! As a test tool it can shrink pages and split them at partition boundaries
//! ([`EngineOptions`]), and fail chosen requests deterministically ([`Faults`]). Engines can
//! be shared by name across a process through the [`registry`].
//!
//! Module map: `catalog` (tables), `table` (rows and per-entity write rules), `row` (the
//! stored form of an entity, its filter lookups and `$select` projection), `select` (a
//! `$select` list checked and sorted once), `put` (a typed value written whole),
//! `query` (key ranges, page scans, continuation tokens), `batch` (all-or-nothing
//! transactions), `order` (UTF-16 ordinal key order), `row_index` (rows hashed by key, for
//! point reads), `clock` (timestamps), `faults`,
//! `options`, `registry` (named engines), `journal` (the hook that hears every change, for
//! persistence, and the changes it hears).

mod batch;
mod catalog;
mod clock;
mod faults;
mod journal;
mod options;
mod order;
mod put;
mod query;
pub mod registry;
mod row;
mod row_index;
mod select;
mod table;

use std::borrow::Borrow;
use std::fmt;
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

#[doc(hidden)]
pub use crate::value::ValueRef;
#[doc(hidden)]
pub use catalog::TableHandle;
pub use faults::{FaultSpec, FaultTiming, Faults, InjectedError};
#[doc(hidden)]
pub use journal::{Change, Journal, RowChange};
pub use options::{DEFAULT_MAX_PAGE_SIZE, EngineOptions};
#[doc(hidden)]
pub use put::{Put, PutKind};
pub(crate) use row::RowReader;
#[doc(hidden)]
pub use row::RowView;
pub use select::Select;

use self::catalog::Catalog;
use self::clock::Clock;
use self::query::{KeyPlan, PageLimits};
use self::row::{Row, RowSize};
use self::table::{EntityWrite, Requires, RowWrite, Stores, Storing};
use crate::access_policy::{SignedIdentifier, validate_signed_identifiers};
use crate::batch::{CheckedOperation, Operation, WriteOutcome, validate_if_match, validate_operation};
use crate::entity::{Entity, EntityKey, IfMatch};
use crate::error::{Error, ErrorCode, KeyName, Origin, Result, Violation};
use crate::query::{Continuation, Page, QueryRequest, TablePage, TableQuery};
use crate::service_properties::{
    CorsRule, GeoReplicationStatus, ServiceProperties, ServiceStatistics, validate_service_properties,
};
use crate::typed::{Decoder, TableEntity};
use crate::validate::{validate_entity, validate_entity_with, validate_key};

/// Largest `$top` the service accepts.
const MAX_TOP: u32 = 1000;

/// An in-memory Table service. Cheap to clone; clones share the same tables. `Send + Sync`.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Shared>,
}

struct Shared {
    options: EngineOptions,
    catalog: Catalog,
    clock: Clock,
    faults: Faults,
    // A `Mutex`: the settings are read and replaced whole, rarely, by short critical sections.
    properties: Mutex<ServiceProperties>,
    /// Hears every change before it is applied, once set ([`Engine::set_journal`]).
    journal: OnceLock<Arc<dyn Journal>>,
}

const _: () = {
    const fn assert_handle<T: Send + Sync + Clone + 'static>() {}
    assert_handle::<Engine>();
};

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("options", &self.inner.options)
            .field("calls", &self.inner.faults.calls())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An empty engine with the default options (the plain service behaviour).
    pub fn new() -> Engine {
        Engine::with_options(EngineOptions::default())
    }

    /// An empty engine with `options`.
    pub fn with_options(options: EngineOptions) -> Engine {
        Engine {
            inner: Arc::new(Shared {
                options,
                catalog: Catalog::default(),
                clock: Clock::default(),
                faults: Faults::default(),
                properties: Mutex::new(ServiceProperties::service_defaults()),
                journal: OnceLock::new(),
            }),
        }
    }

    /// The options the engine was built with.
    pub fn options(&self) -> &EngineOptions {
        &self.inner.options
    }

    /// The fault-injection plan (see [`Faults`]).
    pub fn faults(&self) -> &Faults {
        &self.inner.faults
    }

    /// Creates a table. Errors: an invalid name (`InvalidResourceName`, `OutOfRangeInput`),
    /// 409 `TableAlreadyExists` when a table of that name exists in any case, 409
    /// `TableBeingDeleted` during the optional deleted-table cooldown.
    pub fn create_table(&self, name: &str) -> Result<()> {
        self.serve(|s| {
            if s.create_table(name)? { Ok(()) } else { Err(Error::service(ErrorCode::TableAlreadyExists)) }
        })
        .map_err(|e| e.about(name, None))
    }

    /// Creates a table unless one of that name exists; `true` when it was created. Errors as
    /// [`create_table`](Self::create_table) except `TableAlreadyExists`.
    pub fn create_table_if_not_exists(&self, name: &str) -> Result<bool> {
        self.serve(|s| s.create_table(name))
    }

    /// Deletes a table and all its entities. Errors: an invalid name, 404 `ResourceNotFound`.
    pub fn delete_table(&self, name: &str) -> Result<()> {
        self.serve(|s| {
            let record = || s.record(|| Change::DeleteTable(name.to_owned()));
            s.catalog.delete(name, s.options.deleted_table_cooldown, record)
        })
        .map_err(|e| e.about(name, None))
    }

    /// One page of table names, in case-insensitive name order, filtered on the `TableName`
    /// property. The page holds at most `min(top, max_page_size)` names; `next_table_name` is
    /// the next matching name, present exactly when one exists. Errors: `$top` outside
    /// 1..=1000, a filter over 15 comparisons, a malformed `NextTableName` (all 400
    /// `InvalidInput`).
    pub fn query_tables(&self, query: &TableQuery) -> Result<TablePage> {
        self.serve(|s| {
            let size = s.page_size(query.top)?;
            if let Some(filter) = &query.filter {
                filter.check_limits()?;
            }
            let (tables, next_table_name) =
                s.catalog.list(query.filter.as_ref(), query.next_table_name.as_deref(), size)?;
            Ok(TablePage { tables, next_table_name })
        })
    }

    /// Reads one entity, with its timestamp and ETag. With `select`, only the listed custom
    /// properties are returned (absent ones stay absent); keys, timestamp and ETag always are.
    /// Errors: invalid keys (400), a `select` entry that is not a property name
    /// ([`Violation::SelectEntry`], 400), 404 `TableNotFound`, 404 `ResourceNotFound`.
    pub fn get(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
    ) -> Result<Entity> {
        self.get_as(table, partition_key, row_key, select, Decoder::ENTITY)
    }

    /// [`get`](Self::get), the stored row handed to `decode` (a typed decoder, see
    /// [`Decoder`]: read straight from the row's bytes when it has a reader, else with its
    /// properties laid out by its slots) instead of becoming an [`Entity`]; `decode`'s error
    /// is the answer's.
    #[doc(hidden)]
    pub fn get_as<T>(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
        decode: Decoder<T>,
    ) -> Result<T> {
        let (row, select) = self.find(table, partition_key, row_key, select)?;
        row.decode(select.as_ref(), decode)
    }

    /// [`get`](Self::get), the stored row handed to `read` as it is stored (a [`RowView`],
    /// projected by `select`) instead of becoming an [`Entity`]: for a caller that writes the
    /// row out, so that it copies nothing it does not write. Errors are [`get`](Self::get)'s.
    #[doc(hidden)]
    pub fn get_row<T>(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
        read: impl FnOnce(RowView<'_>) -> T,
    ) -> Result<T> {
        let (row, select) = self.find(table, partition_key, row_key, select)?;
        Ok(read(RowView::new(&row, select.as_ref())))
    }

    /// The stored row a point read names and its checked `select`; the errors are
    /// [`get`](Self::get)'s.
    fn find(
        &self,
        table: &str,
        partition_key: &str,
        row_key: &str,
        select: Option<&[String]>,
    ) -> Result<(Row, Option<Select>)> {
        // In the service's order: the keys, the select, then the table and the entity.
        self.serve(|s| {
            let keys = CheckedKeys::new(partition_key, row_key).map_err(Error::invalid)?;
            let select =
                select.map(|select| Select::new(select.to_vec())).transpose().map_err(Error::invalid)?;
            Ok((s.find_row(table, keys)?, select))
        })
        .map_err(|e| e.about(table, Some((partition_key, row_key))))
    }

    /// [`get_as`](Self::get_as) of keys the caller checked ([`CheckedKeys::new`]) with a
    /// `select` it prepared once ([`Select::new`] checked it), so that repeated reads neither
    /// check the keys again nor check and sort the projection again. Errors: 404
    /// `TableNotFound`, 404 `ResourceNotFound`, then `decode`'s.
    #[doc(hidden)]
    pub fn get_selected_as<T>(
        &self,
        table: &str,
        keys: CheckedKeys<'_>,
        select: Option<&Select>,
        decode: Decoder<T>,
    ) -> Result<T> {
        let row = self
            .serve(|s| s.find_row(table, keys))
            .map_err(|e| e.about(table, Some((keys.partition_key(), keys.row_key()))))?;
        row.decode(select, decode)
    }

    /// [`get_selected_as`](Self::get_selected_as) of the table a [`TableHandle`] names: the
    /// table it found before while that table lives, else the table its name finds now (see
    /// [`TableHandle`]). Same answers and errors.
    #[doc(hidden)]
    pub fn get_selected_in<T>(
        &self,
        table: &TableHandle,
        keys: CheckedKeys<'_>,
        select: Option<&Select>,
        decode: Decoder<T>,
    ) -> Result<T> {
        let row = self
            .serve(|s| s.catalog.read_in(table, |data| Shared::row(data, keys))?)
            .map_err(|e| e.about(table.name(), Some((keys.partition_key(), keys.row_key()))))?;
        row.decode(select, decode)
    }

    /// Runs one write. Errors, in the order checked: the entity or keys break a rule (400 with
    /// the rule's code), a malformed `If-Match` ETag (400 `InvalidInput`), 404
    /// `TableNotFound`, then 409 `EntityAlreadyExists` (insert), 404 `ResourceNotFound`
    /// (replace, merge, delete of a missing entity) or 412 `UpdateConditionNotSatisfied`.
    ///
    /// Takes the operation by value or by reference: the engine copies what it stores, so a
    /// caller that may send the same operation again (a retry) keeps it without a clone.
    pub fn execute(&self, table: &str, operation: impl Borrow<Operation>) -> Result<WriteOutcome> {
        let operation = operation.borrow();
        // A write of an entity runs as the single-entity write that says the same (which sizes
        // a whole entity's row as it checks it); a delete as the operation.
        match operation.stores() {
            Some(Stores::Entity(entity)) => self.write_entity(table, entity, operation.requires(), false),
            Some(Stores::Merged(entity)) => self.write_entity(table, entity, operation.requires(), true),
            Some(Stores::Sized { .. }) | None => {
                self.write(WriteTarget::Name(table), || validate_operation(operation).map(|()| operation))
            }
        }
    }

    /// [`execute`](Self::execute) of an operation that already passed the entity and key
    /// checks: the rest runs as there, in the same order, with the same errors.
    pub fn execute_checked(&self, table: &str, operation: &CheckedOperation) -> Result<WriteOutcome> {
        self.write(WriteTarget::Name(table), || Ok(operation.operation()))
    }

    /// Stores a typed value whole ([`Put`], checked when it was made) in the table a
    /// [`TableHandle`] names, without building an [`Entity`]: the rest runs as
    /// [`execute`](Self::execute) of the same operation on the table of that name, in the same
    /// order, with the same errors.
    #[doc(hidden)]
    pub fn put<T: TableEntity>(&self, table: &TableHandle, put: &Put<'_, T>) -> Result<WriteOutcome> {
        self.write(WriteTarget::Handle(table), || Ok(put))
    }

    /// One write, the one `check` gives once it passes (at once for a write checked when it
    /// was made; a check may hand over what it learnt, as the size of a row it walked).
    fn write<W: RowWrite>(
        &self,
        target: WriteTarget<'_>,
        check: impl FnOnce() -> std::result::Result<W, Violation>,
    ) -> Result<WriteOutcome> {
        let table = target.name();
        self.serve(|s| {
            let op = &check()?;
            check_etag_syntax(op.requires())?;
            let about = |e: Error| e.about(table, Some(op.key()));
            let record = |row: Option<&Row>| {
                s.record(|| Change::Rows {
                    table: table.to_owned(),
                    rows: vec![RowChange::of(op.key(), row)],
                })
            };
            let write = |data: &mut table::TableData| data.execute(op, &s.clock, record);
            match target {
                WriteTarget::Name(name) => s.catalog.table(name).and_then(|found| found.write(write)),
                WriteTarget::Handle(handle) => s.catalog.write_in(handle, write),
            }
            .map_err(about)
        })
    }

    /// Inserts an entity; 409 `EntityAlreadyExists` if its key exists.
    ///
    /// This and the other single-entity writes take the entity by value or by reference: the
    /// engine copies what it stores, so a caller keeps its entity without a clone.
    pub fn insert(&self, table: &str, entity: impl Borrow<Entity>) -> Result<WriteOutcome> {
        self.write_entity(table, entity.borrow(), Requires::Absent, false)
    }

    /// Replaces an existing entity's properties with exactly `entity`'s.
    pub fn replace(
        &self,
        table: &str,
        entity: impl Borrow<Entity>,
        if_match: IfMatch,
    ) -> Result<WriteOutcome> {
        self.write_entity(table, entity.borrow(), Requires::Present(&if_match), false)
    }

    /// Merges `entity`'s properties into an existing entity, keeping the others.
    pub fn merge(&self, table: &str, entity: impl Borrow<Entity>, if_match: IfMatch) -> Result<WriteOutcome> {
        self.write_entity(table, entity.borrow(), Requires::Present(&if_match), true)
    }

    /// Inserts the entity or replaces whatever has its key.
    pub fn insert_or_replace(&self, table: &str, entity: impl Borrow<Entity>) -> Result<WriteOutcome> {
        self.write_entity(table, entity.borrow(), Requires::Nothing, false)
    }

    /// Inserts the entity or merges it into whatever has its key.
    pub fn insert_or_merge(&self, table: &str, entity: impl Borrow<Entity>) -> Result<WriteOutcome> {
        self.write_entity(table, entity.borrow(), Requires::Nothing, true)
    }

    /// One single-entity write of `entity` (its properties merged into the stored row's when
    /// `merge`), checked as [`validate_operation`] checks the operation that says the same
    /// (the `If-Match` condition, then the entity).
    fn write_entity(
        &self,
        table: &str,
        entity: &Entity,
        requires: Requires<'_>,
        merge: bool,
    ) -> Result<WriteOutcome> {
        self.write(WriteTarget::Name(table), || {
            if let Requires::Present(if_match) = requires {
                validate_if_match(if_match)?;
            }
            // A whole entity's row is sized by the walk that checks it, not walked again.
            let storing = if merge {
                validate_entity(entity).map(|()| Storing::Merged)?
            } else {
                Storing::Whole(validate_entity_with(entity, RowSize::default())?)
            };
            Ok(EntityWrite { entity, requires, storing })
        })
    }

    /// Deletes an existing entity.
    pub fn delete(&self, table: &str, key: &EntityKey, if_match: IfMatch) -> Result<WriteOutcome> {
        self.execute(table, Operation::Delete { key: key.clone(), if_match })
    }

    /// One page of entities matching the filter, ordered by `PartitionKey` then `RowKey`
    /// (UTF-16 ordinal), projected by `select` as in [`get`](Self::get). The page holds at
    /// most `min(top, max_page_size)` entities; its continuation names the next row to visit,
    /// and without the test options that shorten pages it is present exactly when another
    /// matching entity exists. Errors: `$top` outside 1..=1000, a filter that fails
    /// [`Filter::check_limits`](crate::Filter::check_limits), a `select` entry that is not a
    /// property name or a malformed continuation (400), then 404 `TableNotFound`.
    pub fn query(&self, table: &str, request: &QueryRequest) -> Result<Page> {
        let (entities, continuation) = self.query_as(table, request, Decoder::ENTITY)?;
        Ok(Page { entities, continuation })
    }

    /// [`query`](Self::query), each row handed to `decode` (a typed decoder, see [`Decoder`])
    /// instead of becoming an [`Entity`]: the decoded page and its
    /// continuation. The first row `decode` fails on fails the page.
    #[doc(hidden)]
    pub fn query_as<T>(
        &self,
        table: &str,
        request: &QueryRequest,
        decode: Decoder<T>,
    ) -> Result<(Vec<T>, Option<Continuation>)> {
        let (found, select) = self.page(table, request)?;
        // Decoded into a page sized once (collecting through `Result` would grow it by
        // doubling, copying every decoded value).
        let mut items = Vec::with_capacity(found.rows.len());
        // The select worked out for the decoder once, not on each take of each row.
        let projection = row::Projection::new(select.as_ref(), decode.slots());
        // No second touch of the rows (`row::touch_all`, which the scan gave each of them): it
        // cost a scanned row 53 instructions (ops_probe `probe_scans`: 2,684.7 with it, 2,631.3
        // without) and bought no wall time (`client` bench's scan, alternated runs: median
        // 2.16 M rows/s with it, 2.37 M without).
        for row in &found.rows {
            items.push(row.decode_projected(&projection, decode)?);
        }
        Ok((items, found.next.as_ref().map(query::token)))
    }

    /// [`query`](Self::query), each row of the page handed to `each` as it is stored (a
    /// [`RowView`], projected by the request's `select`) instead of becoming an [`Entity`]:
    /// for a caller that writes the rows out, so that it copies nothing it does not write.
    /// Answers the page's continuation; the errors are [`query`](Self::query)'s.
    #[doc(hidden)]
    pub fn query_rows(
        &self,
        table: &str,
        request: &QueryRequest,
        mut each: impl FnMut(RowView<'_>),
    ) -> Result<Option<Continuation>> {
        let (found, select) = self.page(table, request)?;
        for batch in found.rows.chunks(query::BATCH) {
            row::touch_all(batch);
            for row in batch {
                each(RowView::new(row, select.as_ref()));
            }
        }
        Ok(found.next.as_ref().map(query::token))
    }

    /// The rows of one query page and the request's checked `select`. The rows are taken out
    /// of the table lock (they share their buffers), so copies and projections are made after
    /// it is released.
    fn page(&self, table: &str, request: &QueryRequest) -> Result<(query::ScanResult, Option<Select>)> {
        self.serve(|s| {
            let size = s.page_size(request.top)?;
            let filter = request.filter.as_ref();
            if let Some(filter) = filter {
                filter.check_limits()?;
            }
            let select = request.select.clone().map(Select::new).transpose().map_err(Error::invalid)?;
            let resume = request.continuation.as_ref().map(query::read_token).transpose()?;
            let table = s.catalog.table(table)?;
            let limits = PageLimits {
                size,
                split_at_partitions: s.options.split_pages_at_partition_boundaries,
                scan_budget: s.options.scan_budget,
            };
            let plan = KeyPlan::new(filter);
            Ok((table.read(|data| query::scan(data, &plan, resume.as_ref(), limits)), select))
        })
    }

    /// Runs an entity-group transaction: all operations or none. Errors: the batch rules
    /// ([`validate_batch`](crate::validate_batch)), a malformed `If-Match` (with the
    /// operation's index), 404 `TableNotFound` (index 0), then the first operation whose
    /// check fails, with its index ([`Error::batch_index`]); nothing is applied on any error.
    ///
    /// Takes the operations as a `Vec` or a slice, for the same reason as [`Engine::execute`].
    pub fn submit_batch(
        &self,
        table: &str,
        operations: impl AsRef<[Operation]>,
    ) -> Result<Vec<WriteOutcome>> {
        let operations = operations.as_ref();
        self.serve(|s| {
            // Each entity's row is sized by the walk that checks it.
            let writes = batch::checked_batch(operations)?;
            for (index, op) in operations.iter().enumerate() {
                check_etag_syntax(op.requires()).map_err(|e| e.with_batch_index(index))?;
            }
            let found = s.catalog.table(table).map_err(|e| e.with_batch_index(0).about(table, None))?;
            let journal = s.journal.get().map(|journal| &**journal);
            found.write(|data| batch::apply_batch(data, table, &writes, &s.clock, journal)).map_err(|e| {
                match e.batch_index() {
                    Some(_) => e,
                    // The table was deleted since it was found: answered as when it is missing.
                    None if e.code() == Some(&ErrorCode::TableNotFound) => {
                        e.with_batch_index(0).about(table, None)
                    }
                    None => e,
                }
            })
        })
    }

    /// The table's stored access policies, in the order they were set. Errors: an invalid
    /// name, 404 `TableNotFound`.
    ///
    /// The engine stores policies and answers them back; it authorizes nothing, so a SAS
    /// naming one is never checked against it (the service and Azurite do that).
    pub fn get_access_policies(&self, table: &str) -> Result<Vec<SignedIdentifier>> {
        self.serve(|s| Ok(s.catalog.table(table)?.policies())).map_err(|e| e.about(table, None))
    }

    /// Replaces the table's stored access policies (an empty slice removes them all). Errors,
    /// in order: the rules of [`validate_signed_identifiers`] (400 `InvalidXmlDocument` for
    /// more than 5, `InvalidXmlNodeValue` for an id or permission), an invalid name, 404
    /// `TableNotFound`.
    pub fn set_access_policies(&self, table: &str, policies: &[SignedIdentifier]) -> Result<()> {
        self.serve(|s| {
            validate_signed_identifiers(table, policies).map_err(Error::invalid)?;
            let record =
                || s.record(|| Change::Policies { table: table.to_owned(), policies: policies.to_vec() });
            s.catalog.table(table)?.set_policies(policies, record)
        })
        .map_err(|e| e.about(table, None))
    }

    /// The service settings: every element set, the defaults of a new account
    /// ([`ServiceProperties::service_defaults`]) until a set changes them.
    pub fn get_service_properties(&self) -> Result<ServiceProperties> {
        self.serve(|s| Ok(s.properties.lock().unwrap_or_else(PoisonError::into_inner).clone()))
    }

    /// The stored CORS rules, read as no engine call: no fault is injected and none is counted,
    /// and the journal is not waited on. For table-server, which consults them beside the
    /// operation of every browser request.
    #[doc(hidden)]
    pub fn cors_rules(&self) -> Vec<CorsRule> {
        let properties = self.inner.properties.lock().unwrap_or_else(PoisonError::into_inner);
        properties.cors.clone().unwrap_or_default()
    }

    /// Changes the settings `change` names, keeping the others, as the service does. Errors:
    /// the rules of [`validate_service_properties`]. The engine only stores the settings: it
    /// logs nothing, collects no metrics and answers no CORS preflight.
    pub fn set_service_properties(&self, change: &ServiceProperties) -> Result<()> {
        self.serve(|s| {
            validate_service_properties(change).map_err(Error::invalid)?;
            // Replaced whole under the lock, so a poisoned lock still holds complete settings.
            let mut current = s.properties.lock().unwrap_or_else(PoisonError::into_inner);
            let updated = current.clone().updated_with(change);
            s.record(|| Change::ServiceProperties(updated.clone()))?;
            *current = updated;
            Ok(())
        })
    }

    /// Geo-replication statistics: always [`GeoReplicationStatus::Live`] with no last sync
    /// time, as the engine has no secondary to lag behind.
    pub fn get_service_statistics(&self) -> Result<ServiceStatistics> {
        self.serve(|_| Ok(ServiceStatistics { status: GeoReplicationStatus::Live, last_sync_time: None }))
    }

    /// Counts the call, applies any injected fault around `request`. Every error it returns
    /// is the engine's answer ([`Origin::Engine`]).
    fn serve<T>(&self, request: impl FnOnce(&Shared) -> Result<T>) -> Result<T> {
        self.serve_unmarked(request).map_err(|e| e.with_origin(Origin::Engine))
    }

    fn serve_unmarked<T>(&self, request: impl FnOnce(&Shared) -> Result<T>) -> Result<T> {
        match self.inner.faults.next_call() {
            None => {
                let answer = request(&self.inner);
                // Under no lock: calls that come meanwhile record their changes and share the
                // journal's next flush (journal module docs).
                let settled = self.inner.journal.get().map(|journal| journal.settle());
                match (answer, settled) {
                    // A write the journal refused applied nothing and shows nothing: its "not
                    // applied" stays true whatever became of earlier changes' flush.
                    (Err(refused), _) if refused.is_not_recorded() => Err(refused),
                    (Ok(_), Some(Err(e))) => Err(Error::not_durable(e)),
                    // Applied nothing, but may rest on unflushed changes (a conflict with one).
                    (Err(_), Some(Err(e))) => Err(Error::unflushed_refusal(e)),
                    (answer, _) => answer,
                }
            }
            Some(fault) => {
                if fault.timing == FaultTiming::AfterApply {
                    // The outcome is deliberately lost, as a response lost in transit.
                    let _lost = request(&self.inner);
                }
                Err(fault.to_error())
            }
        }
    }
}

impl Shared {
    /// Creates a table, recording it first. As [`Catalog::create`].
    fn create_table(&self, name: &str) -> Result<bool> {
        let record = || self.record(|| Change::CreateTable(name.to_owned()));
        self.catalog.create(name, self.options.deleted_table_cooldown, record)
    }

    /// Has the journal, when one is set, record the change `change` makes; its refusal is the
    /// error. Without a journal the change is not even built.
    fn record(&self, change: impl FnOnce() -> Change) -> Result<()> {
        match self.journal.get() {
            Some(journal) => journal::record(&**journal, &change()),
            None => Ok(()),
        }
    }

    /// The stored row with `keys` in `table`; only the row's shared buffer is taken under the
    /// table's lock. Errors: 404 `TableNotFound`, 404 `ResourceNotFound`.
    fn find_row(&self, table: &str, keys: CheckedKeys<'_>) -> Result<Row> {
        self.catalog.table(table)?.read(|data| Shared::row(data, keys))
    }

    /// The row with `keys` in `data`, or `ResourceNotFound`.
    // Inlined into the point reads' table access, as `Catalog::read_in` is into the read:
    // as two calls they cost a typed get 22 instructions more (2,192.9 rather than 2,171.0;
    // callgrind, ops_probe `probe_gets`).
    #[inline]
    fn row(data: &table::TableData, keys: CheckedKeys<'_>) -> Result<Row> {
        data.get(keys.partition_key(), keys.row_key())
            .cloned()
            .ok_or_else(|| Error::service(ErrorCode::ResourceNotFound))
    }

    /// The page size for `$top`, capped by the options.
    fn page_size(&self, top: Option<u32>) -> Result<NonZeroUsize> {
        let cap = self.options.max_page_size;
        let Some(top) = top else {
            return Ok(cap);
        };
        match NonZeroU32::new(top).filter(|t| t.get() <= MAX_TOP) {
            Some(t) => Ok(cap.min(NonZeroUsize::try_from(t).unwrap_or(NonZeroUsize::MAX))),
            None => Err(Error::invalid(Violation::Top { value: u64::from(top) })),
        }
    }
}

/// An entity's keys that passed [`validate_key`], built only by [`CheckedKeys::new`]: a read
/// given them ([`Engine::get_selected_as`]) skips that check, since it could only pass again.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct CheckedKeys<'k> {
    partition_key: &'k str,
    row_key: &'k str,
}

impl<'k> CheckedKeys<'k> {
    /// The keys, once [`validate_key`] accepts both (the `PartitionKey` first); the first
    /// violation otherwise.
    // Inlinable into the client's point read, where both keys are checked before the engine
    // call: as a call, a typed get cost 43 instructions more (2,236.0 rather than 2,192.9;
    // callgrind, ops_probe `probe_gets`).
    #[inline]
    pub fn new(partition_key: &'k str, row_key: &'k str) -> std::result::Result<Self, Violation> {
        validate_key(KeyName::PartitionKey, partition_key)?;
        validate_key(KeyName::RowKey, row_key)?;
        Ok(CheckedKeys { partition_key, row_key })
    }

    /// The `PartitionKey`.
    pub fn partition_key(&self) -> &'k str {
        self.partition_key
    }

    /// The `RowKey`.
    pub fn row_key(&self) -> &'k str {
        self.row_key
    }
}

/// The table a single-entity write names: by name, or through a [`TableHandle`] that resolved
/// it before (same answers).
#[derive(Clone, Copy)]
enum WriteTarget<'a> {
    Name(&'a str),
    Handle(&'a TableHandle),
}

impl WriteTarget<'_> {
    /// The table's name, as the caller gave it.
    fn name(&self) -> &str {
        match self {
            WriteTarget::Name(name) => name,
            WriteTarget::Handle(handle) => handle.name(),
        }
    }
}

/// An `If-Match` ETag must look like one (`W/"..."` or `"..."`): the service answers 400
/// `InvalidInput` otherwise, before looking at the entity.
fn check_etag_syntax(requires: Requires<'_>) -> Result<()> {
    let Requires::Present(IfMatch::ETag(etag)) = requires else {
        return Ok(());
    };
    let text = etag.as_str();
    let quoted = text.strip_prefix("W/").unwrap_or(text);
    if quoted.len() >= 2 && quoted.starts_with('"') && quoted.ends_with('"') {
        Ok(())
    } else {
        Err(Error::invalid(Violation::ETagSyntax { etag: text.to_owned() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typed::PropertySlots;

    #[test]
    fn a_decoded_page_is_allocated_once_at_its_size() {
        let engine = Engine::new();
        engine.create_table("Pages").expect("new table");
        for row in ["a", "b", "c"] {
            engine.insert("Pages", Entity::new("p", row)).expect("fresh key");
        }
        let (page, next) = engine
            .query_as(
                "Pages",
                &QueryRequest::default(),
                Decoder::new(&PropertySlots::NONE, |read| Ok(read.row_key)),
            )
            .expect("query");
        assert_eq!(page, ["a", "b", "c"]);
        assert!(next.is_none());
        // Growing by doubling would leave spare capacity (and have copied the values).
        assert_eq!(page.capacity(), page.len());
    }

    /// A type whose decoder answers the type of the reader it was compiled for.
    #[derive(Debug, PartialEq)]
    struct ReaderType(&'static str);

    impl crate::typed::TableEntity for ReaderType {
        fn to_entity(&self) -> Result<Entity> {
            Ok(Entity::new("p", "r"))
        }

        fn from_entity(_: Entity) -> Result<Self> {
            Ok(ReaderType("Entity"))
        }

        fn read_through<R: crate::typed::EntityReader + ?Sized>(_: &mut R) -> Result<Self> {
            Ok(ReaderType(std::any::type_name::<R>()))
        }

        fn partition_key(&self) -> Result<String> {
            Ok("p".to_owned())
        }

        fn row_key(&self) -> Result<String> {
            Ok("r".to_owned())
        }
    }

    fn value() -> impl proptest::strategy::Strategy<Value = crate::Value> {
        use crate::Value;
        use proptest::prelude::*;
        prop_oneof![
            // ASCII, characters of more UTF-8 bytes than UTF-16 units, and of two units.
            "[a-zé中\u{1f600}]{0,12}".prop_map(Value::String),
            any::<i32>().prop_map(Value::Int32),
            any::<i64>().prop_map(Value::Int64),
            any::<f64>().prop_map(Value::Double),
            any::<bool>().prop_map(Value::Boolean),
            (0i64..250_000_000_000)
                .prop_map(|s| Value::from(chrono::DateTime::from_timestamp(s, 0).unwrap_or_default())),
            any::<u128>().prop_map(|g| Value::Guid(uuid::Uuid::from_u128(g))),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Binary),
        ]
    }

    proptest::proptest! {
        /// A single-entity write that stores its entity whole, `execute` of the operation
        /// that says the same, or a batch of it, sizes the row by the walk that checked the
        /// entity: what it stores reads back as the entity written, whichever names and
        /// values it has.
        #[test]
        fn an_entity_stored_whole_reads_back_as_written(
            properties in proptest::collection::btree_map("[A-Za-zé]{1,6}", value(), 0..12),
            write in 0..9,
        ) {
            let engine = Engine::new();
            engine.create_table("Whole").expect("new table");
            let mut entity = Entity::new("pé", "r\u{1f600}");
            entity.properties.extend(properties);
            if write % 3 > 0 {
                engine.insert("Whole", Entity::new("pé", "r\u{1f600}").with("Old", 1)).expect("fresh key");
            }
            let if_match = IfMatch::Any;
            let batch = |operation| engine.submit_batch("Whole", [operation]).map(drop);
            match write {
                0 => engine.insert("Whole", &entity).map(drop),
                1 => engine.replace("Whole", &entity, if_match).map(drop),
                2 => engine.insert_or_replace("Whole", &entity).map(drop),
                3 => engine.execute("Whole", Operation::Insert(entity.clone())).map(drop),
                4 => engine.execute("Whole", Operation::Replace { entity: entity.clone(), if_match }).map(drop),
                5 => engine.execute("Whole", Operation::InsertOrReplace(entity.clone())).map(drop),
                6 => batch(Operation::Insert(entity.clone())),
                7 => batch(Operation::Replace { entity: entity.clone(), if_match }),
                _ => batch(Operation::InsertOrReplace(entity.clone())),
            }
            .expect("a valid entity");
            let stored = engine.get("Whole", "pé", "r\u{1f600}", None).expect("stored");
            proptest::prop_assert_eq!(stored.properties, entity.properties);
        }
    }

    #[test]
    fn a_typed_read_of_a_row_runs_the_decoder_compiled_for_the_row_reader() {
        let engine = Engine::new();
        engine.create_table("Rows").expect("new table");
        engine.insert("Rows", Entity::new("p", "r")).expect("fresh key");
        // Not `from_parts` (parts built first) nor `from_entity` (an `Entity` built first).
        let expected = ReaderType(std::any::type_name::<RowReader<'_>>());
        let decode = Decoder::<ReaderType>::of();
        assert_eq!(engine.get_as("Rows", "p", "r", None, decode).expect("get"), expected);
        let (page, _) = engine.query_as("Rows", &QueryRequest::default(), decode).expect("query");
        assert_eq!(page, [expected]);
    }
}
