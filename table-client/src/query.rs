//! Queries as lazy streams: pages are fetched only when the caller consumes them, continuation
//! tokens are followed (or handed out for resuming later), and memory holds one page at a time.

use std::ops::Bound;

use futures::{Stream, StreamExt};
use table_core::{Continuation, Entity, Error, Filter, QueryRequest, Result, Violation};

use crate::table::TableClient;

/// Most entities the service returns in one page.
pub const MAX_PAGE_SIZE: u32 = 1000;

/// One page of query results.
#[derive(Debug, Clone)]
pub struct QueryPage<T> {
    /// The items of this page (possibly none: the service may return empty pages mid-query).
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page. `to_string()` gives a token that
    /// [`Query::resume`] accepts later, even in another process.
    pub continuation: Option<Continuation>,
}

/// A query under construction. Conditions added with the filter methods are combined with
/// `and`. Nothing is sent until [`Query::pages`] or [`Query::stream`] is polled.
///
/// Inputs that can be invalid (filters, selected names, page sizes, resume tokens) are kept as
/// given and checked when the stream is first polled, before any request.
#[derive(Debug)]
pub struct Query<T> {
    table: TableClient,
    filter: Option<Filter>,
    filter_text: Vec<String>,
    select: Option<Vec<String>>,
    top: Option<usize>,
    max_per_page: Option<u32>,
    resume: Option<Resume>,
    decode: fn(Entity) -> Result<T>,
}

// `derive(Clone)` would demand `T: Clone`; only the decoder (a fn pointer) depends on `T`.
impl<T> Clone for Query<T> {
    fn clone(&self) -> Self {
        Query {
            table: self.table.clone(),
            filter: self.filter.clone(),
            filter_text: self.filter_text.clone(),
            select: self.select.clone(),
            top: self.top,
            max_per_page: self.max_per_page,
            resume: self.resume.clone(),
            decode: self.decode,
        }
    }
}

#[derive(Debug, Clone)]
enum Resume {
    Token(String),
    At(Continuation),
}

impl<T: Send + 'static> Query<T> {
    pub(crate) fn new(table: TableClient, decode: fn(Entity) -> Result<T>) -> Self {
        Query {
            table,
            filter: None,
            filter_text: Vec::new(),
            select: None,
            top: None,
            max_per_page: None,
            resume: None,
            decode,
        }
    }

    /// Adds a condition.
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
    #[must_use]
    pub fn select<S: Into<String>>(mut self, properties: impl IntoIterator<Item = S>) -> Self {
        self.select = Some(properties.into_iter().map(Into::into).collect());
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
    pub fn pages(self) -> impl Stream<Item = Result<QueryPage<T>>> + Send + 'static {
        let Query { table, filter, filter_text, select, top, max_per_page, resume, decode } = self;
        async_stream::try_stream! {
            let mut filter = filter;
            for text in &filter_text {
                let parsed = Filter::parse(text)?;
                filter = Some(match filter {
                    Some(f) => f.and(parsed),
                    None => parsed,
                });
            }
            if let Some(f) = &filter {
                f.check_limits()?;
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
            let select = select.as_deref().map(with_system_properties);
            select.as_deref().map(table_core::check_select).transpose()?;
            let mut request = QueryRequest { filter, select, top: None, continuation };
            while remaining != Some(0) {
                let per_page = max_per_page.unwrap_or(MAX_PAGE_SIZE);
                let limit = remaining.map_or(per_page, |r| per_page.min(u32::try_from(r).unwrap_or(u32::MAX)));
                request.top = (limit < MAX_PAGE_SIZE || max_per_page.is_some()).then_some(limit);
                let page = table.backend().query(table.name(), &request).await?;
                let items = page.entities.into_iter().map(decode).collect::<Result<Vec<T>>>()?;
                if let Some(r) = remaining.as_mut() {
                    *r = r.saturating_sub(items.len());
                }
                let done = page.continuation.is_none();
                request.continuation = page.continuation.clone();
                yield QueryPage { items, continuation: page.continuation };
                if done {
                    break;
                }
            }
        }
    }

    /// The items across all pages, fetched one page at a time as the caller consumes them.
    pub fn stream(self) -> impl Stream<Item = Result<T>> + Send + 'static {
        let pages = self.pages();
        async_stream::try_stream! {
            futures::pin_mut!(pages);
            while let Some(page) = pages.next().await {
                for item in page?.items {
                    yield item;
                }
            }
        }
    }

    /// Collects every item into a `Vec` (convenient for small results).
    pub async fn collect(self) -> Result<Vec<T>> {
        let stream = self.stream();
        futures::pin_mut!(stream);
        let mut out = Vec::new();
        while let Some(item) = stream.next().await {
            out.push(item?);
        }
        Ok(out)
    }

    /// Runs this query once per partition, at most `concurrency` partitions at a time, merging
    /// the results into one stream (ordered within a partition, interleaved across them).
    pub fn across_partitions<P: Into<String>>(
        self,
        partitions: impl IntoIterator<Item = P>,
        concurrency: usize,
    ) -> impl Stream<Item = Result<T>> + Send + 'static {
        let queries: Vec<Query<T>> =
            partitions.into_iter().map(|p| self.clone().partition(&p.into())).collect();
        futures::stream::iter(queries.into_iter().map(|q| Box::pin(q.stream())))
            .flatten_unordered(concurrency.max(1))
    }
}

/// The service returns only what `$select` lists; the SDK always needs the keys and the
/// Timestamp (from which the ETag of a projected row is rebuilt), so they are added.
pub(crate) fn with_system_properties(select: &[String]) -> Vec<String> {
    let mut out = select.to_vec();
    for system in table_core::RESERVED_PROPERTY_NAMES {
        if !out.iter().any(|s| s == system) {
            out.push(system.to_owned());
        }
    }
    out
}
