//! The Table service's account-wide settings (analytics logging, hour and minute metrics, CORS
//! rules) and its geo-replication statistics, with the service's rules for the settings.
//!
//! A [`ServiceProperties`] value is what a get answers (every element set) and what a set
//! sends: an element left `None` is not sent, and the service keeps its current value, so a
//! set changes only what it names.
//!
//! Rules (the service's, checked by [`validate_service_properties`] before any request and by
//! the embedded engine): at most [`MAX_CORS_RULES`] CORS rules, each with at least one origin
//! and one method, methods from [`CORS_METHODS`]; an enabled retention policy keeps 1 to
//! [`MAX_RETENTION_DAYS`] days.

use chrono::{DateTime, Utc};

use crate::error::Violation;

/// Most CORS rules the service holds.
pub const MAX_CORS_RULES: usize = 5;

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

/// Checks the settings a set would send, in this order: the CORS rule count, each rule, then
/// the retention periods of logging, hour metrics and minute metrics.
pub fn validate_service_properties(properties: &ServiceProperties) -> Result<(), Violation> {
    if let Some(rules) = &properties.cors {
        if rules.len() > MAX_CORS_RULES {
            return Err(Violation::TooManyCorsRules { count: rules.len(), max: MAX_CORS_RULES });
        }
        for (index, rule) in rules.iter().enumerate() {
            check_cors_rule(rule).map_err(|reason| Violation::CorsRule { index, reason })?;
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

/// One rule: an origin and a method at least, every method known.
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
    Ok(())
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

    #[test]
    fn a_set_replaces_only_what_it_names() {
        let change = ServiceProperties { cors: Some(vec![rule()]), ..Default::default() };
        let after = ServiceProperties::service_defaults().updated_with(&change);
        assert_eq!(after.cors, Some(vec![rule()]));
        assert_eq!(after.logging, Some(Logging::default()));
    }
}
