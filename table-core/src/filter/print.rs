//! The canonical printer: the `$filter` text sent on the wire.
//!
//! Parentheses are exactly those the parser needs to rebuild the same tree (`and` binds
//! tighter than `or`, both associate to the left), plus those around the operand of every
//! `not` (`not (A eq 1)`, `not (not (B))`): OData's `not` binds tighter than `eq`, so
//! `not A eq 1` would mean `(not A) eq 1`, and Azurite refuses `not not B`.
//!
//! Literals: finite doubles print in plain decimal notation, never with an exponent (Azurite
//! reads `1e300` as something that matches nothing), with the shortest digits that parse
//! back to the same bits and always a `.` (`3.0`, `0.0000001`, `-0.0`). NaN and the
//! infinities print as the OData literals `NaN`, `INF` and `-INF`, which this parser reads
//! back but no service is known to accept; [`Filter::check_limits`] refuses them.
//!
//! [`Filter::check_limits`] lives here because it checks what the printer would write: the
//! printer audits its own output for the nesting depth as the parser counts it, names the
//! grammar cannot express, and non-finite doubles.

use std::fmt::{self, Write};

use crate::datetime::format_datetime;
use crate::error::{Error, Violation};
use crate::value::Value;

use super::ast::Filter;
use super::lexical::is_property_name;
use super::limits::{MAX_FILTER_COMPARISONS, MAX_FILTER_NESTING, too_deep, too_many_comparisons};

impl Filter {
    /// The canonical `$filter` text (the same as `to_string()`).
    pub fn to_odata(&self) -> String {
        self.to_string()
    }

    /// Checks, before a filter is sent or run, what the service would refuse beyond syntax and
    /// what its canonical text ([`Filter::to_odata`]) could not carry, in this order:
    ///
    /// 1. at most [`MAX_FILTER_COMPARISONS`] comparisons ([`Violation::TooManyComparisons`],
    ///    400);
    /// 2. at most [`MAX_FILTER_NESTING`] levels of parentheses and `not` in the canonical
    ///    text, the parser's limit ([`Violation::FilterSyntax`], 400, at the offending `(` or
    ///    `not` of the canonical text, as parsing it reports);
    /// 3. every property name expressible in the grammar: a name that is not an identifier,
    ///    or is a keyword such as `and`, is printed as a string literal, which the service
    ///    answers with 501 ([`Violation::FilterUnsupported`], at its position in the text);
    /// 4. no comparison with NaN or an infinity, which have no portable literal
    ///    ([`Violation::FilterNonFiniteDouble`], 400, naming the property).
    ///
    /// A filter that passes prints to text that [`Filter::parse`] reads back as this filter.
    pub fn check_limits(&self) -> Result<(), Error> {
        let count = self.comparison_count();
        if count > MAX_FILTER_COMPARISONS {
            return Err(too_many_comparisons(count));
        }
        let found = audit(self);
        if let Some(position) = found.too_deep {
            return Err(too_deep(position));
        }
        if let Some((position, name)) = found.unprintable {
            return Err(Error::invalid(Violation::FilterUnsupported {
                position,
                message: format!("property name {name:?} is not an identifier a filter can name"),
            }));
        }
        if let Some((property, value)) = found.non_finite {
            return Err(Error::invalid(Violation::FilterNonFiniteDouble {
                property: property.to_owned(),
                value,
            }));
        }
        Ok(())
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printer::new(f).filter(self, Precedence::Or)
    }
}

/// What [`Filter::check_limits`] needs to know about a filter's canonical text, each with the
/// first place it occurs.
#[derive(Debug, Default, PartialEq)]
struct Audit<'f> {
    /// Byte offset of the first `(` or `not` nested deeper than [`MAX_FILTER_NESTING`].
    too_deep: Option<usize>,
    /// A property name that is not an identifier, with its byte offset.
    unprintable: Option<(usize, &'f str)>,
    /// A comparison with NaN or an infinity: the property and the value.
    non_finite: Option<(&'f str, f64)>,
}

/// Prints `filter` into nothing, to audit its canonical text.
fn audit(filter: &Filter) -> Audit<'_> {
    let mut text = String::new();
    let mut printer = Printer { audit_only: true, ..Printer::new(&mut text) };
    // Writing into a `String` cannot fail, so the audit is complete.
    let _ = printer.filter(filter, Precedence::Or);
    printer.audit
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

/// Writes a filter while counting bytes and open groups, auditing what it writes.
struct Printer<'w, 'f> {
    out: &'w mut dyn Write,
    written: usize,
    /// Open parentheses and `not`s around the current position, as the parser counts them
    /// (`not (` is one).
    depth: usize,
    /// Stop descending at the first group nested too deep: the audit has its answer, and a
    /// filter built in code may be deep enough to overflow the stack if printed in full.
    audit_only: bool,
    audit: Audit<'f>,
}

impl Write for Printer<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.written += s.len();
        self.out.write_str(s)
    }
}

impl<'w, 'f> Printer<'w, 'f> {
    fn new(out: &'w mut dyn Write) -> Self {
        Printer { out, written: 0, depth: 0, audit_only: false, audit: Audit::default() }
    }

    fn filter(&mut self, filter: &'f Filter, slot: Precedence) -> fmt::Result {
        if precedence(filter) < slot { self.group("(", |p| p.bare(filter)) } else { self.bare(filter) }
    }

    /// `filter` without parentheses around it.
    fn bare(&mut self, filter: &'f Filter) -> fmt::Result {
        match filter {
            Filter::Or(left, right) => {
                self.filter(left, Precedence::Or)?;
                self.write_str(" or ")?;
                // Left-associative: a right operand of the same level needs parentheses.
                self.filter(right, Precedence::And)
            }
            Filter::And(left, right) => {
                self.filter(left, Precedence::And)?;
                self.write_str(" and ")?;
                self.filter(right, Precedence::Comparison)
            }
            Filter::Not(inner) => self.group("not (", |p| p.filter(inner, Precedence::Or)),
            Filter::Compare { property, op, value } => {
                self.property(property)?;
                write!(self, " {op} ")?;
                if let Value::Double(d) = value
                    && !d.is_finite()
                    && self.audit.non_finite.is_none()
                {
                    self.audit.non_finite = Some((property, *d));
                }
                self.literal(value)
            }
            Filter::Property(property) => self.property(property),
        }
    }

    /// `open`, then `body` one level deeper, then `)`.
    fn group(&mut self, open: &str, body: impl FnOnce(&mut Self) -> fmt::Result) -> fmt::Result {
        if self.depth == MAX_FILTER_NESTING && self.audit.too_deep.is_none() {
            self.audit.too_deep = Some(self.written);
        }
        if self.audit_only && self.audit.too_deep.is_some() {
            return Ok(());
        }
        self.write_str(open)?;
        self.depth += 1;
        body(self)?;
        self.depth -= 1;
        self.write_char(')')
    }

    fn property(&mut self, name: &'f str) -> fmt::Result {
        if is_property_name(name) {
            return self.write_str(name);
        }
        // Splicing the name in could change the filter's shape; as an escaped string literal
        // it stays one token that the service rejects.
        if self.audit.unprintable.is_none() {
            self.audit.unprintable = Some((self.written, name));
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
            // `Display` writes the shortest digits that parse back to the same bits, in plain
            // notation (`1e300` is a 1 and 300 zeros, `5e-324` has 323 zeros after the point):
            // at most 17 significant digits, which every parser reads exactly. It writes a `.`
            // exactly when there is a fraction; a whole number gets `.0` so that it does not
            // read as an integer.
            write!(self, "{d}")?;
            if d.fract() == 0.0 {
                self.write_str(".0")?;
            }
            Ok(())
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
    }

    #[test]
    fn a_negated_operand_is_always_parenthesised() {
        let (a, b) = (p("a"), p("b"));
        assert_eq!((!a.clone()).to_string(), "not (a)");
        assert_eq!((!!a.clone()).to_string(), "not (not (a))");
        assert_eq!((!Filter::eq("a", 1)).to_string(), "not (a eq 1)");
        assert_eq!((!a.clone().and(b.clone())).to_string(), "not (a and b)");
        assert_eq!((!a.clone()).and(b.clone()).to_string(), "not (a) and b");
        assert_eq!(a.or(!b.or(p("c"))).to_string(), "a or not (b or c)");
    }

    #[test]
    fn literal_forms() {
        let cases: [(Value, &str); 11] = [
            (Value::from("it's"), "'it''s'"),
            (Value::Int32(-42), "-42"),
            (Value::Int64(42), "42L"),
            (Value::Double(3.0), "3.0"),
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
            (Value::Double(-2.5), "-2.5"),
        ];
        for (value, text) in cases {
            assert_eq!(Filter::eq("P", value).to_string(), format!("P eq {text}"));
        }
    }

    #[test]
    fn finite_doubles_print_without_an_exponent() {
        let plain = |d: f64| Filter::eq("P", d).to_string()["P eq ".len()..].to_owned();
        assert_eq!(plain(1e300), format!("1{}.0", "0".repeat(300)));
        assert_eq!(plain(-0.0), "-0.0");
        assert_eq!(plain(0.0), "0.0");
        assert_eq!(plain(1e-7), "0.0000001");
        assert_eq!(plain(1.5e16), "15000000000000000.0");
        assert_eq!(plain(f64::from_bits(1)), format!("0.{}5", "0".repeat(323)));
        assert_eq!(plain(f64::MAX).len(), 309 + 2);
    }

    #[test]
    fn the_audit_finds_names_depth_and_non_finite_doubles() {
        let f = Filter::eq("ok", 1).and(Filter::eq("x' or 1 eq 1", 2));
        assert_eq!(f.to_string(), "ok eq 1 and 'x'' or 1 eq 1' eq 2");
        assert_eq!(audit(&f).unprintable, Some((12, "x' or 1 eq 1")));
        assert_eq!(audit(&p("and")).unprintable, Some((0, "and")));
        assert_eq!(audit(&p("été_1")), Audit::default());

        let f = Filter::eq("a", 1.0).or(Filter::gt("b", f64::INFINITY)).or(Filter::eq("c", f64::NAN));
        assert_eq!(audit(&f).non_finite, Some(("b", f64::INFINITY)));

        let nest = |n: usize| (0..n).fold(p("a"), |f, _| !f);
        assert_eq!(audit(&nest(MAX_FILTER_NESTING)).too_deep, None);
        // The 101st group opens after 100 `not (` of 5 bytes each.
        assert_eq!(audit(&nest(MAX_FILTER_NESTING + 1)).too_deep, Some(5 * MAX_FILTER_NESTING));
    }
}
