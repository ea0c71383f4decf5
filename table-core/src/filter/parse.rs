//! The `$filter` parser: user text to [`Filter`], with the service's grammar and errors.
//!
//! Grammar (protocol doc 6.1), every keyword case-sensitive as on the real service:
//!
//! ```text
//! or         := and { "or" and }
//! and        := comparison { "and" comparison }
//! comparison := unary [ op unary ]          one side a property, the other a literal
//! unary      := "not" unary | "(" or ")" | property | literal
//! ```
//!
//! A property name is an identifier by the service's rule (C# identifiers) other than a
//! keyword; the words and character classes are the `lexical` module's.
//!
//! `not` binds tighter than a comparison, as in OData: `not A eq 1` compares `not A` with 1,
//! which the service does not implement, so write `not (A eq 1)`. Syntax errors are
//! [`Violation::FilterSyntax`] (400); valid OData the service does not implement (comparing two
//! properties or two literals, functions, arithmetic, `null`, decimal and single literals) is
//! [`Violation::FilterUnsupported`] (501). Positions are byte offsets into the input.
//!
//! Literals: `'it''s'`, `42` (Int32; out of range is an error), `42L` (Int64), `1.5`, `1e10`,
//! `1.5E-3`, `2D` (Double; a value too large for a double is an error), `NaN`, `INF`, `-INF`,
//! `true`, `false`, `datetime'2020-01-02T03:04:05.1234567Z'` (years 1 to 9999),
//! `guid'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'`, `X'0a0B'` and `binary'0a0B'`.
//!
//! A parsed filter has at most [`MAX_FILTER_COMPARISONS`] comparisons (else
//! [`Violation::TooManyComparisons`], with the full count) and at most [`MAX_FILTER_NESTING`]
//! levels of parentheses and `not`, so hostile input cannot build a deep tree or exhaust the
//! stack. `not (` counts as one level, as a bare `not` does, so the printer's `not (...)`
//! form is never deeper than the text it was parsed from.

use std::str::FromStr;

use chrono::Datelike;
use uuid::Uuid;

use crate::datetime::parse_datetime;
use crate::error::{Error, Violation};
use crate::identifier::{is_identifier_part, is_identifier_start};
use crate::value::Value;

use super::ast::{CompareOp, Filter};
use super::lexical::{ARITHMETIC, RESERVED_WORDS};
use super::limits::{MAX_FILTER_COMPARISONS, MAX_FILTER_NESTING, too_deep, too_many_comparisons};

fn syntax(position: usize, message: impl Into<String>) -> Error {
    Error::invalid(Violation::FilterSyntax { position, message: message.into() })
}

fn unsupported(position: usize, message: impl Into<String>) -> Error {
    Error::invalid(Violation::FilterUnsupported { position, message: message.into() })
}

impl Filter {
    /// Parses `$filter` text. See the module documentation for the grammar, literal forms and
    /// errors; the result has its comparisons normalised with the property on the left.
    pub fn parse(s: &str) -> Result<Filter, Error> {
        let mut parser = Parser { lexer: Lexer { src: s, pos: 0 }, peeked: None, comparisons: 0 };
        let filter = parser.or(0)?;
        let next = parser.next()?;
        if !matches!(next.kind, Kind::End) {
            return Err(syntax(
                next.pos,
                format!("expected `and`, `or` or the end of the filter, found {}", next.kind.describe()),
            ));
        }
        if parser.comparisons > MAX_FILTER_COMPARISONS {
            return Err(too_many_comparisons(parser.comparisons));
        }
        Ok(filter)
    }
}

impl FromStr for Filter {
    type Err = Error;

    fn from_str(s: &str) -> Result<Filter, Error> {
        Filter::parse(s)
    }
}

#[derive(Debug)]
enum Kind<'a> {
    LParen,
    RParen,
    /// An identifier: a keyword or a property name.
    Word(&'a str),
    Literal(Value),
    End,
}

impl Kind<'_> {
    fn describe(&self) -> String {
        match self {
            Kind::LParen => "`(`".to_owned(),
            Kind::RParen => "`)`".to_owned(),
            Kind::Word(w) => {
                let lower = w.to_ascii_lowercase();
                if lower != *w && RESERVED_WORDS.contains(&lower.as_str()) {
                    format!("`{w}` (keywords are lower-case)")
                } else {
                    format!("`{w}`")
                }
            }
            Kind::Literal(_) => "a literal".to_owned(),
            Kind::End => "the end of the filter".to_owned(),
        }
    }
}

#[derive(Debug)]
struct Token<'a> {
    pos: usize,
    kind: Kind<'a>,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn peek_char(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn eat_while(&mut self, keep: impl Fn(char) -> bool) {
        let len = self.rest().find(|c| !keep(c)).unwrap_or(self.rest().len());
        self.pos += len;
    }

    fn token(&mut self) -> Result<Token<'a>, Error> {
        self.eat_while(|c| c.is_ascii_whitespace());
        let pos = self.pos;
        let kind = match self.peek_char() {
            None => Kind::End,
            Some('(') => {
                self.pos += 1;
                Kind::LParen
            }
            Some(')') => {
                self.pos += 1;
                Kind::RParen
            }
            Some('\'') => Kind::Literal(Value::String(self.string()?)),
            Some('0'..='9') => self.number()?,
            Some('-') => self.minus()?,
            Some(c) if is_identifier_start(c) => self.word()?,
            Some('"') => return Err(syntax(pos, "string literals use single quotes")),
            Some(c) => return Err(syntax(pos, format!("unexpected character {c:?}"))),
        };
        Ok(Token { pos, kind })
    }

    /// A string literal at `self.pos`; `''` stands for one quote.
    fn string(&mut self) -> Result<String, Error> {
        let start = self.pos;
        self.pos += 1;
        let mut value = String::new();
        loop {
            let Some(quote) = self.rest().find('\'') else {
                return Err(syntax(start, "unterminated string literal"));
            };
            value.push_str(&self.rest()[..quote]);
            self.pos += quote + 1;
            if self.peek_char() == Some('\'') {
                value.push('\'');
                self.pos += 1;
            } else {
                return Ok(value);
            }
        }
    }

    /// `-` starts a negative number or `-INF`; anything else is arithmetic negation.
    fn minus(&mut self) -> Result<Kind<'a>, Error> {
        let after = &self.rest()[1..];
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            return self.number();
        }
        if let Some(tail) = after.strip_prefix("INF")
            && !tail.starts_with(is_identifier_part)
        {
            self.pos += "-INF".len();
            return Ok(Kind::Literal(Value::Double(f64::NEG_INFINITY)));
        }
        Err(unsupported(self.pos, "arithmetic negation is not supported"))
    }

    fn digits(&mut self, what: &str) -> Result<(), Error> {
        let start = self.pos;
        self.eat_while(|c| c.is_ascii_digit());
        if self.pos == start {
            return Err(syntax(start, format!("expected digits {what}")));
        }
        Ok(())
    }

    /// An Int32, Int64 (`L`) or Double (`.`, exponent or `D`) literal.
    fn number(&mut self) -> Result<Kind<'a>, Error> {
        let start = self.pos;
        if self.peek_char() == Some('-') {
            self.pos += 1;
        }
        self.digits("in the number")?;
        let mut double = false;
        if self.peek_char() == Some('.') {
            self.pos += 1;
            self.digits("after the decimal point")?;
            double = true;
        }
        if matches!(self.peek_char(), Some('e' | 'E')) {
            self.pos += 1;
            if matches!(self.peek_char(), Some('+' | '-')) {
                self.pos += 1;
            }
            self.digits("in the exponent")?;
            double = true;
        }
        let text = &self.src[start..self.pos];
        let suffix_pos = self.pos;
        let value = match self.peek_char() {
            Some('L' | 'l') if !double => {
                self.pos += 1;
                let i = text
                    .parse::<i64>()
                    .map_err(|_| syntax(start, "integer literal out of the Int64 range"))?;
                Value::Int64(i)
            }
            Some('D' | 'd') => {
                self.pos += 1;
                Value::Double(parse_double(text, start)?)
            }
            Some('M' | 'm' | 'F' | 'f') => {
                return Err(unsupported(
                    suffix_pos,
                    "decimal and single literals are not supported; the Table service stores doubles",
                ));
            }
            _ if double => Value::Double(parse_double(text, start)?),
            _ => Value::Int32(text.parse::<i32>().map_err(|_| {
                syntax(start, "integer literal out of the Int32 range; append `L` for an Int64")
            })?),
        };
        if self.peek_char().is_some_and(is_identifier_part) {
            return Err(syntax(self.pos, "unexpected character after a number"));
        }
        Ok(Kind::Literal(value))
    }

    /// A keyword, a property name, or a typed literal such as `guid'...'`.
    fn word(&mut self) -> Result<Kind<'a>, Error> {
        let start = self.pos;
        self.eat_while(is_identifier_part);
        let word = &self.src[start..self.pos];
        if self.peek_char() != Some('\'') {
            return Ok(match word {
                "true" => Kind::Literal(Value::Boolean(true)),
                "false" => Kind::Literal(Value::Boolean(false)),
                "NaN" => Kind::Literal(Value::Double(f64::NAN)),
                "INF" => Kind::Literal(Value::Double(f64::INFINITY)),
                _ => Kind::Word(word),
            });
        }
        let body_start = self.pos + 1;
        let Some(len) = self.src[body_start..].find('\'') else {
            return Err(syntax(start, format!("unterminated {word} literal")));
        };
        let body = &self.src[body_start..body_start + len];
        self.pos = body_start + len + 1;
        let value = match word {
            "datetime" => Value::DateTime(parse_datetime_literal(body, body_start)?),
            "guid" => Value::Guid(parse_guid(body, body_start)?),
            "X" | "binary" => Value::Binary(parse_hex(body, body_start)?),
            _ => return Err(syntax(start, format!("unknown literal prefix `{word}`"))),
        };
        Ok(Kind::Literal(value))
    }
}

fn parse_double(text: &str, pos: usize) -> Result<f64, Error> {
    match text.parse::<f64>() {
        Ok(d) if d.is_finite() => Ok(d),
        _ => Err(syntax(pos, "double literal out of range")),
    }
}

fn parse_datetime_literal(body: &str, pos: usize) -> Result<chrono::DateTime<chrono::Utc>, Error> {
    match parse_datetime(body) {
        Ok(t) if (1..=9999).contains(&t.year()) => Ok(t),
        _ => Err(syntax(
            pos,
            "invalid datetime literal: expected yyyy-mm-ddThh:mm[:ss[.fffffff]][Z], years 1 to 9999",
        )),
    }
}

fn parse_guid(body: &str, pos: usize) -> Result<Uuid, Error> {
    crate::value::parse_guid(body)
        .ok_or_else(|| syntax(pos, "invalid guid literal: expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"))
}

fn parse_hex(body: &str, pos: usize) -> Result<Vec<u8>, Error> {
    let bytes = body.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return Err(syntax(pos, "binary literal needs two hex digits per byte"));
    }
    let digit =
        |i: usize| hex_digit(bytes[i]).ok_or_else(|| syntax(pos + i, "invalid hex digit in binary literal"));
    (0..bytes.len()).step_by(2).map(|i| Ok(digit(i)? << 4 | digit(i + 1)?)).collect()
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// What a `unary` produced: a condition, or an operand awaiting a comparison.
enum Term {
    Condition(Filter),
    Property(String),
    Literal(Value),
}

struct Located {
    pos: usize,
    term: Term,
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Token<'a>>,
    /// Comparisons seen, including those past the limit (which are parsed but not kept).
    comparisons: usize,
}

impl<'a> Parser<'a> {
    fn peek(&mut self) -> Result<&Token<'a>, Error> {
        let token = match self.peeked.take() {
            Some(t) => t,
            None => self.lexer.token()?,
        };
        Ok(self.peeked.insert(token))
    }

    fn next(&mut self) -> Result<Token<'a>, Error> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lexer.token(),
        }
    }

    /// Consumes the next token if it is the keyword `word`.
    fn eat_word(&mut self, word: &str) -> Result<bool, Error> {
        let found = matches!(self.peek()?.kind, Kind::Word(w) if w == word);
        if found {
            self.next()?;
        }
        Ok(found)
    }

    /// The comparison operator at the next token, if any; arithmetic there is unsupported.
    fn peek_operator(&mut self) -> Result<Option<(CompareOp, usize)>, Error> {
        let token = self.peek()?;
        let Kind::Word(word) = token.kind else {
            return Ok(None);
        };
        if ARITHMETIC.contains(&word) {
            return Err(unsupported(token.pos, format!("arithmetic (`{word}`) is not supported")));
        }
        Ok(CompareOp::from_keyword(word).map(|op| (op, token.pos)))
    }

    /// Joins two operands, unless the comparison limit is already exceeded: then the right one
    /// is dropped so the tree stays small while parsing goes on to count and find errors.
    fn join(&self, left: Filter, right: Filter, join: fn(Box<Filter>, Box<Filter>) -> Filter) -> Filter {
        if self.comparisons > MAX_FILTER_COMPARISONS { left } else { join(Box::new(left), Box::new(right)) }
    }

    fn or(&mut self, depth: usize) -> Result<Filter, Error> {
        let mut left = self.and(depth)?;
        while self.eat_word("or")? {
            let right = self.and(depth)?;
            left = self.join(left, right, Filter::Or);
        }
        Ok(left)
    }

    fn and(&mut self, depth: usize) -> Result<Filter, Error> {
        let mut left = self.comparison(depth)?;
        while self.eat_word("and")? {
            let right = self.comparison(depth)?;
            left = self.join(left, right, Filter::And);
        }
        Ok(left)
    }

    fn comparison(&mut self, depth: usize) -> Result<Filter, Error> {
        let left = self.unary(depth)?;
        let Some((op, op_pos)) = self.peek_operator()? else {
            return self.condition(left);
        };
        self.next()?;
        let right = self.unary(depth)?;
        let filter = match (left.term, right.term) {
            (Term::Property(property), Term::Literal(value)) => Filter::Compare { property, op, value },
            (Term::Literal(value), Term::Property(property)) => {
                Filter::Compare { property, op: op.mirrored(), value }
            }
            (Term::Property(_), Term::Property(_)) => {
                return Err(unsupported(
                    left.pos,
                    "comparing two properties is not supported; compare a property with a literal",
                ));
            }
            (Term::Literal(_), Term::Literal(_)) => {
                return Err(unsupported(
                    left.pos,
                    "comparing two literals is not supported; compare a property with a literal",
                ));
            }
            _ => {
                return Err(unsupported(
                    op_pos,
                    "only a property can be compared with a literal (`not` binds tighter than \
                     a comparison: write `not (A eq 1)`)",
                ));
            }
        };
        self.comparisons += 1;
        if let Some((_, pos)) = self.peek_operator()? {
            return Err(unsupported(pos, "the result of a comparison cannot be compared"));
        }
        Ok(filter)
    }

    /// A term used as a condition: a bare property is a Boolean test, a literal is an error.
    fn condition(&mut self, term: Located) -> Result<Filter, Error> {
        match term.term {
            Term::Condition(f) => Ok(f),
            Term::Property(p) => {
                self.comparisons += 1;
                Ok(Filter::Property(p))
            }
            Term::Literal(_) => {
                Err(syntax(term.pos, "a literal alone is not a condition; compare it with a property"))
            }
        }
    }

    fn unary(&mut self, depth: usize) -> Result<Located, Error> {
        let token = self.next()?;
        let pos = token.pos;
        if depth >= MAX_FILTER_NESTING && matches!(token.kind, Kind::LParen | Kind::Word("not")) {
            return Err(too_deep(pos));
        }
        let term = match token.kind {
            Kind::Word("not") => {
                // `not (...)` is one level, like a bare `not`: it is how the printer writes
                // every `not`, and printing must not deepen a filter.
                let inner = if matches!(self.peek()?.kind, Kind::LParen) {
                    self.next()?;
                    self.group(depth + 1)?
                } else {
                    let inner = self.unary(depth + 1)?;
                    self.condition(inner)?
                };
                Term::Condition(Filter::Not(Box::new(inner)))
            }
            Kind::LParen => Term::Condition(self.group(depth + 1)?),
            Kind::Word("null") => {
                return Err(unsupported(
                    pos,
                    "`null` is not supported; a missing property fails every comparison",
                ));
            }
            Kind::Word(word) if RESERVED_WORDS.contains(&word) => {
                return Err(syntax(pos, format!("expected a property or a literal, found `{word}`")));
            }
            Kind::Word(word) => {
                if matches!(self.peek()?.kind, Kind::LParen) {
                    return Err(unsupported(pos, format!("function `{word}` is not supported")));
                }
                Term::Property(word.to_owned())
            }
            Kind::Literal(value) => Term::Literal(value),
            kind @ (Kind::RParen | Kind::End) => {
                return Err(syntax(pos, format!("expected a condition, found {}", kind.describe())));
            }
        };
        Ok(Located { pos, term })
    }

    /// The rest of a parenthesised group whose `(` was just read: `or` then `)`.
    fn group(&mut self, depth: usize) -> Result<Filter, Error> {
        let inner = self.or(depth)?;
        let close = self.next()?;
        if !matches!(close.kind, Kind::RParen) {
            return Err(syntax(close.pos, format!("expected `)`, found {}", close.kind.describe())));
        }
        Ok(inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(s: &str) -> Value {
        match Filter::parse(&format!("P eq {s}")) {
            Ok(Filter::Compare { value, .. }) => value,
            other => panic!("{s}: {other:?}"),
        }
    }

    fn syntax_at(s: &str) -> usize {
        match Filter::parse(s).map_err(|e| e.violation().cloned()) {
            Err(Some(Violation::FilterSyntax { position, .. })) => position,
            other => panic!("{s}: expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn numbers() {
        assert!(matches!(literal("42"), Value::Int32(42)));
        assert!(matches!(literal("-2147483648"), Value::Int32(i32::MIN)));
        assert!(matches!(literal("42L"), Value::Int64(42)));
        assert!(matches!(literal("42l"), Value::Int64(42)));
        assert!(matches!(literal("-9223372036854775808L"), Value::Int64(i64::MIN)));
        assert!(matches!(literal("2D"), Value::Double(d) if d == 2.0));
        assert!(matches!(literal("1.5d"), Value::Double(d) if d == 1.5));
        assert!(matches!(literal("1e10"), Value::Double(d) if d == 1e10));
        assert!(matches!(literal("1.5E-3"), Value::Double(d) if d == 1.5e-3));
        assert!(matches!(literal("1e+2"), Value::Double(d) if d == 100.0));
        assert!(matches!(literal("-0.0"), Value::Double(d) if d.to_bits() == (-0.0f64).to_bits()));
        assert!(matches!(literal("NaN"), Value::Double(d) if d.is_nan()));
        assert!(matches!(literal("-INF"), Value::Double(d) if d == f64::NEG_INFINITY));
        assert_eq!(syntax_at("P eq 2147483648"), 5);
        assert_eq!(syntax_at("P eq 9223372036854775808L"), 5);
        assert_eq!(syntax_at("P eq 1e999"), 5);
        assert_eq!(syntax_at("P eq 1."), 7);
        assert_eq!(syntax_at("P eq 1e"), 7);
        assert_eq!(syntax_at("P eq 1.5L"), 8);
        assert_eq!(syntax_at("P eq 3x"), 6);
        assert_eq!(syntax_at("P eq .5"), 5);
    }

    #[test]
    fn typed_literals() {
        assert!(matches!(literal("X'0a0B'"), Value::Binary(b) if b == [0x0a, 0x0b]));
        assert!(matches!(literal("binary'ff'"), Value::Binary(b) if b == [0xff]));
        assert!(matches!(literal("X''"), Value::Binary(b) if b.is_empty()));
        assert!(matches!(
            literal("guid'0000000A-0000-0000-0000-00000000000b'"),
            Value::Guid(g) if g == Uuid::from_u128(0xA_0000_0000_0000_0000_0000_000B)
        ));
        assert_eq!(syntax_at("P eq X'0g'"), 8);
        assert_eq!(syntax_at("P eq X'0'"), 7);
        assert_eq!(syntax_at("P eq guid'{00000000-0000-0000-0000-000000000000}'"), 10);
        assert_eq!(syntax_at("P eq datetime'2020-13-01T00:00:00Z'"), 14);
        assert_eq!(syntax_at("P eq datetime'0000-01-01T00:00:00Z'"), 14);
        assert_eq!(syntax_at("P eq foo'1'"), 5);
        assert_eq!(syntax_at("P eq guid'1"), 5);
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}a{}", "(".repeat(MAX_FILTER_NESTING), ")".repeat(MAX_FILTER_NESTING));
        assert!(Filter::parse(&deep).is_ok());
        let deeper = format!("{}a{}", "(".repeat(MAX_FILTER_NESTING + 1), ")".repeat(MAX_FILTER_NESTING + 1));
        assert_eq!(syntax_at(&deeper), MAX_FILTER_NESTING);
        let nots = format!("{}a", "not ".repeat(100_000));
        assert_eq!(syntax_at(&nots), 4 * MAX_FILTER_NESTING);
    }

    #[test]
    fn not_and_its_parenthesis_are_one_level() {
        let n = MAX_FILTER_NESTING;
        let printed = format!("{}a{}", "not (".repeat(n), ")".repeat(n));
        assert!(Filter::parse(&printed).is_ok());
        let deeper = format!("{}a{}", "not (".repeat(n + 1), ")".repeat(n + 1));
        assert_eq!(syntax_at(&deeper), 5 * n);
        // A second parenthesis is a level of its own.
        let doubled = format!("{}(a){}", "not (".repeat(n), ")".repeat(n));
        assert_eq!(syntax_at(&doubled), 5 * n);
    }
}
