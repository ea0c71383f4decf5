//! One page of a query: what is asked ([`QueryRequest`]) and what comes back ([`Page`]), with
//! the continuation that resumes exactly where the page stopped.
//!
//! Continuation tokens are opaque: the service's own tokens (`1!24!...`), Azurite's (base64)
//! or the embedded engine's. A [`Continuation`] serialises to one string so a caller can store
//! it and resume a later query.

use crate::entity::Entity;
use crate::error::{Error, Violation};
use crate::filter::Filter;

/// The position where the next page starts, as the server encoded it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Continuation {
    /// `NextPartitionKey` token.
    pub next_partition_key: String,
    /// `NextRowKey` token, when the server sent one.
    pub next_row_key: Option<String>,
}

/// The resumable string form: `<n>:<NextPartitionKey><rest>` where `<n>` is the byte length
/// of the `NextPartitionKey` token and `<rest>` is empty when there is no `NextRowKey` token,
/// or `:` followed by it. Any two token strings round-trip through [`str::parse`].
impl std::fmt::Display for Continuation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.next_partition_key.len(), self.next_partition_key)?;
        match &self.next_row_key {
            Some(rk) => write!(f, ":{rk}"),
            None => Ok(()),
        }
    }
}

impl std::str::FromStr for Continuation {
    type Err = Error;

    /// Parses the form [`Display`](std::fmt::Display) prints; anything else is
    /// [`Violation::Continuation`].
    fn from_str(s: &str) -> Result<Self, Error> {
        let malformed = || Error::invalid(Violation::Continuation { token: s.to_owned() });
        let (length, rest) = s.split_once(':').ok_or_else(malformed)?;
        if length.is_empty() || !length.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        let length: usize = length.parse().map_err(|_| malformed())?;
        let pk = rest.get(..length).ok_or_else(malformed)?;
        let next_row_key = match rest.get(length..).ok_or_else(malformed)? {
            "" => None,
            tail => Some(tail.strip_prefix(':').ok_or_else(malformed)?.to_owned()),
        };
        Ok(Continuation { next_partition_key: pk.to_owned(), next_row_key })
    }
}

/// A request for one page of entities.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryRequest {
    /// `$filter`.
    pub filter: Option<Filter>,
    /// `$select`: property names to return.
    pub select: Option<Vec<String>>,
    /// `$top`: at most this many entities in this page (1..=1000).
    pub top: Option<u32>,
    /// Where to resume.
    pub continuation: Option<Continuation>,
}

/// One page of entities.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// The entities, ordered by `PartitionKey` then `RowKey` (Azure Storage; Cosmos does not sort).
    pub entities: Vec<Entity>,
    /// Present when more entities may follow, even if this page is short or empty.
    pub continuation: Option<Continuation>,
}

/// A request for one page of table names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableQuery {
    /// `$filter` over `TableName`.
    pub filter: Option<Filter>,
    /// `$top`.
    pub top: Option<u32>,
    /// `NextTableName` token.
    pub next_table_name: Option<String>,
}

/// One page of table names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TablePage {
    /// Table names, in name order.
    pub tables: Vec<String>,
    /// `NextTableName` token, when more follow.
    pub next_table_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn continuations_round_trip_through_their_string_form(
            pk in ".*",
            rk in proptest::option::of(".*"),
        ) {
            let c = Continuation { next_partition_key: pk, next_row_key: rk };
            prop_assert_eq!(c.to_string().parse::<Continuation>().ok(), Some(c));
        }
    }

    #[test]
    fn string_forms() {
        let c = Continuation { next_partition_key: "1!4!MTM-".into(), next_row_key: Some(String::new()) };
        assert_eq!(c.to_string(), "8:1!4!MTM-:");
        let none = Continuation { next_partition_key: "a:b".into(), next_row_key: None };
        assert_eq!(none.to_string(), "3:a:b");
        for bad in ["", "x", "3:ab", "2:abc", "-1:a", ":a", "1:\u{e9}"] {
            assert!(bad.parse::<Continuation>().is_err(), "{bad:?}");
        }
    }
}
