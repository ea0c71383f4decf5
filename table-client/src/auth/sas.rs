//! Shared access signatures: generating a table service SAS (protocol doc section 2.3) and
//! carrying an existing SAS token.
//!
//! The string to sign is the 12-line form of signed versions 2015-04-05 and later (the Table
//! service's has not changed since it added `sip` and `spr`):
//! `sp st se /table/{account}/{table lower-cased} si sip spr sv spk srk epk erk`, values
//! un-encoded, absent values as empty lines. The account appears once even against the
//! emulator. Query parameters come out in the order `sv tn st se sp sip spr si spk srk epk
//! erk sig`, percent-encoded like every other query value, which is byte-identical to
//! `azure.data.tables.generate_table_sas` for the parameters it shares.
//!
//! A token whose own `se`/`st` say it is expired or not yet valid is refused before sending
//! ([`SasToken::check_valid_at`], called when a request is authorized).
//!
//! Invariant: a [`SasToken`] always holds a `sig` parameter, and `Debug` never prints it (nor
//! any parameter a server would read as `sig`: `SIG`, `Sig`, `%73ig`).

use std::borrow::Cow;
use std::fmt;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use percent_encoding::percent_decode_str;
use table_core::datetime::format_rfc3339_seconds;
use table_core::{EntityKey, Result};

use super::letters::letter_set;
use super::shared_key::AccountKey;
use crate::error;
use crate::wire::url::{QueryString, with_query};

/// The signed version used when none is chosen.
pub const DEFAULT_SAS_VERSION: &str = "2019-02-02";

/// The oldest signed version whose string-to-sign this module writes.
const OLDEST_SUPPORTED_VERSION: &str = "2015-04-05";

letter_set! {
    /// What a table SAS allows; printed in the service's order `raud`.
    TableSasPermissions, "a table SAS permission" {
        /// `r`: query and point reads.
        read = 'r',
        /// `a`: insert (upserts need `a` and `u`).
        add = 'a',
        /// `u`: update and merge.
        update = 'u',
        /// `d`: delete.
        delete = 'd',
    }
}

/// The protocols a SAS may be used over (`spr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SasProtocol {
    /// `https` only.
    Https,
    /// `https,http`.
    HttpsAndHttp,
}

impl SasProtocol {
    /// The `spr` value.
    pub fn as_str(self) -> &'static str {
        match self {
            SasProtocol::Https => "https",
            SasProtocol::HttpsAndHttp => "https,http",
        }
    }
}

/// Builds a service SAS for one table. Every setter documents its default; [`sign`](Self::sign)
/// checks the combination.
///
/// ```rust
/// use chrono::{Duration, Utc};
/// use table_client::TableServiceClient;
/// use table_client::auth::{AccountKey, TableSasBuilder, TableSasPermissions};
/// use table_client::connection_string::{DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY};
///
/// // Read-only access to one partition of `Orders` for an hour.
/// let key = AccountKey::new(DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY)?;
/// let sas = TableSasBuilder::new("Orders")
///     .permissions(TableSasPermissions::parse("r")?)
///     .expiry(Utc::now() + Duration::hours(1))
///     .start_key("cust1", "")
///     .end_key("cust1", "~")
///     .sign(&key)?;
/// assert!(sas.as_query().contains("sig="));
///
/// // The holder of the token connects with it alone (no account key).
/// let conn = format!(
///     "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;SharedAccessSignature={}",
///     sas.as_query()
/// );
/// let service = TableServiceClient::from_connection_string(&conn)?;
/// # let _ = service;
/// # Ok::<(), table_client::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct TableSasBuilder {
    table: String,
    permissions: TableSasPermissions,
    start: Option<DateTime<Utc>>,
    expiry: Option<DateTime<Utc>>,
    start_key: Option<EntityKey>,
    end_key: Option<EntityKey>,
    ip: Option<String>,
    protocol: Option<SasProtocol>,
    version: String,
    policy_id: Option<String>,
}

impl TableSasBuilder {
    /// A SAS for `table` (its name as created; lower-cased only inside the signature).
    pub fn new(table: impl Into<String>) -> Self {
        TableSasBuilder {
            table: table.into(),
            permissions: TableSasPermissions::default(),
            start: None,
            expiry: None,
            start_key: None,
            end_key: None,
            ip: None,
            protocol: None,
            version: DEFAULT_SAS_VERSION.to_owned(),
            policy_id: None,
        }
    }

    /// `sp`. Default: none, which is only valid with a [`policy_id`](Self::policy_id).
    #[must_use]
    pub fn permissions(mut self, permissions: TableSasPermissions) -> Self {
        self.permissions = permissions;
        self
    }

    /// `st`, printed to the second. Default: none (valid from the moment it is signed).
    #[must_use]
    pub fn start(mut self, start: DateTime<Utc>) -> Self {
        self.start = Some(start);
        self
    }

    /// `se`, printed to the second. Default: none, which is only valid with a policy id.
    #[must_use]
    pub fn expiry(mut self, expiry: DateTime<Utc>) -> Self {
        self.expiry = Some(expiry);
        self
    }

    /// `spk` and `srk`: the first (PartitionKey, RowKey) reachable, inclusive. Default: none.
    #[must_use]
    pub fn start_key(mut self, partition_key: impl Into<String>, row_key: impl Into<String>) -> Self {
        self.start_key = Some(EntityKey::new(partition_key, row_key));
        self
    }

    /// `epk` and `erk`: the last (PartitionKey, RowKey) reachable, inclusive. Default: none.
    #[must_use]
    pub fn end_key(mut self, partition_key: impl Into<String>, row_key: impl Into<String>) -> Self {
        self.end_key = Some(EntityKey::new(partition_key, row_key));
        self
    }

    /// `sip`: one IP address or a range `a-b`. Default: any address.
    #[must_use]
    pub fn ip(mut self, ip: impl Into<String>) -> Self {
        self.ip = Some(ip.into());
        self
    }

    /// `spr`. Default: none (the service allows both).
    #[must_use]
    pub fn protocol(mut self, protocol: SasProtocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// `sv`, the signed version. Default: [`DEFAULT_SAS_VERSION`]; versions before 2015-04-05
    /// sign a different string and are refused by [`sign`](Self::sign).
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// `si`: a stored access policy on the table that supplies what is not set here.
    /// Default: none.
    #[must_use]
    pub fn policy_id(mut self, id: impl Into<String>) -> Self {
        self.policy_id = Some(id.into());
        self
    }

    /// The table the SAS is for, as given.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The string the signature covers, for `account`.
    #[doc(hidden)]
    pub fn string_to_sign(&self, account: &str) -> String {
        let time = |t: Option<DateTime<Utc>>| t.map(format_rfc3339_seconds).unwrap_or_default();
        let (start_partition_key, start_row_key) = key_parts(self.start_key.as_ref());
        let (end_partition_key, end_row_key) = key_parts(self.end_key.as_ref());
        TableSasFields {
            permissions: &self.permissions.to_string(),
            start: &time(self.start),
            expiry: &time(self.expiry),
            account,
            table: &self.table,
            policy_id: self.policy_id.as_deref().unwrap_or(""),
            ip: self.ip.as_deref().unwrap_or(""),
            protocol: self.protocol.map(SasProtocol::as_str).unwrap_or(""),
            version: &self.version,
            start_partition_key,
            start_row_key,
            end_partition_key,
            end_row_key,
        }
        .string_to_sign()
    }

    /// Signs with the account key, giving the token to append to the table's URLs.
    ///
    /// Fails with [`ErrorKind::InvalidInput`], in this order: permissions or expiry missing
    /// without a policy id; a start not before the expiry; a version before 2015-04-05.
    ///
    /// [`ErrorKind::InvalidInput`]: table_core::ErrorKind::InvalidInput
    pub fn sign(&self, key: &AccountKey) -> Result<SasToken> {
        if self.policy_id.is_none() && (self.permissions.is_empty() || self.expiry.is_none()) {
            return Err(error::invalid_input("a SAS without a policy id needs permissions and an expiry"));
        }
        check_validity_window(self.start, self.expiry)?;
        check_signed_version(&self.version, OLDEST_SUPPORTED_VERSION)?;
        let signature = key.sign(&self.string_to_sign(key.account()));
        let mut q = QueryString::default();
        q.push("sv", &self.version);
        q.push("tn", &self.table);
        let optional = [
            ("st", self.start.map(format_rfc3339_seconds)),
            ("se", self.expiry.map(format_rfc3339_seconds)),
            ("sp", Some(self.permissions.to_string()).filter(|p| !p.is_empty())),
            ("sip", self.ip.clone()),
            ("spr", self.protocol.map(|p| p.as_str().to_owned())),
            ("si", self.policy_id.clone()),
        ];
        for (name, value) in optional {
            if let Some(v) = value {
                q.push(name, &v);
            }
        }
        for (names, key) in [(["spk", "srk"], &self.start_key), (["epk", "erk"], &self.end_key)] {
            if let Some(k) = key {
                q.push(names[0], &k.partition_key);
                q.push(names[1], &k.row_key);
            }
        }
        q.push("sig", &signature);
        Ok(SasToken(q.into_string()))
    }
}

/// The values a table SAS signs, un-encoded, absent ones empty: what a server reads from a
/// token's query to check its `sig` with the same string the builder signed.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TableSasFields<'a> {
    pub permissions: &'a str,
    pub start: &'a str,
    pub expiry: &'a str,
    pub account: &'a str,
    /// As given; lower-cased in the string to sign.
    pub table: &'a str,
    pub policy_id: &'a str,
    pub ip: &'a str,
    pub protocol: &'a str,
    pub version: &'a str,
    pub start_partition_key: &'a str,
    pub start_row_key: &'a str,
    pub end_partition_key: &'a str,
    pub end_row_key: &'a str,
}

impl TableSasFields<'_> {
    /// The 12-line string to sign of signed versions 2015-04-05 and later.
    pub fn string_to_sign(&self) -> String {
        [
            self.permissions,
            self.start,
            self.expiry,
            &format!("/table/{}/{}", self.account, self.table.to_lowercase()),
            self.policy_id,
            self.ip,
            self.protocol,
            self.version,
            self.start_partition_key,
            self.start_row_key,
            self.end_partition_key,
            self.end_row_key,
        ]
        .join("\n")
    }
}

/// A start must come before the expiry (either may be absent).
pub(super) fn check_validity_window(
    start: Option<DateTime<Utc>>,
    expiry: Option<DateTime<Utc>>,
) -> Result<()> {
    match (start, expiry) {
        (Some(start), Some(expiry)) if start >= expiry => Err(error::invalid_input(format!(
            "the SAS start {} is not before its expiry {}",
            format_rfc3339_seconds(start),
            format_rfc3339_seconds(expiry)
        ))),
        _ => Ok(()),
    }
}

/// A signed version is a date (`YYYY-MM-DD`) no older than `oldest`.
pub(super) fn check_signed_version(version: &str, oldest: &str) -> Result<()> {
    // Versions are dates, so their text order is their time order.
    if version < oldest || version.len() != 10 {
        return Err(error::invalid_input(format!("SAS versions before {oldest} are not supported")));
    }
    Ok(())
}

fn key_parts(key: Option<&EntityKey>) -> (&str, &str) {
    key.map_or(("", ""), |k| (k.partition_key.as_str(), k.row_key.as_str()))
}

/// A SAS token (the query string of a signed URL), sent instead of an `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub struct SasToken(String);

impl SasToken {
    /// Reads a token as given by the portal, a connection string or [`TableSasBuilder::sign`],
    /// with or without a leading `?`. Fails with [`ErrorKind::Auth`] without a `sig` parameter.
    ///
    /// [`ErrorKind::Auth`]: table_core::ErrorKind::Auth
    pub fn parse(token: &str) -> Result<Self> {
        let token = token.trim().trim_start_matches('?');
        let has_signature = token.split('&').any(|pair| signature_value(pair).is_some_and(|s| !s.is_empty()));
        if !has_signature {
            return Err(error::auth("the shared access signature has no `sig` parameter"));
        }
        Ok(SasToken(token.to_owned()))
    }

    /// The token's query string (no leading `?`), secret included.
    pub fn as_query(&self) -> &str {
        &self.0
    }

    /// `url` with the token appended (`?` or `&` as needed).
    pub fn append_to(&self, url: &str) -> String {
        with_query(url, &self.0)
    }

    /// A token this module signed (it holds a `sig`).
    pub(super) fn from_signed(query: String) -> Self {
        SasToken(query)
    }

    /// Fails with [`ErrorKind::Auth`] when the token's own `se` is not after `now` or its `st`
    /// is after `now`: the service would refuse it, so it is not sent. A token without them
    /// (its times come from a stored access policy) or with times in a form this client does
    /// not read passes, and the service decides. `now` is the client's clock: a clock far off
    /// the service's can refuse a token the service would still take.
    ///
    /// [`ErrorKind::Auth`]: table_core::ErrorKind::Auth
    pub(crate) fn check_valid_at(&self, now: DateTime<Utc>) -> Result<()> {
        let time = |name: &str| {
            self.0.split('&').find_map(|pair| {
                let (key, value) = pair.split_once('=')?;
                (key == name).then(|| parse_sas_time(&percent_decode_str(value).decode_utf8_lossy()))?
            })
        };
        if let Some(expiry) = time("se").filter(|se| *se <= now) {
            return Err(error::auth(format!(
                "the shared access signature expired at {}; no request was sent",
                format_rfc3339_seconds(expiry)
            )));
        }
        if let Some(start) = time("st").filter(|st| *st > now) {
            return Err(error::auth(format!(
                "the shared access signature is not valid before {}; no request was sent",
                format_rfc3339_seconds(start)
            )));
        }
        Ok(())
    }
}

/// A SAS time in one of the four forms the service reads, all UTC: `YYYY-MM-DD`,
/// `YYYY-MM-DDThh:mmZ`, `YYYY-MM-DDThh:mm:ssZ` and `YYYY-MM-DDThh:mm:ss.fffffffZ` (exactly
/// seven digits of fraction). Anything else (another offset, another number of digits) is
/// `None`, as the service refuses it.
#[doc(hidden)]
pub fn parse_sas_time(text: &str) -> Option<DateTime<Utc>> {
    let bytes = text.as_bytes();
    let utc_time = bytes.get(10) == Some(&b'T') && bytes.last() == Some(&b'Z');
    let rfc3339 = |text: &str| DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc));
    match text.len() {
        10 => NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?.and_hms_opt(0, 0, 0).map(|t| t.and_utc()),
        17 if utc_time => NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%MZ").ok().map(|t| t.and_utc()),
        // The common forms go through the RFC 3339 reader, which needs no format string.
        20 if utc_time => rfc3339(text),
        28 if utc_time && bytes.get(19) == Some(&b'.') => rfc3339(text),
        _ => None,
    }
}

impl fmt::Debug for SasToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token is a query already: a `?` inside a value must not be taken for the start of
        // one, which would leave the signature before it unredacted.
        f.debug_tuple("SasToken").field(&redact_query(&self.0)).finish()
    }
}

/// A URL with the value of every `sig` parameter replaced by `<redacted>`.
pub(crate) fn redact_signature(url: &str) -> String {
    match url.split_once('?') {
        Some((base, query)) => format!("{base}?{}", redact_query(query)),
        None => redact_query(url),
    }
}

/// A query string with the value of every `sig` parameter replaced by `<redacted>`.
fn redact_query(query: &str) -> String {
    let query: Vec<Cow<'_, str>> = query
        .split('&')
        .map(|pair| match (signature_value(pair), pair.split_once('=')) {
            (Some(_), Some((name, _))) => Cow::Owned(format!("{name}=<redacted>")),
            _ => Cow::Borrowed(pair),
        })
        .collect();
    query.join("&")
}

/// The value of `pair` (one `name=value` of a query string) when it is the signature.
///
/// The name is compared as a server reads it, percent-escapes decoded and ASCII case ignored,
/// so that neither `SIG=` nor `%73ig=` carries a signature past redaction.
fn signature_value(pair: &str) -> Option<&str> {
    let (name, value) = pair.split_once('=')?;
    percent_decode_str(name).decode_utf8_lossy().eq_ignore_ascii_case("sig").then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sas_times_are_the_four_forms_the_service_reads() {
        let at = |text: &str| parse_sas_time(text).map(format_rfc3339_seconds);
        assert_eq!(at("2024-01-02").as_deref(), Some("2024-01-02T00:00:00Z"));
        assert_eq!(at("2024-01-02T03:04Z").as_deref(), Some("2024-01-02T03:04:00Z"));
        assert_eq!(at("2024-01-02T03:04:05Z").as_deref(), Some("2024-01-02T03:04:05Z"));
        assert_eq!(at("2024-01-02T03:04:05.1234567Z").as_deref(), Some("2024-01-02T03:04:05Z"));
        for refused in [
            "2024-01-02T03:04:05.123Z",
            "2024-01-02T03:04:05+00:00",
            "2024-01-02T03:04:05",
            "2024-01-02 03:04:05Z",
            "2024-01-02T03:04:05.1234567+01:00",
            "2024-13-02",
            "2024-01-02T25:04Z",
            "tomorrow",
            "",
        ] {
            assert_eq!(at(refused), None, "{refused}");
        }
    }
}
