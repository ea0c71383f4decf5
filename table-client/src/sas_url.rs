//! Ready-to-share SAS URLs signed with the client's own account key (what the .NET SDK calls
//! `GenerateSasUri`): [`TableClient::generate_sas_url`] for one table and
//! [`TableServiceClient::generate_account_sas_url`] for the account. Nothing is sent.
//!
//! Only a client holding the key (SharedKey or SharedKeyLite) can sign; every other client
//! (a SAS, no credential, the embedded engine) gets an [`ErrorKind::Auth`] error saying so.
//!
//! [`ErrorKind::Auth`]: table_core::ErrorKind::Auth

use table_core::Result;

use crate::auth::{AccountKey, AccountSasBuilder, Credential, TableSasBuilder};
use crate::backend::{Backend, RequestAuth};
use crate::error;
use crate::service::TableServiceClient;
use crate::table::TableClient;
use crate::wire::url;

impl TableClient {
    /// The URL of this table with a service SAS signed by the client's account key appended
    /// (`https://acct.table.core.windows.net/Orders?sv=..&tn=Orders&..&sig=..`). `sas` says
    /// what it allows; its table must be this one (compared ignoring case, as the service
    /// does).
    ///
    /// Errors, before anything is signed: `InvalidInput` when `sas` is for another table or
    /// its own checks fail ([`TableSasBuilder::sign`]); `Auth` when the client holds no account
    /// key (a SAS or anonymous credential, or the embedded engine).
    ///
    /// ```rust
    /// use chrono::{Duration, Utc};
    /// use table_client::TableServiceClient;
    /// use table_client::auth::{TableSasBuilder, TableSasPermissions};
    ///
    /// let service = TableServiceClient::from_connection_string("UseDevelopmentStorage=true")?;
    /// let orders = service.table("Orders");
    /// let url = orders.generate_sas_url(
    ///     &TableSasBuilder::new("Orders")
    ///         .permissions(TableSasPermissions::parse("r")?)
    ///         .expiry(Utc::now() + Duration::hours(1)),
    /// )?;
    /// assert!(url.starts_with("http://127.0.0.1:10002/devstoreaccount1/Orders?sv="));
    /// # Ok::<(), table_client::Error>(())
    /// ```
    pub fn generate_sas_url(&self, sas: &TableSasBuilder) -> Result<String> {
        if !sas.table().eq_ignore_ascii_case(self.name()) {
            return Err(error::invalid_input(format!(
                "the SAS is for table {}, not for table {}",
                sas.table(),
                self.name()
            )));
        }
        let (endpoint, key) = signing_key(self.backend())?;
        let token = sas.sign(key)?;
        Ok(token.append_to(&url::resource_url(endpoint, &url::entities_path(self.name()))))
    }
}

impl TableServiceClient {
    /// The account's Table endpoint with an account SAS signed by the client's account key
    /// appended (`https://acct.table.core.windows.net/?sv=..&ss=t&srt=..&sig=..`). Give the
    /// part before `?` as the endpoint and the rest as the SAS to a client that should use
    /// it.
    ///
    /// Errors: `InvalidInput` when `sas` fails its own checks ([`AccountSasBuilder::sign`]);
    /// `Auth` when the client holds no account key (a SAS or anonymous credential, or the
    /// embedded engine).
    pub fn generate_account_sas_url(&self, sas: &AccountSasBuilder) -> Result<String> {
        let (endpoint, key) = signing_key(self.backend())?;
        let token = sas.sign(key)?;
        Ok(token.append_to(&url::resource_url(endpoint, "")))
    }
}

/// The endpoint and account key of a client that holds one.
fn signing_key(backend: &Backend) -> Result<(&str, &AccountKey)> {
    let http = match backend {
        Backend::Http(http) => http,
        Backend::Embedded(_) => {
            return Err(error::auth("the embedded engine has no account key to sign a SAS with"));
        }
    };
    match http.auth() {
        RequestAuth::Credential(Credential::SharedKey(key) | Credential::SharedKeyLite(key)) => {
            Ok((http.endpoint(), key))
        }
        _ => Err(error::auth(
            "signing a SAS needs the account key, and this client holds no account key (only a SAS, a \
             token or no credential)",
        )),
    }
}
