//! Error answers: protocol doc section 8.

// Helpers outside #[test] functions unwrap test vectors too.
#![allow(clippy::unwrap_used)]

use table_client::wire::decode_error;
use table_core::{ErrorCode, ErrorKind};

#[test]
fn json_errors() {
    let body = br#"{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"The specified entity already exists.\nRequestId:a1f47a48-0000\nTime:2014-01-31T10:28:02.5907425Z"}}}"#;
    let e = decode_error(409, &[("X-MS-Request-Id", "rid-1")], body);
    assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    assert_eq!(e.code(), Some(&ErrorCode::EntityAlreadyExists));
    assert_eq!(e.status(), Some(409));
    assert_eq!(e.message(), "The specified entity already exists.");
    assert_eq!(e.request_id(), Some("rid-1"));
    assert_eq!(e.batch_index(), None);
}

#[test]
fn batch_index_prefix_and_request_id_from_the_message() {
    let body = br#"{"odata.error":{"code":"InvalidDuplicateRow","message":{"lang":"en-US","value":"12:A command with RowKey 'r' is already present in the batch.\nRequestId:abc-123\nTime:2014-01-31T10:28:02.590Z"}}}"#;
    let e = decode_error(400, &[], body);
    assert_eq!(e.batch_index(), Some(12));
    assert_eq!(e.message(), "A command with RowKey 'r' is already present in the batch.");
    assert_eq!(e.request_id(), Some("abc-123"));
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // Digits without a colon are not an index.
    let e =
        decode_error(400, &[], br#"{"odata.error":{"code":"InvalidInput","message":{"value":"12 things"}}}"#);
    assert_eq!((e.batch_index(), e.message()), (None, "12 things"));
}

#[test]
fn xml_errors_from_the_service_and_azurite() {
    let service = br#"<?xml version="1.0" encoding="utf-8" standalone="yes"?>
<m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
  <m:code>AuthenticationFailed</m:code>
  <m:message xml:lang="en-US">Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.
RequestId:5f3b
Time:2014-01-31T10:28:02.5907425Z</m:message>
</m:error>"#;
    let e = decode_error(403, &[], service);
    assert_eq!(e.code(), Some(&ErrorCode::AuthenticationFailed));
    assert_eq!(e.kind(), ErrorKind::Auth);
    assert!(e.message().starts_with("Server failed to authenticate"), "{}", e.message());
    assert_eq!(e.request_id(), Some("5f3b"));

    let azurite = br#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Error>
  <Code>AuthorizationFailure</Code>
  <Message>Server failed to authorize &amp; &lt;reject&gt; the request.
RequestId:77
Time:2026-11-22T04:28:30.706Z</Message>
</Error>"#;
    let e = decode_error(403, &[("x-ms-request-id", "hdr")], azurite);
    assert_eq!(e.code(), Some(&ErrorCode::AuthorizationFailure));
    assert_eq!(e.message(), "Server failed to authorize & <reject> the request.");
    assert_eq!(e.request_id(), Some("hdr"));
}

#[test]
fn the_authentication_error_detail_says_why_a_signature_was_refused() {
    let body = b"\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code><Message>Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.\nRequestId:9b2c\nTime:2026-11-23T06:00:00.1234567Z</Message><AuthenticationErrorDetail>The MAC signature found in the HTTP request 'c2ln' is not the same as any computed signature. Server used following string to sign: 'GET\n\n\nMon, 23 Nov 2026 06:00:00 GMT\n/acct/Tables'.</AuthenticationErrorDetail></Error>";
    let e = decode_error(403, &[], body);
    assert_eq!(e.code(), Some(&ErrorCode::AuthenticationFailed));
    assert_eq!(e.kind(), ErrorKind::Auth);
    assert_eq!(e.request_id(), Some("9b2c"));
    assert_eq!(
        e.message(),
        "Server failed to authenticate the request. Make sure the value of Authorization header is \
         formed correctly including the signature. Detail: The MAC signature found in the HTTP \
         request '<redacted>' is not the same as any computed signature. Server used following string \
         to sign: 'GET\\n\\n\\nMon, 23 Nov 2026 06:00:00 GMT\\n/acct/Tables'."
    );
    // A detail cut short after the quote opens is redacted to its end.
    let cut = b"<Error><Code>AuthenticationFailed</Code><Message>No.</Message><AuthenticationErrorDetail>The MAC signature found in the HTTP request 'c2ln</AuthenticationErrorDetail></Error>";
    assert_eq!(
        decode_error(403, &[], cut).message(),
        "No. Detail: The MAC signature found in the HTTP request '<redacted>"
    );
}

#[test]
fn empty_bodies_fall_back_to_the_header_then_the_status() {
    let e = decode_error(404, &[("x-ms-error-code", "TableNotFound")], b"");
    assert_eq!(e.code(), Some(&ErrorCode::TableNotFound));
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.message().contains("404"), "{}", e.message());
    for (status, kind) in [
        (400, ErrorKind::InvalidInput),
        (401, ErrorKind::Auth),
        (403, ErrorKind::Auth),
        (404, ErrorKind::NotFound),
        (409, ErrorKind::AlreadyExists),
        (412, ErrorKind::PreconditionFailed),
        (413, ErrorKind::TooLarge),
        (429, ErrorKind::Throttled),
        (500, ErrorKind::Unavailable),
        (501, ErrorKind::NotImplemented),
        (502, ErrorKind::Unavailable),
        (503, ErrorKind::Throttled),
        (504, ErrorKind::Unavailable),
        (418, ErrorKind::Other),
    ] {
        let e = decode_error(status, &[], b"");
        assert_eq!((e.kind(), e.code(), e.status()), (kind, None, Some(status)));
    }
}

#[test]
fn unknown_codes_are_kept_with_the_kind_of_the_status() {
    let e = decode_error(409, &[], br#"{"odata.error":{"code":"SomethingNew","message":{"value":"x"}}}"#);
    assert_eq!(e.code(), Some(&ErrorCode::Other("SomethingNew".into())));
    assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    // A known code decides the kind: ServerBusy is throttling even as a 500.
    let e = decode_error(500, &[("x-ms-error-code", "ServerBusy")], b"not json");
    assert_eq!(e.kind(), ErrorKind::Throttled);
    // Azurite's empty code on table-name errors counts as none.
    let e = decode_error(
        400,
        &[("x-ms-error-code", "")],
        br#"{"odata.error":{"code":"","message":{"value":"bad name"}}}"#,
    );
    assert_eq!((e.code(), e.kind(), e.message()), (None, ErrorKind::InvalidInput, "bad name"));
}

#[test]
fn garbage_bodies_still_give_an_error() {
    for body in [&b"{"[..], b"<", b"<a", b"\xff\xfe", br#"{"odata.error":5}"#, b"<m:code>"] {
        let e = decode_error(500, &[], body);
        assert_eq!(e.status(), Some(500));
    }
}
