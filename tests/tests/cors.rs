//! CORS on both HTTP backends (table-server and Azurite), from the same rules set through Set
//! Table Service Properties: preflights (`OPTIONS`, answered without authorization) and the
//! `Access-Control-*` headers of a signed request that carries `Origin`. The embedded engine
//! has no HTTP, so no preflight.
//!
//! In a test file of its own: the rules are the account's, and Azurite is shared by the tests
//! of one process, where another test setting service properties would race with these.
//! Azurite's deviations met here, recorded in [`preflights_and_browser_requests_follow_the_rules`]:
//! it compares origins without regard to case, tries later rules when the first rule allowing
//! a preflight's origin and method refuses its headers, and adds nothing to a read without
//! `Origin` (the service adds `Vary: Origin`, or a `*` rule's headers).

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use conformance::azurite::azurite;
use conformance::raw_http::{Account, Reply};
use table_client::auth::Credential;
use table_client::{CorsRule, ServiceProperties, TableServiceClient};

/// The `Access-Control-*` headers of `reply`, sorted, for comparing whole answers.
fn cors(reply: &Reply) -> Vec<(&str, &str)> {
    let mut cors: Vec<(&str, &str)> = reply
        .headers
        .iter()
        .filter(|(n, _)| n.starts_with("access-control-"))
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    cors.sort_unstable();
    cors
}

/// A client of `account`, signing with its key.
fn client(account: &Account) -> TableServiceClient {
    TableServiceClient::builder()
        .endpoint(&account.endpoint)
        .credential(Credential::shared_key(&account.name, &account.key).unwrap())
        .build()
        .unwrap()
}

/// Sends `method` to the account's `Tables` with `headers`; signed with the account key, and
/// asking for JSON as a client does, when `signed`.
async fn send(account: &Account, method: &str, headers: &[(&str, &str)], signed: bool) -> Reply {
    let client_headers = [("x-ms-version", "2019-02-02"), ("Accept", "application/json;odata=nometadata")];
    let sent: Vec<(&str, &str)> = client_headers.iter().filter(|_| signed).chain(headers).copied().collect();
    account.send(method, "Tables", &sent, "", signed).await
}

/// A preflight from `origin`, asking for `method` and `headers`.
async fn preflight(account: &Account, origin: &str, method: Option<&str>, headers: Option<&str>) -> Reply {
    let mut sent = vec![("Origin", origin)];
    sent.extend(method.map(|m| ("Access-Control-Request-Method", m)));
    sent.extend(headers.map(|h| ("Access-Control-Request-Headers", h)));
    send(account, "OPTIONS", &sent, false).await
}

async fn preflights_and_browser_requests_follow_the_rules(account: Account, azurite: bool) {
    let refused = preflight(&account, "http://a.example", Some("GET"), None).await;
    assert_eq!(refused.status, 403, "no rules: {}", refused.body);
    // A preflight accepts nothing, so its refusal is XML, as the service's protocol layer
    // answers a request without a JSON `Accept`; Azurite's XML is its own `<Error>` form.
    let content_type = refused.header("content-type").unwrap_or_default();
    assert!(content_type.starts_with("application/xml"), "{content_type}: {}", refused.body);
    let code =
        if azurite { "<Code>CorsPreflightFailure</Code>" } else { "<m:code>CorsPreflightFailure</m:code>" };
    assert!(refused.body.contains(code), "{}", refused.body);

    let client = client(&account);
    let before = client.get_properties().await.unwrap();
    let rules = vec![
        CorsRule {
            allowed_origins: vec!["http://a.example".into()],
            allowed_methods: vec!["GET".into(), "PUT".into()],
            allowed_headers: vec!["x-ms-*".into()],
            exposed_headers: vec!["x-ms-request-id".into()],
            max_age_seconds: 60,
        },
        CorsRule {
            allowed_origins: vec!["*".into()],
            allowed_methods: vec!["DELETE".into()],
            allowed_headers: vec!["*".into()],
            exposed_headers: vec!["*".into()],
            max_age_seconds: 5,
        },
    ];
    client.set_properties(&ServiceProperties { cors: Some(rules), ..Default::default() }).await.unwrap();

    let exact = preflight(&account, "http://a.example", Some("PUT"), Some("x-ms-date")).await;
    assert_eq!(exact.status, 200, "{}", exact.body);
    assert_eq!(
        cors(&exact),
        [
            ("access-control-allow-credentials", "true"),
            ("access-control-allow-headers", "x-ms-date"),
            ("access-control-allow-methods", "PUT"),
            ("access-control-allow-origin", "http://a.example"),
            ("access-control-max-age", "60"),
        ]
    );
    // A `*` rule echoes the origin on a preflight.
    let any = preflight(&account, "http://z.example", Some("DELETE"), None).await;
    assert_eq!(any.status, 200, "{}", any.body);
    assert_eq!(
        cors(&any),
        [
            ("access-control-allow-credentials", "true"),
            ("access-control-allow-methods", "DELETE"),
            ("access-control-allow-origin", "http://z.example"),
            ("access-control-max-age", "5"),
        ]
    );
    for (origin, method, headers) in [
        ("http://z.example", "GET", None),
        ("http://a.example", "MERGE", None),
        ("http://a.example", "GET", Some("content-type")),
    ] {
        let refused = preflight(&account, origin, Some(method), headers).await;
        assert_eq!(refused.status, 403, "{origin} {method} {headers:?}: {}", refused.body);
        assert!(refused.body.contains("CorsPreflightFailure"), "{}", refused.body);
        assert_eq!(cors(&refused), [], "a refused preflight allows nothing");
    }
    let incomplete = preflight(&account, "http://a.example", None, None).await;
    assert_eq!(incomplete.status, 400, "{}", incomplete.body);
    assert!(incomplete.body.contains("InvalidHeaderValue"), "{}", incomplete.body);

    // Origins are compared as the service compares them, with case; Azurite ignores it.
    let other_case = preflight(&account, "http://A.example", Some("GET"), None).await;
    assert_eq!(other_case.status, if azurite { 200 } else { 403 }, "{}", other_case.body);

    // A signed browser request: the matching rule's headers on the answer, none without a rule.
    let listed = send(&account, "GET", &[("Origin", "http://a.example")], true).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.header("access-control-allow-origin"), Some("http://a.example"));
    let exposed = listed.header("access-control-expose-headers").unwrap_or_default();
    assert!(exposed.split(',').any(|h| h.trim() == "x-ms-request-id"), "{exposed:?}");
    let unmatched = send(&account, "GET", &[("Origin", "http://z.example")], true).await;
    assert_eq!(unmatched.status, 200, "{}", unmatched.body);
    assert_eq!(unmatched.header("access-control-allow-origin"), None, "no rule allows z.example to GET");
    // A read without `Origin` is answered for caches too: `Vary: Origin` while the account has
    // rules (the storage emulator's protocol layer, decompiled). Azurite adds nothing.
    let plain = send(&account, "GET", &[], true).await;
    assert_eq!(plain.status, 200, "{}", plain.body);
    assert_eq!((cors(&plain), plain.header("vary")), (vec![], if azurite { None } else { Some("Origin") }));

    // The first rule allowing the origin and the method answers a preflight by its headers;
    // the service tries no later rule, Azurite does. A `*` rule allowing a read answers it
    // even without `Origin`; Azurite answers nothing.
    let rules = vec![
        CorsRule {
            allowed_origins: vec!["http://a.example".into()],
            allowed_methods: vec!["GET".into()],
            allowed_headers: vec!["x-ms-*".into()],
            exposed_headers: vec!["x-ms-request-id".into()],
            max_age_seconds: 60,
        },
        CorsRule {
            allowed_origins: vec!["*".into()],
            allowed_methods: vec!["GET".into()],
            allowed_headers: vec!["*".into()],
            exposed_headers: vec!["x-ms-version".into()],
            max_age_seconds: 5,
        },
    ];
    client.set_properties(&ServiceProperties { cors: Some(rules), ..Default::default() }).await.unwrap();
    let first_rule = preflight(&account, "http://a.example", Some("GET"), Some("content-type")).await;
    assert_eq!(first_rule.status, if azurite { 200 } else { 403 }, "{}", first_rule.body);
    let star = [("access-control-allow-origin", "*"), ("access-control-expose-headers", "x-ms-version")];
    let plain = send(&account, "GET", &[], true).await;
    assert_eq!((cors(&plain), plain.header("vary")), (if azurite { vec![] } else { star.to_vec() }, None));
    // An empty `Origin` is no origin to the service, any origin to Azurite: the same answer.
    let empty = send(&account, "GET", &[("Origin", "")], true).await;
    assert_eq!((cors(&empty), empty.header("vary")), (star.to_vec(), None));

    client.set_properties(&before).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_table_server() {
    preflights_and_browser_requests_follow_the_rules(Account::table_server(), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_azurite() {
    let Some(azurite) = azurite() else { return };
    preflights_and_browser_requests_follow_the_rules(Account::azurite(azurite), true).await;
}
