//! Entity-group transactions: protocol doc section 7.

// Helpers outside #[test] functions unwrap test vectors too.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use table_client::wire::{decode_batch_response, encode_batch};
use table_core::{ETag, Entity, EntityKey, ErrorCode, ErrorKind, IfMatch, Operation, WriteOutcome};

const BASE: &str = "http://127.0.0.1:10002/devstoreaccount1";

fn crlf(text: &str) -> Vec<u8> {
    text.replace('\n', "\r\n").into_bytes()
}

#[test]
fn every_operation_gets_its_verb_url_and_condition() {
    let etag = ETag::new("W/\"datetime'2024-01-01T00%3A00%3A00Z'\"");
    let e = |rk: &str| Entity::new("p", rk).with("a", 1);
    let ops = vec![
        Operation::Insert(e("0")),
        Operation::Replace { entity: e("1"), if_match: IfMatch::ETag(etag.clone()) },
        Operation::Merge { entity: e("2"), if_match: IfMatch::Any },
        Operation::InsertOrReplace(e("3")),
        Operation::InsertOrMerge(e("4")),
        Operation::Delete { key: EntityKey::new("p", "5 '"), if_match: IfMatch::ETag(etag.clone()) },
    ];
    let (content_type, body) = encode_batch(BASE, "mytable", &ops);
    let boundary = content_type.strip_prefix("multipart/mixed; boundary=").unwrap();
    assert!(boundary.starts_with("batch_") && boundary.len() == "batch_".len() + 36, "{boundary}");
    assert!(body.starts_with(&format!("--{boundary}\r\nContent-Type: multipart/mixed; boundary=changeset_")));
    assert!(body.ends_with(&format!("--\r\n\r\n--{boundary}--\r\n")));
    assert!(!body.replace("\r\n", "").contains('\n'), "only CRLF line ends");

    let changeset = body.split("boundary=").nth(1).unwrap().split("\r\n").next().unwrap();
    let parts: Vec<&str> = body.split(&format!("--{changeset}\r\n")).skip(1).collect();
    assert_eq!(parts.len(), 6);
    let expect = [
        ("POST http://127.0.0.1:10002/devstoreaccount1/mytable HTTP/1.1", None, true),
        (
            "PUT http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p',RowKey='1') HTTP/1.1",
            Some(etag.as_str()),
            false,
        ),
        (
            "MERGE http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p',RowKey='2') HTTP/1.1",
            Some("*"),
            false,
        ),
        (
            "PUT http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p',RowKey='3') HTTP/1.1",
            None,
            false,
        ),
        (
            "MERGE http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p',RowKey='4') HTTP/1.1",
            None,
            false,
        ),
        (
            "DELETE http://127.0.0.1:10002/devstoreaccount1/mytable(PartitionKey='p',RowKey='5%20%27%27') HTTP/1.1",
            Some(etag.as_str()),
            false,
        ),
    ];
    for (i, (part, (request_line, if_match, prefer))) in parts.iter().zip(expect).enumerate() {
        assert!(part.contains(&format!("Content-ID: {i}\r\n\r\n{request_line}\r\n")), "{part}");
        assert_eq!(part.lines().find_map(|l| l.strip_prefix("If-Match: ")), if_match, "{part}");
        assert_eq!(part.contains("Prefer: return-no-content\r\n"), prefer, "{part}");
        let has_body = i != 5;
        assert_eq!(part.contains("Content-Type: application/json\r\n"), has_body, "{part}");
        if has_body {
            assert!(part.contains(&format!(r#"{{"PartitionKey":"p","RowKey":"{i}","a":1}}"#)), "{part}");
        }
    }
}

#[test]
fn boundaries_are_fresh_per_batch() {
    let ops = [Operation::InsertOrMerge(Entity::new("p", "r"))];
    assert_ne!(encode_batch(BASE, "t", &ops).0, encode_batch(BASE, "t", &ops).0);
}

/// The success response of protocol doc section 7.2 (real service recording).
const SUCCESS: &str = "--batchresponse_u
Content-Type: multipart/mixed; boundary=changesetresponse_v

--changesetresponse_v
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 204 No Content
Content-ID: 0
X-Content-Type-Options: nosniff
Cache-Control: no-cache
Preference-Applied: return-no-content
DataServiceVersion: 3.0;
Location: https://acct.table.core.windows.net/mytable(PartitionKey='p',RowKey='r1')
DataServiceId: https://acct.table.core.windows.net/mytable(PartitionKey='p',RowKey='r1')
ETag: W/\"datetime'2014-01-31T10%3A14%3A18.918655Z'\"


--changesetresponse_v
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 204 No Content
Content-ID: 1
X-Content-Type-Options: nosniff
Cache-Control: no-cache
DataServiceVersion: 1.0;


--changesetresponse_v--
--batchresponse_u--
";

#[test]
fn success_response_from_the_reference() {
    let expected = vec![
        WriteOutcome { etag: Some(ETag::new("W/\"datetime'2014-01-31T10%3A14%3A18.918655Z'\"")) },
        WriteOutcome { etag: None },
    ];
    let ct = "multipart/mixed; boundary=batchresponse_u";
    assert_eq!(decode_batch_response(ct, &crlf(SUCCESS)).unwrap(), expected);
    // LF-only line ends and a quoted boundary are accepted too.
    let quoted = "multipart/mixed; charset=utf-8; boundary=\"batchresponse_u\"";
    assert_eq!(decode_batch_response(quoted, SUCCESS.as_bytes()).unwrap(), expected);
}

#[test]
fn inserts_answered_201_with_or_without_a_body() {
    // Real: 201 with the entity; Azurite: 201 without a body and without Content-ID.
    let body = "--batchresponse_a
Content-Type: multipart/mixed; boundary=changesetresponse_b

--changesetresponse_b
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 201 Created
Content-ID: 0
Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8
ETag: W/\"1\"

{\"odata.metadata\":\"x\",\"PartitionKey\":\"p\",\"RowKey\":\"r1\"}
--changesetresponse_b
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 201 Created
etag: W/\"2\"

--changesetresponse_b--
--batchresponse_a--";
    let outcomes = decode_batch_response("multipart/mixed; boundary=batchresponse_a", &crlf(body)).unwrap();
    let etags: Vec<_> = outcomes.iter().map(|o| o.etag.as_ref().unwrap().as_str()).collect();
    assert_eq!(etags, ["W/\"1\"", "W/\"2\""]);
}

/// The failure response of protocol doc section 7.3.
const FAILURE: &str = "--batchresponse_u
Content-Type: multipart/mixed; boundary=changesetresponse_v

--changesetresponse_v
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 409 Conflict
Content-ID: 1
X-Content-Type-Options: nosniff
Cache-Control: no-cache
Preference-Applied: return-no-content
DataServiceVersion: 3.0;
Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8

{\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\",\"value\":\"1:The specified entity already exists.\\nRequestId:a1f47a48-0001\\nTime:2014-01-31T10:28:02.5907425Z\"}}}
--changesetresponse_v--
--batchresponse_u--
";

#[test]
fn failure_response_from_the_reference() {
    for body in [crlf(FAILURE), FAILURE.as_bytes().to_vec()] {
        let e = decode_batch_response("multipart/mixed; boundary=batchresponse_u", &body).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
        assert_eq!(e.code(), Some(&ErrorCode::EntityAlreadyExists));
        assert_eq!(e.status(), Some(409));
        assert_eq!(e.batch_index(), Some(1));
        assert_eq!(e.message(), "The specified entity already exists.");
        assert_eq!(e.request_id(), Some("a1f47a48-0001"));
    }
}

#[test]
fn azurite_failure_with_its_own_content_id_and_a_stray_line() {
    let body = "--batchresponse_x
Content-Type: multipart/mixed; boundary=changesetresponse_y

--changesetresponse_y
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 400 Bad Request
Content-ID: 1
Content-Type: application/json;odata=minimalmetadata
x-ms-error-code: InvalidInput

{\"odata.error\":{\"code\":\"InvalidInput\",\"message\":{\"lang\":\"en-US\",\"value\":\"0:The batch request operation exceeds the maximum 100 changes per change set.\\nRequestId:r\\nTime:2026-11-22T04:28:30.706Z\"}}}
--changesetresponse_y--
--changesetresponse_y
--batchresponse_x--";
    let e = decode_batch_response("multipart/mixed; boundary=batchresponse_x", body.as_bytes()).unwrap_err();
    assert_eq!((e.kind(), e.batch_index(), e.status()), (ErrorKind::InvalidInput, Some(0), Some(400)));
}

#[test]
fn malformed_responses_are_decode_errors() {
    let ct = "multipart/mixed; boundary=b";
    for (content_type, body) in [
        ("multipart/mixed", &b"--b\r\n"[..]),
        ("multipart/mixed; boundary=", b"--b\r\n"),
        (ct, b""),
        (ct, b"no delimiter at all"),
        (ct, b"--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 abc\r\n--b--"),
        (ct, b"--b\r\nContent-Type: application/http\r\n\r\nnot a status line\r\n--b--"),
        (ct, b"--b\r\nContent-Type: application/http\r\n\r\n\r\n--b--"),
        (ct, b"--b\r\nContent-Type: multipart/mixed\r\n\r\n--c\r\n--b--"),
        (ct, b"--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: multipart/mixed; boundary=d\r\n\r\n--d\r\n\r\nHTTP/1.1 204 No Content\r\n--d--\r\n--c--\r\n--b--"),
        (ct, b"--b\r\n\xff\xfe\r\n--b--"),
    ] {
        let e = decode_batch_response(content_type, body).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Decode, "{:?}", String::from_utf8_lossy(body));
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode_batch_response("multipart/mixed; boundary=b", &bytes);
    }

    #[test]
    fn arbitrary_line_soup_never_panics(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("--b".to_owned()), Just("--b--".to_owned()), Just("--c".to_owned()),
                Just("Content-Type: multipart/mixed; boundary=c".to_owned()),
                Just("HTTP/1.1 204 No Content".to_owned()), Just("HTTP/1.1 409 Conflict".to_owned()),
                Just(String::new()), Just("ETag: W/\"x\"".to_owned()), ".{0,20}",
            ],
            0..30,
        ),
        lf_only in any::<bool>(),
    ) {
        let body = lines.join(if lf_only { "\n" } else { "\r\n" });
        if let Err(e) = decode_batch_response("multipart/mixed; boundary=b", body.as_bytes()) {
            prop_assert!(e.status().is_some() || e.kind() == ErrorKind::Decode, "{e:?}");
        }
    }
}

#[test]
fn part_etags_are_held_to_the_same_rule_as_every_other_etag() {
    let part = |etag_lines: &str| {
        format!(
            "--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n{etag_lines}\r\n\r\n--b--"
        )
    };
    for lines in [
        "ETag: W/\"1\"\tX",
        "ETag: W/\"1\"\rX",
        "ETag: W/\"\u{85}\"",
        "ETag:",
        "ETag: W/\"1\"\r\nETag: W/\"2\"",
    ] {
        let body = part(lines);
        let e = decode_batch_response("multipart/mixed; boundary=b", body.as_bytes()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Decode, "{lines:?}");
    }
    let outcomes =
        decode_batch_response("multipart/mixed; boundary=b", part("etag: W/\"1\"").as_bytes()).unwrap();
    assert_eq!(outcomes[0].etag.as_ref().unwrap().as_str(), "W/\"1\"");
}

#[test]
fn responses_beyond_what_100_operations_can_produce_are_refused() {
    let ct = "multipart/mixed; boundary=b";
    let part = "--b\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
    let parts = |n: usize| format!("{}--b--", part.repeat(n));
    assert_eq!(decode_batch_response(ct, parts(100).as_bytes()).unwrap().len(), 100);
    assert_eq!(decode_batch_response(ct, parts(101).as_bytes()).unwrap_err().kind(), ErrorKind::Decode);
    // A body of newlines is refused before it is split into millions of lines.
    let newlines = format!("--b\r\n{}--b--", "\n".repeat(5_000_000));
    assert_eq!(decode_batch_response(ct, newlines.as_bytes()).unwrap_err().kind(), ErrorKind::Decode);
}
