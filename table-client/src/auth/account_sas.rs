//! Account shared access signatures: a SAS signed with the account key that reaches the
//! account's services as a whole (service settings, table management, entities of every
//! table), within the services, resource types and permissions it names.
//!
//! The string to sign is the form of signed versions 2015-04-05 and later:
//! `account sp ss srt st se sip spr sv`, one per line, plus an empty line; from 2020-12-06 an
//! encryption scope line (`ses`, empty here) comes before that last line. Times are printed
//! to the second in UTC, as the table SAS prints them. Query parameters come out in the order
//! `sv ss srt sp st se sip spr sig`, percent-encoded like every other query value.
//!
//! An account SAS cannot name a stored access policy (the service does not support it); a
//! table SAS can ([`TableSasBuilder::policy_id`](super::TableSasBuilder::policy_id)).

use chrono::{DateTime, Utc};
use table_core::Result;
use table_core::datetime::format_rfc3339_seconds;

use super::DEFAULT_SAS_VERSION;
use super::letters::letter_set;
use super::sas::{SasProtocol, SasToken, check_signed_version, check_validity_window};
use super::shared_key::AccountKey;
use crate::error;
use crate::wire::url::QueryString;

/// The oldest signed version of an account SAS.
const OLDEST_ACCOUNT_SAS_VERSION: &str = "2015-04-05";

/// The first signed version whose string to sign has the encryption scope line.
const ENCRYPTION_SCOPE_VERSION: &str = "2020-12-06";

letter_set! {
    /// The storage services an account SAS reaches (`ss`); this SDK uses `t`.
    AccountSasServices, "an account SAS service" {
        /// `b`: Blob storage.
        blob = 'b',
        /// `f`: Azure Files.
        file = 'f',
        /// `q`: Queue storage.
        queue = 'q',
        /// `t`: Table storage.
        table = 't',
    }
}

letter_set! {
    /// The kinds of resource an account SAS reaches (`srt`).
    AccountSasResourceTypes, "an account SAS resource type" {
        /// `s`: service-level operations (service properties and statistics, list tables).
        service = 's',
        /// `c`: container-level operations (create and delete tables).
        container = 'c',
        /// `o`: object-level operations (entities).
        object = 'o',
    }
}

letter_set! {
    /// What an account SAS allows (`sp`); printed in the service's order `rwdlacup`.
    AccountSasPermissions, "an account SAS permission" {
        /// `r`: read (entities, service properties and statistics).
        read = 'r',
        /// `w`: write (create tables, set service properties; entities need `a` and `u`).
        write = 'w',
        /// `d`: delete (tables and entities).
        delete = 'd',
        /// `l`: list (tables).
        list = 'l',
        /// `a`: add (insert entities).
        add = 'a',
        /// `c`: create (tables).
        create = 'c',
        /// `u`: update (entities).
        update = 'u',
        /// `p`: process (queue messages; no Table operation uses it).
        process = 'p',
    }
}

/// Builds an account SAS. Every setter documents its default; [`sign`](Self::sign) checks the
/// combination. [`TableServiceClient::generate_account_sas_url`] signs one with the client's
/// own key.
///
/// ```rust
/// use chrono::{Duration, Utc};
/// use table_client::auth::{
///     AccountKey, AccountSasBuilder, AccountSasPermissions, AccountSasResourceTypes, AccountSasServices,
///     SasProtocol,
/// };
/// use table_client::connection_string::{DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY};
///
/// // Read and list every table of the account for a day, over HTTPS only.
/// let key = AccountKey::new(DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY)?;
/// let sas = AccountSasBuilder::new()
///     .services(AccountSasServices::parse("t")?)
///     .resource_types(AccountSasResourceTypes::parse("sco")?)
///     .permissions(AccountSasPermissions::parse("rl")?)
///     .expiry(Utc::now() + Duration::days(1))
///     .protocol(SasProtocol::Https)
///     .sign(&key)?;
/// assert!(sas.as_query().starts_with("sv=2019-02-02&ss=t&srt=sco&sp=rl&se="));
/// # Ok::<(), table_client::Error>(())
/// ```
///
/// [`TableServiceClient::generate_account_sas_url`]: crate::TableServiceClient::generate_account_sas_url
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `sign`"]
pub struct AccountSasBuilder {
    services: AccountSasServices,
    resource_types: AccountSasResourceTypes,
    permissions: AccountSasPermissions,
    start: Option<DateTime<Utc>>,
    expiry: Option<DateTime<Utc>>,
    ip: Option<String>,
    protocol: Option<SasProtocol>,
    version: String,
}

impl Default for AccountSasBuilder {
    fn default() -> Self {
        AccountSasBuilder::new()
    }
}

impl AccountSasBuilder {
    /// An account SAS reaching the Table service (`ss=t`), with nothing else set yet.
    pub fn new() -> Self {
        AccountSasBuilder {
            services: AccountSasServices { table: true, ..AccountSasServices::default() },
            resource_types: AccountSasResourceTypes::default(),
            permissions: AccountSasPermissions::default(),
            start: None,
            expiry: None,
            ip: None,
            protocol: None,
            version: DEFAULT_SAS_VERSION.to_owned(),
        }
    }

    /// `ss`. Default: the Table service alone (`t`).
    pub fn services(mut self, services: AccountSasServices) -> Self {
        self.services = services;
        self
    }

    /// `srt`. Default: none; at least one is required.
    pub fn resource_types(mut self, resource_types: AccountSasResourceTypes) -> Self {
        self.resource_types = resource_types;
        self
    }

    /// `sp`. Default: none; at least one is required.
    pub fn permissions(mut self, permissions: AccountSasPermissions) -> Self {
        self.permissions = permissions;
        self
    }

    /// `st`, printed to the second. Default: none (valid from the moment it is signed).
    pub fn start(mut self, start: DateTime<Utc>) -> Self {
        self.start = Some(start);
        self
    }

    /// `se`, printed to the second. Required.
    pub fn expiry(mut self, expiry: DateTime<Utc>) -> Self {
        self.expiry = Some(expiry);
        self
    }

    /// `sip`: one IP address or a range `a-b`. Default: any address.
    pub fn ip(mut self, ip: impl Into<String>) -> Self {
        self.ip = Some(ip.into());
        self
    }

    /// `spr`. Default: none (the service allows both).
    pub fn protocol(mut self, protocol: SasProtocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// `sv`, the signed version. Default: [`DEFAULT_SAS_VERSION`]; versions before 2015-04-05
    /// are refused by [`sign`](Self::sign).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// The string the signature covers, for `account`.
    #[doc(hidden)]
    pub fn string_to_sign(&self, account: &str) -> String {
        let time = |t: Option<DateTime<Utc>>| t.map(format_rfc3339_seconds).unwrap_or_default();
        AccountSasFields {
            account,
            permissions: &self.permissions.to_string(),
            services: &self.services.to_string(),
            resource_types: &self.resource_types.to_string(),
            start: &time(self.start),
            expiry: &time(self.expiry),
            ip: self.ip.as_deref().unwrap_or(""),
            protocol: self.protocol.map(SasProtocol::as_str).unwrap_or(""),
            version: &self.version,
        }
        .string_to_sign()
    }

    /// Signs with the account key, giving the token to append to the account's URLs.
    ///
    /// Fails with [`ErrorKind::InvalidInput`], in this order: no service, resource type or
    /// permission; no expiry; a start not before the expiry; a version before 2015-04-05.
    ///
    /// [`ErrorKind::InvalidInput`]: table_core::ErrorKind::InvalidInput
    pub fn sign(&self, key: &AccountKey) -> Result<SasToken> {
        let missing = [
            (self.services.is_empty(), "a service (`ss`)"),
            (self.resource_types.is_empty(), "a resource type (`srt`)"),
            (self.permissions.is_empty(), "a permission (`sp`)"),
            (self.expiry.is_none(), "an expiry (`se`)"),
        ];
        if let Some((_, what)) = missing.iter().find(|(absent, _)| *absent) {
            return Err(error::invalid_input(format!("an account SAS needs {what}")));
        }
        check_validity_window(self.start, self.expiry)?;
        check_signed_version(&self.version, OLDEST_ACCOUNT_SAS_VERSION)?;
        let signature = key.sign(&self.string_to_sign(key.account()));
        let mut q = QueryString::default();
        q.push("sv", &self.version);
        q.push("ss", &self.services.to_string());
        q.push("srt", &self.resource_types.to_string());
        q.push("sp", &self.permissions.to_string());
        let optional = [
            ("st", self.start.map(format_rfc3339_seconds)),
            ("se", self.expiry.map(format_rfc3339_seconds)),
            ("sip", self.ip.clone()),
            ("spr", self.protocol.map(|p| p.as_str().to_owned())),
        ];
        for (name, value) in optional {
            if let Some(v) = value {
                q.push(name, &v);
            }
        }
        q.push("sig", &signature);
        Ok(SasToken::from_signed(q.into_string()))
    }
}

/// The values an account SAS signs, un-encoded, absent ones empty: what a server reads from a
/// token's query to check its `sig` with the same string the builder signed.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct AccountSasFields<'a> {
    pub account: &'a str,
    pub permissions: &'a str,
    pub services: &'a str,
    pub resource_types: &'a str,
    pub start: &'a str,
    pub expiry: &'a str,
    pub ip: &'a str,
    pub protocol: &'a str,
    pub version: &'a str,
}

impl AccountSasFields<'_> {
    /// The string to sign of signed versions 2015-04-05 and later (with the encryption scope
    /// line from 2020-12-06).
    pub fn string_to_sign(&self) -> String {
        let mut lines = vec![
            self.account,
            self.permissions,
            self.services,
            self.resource_types,
            self.start,
            self.expiry,
            self.ip,
            self.protocol,
            self.version,
        ];
        // Versions are dates, so their text order is their time order.
        if self.version >= ENCRYPTION_SCOPE_VERSION {
            lines.push("");
        }
        lines.push("");
        lines.join("\n")
    }
}
