//! SharedKey and SharedKeyLite for the Table service (protocol doc sections 2.1 and 2.2).
//!
//! Table flavour: no canonicalized `x-ms-*` headers, Content-MD5 as sent (this client sends
//! none, so it signs it empty), and the canonicalized resource is `/{account}{path as sent}`
//! plus `?comp=<value>` when the URL has a `comp` parameter; no other query parameter is signed. The path is signed exactly as it
//! goes on the wire (percent-encoding kept), so with a path-style emulator endpoint the
//! account appears twice (`/devstoreaccount1/devstoreaccount1/Tables`), as the emulator wants.
//!
//! Invariant: the account key is only held inside an HMAC state, decoded once at
//! construction; `Debug` never prints it, nor any signature.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use table_core::Result;

use crate::error;

/// A storage account name with its (decoded) access key.
#[derive(Clone)]
pub struct AccountKey {
    account: String,
    // Shared: the keyed state is ~200 bytes and every client clone carries a credential.
    mac: Arc<Hmac<Sha256>>,
}

impl AccountKey {
    /// An account and its base64 key as shown in the portal or a connection string.
    ///
    /// Fails with [`ErrorKind::Auth`] when the key is not valid base64.
    ///
    /// [`ErrorKind::Auth`]: table_core::ErrorKind::Auth
    pub fn new(account: impl Into<String>, base64_key: &str) -> Result<Self> {
        let key = BASE64
            .decode(base64_key.trim())
            .map_err(|e| error::auth("the account key is not valid base64").with_source(e))?;
        let mac = Hmac::<Sha256>::new_from_slice(&key)
            .map_err(|e| error::auth("the account key is not a valid HMAC key").with_source(e))?;
        Ok(AccountKey { account: account.into(), mac: Arc::new(mac) })
    }

    /// The account name (the primary one, also for secondary endpoints).
    pub fn account(&self) -> &str {
        &self.account
    }

    /// `base64(HMAC-SHA256(key, utf8(string_to_sign)))`. Not API (a server's tests sign
    /// hand-made tokens with it).
    #[doc(hidden)]
    pub fn sign(&self, string_to_sign: &str) -> String {
        let mut mac = Hmac::clone(&self.mac);
        mac.update(string_to_sign.as_bytes());
        BASE64.encode(mac.finalize().into_bytes())
    }

    /// Whether `signature` (the MAC's bytes, decoded from its base64 by the caller, which
    /// refuses text that is not base64 before any key is tried) is this key's signature of
    /// `string_to_sign`, compared in constant time: a server checking SharedKey requests signs
    /// with the same canonicalizer as the client. Not API.
    #[doc(hidden)]
    pub fn verify(&self, string_to_sign: &str, signature: &[u8]) -> bool {
        let mut mac = Hmac::clone(&self.mac);
        mac.update(string_to_sign.as_bytes());
        mac.verify_slice(signature).is_ok()
    }
}

impl fmt::Debug for AccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountKey").field("account", &self.account).field("key", &"<redacted>").finish()
    }
}

/// The path and query of an absolute URL (`scheme://host[:port]/path?query`) or of a bare
/// `/path?query`; `None` for anything else.
fn split_url(url: &str) -> Option<(&str, Option<&str>)> {
    let without_fragment = url.split('#').next().unwrap_or(url);
    let rest = match without_fragment.split_once("://") {
        Some((_, after_scheme)) => match after_scheme.find(['/', '?']) {
            Some(i) => &after_scheme[i..],
            None => "",
        },
        None if without_fragment.starts_with('/') => without_fragment,
        None => return None,
    };
    Some(match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    })
}

/// `/{account}{path}[?comp=..]` for `url`.
pub(crate) fn canonicalized_resource(account: &str, url: &str) -> Result<String> {
    let (path, query) = split_url(url).ok_or_else(|| {
        error::invalid_input(format!("cannot sign {url:?}: not an absolute http(s) URL or /path"))
    })?;
    let path = if path.is_empty() { "/" } else { path };
    // Joined piece by piece rather than by `format!`, here and below: every signed request
    // builds these strings, and the formatting machinery cost about 1k instructions a string
    // (callgrind).
    let mut resource = ["/", account, path].concat();
    let comp = query.and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("comp=")));
    if let Some(comp) = comp {
        resource.push_str("?comp=");
        resource.push_str(comp);
    }
    Ok(resource)
}

/// The SharedKey string to sign: `VERB\nContent-MD5\nContent-Type\nDate\nResource`
/// (`content_md5` and `content_type` as sent, empty when not sent).
pub fn shared_key_string_to_sign(
    account: &str,
    method: &str,
    url: &str,
    content_md5: &str,
    content_type: &str,
    date: &str,
) -> Result<String> {
    let resource = canonicalized_resource(account, url)?;
    Ok([method, "\n", content_md5, "\n", content_type, "\n", date, "\n", &resource].concat())
}

/// The SharedKeyLite string to sign: `Date\nResource`.
pub fn shared_key_lite_string_to_sign(account: &str, url: &str, date: &str) -> Result<String> {
    let resource = canonicalized_resource(account, url)?;
    Ok([date, "\n", &resource].concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_comp_is_signed_from_the_query() {
        let r = canonicalized_resource("acct", "https://acct.table.core.windows.net/t()?$top=1&comp=acl&x=1")
            .unwrap();
        assert_eq!(r, "/acct/t()?comp=acl");
        assert_eq!(canonicalized_resource("acct", "https://h:1").unwrap(), "/acct/");
        assert_eq!(canonicalized_resource("acct", "/Tables").unwrap(), "/acct/Tables");
        assert!(canonicalized_resource("acct", "Tables").is_err());
    }
}
