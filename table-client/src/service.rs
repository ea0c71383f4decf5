//! The service client: the entry point, which owns the backend and manages tables.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures::Stream;
use table_core::engine::Engine;
use table_core::{Error, ErrorCode, Filter, Result, TableQuery, validate_table_name};

use crate::auth::Credential;
use crate::backend::{Backend, HttpBackend, HttpOptions};
use crate::connection_string::ConnectionString;
use crate::retry::RetryPolicy;
use crate::table::TableClient;

/// Transport settings for HTTP backends (ignored by the embedded engine).
#[derive(Debug, Clone)]
pub struct ClientOptions {
    retry: RetryPolicy,
    timeout: Duration,
}

impl Default for ClientOptions {
    /// The default [`RetryPolicy`] and a 30 s per-request timeout.
    fn default() -> Self {
        ClientOptions { retry: RetryPolicy::default(), timeout: Duration::from_secs(30) }
    }
}

impl ClientOptions {
    /// How transient failures are retried. Default: [`RetryPolicy::default`].
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The limit of one HTTP attempt, from sending to the last byte of the answer. Default 30 s.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A client for one storage account (or one embedded engine): creates, deletes and lists
/// tables, and hands out [`TableClient`]s. Cheap to clone; clones share connections.
#[derive(Debug, Clone)]
pub struct TableServiceClient {
    backend: Backend,
}

impl TableServiceClient {
    /// A client over an embedded engine. Clones of the engine handle share its data.
    pub fn embedded(engine: Engine) -> Self {
        TableServiceClient { backend: Backend::Embedded(engine) }
    }

    /// A client over the process-wide embedded engine called `name`, created on first use, so
    /// that every client opened with the same name sees the same tables (what the connection
    /// string `UseEmbeddedEngine=true;Name=<name>` opens).
    pub fn embedded_named(name: &str) -> Self {
        static ENGINES: OnceLock<Mutex<HashMap<String, Engine>>> = OnceLock::new();
        let engines = ENGINES.get_or_init(Mutex::default);
        // A poisoned registry still holds valid engine handles; recover it.
        let mut engines = engines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let engine = engines.entry(name.to_owned()).or_default().clone();
        Self::embedded(engine)
    }

    /// A client for the backend a connection string names, with default options:
    /// `UseDevelopmentStorage=true` (Azurite on 127.0.0.1:10002), the account forms
    /// (`DefaultEndpointsProtocol=https;AccountName=..;AccountKey=..;EndpointSuffix=..`,
    /// `TableEndpoint=..`, `SharedAccessSignature=..`, also for Cosmos DB Table endpoints), or
    /// `UseEmbeddedEngine=true[;Name=<name>]` for the embedded engine (with a name, every client
    /// opened with it shares one engine; without, the client gets a private engine).
    pub fn from_connection_string(connection_string: &str) -> Result<Self> {
        Self::from_connection_string_with(connection_string, ClientOptions::default())
    }

    /// [`from_connection_string`](Self::from_connection_string) with transport options.
    pub fn from_connection_string_with(connection_string: &str, options: ClientOptions) -> Result<Self> {
        match ConnectionString::parse(connection_string)? {
            ConnectionString::Http { endpoint, credential, .. } => Self::http(&endpoint, credential, options),
            ConnectionString::Embedded { name: Some(name) } => Ok(Self::embedded_named(&name)),
            ConnectionString::Embedded { name: None } => Ok(Self::embedded(Engine::new())),
        }
    }

    /// A client for a Table service endpoint (base URL, path style for emulators, e.g.
    /// `http://127.0.0.1:10002/devstoreaccount1`).
    pub fn http(endpoint: &str, credential: Credential, options: ClientOptions) -> Result<Self> {
        let options = HttpOptions { retry: options.retry, timeout: options.timeout };
        Ok(TableServiceClient { backend: Backend::Http(HttpBackend::new(endpoint, credential, options)?) })
    }

    /// A client for the table `name`. Nothing is sent; a name that breaks the service's rules
    /// makes every operation of the returned client fail before any request.
    pub fn table(&self, name: &str) -> TableClient {
        TableClient::new(self.backend.clone(), name)
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
            Err(e) if e.is_conflict() && e.code() == Some(&ErrorCode::TableAlreadyExists) => {
                Ok((self.table(name), false))
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes a table and all its entities; `NotFound` (`ResourceNotFound`) if missing.
    pub async fn delete_table(&self, name: &str) -> Result<()> {
        validate_table_name(name).map_err(Error::invalid)?;
        self.backend.delete_table(name).await
    }

    /// Deletes a table if it exists; returns whether it existed.
    pub async fn delete_table_if_exists(&self, name: &str) -> Result<bool> {
        match self.delete_table(name).await {
            Ok(()) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// All table names, in name order, across as many pages as it takes.
    pub fn list_tables(&self) -> impl Stream<Item = Result<String>> + Send + 'static {
        self.query_tables(None)
    }

    /// Table names starting with `prefix`, in name order.
    pub fn list_tables_with_prefix(
        &self,
        prefix: &str,
    ) -> impl Stream<Item = Result<String>> + Send + 'static {
        self.query_tables(Some(Filter::prefix("TableName", prefix)))
    }

    /// Table names matching a filter over `TableName`.
    pub fn query_tables(
        &self,
        filter: Option<Filter>,
    ) -> impl Stream<Item = Result<String>> + Send + 'static {
        let backend = self.backend.clone();
        async_stream::try_stream! {
            if let Some(filter) = &filter {
                filter.check_limits()?;
            }
            let mut query = TableQuery { filter, top: None, next_table_name: None };
            loop {
                let page = backend.query_tables(&query).await?;
                for name in page.tables {
                    yield name;
                }
                match page.next_table_name {
                    Some(next) => query.next_table_name = Some(next),
                    None => break,
                }
            }
        }
    }
}
