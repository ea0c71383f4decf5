//! The Table service's account-wide settings (analytics logging, hour and minute metrics, CORS
//! rules) and its geo-replication statistics, with the service's rules for the settings.
//!
//! A [`ServiceProperties`] value is what a get answers (every element set) and what a set
//! sends: an element left `None` is not sent, and the service keeps its current value, so a
//! set changes only what it names.
//!
//! Rules (the service's, checked by [`validate_service_properties`] before any request and by
//! the embedded engine): at most [`MAX_CORS_RULES`] CORS rules, each with at least one origin
//! and one method, methods from [`CORS_METHODS`]; at most 64 origins of at most 256
//! characters each, none empty, and `*` only alone; allowed and exposed headers each at most
//! 64 literal names and 2 `prefix*` ones, of at most 256 characters, none empty, `*` only at
//! the end; the rules' origins, methods, headers and ages at most [`MAX_CORS_RULES_SIZE`]
//! characters in all (the Azure REST docs for the counts and lengths, the storage emulator's
//! protocol layer, decompiled, for the rest); an enabled retention policy keeps 1 to
//! [`MAX_RETENTION_DAYS`] days.

use chrono::{DateTime, Utc};

use crate::error::Violation;

/// Most CORS rules the service holds.
pub const MAX_CORS_RULES: usize = 5;

/// Most characters the CORS rules hold in all: their origins, methods, headers and ages.
const MAX_CORS_RULES_SIZE: usize = 2048;

/// Most origins one CORS rule lists, and most literal header names in one header list.
const MAX_CORS_LIST: usize = 64;

/// Most `prefix*` names in one header list.
const MAX_CORS_PREFIXES: usize = 2;

/// Longest origin or header name in a CORS rule, in characters.
const MAX_CORS_ENTRY_LEN: usize = 256;

/// Longest retention period, in days.
pub const MAX_RETENTION_DAYS: u32 = 365;

/// The HTTP methods a CORS rule may allow.
pub const CORS_METHODS: [&str; 8] = ["DELETE", "GET", "HEAD", "MERGE", "PATCH", "POST", "OPTIONS", "PUT"];

/// The version of the analytics settings the service writes (`1.0`).
const ANALYTICS_VERSION: &str = "1.0";

/// The Table service's settings; see the module docs for what `None` means.
///
/// ```rust
/// use table_core::{Metrics, ServiceProperties};
///
/// // Turn hour metrics on, keeping a week; leave logging, minute metrics and CORS as they are.
/// let change = ServiceProperties { hour_metrics: Some(Metrics::enabled(true, Some(7))), ..Default::default() };
/// assert!(change.cors.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceProperties {
    /// Analytics logging (`Logging`).
    pub logging: Option<Logging>,
    /// Hourly metrics (`HourMetrics`).
    pub hour_metrics: Option<Metrics>,
    /// Minute metrics (`MinuteMetrics`).
    pub minute_metrics: Option<Metrics>,
    /// CORS rules (`Cors`); `Some(vec![])` removes every rule.
    pub cors: Option<Vec<CorsRule>>,
}

impl ServiceProperties {
    /// The settings of a new account: logging, metrics and CORS all off.
    pub fn service_defaults() -> Self {
        ServiceProperties {
            logging: Some(Logging::default()),
            hour_metrics: Some(Metrics::disabled()),
            minute_metrics: Some(Metrics::disabled()),
            cors: Some(Vec::new()),
        }
    }

    /// `self` with every element `change` sets replaced, as the service applies a set.
    #[must_use]
    pub fn updated_with(self, change: &ServiceProperties) -> Self {
        ServiceProperties {
            logging: change.logging.clone().or(self.logging),
            hour_metrics: change.hour_metrics.clone().or(self.hour_metrics),
            minute_metrics: change.minute_metrics.clone().or(self.minute_metrics),
            cors: change.cors.clone().or(self.cors),
        }
    }
}

/// Which requests analytics logging records, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logging {
    /// The analytics version (`1.0`).
    pub version: String,
    /// Log delete requests.
    pub delete: bool,
    /// Log read requests.
    pub read: bool,
    /// Log write requests.
    pub write: bool,
    /// Days the logs are kept (1 to 365); `None`: no retention policy, kept until deleted.
    pub retention_days: Option<u32>,
}

impl Default for Logging {
    /// Nothing logged.
    fn default() -> Self {
        Logging {
            version: ANALYTICS_VERSION.to_owned(),
            delete: false,
            read: false,
            write: false,
            retention_days: None,
        }
    }
}

/// Hour or minute metrics: whether they are collected, per API too, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metrics {
    /// The analytics version (`1.0`).
    pub version: String,
    /// Metrics are collected.
    pub enabled: bool,
    /// Metrics are also collected per API operation (only meaningful when enabled).
    pub include_apis: bool,
    /// Days the metrics are kept (1 to 365); `None`: no retention policy.
    pub retention_days: Option<u32>,
}

impl Metrics {
    /// Metrics off.
    pub fn disabled() -> Self {
        Metrics {
            version: ANALYTICS_VERSION.to_owned(),
            enabled: false,
            include_apis: false,
            retention_days: None,
        }
    }

    /// Metrics on, per API too when `include_apis`, kept `retention_days` (1 to 365) or until
    /// deleted.
    pub fn enabled(include_apis: bool, retention_days: Option<u32>) -> Self {
        Metrics { version: ANALYTICS_VERSION.to_owned(), enabled: true, include_apis, retention_days }
    }
}

/// One CORS rule: which origins may call the service from a browser, with which methods and
/// headers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CorsRule {
    /// Origins allowed (`https://contoso.com`), or `*` for any.
    pub allowed_origins: Vec<String>,
    /// Methods allowed, from [`CORS_METHODS`].
    pub allowed_methods: Vec<String>,
    /// Request headers allowed (a `prefix*` allows every header with that prefix).
    pub allowed_headers: Vec<String>,
    /// Response headers exposed to the browser.
    pub exposed_headers: Vec<String>,
    /// How long a browser may cache the preflight answer, in seconds.
    pub max_age_seconds: u32,
}

/// The geo-replication state of the account, as its secondary location reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStatistics {
    /// Whether the secondary is in sync.
    pub status: GeoReplicationStatus,
    /// Every write before this instant is readable at the secondary; `None` when the service
    /// gives none (replication not yet bootstrapped, or the embedded engine, which has no
    /// secondary).
    pub last_sync_time: Option<DateTime<Utc>>,
}

/// The state of geo-replication.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GeoReplicationStatus {
    /// The secondary is active and in sync up to the last sync time.
    Live,
    /// The initial copy to the secondary is in progress.
    Bootstrap,
    /// The secondary cannot be reached.
    Unavailable,
}

impl GeoReplicationStatus {
    /// The status as the service spells it (`live`, `bootstrap`, `unavailable`).
    pub fn as_str(&self) -> &'static str {
        match self {
            GeoReplicationStatus::Live => "live",
            GeoReplicationStatus::Bootstrap => "bootstrap",
            GeoReplicationStatus::Unavailable => "unavailable",
        }
    }

    /// Reads a status as the service spells it; `None` for any other text.
    pub fn parse(text: &str) -> Option<Self> {
        [GeoReplicationStatus::Live, GeoReplicationStatus::Bootstrap, GeoReplicationStatus::Unavailable]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// Checks the settings a set would send, in this order: the CORS rule count, each rule, the
/// rules' size, then the retention periods of logging, hour metrics and minute metrics.
pub fn validate_service_properties(properties: &ServiceProperties) -> Result<(), Violation> {
    if let Some(rules) = &properties.cors {
        if rules.len() > MAX_CORS_RULES {
            return Err(Violation::TooManyCorsRules { count: rules.len(), max: MAX_CORS_RULES });
        }
        for (index, rule) in rules.iter().enumerate() {
            check_cors_rule(rule).map_err(|reason| Violation::CorsRule { index, reason })?;
        }
        let size = rules.iter().map(cors_rule_size).sum();
        if size > MAX_CORS_RULES_SIZE {
            return Err(Violation::CorsRulesTooLarge { size, max: MAX_CORS_RULES_SIZE });
        }
    }
    let retentions = [
        ("logging", properties.logging.as_ref().and_then(|l| l.retention_days)),
        ("hour metrics", properties.hour_metrics.as_ref().and_then(|m| m.retention_days)),
        ("minute metrics", properties.minute_metrics.as_ref().and_then(|m| m.retention_days)),
    ];
    for (setting, days) in retentions {
        if let Some(days) = days.filter(|d| !(1..=MAX_RETENTION_DAYS).contains(d)) {
            return Err(Violation::RetentionDays { setting, days, max: MAX_RETENTION_DAYS });
        }
    }
    Ok(())
}

/// One rule: an origin and a method at least, every method known, then the limits of its
/// origins, allowed headers and exposed headers.
fn check_cors_rule(rule: &CorsRule) -> Result<(), String> {
    if rule.allowed_origins.is_empty() {
        return Err("it allows no origin".to_owned());
    }
    if rule.allowed_methods.is_empty() {
        return Err("it allows no method".to_owned());
    }
    if let Some(method) = rule.allowed_methods.iter().find(|m| !CORS_METHODS.contains(&m.as_str())) {
        return Err(format!(
            "{method:?} is not a method CORS rules allow (expected one of {})",
            CORS_METHODS.join(", ")
        ));
    }
    let origins = &rule.allowed_origins;
    if origins.len() > MAX_CORS_LIST {
        return Err(format!("it lists {} origins; the limit is {MAX_CORS_LIST}", origins.len()));
    }
    check_cors_entries("origin", origins)?;
    if origins.len() > 1 && origins.iter().any(|origin| origin == "*") {
        return Err("it lists * beside other origins".to_owned());
    }
    check_cors_headers("allowed", &rule.allowed_headers)?;
    check_cors_headers("exposed", &rule.exposed_headers)
}

/// No entry of a rule's list of `what` is empty or longer than [`MAX_CORS_ENTRY_LEN`].
fn check_cors_entries(what: &str, entries: &[String]) -> Result<(), String> {
    if entries.iter().any(|entry| entry.trim().is_empty()) {
        return Err(format!("it lists an empty {what}"));
    }
    match entries.iter().find(|entry| entry.chars().count() > MAX_CORS_ENTRY_LEN) {
        Some(long) => Err(format!("the {what} {long:?} is over {MAX_CORS_ENTRY_LEN} characters")),
        None => Ok(()),
    }
}

/// A header list (`allowed` or `exposed`): entries as [`check_cors_entries`] wants them, `*`
/// only at the end of a name, at most [`MAX_CORS_LIST`] literal names and
/// [`MAX_CORS_PREFIXES`] `prefix*` ones.
fn check_cors_headers(which: &str, headers: &[String]) -> Result<(), String> {
    check_cors_entries(&format!("{which} header"), headers)?;
    if let Some(misplaced) = headers.iter().find(|h| h.find('*').is_some_and(|at| at + 1 != h.len())) {
        return Err(format!("the {which} header {misplaced:?} has * other than at its end"));
    }
    let prefixes = headers.iter().filter(|h| h.ends_with('*')).count();
    if prefixes > MAX_CORS_PREFIXES {
        return Err(format!("it lists {prefixes} {which} header prefixes; the limit is {MAX_CORS_PREFIXES}"));
    }
    let literals = headers.len() - prefixes;
    if literals > MAX_CORS_LIST {
        return Err(format!("it lists {literals} {which} header names; the limit is {MAX_CORS_LIST}"));
    }
    Ok(())
}

/// The characters a rule counts toward [`MAX_CORS_RULES_SIZE`]: its origins, methods, header
/// names and the digits of its age, as the service counts them.
fn cors_rule_size(rule: &CorsRule) -> usize {
    let lists = [&rule.allowed_origins, &rule.allowed_methods, &rule.allowed_headers, &rule.exposed_headers];
    let text: usize = lists.iter().flat_map(|list| list.iter()).map(|entry| entry.chars().count()).sum();
    text + rule.max_age_seconds.to_string().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> CorsRule {
        CorsRule {
            allowed_origins: vec!["*".into()],
            allowed_methods: vec!["GET".into()],
            ..CorsRule::default()
        }
    }

    #[test]
    fn cors_and_retention_rules() {
        let mut p = ServiceProperties::service_defaults();
        assert_eq!(validate_service_properties(&p), Ok(()));
        p.cors = Some(vec![rule(); 6]);
        assert!(matches!(validate_service_properties(&p), Err(Violation::TooManyCorsRules { count: 6, .. })));
        p.cors = Some(vec![rule(), CorsRule { allowed_methods: vec!["TRACE".into()], ..rule() }]);
        assert!(matches!(validate_service_properties(&p), Err(Violation::CorsRule { index: 1, .. })));
        p.cors = None;
        p.minute_metrics = Some(Metrics::enabled(false, Some(366)));
        assert!(matches!(
            validate_service_properties(&p),
            Err(Violation::RetentionDays { setting: "minute metrics", days: 366, .. })
        ));
        p.minute_metrics = Some(Metrics::enabled(false, Some(365)));
        p.logging = Some(Logging { retention_days: Some(0), ..Logging::default() });
        assert!(matches!(
            validate_service_properties(&p),
            Err(Violation::RetentionDays { setting: "logging", .. })
        ));
    }

    /// The limits of a rule's origins and header lists, and of the rules' size, each just past
    /// its limit and at it.
    #[test]
    fn cors_lists_have_the_services_limits() {
        let names =
            |count: usize, prefix: &str| (0..count).map(|i| format!("{prefix}{i}")).collect::<Vec<_>>();
        let refused = |rule: CorsRule| {
            let p = ServiceProperties { cors: Some(vec![rule]), ..Default::default() };
            match validate_service_properties(&p) {
                Err(Violation::CorsRule { index: 0, reason }) => Some(reason),
                Ok(()) => None,
                Err(other) => Some(format!("unexpected {other:?}")),
            }
        };
        let origins = |origins: Vec<String>| CorsRule { allowed_origins: origins, ..rule() };
        assert_eq!(refused(origins(names(64, "https://o"))), None);
        assert!(refused(origins(names(65, "https://o"))).is_some_and(|r| r.contains("65 origins")));
        assert!(refused(origins(vec!["*".into(), "https://a".into()])).is_some_and(|r| r.contains("beside")));
        assert!(refused(origins(vec![" ".into()])).is_some_and(|r| r.contains("empty origin")));
        assert_eq!(refused(origins(vec!["o".repeat(256)])), None);
        assert!(refused(origins(vec!["o".repeat(257)])).is_some_and(|r| r.contains("over 256")));
        for (allowed, exposed) in [(true, false), (false, true)] {
            let headers = |headers: Vec<String>| CorsRule {
                allowed_headers: if allowed { headers.clone() } else { Vec::new() },
                exposed_headers: if exposed { headers } else { Vec::new() },
                ..rule()
            };
            let with_prefixes = |literals: usize, prefixes: usize| {
                let mut all = names(literals, "x-h");
                all.extend(names(prefixes, "x-p").into_iter().map(|p| p + "*"));
                headers(all)
            };
            assert_eq!(refused(with_prefixes(64, 2)), None);
            assert!(refused(with_prefixes(65, 0)).is_some_and(|r| r.contains("65")), "{allowed}");
            assert!(refused(with_prefixes(0, 3)).is_some_and(|r| r.contains("3")), "{allowed}");
            assert_eq!(refused(headers(vec!["*".into()])), None);
            assert!(refused(headers(vec!["x-*-y".into()])).is_some_and(|r| r.contains("end")));
            assert!(refused(headers(vec![String::new()])).is_some_and(|r| r.contains("empty")));
            assert!(refused(headers(vec!["h".repeat(257)])).is_some_and(|r| r.contains("over 256")));
        }
        // 5 rules of 2 origins of 256 characters, 3 methods (`GET`) and a one-digit age: 2580.
        let big = CorsRule {
            allowed_origins: vec!["o".repeat(256), "p".repeat(256)],
            allowed_methods: vec!["GET".into()],
            ..CorsRule::default()
        };
        let p = ServiceProperties { cors: Some(vec![big.clone(); 5]), ..Default::default() };
        assert_eq!(
            validate_service_properties(&p),
            Err(Violation::CorsRulesTooLarge { size: 5 * 516, max: MAX_CORS_RULES_SIZE })
        );
        assert_eq!(
            Violation::CorsRulesTooLarge { size: 1, max: 0 }.code(),
            crate::ErrorCode::InvalidXmlDocument
        );
        let p = ServiceProperties { cors: Some(vec![big; 3]), ..Default::default() };
        assert_eq!(validate_service_properties(&p), Ok(()));
    }

    #[test]
    fn a_set_replaces_only_what_it_names() {
        let change = ServiceProperties { cors: Some(vec![rule()]), ..Default::default() };
        let after = ServiceProperties::service_defaults().updated_with(&change);
        assert_eq!(after.cors, Some(vec![rule()]));
        assert_eq!(after.logging, Some(Logging::default()));
    }
}
