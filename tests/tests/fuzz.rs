//! A short pass of every fuzz target (`conformance::fuzz`), so the fuzzers cannot rot, and
//! the inputs they found as named regression cases.
//!
//! The long runs are `cargo run --release -p conformance --bin fuzz -- --count 1000000` (the
//! `server` target at about 3,500 inputs a second: `--target server --count 500000`).

use conformance::fuzz::{TARGETS, Verdict, target};

/// Inputs per target: a few seconds each in a debug build.
const COUNT: u64 = 20_000;
/// Inputs of the `server` target, each a TCP connection to a running server.
const SERVER_COUNT: u64 = 1_500;
/// Fixed, so a failure here replays with `--seed 20240 --iteration I`.
const SEED: u64 = 20_240;

fn short_pass(name: &str, count: u64) {
    let target = target(name).expect("a known target");
    let report = target.run(SEED, count);
    let failures: Vec<String> = report.failures.iter().map(ToString::to_string).collect();
    assert!(
        report.panics == 0 && report.violations == 0,
        "{} panics and {} broken invariants in {} inputs:\n{}",
        report.panics,
        report.violations,
        report.inputs,
        failures.join("\n")
    );
    // A pass where every input fails the same way is not exploring anything.
    assert!(report.outcomes.len() > 1, "only {:?}", report.outcomes);
}

#[test]
fn fuzz_filter() {
    short_pass("filter", COUNT);
}

#[test]
fn fuzz_entity() {
    short_pass("entity", COUNT);
}

#[test]
fn fuzz_page() {
    short_pass("page", COUNT);
}

#[test]
fn fuzz_batch() {
    short_pass("batch", COUNT);
}

#[test]
fn fuzz_error() {
    short_pass("error", COUNT);
}

#[test]
fn fuzz_connection_string() {
    short_pass("connection-string", COUNT);
}

#[test]
fn fuzz_continuation() {
    short_pass("continuation", COUNT);
}

#[test]
fn fuzz_server() {
    short_pass("server", SERVER_COUNT);
}

#[test]
fn every_target_has_a_test_here() {
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        ["filter", "entity", "page", "batch", "error", "connection-string", "continuation", "server"]
    );
}

/// The seeds are valid inputs (else the mutations start far from the code worth reaching):
/// every one is accepted, except the batch answers that report a failed transaction, and the
/// server target's requests that its service refuses on purpose (an existing table, a stale
/// ETag): those must at least reach the service, never be refused by hyper's parser.
#[test]
fn seeds_are_accepted() {
    for target in &TARGETS {
        for seed in target.seeds() {
            let verdict = target.check(&seed);
            let accepted = match (&verdict, target.name()) {
                (Verdict::Outcome(_), "error") => true,
                (Verdict::Outcome(outcome), "batch") => outcome != "Decode",
                (Verdict::Outcome(outcome), "server") => {
                    println!("server seed: {outcome}");
                    !outcome.starts_with("hyper") && outcome != "closed"
                }
                (Verdict::Outcome(outcome), _) => outcome.starts_with("ok"),
                _ => false,
            };
            assert!(accepted, "{}: {verdict:?} for b\"{}\"", target.name(), seed.escape_ascii());
        }
    }
}

/// Every input of the `server` target starts from the same data, whatever the inputs before
/// it did: a delete answers 204 each time, and the row it deleted is there for the next read.
#[test]
fn server_inputs_start_from_the_same_data() {
    let server = target("server").expect("a known target");
    let delete = b"DELETE /devstoreaccount1/fuzzdata(PartitionKey='p1',RowKey='r1') HTTP/1.1\r\nHost: x\r\n\
                   x-ms-version: 2019-02-02\r\nAccept: application/json\r\nIf-Match: *\r\n\r\n";
    let read = b"GET /devstoreaccount1/fuzzdata(PartitionKey='p1',RowKey='r1') HTTP/1.1\r\nHost: x\r\n\
                 x-ms-version: 2019-02-02\r\nAccept: application/json\r\n\r\n";
    for input in [&delete[..], delete, read] {
        let expected = if input == read { "200" } else { "204" };
        assert_eq!(server.check(input), Verdict::Outcome(expected.to_owned()));
    }
}

/// Runs one input of `target`, which must neither panic nor break an invariant.
fn no_failure(name: &str, input: &[u8]) {
    let verdict = target(name).expect("a known target").check(input);
    assert!(matches!(verdict, Verdict::Outcome(_)), "{verdict:?}");
}

// Regression cases: inputs the fuzzers found, reduced by hand.

/// A `?` inside a SAS signature was taken by `SasToken`'s `Debug` for the start of a query, so
/// the signature before it was printed unredacted (`SasToken("sig=secret?Signature")`).
#[test]
fn regression_sas_signature_with_a_question_mark_stays_redacted() {
    no_failure(
        "connection-string",
        b"TableEndpoint=https://acct.table.core.windows.net;SharedAccessSignature=sig=secret?Signature",
    );
}

/// `SasToken`'s `Debug` redacted only a lower-case `sig` parameter (`SIG=secret` was shown).
#[test]
fn regression_sas_signature_in_upper_case_stays_redacted() {
    no_failure(
        "connection-string",
        b"TableEndpoint=https://acct.table.core.windows.net;SharedAccessSignature=sig=s&SIG=secretSignature",
    );
}

/// A `HEAD` to an account not served: the service refuses it with 400 before it looks at the
/// method, and HTTP leaves the error body out. The target took only a 405 for a valid answer.
#[test]
fn regression_server_head_to_an_unserved_account() {
    no_failure("server", b"HEAD /devstoredevstoreaccount1/fuzzdata HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

/// A client that shuts its write side after a whole request: the server answered some of these
/// with a bare close (hyper took the end of the stream for a client gone mid-request), so the
/// target's outcomes changed from run to run; `table-server`'s `a_half_closed_connection_gets_its_answer`.
#[test]
fn regression_server_answers_a_half_closed_connection() {
    let server = target("server").expect("a known target");
    let input = b"POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ms-version: 2019-02-02\r\n\
                  Accept: application/json\r\nConnection: close\r\n\r\n";
    for _ in 0..300 {
        assert_eq!(server.check(input), Verdict::Outcome("400 InvalidInput".to_owned()));
    }
}
