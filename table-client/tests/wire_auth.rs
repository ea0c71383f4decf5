//! SharedKey, SharedKeyLite and SAS: protocol doc section 2 (all vectors verified on Azurite).

// Helpers outside #[test] functions unwrap test vectors too.
#![allow(clippy::unwrap_used)]

use chrono::{DateTime, TimeZone, Utc};
use table_client::auth::{
    AccountKey, AccountSasBuilder, AccountSasPermissions, AccountSasResourceTypes, AccountSasServices,
    Credential, SasProtocol, SasToken, TableSasBuilder, TableSasPermissions, http_date,
    shared_key_lite_string_to_sign, shared_key_string_to_sign,
};
use table_client::connection_string::DEVELOPMENT_KEY;
use table_core::ErrorKind;

const ACCOUNT: &str = "devstoreaccount1";
const DATE: &str = "Mon, 01 Jan 2024 00:00:00 GMT";

fn header<'a>(headers: &'a [(&'static str, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
}

#[test]
fn shared_key_get_vector() {
    let url = "http://127.0.0.1:10002/devstoreaccount1/QryProbe(PartitionKey='p',RowKey='01')";
    assert_eq!(
        shared_key_string_to_sign(ACCOUNT, "GET", url, "", "", DATE).unwrap(),
        "GET\n\n\nMon, 01 Jan 2024 00:00:00 GMT\n/devstoreaccount1/devstoreaccount1/QryProbe(PartitionKey='p',RowKey='01')"
    );
    let signed =
        Credential::shared_key(ACCOUNT, DEVELOPMENT_KEY).unwrap().authorize("GET", url, "", DATE).unwrap();
    assert_eq!(signed.url, url);
    assert_eq!(
        header(&signed.headers, "Authorization"),
        Some("SharedKey devstoreaccount1:l3JirZVDQJsEuAXVB5v/kosm7wNFnDqrT5MbJcDTdjU=")
    );
    assert_eq!(header(&signed.headers, "x-ms-date"), Some(DATE));
}

#[test]
fn shared_key_post_vector() {
    let url = "http://127.0.0.1:10002/devstoreaccount1/QryProbe";
    let signed = Credential::shared_key(ACCOUNT, DEVELOPMENT_KEY)
        .unwrap()
        .authorize("POST", url, "application/json", DATE)
        .unwrap();
    assert_eq!(
        header(&signed.headers, "Authorization"),
        Some("SharedKey devstoreaccount1:P5siXxr69dCUjQ0FE1FpgDMLilVHlebGXZZfrkSq1Mw=")
    );
}

#[test]
fn shared_key_lite_vector_ignores_query_parameters() {
    let url = "http://127.0.0.1:10002/devstoreaccount1/Tables?$top=1";
    assert_eq!(
        shared_key_lite_string_to_sign(ACCOUNT, url, DATE).unwrap(),
        "Mon, 01 Jan 2024 00:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables"
    );
    let signed = Credential::shared_key_lite(ACCOUNT, DEVELOPMENT_KEY)
        .unwrap()
        .authorize("GET", url, "", DATE)
        .unwrap();
    assert_eq!(
        header(&signed.headers, "Authorization"),
        Some("SharedKeyLite devstoreaccount1:13UOPPE/P1+LLsRFYJCHphuPCEQ21EO/4WbbW+OXG4U=")
    );
}

#[test]
fn encoded_paths_and_comp_are_signed_as_sent() {
    let s = shared_key_string_to_sign(
        "acct",
        "PUT",
        "https://acct.table.core.windows.net/t(PartitionKey='a%20b',RowKey='r')?comp=acl&$filter=x",
        "",
        "application/json",
        DATE,
    )
    .unwrap();
    assert!(s.ends_with("\n/acct/t(PartitionKey='a%20b',RowKey='r')?comp=acl"), "{s}");
    assert_eq!(
        Credential::shared_key("a", DEVELOPMENT_KEY)
            .unwrap()
            .authorize("GET", "not a url", "", DATE)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn bad_keys_are_typed_errors() {
    let err = Credential::shared_key(ACCOUNT, "not base64!").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    assert_eq!(AccountKey::new(ACCOUNT, "%%%").unwrap_err().kind(), ErrorKind::Auth);
}

#[test]
fn debug_never_shows_keys_or_signatures() {
    let key_fragment = &DEVELOPMENT_KEY[..12];
    for credential in [
        Credential::shared_key(ACCOUNT, DEVELOPMENT_KEY).unwrap(),
        Credential::shared_key_lite(ACCOUNT, DEVELOPMENT_KEY).unwrap(),
        Credential::sas("?sv=2019-02-02&tn=t&sig=SECRETSIG%3D").unwrap(),
    ] {
        let debug = format!("{credential:?}");
        assert!(!debug.contains(key_fragment), "{debug}");
        assert!(!debug.contains("SECRETSIG"), "{debug}");
        assert!(debug.contains("redacted"), "{debug}");
    }
    let debug = format!("{:?}", Credential::sas("sv=1&sig=SECRETSIG").unwrap());
    assert!(debug.contains("sv=1"), "{debug}");
}

fn utc(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
}

#[test]
fn table_sas_vector() {
    let builder = TableSasBuilder::new("QryProbe")
        .permissions(TableSasPermissions::parse("duar").unwrap())
        .start(utc(2024, 1, 1))
        .expiry(utc(2099, 1, 1))
        .start_key("p", "00")
        .end_key("p", "zz");
    assert_eq!(
        builder.string_to_sign(ACCOUNT),
        "raud\n2024-01-01T00:00:00Z\n2099-01-01T00:00:00Z\n/table/devstoreaccount1/qryprobe\n\n\n\n2019-02-02\np\n00\np\nzz"
    );
    let key = AccountKey::new(ACCOUNT, DEVELOPMENT_KEY).unwrap();
    let token = builder.sign(&key).unwrap();
    assert_eq!(
        token.as_query(),
        "sv=2019-02-02&tn=QryProbe&st=2024-01-01T00%3A00%3A00Z&se=2099-01-01T00%3A00%3A00Z&sp=raud&spk=p&srk=00&epk=p&erk=zz&sig=zmWEOSFJoh0iAbbL4i6PGd7SN5%2FYdbx%2F9RnuTSsVQrk%3D"
    );
    assert_eq!(
        token.append_to("http://127.0.0.1:10002/devstoreaccount1/QryProbe()?$top=1"),
        format!("http://127.0.0.1:10002/devstoreaccount1/QryProbe()?$top=1&{}", token.as_query())
    );
}

#[test]
fn sas_optional_fields_are_signed_and_sent() {
    let builder = TableSasBuilder::new("t1")
        .permissions(TableSasPermissions { read: true, ..Default::default() })
        .expiry(utc(2030, 1, 1))
        .ip("10.0.0.1-10.0.0.9")
        .protocol(SasProtocol::HttpsAndHttp)
        .policy_id("pol");
    assert_eq!(
        builder.string_to_sign("acct"),
        "r\n\n2030-01-01T00:00:00Z\n/table/acct/t1\npol\n10.0.0.1-10.0.0.9\nhttps,http\n2019-02-02\n\n\n\n"
    );
    let token = builder.sign(&AccountKey::new("acct", DEVELOPMENT_KEY).unwrap()).unwrap();
    assert!(
        token.as_query().starts_with("sv=2019-02-02&tn=t1&se=2030-01-01T00%3A00%3A00Z&sp=r&sip=10.0.0.1-10.0.0.9&spr=https%2Chttp&si=pol&sig="),
        "{}",
        token.as_query()
    );
    // A stored policy may supply permissions and expiry.
    TableSasBuilder::new("t1")
        .policy_id("pol")
        .sign(&AccountKey::new("acct", DEVELOPMENT_KEY).unwrap())
        .unwrap();
}

#[test]
fn sas_builder_rejects_incomplete_or_old_requests() {
    let key = AccountKey::new("acct", DEVELOPMENT_KEY).unwrap();
    let all = TableSasPermissions::all();
    for builder in [
        TableSasBuilder::new("t").expiry(utc(2030, 1, 1)),
        TableSasBuilder::new("t").permissions(all),
        TableSasBuilder::new("t").permissions(all).expiry(utc(2030, 1, 1)).version("2015-02-21"),
    ] {
        assert_eq!(builder.sign(&key).unwrap_err().kind(), ErrorKind::InvalidInput);
    }
    // From 2015-04-05 the Table service signs the same 12 lines.
    let older = TableSasBuilder::new("t").permissions(all).expiry(utc(2030, 1, 1)).version("2017-07-29");
    assert!(older.sign(&key).unwrap().as_query().starts_with("sv=2017-07-29&"));
    assert_eq!(TableSasPermissions::parse("rx").unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(TableSasPermissions::all().to_string(), "raud");
    assert_eq!(TableSasPermissions::parse("ud").unwrap().to_string(), "ud");
}

#[test]
fn account_sas_signs_the_documented_string_of_its_version() {
    let builder = AccountSasBuilder::new()
        .resource_types(AccountSasResourceTypes::parse("os").unwrap())
        .permissions(AccountSasPermissions::parse("lr").unwrap())
        .start(utc(2030, 1, 1))
        .expiry(utc(2030, 1, 2))
        .ip("10.0.0.1")
        .protocol(SasProtocol::Https);
    // 2015-04-05 to 2020-12-05: nine lines and a final newline.
    assert_eq!(
        builder.string_to_sign("acct"),
        "acct\nrl\nt\nso\n2030-01-01T00:00:00Z\n2030-01-02T00:00:00Z\n10.0.0.1\nhttps\n2019-02-02\n"
    );
    // From 2020-12-06: the (empty) encryption scope line comes before it.
    assert_eq!(
        builder.clone().version("2020-12-06").string_to_sign("acct"),
        "acct\nrl\nt\nso\n2030-01-01T00:00:00Z\n2030-01-02T00:00:00Z\n10.0.0.1\nhttps\n2020-12-06\n\n"
    );
    let token = builder.sign(&AccountKey::new("acct", DEVELOPMENT_KEY).unwrap()).unwrap();
    assert!(
        token.as_query().starts_with(
            "sv=2019-02-02&ss=t&srt=so&sp=rl&st=2030-01-01T00%3A00%3A00Z&se=2030-01-02T00%3A00%3A00Z&sip=10.0.0.1&spr=https&sig="
        ),
        "{}",
        token.as_query()
    );
}

#[test]
fn account_sas_builder_rejects_incomplete_or_old_requests() {
    let key = AccountKey::new("acct", DEVELOPMENT_KEY).unwrap();
    let complete = AccountSasBuilder::new()
        .resource_types(AccountSasResourceTypes::all())
        .permissions(AccountSasPermissions::all())
        .expiry(utc(2030, 1, 1));
    complete.sign(&key).unwrap();
    for (builder, says) in [
        (complete.clone().services(AccountSasServices::default()), "a service"),
        (complete.clone().resource_types(AccountSasResourceTypes::default()), "a resource type"),
        (complete.clone().permissions(AccountSasPermissions::default()), "a permission"),
        (
            AccountSasBuilder::new()
                .resource_types(AccountSasResourceTypes::all())
                .permissions(AccountSasPermissions::all()),
            "an expiry",
        ),
        (complete.clone().start(utc(2030, 1, 1)), "not before its expiry"),
        (complete.clone().version("2015-02-21"), "before 2015-04-05"),
    ] {
        let e = builder.sign(&key).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e:?}");
        assert!(e.to_string().contains(says), "{e}");
    }
    assert_eq!(AccountSasPermissions::parse("rwdlacup").unwrap(), AccountSasPermissions::all());
    assert_eq!(AccountSasPermissions::parse("pr").unwrap().to_string(), "rp");
    assert_eq!(AccountSasServices::parse("tqfb").unwrap().to_string(), "bfqt");
    assert_eq!(AccountSasResourceTypes::parse("x").unwrap_err().kind(), ErrorKind::InvalidInput);
}

#[test]
fn sas_tokens_are_parsed_and_appended() {
    let token = SasToken::parse(" ?sv=2019-02-02&sig=abc ").unwrap();
    assert_eq!(token.as_query(), "sv=2019-02-02&sig=abc");
    assert_eq!(token.append_to("http://h/t"), "http://h/t?sv=2019-02-02&sig=abc");
    assert_eq!(SasToken::parse("sv=1&sig=").unwrap_err().kind(), ErrorKind::Auth);
    assert_eq!(SasToken::parse("sv=1").unwrap_err().kind(), ErrorKind::Auth);
    let signed = Credential::Sas(token).authorize("GET", "http://h/t()?$top=1", "", DATE).unwrap();
    assert_eq!(signed.url, "http://h/t()?$top=1&sv=2019-02-02&sig=abc");
    assert_eq!(header(&signed.headers, "Authorization"), None);
    let anonymous = Credential::Anonymous.authorize("GET", "http://h/t", "", DATE).unwrap();
    assert_eq!(anonymous.url, "http://h/t");
    assert_eq!(anonymous.headers, vec![("x-ms-date", DATE.to_owned())]);
}

#[test]
fn http_dates_are_rfc1123() {
    assert_eq!(http_date(utc(2024, 1, 1)), DATE);
}

#[test]
fn signed_requests_do_not_debug_print_signatures() {
    let url = "http://127.0.0.1:10002/devstoreaccount1/QryProbe(PartitionKey='p',RowKey='01')";
    let signed =
        Credential::shared_key(ACCOUNT, DEVELOPMENT_KEY).unwrap().authorize("GET", url, "", DATE).unwrap();
    let debug = format!("{signed:?}");
    assert!(!debug.contains("l3JirZVDQJsEuAXVB5v"), "{debug}");
    assert!(debug.contains("SharedKey devstoreaccount1:<redacted>"), "{debug}");
    assert!(debug.contains(DATE), "{debug}");
    let signed = Credential::sas("sv=2019-02-02&sig=TOPSECRET&tn=t")
        .unwrap()
        .authorize("GET", "http://h/t()?$top=1", "", DATE)
        .unwrap();
    let debug = format!("{signed:?}");
    assert!(!debug.contains("TOPSECRET"), "{debug}");
    assert!(debug.contains("http://h/t()?$top=1&sv=2019-02-02&sig=<redacted>&tn=t"), "{debug}");
}

#[test]
fn signatures_are_redacted_whatever_the_case_or_escaping_of_their_name() {
    for name in ["SIG", "Sig", "sIg", "%73ig", "%53IG"] {
        let token = format!("sv=2019-02-02&{name}=TOPSECRET&tn=t");
        let credential = Credential::sas(&token).unwrap();
        let debug = format!("{credential:?}");
        assert!(!debug.contains("TOPSECRET"), "{debug}");
        assert!(debug.contains(&format!("{name}=<redacted>")), "{debug}");
        // A signature already in the URL (not from the credential) is redacted too.
        let url = format!("http://h/t()?{token}");
        let signed = Credential::Anonymous.authorize("GET", &url, "", DATE).unwrap();
        let debug = format!("{signed:?}");
        assert!(!debug.contains("TOPSECRET"), "{debug}");
    }
}
