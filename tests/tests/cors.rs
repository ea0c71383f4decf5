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

use conformance::azurite::{ACCOUNT_KEY, ACCOUNT_NAME, azurite};
use conformance::raw_http::Reply;
use table_client::auth::{Credential, http_date};
use table_client::{CorsRule, ServiceProperties, TableServiceClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An HTTP backend's account: where it is, and how to sign for it.
struct Account {
    /// `http://127.0.0.1:PORT/ACCOUNT`.
    endpoint: String,
    name: String,
    key: String,
}

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

impl Account {
    fn client(&self) -> TableServiceClient {
        TableServiceClient::builder()
            .endpoint(&self.endpoint)
            .credential(Credential::shared_key(&self.name, &self.key).unwrap())
            .build()
            .unwrap()
    }

    /// Sends `method` to the account's `Tables` with `headers`, signed with the account key
    /// when `signed`, over a connection of its own.
    async fn send(&self, method: &str, headers: &[(&str, &str)], signed: bool) -> Reply {
        let (host, account_path) = self.endpoint.strip_prefix("http://").unwrap().split_once('/').unwrap();
        let path = format!("/{account_path}/Tables");
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        if signed {
            let credential = Credential::shared_key(&self.name, &self.key).unwrap();
            let signed = credential.authorize(method, &path, "", &http_date(chrono::Utc::now())).unwrap();
            for (name, value) in &signed.headers {
                request.push_str(&format!("{name}: {value}\r\n"));
            }
            request.push_str("x-ms-version: 2019-02-02\r\nAccept: application/json;odata=nometadata\r\n");
        }
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        let mut stream = TcpStream::connect(host).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        Reply::parse(&String::from_utf8(raw).unwrap()).unwrap()
    }

    async fn preflight(&self, origin: &str, method: Option<&str>, headers: Option<&str>) -> Reply {
        let mut sent = vec![("Origin", origin)];
        sent.extend(method.map(|m| ("Access-Control-Request-Method", m)));
        sent.extend(headers.map(|h| ("Access-Control-Request-Headers", h)));
        self.send("OPTIONS", &sent, false).await
    }
}

async fn preflights_and_browser_requests_follow_the_rules(account: Account, azurite: bool) {
    let refused = account.preflight("http://a.example", Some("GET"), None).await;
    assert_eq!(refused.status, 403, "no rules: {}", refused.body);
    // A preflight accepts nothing, so its refusal is XML, as the service's protocol layer
    // answers a request without a JSON `Accept`; Azurite's XML is its own `<Error>` form.
    let content_type = refused.header("content-type").unwrap_or_default();
    assert!(content_type.starts_with("application/xml"), "{content_type}: {}", refused.body);
    let code =
        if azurite { "<Code>CorsPreflightFailure</Code>" } else { "<m:code>CorsPreflightFailure</m:code>" };
    assert!(refused.body.contains(code), "{}", refused.body);

    let client = account.client();
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

    let exact = account.preflight("http://a.example", Some("PUT"), Some("x-ms-date")).await;
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
    let any = account.preflight("http://z.example", Some("DELETE"), None).await;
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
        let refused = account.preflight(origin, Some(method), headers).await;
        assert_eq!(refused.status, 403, "{origin} {method} {headers:?}: {}", refused.body);
        assert!(refused.body.contains("CorsPreflightFailure"), "{}", refused.body);
        assert_eq!(cors(&refused), [], "a refused preflight allows nothing");
    }
    let incomplete = account.preflight("http://a.example", None, None).await;
    assert_eq!(incomplete.status, 400, "{}", incomplete.body);
    assert!(incomplete.body.contains("InvalidHeaderValue"), "{}", incomplete.body);

    // Origins are compared as the service compares them, with case; Azurite ignores it.
    let other_case = account.preflight("http://A.example", Some("GET"), None).await;
    assert_eq!(other_case.status, if azurite { 200 } else { 403 }, "{}", other_case.body);

    // A signed browser request: the matching rule's headers on the answer, none without a rule.
    let listed = account.send("GET", &[("Origin", "http://a.example")], true).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.header("access-control-allow-origin"), Some("http://a.example"));
    let exposed = listed.header("access-control-expose-headers").unwrap_or_default();
    assert!(exposed.split(',').any(|h| h.trim() == "x-ms-request-id"), "{exposed:?}");
    let unmatched = account.send("GET", &[("Origin", "http://z.example")], true).await;
    assert_eq!(unmatched.status, 200, "{}", unmatched.body);
    assert_eq!(unmatched.header("access-control-allow-origin"), None, "no rule allows z.example to GET");
    // A read without `Origin` is answered for caches too: `Vary: Origin` while the account has
    // rules (the storage emulator's protocol layer, decompiled). Azurite adds nothing.
    let plain = account.send("GET", &[], true).await;
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
    let first_rule = account.preflight("http://a.example", Some("GET"), Some("content-type")).await;
    assert_eq!(first_rule.status, if azurite { 200 } else { 403 }, "{}", first_rule.body);
    let star = [("access-control-allow-origin", "*"), ("access-control-expose-headers", "x-ms-version")];
    let plain = account.send("GET", &[], true).await;
    assert_eq!((cors(&plain), plain.header("vary")), (if azurite { vec![] } else { star.to_vec() }, None));
    // An empty `Origin` is no origin to the service, any origin to Azurite: the same answer.
    let empty = account.send("GET", &[("Origin", "")], true).await;
    assert_eq!((cors(&empty), empty.header("vary")), (star.to_vec(), None));

    client.set_properties(&before).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_table_server() {
    let connection_string = conformance::server::connection_string();
    let field = |name: &str| {
        connection_string.split(';').find_map(|part| part.strip_prefix(name)).unwrap().to_owned()
    };
    let account =
        Account { endpoint: field("TableEndpoint="), name: field("AccountName="), key: field("AccountKey=") };
    preflights_and_browser_requests_follow_the_rules(account, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_azurite() {
    let Some(azurite) = azurite() else { return };
    let account = Account {
        endpoint: azurite.endpoint.clone(),
        name: ACCOUNT_NAME.to_owned(),
        key: ACCOUNT_KEY.to_owned(),
    };
    preflights_and_browser_requests_follow_the_rules(account, true).await;
}
