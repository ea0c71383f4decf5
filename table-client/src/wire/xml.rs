//! The XML bodies of the account and table settings: stored access policies
//! (`<SignedIdentifiers>`, `?comp=acl`), service properties (`<StorageServiceProperties>`,
//! `?restype=service&comp=properties`) and service statistics (`<StorageServiceStats>`,
//! `?restype=service&comp=stats`), through `quick-xml`'s serde support.
//!
//! The wire shapes below are private mirrors of the public types in table-core, so the public
//! types carry no serde attributes of this format. Times in policies are ISO 8601 written to
//! the second; the statistics' last sync time is an RFC 1123 date.
//!
//! Invariant: a body that is not the XML its answer must be (not XML, another root element, a
//! required element missing, a value that does not read) is an [`ErrorKind::Decode`] error,
//! never a default or an empty list; unknown elements are ignored, as new service versions
//! add some. A CORS list keeps its empty entries (`a,,b`): refusing them is the settings'
//! validation's job (`table_core::validate_service_properties`), as on the service.
//!
//! [`ErrorKind::Decode`]: table_core::ErrorKind::Decode

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use table_core::datetime::format_rfc3339_seconds;
use table_core::{
    CorsRule, GeoReplicationStatus, Logging, Metrics, Result, ServiceProperties, ServiceStatistics,
    SignedIdentifier,
};

use crate::error;

/// The `Content-Type` of the XML bodies sent.
pub(crate) const CONTENT_XML: &str = "application/xml";

const DECLARATION: &str = r#"<?xml version="1.0" encoding="utf-8"?>"#;

#[derive(Serialize, Deserialize)]
struct SignedIdentifiersXml {
    #[serde(rename = "SignedIdentifier", default)]
    items: Vec<SignedIdentifierXml>,
}

#[derive(Serialize, Deserialize)]
struct SignedIdentifierXml {
    #[serde(rename = "Id")]
    id: String,
    #[serde(rename = "AccessPolicy", default)]
    policy: Option<AccessPolicyXml>,
}

#[derive(Serialize, Deserialize)]
struct AccessPolicyXml {
    #[serde(rename = "Start", skip_serializing_if = "Option::is_none", default)]
    start: Option<String>,
    #[serde(rename = "Expiry", skip_serializing_if = "Option::is_none", default)]
    expiry: Option<String>,
    #[serde(rename = "Permission", default)]
    permission: String,
}

#[derive(Serialize, Deserialize)]
struct ServicePropertiesXml {
    #[serde(rename = "Logging", skip_serializing_if = "Option::is_none", default)]
    logging: Option<LoggingXml>,
    #[serde(rename = "HourMetrics", skip_serializing_if = "Option::is_none", default)]
    hour_metrics: Option<MetricsXml>,
    #[serde(rename = "MinuteMetrics", skip_serializing_if = "Option::is_none", default)]
    minute_metrics: Option<MetricsXml>,
    #[serde(rename = "Cors", skip_serializing_if = "Option::is_none", default)]
    cors: Option<CorsXml>,
}

#[derive(Serialize, Deserialize)]
struct LoggingXml {
    #[serde(rename = "Version")]
    version: String,
    #[serde(rename = "Delete")]
    delete: bool,
    #[serde(rename = "Read")]
    read: bool,
    #[serde(rename = "Write")]
    write: bool,
    #[serde(rename = "RetentionPolicy")]
    retention: RetentionXml,
}

#[derive(Serialize, Deserialize)]
struct MetricsXml {
    #[serde(rename = "Version")]
    version: String,
    #[serde(rename = "Enabled")]
    enabled: bool,
    // The service wants it exactly when metrics are enabled.
    #[serde(rename = "IncludeAPIs", skip_serializing_if = "Option::is_none", default)]
    include_apis: Option<bool>,
    #[serde(rename = "RetentionPolicy")]
    retention: RetentionXml,
}

#[derive(Serialize, Deserialize)]
struct RetentionXml {
    #[serde(rename = "Enabled")]
    enabled: bool,
    #[serde(rename = "Days", skip_serializing_if = "Option::is_none", default)]
    days: Option<u32>,
}

#[derive(Serialize, Deserialize)]
struct CorsXml {
    #[serde(rename = "CorsRule", default)]
    rules: Vec<CorsRuleXml>,
}

#[derive(Serialize, Deserialize)]
struct CorsRuleXml {
    #[serde(rename = "AllowedOrigins")]
    allowed_origins: String,
    #[serde(rename = "AllowedMethods")]
    allowed_methods: String,
    #[serde(rename = "MaxAgeInSeconds")]
    max_age_seconds: u32,
    #[serde(rename = "ExposedHeaders", default)]
    exposed_headers: String,
    #[serde(rename = "AllowedHeaders", default)]
    allowed_headers: String,
}

#[derive(Serialize, Deserialize)]
struct StatsXml {
    #[serde(rename = "GeoReplication")]
    geo: GeoReplicationXml,
}

#[derive(Serialize, Deserialize)]
struct GeoReplicationXml {
    #[serde(rename = "Status")]
    status: String,
    #[serde(rename = "LastSyncTime", default, skip_serializing_if = "Option::is_none")]
    last_sync_time: Option<String>,
}

/// The body of Set Table ACL.
pub fn encode_signed_identifiers(identifiers: &[SignedIdentifier]) -> Result<String> {
    let items = identifiers
        .iter()
        .map(|i| SignedIdentifierXml {
            id: i.id.clone(),
            policy: Some(AccessPolicyXml {
                start: i.start.map(format_rfc3339_seconds),
                expiry: i.expiry.map(format_rfc3339_seconds),
                permission: i.permissions.clone(),
            }),
        })
        .collect();
    encode("SignedIdentifiers", &SignedIdentifiersXml { items })
}

/// The stored access policies of a Get Table ACL answer, in the order sent.
pub fn decode_signed_identifiers(body: &[u8]) -> Result<Vec<SignedIdentifier>> {
    let parsed: SignedIdentifiersXml = decode(body, "SignedIdentifiers")?;
    parsed
        .items
        .into_iter()
        .map(|item| {
            let policy = item.policy.unwrap_or(AccessPolicyXml {
                start: None,
                expiry: None,
                permission: String::new(),
            });
            Ok(SignedIdentifier {
                start: policy.start.as_deref().map(|t| iso_time(t, "Start")).transpose()?,
                expiry: policy.expiry.as_deref().map(|t| iso_time(t, "Expiry")).transpose()?,
                permissions: policy.permission,
                id: item.id,
            })
        })
        .collect()
}

/// The body of Set Table Service Properties: only the elements `properties` sets.
pub fn encode_service_properties(properties: &ServiceProperties) -> Result<String> {
    let retention = |days: Option<u32>| RetentionXml { enabled: days.is_some(), days };
    let metrics = |m: &Metrics| MetricsXml {
        version: m.version.clone(),
        enabled: m.enabled,
        include_apis: m.enabled.then_some(m.include_apis),
        retention: retention(m.retention_days),
    };
    let list = |items: &[String]| items.join(",");
    let wire = ServicePropertiesXml {
        logging: properties.logging.as_ref().map(|l| LoggingXml {
            version: l.version.clone(),
            delete: l.delete,
            read: l.read,
            write: l.write,
            retention: retention(l.retention_days),
        }),
        hour_metrics: properties.hour_metrics.as_ref().map(metrics),
        minute_metrics: properties.minute_metrics.as_ref().map(metrics),
        cors: properties.cors.as_ref().map(|rules| CorsXml {
            rules: rules
                .iter()
                .map(|r| CorsRuleXml {
                    allowed_origins: list(&r.allowed_origins),
                    allowed_methods: list(&r.allowed_methods),
                    max_age_seconds: r.max_age_seconds,
                    exposed_headers: list(&r.exposed_headers),
                    allowed_headers: list(&r.allowed_headers),
                })
                .collect(),
        }),
    };
    encode("StorageServiceProperties", &wire)
}

/// The settings of a Get Table Service Properties answer.
pub fn decode_service_properties(body: &[u8]) -> Result<ServiceProperties> {
    let parsed: ServicePropertiesXml = decode(body, "StorageServiceProperties")?;
    let retention = |r: RetentionXml, setting: &str| match (r.enabled, r.days) {
        (true, None) => {
            Err(error::decode(format!("the {setting} retention policy is enabled without <Days>")))
        }
        (enabled, days) => Ok(days.filter(|_| enabled)),
    };
    let metrics = |m: MetricsXml, setting: &str| -> Result<Metrics> {
        Ok(Metrics {
            version: m.version,
            enabled: m.enabled,
            include_apis: m.include_apis.unwrap_or(false),
            retention_days: retention(m.retention, setting)?,
        })
    };
    // A CORS list as the service reads it: an empty element is an empty list, otherwise every
    // comma-separated entry is kept, an empty one (`a,,b`, `a,`) too, so that the settings'
    // validation refuses it as the service does rather than the reader hiding it.
    let list = |text: String| -> Vec<String> {
        if text.is_empty() {
            return Vec::new();
        }
        text.split(',').map(|entry| entry.trim().to_owned()).collect()
    };
    Ok(ServiceProperties {
        logging: parsed
            .logging
            .map(|l| -> Result<Logging> {
                Ok(Logging {
                    version: l.version,
                    delete: l.delete,
                    read: l.read,
                    write: l.write,
                    retention_days: retention(l.retention, "logging")?,
                })
            })
            .transpose()?,
        hour_metrics: parsed.hour_metrics.map(|m| metrics(m, "hour metrics")).transpose()?,
        minute_metrics: parsed.minute_metrics.map(|m| metrics(m, "minute metrics")).transpose()?,
        cors: parsed.cors.map(|c| {
            c.rules
                .into_iter()
                .map(|r| CorsRule {
                    allowed_origins: list(r.allowed_origins),
                    allowed_methods: list(r.allowed_methods),
                    allowed_headers: list(r.allowed_headers),
                    exposed_headers: list(r.exposed_headers),
                    max_age_seconds: r.max_age_seconds,
                })
                .collect()
        }),
    })
}

/// The body of a Get Table Service Stats answer (what a server sends; the time in the
/// service's RFC 1123 form).
pub fn encode_service_statistics(statistics: &ServiceStatistics) -> Result<String> {
    let geo = GeoReplicationXml {
        status: statistics.status.as_str().to_owned(),
        last_sync_time: statistics.last_sync_time.map(|t| t.format("%a, %d %b %Y %H:%M:%S GMT").to_string()),
    };
    encode("StorageServiceStats", &StatsXml { geo })
}

/// The statistics of a Get Table Service Stats answer.
pub fn decode_service_statistics(body: &[u8]) -> Result<ServiceStatistics> {
    let parsed: StatsXml = decode(body, "StorageServiceStats")?;
    let status = GeoReplicationStatus::parse(parsed.geo.status.trim()).ok_or_else(|| {
        error::decode(format!(
            "the geo-replication status {:?} is not live, bootstrap or unavailable",
            parsed.geo.status
        ))
    })?;
    let last_sync_time = match parsed.geo.last_sync_time.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(
            DateTime::parse_from_rfc2822(text)
                .or_else(|_| DateTime::parse_from_rfc3339(text))
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    error::decode(format!("the last sync time {text:?} is not a date")).with_source(e)
                })?,
        ),
    };
    Ok(ServiceStatistics { status, last_sync_time })
}

fn encode<T: Serialize>(root: &str, value: &T) -> Result<String> {
    let body = quick_xml::se::to_string_with_root(root, value)
        .map_err(|e| error::invalid_input(format!("could not write the <{root}> XML body")).with_source(e))?;
    Ok(format!("{DECLARATION}{body}"))
}

/// Reads `body` as the XML document rooted at `<root>`.
fn decode<T: DeserializeOwned>(body: &[u8], root: &str) -> Result<T> {
    let text = std::str::from_utf8(body)
        .map_err(|e| error::decode(format!("the <{root}> answer is not UTF-8")).with_source(e))?;
    // The service starts its XML answers with a byte order mark.
    let text = text.trim_start_matches('\u{feff}');
    check_root(text, root)?;
    quick_xml::de::from_str(text).map_err(|e| {
        error::decode(format!("the <{root}> answer is not the XML the service sends")).with_source(e)
    })
}

/// The document's root element must be `<root>`: serde reads any root, and a document of
/// another kind could otherwise read as an empty list.
fn check_root(text: &str, root: &str) -> Result<()> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    loop {
        let found = match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => e.local_name().into_inner().to_owned(),
            Ok(Event::Decl(_) | Event::Comment(_) | Event::Text(_) | Event::PI(_) | Event::DocType(_)) => {
                continue;
            }
            Ok(_) => return Err(error::decode(format!("the answer has no <{root}> element"))),
            Err(e) => {
                return Err(
                    error::decode(format!("the <{root}> answer is not well-formed XML")).with_source(e)
                );
            }
        };
        if found != root {
            return Err(error::decode(format!("the answer's root element is <{found}>, not <{root}>")));
        }
        return Ok(());
    }
}

/// An ISO 8601 time of an access policy (`2030-01-01T00:00:00Z`, fractions allowed).
fn iso_time(text: &str, element: &str) -> Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text.trim()).map(|t| t.with_timezone(&Utc)).map_err(|e| {
        error::decode(format!("the access policy's <{element}> {text:?} is not a time")).with_source(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_identifiers_round_trip() {
        let t = DateTime::parse_from_rfc3339("2030-01-02T03:04:05Z").unwrap().with_timezone(&Utc);
        let ids = vec![SignedIdentifier::new("a", "raud").start(t).expiry(t), SignedIdentifier::new("b", "")];
        let body = encode_signed_identifiers(&ids).unwrap();
        assert!(
            body.contains("<SignedIdentifier><Id>a</Id><AccessPolicy><Start>2030-01-02T03:04:05Z</Start>"),
            "{body}"
        );
        assert_eq!(decode_signed_identifiers(body.as_bytes()).unwrap(), ids);
        assert_eq!(decode_signed_identifiers(b"\xef\xbb\xbf<SignedIdentifiers />").unwrap(), vec![]);
    }

    #[test]
    fn another_root_or_broken_xml_is_a_decode_error() {
        for body in [
            &b"<Foo/>"[..],
            b"",
            b"<SignedIdentifiers><SignedIdentifier>",
            b"{}",
            b"<SignedIdentifiers><SignedIdentifier><AccessPolicy/></SignedIdentifier></SignedIdentifiers>",
        ] {
            let e = decode_signed_identifiers(body).unwrap_err();
            assert_eq!(e.kind(), table_core::ErrorKind::Decode, "{body:?}: {e}");
        }
    }

    #[test]
    fn service_properties_round_trip() {
        let p = ServiceProperties {
            logging: Some(Logging { read: true, retention_days: Some(3), ..Logging::default() }),
            hour_metrics: Some(Metrics::enabled(true, Some(7))),
            minute_metrics: Some(Metrics::disabled()),
            cors: Some(vec![CorsRule {
                allowed_origins: vec!["https://a.example".into(), "https://b.example".into()],
                allowed_methods: vec!["GET".into(), "PUT".into()],
                allowed_headers: vec!["x-ms-meta-*".into()],
                exposed_headers: vec![],
                max_age_seconds: 60,
            }]),
        };
        let body = encode_service_properties(&p).unwrap();
        assert_eq!(decode_service_properties(body.as_bytes()).unwrap(), p);
        let partial = encode_service_properties(&ServiceProperties::default()).unwrap();
        assert!(partial.ends_with("<StorageServiceProperties/>"), "{partial}");
    }

    #[test]
    fn cors_lists_keep_empty_entries_and_read_an_empty_element_as_no_entry() {
        let rule = |origins: &str, headers: &str| {
            let body = format!(
                "<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>{origins}</AllowedOrigins>\
                 <AllowedMethods>GET,PUT,</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds>\
                 <ExposedHeaders/><AllowedHeaders>{headers}</AllowedHeaders></CorsRule></Cors>\
                 </StorageServiceProperties>"
            );
            decode_service_properties(body.as_bytes()).unwrap().cors.unwrap().remove(0)
        };
        let read = rule("a, ,b", "");
        assert_eq!(read.allowed_origins, ["a", "", "b"]);
        assert_eq!(read.allowed_methods, ["GET", "PUT", ""]);
        assert!(read.allowed_headers.is_empty() && read.exposed_headers.is_empty());
        assert_eq!(rule("a", ",x-ms-*").allowed_headers, ["", "x-ms-*"]);
    }

    #[test]
    fn statistics_read_both_date_forms_and_an_empty_sync_time() {
        let body = b"<StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>Wed, 01 Jan 2025 00:00:00 GMT</LastSyncTime></GeoReplication></StorageServiceStats>";
        let s = decode_service_statistics(body).unwrap();
        assert_eq!(s.status, GeoReplicationStatus::Live);
        assert_eq!(s.last_sync_time.map(format_rfc3339_seconds).as_deref(), Some("2025-01-01T00:00:00Z"));
        let body = b"<StorageServiceStats><GeoReplication><Status>bootstrap</Status><LastSyncTime/></GeoReplication></StorageServiceStats>";
        assert_eq!(decode_service_statistics(body).unwrap().last_sync_time, None);
        let body = b"<StorageServiceStats><GeoReplication><Status>sleepy</Status></GeoReplication></StorageServiceStats>";
        assert_eq!(decode_service_statistics(body).unwrap_err().kind(), table_core::ErrorKind::Decode);
    }
}
