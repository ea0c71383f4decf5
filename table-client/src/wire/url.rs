//! Resource paths and query strings (protocol doc sections 1 and 6).
//!
//! Paths are relative to the account's base URL (which already ends in `/devstoreaccount1`
//! for path-style emulator endpoints) and carry no leading `/`; [`resource_url`] joins them.
//! Key literals are quoted as the Python SDK sends them (verified against Azurite): every `'`
//! in the key is doubled, then the key text is percent-encoded as UTF-8, leaving only the
//! unreserved characters `A-Z a-z 0-9 - . _ ~` raw (so `'` becomes `%27`, space `%20`, `+`
//! `%2B`), and the delimiting quotes stay literal. Query values use the same encoding.
//!
//! Base URLs (endpoints) are checked once, by `parse_endpoint`, and kept in the form the `url`
//! crate prints them, so that reqwest's own parse of every request URL changes nothing.
//!
//! Invariant: every string produced here is exactly what goes on the wire and what SharedKey
//! signs; the `url` crate (inside reqwest) keeps it unchanged because it only contains
//! unreserved characters, `%XX` escapes and `( ) ' , = $ & /`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Url;
use table_core::{QueryRequest, Result, TableQuery};

/// Everything but the RFC 3986 unreserved characters is escaped.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The path of the table collection: list tables (GET) and create table (POST).
pub const TABLES_PATH: &str = "Tables";

/// The path of an entity group transaction.
pub const BATCH_PATH: &str = "$batch";

/// The query of a table's stored access policies (Get and Set Table ACL).
pub const ACL_QUERY: &str = "comp=acl";

/// The query of the service settings (Get and Set Table Service Properties).
pub const SERVICE_PROPERTIES_QUERY: &str = "restype=service&comp=properties";

/// The query of the geo-replication statistics (Get Table Service Stats).
pub const SERVICE_STATS_QUERY: &str = "restype=service&comp=stats";

/// Percent-encodes `text` as one URL component (path segment text or query value).
pub fn encode_component(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

/// Appends the quoted OData key literal of `key`: `'a%27%27b'` for the key `a'b` (each `'`
/// doubled, then percent-encoded), written in place: a server writes one per entity answered.
fn push_key_literal(out: &mut String, key: &str) {
    out.push('\'');
    for (i, between_quotes) in key.split('\'').enumerate() {
        if i > 0 {
            out.push_str("%27%27");
        }
        out.extend(utf8_percent_encode(between_quotes, COMPONENT));
    }
    out.push('\'');
}

/// The path of one table: `Tables('name')` (delete table).
pub fn table_path(table: &str) -> String {
    let mut path = String::with_capacity(table.len() + 16);
    path.push_str("Tables(");
    push_key_literal(&mut path, table);
    path.push(')');
    path
}

/// The path of a table's entities: `name` (insert with POST, query with GET).
pub fn entities_path(table: &str) -> String {
    encode_component(table)
}

/// The path of one entity: `table(PartitionKey='..',RowKey='..')`, PartitionKey first
/// (Azurite answers 404 to the reverse order).
pub fn entity_path(table: &str, partition_key: &str, row_key: &str) -> String {
    let mut path = String::with_capacity(table.len() + partition_key.len() + row_key.len() + 32);
    path.extend(utf8_percent_encode(table, COMPONENT));
    path.push_str("(PartitionKey=");
    push_key_literal(&mut path, partition_key);
    path.push_str(",RowKey=");
    push_key_literal(&mut path, row_key);
    path.push(')');
    path
}

/// Checks a Table service base URL and returns it normalised, without a trailing `/`.
///
/// `what` names the value in errors (`TableEndpoint`); the value itself is never echoed, as it
/// may hold a password. Refused, each with an [`ErrorKind::InvalidInput`] error saying why:
/// whitespace or control characters (URL parsers silently drop a CR, LF or tab, so the URL
/// used would not be the one written), a `\` (read as `/` by URL parsers), anything that does
/// not parse as an absolute URL, a scheme other than `http` or `https`, user credentials
/// (`user:password@`: requests are authorised by the credential, and the password would show
/// in every URL printed), a query string and a fragment (they would swallow the resource
/// paths joined to the base).
pub(crate) fn parse_endpoint(text: &str, what: &str) -> Result<String> {
    let invalid = |why: &str| crate::error::invalid_input(format!("{what} {why}"));
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("contains whitespace or a control character"));
    }
    if text.contains('\\') {
        return Err(invalid("contains a `\\`"));
    }
    let url = Url::parse(text).map_err(|e| invalid("is not an absolute URL").with_source(e))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("must be an http or https URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "contains user credentials (`user:password@`); give AccountKey or SharedAccessSignature instead",
        ));
    }
    if url.query().is_some() {
        return Err(invalid("has a query string; give a SAS token as SharedAccessSignature instead"));
    }
    if url.fragment().is_some() {
        return Err(invalid("has a fragment (`#`)"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("names no host"));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// Joins a base URL (with or without a trailing `/`) and a path from this module.
pub fn resource_url(base_url: &str, path: &str) -> String {
    format!("{}/{}", base_url.trim_end_matches('/'), path)
}

/// Appends a query string (without `?`) to a URL; an empty query leaves the URL unchanged.
pub fn with_query(url: &str, query: &str) -> String {
    match (query.is_empty(), url.contains('?')) {
        (true, _) => url.to_owned(),
        (false, true) => format!("{url}&{query}"),
        (false, false) => format!("{url}?{query}"),
    }
}

/// The query string (without `?`) of an entity query page: `$filter`, `$select`, `$top`,
/// `NextPartitionKey`, `NextRowKey`, in that order. Empty when nothing is set.
pub fn entity_query(request: &QueryRequest) -> String {
    let mut q = QueryString::default();
    if let Some(filter) = &request.filter {
        q.push("$filter", &filter.to_string());
    }
    if let Some(select) = &request.select {
        q.push("$select", &select.join(","));
    }
    if let Some(top) = request.top {
        q.push("$top", &top.to_string());
    }
    if let Some(c) = &request.continuation {
        q.push("NextPartitionKey", &c.next_partition_key);
        if let Some(rk) = &c.next_row_key {
            q.push("NextRowKey", rk);
        }
    }
    q.into_string()
}

/// The query string (without `?`) of a Query Tables page: `$filter`, `$top`,
/// `NextTableName`. Empty when nothing is set.
pub fn table_query(query: &TableQuery) -> String {
    let mut q = QueryString::default();
    if let Some(filter) = &query.filter {
        q.push("$filter", &filter.to_string());
    }
    if let Some(top) = query.top {
        q.push("$top", &top.to_string());
    }
    if let Some(next) = &query.next_table_name {
        q.push("NextTableName", next);
    }
    q.into_string()
}

/// A query string under construction; names are ASCII and written as given.
#[derive(Default)]
pub(crate) struct QueryString(String);

impl QueryString {
    /// Appends `name=<encoded value>`.
    pub(crate) fn push(&mut self, name: &str, value: &str) {
        if !self.0.is_empty() {
            self.0.push('&');
        }
        self.0.push_str(name);
        self.0.push('=');
        self.0.extend(utf8_percent_encode(value, COMPONENT));
    }

    /// The finished query string.
    pub(crate) fn into_string(self) -> String {
        self.0
    }
}
