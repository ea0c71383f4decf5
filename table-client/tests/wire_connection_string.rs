//! Connection strings: protocol doc section 1 and design section 9.

// Helpers outside #[test] functions unwrap test vectors too.
#![allow(clippy::unwrap_used)]

use table_client::auth::Credential;
use table_client::connection_string::{ConnectionString, DEVELOPMENT_KEY};
use table_core::ErrorKind;

fn http(s: &str) -> (String, String, Credential) {
    match ConnectionString::parse(s).unwrap() {
        ConnectionString::Http { endpoint, account, credential } => (endpoint, account, credential),
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
    assert_eq!((endpoint.as_str(), account.as_str()), ("https://cos.table.cosmos.azure.com:443", "cos"));
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
