//! The service client: the entry point, which owns the backend and manages tables. It is
//! configured through [`TableServiceClientBuilder`](crate::TableServiceClientBuilder) (module
//! `builder`, which also holds the constructors that go through it).

use std::sync::Arc;

use table_core::engine::Engine;
use table_core::{Error, ErrorCode, ErrorKind, Filter, Result, TableQuery, validate_table_name};

use crate::backend::{Backend, EmbeddedBackend};
use crate::encryption::EncryptionPolicy;
use crate::error::ambiguous;
use crate::query::{Progress, QueryStream, no_progress};
use crate::retry::RetryPolicy;
use crate::table::TableClient;

/// A client for one storage account (or one embedded engine): creates, deletes and lists
/// tables, and hands out [`TableClient`]s. Cheap to clone; clones share connections.
///
/// ```rust
/// use futures::TryStreamExt;
/// use table_client::TableServiceClient;
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// service.create_table("Orders").await?;
/// let (_customers, created) = service.create_table_if_not_exists("Customers").await?;
/// assert!(created);
/// let names: Vec<String> = service.list_tables().try_collect().await?;
/// assert_eq!(names, ["Customers", "Orders"]);
/// service.delete_table("Orders").await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TableServiceClient {
    backend: Backend,
    encryption: Option<Arc<EncryptionPolicy>>,
}

impl TableServiceClient {
    /// A client over an embedded engine; clones of the engine handle share its data. The
    /// infallible form of `TableServiceClient::builder().engine(engine).build()`: the
    /// engine's injected faults are retried with [`RetryPolicy::default`] (the builder's
    /// [`retry`](crate::TableServiceClientBuilder::retry) chooses another).
    ///
    /// ```rust
    /// use table_client::TableServiceClient;
    /// use table_client::engine::Engine;
    ///
    /// # #[tokio::main]
    /// # async fn main() -> table_client::Result<()> {
    /// let engine = Engine::new();
    /// let service = TableServiceClient::embedded(engine.clone());
    /// service.create_table("Orders").await?;
    /// // Another client over a clone of the handle sees the same tables.
    /// TableServiceClient::embedded(engine).delete_table("Orders").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn embedded(engine: Engine) -> Self {
        Self::from_backend(Backend::Embedded(EmbeddedBackend::new(engine, RetryPolicy::default())))
    }

    pub(crate) fn from_backend(backend: Backend) -> Self {
        TableServiceClient { backend, encryption: None }
    }

    /// The client with client-side encryption (the builder's
    /// [`encryption`](crate::TableServiceClientBuilder::encryption)).
    pub(crate) fn with_encryption(mut self, policy: Option<EncryptionPolicy>) -> Self {
        self.encryption = policy.map(Arc::new);
        self
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    /// A client for the table `name`. Nothing is sent; a name that breaks the service's rules
    /// makes every operation of the returned client fail before any request.
    pub fn table(&self, name: &str) -> TableClient {
        TableClient::new(self.backend.clone(), name).with_encryption(self.encryption.clone())
    }

    /// Creates a table; `AlreadyExists` (`TableAlreadyExists`) if it exists.
    pub async fn create_table(&self, name: &str) -> Result<TableClient> {
        validate_table_name(name).map_err(Error::invalid)?;
        self.backend.create_table(name).await?;
        Ok(self.table(name))
    }

    /// Creates a table unless it exists. Returns the client and whether it was created.
    pub async fn create_table_if_not_exists(&self, name: &str) -> Result<(TableClient, bool)> {
        match self.create_table(name).await {
            Ok(t) => Ok((t, true)),
            Err(e)
                if e.kind() == ErrorKind::AlreadyExists
                    && e.code() == Some(&ErrorCode::TableAlreadyExists) =>
            {
                Ok((self.table(name), false))
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes a table and all its entities; `NotFound` (`ResourceNotFound`) if missing.
    ///
    /// When an attempt's answer was lost and the retry finds no table, the delete succeeds
    /// (the table is gone, as asked).
    pub async fn delete_table(&self, name: &str) -> Result<()> {
        match self.delete_table_as_answered(name).await {
            Err(e) if e.kind() == ErrorKind::NotFound && e.may_have_applied() => Ok(()),
            result => result,
        }
    }

    /// Deletes a table if it exists; returns whether it existed.
    ///
    /// `Ambiguous` when an attempt's answer was lost and the retry found no table: the table is
    /// gone, but whether it existed (and this call removed it) cannot be known.
    pub async fn delete_table_if_exists(&self, name: &str) -> Result<bool> {
        match self.delete_table_as_answered(name).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound && e.may_have_applied() => Err(ambiguous(format!(
                "delete of table {name}: the table is gone, but an attempt whose answer was lost may \
                 have removed it, so whether it existed is unknown"
            ))
            .with_source(e)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// [`delete_table`](Self::delete_table) without settling a lost answer.
    async fn delete_table_as_answered(&self, name: &str) -> Result<()> {
        validate_table_name(name).map_err(Error::invalid)?;
        self.backend.delete_table(name).await
    }

    /// All table names, in name order, across as many pages as it takes.
    pub fn list_tables(&self) -> QueryStream<String> {
        self.query_tables(None)
    }

    /// Table names starting with `prefix`, in name order.
    pub fn list_tables_with_prefix(&self, prefix: &str) -> QueryStream<String> {
        self.query_tables(Some(Filter::prefix("TableName", prefix)))
    }

    /// Table names matching a filter over `TableName`.
    ///
    /// Ends with a `Decode` error when the service answers with a `NextTableName` the listing
    /// already passed (following it would list the same tables forever).
    pub fn query_tables(&self, filter: Option<Filter>) -> QueryStream<String> {
        let backend = self.backend.clone();
        QueryStream::new(async_stream::try_stream! {
            if let Some(filter) = &filter {
                filter.check_limits()?;
            }
            let mut query = TableQuery { filter, top: None, next_table_name: None };
            let mut progress = Progress::new(None);
            loop {
                let page = backend.query_tables(&query).await?;
                if let Some(next) = &page.next_table_name {
                    progress.advance(next).map_err(|()| no_progress("the table listing", next))?;
                }
                for name in page.tables {
                    yield name;
                }
                match page.next_table_name {
                    Some(next) => query.next_table_name = Some(next),
                    None => break,
                }
            }
        })
    }
}
