//! The account's Table service settings and geo-replication statistics:
//! [`TableServiceClient::get_properties`], [`TableServiceClient::set_properties`] and
//! [`TableServiceClient::get_statistics`], with the settings checked locally by the service's
//! rules ([`table_core::validate_service_properties`]) before any request.

use table_core::{Error, Result, ServiceProperties, ServiceStatistics, validate_service_properties};

use crate::service::TableServiceClient;

impl TableServiceClient {
    /// The service settings: analytics logging, hour and minute metrics, CORS rules (every
    /// element set).
    ///
    /// Errors: `Auth` for a credential without account-level rights (a table SAS), `Decode`
    /// for an answer that is not the service's XML.
    pub async fn get_properties(&self) -> Result<ServiceProperties> {
        self.backend().get_service_properties().await
    }

    /// Changes the settings `properties` sets; an element left `None` keeps its current value.
    ///
    /// Errors, in order: more than 5 CORS rules, a CORS rule without an origin or a method or
    /// with a method outside [`CORS_METHODS`](crate::CORS_METHODS), a retention period
    /// outside 1..=365 days (each a [`Violation`](crate::Violation), `InvalidInput`, before
    /// any request); then the service's answer.
    ///
    /// On the embedded engine the settings are stored and read back; the engine logs nothing,
    /// collects no metrics and answers no CORS preflight.
    ///
    /// ```rust
    /// use table_client::{CorsRule, Metrics, ServiceProperties, TableServiceClient};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> table_client::Result<()> {
    /// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
    /// let browsers = CorsRule {
    ///     allowed_origins: vec!["https://contoso.com".into()],
    ///     allowed_methods: vec!["GET".into()],
    ///     max_age_seconds: 600,
    ///     ..CorsRule::default()
    /// };
    /// service
    ///     .set_properties(&ServiceProperties {
    ///         hour_metrics: Some(Metrics::enabled(true, Some(7))),
    ///         cors: Some(vec![browsers.clone()]),
    ///         ..ServiceProperties::default()
    ///     })
    ///     .await?;
    /// let now = service.get_properties().await?;
    /// assert_eq!(now.cors, Some(vec![browsers]));
    /// assert_eq!(now.hour_metrics.and_then(|m| m.retention_days), Some(7));
    /// assert!(now.logging.is_some()); // not named by the set: kept as it was
    /// # Ok(())
    /// # }
    /// ```
    pub async fn set_properties(&self, properties: &ServiceProperties) -> Result<()> {
        validate_service_properties(properties).map_err(Error::invalid)?;
        self.backend().set_service_properties(properties).await
    }

    /// The geo-replication status and last sync time of a geo-redundant account, served by its
    /// secondary location: the request goes to `<account>-secondary` (in the host, or in the
    /// path for path-style emulator endpoints such as Azurite's).
    ///
    /// Errors: `InvalidInput` when the endpoint names no account to derive the secondary from
    /// (before any request); the service's answer (an account without read access to its
    /// secondary answers an error); `Decode` for an answer that is not the service's XML.
    ///
    /// The embedded engine has no secondary: it answers `Live` with no last sync time.
    pub async fn get_statistics(&self) -> Result<ServiceStatistics> {
        self.backend().get_service_statistics().await
    }
}
