//! Connection strings: protocol doc section 1 and design section 9.

// Helpers outside #[test] functions unwrap test vectors too.
#![allow(clippy::unwrap_used)]

use table_client::TableServiceClient;
use table_client::auth::Credential;
use table_client::connection_string::{ConnectionString, DEVELOPMENT_KEY};
use table_core::ErrorKind;

fn http(s: &str) -> (String, String, Credential) {
    match ConnectionString::parse(s).unwrap() {
        ConnectionString::Http { endpoint, account, credential, .. } => (endpoint, account, credential),
        other => panic!("expected HTTP, got {other:?}"),
    }
}

fn error_kind(s: &str) -> ErrorKind {
    ConnectionString::parse(s).unwrap_err().kind()
}

#[test]
fn development_storage() {
    let (endpoint, account, credential) = http(" UseDevelopmentStorage=true ; ");
    assert_eq!(endpoint, "http://127.0.0.1:10002/devstoreaccount1");
    assert_eq!(account, "devstoreaccount1");
    assert!(matches!(credential, Credential::SharedKey(k) if k.account() == "devstoreaccount1"));
}

#[test]
fn account_key_with_default_and_custom_suffix() {
    let key = DEVELOPMENT_KEY;
    let (endpoint, account, credential) = http(&format!(
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={key};EndpointSuffix=core.windows.net"
    ));
    assert_eq!(endpoint, "https://acct.table.core.windows.net");
    assert_eq!(account, "acct");
    assert!(matches!(credential, Credential::SharedKey(_)));
    let (endpoint, ..) =
        http(&format!("accountname=acct;accountkey={key};endpointsuffix=core.chinacloudapi.cn"));
    assert_eq!(endpoint, "https://acct.table.core.chinacloudapi.cn");
    let (endpoint, ..) = http(&format!("DefaultEndpointsProtocol=http;AccountName=acct;AccountKey={key}"));
    assert_eq!(endpoint, "http://acct.table.core.windows.net");
}

#[test]
fn table_endpoints_for_azurite_and_cosmos() {
    let key = DEVELOPMENT_KEY;
    let (endpoint, account, _) = http(&format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={key};\
         BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1/;"
    ));
    assert_eq!(
        (endpoint.as_str(), account.as_str()),
        ("http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1")
    );
    let (endpoint, account, _) = http(&format!(
        "DefaultEndpointsProtocol=https;AccountName=cos;AccountKey={key};TableEndpoint=https://cos.table.cosmos.azure.com:443/;"
    ));
    // Kept as the URL parser prints it (the default port dropped), so the path signed is the
    // path sent.
    assert_eq!((endpoint.as_str(), account.as_str()), ("https://cos.table.cosmos.azure.com", "cos"));
}

#[test]
fn sas_connection_strings_derive_the_account() {
    let (endpoint, account, credential) = http(
        "TableEndpoint=https://acct.table.core.windows.net/;SharedAccessSignature=sv=2019-02-02&tn=t&sig=a%2Fb%3D",
    );
    assert_eq!((endpoint.as_str(), account.as_str()), ("https://acct.table.core.windows.net", "acct"));
    match credential {
        Credential::Sas(token) => assert_eq!(token.as_query(), "sv=2019-02-02&tn=t&sig=a%2Fb%3D"),
        other => panic!("expected SAS, got {other:?}"),
    }
    let (_, account, _) =
        http("TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;SharedAccessSignature=?sig=x");
    assert_eq!(account, "devstoreaccount1");
}

#[test]
fn embedded_engine() {
    assert!(matches!(
        ConnectionString::parse("UseEmbeddedEngine=true").unwrap(),
        ConnectionString::Embedded { name: None }
    ));
    assert!(matches!(
        "useembeddedengine=TRUE; Name = shared ;".parse::<ConnectionString>().unwrap(),
        ConnectionString::Embedded { name: Some(n) } if n == "shared"
    ));
    assert_eq!(error_kind("UseEmbeddedEngine=true;AccountName=a"), ErrorKind::InvalidInput);
}

#[test]
fn missing_or_wrong_parts_are_typed_errors() {
    let key = DEVELOPMENT_KEY;
    for s in [
        "",
        " ; ",
        "AccountName=acct",
        &format!("AccountKey={key}"),
        &format!("AccountName=acct;AccountKey={key};SharedAccessSignature=sig=x"),
        &format!("AccountName=acct;AcountKey={key}"),
        &format!("AccountName=acct;AccountKey={key};AccountName=b"),
        "AccountName=acct;SharedAccessSignature=sv=1",
        "UseDevelopmentStorage=yes",
        "UseDevelopmentStorage=true;AccountName=x",
        &format!("TableEndpoint=ftp://x;AccountName=a;AccountKey={key}"),
        &format!("DefaultEndpointsProtocol=ftp;AccountName=a;AccountKey={key}"),
        "TableEndpoint=http://127.0.0.1:10002;SharedAccessSignature=sig=x",
        "justtext",
    ] {
        let kind = error_kind(s);
        assert!(matches!(kind, ErrorKind::InvalidInput | ErrorKind::Auth), "{s}: {kind:?}");
    }
    assert_eq!(error_kind("AccountName=acct;AccountKey=not*base64"), ErrorKind::Auth);
}

#[test]
fn debug_redacts_secrets() {
    let s = format!("AccountName=acct;AccountKey={DEVELOPMENT_KEY}");
    let debug = format!("{:?}", ConnectionString::parse(&s).unwrap());
    assert!(!debug.contains(&DEVELOPMENT_KEY[..10]), "{debug}");
    let debug = format!(
        "{:?}",
        ConnectionString::parse(
            "TableEndpoint=https://a.table.core.windows.net;SharedAccessSignature=sv=1&sig=TOPSECRET"
        )
        .unwrap()
    );
    assert!(!debug.contains("TOPSECRET"), "{debug}");
    // Errors never echo a value either.
    let err = ConnectionString::parse(&format!("{DEVELOPMENT_KEY};AccountName=a")).unwrap_err();
    assert!(!err.to_string().contains(&DEVELOPMENT_KEY[..10]), "{err}");
}

#[test]
fn account_names_follow_the_service_rule() {
    let key = DEVELOPMENT_KEY;
    for account in [
        "evil.com/x#",
        "evil.com",
        "Acct",
        "ab",
        "a".repeat(25).as_str(),
        "a-b",
        "ac ct",
        "ac\u{0}ct",
        "ac\u{e9}t",
    ] {
        let s = format!("AccountName={account};AccountKey={key}");
        assert_eq!(error_kind(&s), ErrorKind::InvalidInput, "{account:?}");
        let err = ConnectionString::parse(&s).unwrap_err();
        assert!(err.to_string().contains("AccountName"), "{err}");
    }
    let (endpoint, account, _) = http(&format!("AccountName={};AccountKey={key}", "a1".repeat(12)));
    assert_eq!(endpoint, format!("https://{account}.table.core.windows.net"));
    // Beside an explicit endpoint the name only signs, and Cosmos DB names may hold hyphens.
    let (_, account, _) = http(&format!(
        "AccountName=my-cosmos-account;AccountKey={key};TableEndpoint=https://my-cosmos-account.table.cosmos.azure.com"
    ));
    assert_eq!(account, "my-cosmos-account");
    let (_, account, _) =
        http("TableEndpoint=https://my-cosmos.table.cosmos.azure.com;SharedAccessSignature=sig=x");
    assert_eq!(account, "my-cosmos");
    // A name taken from the endpoint follows the rule too when it signs.
    assert_eq!(
        error_kind(&format!("AccountKey={key};TableEndpoint=http://127.0.0.1:10002/x")),
        ErrorKind::InvalidInput
    );
    for account in ["-cosmos", "cosmos-", "Cosmos", "evil.com/x#"] {
        let s = format!("AccountName={account};AccountKey={key};TableEndpoint=https://h.example.com");
        assert_eq!(error_kind(&s), ErrorKind::InvalidInput, "{account:?}");
    }
}

#[test]
fn endpoint_suffixes_are_dns_names() {
    let key = DEVELOPMENT_KEY;
    for suffix in ["evil.com/x#", "evil.com:8080", "a..b", "ex ample.com", "-a.com", "a.com?x=1", "u:p@h.com"]
    {
        let s = format!("AccountName=acct;AccountKey={key};EndpointSuffix={suffix}");
        assert_eq!(error_kind(&s), ErrorKind::InvalidInput, "{suffix:?}");
    }
    let (endpoint, ..) =
        http(&format!("AccountName=acct;AccountKey={key};EndpointSuffix=.core.usgovcloudapi.net."));
    assert_eq!(endpoint, "https://acct.table.core.usgovcloudapi.net");
}

#[test]
fn table_endpoints_must_be_plain_http_urls() {
    let key = DEVELOPMENT_KEY;
    for endpoint in [
        "http://user:hunter2secret@127.0.0.1:10002/devstoreaccount1",
        "http://hunter2secret@127.0.0.1:10002/devstoreaccount1",
        "http://127.0.0.1:10002/devstoreaccount1?sig=hunter2secret",
        "http://127.0.0.1:10002/devstoreaccount1#hunter2secret",
        "http://127.0.0.1:10002/dev store",
        "http://127.0.0.1:10002/devstoreaccount1\r\nX-Injected:hunter2secret",
        "http://127.0.0.1:10002/dev\tstoreaccount1",
        "http://evil.com\\@127.0.0.1/devstoreaccount1",
        "ftp://127.0.0.1/devstoreaccount1",
        "http://",
        "127.0.0.1:10002/devstoreaccount1",
    ] {
        let s = format!("AccountName=devstoreaccount1;AccountKey={key};TableEndpoint={endpoint}");
        let err = ConnectionString::parse(&s).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{endpoint:?}");
        assert!(!format!("{err} {err:?}").contains("hunter2secret"), "{err:?}");
        let err = TableServiceClient::builder()
            .endpoint(endpoint)
            .credential(Credential::shared_key("devstoreaccount1", key).unwrap())
            .build()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{endpoint:?}");
        assert!(!format!("{err} {err:?}").contains("hunter2secret"), "{err:?}");
    }
}
