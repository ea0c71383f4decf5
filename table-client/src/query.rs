//! Queries as lazy streams: pages are fetched only when the caller consumes them, continuation
//! tokens are followed (or handed out for resuming later), and memory holds one page at a time.
//!
//! A continuation must move the query forward: a server that answers with a token the query
//! already passed (the one that asked for the page, or any earlier one) would make it page
//! forever, repeating rows; that answer ends the stream with a `Decode` error ([`Progress`]).
//!
//! Every listing the crate hands out is a [`QueryStream`]: `Unpin`, so callers poll it with
//! `while let Some(x) = stream.next().await` and no pinning.

use std::fmt;
use std::ops::Bound;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use table_core::typed::KeyTemplates;
use table_core::{Continuation, Entity, Error, Filter, QueryRequest, Result, Violation};

use crate::backend::Decode;
use crate::error;
use crate::table::TableClient;

mod shape;

pub use shape::QueryShape;

/// Most entities the service returns in one page.
pub const MAX_PAGE_SIZE: u32 = crate::wire::MAX_PAGE_SIZE;

/// One page of query results.
#[derive(Debug, Clone)]
pub struct QueryPage<T> {
    /// The items of this page (possibly none: the service may return empty pages mid-query).
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page. `to_string()` gives a token that
    /// [`Query::resume`] accepts later, even in another process.
    pub continuation: Option<Continuation>,
}

/// A lazy stream of results: the items of a query ([`Query::stream`]), its pages
/// ([`Query::pages`]), an index lookup, or a table listing.
///
/// It is `Unpin` and `Send`, so it can be polled in place and moved across tasks. Nothing is
/// requested until it is first polled; each page is fetched when the previous one has been
/// consumed, and only one page is held at a time. Dropping it stops the listing.
///
/// ```
/// use futures::StreamExt;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> table_client::Result<()> {
/// let service = table_client::TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let (table, _) = service.create_table_if_not_exists("people").await?;
/// table.insert(table_client::Entity::new("p", "r")).await?;
/// let mut rows = table.query().partition("p").stream();
/// while let Some(row) = rows.next().await {
///     assert_eq!(row?.row_key, "r");
/// }
/// # Ok(())
/// # }
/// ```
#[must_use = "a stream does nothing until it is polled"]
pub struct QueryStream<T> {
    // Boxed so that the listing's state machine (an `async` generator, not `Unpin`) can be
    // polled without the caller pinning it; one allocation per listing, not per item.
    inner: Pin<Box<dyn Stream<Item = Result<T>> + Send>>,
}

impl<T> QueryStream<T> {
    pub(crate) fn new(stream: impl Stream<Item = Result<T>> + Send + 'static) -> Self {
        QueryStream { inner: Box::pin(stream) }
    }
}

impl<T> Stream for QueryStream<T> {
    type Item = Result<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<T> fmt::Debug for QueryStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryStream").finish_non_exhaustive()
    }
}

/// A query under construction. Conditions added with the filter methods are combined with
/// `and`. Nothing is sent until [`Query::pages`] or [`Query::stream`] is polled.
///
/// # Table scans
///
/// Every query has a [`QueryShape`] ([`Query::shape`]): one entity, one partition, several
/// partitions, a range of partitions, or the whole table. A typed query (from
/// [`TypedTable::query`](crate::TypedTable::query) or
/// [`TypedTable::query_index`](crate::TypedTable::query_index)) whose shape is
/// [`QueryShape::TableScan`] reads every partition, which is slow and costly on a large table,
/// so it must ask for it with [`Query::table_scan`]; otherwise its first poll fails with
/// [`Violation::TableScanNotRequested`] before any request. An untyped query
/// ([`TableClient::query`]) scans without asking: it is the low-level tool, used for
/// administration and for filters the typed layer cannot describe, and its callers see the
/// filter they send.
///
/// Inputs that can be invalid (filters, selected names, page sizes, resume tokens) are kept as
/// given and checked when the stream is first polled, before any request.
///
/// ```rust
/// use futures::TryStreamExt;
/// use table_client::{Entity, Filter, TableServiceClient};
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let table = service.create_table("Orders").await?;
/// for n in 0..10 {
///     table.insert(Entity::new("cust1", format!("order_{n:02}")).with("Total", n * 10).with("Note", "x")).await?;
/// }
///
/// // Conditions, selected properties and a result cap.
/// let big: Vec<Entity> = table
///     .query()
///     .partition("cust1")
///     .filter(Filter::ge("Total", 50))
///     .select(["Total"])
///     .top(3)
///     .collect()
///     .await?;
/// assert_eq!(big.len(), 3);
/// assert!(big.iter().all(|order| !order.properties.contains_key("Note")));
///
/// // Page by page: keep the continuation token, resume later (even in another process).
/// let mut pages = table.query().partition("cust1").max_per_page(4).pages();
/// let first = pages.try_next().await?.expect("a first page");
/// assert_eq!(first.items.len(), 4);
/// let token = first.continuation.expect("more pages").to_string();
/// let rest: Vec<Entity> = table.query().partition("cust1").resume(&token).collect().await?;
/// assert_eq!(rest.len(), 6);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Query<T> {
    table: TableClient,
    filter: Option<Filter>,
    filter_text: Vec<String>,
    scan: Scan,
    keys: Option<KeyTemplates>,
    select: Option<Vec<String>>,
    /// `true` when `select` is the caller's ([`Query::select`]), `false` for a typed table's
    /// own list (`TableEntity::select`), which names the encrypted fields it decrypts.
    caller_select: bool,
    top: Option<usize>,
    max_per_page: Option<u32>,
    resume: Option<Resume>,
    decode: Decode<T>,
}

// `derive(Clone)` would demand `T: Clone`; only the decoder (a fn pointer) depends on `T`.
impl<T> Clone for Query<T> {
    fn clone(&self) -> Self {
        Query {
            table: self.table.clone(),
            filter: self.filter.clone(),
            filter_text: self.filter_text.clone(),
            scan: self.scan,
            keys: self.keys,
            select: self.select.clone(),
            caller_select: self.caller_select,
            top: self.top,
            max_per_page: self.max_per_page,
            resume: self.resume.clone(),
            decode: self.decode,
        }
    }
}

impl TableClient {
    /// A query over this table's entities; see [`Query`] for the options.
    pub fn query(&self) -> Query<Entity> {
        Query::new(self.clone(), Decode::ENTITY)
    }
}

/// Whether a query may read the whole table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// Untyped queries: scans are allowed without asking.
    Allowed,
    /// Typed queries that have not called [`Query::table_scan`].
    OnRequest,
    /// Typed queries that called [`Query::table_scan`].
    Requested,
}

#[derive(Debug, Clone)]
enum Resume {
    Token(String),
    At(Continuation),
}

impl<T: Send + 'static> Query<T> {
    pub(crate) fn new(table: TableClient, decode: Decode<T>) -> Self {
        Query {
            table,
            filter: None,
            filter_text: Vec::new(),
            scan: Scan::Allowed,
            keys: None,
            select: None,
            caller_select: false,
            top: None,
            max_per_page: None,
            resume: None,
            decode,
        }
    }

    /// Refuses to read the whole table unless [`Query::table_scan`] is called (typed queries).
    pub(crate) fn scans_on_request(mut self) -> Self {
        self.scan = Scan::OnRequest;
        self
    }

    /// Checks, before any request, that every key the filter requires equal to a value can be
    /// a key of these templates (typed queries: the type's, or the index's).
    pub(crate) fn keys_follow(mut self, templates: KeyTemplates) -> Self {
        self.keys = Some(templates);
        self
    }

    /// Asks to read the whole table when the filter does not bound the PartitionKey: without
    /// it, a typed query of shape [`QueryShape::TableScan`] fails before any request. Has no
    /// effect on a query that does not scan, or on an untyped query (which scans anyway).
    #[must_use]
    pub fn table_scan(mut self) -> Self {
        if self.scan == Scan::OnRequest {
            self.scan = Scan::Requested;
        }
        self
    }

    /// How much of the table this query reads, from its filter (the conditions given with the
    /// filter methods and [`Query::filter_str`], all combined with `and`). Fails only when a
    /// [`Query::filter_str`] text does not parse.
    pub fn shape(&self) -> Result<QueryShape> {
        Ok(QueryShape::of(combined_filter(self.filter.clone(), &self.filter_text)?.as_ref()))
    }

    /// Adds a condition.
    ///
    /// On a typed query, a condition on a property the type encrypts (`#[table(encrypt)]`,
    /// which has no filter column) makes the first poll fail with
    /// [`Violation::FilterOnEncryptedProperty`] before any request; so does such a condition
    /// in [`Query::filter_str`].
    #[must_use]
    pub fn filter(mut self, condition: Filter) -> Self {
        self.filter = Some(match self.filter.take() {
            Some(existing) => existing.and(condition),
            None => condition,
        });
        self
    }

    /// Adds a condition written as an OData string, parsed (and checked) locally; a syntax error
    /// is reported by the first poll of the stream, before any request.
    #[must_use]
    pub fn filter_str(mut self, odata: &str) -> Self {
        self.filter_text.push(odata.to_owned());
        self
    }

    /// Only entities of this partition.
    ///
    /// On a typed query, the value must be able to match the type's partition key template
    /// (or the index's, for [`TypedTable::query_index`](crate::TypedTable::query_index)):
    /// `.partition("a")` for the template `"{a}_{b}"` could never match, so the first poll fails
    /// with [`Violation::QueryKeyMismatch`] before any request. Build a composite value from
    /// field values with the type's generated helper: `.partition(&Reading::partition_key_for(device, day)?)`,
    /// or for an index `.partition(&Employee::BY_EMAIL.partition_key_for(..)?)`. The same check
    /// applies to every `PartitionKey eq` and `RowKey eq` condition the filter requires, however
    /// it was written, and to every key prefix ([`Query::row_key_prefix`]): a prefix no key of
    /// the template can start with fails the same way.
    #[must_use]
    pub fn partition(self, partition_key: &str) -> Self {
        self.filter(Filter::eq("PartitionKey", partition_key))
    }

    /// Only entities whose RowKey starts with `prefix`.
    #[must_use]
    pub fn row_key_prefix(self, prefix: &str) -> Self {
        self.filter(Filter::prefix("RowKey", prefix))
    }

    /// Only entities whose RowKey lies within the bounds.
    #[must_use]
    pub fn row_key_range(self, lower: Bound<&str>, upper: Bound<&str>) -> Self {
        self.filter(Filter::range("RowKey", lower, upper))
    }

    /// Returns only these properties (keys, Timestamp and ETag always come).
    ///
    /// On a typed query, naming a property the type encrypts (`#[table(encrypt)]`) makes the
    /// first poll fail with [`Violation::SelectOfEncryptedProperty`] before any request: read
    /// it through a typed projection instead, which fetches what decrypts it.
    #[must_use]
    pub fn select<S: Into<String>>(mut self, properties: impl IntoIterator<Item = S>) -> Self {
        self.select = Some(properties.into_iter().map(Into::into).collect());
        self.caller_select = true;
        self
    }

    /// Selects the properties a typed table's type reads (`TableEntity::select`), its
    /// encrypted fields included.
    pub(crate) fn select_for_type(mut self, properties: &[&str]) -> Self {
        self.select = Some(properties.iter().map(|name| (*name).to_owned()).collect());
        self.caller_select = false;
        self
    }

    /// At most `n` items in total, across pages.
    #[must_use]
    pub fn top(mut self, n: usize) -> Self {
        self.top = Some(n);
        self
    }

    /// At most `n` items per page (1..=1000; default: the service's 1000).
    #[must_use]
    pub fn max_per_page(mut self, n: u32) -> Self {
        self.max_per_page = Some(n);
        self
    }

    /// Starts where an earlier query stopped: `token` is a page's `continuation.to_string()`.
    /// The filter, select and page size must be the same as the earlier query's.
    #[must_use]
    pub fn resume(mut self, token: &str) -> Self {
        self.resume = Some(Resume::Token(token.to_owned()));
        self
    }

    /// Starts at a continuation returned by an earlier page.
    #[must_use]
    pub fn resume_at(mut self, continuation: Continuation) -> Self {
        self.resume = Some(Resume::At(continuation));
        self
    }

    /// The pages, each with the continuation that resumes after it.
    ///
    /// Ends with a `Decode` error, instead of the page, when the service answers with a
    /// continuation the query already passed: following it would repeat pages forever.
    pub fn pages(self) -> QueryStream<QueryPage<T>> {
        let Query {
            table,
            filter,
            filter_text,
            scan,
            keys,
            select,
            caller_select,
            top,
            max_per_page,
            resume,
            decode,
        } = self;
        QueryStream::new(async_stream::try_stream! {
            let filter = combined_filter(filter, &filter_text)?;
            if let Some(f) = &filter {
                f.check_limits()?;
                keys.as_ref().map(|k| k.check_filter(f)).transpose()?;
                check_unencrypted(&table, f)?;
            }
            if let Some(select) = select.as_deref().filter(|_| caller_select) {
                table.check_caller_select(select)?;
            }
            if scan == Scan::OnRequest && QueryShape::of(filter.as_ref()) == QueryShape::TableScan {
                Err(Error::invalid(Violation::TableScanNotRequested { table: table.name().to_owned() }))?;
            }
            if let Some(n) = max_per_page.filter(|n| !(1..=MAX_PAGE_SIZE).contains(n)) {
                Err(Error::invalid(Violation::Top { value: u64::from(n) }))?;
            }
            let continuation = match resume {
                Some(Resume::Token(token)) => Some(token.parse::<Continuation>()?),
                Some(Resume::At(c)) => Some(c),
                None => None,
            };
            let mut remaining = top;
            let select = select.as_deref().map(|select| table.with_system_properties(select));
            select.as_deref().map(table_core::check_select).transpose()?;
            let mut progress = Progress::new(continuation.clone());
            let mut request = QueryRequest { filter, select, top: None, continuation };
            while remaining != Some(0) {
                let per_page = max_per_page.unwrap_or(MAX_PAGE_SIZE);
                let limit = remaining.map_or(per_page, |r| per_page.min(u32::try_from(r).unwrap_or(u32::MAX)));
                // Always stated: the page-size check of the answer needs it, and Cosmos DB does not
                // cap a page at 1000 by itself.
                request.top = Some(limit);
                // Entities are decoded as the backend reads them (see `backend::Decode`).
                let (items, continuation) = match table.encrypts() {
                    false => table.backend().query_as(table.name(), &request, decode).await?,
                    // The fast path reads ciphertext; decrypt each entity first, then decode it.
                    true => {
                        let (entities, continuation) =
                            table.backend().query_as(table.name(), &request, Decode::ENTITY).await?;
                        let mut items = Vec::with_capacity(entities.len());
                        for entity in entities {
                            items.push(table.open_as(entity, decode).await?);
                        }
                        (items, continuation)
                    }
                };
                if let Some(next) = &continuation {
                    progress.advance(next).map_err(|()| {
                        no_progress(&format!("the query of table {}", table.name()), &next.to_string())
                    })?;
                }
                if let Some(r) = remaining.as_mut() {
                    *r = r.saturating_sub(items.len());
                }
                let done = continuation.is_none();
                request.continuation = continuation.clone();
                yield QueryPage { items, continuation };
                if done {
                    break;
                }
            }
        })
    }

    /// The items across all pages, fetched one page at a time as the caller consumes them.
    pub fn stream(self) -> QueryStream<T> {
        QueryStream::new(Items { pages: self.pages(), page: Vec::new().into_iter() })
    }

    /// Collects every item into a `Vec` (convenient for small results).
    pub async fn collect(self) -> Result<Vec<T>> {
        let mut pages = self.pages();
        let mut collected: Vec<Vec<T>> = Vec::new();
        while let Some(page) = pages.next().await {
            let items = page?.items;
            if !items.is_empty() {
                collected.push(items);
            }
        }
        // Joined once, into a `Vec` sized for all of them: growing one by doubling as pages came
        // copied every item again at each growth. A single page becomes the result as it is.
        if collected.len() == 1 {
            return Ok(collected.pop().unwrap_or_default());
        }
        let mut out = Vec::with_capacity(collected.iter().map(Vec::len).sum());
        for items in collected {
            out.extend(items);
        }
        Ok(out)
    }

    /// Runs this query once per partition, at most `concurrency` partitions at a time (0 counts
    /// as 1), merging the results into one stream (ordered within a partition, interleaved
    /// across them). Each of those queries reads one partition, so none of them is a table scan.
    pub fn across_partitions<P: Into<String>>(
        self,
        partitions: impl IntoIterator<Item = P>,
        concurrency: usize,
    ) -> QueryStream<T> {
        let queries: Vec<Query<T>> =
            partitions.into_iter().map(|p| self.clone().partition(&p.into())).collect();
        QueryStream::new(
            futures::stream::iter(queries.into_iter().map(Query::stream))
                .flatten_unordered(concurrency.max(1)),
        )
    }
}

/// The items of a listing's pages, handed out one at a time: each is moved out of its page's
/// list as it is asked for, without a generator's yield per item, and without a stream per
/// page between the pages and the caller (`try_flatten` over `stream::iter` cost 68
/// instructions per item, this 26). A page's list is dropped once handed out, before the next
/// page is fetched, so that one page at a time is held.
struct Items<T> {
    pages: QueryStream<QueryPage<T>>,
    /// What is left of the page being handed out.
    page: std::vec::IntoIter<T>,
}

// The items are moved out by value, never pinned.
impl<T> Unpin for Items<T> {}

impl<T> Stream for Items<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.page.next() {
            Some(item) => Poll::Ready(Some(Ok(item))),
            None => this.poll_next_page(cx),
        }
    }
}

impl<T> Items<T> {
    /// The first item of the next page that has one (a page may be empty mid-query). Not
    /// inlined: handing out an item of the page at hand then saves and restores no registers
    /// for this path.
    #[inline(never)]
    fn poll_next_page(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        loop {
            // The handed-out page's list is freed before the next page is fetched.
            self.page = Vec::new().into_iter();
            match futures::ready!(self.pages.poll_next_unpin(cx)) {
                Some(Ok(page)) => self.page = page.items.into_iter(),
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                None => return Poll::Ready(None),
            }
            if let Some(item) = self.page.next() {
                return Poll::Ready(Some(Ok(item)));
            }
        }
    }
}

/// The query's conditions and its OData texts (parsed here) joined with `and`.
fn combined_filter(filter: Option<Filter>, texts: &[String]) -> Result<Option<Filter>> {
    let parsed = texts.iter().map(|text| Filter::parse(text)).collect::<Result<Vec<_>>>()?;
    Ok(Filter::all_of(filter.into_iter().chain(parsed)))
}

/// Refuses, before any request, a filter that names a property the client's type encrypts
/// (`#[table(encrypt)]`): the service holds its ciphertext, which no comparison can test. The
/// filter is the parsed one, so a name is found however the text spells the expression.
fn check_unencrypted(table: &TableClient, filter: &Filter) -> Result<()> {
    let encrypted = table.encrypted();
    if encrypted.is_empty() {
        return Ok(());
    }
    // A heap stack, as `Filter::comparison_count` walks: a built filter may be very deep.
    let mut pending = vec![filter];
    while let Some(filter) = pending.pop() {
        match filter {
            Filter::Compare { property, .. } | Filter::Property(property) => {
                if encrypted.contains(&property.as_str()) {
                    return Err(Error::invalid(Violation::FilterOnEncryptedProperty {
                        table: table.name().to_owned(),
                        property: property.clone(),
                    }));
                }
            }
            // Right first, so the leftmost name is found first.
            Filter::And(left, right) | Filter::Or(left, right) => pending.extend([&**right, &**left]),
            Filter::Not(inner) => pending.push(inner),
        }
    }
    Ok(())
}

/// Follows the continuations of one paged listing and tells when one comes back: Brent's cycle
/// detection over the token sequence, in constant memory (the last token and one checkpoint,
/// moved to the latest token whenever the step count reaches the next power of two). A token
/// equal to the one that asked for its page is caught at once; a cycle of `n` tokens entered
/// after `m` pages within `3 * (m + n)` pages. Tokens are only compared for equality: Cosmos DB's
/// are opaque, so no order between them is assumed.
#[derive(Debug)]
pub(crate) struct Progress<T> {
    last: Option<T>,
    checkpoint: Option<T>,
    steps: u64,
    power: u64,
}

impl<T: PartialEq + Clone> Progress<T> {
    /// Starts at `start`, the token of the first request (`None` from the beginning).
    pub(crate) fn new(start: Option<T>) -> Self {
        Progress { last: start.clone(), checkpoint: start, steps: 0, power: 1 }
    }

    /// Records the continuation of the page just read; `Err` when it is one the listing
    /// already passed, so following it would repeat pages.
    pub(crate) fn advance(&mut self, next: &T) -> std::result::Result<(), ()> {
        if self.last.as_ref() == Some(next) || self.checkpoint.as_ref() == Some(next) {
            return Err(());
        }
        self.steps += 1;
        if self.steps == self.power {
            self.checkpoint = Some(next.clone());
            self.power = self.power.saturating_mul(2);
            self.steps = 0;
        }
        self.last = Some(next.clone());
        Ok(())
    }
}

/// The error of a listing whose server sent `token` back again.
pub(crate) fn no_progress(listing: &str, token: &str) -> Error {
    error::decode(format!(
        "{listing} does not advance: the service sent the continuation {token:?} it had already sent"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index of the first token `Progress` refuses in `tokens`.
    fn first_refused(start: Option<u32>, tokens: impl IntoIterator<Item = u32>) -> Option<usize> {
        let mut progress = Progress::new(start);
        tokens.into_iter().position(|t| progress.advance(&t).is_err())
    }

    #[test]
    fn a_token_equal_to_the_last_is_refused_at_once() {
        assert_eq!(first_refused(None, [7, 7]), Some(1));
        assert_eq!(first_refused(Some(7), [7]), Some(0));
        assert_eq!(first_refused(None, [1, 2, 3, 4, 4]), Some(4));
    }

    #[test]
    fn cycles_of_any_length_and_start_are_found_within_a_bound() {
        for start in 0..20u32 {
            for length in 1..40u32 {
                // start tokens, then a cycle of `length` tokens repeated.
                let tokens = (0..).map(|i| if i < start { 1000 + i } else { (i - start) % length });
                let at = first_refused(None, tokens.take(10_000)).expect("the cycle is found");
                let bound = 3 * (start + length) as usize;
                assert!(at <= bound, "start {start}, length {length}: found at {at}, bound {bound}");
            }
        }
    }

    #[test]
    fn distinct_tokens_are_never_refused() {
        assert_eq!(first_refused(None, 0..100_000), None);
        assert_eq!(first_refused(Some(u32::MAX), 0..1000), None);
    }
}
