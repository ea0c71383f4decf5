//! The canonical printer: the `$filter` text sent on the wire.
//!
//! Parentheses are exactly those the parser needs to rebuild the same tree (`and` binds
//! tighter than `or`, both associate to the left), plus one the grammar is ambiguous about:
//! a comparison under `not` is always parenthesised (`not (A eq 1)`), because OData's `not`
//! binds tighter than `eq` and `not A eq 1` would mean `(not A) eq 1`.

use std::fmt::{self, Write};

use crate::datetime::format_datetime;
use crate::value::Value;

use super::ast::Filter;
use super::parse::is_property_name;

impl Filter {
    /// The canonical `$filter` text (the same as `to_string()`).
    pub fn to_odata(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printer::new(f).filter(self, Precedence::Or)
    }
}

/// The first property name that cannot be printed as an identifier, with its byte offset in
/// the canonical text.
pub(super) fn first_unprintable_property(filter: &Filter) -> Option<(usize, &str)> {
    let mut text = String::new();
    let mut printer = Printer::new(&mut text);
    // Writing into a `String` cannot fail.
    printer.filter(filter, Precedence::Or).ok()?;
    printer.unprintable
}

/// How tightly a construct binds; a child binding looser than its slot requires parentheses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Precedence {
    Or,
    And,
    Comparison,
    Not,
    Atom,
}

fn precedence(filter: &Filter) -> Precedence {
    match filter {
        Filter::Or(..) => Precedence::Or,
        Filter::And(..) => Precedence::And,
        Filter::Compare { .. } => Precedence::Comparison,
        Filter::Not(_) => Precedence::Not,
        Filter::Property(_) => Precedence::Atom,
    }
}

/// Writes a filter while counting bytes, to locate unprintable property names.
struct Printer<'w, 'f> {
    out: &'w mut dyn Write,
    written: usize,
    unprintable: Option<(usize, &'f str)>,
}

impl Write for Printer<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.written += s.len();
        self.out.write_str(s)
    }
}

impl<'w, 'f> Printer<'w, 'f> {
    fn new(out: &'w mut dyn Write) -> Self {
        Printer { out, written: 0, unprintable: None }
    }

    fn filter(&mut self, filter: &'f Filter, slot: Precedence) -> fmt::Result {
        let parenthesised = precedence(filter) < slot;
        if parenthesised {
            self.write_char('(')?;
        }
        match filter {
            Filter::Or(left, right) => {
                self.filter(left, Precedence::Or)?;
                self.write_str(" or ")?;
                // Left-associative: a right operand of the same level needs parentheses.
                self.filter(right, Precedence::And)?;
            }
            Filter::And(left, right) => {
                self.filter(left, Precedence::And)?;
                self.write_str(" and ")?;
                self.filter(right, Precedence::Comparison)?;
            }
            Filter::Not(inner) => {
                self.write_str("not ")?;
                self.filter(inner, Precedence::Not)?;
            }
            Filter::Compare { property, op, value } => {
                self.property(property)?;
                write!(self, " {op} ")?;
                self.literal(value)?;
            }
            Filter::Property(property) => self.property(property)?,
        }
        if parenthesised {
            self.write_char(')')?;
        }
        Ok(())
    }

    fn property(&mut self, name: &'f str) -> fmt::Result {
        if is_property_name(name) {
            return self.write_str(name);
        }
        // Splicing the name in could change the filter's shape; as an escaped string literal
        // it stays one token that the service rejects.
        if self.unprintable.is_none() {
            self.unprintable = Some((self.written, name));
        }
        self.string(name)
    }

    fn string(&mut self, s: &str) -> fmt::Result {
        self.write_char('\'')?;
        for (i, part) in s.split('\'').enumerate() {
            if i > 0 {
                self.write_str("''")?;
            }
            self.write_str(part)?;
        }
        self.write_char('\'')
    }

    fn literal(&mut self, value: &Value) -> fmt::Result {
        match value {
            Value::String(s) => self.string(s),
            Value::Int32(i) => write!(self, "{i}"),
            Value::Int64(i) => write!(self, "{i}L"),
            Value::Double(d) => self.double(*d),
            Value::Boolean(b) => write!(self, "{b}"),
            Value::DateTime(t) => write!(self, "datetime'{}'", format_datetime(*t)),
            Value::Guid(g) => write!(self, "guid'{}'", g.hyphenated()),
            Value::Binary(bytes) => {
                self.write_str("X'")?;
                for b in bytes {
                    write!(self, "{b:02x}")?;
                }
                self.write_char('\'')
            }
        }
    }

    fn double(&mut self, d: f64) -> fmt::Result {
        if d.is_nan() {
            self.write_str("NaN")
        } else if d.is_infinite() {
            self.write_str(if d > 0.0 { "INF" } else { "-INF" })
        } else {
            // `Debug` is the shortest text that parses back to the same bits, and always has a
            // `.` or an exponent (`3.0`, `1e16`, `-0.0`), so it never reads as an integer.
            write!(self, "{d:?}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> Filter {
        Filter::property(name)
    }

    #[test]
    fn parenthesises_only_where_needed() {
        let (a, b, c) = (p("a"), p("b"), p("c"));
        assert_eq!(a.clone().or(b.clone()).or(c.clone()).to_string(), "a or b or c");
        assert_eq!(a.clone().or(b.clone().or(c.clone())).to_string(), "a or (b or c)");
        assert_eq!(a.clone().or(b.clone().and(c.clone())).to_string(), "a or b and c");
        assert_eq!(a.clone().or(b.clone()).and(c.clone()).to_string(), "(a or b) and c");
        assert_eq!(a.clone().and(b.clone().and(c.clone())).to_string(), "a and (b and c)");
        assert_eq!((!!a.clone()).to_string(), "not not a");
        assert_eq!((!Filter::eq("a", 1)).to_string(), "not (a eq 1)");
        assert_eq!((!a.and(b)).to_string(), "not (a and b)");
    }

    #[test]
    fn literal_forms() {
        let cases: [(Value, &str); 12] = [
            (Value::from("it's"), "'it''s'"),
            (Value::Int32(-42), "-42"),
            (Value::Int64(42), "42L"),
            (Value::Double(3.0), "3.0"),
            (Value::Double(-0.0), "-0.0"),
            (Value::Double(1e300), "1e300"),
            (Value::Double(f64::NAN), "NaN"),
            (Value::Double(f64::NEG_INFINITY), "-INF"),
            (Value::Boolean(false), "false"),
            (Value::Guid(uuid::Uuid::from_u128(0xABCDEF)), "guid'00000000-0000-0000-0000-000000abcdef'"),
            (Value::Binary(vec![0x0a, 0xb0]), "X'0ab0'"),
            (
                Value::DateTime(
                    crate::datetime::parse_datetime("2020-01-02T03:04:05.1234567Z").expect("valid"),
                ),
                "datetime'2020-01-02T03:04:05.1234567Z'",
            ),
        ];
        for (value, text) in cases {
            assert_eq!(Filter::eq("P", value).to_string(), format!("P eq {text}"));
        }
    }

    #[test]
    fn unprintable_names_become_literals_and_are_located() {
        let f = Filter::eq("ok", 1).and(Filter::eq("x' or 1 eq 1", 2));
        assert_eq!(f.to_string(), "ok eq 1 and 'x'' or 1 eq 1' eq 2");
        assert_eq!(first_unprintable_property(&f), Some((12, "x' or 1 eq 1")));
        assert_eq!(first_unprintable_property(&p("and")), Some((0, "and")));
        assert_eq!(first_unprintable_property(&p("été_1")), None);
    }
}
