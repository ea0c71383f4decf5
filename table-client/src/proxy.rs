//! The proxy a client built by the SDK sends every request through
//! ([`TableServiceClientBuilder::proxy`](crate::TableServiceClientBuilder::proxy)), checked
//! once.
//!
//! Invariant: neither an error nor `Debug` shows the proxy's password (a proxy URL may carry
//! `user:password@`); `Debug` shows the URL without it.

use std::fmt;

use reqwest::Url;
use table_core::Result;

use crate::error::invalid_input;

/// A checked proxy URL: `http` or `https`, a host, nothing after the port.
#[derive(Clone)]
pub(crate) struct Proxy {
    proxy: reqwest::Proxy,
    /// The URL without its credentials, for `Debug`.
    shown: String,
}

impl Proxy {
    /// Checks `text` (see the type docs); errors are [`ErrorKind::InvalidInput`] saying what
    /// is wrong without echoing the URL.
    ///
    /// [`ErrorKind::InvalidInput`]: table_core::ErrorKind::InvalidInput
    pub(crate) fn parse(text: &str) -> Result<Proxy> {
        let refused = |why: &str| invalid_input(format!("the `proxy` {why}"));
        let url = Url::parse(text).map_err(|e| refused("is not an absolute URL").with_source(e))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refused("must be an http or https URL"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(refused("names no host"));
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(refused("must name only a host and port (no path, query or fragment)"));
        }
        let mut shown = url.clone();
        // Both fail only for URLs that cannot carry credentials, which is fine.
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        let proxy = reqwest::Proxy::all(url).map_err(|e| refused("cannot be used").with_source(e))?;
        Ok(Proxy { proxy, shown: shown.into() })
    }

    /// The proxy, for a `reqwest` client.
    pub(crate) fn to_reqwest(&self) -> reqwest::Proxy {
        self.proxy.clone()
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Proxy").field(&self.shown).finish()
    }
}
