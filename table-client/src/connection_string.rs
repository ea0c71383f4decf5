//! Connection strings: which backend to use, where, and with which credential.
//!
//! Forms accepted (`;`-separated `Key=Value` pairs; keys case-insensitive, whitespace around
//! pairs and a trailing `;` ignored; values may contain `=`):
//!
//! - `UseDevelopmentStorage=true`: Azurite at `http://127.0.0.1:10002/devstoreaccount1`
//!   (path style) with the well-known `devstoreaccount1` key.
//! - `DefaultEndpointsProtocol=https;AccountName=..;AccountKey=..[;EndpointSuffix=..]`:
//!   `{protocol}://{account}.table.{suffix}`, suffix `core.windows.net` by default.
//! - `TableEndpoint=<url>` overrides the endpoint (Azurite, Cosmos DB
//!   `https://{account}.table.cosmos.azure.com:443/`, sovereign clouds); the account name is
//!   `AccountName`, else the first DNS label of a non-IP host, else the first path segment.
//! - `SharedAccessSignature=<token>` instead of `AccountKey` (one of the two is required).
//! - `TableSecondaryEndpoint=<url>`: the secondary endpoint of a read-access geo-redundant
//!   account, read from under
//!   [`LocationMode::PrimaryThenSecondary`](crate::LocationMode::PrimaryThenSecondary).
//! - `UseEmbeddedEngine=true[;Name=<name>]`: the in-process engine; clients built from the
//!   same `Name` share the engine bound to it in [`registry`](crate::engine::registry) (until
//!   the name is removed from it), an unnamed one gets a private engine.
//!
//! `BlobEndpoint`, `QueueEndpoint`, `FileEndpoint` and their `*SecondaryEndpoint` forms
//! belong to other services and are ignored; any other unknown key is an error, so a typo
//! such as `AcountKey` is reported instead of silently dropped.
//!
//! Checks: the account name follows the service's rule (3 to 24 lower-case letters and digits
//! for Azure Storage, which `devstoreaccount1` follows; Cosmos DB's longer names with hyphens
//! are accepted beside an explicit `TableEndpoint`), `EndpointSuffix` is a DNS name, and every
//! endpoint passes `wire::url::parse_endpoint` (an http(s) URL without credentials, query, fragment,
//! whitespace or control characters). So the host requests go to is the one the string names:
//! `AccountName=evil.com/x#` is refused, not turned into `https://evil.com/x#.table...`.
//!
//! Invariant: `Debug` never shows the account key or a SAS signature (the [`Credential`]
//! redacts them, and an endpoint cannot hold a password); errors never echo a key, a token or
//! an endpoint.

use std::str::FromStr;

use reqwest::Url;
use table_core::{Error, Result};

use crate::auth::Credential;
use crate::error;
use crate::wire::url::parse_endpoint;

/// The development storage (Azurite) account name.
pub const DEVELOPMENT_ACCOUNT: &str = "devstoreaccount1";
/// The development storage account key (public, the same for every emulator).
pub const DEVELOPMENT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The development storage table endpoint (path style).
pub const DEVELOPMENT_TABLE_ENDPOINT: &str = "http://127.0.0.1:10002/devstoreaccount1";

/// A parsed connection string: the backend to build.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ConnectionString {
    /// A service reached over HTTP (Azure Storage, Cosmos DB Table API, Azurite).
    Http {
        /// Base URL without a trailing `/` (ends in `/devstoreaccount1` for path style).
        endpoint: String,
        /// Account name (the one SharedKey signs with).
        account: String,
        /// How requests are authorized.
        credential: Credential,
        /// `TableSecondaryEndpoint`, normalised as `endpoint` is.
        secondary_endpoint: Option<String>,
    },
    /// The embedded in-memory engine.
    Embedded {
        /// Engines are shared by name; `None` gets a private engine.
        name: Option<String>,
    },
}

impl ConnectionString {
    /// Parses a connection string; errors are [`ErrorKind::InvalidInput`] naming the
    /// offending key (bad key base64 is [`ErrorKind::Auth`]).
    ///
    /// [`ErrorKind::Auth`]: table_core::ErrorKind::Auth
    /// [`ErrorKind::InvalidInput`]: table_core::ErrorKind::InvalidInput
    pub fn parse(s: &str) -> Result<Self> {
        let pairs = Pairs::parse(s)?;
        if pairs.flag("UseEmbeddedEngine")? {
            pairs.only(&["UseEmbeddedEngine", "Name"])?;
            return Ok(ConnectionString::Embedded { name: pairs.get("Name").map(str::to_owned) });
        }
        if pairs.flag("UseDevelopmentStorage")? {
            pairs.only(&["UseDevelopmentStorage"])?;
            return Ok(ConnectionString::Http {
                endpoint: DEVELOPMENT_TABLE_ENDPOINT.to_owned(),
                account: DEVELOPMENT_ACCOUNT.to_owned(),
                credential: Credential::shared_key(DEVELOPMENT_ACCOUNT, DEVELOPMENT_KEY)?,
                secondary_endpoint: None,
            });
        }
        pairs.only(&[
            "UseDevelopmentStorage",
            "DefaultEndpointsProtocol",
            "AccountName",
            "AccountKey",
            "EndpointSuffix",
            "TableEndpoint",
            "TableSecondaryEndpoint",
            "SharedAccessSignature",
        ])?;
        let endpoint = match pairs.get("TableEndpoint") {
            Some(url) => parse_endpoint(url, "TableEndpoint")?,
            None => {
                let account = pairs.require("AccountName")?;
                // The name becomes part of the host: only the storage rule keeps it one label.
                check_account_name(account, AccountRule::Storage)?;
                let protocol = pairs.get("DefaultEndpointsProtocol").unwrap_or("https");
                if protocol != "https" && protocol != "http" {
                    return Err(invalid(format!(
                        "DefaultEndpointsProtocol must be https or http, not {protocol:?}"
                    )));
                }
                let suffix = pairs.get("EndpointSuffix").unwrap_or("core.windows.net").trim_matches('.');
                check_endpoint_suffix(suffix)?;
                parse_endpoint(&format!("{protocol}://{account}.table.{suffix}"), "the endpoint")?
            }
        };
        let account = match pairs.get("AccountName") {
            Some(a) => a.to_owned(),
            None => account_from_endpoint(&endpoint).ok_or_else(|| {
                invalid("AccountName is missing and the TableEndpoint does not name an account".into())
            })?,
        };
        // A name taken from a SAS endpoint signs nothing; any name given or signed with must
        // follow the rule.
        if pairs.get("AccountName").is_some() || pairs.get("AccountKey").is_some() {
            check_account_name(&account, AccountRule::StorageOrCosmos)?;
        }
        let credential = match (pairs.get("AccountKey"), pairs.get("SharedAccessSignature")) {
            (Some(key), None) => Credential::shared_key(account.clone(), key)?,
            (None, Some(sas)) => Credential::sas(sas)?,
            (Some(_), Some(_)) => {
                return Err(invalid("give AccountKey or SharedAccessSignature, not both".into()));
            }
            (None, None) => {
                return Err(invalid("AccountKey or SharedAccessSignature is missing".into()));
            }
        };
        let secondary_endpoint = match pairs.get("TableSecondaryEndpoint") {
            Some(url) => Some(parse_endpoint(url, "TableSecondaryEndpoint")?),
            None => None,
        };
        Ok(ConnectionString::Http { endpoint, account, credential, secondary_endpoint })
    }
}

impl FromStr for ConnectionString {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        ConnectionString::parse(s)
    }
}

fn invalid(message: String) -> Error {
    error::invalid_input(message)
}

/// `acct` from `https://acct.table.core.windows.net`, or `devstoreaccount1` from
/// `http://127.0.0.1:10002/devstoreaccount1` (`endpoint` has passed `parse_endpoint`).
fn account_from_endpoint(endpoint: &str) -> Option<String> {
    let url = Url::parse(endpoint).ok()?;
    let candidate = match url.domain().filter(|host| host.contains('.')) {
        Some(host) => host.split('.').next(),
        None => url.path_segments().and_then(|mut segments| segments.next()),
    };
    candidate.filter(|a| !a.is_empty()).map(str::to_owned)
}

/// Checks a storage account name by the service's rule (3 to 24 lower-case letters and
/// digits), as a connection string's `AccountName` is checked; for a server that serves
/// accounts by name.
#[doc(hidden)]
pub fn check_storage_account_name(name: &str) -> Result<()> {
    check_account_name(name, AccountRule::Storage)
}

/// Which services' account naming rule a name must follow.
#[derive(Clone, Copy)]
enum AccountRule {
    /// Azure Storage: 3 to 24 lower-case letters and digits (the emulator's `devstoreaccount1`
    /// is one). Required where the name becomes part of a host name.
    Storage,
    /// Azure Storage, or Cosmos DB (3 to 44 lower-case letters, digits and hyphens, no hyphen
    /// first or last): the name only identifies the signer of an explicit `TableEndpoint`.
    StorageOrCosmos,
}

/// Checks an account name against `rule`. The name is not echoed: a misplaced key or token
/// would be.
fn check_account_name(name: &str, rule: AccountRule) -> Result<()> {
    let (max, hyphens, description) = match rule {
        AccountRule::Storage => (24, false, "3 to 24 lower-case letters and digits"),
        AccountRule::StorageOrCosmos => {
            (44, true, "3 to 44 lower-case letters, digits and hyphens (no hyphen first or last)")
        }
    };
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || (hyphens && b == b'-');
    let valid = (3..=max).contains(&name.len())
        && name.bytes().all(allowed)
        && !name.starts_with('-')
        && !name.ends_with('-');
    if valid { Ok(()) } else { Err(invalid(format!("AccountName must be {description}"))) }
}

/// Checks `EndpointSuffix` as a DNS name: dot-separated labels of 1 to 63 ASCII letters,
/// digits and hyphens (no hyphen first or last), 253 characters at most.
fn check_endpoint_suffix(suffix: &str) -> Result<()> {
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if suffix.len() <= 253 && suffix.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(invalid("EndpointSuffix must be a DNS name such as core.windows.net".into()))
    }
}

/// Keys of the other storage services that may appear in a storage account's connection
/// string.
const OTHER_SERVICE_KEYS: [&str; 6] = [
    "BlobEndpoint",
    "QueueEndpoint",
    "FileEndpoint",
    "BlobSecondaryEndpoint",
    "QueueSecondaryEndpoint",
    "FileSecondaryEndpoint",
];

fn is_other_service_key(key: &str) -> bool {
    OTHER_SERVICE_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key))
}

/// The `Key=Value` pairs of a connection string.
struct Pairs<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Pairs<'a> {
    fn parse(s: &'a str) -> Result<Self> {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        let segments = s.split(';').map(str::trim).filter(|p| !p.is_empty());
        for (position, segment) in segments.enumerate() {
            // The part is not echoed: it may be a key pasted without its name.
            let (key, value) = segment
                .split_once('=')
                .ok_or_else(|| invalid(format!("connection string part {} has no `=`", position + 1)))?;
            let (key, value) = (key.trim(), value.trim());
            if pairs.iter().any(|(k, _)| k.eq_ignore_ascii_case(key)) {
                return Err(invalid(format!(
                    "{} appears twice in the connection string",
                    key_for_message(key)
                )));
            }
            pairs.push((key, value));
        }
        if pairs.is_empty() {
            return Err(invalid("the connection string is empty".into()));
        }
        Ok(Pairs(pairs))
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| *v).filter(|v| !v.is_empty())
    }

    fn require(&self, key: &str) -> Result<&'a str> {
        self.get(key).ok_or_else(|| invalid(format!("{key} is missing from the connection string")))
    }

    /// `true`/`false` (any case) of a boolean key; absent is `false`.
    fn flag(&self, key: &str) -> Result<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(invalid(format!("{key} must be true or false, not {v:?}"))),
        }
    }

    /// Fails on a key outside `allowed` that is not another service's endpoint.
    fn only(&self, allowed: &[&str]) -> Result<()> {
        match self
            .0
            .iter()
            .find(|(k, _)| !allowed.iter().any(|a| a.eq_ignore_ascii_case(k)) && !is_other_service_key(k))
        {
            Some((k, _)) => {
                Err(invalid(format!("{} is not supported in this connection string", key_for_message(k))))
            }
            None => Ok(()),
        }
    }
}

/// A key name for an error message. Real key names are short and alphabetic; anything else
/// may be a secret pasted in the wrong place and is not echoed.
fn key_for_message(key: &str) -> &str {
    if key.len() <= 40 && key.bytes().all(|b| b.is_ascii_alphabetic()) {
        key
    } else {
        "a key that is not a name"
    }
}
