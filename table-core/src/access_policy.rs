//! A table's stored access policies (signed identifiers) and the service's rules for them.
//!
//! A stored access policy names a set of permissions and a validity window on one table; a
//! service SAS that names the policy (`si=<id>`) takes what it does not set itself from it,
//! and the account owner revokes every such SAS at once by changing or removing the policy.
//!
//! Rules (the service's, checked by [`validate_signed_identifiers`] before any request and by
//! the embedded engine): at most [`MAX_SIGNED_IDENTIFIERS`] policies per table; each id 1 to
//! [`MAX_SIGNED_IDENTIFIER_ID_LEN`] characters; permissions drawn from `raud`.

use chrono::{DateTime, Utc};

use crate::error::Violation;

/// Most stored access policies one table holds.
pub const MAX_SIGNED_IDENTIFIERS: usize = 5;

/// Longest stored access policy id, in characters.
pub const MAX_SIGNED_IDENTIFIER_ID_LEN: usize = 64;

/// The permission letters a table policy may hold, in the service's order.
const TABLE_PERMISSIONS: &str = "raud";

/// One stored access policy of a table: its id and what a SAS naming it is allowed.
///
/// ```rust
/// use chrono::{TimeZone, Utc};
/// use table_core::SignedIdentifier;
///
/// let readers = SignedIdentifier::new("readers", "r")
///     .expiry(Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap());
/// assert_eq!(readers.permissions, "r");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIdentifier {
    /// The id a SAS names in `si=` (1 to 64 characters).
    pub id: String,
    /// The permissions granted, letters from `raud` (empty: the SAS must carry its own).
    pub permissions: String,
    /// When the policy starts to be valid; `None`: the SAS must carry its own `st` or none.
    pub start: Option<DateTime<Utc>>,
    /// When the policy expires; `None`: the SAS must carry its own `se`.
    pub expiry: Option<DateTime<Utc>>,
}

impl SignedIdentifier {
    /// A policy `id` granting `permissions` (letters from `raud`), with no start or expiry.
    pub fn new(id: impl Into<String>, permissions: impl Into<String>) -> Self {
        SignedIdentifier { id: id.into(), permissions: permissions.into(), start: None, expiry: None }
    }

    /// The policy with a start time.
    #[must_use]
    pub fn start(mut self, start: DateTime<Utc>) -> Self {
        self.start = Some(start);
        self
    }

    /// The policy with an expiry time.
    #[must_use]
    pub fn expiry(mut self, expiry: DateTime<Utc>) -> Self {
        self.expiry = Some(expiry);
        self
    }
}

/// Checks a table's whole set of stored access policies, in this order: the count, then each
/// policy's id length, then its permission letters.
pub fn validate_signed_identifiers(table: &str, identifiers: &[SignedIdentifier]) -> Result<(), Violation> {
    if identifiers.len() > MAX_SIGNED_IDENTIFIERS {
        return Err(Violation::TooManySignedIdentifiers {
            table: table.to_owned(),
            count: identifiers.len(),
            max: MAX_SIGNED_IDENTIFIERS,
        });
    }
    for identifier in identifiers {
        let length = identifier.id.chars().count();
        if !(1..=MAX_SIGNED_IDENTIFIER_ID_LEN).contains(&length) {
            return Err(Violation::SignedIdentifierId {
                id: identifier.id.clone(),
                length,
                max: MAX_SIGNED_IDENTIFIER_ID_LEN,
            });
        }
        if let Some(permission) = identifier.permissions.chars().find(|c| !TABLE_PERMISSIONS.contains(*c)) {
            return Err(Violation::AccessPolicyPermission { id: identifier.id.clone(), permission });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_are_checked_in_order() {
        let ok = SignedIdentifier::new("a", "raud");
        assert_eq!(validate_signed_identifiers("t", &vec![ok.clone(); 5]), Ok(()));
        assert!(matches!(
            validate_signed_identifiers("t", &vec![ok; 6]),
            Err(Violation::TooManySignedIdentifiers { count: 6, max: 5, .. })
        ));
        let long = SignedIdentifier::new("x".repeat(65), "r");
        assert!(matches!(
            validate_signed_identifiers("t", &[long]),
            Err(Violation::SignedIdentifierId { length: 65, .. })
        ));
        let empty = SignedIdentifier::new("", "r");
        assert!(matches!(
            validate_signed_identifiers("t", &[empty]),
            Err(Violation::SignedIdentifierId { .. })
        ));
        assert_eq!(validate_signed_identifiers("t", &[SignedIdentifier::new("x".repeat(64), "")]), Ok(()));
        let write = SignedIdentifier::new("w", "rw");
        assert!(matches!(
            validate_signed_identifiers("t", &[write]),
            Err(Violation::AccessPolicyPermission { permission: 'w', .. })
        ));
    }
}
