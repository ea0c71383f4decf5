//! The `azure-identity` feature: [`AzureIdentityCredential`] adapts any credential of the
//! official Azure SDK (`azure_core::credentials::TokenCredential`, implemented by the
//! `azure_identity` crate's managed identity, workload identity, client secret and developer
//! tools credentials) to this crate's [`TokenCredential`].

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::token::{AccessToken, TokenCredential, TokenFuture};

/// An `azure_core` credential as a [`TokenCredential`].
///
/// ```no_run
/// use std::sync::Arc;
/// use table_client::TableServiceClient;
/// use table_client::auth::AzureIdentityCredential;
///
/// /// A client for the account, with any credential of the official SDK, e.g.
/// /// `azure_identity::ManagedIdentityCredential::new(None)?` (from the `azure_identity` crate).
/// fn service(identity: Arc<dyn azure_core::credentials::TokenCredential>) -> table_client::Result<TableServiceClient> {
///     TableServiceClient::with_token_credential(
///         "https://myaccount.table.core.windows.net",
///         AzureIdentityCredential::new(identity),
///     )
/// }
/// # fn main() {}
/// ```
#[derive(Debug, Clone)]
pub struct AzureIdentityCredential {
    inner: Arc<dyn azure_core::credentials::TokenCredential>,
}

impl AzureIdentityCredential {
    /// Adapts `credential` (e.g. the `Arc` that `azure_identity::ManagedIdentityCredential::new`
    /// returns).
    pub fn new(credential: Arc<dyn azure_core::credentials::TokenCredential>) -> Self {
        AzureIdentityCredential { inner: credential }
    }
}

impl TokenCredential for AzureIdentityCredential {
    fn get_token<'a>(&'a self, scopes: &'a [&'a str]) -> TokenFuture<'a> {
        Box::pin(async move {
            let token = self.inner.get_token(scopes, None).await?;
            let expires_on = DateTime::<Utc>::from_timestamp_nanos(
                i64::try_from(token.expires_on.unix_timestamp_nanos()).unwrap_or(i64::MAX),
            );
            Ok(AccessToken::new(token.token.secret(), expires_on))
        })
    }
}
