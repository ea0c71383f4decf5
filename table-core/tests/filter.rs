//! Public behaviour of `$filter`: parsing (every literal form, precedence, errors, limits),
//! the canonical printer (round trip, escaping), the builders and the evaluator's semantics.

use std::cmp::Ordering;
use std::ops::Bound;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use table_core::datetime::{MAX_TICKS, from_ticks, parse_datetime};
use table_core::typed::Column;
use table_core::{
    CompareOp, Entity, ErrorCode, ErrorKind, Filter, MAX_FILTER_COMPARISONS, MAX_FILTER_NESTING, Value,
    Violation,
};
use uuid::Uuid;

fn parse(s: &str) -> Filter {
    Filter::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn at(s: &str) -> DateTime<Utc> {
    parse_datetime(s).expect("test instant")
}

fn p(name: &str) -> Filter {
    Filter::property(name)
}

fn literal(s: &str) -> Value {
    match parse(&format!("P eq {s}")) {
        Filter::Compare { value, .. } => value,
        other => panic!("{s}: {other:?}"),
    }
}

/// The violation of a failed parse.
fn violation(s: &str) -> Violation {
    let e = Filter::parse(s).expect_err(s);
    e.violation().cloned().expect("a local violation")
}

fn syntax_error_at(s: &str) -> usize {
    let e = Filter::parse(s).expect_err(s);
    assert_eq!(e.code(), Some(&ErrorCode::InvalidInput), "{s}");
    assert_eq!(e.status(), Some(400), "{s}");
    match e.violation() {
        Some(Violation::FilterSyntax { position, .. }) => *position,
        other => panic!("{s}: expected a syntax error, got {other:?}"),
    }
}

fn unsupported_at(s: &str) -> usize {
    let e = Filter::parse(s).expect_err(s);
    assert_eq!(e.code(), Some(&ErrorCode::NotImplemented), "{s}");
    assert_eq!(e.status(), Some(501), "{s}");
    assert_eq!(e.kind(), ErrorKind::NotImplemented, "{s}");
    match e.violation() {
        Some(Violation::FilterUnsupported { position, .. }) => *position,
        other => panic!("{s}: expected an unsupported construct, got {other:?}"),
    }
}

// ---------------------------------------------------------------- parsing

#[test]
fn every_literal_form() {
    assert_eq!(literal("'it''s'"), Value::from("it's"));
    assert_eq!(literal("''"), Value::from(""));
    assert_eq!(literal("'é😀 and x eq 1'"), Value::from("é😀 and x eq 1"));
    assert_eq!(literal("42"), Value::Int32(42));
    assert_eq!(literal("-42"), Value::Int32(-42));
    assert_eq!(literal("2147483647"), Value::Int32(i32::MAX));
    assert_eq!(literal("42L"), Value::Int64(42));
    assert_eq!(literal("9223372036854775807L"), Value::Int64(i64::MAX));
    assert_eq!(literal("1.5"), Value::Double(1.5));
    assert_eq!(literal("1e10"), Value::Double(1e10));
    assert_eq!(literal("1.5E-3"), Value::Double(1.5e-3));
    assert_eq!(literal("-2.5e+3"), Value::Double(-2500.0));
    assert_eq!(literal("3D"), Value::Double(3.0));
    assert_eq!(literal("INF"), Value::Double(f64::INFINITY));
    assert_eq!(literal("-INF"), Value::Double(f64::NEG_INFINITY));
    assert!(matches!(literal("NaN"), Value::Double(d) if d.is_nan()));
    assert_eq!(literal("true"), Value::Boolean(true));
    assert_eq!(literal("false"), Value::Boolean(false));
    assert_eq!(
        literal("datetime'2020-01-02T03:04:05.1234567Z'"),
        Value::DateTime(at("2020-01-02T03:04:05.1234567Z"))
    );
    assert_eq!(literal("datetime'2020-01-02T03:04:05'"), Value::DateTime(at("2020-01-02T03:04:05Z")));
    assert_eq!(
        literal("guid'C9DA6455-213D-42C9-9A79-3E9149A57833'"),
        Value::Guid(Uuid::from_u128(0xc9da6455_213d_42c9_9a79_3e9149a57833))
    );
    assert_eq!(literal("X'0a0B'"), Value::Binary(vec![0x0a, 0x0b]));
    assert_eq!(literal("binary'0a0B'"), Value::Binary(vec![0x0a, 0x0b]));
}

#[test]
fn integers_out_of_range_are_errors() {
    assert_eq!(syntax_error_at("P eq 2147483648"), 5);
    assert_eq!(syntax_error_at("P eq -2147483649"), 5);
    assert_eq!(literal("2147483648L"), Value::Int64(2_147_483_648));
    assert_eq!(syntax_error_at("P eq 9223372036854775808L"), 5);
}

#[test]
fn precedence_and_associativity() {
    let (a, b, c) = (p("a"), p("b"), p("c"));
    assert_eq!(parse("a or b and c"), a.clone().or(b.clone().and(c.clone())));
    assert_eq!(parse("a and b or c"), a.clone().and(b.clone()).or(c.clone()));
    assert_eq!(parse("(a or b) and c"), a.clone().or(b.clone()).and(c.clone()));
    assert_eq!(parse("a or b or c"), a.clone().or(b.clone()).or(c.clone()));
    assert_eq!(parse("a and b and c"), a.clone().and(b.clone()).and(c.clone()));
    assert_eq!(parse("a or (b or c)"), a.clone().or(b.clone().or(c.clone())));
    assert_eq!(parse("not a and b"), (!a.clone()).and(b.clone()));
    assert_eq!(parse("not (a and b)"), !a.clone().and(b.clone()));
    assert_eq!(parse("not not a"), !!a.clone());
    assert_eq!(parse("((a))"), a.clone());
    assert_eq!(
        parse("A eq 1 or B lt 2 and not (C ge 'x')"),
        Filter::eq("A", 1).or(Filter::lt("B", 2).and(!Filter::ge("C", "x")))
    );
    assert_eq!(parse("(A eq 1)and(B eq 2)"), Filter::eq("A", 1).and(Filter::eq("B", 2)));
    assert_eq!(parse(" \tA  eq\n1 "), Filter::eq("A", 1));
}

#[test]
fn literal_on_the_left_is_normalised() {
    assert_eq!(parse("30 lt Age"), Filter::gt("Age", 30));
    assert_eq!(parse("30 le Age"), Filter::ge("Age", 30));
    assert_eq!(parse("30 gt Age"), Filter::lt("Age", 30));
    assert_eq!(parse("30 ge Age"), Filter::le("Age", 30));
    assert_eq!(parse("'x' eq Name"), Filter::eq("Name", "x"));
    assert_eq!(parse("'x' ne Name"), Filter::ne("Name", "x"));
}

#[test]
fn keywords_are_case_sensitive() {
    assert_eq!(syntax_error_at("A EQ 1"), 2);
    assert_eq!(syntax_error_at("A eq 1 AND B eq 2"), 7);
    let Violation::FilterSyntax { message, .. } = violation("A eq 1 AND B eq 2") else {
        panic!("syntax error expected")
    };
    assert!(message.contains("lower-case"), "{message}");
    // `True` is a property name, so this compares two properties.
    assert_eq!(unsupported_at("A eq True"), 0);
    // `PartitionKey` and `partitionkey` are different properties.
    assert_eq!(parse("partitionkey eq 'a'"), Filter::eq("partitionkey", "a"));
}

#[test]
fn syntax_error_positions() {
    assert_eq!(syntax_error_at(""), 0);
    assert_eq!(syntax_error_at("   "), 3);
    assert_eq!(syntax_error_at("Age eq"), 6);
    assert_eq!(syntax_error_at("Age eq 1 and"), 12);
    assert_eq!(syntax_error_at("foo bar"), 4);
    assert_eq!(syntax_error_at("Name eq 'abc"), 8);
    assert_eq!(syntax_error_at("Name eq \"abc\""), 8);
    assert_eq!(syntax_error_at("(A eq 1"), 7);
    assert_eq!(syntax_error_at("A eq 1)"), 6);
    assert_eq!(syntax_error_at("property1 eq 1'invalid''"), 14);
    assert_eq!(syntax_error_at("A eq 1 # x"), 7);
    assert_eq!(syntax_error_at("A eq 'x' and 5"), 13);
    assert_eq!(syntax_error_at("not 5"), 4);
    assert_eq!(syntax_error_at("A eq and"), 5);
    assert_eq!(syntax_error_at("é eq 'é' and"), 14);
    assert_eq!(syntax_error_at("P eq datetime'yesterday'"), 14);
    assert_eq!(syntax_error_at("P eq guid'nope'"), 10);
    assert_eq!(syntax_error_at("P eq X'zz'"), 7);
}

#[test]
fn unsupported_constructs_answer_501() {
    assert_eq!(unsupported_at("a eq b"), 0);
    assert_eq!(unsupported_at("x eq 1 and 1 eq 2"), 11);
    assert_eq!(unsupported_at("startswith(Name, 'a')"), 0);
    assert_eq!(unsupported_at("A eq 1 or substringof('a', Name)"), 10);
    assert_eq!(unsupported_at("Age add 1 eq 2"), 4);
    assert_eq!(unsupported_at("Name eq null"), 8);
    assert_eq!(unsupported_at("-Age eq 1"), 0);
    assert_eq!(unsupported_at("Price eq 1.5M"), 12);
    assert_eq!(unsupported_at("Price eq 1.5f"), 12);
    // `not` binds tighter than `eq`: this compares `not A` with 1.
    assert_eq!(unsupported_at("not A eq 1"), 6);
    assert_eq!(unsupported_at("x eq 3 eq true"), 7);
    assert_eq!(unsupported_at("(A eq 1) eq true"), 9);
    assert_eq!(unsupported_at("A eq (B eq 1)"), 2);
}

#[test]
fn limits_fifteen_and_sixteen() {
    let joined = |n: usize| (0..n).map(|i| format!("P{i} eq {i}")).collect::<Vec<_>>().join(" and ");
    let fifteen = parse(&joined(MAX_FILTER_COMPARISONS));
    assert_eq!(fifteen.comparison_count(), 15);
    fifteen.check_limits().expect("15 comparisons are allowed");

    for n in [16, 40] {
        let e = Filter::parse(&joined(n)).expect_err("over the limit");
        assert_eq!(e.violation(), Some(&Violation::TooManyComparisons { count: n, max: 15 }));
        assert_eq!(e.code(), Some(&ErrorCode::InvalidInput));
    }
    // A syntax error after the limit is still reported where it is.
    let trailing_and = format!("{} and", joined(20));
    assert_eq!(syntax_error_at(&trailing_and), trailing_and.len());

    let built = |n: usize| Filter::all_of((0..n).map(|i| Filter::eq(format!("P{i}"), 1)));
    built(15).expect("some").check_limits().expect("15 allowed");
    let e = built(16).expect("some").check_limits().expect_err("16 rejected");
    assert_eq!(e.violation(), Some(&Violation::TooManyComparisons { count: 16, max: 15 }));
    // Bare Boolean properties count too.
    let bare = parse("a and b or not c");
    assert_eq!(bare.comparison_count(), 3);
}

#[test]
fn check_limits_rejects_unprintable_property_names() {
    let f = Filter::eq("A", 1).and(Filter::eq("x eq 1 or y", 2));
    assert_eq!(f.to_string(), "A eq 1 and 'x eq 1 or y' eq 2");
    let e = f.check_limits().expect_err("not an identifier");
    assert!(matches!(e.violation(), Some(Violation::FilterUnsupported { position: 11, .. })));
    assert_eq!(e.status(), Some(501));
    // What the service would receive fails to parse the same way.
    assert_eq!(unsupported_at(&f.to_string()), 11);
    assert!(p("and").check_limits().is_err());
    assert!(p("").check_limits().is_err());
    assert!(p("été_1").check_limits().is_ok());
}

#[test]
fn property_names_follow_the_csharp_identifier_rule() {
    // Combining marks (a decomposed `é`), format characters (ZWJ) and letter numbers are
    // identifier characters, so a filter can name such a property; what the service refuses
    // (a leading mark, an enclosing mark, a superscript digit) cannot be named.
    for name in ["Cafe\u{301}", "a\u{200d}b", "\u{2160}x", "x\u{203f}y", "n\u{663}"] {
        let f = Filter::eq(name, 1).and(p(name));
        f.check_limits().unwrap_or_else(|e| panic!("{name:?}: {e}"));
        assert_eq!(parse(&f.to_string()), f, "{name:?}");
        assert_eq!(parse(&format!("{name} eq 1")), Filter::eq(name, 1));
    }
    for name in ["\u{301}e", "a\u{20dd}", "a\u{b2}", "a\u{a0}b"] {
        assert!(p(name).check_limits().is_err(), "{name:?}");
        assert!(Filter::parse(&format!("{name} eq 1")).is_err(), "{name:?}");
    }
}

/// `f.check_limits()` agrees with the parser on `f`'s canonical text: success exactly when
/// the text parses back to `f`, and otherwise the same violation at the same position.
/// Returns whether `f` passed.
fn limits_agree_with_the_parser(f: &Filter) -> bool {
    let text = f.to_string();
    match (f.check_limits(), Filter::parse(&text)) {
        (Ok(()), Ok(back)) => {
            assert_eq!(&back, f, "{text}");
            true
        }
        (Err(limit), Err(parsed)) => {
            assert_eq!(limit.violation(), parsed.violation(), "{text}");
            false
        }
        (limit, parsed) => panic!("{text}: check_limits {limit:?}, parse {parsed:?}"),
    }
}

#[test]
fn nesting_limit_is_the_parsers_exactly() {
    let nots = |n: usize, f: Filter| (0..n).fold(f, |f, _| !f);
    let (a, b, c) = (p("a"), p("b"), p("c"));
    // (shape, levels besides the `not`s, the negated core, what the `not`s are placed in)
    type Place = fn(Filter) -> Filter;
    let same: Place = |f| f;
    let shapes: [(&str, usize, Filter, Place); 5] = [
        ("not^n a", 0, a.clone(), same),
        ("not^n (a or b) and c", 0, a.clone().or(b.clone()), |f| f.and(p("c"))),
        ("c and not^n (a or b)", 0, a.clone().or(b.clone()), |f| p("c").and(f)),
        ("not^n (a and (b or c))", 1, a.clone().and(b.clone().or(c.clone())), same),
        ("not^n (a or (b or c and not (d)))", 2, a.clone().or(b.or(c.and(!p("d")))), same),
    ];
    for (shape, extra, core, place) in &shapes {
        for n in 0..=MAX_FILTER_NESTING + 2 {
            let f = place(nots(n, core.clone()));
            let depth = n + extra;
            assert_eq!(limits_agree_with_the_parser(&f), depth <= MAX_FILTER_NESTING, "{shape}, n = {n}");
        }
    }
    // 101 nested `not`s: refused, where the printed text would fail to parse.
    let e = nots(MAX_FILTER_NESTING + 1, a.clone()).check_limits().expect_err("too deep");
    assert_eq!(e.code(), Some(&ErrorCode::InvalidInput));
    assert!(
        matches!(e.violation(), Some(Violation::FilterSyntax { position, .. }) if *position == 5 * MAX_FILTER_NESTING)
    );
    // Whatever parses passes, even nested to the limit in the other spelling.
    let written = format!("{}a", "not ".repeat(MAX_FILTER_NESTING));
    assert!(limits_agree_with_the_parser(&parse(&written)));
    let parens = format!("{}not a{}", "(".repeat(MAX_FILTER_NESTING - 1), ")".repeat(MAX_FILTER_NESTING - 1));
    assert!(limits_agree_with_the_parser(&parse(&parens)));
}

#[test]
fn filters_built_far_deeper_than_any_parse_are_refused_without_overflowing_the_stack() {
    // A million levels: counted and audited without recursion past the limit. The filters are
    // leaked because dropping a chain of boxes this deep is itself recursive (the caller's
    // structure, not the SDK's).
    let deep_not = (0..1_000_000).fold(p("a"), |f, _| !f);
    let e = deep_not.check_limits().expect_err("too deep");
    assert!(matches!(e.violation(), Some(Violation::FilterSyntax { .. })), "{e}");
    std::mem::forget(deep_not);
    let long_and = (0..1_000_000).fold(p("a"), |f, _| f.and(p("b")));
    let e = long_and.check_limits().expect_err("too many comparisons");
    assert!(matches!(e.violation(), Some(Violation::TooManyComparisons { .. })), "{e}");
    std::mem::forget(long_and);
}

#[test]
fn non_finite_doubles_are_refused_naming_the_property() {
    for d in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        let built = [
            Filter::eq("A", 1).and(Filter::gt("Score", d)),
            Column::<f64>::new("Score").gt(d),
            !Filter::compare("Score", CompareOp::Le, Value::Double(d)),
        ];
        for f in built {
            let e = f.check_limits().expect_err("no portable literal");
            assert_eq!(e.code(), Some(&ErrorCode::InvalidInput));
            assert_eq!(e.status(), Some(400));
            match e.violation() {
                Some(Violation::FilterNonFiniteDouble { property, value }) => {
                    assert_eq!(property, "Score");
                    assert_eq!(value.to_bits(), d.to_bits());
                }
                other => panic!("{f}: {other:?}"),
            }
            assert!(e.to_string().contains("\"Score\""), "{e}");
        }
    }
    // Parsed literals too: the parser reads them, but they are not sent.
    assert!(parse("D lt INF").check_limits().is_err());
    assert!(parse("D ne NaN").check_limits().is_err());
    // Every finite double passes, the extremes included.
    for d in [f64::MAX, f64::MIN, f64::from_bits(1), -0.0, 1e300] {
        Filter::eq("D", d).check_limits().expect("finite");
    }
}

#[test]
fn from_str_is_parse() {
    let f: Filter = "PartitionKey eq 'p'".parse().expect("parses");
    assert_eq!(f, Filter::partition_key_eq("p"));
}

// ---------------------------------------------------------------- printing and builders

#[test]
fn canonical_text() {
    let f = Filter::partition_key_eq("O'Neil")
        .and(Filter::gt("Age", 30).or(!Filter::property("Active")))
        .and(!Filter::eq("Score", 1.0));
    assert_eq!(
        f.to_odata(),
        "PartitionKey eq 'O''Neil' and (Age gt 30 or not (Active)) and not (Score eq 1.0)"
    );
    assert_eq!(parse(&f.to_odata()), f);
    assert_eq!(Filter::eq("Big", i64::MIN).to_string(), "Big eq -9223372036854775808L");
    assert_eq!(
        Filter::eq("T", at("2020-01-02T03:04:05Z")).to_string(),
        "T eq datetime'2020-01-02T03:04:05.0000000Z'"
    );
    assert_eq!(
        Filter::eq("G", Uuid::from_u128(0xC9DA6455_213D_42C9_9A79_3E9149A57833)).to_string(),
        "G eq guid'c9da6455-213d-42c9-9a79-3e9149a57833'"
    );
    assert_eq!(Filter::eq("B", vec![0xABu8, 1]).to_string(), "B eq X'ab01'");
    assert_eq!(Filter::eq("D", 1e-7).to_string(), "D eq 0.0000001");
    assert_eq!(Filter::eq("D", 1e22).to_string(), "D eq 10000000000000000000000.0");
    // Printed (and parsed back), but refused by `check_limits`.
    assert_eq!(Filter::eq("D", f64::INFINITY).to_string(), "D eq INF");
    assert_eq!((!!p("a")).to_string(), "not (not (a))");
}

#[test]
fn builders() {
    use CompareOp::*;
    for (built, op) in [
        (Filter::eq("A", 1), Eq),
        (Filter::ne("A", 1), Ne),
        (Filter::gt("A", 1), Gt),
        (Filter::ge("A", 1), Ge),
        (Filter::lt("A", 1), Lt),
        (Filter::le("A", 1), Le),
    ] {
        assert_eq!(built, Filter::compare("A", op, 1));
        assert_eq!(built.to_string(), format!("A {op} 1"));
    }
    assert_eq!(Filter::all_of([]), None);
    assert_eq!(Filter::all_of([p("a")]), Some(p("a")));
    assert_eq!(Filter::all_of([p("a"), p("b"), p("c")]).expect("some").to_string(), "a and b and c");
    assert_eq!(Filter::prefix("RowKey", "emp_").to_string(), "RowKey ge 'emp_' and RowKey lt 'emp`'");
    assert_eq!(Filter::prefix("RowKey", "").to_string(), "RowKey ge ''");
    assert_eq!(Filter::prefix("R", "a\u{ffff}").to_string(), "R ge 'a\u{ffff}' and R lt 'b'");
    assert_eq!(Filter::prefix("R", "\u{ffff}").to_string(), "R ge '\u{ffff}'");
    assert_eq!(Filter::prefix("R", "a\u{10ffff}").to_string(), "R ge 'a\u{10ffff}' and R lt 'a\u{e000}'");
    assert_eq!(
        Filter::range("R", Bound::Excluded("a"), Bound::Included("m")).to_string(),
        "R gt 'a' and R le 'm'"
    );
    assert_eq!(
        Filter::range("R", Bound::Unbounded, Bound::Excluded("m")).to_string(),
        "R ge '' and R lt 'm'"
    );
    assert_eq!(Filter::range("R", Bound::Unbounded, Bound::Unbounded).to_string(), "R ge ''");
}

// ---------------------------------------------------------------- evaluation

const NAN_BITS: u64 = 0x7ff8_0000_0000_0001;

fn row() -> Entity {
    let mut e = Entity::new("pk", "rk")
        .with("S", "abc")
        .with("I", 3)
        .with("L", 3i64)
        .with("D", 3.0)
        .with("Half", 2.5)
        .with("B", true)
        .with("F", false)
        .with("T", at("2020-01-02T03:04:05.1234567Z"))
        .with("G", Uuid::from_u128(0x10))
        .with("Bin", vec![1u8, 2])
        .with("N", f64::from_bits(NAN_BITS))
        .with("Big", (1i64 << 53) + 1)
        .with("BigD", (1u64 << 53) as f64)
        .with("Fw", "\u{ff21}");
    e.timestamp = Some(at("2021-05-06T07:08:09Z"));
    e
}

/// Every rule of the evaluator, one line each: (filter, expected on `row()`).
const MATRIX: &[(&str, bool)] = &[
    // System properties.
    ("PartitionKey eq 'pk'", true),
    ("PartitionKey gt 'pj'", true),
    ("RowKey eq 'rk'", true),
    ("RowKey ne 'rk'", false),
    ("Timestamp eq datetime'2021-05-06T07:08:09Z'", true),
    ("Timestamp lt datetime'2021-05-06T07:08:09.0000001Z'", true),
    // Missing property: every comparison false, `not` flips.
    ("Missing eq 1", false),
    ("Missing ne 1", false),
    ("Missing gt 1", false),
    ("Missing ge 1", false),
    ("Missing lt 1", false),
    ("Missing le 1", false),
    ("not (Missing eq 1)", true),
    ("not (Missing ne 1)", true),
    // Bare property: Boolean true only.
    ("B", true),
    ("F", false),
    ("S", false),
    ("I", false),
    ("Missing", false),
    ("not Missing", true),
    ("not F", true),
    // Strings: ordinal, UTF-16.
    ("S eq 'abc'", true),
    ("S ne 'abc'", false),
    ("S gt 'ab'", true),
    ("S lt 'abd'", true),
    ("S lt 'B'", false),
    ("S ge 'abc'", true),
    ("S le 'abc'", true),
    ("Fw gt '\u{1f600}'", true),
    // Numbers of the same type.
    ("I eq 3", true),
    ("I gt 2", true),
    ("I lt 3", false),
    ("L eq 3L", true),
    ("L ge 4L", false),
    ("D eq 3.0", true),
    ("D lt 3.5", true),
    // Numeric cross-type: Int64 property vs Int32 literal, Double vs Int32/Int64.
    ("L eq 3", true),
    ("L lt 4", true),
    ("D eq 3", true),
    ("D eq 3L", true),
    ("Half gt 2", true),
    ("Half lt 3L", true),
    ("Half eq 2L", false),
    ("BigD lt 9007199254740993L", true),
    ("BigD eq 9007199254740993L", false),
    ("Big eq 9007199254740993L", true),
    // Not comparable: eq/gt/ge false, ne/lt/le true.
    ("I eq 3L", false),
    ("I ne 3L", true),
    ("I gt 3L", false),
    ("I ge 3L", false),
    ("I lt 3L", true),
    ("I le 3L", true),
    ("I eq 3.0", false),
    ("I le 3.0", true),
    ("L eq 3.0", false),
    ("L ne 3.0", true),
    ("S eq 3", false),
    ("S lt 3", true),
    ("T eq '2020-01-02T03:04:05.1234567Z'", false),
    ("T ne '2020-01-02T03:04:05.1234567Z'", true),
    ("G eq '00000000-0000-0000-0000-000000000010'", false),
    ("B eq 1", false),
    ("B le 1", true),
    ("Bin ne 'x'", true),
    ("PartitionKey gt 1", false),
    ("PartitionKey lt 1", true),
    // Booleans: false < true.
    ("B eq true", true),
    ("B gt false", true),
    ("F lt true", true),
    ("F ge true", false),
    // DateTime by instant, 100 ns resolution.
    ("T eq datetime'2020-01-02T03:04:05.1234567Z'", true),
    ("T gt datetime'2020-01-02T03:04:05.1234566Z'", true),
    ("T lt datetime'2020-01-02T03:04:05.1234568Z'", true),
    // Guid by value, case-insensitive literal.
    ("G eq guid'00000000-0000-0000-0000-000000000010'", true),
    ("G lt guid'00000000-0000-0000-0000-00000000001A'", true),
    ("G gt guid'00000000-0000-0000-0000-00000000000f'", true),
    // Binary bytewise.
    ("Bin eq X'0102'", true),
    ("Bin lt X'0103'", true),
    ("Bin gt X'01'", true),
    ("Bin lt binary'02'", true),
    // NaN: IEEE (eq false, ne true, orderings false).
    ("N eq NaN", false),
    ("N ne NaN", true),
    ("N ne 1.0", true),
    ("N eq 1", false),
    ("N lt 1", false),
    ("N ge 1L", false),
    ("N lt INF", false),
    ("D lt INF", true),
    ("D gt -INF", true),
    ("D ne NaN", true),
    ("D ge NaN", false),
    // Combinations.
    ("I eq 3 and S eq 'abc'", true),
    ("I eq 4 or S eq 'abc'", true),
    ("I eq 4 or S eq 'x' and B", false),
    ("not (I eq 4 or Missing eq 1)", true),
];

#[test]
fn evaluation_matrix() {
    let e = row();
    for (text, expected) in MATRIX {
        assert_eq!(parse(text).matches(&e), *expected, "{text}");
    }
}

#[test]
fn timestamp_missing_fails_every_comparison() {
    let e = Entity::new("p", "r");
    assert!(!parse("Timestamp ne datetime'2020-01-01T00:00:00Z'").matches(&e));
    assert!(parse("not (Timestamp lt datetime'2020-01-01T00:00:00Z')").matches(&e));
}

#[test]
fn wide_entities_are_looked_up_too() {
    // Both lookup strategies: a short linear scan and the map's search for wide entities.
    for width in [3, 40] {
        let mut e = Entity::new("p", "r");
        for i in 0..width {
            e.insert(format!("P{i:02}"), i);
        }
        assert!(parse("P02 eq 2").matches(&e), "{width}");
        assert!(parse("P00 lt 1 and P01 ge 1").matches(&e), "{width}");
        assert!(!parse("P99 ne 1").matches(&e), "{width}");
        assert!(!parse("P0 eq 0").matches(&e), "{width}");
    }
}

// ---------------------------------------------------------------- properties

fn property_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "PartitionKey",
            "RowKey",
            "Timestamp",
            "X",
            "binary",
            "datetime",
            "guid",
            "AND",
            "Not",
            "INFINITY",
            "été",
            "_",
            "e\u{301}t\u{e9}",
            "a\u{200d}b",
            "\u{2160}",
        ])
        .prop_map(str::to_owned),
        "[A-Za-z_][A-Za-z0-9_]{0,8}",
    ]
    .prop_filter("a property name, not a keyword", |name| {
        Filter::property(name.as_str()).check_limits().is_ok()
    })
}

fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        // Every bit pattern equally: all exponents, subnormals included.
        any::<u64>().prop_map(f64::from_bits),
        prop::sample::select(vec![
            0.0,
            -0.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::EPSILON,
            1e16,
            1e-7,
            0.1,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ]),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<String>().prop_map(Value::String),
        "['a ()]{0,6}".prop_map(Value::String),
        any::<i32>().prop_map(Value::Int32),
        prop::sample::select(vec![i32::MIN, i32::MAX, 0, -1]).prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        prop::sample::select(vec![i64::MIN, i64::MAX, 0, -1]).prop_map(Value::Int64),
        double().prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        (0..=MAX_TICKS).prop_map(|t| Value::DateTime(from_ticks(t).expect("in range"))),
        any::<u128>().prop_map(|g| Value::Guid(Uuid::from_u128(g))),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(Value::Binary),
    ]
}

fn op() -> impl Strategy<Value = CompareOp> {
    prop::sample::select(CompareOp::ALL.to_vec())
}

fn filter() -> impl Strategy<Value = Filter> {
    let leaf = prop_oneof![
        3 => (property_name(), op(), value()).prop_map(|(p, op, v)| Filter::compare(p, op, v)),
        1 => property_name().prop_map(Filter::Property),
    ];
    leaf.prop_recursive(6, 14, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.and(b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.or(b)),
            inner.prop_map(|f| !f),
        ]
    })
    .prop_filter("within the comparison limit", |f| f.comparison_count() <= MAX_FILTER_COMPARISONS)
}

/// Filters nested around the nesting limit: mostly `not`s, with up to 14 `and`/`or` levels
/// (each adding parentheses when its operand binds looser).
fn deep_filter() -> impl Strategy<Value = Filter> {
    let leaf = prop_oneof![Just(p("a")), Just(Filter::eq("N", 1)), Just(p("b").or(p("c")))];
    let wrap = prop::sample::select(vec![0u8, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]);
    (leaf, prop::collection::vec(wrap, 60..=140)).prop_map(|(leaf, wraps)| {
        wraps.into_iter().fold(leaf, |f, wrap| {
            let room = f.comparison_count() < MAX_FILTER_COMPARISONS;
            match wrap {
                1 if room => p("x").and(f),
                2 if room => f.and(p("x")),
                3 if room => p("x").or(f),
                4 if room => f.or(p("x")),
                _ => !f,
            }
        })
    })
}

/// Filter text nested around the limit by `not`, `(` and `not (`, some of it not canonical.
fn deep_text() -> impl Strategy<Value = String> {
    let opener = prop::sample::select(vec!["not ", "(", "not (", "not not ("]);
    let core = prop::sample::select(vec!["a", "N eq 1", "a or b", "a and (b or c)"]);
    (prop::collection::vec(opener, 40..=120), core).prop_map(|(openers, core)| {
        let closers: String = openers.iter().map(|o| if o.ends_with('(') { ")" } else { "" }).rev().collect();
        format!("{}{core}{closers}", openers.concat())
    })
}

/// Text that exercises the lexer and parser: fragments of valid and invalid filters.
fn filter_soup() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "(",
        ")",
        " and ",
        " or ",
        "not ",
        " eq ",
        " lt ",
        "A",
        "B",
        "'",
        "''",
        "'x'",
        "1",
        "-",
        "1.5",
        "e",
        "L",
        "X'",
        "0a",
        "guid'",
        "datetime'",
        " ",
        "INF",
        "NaN",
        "true",
        "é",
        "\u{1f600}",
        "\"",
        ".",
    ]);
    prop::collection::vec(piece, 0..16).prop_map(|v| v.concat())
}

/// Exact order of a double and an integer, by a different route than the evaluator's.
fn exact_order(d: f64, i: i64) -> Ordering {
    if d.abs() >= 1e30 {
        return if d > 0.0 { Ordering::Greater } else { Ordering::Less };
    }
    let floor = d.floor();
    match (floor as i128).cmp(&i128::from(i)) {
        Ordering::Equal if d == floor => Ordering::Equal,
        Ordering::Equal => Ordering::Greater,
        other => other,
    }
}

fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(vec![
            'a',
            'b',
            '\u{d7ff}',
            '\u{e000}',
            '\u{fffe}',
            '\u{ffff}',
            '\u{10000}',
            '\u{10ffff}',
        ]),
        any::<char>(),
    ]
}

fn tricky_string() -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_char(), 0..4).prop_map(String::from_iter)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn printing_round_trips(f in filter()) {
        let text = f.to_string();
        let back = Filter::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(&back, &f);
        // Printing again is identical, so doubles kept their bits (including -0.0).
        prop_assert_eq!(back.to_string(), text);
    }

    #[test]
    fn check_limits_accepts_exactly_what_round_trips(f in deep_filter()) {
        limits_agree_with_the_parser(&f);
    }

    #[test]
    fn what_parses_passes_the_limits_and_round_trips(text in deep_text()) {
        if let Ok(f) = Filter::parse(&text) {
            prop_assert!(limits_agree_with_the_parser(&f), "{}", text);
        }
    }

    #[test]
    fn a_string_value_never_changes_the_shape(s in any::<String>(), q in "['() a-z]{0,12}") {
        for s in [s, q] {
            let f = Filter::eq("P", s.as_str());
            prop_assert_eq!(Filter::parse(&f.to_string()).ok(), Some(Filter::eq("P", s.as_str())));
            let g = Filter::eq("P", s.as_str()).and(!Filter::ne("Q", s.as_str()));
            prop_assert_eq!(Filter::parse(&g.to_string()).ok(), Some(g));
        }
    }

    #[test]
    fn doubles_round_trip_bit_for_bit(d in double()) {
        let text = Filter::eq("D", d).to_string();
        let number = &text["D eq ".len()..];
        prop_assert!(
            (number.contains('.') && !number.contains(['e', 'E'])) || matches!(number, "NaN" | "INF" | "-INF"),
            "{number}"
        );
        match Filter::parse(&text) {
            Ok(Filter::Compare { value: Value::Double(back), .. }) => {
                if d.is_nan() {
                    prop_assert!(back.is_nan());
                } else {
                    prop_assert_eq!(back.to_bits(), d.to_bits());
                }
            }
            other => prop_assert!(false, "{text}: {other:?}"),
        }
    }

    #[test]
    fn parsing_never_panics_and_what_parses_round_trips(s in filter_soup(), t in any::<String>()) {
        for s in [s, t] {
            if let Ok(f) = Filter::parse(&s) {
                prop_assert_eq!(Filter::parse(&f.to_string()).ok(), Some(f));
            }
        }
    }

    #[test]
    fn prefix_matches_exactly_the_strings_with_the_prefix(
        prefix in tricky_string(),
        tail in tricky_string(),
        other in tricky_string(),
        extend in any::<bool>(),
    ) {
        let filter = Filter::prefix("P", &prefix);
        let candidate = if extend { format!("{prefix}{tail}") } else { other };
        let entity = Entity::new("p", "r").with("P", candidate.as_str());
        prop_assert_eq!(filter.matches(&entity), candidate.starts_with(&prefix), "{:?}", candidate);
        // Non-strings and missing properties never match a prefix.
        prop_assert!(!filter.matches(&Entity::new("p", "r").with("P", 1)));
        prop_assert!(!filter.matches(&Entity::new("p", "r")));
    }

    #[test]
    fn range_matches_ordinal_bounds(lo in tricky_string(), hi in tricky_string(), s in tricky_string()) {
        use table_core::compare_ordinal;
        let f = Filter::range("P", Bound::Excluded(&lo), Bound::Included(&hi));
        let expected = compare_ordinal(&s, &lo) == Ordering::Greater
            && compare_ordinal(&s, &hi) != Ordering::Greater;
        prop_assert_eq!(f.matches(&Entity::new("p", "r").with("P", s.as_str())), expected);
    }

    #[test]
    fn double_property_vs_int64_literal_is_exact(
        base in any::<i64>(),
        delta in -3i64..=3,
        frac in prop::sample::select(vec![0.0, 0.5, -0.5, 0.25]),
        wild in any::<f64>(),
        use_wild in any::<bool>(),
    ) {
        let d = if use_wild { wild } else { base as f64 + frac };
        let i = base.saturating_add(delta);
        let entity = Entity::new("p", "r").with("D", d);
        for op in CompareOp::ALL {
            let got = Filter::compare("D", op, i).matches(&entity);
            let expected = if d.is_nan() {
                op == CompareOp::Ne
            } else {
                let o = exact_order(d, i);
                match op {
                    CompareOp::Eq => o == Ordering::Equal,
                    CompareOp::Ne => o != Ordering::Equal,
                    CompareOp::Gt => o == Ordering::Greater,
                    CompareOp::Ge => o != Ordering::Less,
                    CompareOp::Lt => o == Ordering::Less,
                    CompareOp::Le => o != Ordering::Greater,
                }
            };
            prop_assert_eq!(got, expected, "{} {} {}", d, op, i);
        }
    }
}
