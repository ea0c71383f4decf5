//! A table's stored access policies: [`TableClient::get_access_policies`] and
//! [`TableClient::set_access_policies`], checked locally by the service's rules
//! ([`table_core::validate_signed_identifiers`]) before any request.

use table_core::{Error, Result, SignedIdentifier, validate_signed_identifiers};

use crate::table::TableClient;

impl TableClient {
    /// The table's stored access policies (at most 5), in the order they were set.
    ///
    /// Errors: an invalid table name (before any request), `NotFound` for a missing table,
    /// `Decode` for an answer that is not the service's XML.
    pub async fn get_access_policies(&self) -> Result<Vec<SignedIdentifier>> {
        self.check_name()?;
        self.backend().get_access_policies(self.name()).await
    }

    /// Replaces the table's stored access policies with `policies` (an empty slice removes
    /// them all). A SAS naming a policy (`si=`, [`TableSasBuilder::policy_id`]) takes its
    /// permissions and times from it, so changing or removing a policy revokes every SAS
    /// issued under it. The service may take up to 30 seconds to apply a change.
    ///
    /// Errors, in order, the first three before any request: an invalid table name; more than
    /// 5 policies, an id empty or longer than 64 characters, a permission outside `raud` (each
    /// a [`Violation`](crate::Violation), `InvalidInput`); then `NotFound` for a missing
    /// table.
    ///
    /// On the embedded engine the policies are stored and read back, but no request is
    /// authorized against them: the engine authorizes nothing.
    ///
    /// ```rust
    /// use chrono::{Duration, Utc};
    /// use table_client::{SignedIdentifier, TableServiceClient};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> table_client::Result<()> {
    /// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
    /// let table = service.create_table("Orders").await?;
    /// let readers = SignedIdentifier::new("readers", "r").expiry(Utc::now() + Duration::days(30));
    /// table.set_access_policies(&[readers.clone()]).await?;
    /// assert_eq!(table.get_access_policies().await?, [readers]);
    ///
    /// // Six policies break the service's rule: refused before any request.
    /// let six = vec![SignedIdentifier::new("p", "r"); 6];
    /// assert!(table.set_access_policies(&six).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// [`TableSasBuilder::policy_id`]: crate::auth::TableSasBuilder::policy_id
    pub async fn set_access_policies(&self, policies: &[SignedIdentifier]) -> Result<()> {
        self.check_name()?;
        validate_signed_identifiers(self.name(), policies).map_err(Error::invalid)?;
        self.backend().set_access_policies(self.name(), policies).await
    }
}
