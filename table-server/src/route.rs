//! The resource a request path names (protocol doc section 1) and its query parameters: the
//! inverse of the client's `wire::url`, which builds the same paths.
//!
//! Paths are path style, `/{account}/{resource}`. Key literals are read after the path is
//! percent-decoded as UTF-8: the client doubles every `'` inside a key, so the decoded text
//! still delimits keys unambiguously, whether the delimiting quotes came literal or as `%27`.
//! A `+` stays a `+` (it is no space in a path, verified against Azurite).

use std::borrow::Cow;

use table_core::ErrorCode;

use crate::answer::Failure;

/// What a path names, after its account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resource {
    /// The account itself (`/{account}` or `/{account}/`): service settings.
    Account,
    /// `Tables`: list (GET) and create (POST).
    Tables,
    /// `Tables('name')`: delete (DELETE) and read (GET).
    Table(String),
    /// `name` or `name()`: insert (POST) and query (GET).
    Entities(String),
    /// `name(PartitionKey='..',RowKey='..')`: one entity.
    Entity { table: String, partition_key: String, row_key: String },
    /// `$batch`: an entity group transaction.
    Batch,
}

/// A request's path read: the account (borrowed from the path) and the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Path<'a> {
    pub(crate) account: &'a str,
    pub(crate) resource: Resource,
}

/// The suffix of an account name that names its read-only secondary location
/// (`{account}-secondary`; account names have no `-` of their own).
pub(crate) const SECONDARY_SUFFIX: &str = "-secondary";

/// 400 `InvalidUri`: the request URL names no resource served here, `why` after the
/// service's wording.
pub(crate) fn invalid_uri(why: &str) -> Failure {
    Failure::new(
        400,
        ErrorCode::Other("InvalidUri".to_owned()),
        format!("The requested URI does not represent any resource on the server. ({why})"),
    )
}

/// Reads a request path (without the query).
pub(crate) fn parse_path(path: &str) -> Result<Path<'_>, Failure> {
    let (account, resource) = split_account(path)?;
    let resource = match resource {
        "" => Resource::Account,
        "Tables" => Resource::Tables,
        "$batch" => Resource::Batch,
        _ if resource.contains('/') => return Err(invalid_uri("the path has too many segments")),
        _ => {
            let decoded = decode(resource)?;
            parse_resource(&decoded).ok_or_else(|| invalid_uri("the resource path is malformed"))?
        }
    };
    Ok(Path { account, resource })
}

/// A request path (without the query) split into its account and the rest, unread (a CORS
/// preflight names the account only; the rest may be any path).
pub(crate) fn split_account(path: &str) -> Result<(&str, &str), Failure> {
    let rest = path.strip_prefix('/').ok_or_else(|| invalid_uri("the path is not absolute"))?;
    let (account, resource) = rest.split_once('/').unwrap_or((rest, ""));
    if account.is_empty() {
        return Err(invalid_uri("the path names no account"));
    }
    Ok((account, resource))
}

/// Percent-decodes `text` as UTF-8.
fn decode(text: &str) -> Result<String, Failure> {
    percent_decode(text)
        .map(Cow::into_owned)
        .ok_or_else(|| invalid_uri("a percent-encoded path is not UTF-8"))
}

/// `text` with each `%` and two hex digits replaced by the byte they spell, read as UTF-8
/// (`None` when the bytes are not UTF-8); borrowed when there is no `%`. A `%` without two hex
/// digits after it stays as it is, and `+` stays a `+`: the decoding of the
/// `percent-encoding` crate (the tests hold this to it), with the text between escapes copied
/// whole rather than byte by byte through the crate's iterator: every SAS request decodes its
/// signature and expiry.
fn percent_decode(text: &str) -> Option<Cow<'_, str>> {
    if memchr::memchr(b'%', text.as_bytes()).is_none() {
        return Some(Cow::Borrowed(text));
    }
    let hex = |digit: &u8| char::from(*digit).to_digit(16);
    let mut decoded = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some(at) = memchr::memchr(b'%', rest) {
        let (before, escape) = rest.split_at(at);
        decoded.extend_from_slice(before);
        rest = match escape {
            [_, high, low, after @ ..] if let (Some(high), Some(low)) = (hex(high), hex(low)) => {
                decoded.push(u8::try_from(high * 16 + low).ok()?);
                after
            }
            [percent, after @ ..] => {
                decoded.push(*percent);
                after
            }
            // Not reached: `escape` starts with the `%` found.
            [] => break,
        };
    }
    decoded.extend_from_slice(rest);
    String::from_utf8(decoded).ok().map(Cow::Owned)
}

/// A decoded resource segment other than `Tables` and `$batch`.
fn parse_resource(segment: &str) -> Option<Resource> {
    let Some((name, arguments)) = segment.split_once('(') else {
        return Some(Resource::Entities(segment.to_owned()));
    };
    let mut cursor = Cursor(arguments);
    if name == "Tables" {
        let table = cursor.literal()?;
        cursor.end()?;
        return Some(Resource::Table(table));
    }
    if cursor.0 == ")" {
        return Some(Resource::Entities(name.to_owned()));
    }
    cursor.expect("PartitionKey=")?;
    let partition_key = cursor.literal()?;
    cursor.expect(",RowKey=")?;
    let row_key = cursor.literal()?;
    cursor.end()?;
    Some(Resource::Entity { table: name.to_owned(), partition_key, row_key })
}

/// The unread rest of a resource's argument list.
struct Cursor<'a>(&'a str);

impl Cursor<'_> {
    fn expect(&mut self, text: &str) -> Option<()> {
        self.0 = self.0.strip_prefix(text)?;
        Some(())
    }

    /// A quoted literal, `''` inside standing for one `'`.
    fn literal(&mut self) -> Option<String> {
        let mut rest = self.0.strip_prefix('\'')?;
        let mut text = String::new();
        loop {
            let quote = rest.find('\'')?;
            text.push_str(&rest[..quote]);
            rest = &rest[quote + 1..];
            match rest.strip_prefix('\'') {
                Some(after) => {
                    text.push('\'');
                    rest = after;
                }
                None => break,
            }
        }
        self.0 = rest;
        Some(text)
    }

    /// The closing parenthesis, and nothing after it.
    fn end(&mut self) -> Option<()> {
        (self.0 == ")").then_some(())
    }
}

/// The query parameters of a request, percent-decoded, each name at most once. A part with
/// nothing to decode (no `%`) is borrowed from the request's URI, as most are.
#[derive(Debug, Default)]
pub(crate) struct Query<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'a> Query<'a> {
    /// Reads a query string (without `?`). A parameter given twice, or not UTF-8 once
    /// decoded, is refused.
    pub(crate) fn parse(query: &'a str) -> Result<Query<'a>, Failure> {
        // One pass over the bytes that matter (`&`, `=`, `%`): a SAS alone is 8 to 10
        // parameters, and only its signature and times have escapes to decode.
        let bytes = query.as_bytes();
        let mut pairs = Vec::with_capacity(memchr::memchr_iter(b'&', bytes).count() + 1);
        let (mut start, mut equals, mut escaped) = (0, None, [false; 2]);
        for at in memchr::memchr3_iter(b'&', b'=', b'%', bytes).chain([bytes.len()]) {
            match bytes.get(at) {
                Some(b'=') => {
                    equals.get_or_insert(at);
                }
                // In the name before the first `=`, in the value after it.
                Some(b'%') => escaped[usize::from(equals.is_some())] = true,
                _ => {
                    // `&`, `=` and `%` are ASCII, so every cut is at a character boundary.
                    let (name, value) = match equals {
                        Some(equals) => (&query[start..equals], &query[equals + 1..at]),
                        None => (&query[start..at], ""),
                    };
                    if at > start {
                        let name = decode_query(name, escaped[0])?;
                        if pairs.iter().any(|(n, _)| *n == name) {
                            return Err(Failure::invalid_input(format!(
                                "the query parameter {name} is given twice"
                            )));
                        }
                        pairs.push((name, decode_query(value, escaped[1])?));
                    }
                    (start, equals, escaped) = (at + 1, None, [false; 2]);
                }
            }
        }
        Ok(Query(pairs))
    }

    /// The value of parameter `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| &**v)
    }

    /// The values of the parameters named `name` without regard to ASCII case (`sig`, `SIG`,
    /// `Sig`), in the order given: how the service reads a SAS, its query parameters being a
    /// case-insensitive collection (the storage emulator's protocol layer, decompiled).
    pub(crate) fn get_ignoring_case<'s, 'n>(&'s self, name: &'n str) -> IgnoringCase<'s, 'n, 'a> {
        IgnoringCase { pairs: self.0.iter(), name }
    }
}

/// The values of the query parameters named `name` without regard to ASCII case
/// ([`Query::get_ignoring_case`]).
// A loop of its own rather than `filter`, whose closure stayed a call per parameter passed:
// a SAS request looks up about twenty names, and its lookups cost about 4,000 instructions
// with the closure, 3,019 this way (callgrind, table-server under the bench's lean client,
// per answer).
pub(crate) struct IgnoringCase<'s, 'n, 'a> {
    pairs: std::slice::Iter<'s, (Cow<'a, str>, Cow<'a, str>)>,
    name: &'n str,
}

impl<'s> Iterator for IgnoringCase<'s, '_, '_> {
    type Item = &'s str;

    fn next(&mut self) -> Option<&'s str> {
        for (name, value) in self.pairs.by_ref() {
            if name.eq_ignore_ascii_case(self.name) {
                return Some(value);
            }
        }
        None
    }
}

/// A query parameter's name or value, decoded when `escaped` (it holds a `%`).
fn decode_query(text: &str, escaped: bool) -> Result<Cow<'_, str>, Failure> {
    if !escaped {
        return Ok(Cow::Borrowed(text));
    }
    percent_decode(text)
        .ok_or_else(|| Failure::invalid_input("a percent-encoded query parameter is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use table_client::wire::url::{entity_path, table_path};

    use super::*;

    fn resource(path: &str) -> Option<Resource> {
        parse_path(path).ok().map(|p| p.resource)
    }

    #[test]
    fn reads_every_resource_form() {
        assert_eq!(resource("/acct/Tables"), Some(Resource::Tables));
        assert_eq!(resource("/acct"), Some(Resource::Account));
        assert_eq!(resource("/acct/"), Some(Resource::Account));
        assert_eq!(resource("/acct/$batch"), Some(Resource::Batch));
        assert_eq!(resource("/acct/Tables('t1')"), Some(Resource::Table("t1".into())));
        assert_eq!(resource("/acct/Tables(%27t1%27)"), Some(Resource::Table("t1".into())));
        assert_eq!(resource("/acct/t1"), Some(Resource::Entities("t1".into())));
        assert_eq!(resource("/acct/t1()"), Some(Resource::Entities("t1".into())));
        let entity = |pk: &str, rk: &str| {
            Some(Resource::Entity { table: "t1".into(), partition_key: pk.into(), row_key: rk.into() })
        };
        assert_eq!(resource("/acct/t1(PartitionKey='p',RowKey='r')"), entity("p", "r"));
        // As the Python SDK sends it (protocol doc section 1).
        assert_eq!(
            resource("/acct/t1(PartitionKey='a%20b%27%27%C3%A9%25%2Bx',RowKey='r1')"),
            entity("a b'é%+x", "r1")
        );
        assert_eq!(resource("/acct/t1(PartitionKey='',RowKey='+')"), entity("", "+"));
    }

    #[test]
    fn refuses_malformed_paths() {
        for bad in [
            "",
            "acct/Tables",
            "//Tables",
            "/acct/a/b",
            "/acct/t1(RowKey='r',PartitionKey='p')",
            "/acct/t1(PartitionKey='p')",
            "/acct/t1(PartitionKey='p',RowKey='r'",
            "/acct/t1(PartitionKey='p,RowKey='r')",
            "/acct/t1(PartitionKey='p',RowKey='r')x",
            "/acct/Tables('t1'",
            "/acct/t1(PartitionKey=%FF,RowKey='r')",
        ] {
            assert!(parse_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn query_parameters_are_decoded_and_given_once() {
        let q = Query::parse("$filter=a%20eq%20%27x+y%27&$top=5&flag").unwrap_or_default();
        assert_eq!(q.get("$filter"), Some("a eq 'x+y'"));
        assert_eq!(q.get("$top"), Some("5"));
        assert_eq!(q.get("flag"), Some(""));
        assert!(Query::parse("$top=1&$top=2").is_err());
        assert!(Query::parse("$top=1&%24top=2").is_err(), "the same name, once encoded");
        // Only what has something to decode is copied.
        let kinds: Vec<(bool, bool)> =
            q.0.iter().map(|(n, v)| (matches!(n, Cow::Borrowed(_)), matches!(v, Cow::Borrowed(_)))).collect();
        assert_eq!(kinds, [(true, false), (true, true), (true, true)]);
        assert!(Query::parse("$filter=%FF").is_err());
    }

    proptest! {
        /// The decoding is the `percent-encoding` crate's, on text full of escapes, stray `%`,
        /// bad hex and bytes that are not UTF-8 once decoded.
        #[test]
        fn percent_decoding_is_the_crates(text in "([a-z+ é]|%[0-9A-Fa-f]{2}|%[0-9a-gx]{0,2}|%[89a-fA-F][0-9a-fA-F]){0,12}") {
            let expected = percent_encoding::percent_decode_str(&text).decode_utf8().ok();
            prop_assert_eq!(percent_decode(&text), expected);
        }

        /// The parameters are those of `&`-separated `name=value` pieces (empty pieces skipped,
        /// a piece without `=` a name with an empty value), each decoded: the reading of the
        /// standard library's splitting, which the byte-wise one replaces.
        #[test]
        fn query_pieces_are_read_as_split_reads_them(query in "([a-c=&%é]|%2[0-9]){0,16}") {
            let decoded: Option<Vec<(Cow<'_, str>, Cow<'_, str>)>> = query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
                .map(|(name, value)| Some((percent_decode(name)?, percent_decode(value)?)))
                .collect();
            let unique = |pairs: &[(Cow<'_, str>, Cow<'_, str>)]| {
                pairs.iter().enumerate().all(|(i, (n, _))| pairs[..i].iter().all(|(m, _)| m != n))
            };
            match (Query::parse(&query), decoded) {
                (Ok(parsed), Some(expected)) => {
                    prop_assert!(unique(&expected), "{:?} read despite a repeated name", query);
                    prop_assert_eq!(parsed.0, expected);
                }
                (Ok(parsed), None) => prop_assert!(false, "{:?} read as {:?}", query, parsed),
                (Err(_), Some(expected)) => prop_assert!(!unique(&expected), "{:?} refused", query),
                (Err(_), None) => {}
            }
        }

        /// Any path and query is read or refused, never a panic.
        #[test]
        fn any_text_is_read_or_refused(path in "/[a-z]{0,3}(/.{0,40})?", query in ".{0,40}") {
            let _ = parse_path(&path);
            let _ = Query::parse(&query);
        }

        /// Every key the client can write, the server reads back.
        #[test]
        fn client_paths_round_trip(pk in ".{0,20}", rk in ".{0,20}", table in "[A-Za-z][A-Za-z0-9]{2,10}") {
            let path = format!("/acct/{}", entity_path(&table, &pk, &rk));
            prop_assert_eq!(
                resource(&path),
                Some(Resource::Entity { table: table.clone(), partition_key: pk, row_key: rk })
            );
            prop_assert_eq!(resource(&format!("/acct/{}", table_path(&table))), Some(Resource::Table(table)));
        }
    }
}
