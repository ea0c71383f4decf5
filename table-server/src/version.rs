//! The versions of the Table service (`x-ms-version`, a SAS's `sv`): the ones the service
//! knows, in one list, and the thresholds where its answers change.
//!
//! Invariant: a [`ServiceVersion`] is always one of [`KNOWN`], so a request is only ever served at a
//! version the service knows (a date after the newest is served at the newest, see
//! [`ServiceVersion::known`]); text naming no version is refused where it is read (400
//! `InvalidHeaderValue` for `x-ms-version`, 403 `AuthenticationFailed` for `sv`).

/// The Table service's versions, oldest first. Sources: the storage emulator's protocol layer,
/// decompiled (its version table, 2008-10-27 to 2017-04-17, 2016-10-16 included, which the
/// REST docs do not list); the REST docs' lists of storage versions ("Previous Azure Storage
/// service versions", "Versioning for Azure Storage") from 2017-07-29 to 2025-11-05, which the
/// .NET storage SDK's `ServiceVersion` enum agrees with; and the 2026 versions Azurite 3.37
/// accepts. Dates, so text order is time order.
const KNOWN: [&str; 51] = [
    "2008-10-27",
    "2009-04-14",
    "2009-07-17",
    "2009-09-19",
    "2011-08-18",
    "2012-02-12",
    "2013-08-15",
    "2014-02-14",
    "2015-02-21",
    "2015-04-05",
    "2015-07-08",
    "2015-12-11",
    "2016-05-31",
    "2016-10-16",
    "2017-04-17",
    "2017-07-29",
    "2017-11-09",
    "2018-03-28",
    "2018-11-09",
    "2019-02-02",
    "2019-07-07",
    "2019-10-10",
    "2019-12-12",
    "2020-02-10",
    "2020-04-08",
    "2020-06-12",
    "2020-08-04",
    "2020-10-02",
    "2020-12-06",
    "2021-02-12",
    "2021-04-10",
    "2021-06-08",
    "2021-08-06",
    "2021-10-04",
    "2021-12-02",
    "2022-11-02",
    "2023-01-03",
    "2023-05-03",
    "2023-08-03",
    "2023-11-03",
    "2024-02-04",
    "2024-05-04",
    "2024-08-04",
    "2024-11-04",
    "2025-01-05",
    "2025-05-05",
    "2025-07-05",
    "2025-11-05",
    "2026-02-06",
    "2026-04-06",
    "2026-06-06",
];

/// A version of the Table service, one of [`KNOWN`]; ordered by date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ServiceVersion(&'static str);

impl ServiceVersion {
    /// The version a request naming none (no SAS `sv`, no `x-ms-version`) is served at: the
    /// service's oldest, as the service assumes it (the storage emulator's protocol layer,
    /// decompiled; an unversioned request to the service is answered in XML whatever it
    /// accepts, as that version's are). JSON needs [`ServiceVersion::JSON_SINCE`], so such a
    /// request gets none.
    pub(crate) const DEFAULT: ServiceVersion = ServiceVersion("2008-10-27");

    /// The first version whose answers carry `x-ms-version`.
    pub(crate) const ECHOED_SINCE: ServiceVersion = ServiceVersion("2009-09-19");

    /// The first version that reads and writes JSON.
    pub(crate) const JSON_SINCE: ServiceVersion = ServiceVersion("2013-08-15");

    /// The first version that takes a bearer token (the REST docs, "Versioning for Azure
    /// Storage": OAuth requests need `x-ms-version` 2017-11-09 or later).
    pub(crate) const BEARER_SINCE: ServiceVersion = ServiceVersion("2017-11-09");

    /// The first SAS version whose requests may name the version they are served at in an
    /// `api-version` query parameter (the storage emulator's protocol layer, decompiled).
    pub(crate) const API_VERSION_SINCE: ServiceVersion = ServiceVersion("2014-02-14");

    /// The newest version of [`KNOWN`].
    pub(crate) const NEWEST: ServiceVersion = ServiceVersion(KNOWN[KNOWN.len() - 1]);

    /// The version `text` names, compared exactly (no trimming, no other spelling), as the
    /// service looks a version up; `None` for one it does not know. A calendar date after
    /// [`NEWEST`](Self::NEWEST) is served at it: the service knows the versions released
    /// since this list was written, so an SDK newer than this server must keep working, as it
    /// does against the service (Azurite refuses such versions unless started with
    /// `--skipApiVersionCheck`). Only dates between or before known versions are refused.
    pub(crate) fn known(text: &[u8]) -> Option<ServiceVersion> {
        let wanted = sort_key(text)?;
        match KNOWN.binary_search_by_key(&wanted, |known| sort_key(known.as_bytes()).unwrap_or(0)) {
            Ok(at) => Some(ServiceVersion(KNOWN[at])),
            Err(at) if at == KNOWN.len() && is_date(text) => Some(ServiceVersion::NEWEST),
            Err(_) => None,
        }
    }

    /// `YYYY-MM-DD`.
    pub(crate) const fn as_str(self) -> &'static str {
        self.0
    }
}

/// Why a version named by `source` (`x-ms-version`, `api-version`) is refused: the text it
/// gives is quoted when printable and short, as no hostile value is.
pub(crate) fn not_a_version(source: &str, text: Option<&str>) -> String {
    match text.filter(|text| text.len() <= MAX_VERSION_QUOTED) {
        Some(text) => format!("{source} {text:?} is not a version of the Table service"),
        None => format!("{source} is not a version of the Table service"),
    }
}

/// The longest version text an error message quotes.
const MAX_VERSION_QUOTED: usize = 64;

/// Whether `text` is a calendar date written `YYYY-MM-DD`.
fn is_date(text: &[u8]) -> bool {
    let shaped = text.len() == 10
        && text
            .iter()
            .enumerate()
            .all(|(at, b)| if at == 4 || at == 7 { *b == b'-' } else { b.is_ascii_digit() });
    shaped
        && std::str::from_utf8(text)
            .is_ok_and(|text| chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok())
}

/// The ten bytes of `YYYY-MM-DD` read as one big-endian number, whose order is the text's:
/// looked up on every request, a version is compared in one step rather than byte by byte.
/// `None` for text of another length, which is no version.
fn sort_key(text: &[u8]) -> Option<u128> {
    let ten: [u8; 10] = text.try_into().ok()?;
    let mut wide = [0; 16];
    wide[..10].copy_from_slice(&ten);
    Some(u128::from_be_bytes(wide))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_and_holds_every_threshold() {
        assert!(KNOWN.windows(2).all(|pair| pair[0] < pair[1]), "sorted, each once");
        for threshold in [
            ServiceVersion::DEFAULT,
            ServiceVersion::ECHOED_SINCE,
            ServiceVersion::JSON_SINCE,
            ServiceVersion::BEARER_SINCE,
            ServiceVersion::API_VERSION_SINCE,
        ] {
            assert_eq!(ServiceVersion::known(threshold.as_str().as_bytes()), Some(threshold));
        }
        assert_eq!(ServiceVersion::known(KNOWN[0].as_bytes()), Some(ServiceVersion::DEFAULT), "the oldest");
    }

    #[test]
    fn only_the_services_own_versions_are_known() {
        for known in ["2008-10-27", "2013-08-15", "2016-10-16", "2019-02-02", "2020-12-06", "2025-11-05"] {
            assert_eq!(ServiceVersion::known(known.as_bytes()).map(ServiceVersion::as_str), Some(known));
        }
        // A day between two versions, a date written otherwise, text.
        for unknown in [
            "2019-02-03",
            "2012-09-19",
            "2021-02-13",
            "2026-06-05",
            "2019-2-02",
            " 2019-02-02",
            "garbage",
            "",
        ] {
            assert_eq!(ServiceVersion::known(unknown.as_bytes()), None, "{unknown:?}");
        }
        assert_eq!(ServiceVersion::known(b"2019-02-02\xff"), None);
    }

    #[test]
    fn a_date_after_the_newest_version_is_served_at_the_newest() {
        for later in ["2026-06-07", "2027-02-28", "2099-01-01"] {
            assert_eq!(ServiceVersion::known(later.as_bytes()), Some(ServiceVersion::NEWEST), "{later:?}");
        }
        // Not calendar dates, so no version at all.
        for not_a_date in ["2027-02-30", "2027-13-01", "2027-00-10", "2027-1-011", "2027+01-01", "9999-99-99"]
        {
            assert_eq!(ServiceVersion::known(not_a_date.as_bytes()), None, "{not_a_date:?}");
        }
        assert_eq!(ServiceVersion::NEWEST.as_str(), "2026-06-06");
    }
}
