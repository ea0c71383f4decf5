//! Cross-origin resource sharing: the account's CORS rules (set through Set Table Service
//! Properties and stored by the engine) applied to preflight and actual requests, as the
//! service applies them (the Azure REST docs "Preflight Table Request" and "CORS support for
//! Azure Storage"; Azurite's table preflight middleware agrees on the codes and messages).
//!
//! Matching, the same for both kinds of request (the storage emulator's protocol layer,
//! decompiled, settles the details): the rules are tried in their stored order and the first
//! that allows the origin and the method wins. A rule allows any origin when it lists `*`,
//! else an origin listed in it exactly (case-sensitive); a method it lists exactly (the stored
//! methods are the upper-case [`table_core::CORS_METHODS`]). A preflight is then allowed when
//! that rule allows every requested header, each equal to an allowed header or starting with
//! an allowed `prefix*`, both without regard to case; a later rule is not tried.
//!
//! Preflight (`OPTIONS` on any path of the account, answered without authorization):
//! `Origin` and `Access-Control-Request-Method` are required (400 `InvalidHeaderValue`
//! without them); a matching rule answers 200 with `Access-Control-Allow-Origin` (the origin),
//! `-Allow-Methods` (the requested method), `-Allow-Headers` (the requested headers, when
//! given), `-Max-Age` (the rule's) and `-Allow-Credentials: true`; no matching rule, or no rule
//! at all, answers 403 `CorsPreflightFailure`. The preflight echoes the origin even for a `*`
//! rule, as the service documents it (and as Azurite does): beside `-Allow-Credentials: true`,
//! a browser refuses a `*`.
//!
//! Actual requests (any other method, answered as usual, errors included): with an `Origin`
//! that a rule matches with the request's method, the answer also carries
//! `Access-Control-Allow-Origin` (`*` when the rule matched by `*`, else the origin) and
//! `Access-Control-Expose-Headers` (the answer's headers named by the rule's exposed headers,
//! literally or by `prefix*`, plus the rule's literal names; left out when that is none); a
//! rule matched by exact origin adds `Access-Control-Allow-Credentials: true`. `Vary: Origin`
//! is added to GET and HEAD answers (the only ones a browser caches) whenever the account has
//! rules, with or without `Origin`, except when the answer came from a `*` rule, whose answer
//! is the same for every origin; a `*` rule that allows a read answers it even without
//! `Origin`. A request no rule matches is answered unchanged: CORS never refuses an actual
//! request.

use hyper::Method;
use hyper::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, HeaderMap, HeaderValue, ORIGIN, VARY,
};
use table_core::{CorsRule, ErrorCode};

use crate::answer::{Answer, Failure};
use crate::request::text_header;

/// The rule list entry that allows every origin (or, as a header pattern, every header).
const ANY: &str = "*";

/// How a rule matched an origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OriginMatch {
    /// The rule lists the origin itself.
    Exact,
    /// The rule lists `*`.
    Any,
}

/// How `rule` matches `origin` (`None`: a request without one, which only `*` matches), if it
/// does; `*` is looked at first, as the service does (a stored rule cannot list both).
fn origin_match(rule: &CorsRule, origin: Option<&str>) -> Option<OriginMatch> {
    if rule.allowed_origins.iter().any(|allowed| allowed == ANY) {
        Some(OriginMatch::Any)
    } else if origin.is_some_and(|origin| rule.allowed_origins.iter().any(|allowed| allowed == origin)) {
        Some(OriginMatch::Exact)
    } else {
        None
    }
}

/// Whether `rule` allows `method`.
fn allows_method(rule: &CorsRule, method: &str) -> bool {
    rule.allowed_methods.iter().any(|allowed| allowed == method)
}

/// Whether a header `name` is one of `patterns`: equal to one, or starting with a `prefix*`
/// one, without regard to case.
fn header_matches(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|pattern| match pattern.strip_suffix('*') {
        Some(prefix) => name.get(..prefix.len()).is_some_and(|start| start.eq_ignore_ascii_case(prefix)),
        None => pattern.eq_ignore_ascii_case(name),
    })
}

/// The names of a comma-separated header list (`Access-Control-Request-Headers`), trimmed,
/// empty ones skipped.
fn header_list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|name| !name.is_empty())
}

/// The rule that answers a preflight for `origin`, `method` and the `requested` headers (none
/// when `None`): the first rule that allows the origin and the method, if it also allows every
/// header. A later rule that would allow the headers too is not looked at, as the service
/// does not.
fn preflight_rule<'r>(
    rules: &'r [CorsRule],
    origin: &str,
    method: &str,
    requested: Option<&str>,
) -> Option<&'r CorsRule> {
    let (rule, _) = actual_rule(rules, Some(origin), method)?;
    header_list(requested.unwrap_or(""))
        .all(|name| header_matches(&rule.allowed_headers, name))
        .then_some(rule)
}

/// The first rule that allows a request from `origin` with `method`, and how it matched the
/// origin.
fn actual_rule<'r>(
    rules: &'r [CorsRule],
    origin: Option<&str>,
    method: &str,
) -> Option<(&'r CorsRule, OriginMatch)> {
    rules.iter().find_map(|rule| {
        origin_match(rule, origin).filter(|_| allows_method(rule, method)).map(|m| (rule, m))
    })
}

/// 400 `InvalidHeaderValue`: a preflight without `Origin` or `Access-Control-Request-Method`
/// (or with one empty, or not ASCII text, which no rule could match).
fn missing_header(name: &str) -> Failure {
    Failure::new(
        400,
        ErrorCode::Other("InvalidHeaderValue".into()),
        format!("A required CORS header is not present. ({name} is missing, empty or not ASCII text)"),
    )
}

/// 403 `CorsPreflightFailure`: no rule allows the preflight.
fn preflight_failure() -> Failure {
    Failure::new(
        403,
        ErrorCode::Other("CorsPreflightFailure".into()),
        "CORS not enabled or no matching rule found for this request.",
    )
}

/// The answer to a preflight request with `headers`, against the account's `rules`.
pub(crate) fn preflight(rules: &[CorsRule], headers: &HeaderMap) -> Result<Answer, Failure> {
    // An empty header is a missing one, as the service reads it.
    let required = |name, shown| {
        text_header(headers, name).filter(|v| !v.is_empty()).ok_or_else(|| missing_header(shown))
    };
    let origin = required(ORIGIN, "Origin")?;
    let method = required(ACCESS_CONTROL_REQUEST_METHOD, "Access-Control-Request-Method")?;
    let requested = text_header(headers, ACCESS_CONTROL_REQUEST_HEADERS);
    let rule = preflight_rule(rules, origin, method, requested).ok_or_else(preflight_failure)?;
    let mut answer = Answer::empty(200)
        .header(ACCESS_CONTROL_ALLOW_ORIGIN, origin.to_owned())
        .header(ACCESS_CONTROL_ALLOW_METHODS, method.to_owned())
        .header(ACCESS_CONTROL_MAX_AGE, rule.max_age_seconds.to_string())
        .header(ACCESS_CONTROL_ALLOW_CREDENTIALS, "true");
    if let Some(requested) = requested {
        answer = answer.header(ACCESS_CONTROL_ALLOW_HEADERS, requested.to_owned());
    }
    Ok(answer)
}

/// Whether a request is a preflight.
pub(crate) fn is_preflight(method: &Method) -> bool {
    method == Method::OPTIONS
}

/// What an actual request's answer needs to know of the request: its `Origin` and method.
#[derive(Debug)]
pub(crate) struct ActualRequest {
    /// A non-empty `Origin`; `None` for a read without one.
    origin: Option<HeaderValue>,
    method: Method,
}

impl ActualRequest {
    /// The request's origin and method, when it is not a preflight and has a non-empty
    /// `Origin` or is a read (`GET`, `HEAD`: its answer may get `Vary`, or a `*` rule's
    /// headers, without one); `None` otherwise (nothing to add to the answer, and nothing
    /// copied).
    pub(crate) fn of(method: &Method, headers: &HeaderMap) -> Option<ActualRequest> {
        if is_preflight(method) {
            return None;
        }
        let origin = headers.get(ORIGIN).filter(|origin| !origin.is_empty()).cloned();
        let read = method == Method::GET || method == Method::HEAD;
        (origin.is_some() || read).then(|| ActualRequest { origin, method: method.clone() })
    }

    /// Adds the CORS headers the account's `rules` give the answer's `headers`.
    pub(crate) fn apply(&self, rules: &[CorsRule], headers: &mut HeaderMap) {
        if rules.is_empty() {
            return;
        }
        let cached = self.method == Method::GET || self.method == Method::HEAD;
        // An origin that is not text matches only `*`, as no rule could list it.
        let origin = self.origin.as_ref().and_then(|origin| origin.to_str().ok());
        let Some((rule, how)) = actual_rule(rules, origin, self.method.as_str()) else {
            if cached {
                headers.append(VARY, HeaderValue::from_static("Origin"));
            }
            return;
        };
        let allow_origin = match (how, &self.origin) {
            (OriginMatch::Exact, Some(origin)) => origin.clone(),
            // A `*` rule (an exact match always has an origin).
            _ => HeaderValue::from_static(ANY),
        };
        let exposed = exposed_headers(rule, headers);
        headers.append(ACCESS_CONTROL_ALLOW_ORIGIN, allow_origin);
        // A rule that exposes nothing adds no empty list.
        if let Some(exposed) = HeaderValue::try_from(exposed).ok().filter(|e| !e.is_empty()) {
            headers.append(ACCESS_CONTROL_EXPOSE_HEADERS, exposed);
        }
        if how == OriginMatch::Exact {
            headers.append(ACCESS_CONTROL_ALLOW_CREDENTIALS, HeaderValue::from_static("true"));
            if cached {
                headers.append(VARY, HeaderValue::from_static("Origin"));
            }
        }
    }
}

/// The headers every answer carries that hyper writes only as it sends it (`Transfer-Encoding`
/// when it streams), so that they are not in the answer's map yet; a `prefix*` or `*` exposes
/// them as the service's does.
const WRITTEN_LATER: [&str; 3] = ["content-length", "date", "transfer-encoding"];

/// `Access-Control-Expose-Headers` for an answer with `headers`: the answer's header names the
/// rule's exposed headers name (literally or by `prefix*`), those of [`WRITTEN_LATER`] a
/// `prefix*` names, then the rule's literal names the answer does not carry, comma-separated.
fn exposed_headers(rule: &CorsRule, headers: &HeaderMap) -> String {
    let patterns = &rule.exposed_headers;
    let present = headers.keys().map(|name| name.as_str()).filter(|name| header_matches(patterns, name));
    let prefixes: Vec<String> = patterns.iter().filter(|p| p.ends_with('*')).cloned().collect();
    let later: Vec<&str> = WRITTEN_LATER
        .into_iter()
        .filter(|name| !headers.contains_key(*name) && header_matches(&prefixes, name))
        .collect();
    let literal_absent = patterns
        .iter()
        .filter(|name| !name.ends_with('*') && !headers.contains_key(name.as_str()))
        .filter(|name| !later.iter().any(|l| name.eq_ignore_ascii_case(l)))
        .map(String::as_str);
    present.chain(later.iter().copied()).chain(literal_absent).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(origins: &[&str], methods: &[&str], headers: &[&str], exposed: &[&str]) -> CorsRule {
        let owned = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        CorsRule {
            allowed_origins: owned(origins),
            allowed_methods: owned(methods),
            allowed_headers: owned(headers),
            exposed_headers: owned(exposed),
            max_age_seconds: 60,
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap_or(VARY),
                HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")),
            );
        }
        map
    }

    fn value<'h>(map: &'h HeaderMap, name: &str) -> Option<&'h str> {
        map.get(name).and_then(|v| v.to_str().ok())
    }

    #[test]
    fn origins_match_exactly_and_case_sensitively_or_by_star() {
        let exact = rule(&["https://a.example"], &["GET"], &[], &[]);
        assert_eq!(origin_match(&exact, Some("https://a.example")), Some(OriginMatch::Exact));
        assert_eq!(origin_match(&exact, Some("https://A.example")), None);
        assert_eq!(origin_match(&exact, Some("https://a.example.evil")), None);
        assert_eq!(origin_match(&exact, None), None);
        // `*` first, as the service looks (such a rule is refused when set).
        let both = rule(&["https://a.example", "*"], &["GET"], &[], &[]);
        assert_eq!(origin_match(&both, Some("https://a.example")), Some(OriginMatch::Any));
        assert_eq!(origin_match(&both, None), Some(OriginMatch::Any));
    }

    #[test]
    fn headers_match_literally_or_by_prefix_without_regard_to_case() {
        let patterns = ["x-ms-meta-*".to_owned(), "Content-Type".to_owned()];
        assert!(header_matches(&patterns, "X-MS-META-color"));
        assert!(header_matches(&patterns, "x-ms-meta-"));
        assert!(header_matches(&patterns, "content-type"));
        assert!(!header_matches(&patterns, "content-typex"));
        assert!(!header_matches(&patterns, "x-ms-met"));
        assert!(header_matches(&["*".to_owned()], "anything"));
        assert!(!header_matches(&[], "anything"));
    }

    #[test]
    fn the_first_rule_allowing_origin_and_method_answers_by_its_headers() {
        let rules = [
            rule(&["https://a.example"], &["GET"], &["header"], &[]),
            rule(&["https://a.example"], &["PUT"], &["*"], &[]),
            rule(&["*"], &["POST", "GET"], &["head*"], &[]),
        ];
        let found = |method, requested| {
            preflight_rule(&rules, "https://a.example", method, requested)
                .and_then(|r| rules.iter().position(|x| std::ptr::eq(x, r)))
        };
        assert_eq!(found("GET", Some("header")), Some(0));
        assert_eq!(found("GET", None), Some(0));
        // The first rule allowing the origin and GET refuses the header; the third, which
        // would allow it, is not tried.
        assert_eq!(found("GET", Some("headerheader")), None);
        assert_eq!(found("POST", Some("headerheader")), Some(2));
        assert_eq!(found("GET", Some("header, other")), None);
        assert_eq!(found("PUT", Some("anything, else")), Some(1));
        assert_eq!(found("POST", Some("hea")), None);
        assert_eq!(found("DELETE", None), None);
        assert_eq!(found("get", None), None);
        assert_eq!(preflight_rule(&rules, "https://b.example", "PUT", None), None);
        assert_eq!(preflight_rule(&[], "https://a.example", "GET", None), None);
    }

    #[test]
    fn a_preflight_answers_the_request_or_the_services_refusals() {
        let rules = [rule(&["https://a.example"], &["PUT"], &["x-ms-*"], &[])];
        let asked = headers(&[
            ("origin", "https://a.example"),
            ("access-control-request-method", "PUT"),
            ("access-control-request-headers", "x-ms-date,x-ms-version"),
        ]);
        let answer = preflight(&rules, &asked).unwrap_or_else(|f| panic!("{f:?}"));
        assert_eq!(answer.status, 200);
        let header = |name: &str| answer.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_ref());
        assert_eq!(header("access-control-allow-origin"), Some("https://a.example"));
        assert_eq!(header("access-control-allow-methods"), Some("PUT"));
        assert_eq!(header("access-control-allow-headers"), Some("x-ms-date,x-ms-version"));
        assert_eq!(header("access-control-max-age"), Some("60"));
        assert_eq!(header("access-control-allow-credentials"), Some("true"));

        let refused = |pairs: &[(&str, &str)], rules: &[CorsRule]| {
            preflight(rules, &headers(pairs)).err().map(|f| (f.status, f.code.as_str().to_owned()))
        };
        let invalid = Some((400, "InvalidHeaderValue".to_owned()));
        let forbidden = Some((403, "CorsPreflightFailure".to_owned()));
        assert_eq!(refused(&[("access-control-request-method", "PUT")], &rules), invalid);
        assert_eq!(refused(&[("origin", "https://a.example")], &rules), invalid);
        assert_eq!(refused(&[("origin", ""), ("access-control-request-method", "PUT")], &rules), invalid);
        assert_eq!(
            refused(&[("origin", "https://a.example"), ("access-control-request-method", "")], &rules),
            invalid
        );
        let plain = [("origin", "https://a.example"), ("access-control-request-method", "PUT")];
        assert_eq!(refused(&plain, &[]), forbidden);
        let other = [("origin", "https://a.example"), ("access-control-request-method", "GET")];
        assert_eq!(refused(&other, &rules), forbidden);
    }

    #[test]
    fn actual_answers_get_origin_exposed_headers_credentials_and_vary() {
        let rules = [
            rule(&["https://a.example"], &["GET", "PUT"], &[], &["x-ms-request-*", "x-custom"]),
            rule(&["*"], &["GET"], &[], &["*"]),
            rule(&["https://c.example"], &["DELETE"], &[], &[]),
        ];
        let answered = |origin: &str, method: Method, rules: &[CorsRule]| {
            let mut answer = headers(&[("x-ms-request-id", "1"), ("content-type", "application/json")]);
            let origin = headers(&[("origin", origin)]);
            if let Some(request) = ActualRequest::of(&method, &origin) {
                request.apply(rules, &mut answer);
            }
            answer
        };
        let exact = answered("https://a.example", Method::GET, &rules);
        assert_eq!(value(&exact, "access-control-allow-origin"), Some("https://a.example"));
        assert_eq!(value(&exact, "access-control-expose-headers"), Some("x-ms-request-id,x-custom"));
        assert_eq!(value(&exact, "access-control-allow-credentials"), Some("true"));
        assert_eq!(value(&exact, "vary"), Some("Origin"));

        let any = answered("https://b.example", Method::GET, &rules);
        assert_eq!(value(&any, "access-control-allow-origin"), Some("*"));
        assert_eq!(
            value(&any, "access-control-expose-headers"),
            Some("x-ms-request-id,content-type,content-length,date,transfer-encoding"),
            "`*` exposes the headers hyper writes later too"
        );
        let prefixed = [rule(&["*"], &["GET"], &[], &["Content-*", "date", "x-ms-request-id"])];
        assert_eq!(
            value(&answered("https://b.example", Method::GET, &prefixed), "access-control-expose-headers"),
            Some("x-ms-request-id,content-type,content-length,date")
        );
        assert_eq!(value(&any, "access-control-allow-credentials"), None);
        assert_eq!(value(&any, "vary"), None);

        // A write is not cached by browsers: no Vary.
        let put = answered("https://a.example", Method::PUT, &rules);
        assert_eq!(value(&put, "access-control-allow-origin"), Some("https://a.example"));
        assert_eq!(value(&put, "vary"), None);

        // A rule exposing nothing: no empty list.
        let silent = answered("https://c.example", Method::DELETE, &rules);
        assert_eq!(value(&silent, "access-control-allow-origin"), Some("https://c.example"));
        assert!(!silent.contains_key("access-control-expose-headers"));

        // No rule matches: unchanged but for Vary on a read.
        let unmatched = answered("https://b.example", Method::PUT, &rules);
        assert_eq!(unmatched.len(), 2);
        let unmatched_read = answered("https://c.example", Method::HEAD, &rules[..1]);
        assert_eq!(value(&unmatched_read, "access-control-allow-origin"), None);
        assert_eq!(value(&unmatched_read, "vary"), Some("Origin"));

        // No rules: unchanged.
        assert_eq!(answered("https://a.example", Method::GET, &[]).len(), 2);
        // A preflight is not an actual request.
        assert!(ActualRequest::of(&Method::OPTIONS, &headers(&[("origin", "x")])).is_none());

        // A read without `Origin` (or with an empty one): a `*` rule's headers, else `Vary`.
        let without = |method: &Method, rules: &[CorsRule], request: &HeaderMap| {
            let mut answer = headers(&[("x-ms-request-id", "1")]);
            if let Some(request) = ActualRequest::of(method, request) {
                request.apply(rules, &mut answer);
            }
            answer
        };
        for request in [HeaderMap::new(), headers(&[("origin", "")])] {
            let any = without(&Method::GET, &rules, &request);
            assert_eq!(value(&any, "access-control-allow-origin"), Some("*"));
            let exposed = value(&any, "access-control-expose-headers");
            assert_eq!(exposed, Some("x-ms-request-id,content-length,date,transfer-encoding"));
            assert_eq!((value(&any, "vary"), value(&any, "access-control-allow-credentials")), (None, None));
            let exact_only = without(&Method::HEAD, &rules[..1], &request);
            assert_eq!(value(&exact_only, "vary"), Some("Origin"));
            assert_eq!(value(&exact_only, "access-control-allow-origin"), None);
            assert_eq!(without(&Method::GET, &[], &request).len(), 1, "no rules: unchanged");
            assert!(ActualRequest::of(&Method::PUT, &request).is_none(), "a write without Origin");
        }
    }
}
