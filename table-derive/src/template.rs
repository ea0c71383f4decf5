//! Key template text (`empid_{id:06}`) parsed into literal and field pieces at compile time.
//!
//! The template syntax is the derive's: `{{` and `}}` are literal braces, a field is `{name}` or
//! `{name:spec}`. Everything about what a key may hold is the runtime's, read from table-core
//! (see `table_core::typed::grammar`): the spec words and widths ([`KeySpec`]), the characters
//! keys cannot contain, and the date formats the key codec can write.

use table_core::is_forbidden_key_char;
use table_core::keys::KeySpec;
use table_core::typed::grammar;

/// How a field is written into the key.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Spec {
    /// Every spec but a date format, as the runtime writes it.
    Codec(KeySpec),
    /// A chrono date format (the runtime's `KeySpec::Date` needs a `&'static str`, which the
    /// template text is not).
    Date(String),
}

impl Spec {
    /// The exact width of every encoded value, when the spec fixes one.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            Spec::Codec(spec) => spec.fixed_width(),
            Spec::Date(_) => None,
        }
    }

    /// The spec as written after the `:`.
    pub fn text(&self) -> String {
        match self {
            Spec::Codec(spec) => spec.to_string(),
            Spec::Date(format) => format.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum Piece {
    Literal(String),
    Field { name: String, spec: Spec },
}

/// Longest zero padding: the digits of `u64::MAX`, the widest integer a key field can hold.
const MAX_PAD: usize = u64::MAX.ilog10() as usize + 1;

/// Parses template text; the error is a message for the template literal's span.
pub fn parse(text: &str, attr: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '}' => {
                return Err(format!("unmatched `}}` in `{attr}` template; write `}}}}` for a literal brace"));
            }
            '{' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => inner.push(c),
                        None => {
                            return Err(format!(
                                "unclosed `{{` in `{attr}` template; close the field with `}}` or \
                                 write `{{{{` for a literal brace"
                            ));
                        }
                    }
                }
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                pieces.push(field(&inner, attr)?);
            }
            c if is_forbidden_key_char(c) => {
                return Err(format!(
                    "`{attr}` template contains {c:?}, which keys cannot contain; \
                     the service forbids `/`, `\\`, `#`, `?` and control characters"
                ));
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

fn field(inner: &str, attr: &str) -> Result<Piece, String> {
    let (name, spec) = match inner.split_once(':') {
        Some((name, spec)) => (name.trim(), Some(spec)),
        None => (inner.trim(), None),
    };
    let is_ident = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !is_ident {
        return Err(format!(
            "`{{{inner}}}` in `{attr}` template is not a field; write `{{field}}` or `{{field:spec}}`"
        ));
    }
    let spec = match spec {
        None => Spec::Codec(KeySpec::Plain),
        Some(spec) => parse_spec(spec).unwrap_or_else(|| {
            let named: Vec<String> = grammar::NAMED_SPECS.iter().map(|s| format!("`{s}`")).collect();
            Err(format!(
                "unknown key spec `{spec}` in `{attr}` template; expected zero padding like `06`, \
                 {} or a date format like `%Y%m%d`",
                named.join(", ")
            ))
        })?,
    };
    Ok(Piece::Field { name: name.to_owned(), spec })
}

/// `None` for an unknown spec; `Some(Err)` for a known kind of spec with a specific problem.
fn parse_spec(spec: &str) -> Option<Result<Spec, String>> {
    if let Some(named) = grammar::named_spec(spec) {
        return Some(Ok(Spec::Codec(named)));
    }
    if spec.starts_with('%') {
        return Some(grammar::check_date_format(spec).map(|()| Spec::Date(spec.into())));
    }
    if spec.len() > 1 && spec.starts_with('0') && spec.bytes().all(|b| b.is_ascii_digit()) {
        let width: usize = spec.parse().ok()?;
        if width == 0 || width > MAX_PAD {
            return Some(Err(format!("zero padding `{spec}` must be between 1 and {MAX_PAD} digits wide")));
        }
        return Some(Ok(Spec::Codec(KeySpec::ZeroPad(width))));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<(String, Spec)> {
        parse(text, "row_key")
            .unwrap()
            .into_iter()
            .filter_map(|p| match p {
                Piece::Field { name, spec } => Some((name, spec)),
                Piece::Literal(_) => None,
            })
            .collect()
    }

    #[test]
    fn parses_fields_specs_and_escapes() {
        assert_eq!(
            fields("empid_{id:06}_{at:inverted_ticks}{{x}}{day:%Y%m%d}"),
            [
                ("id".to_owned(), Spec::Codec(KeySpec::ZeroPad(6))),
                ("at".to_owned(), Spec::Codec(KeySpec::InvertedTicks)),
                ("day".to_owned(), Spec::Date("%Y%m%d".into())),
            ]
        );
        assert!(parse("a{{b}}", "row_key").is_ok());
        assert!(parse("{d:%-d%_H%0m}", "row_key").is_ok(), "padding flags on numeric specifiers");
    }

    #[test]
    fn rejects_bad_templates() {
        for bad in [
            "{id",
            "id}",
            "{}",
            "{1a}",
            "{id:6}",
            "{id:00}",
            "{id:021}",
            "{id:tick}",
            "{d:%Y/%m}",
            "{d:%#Y}",
            "{d:%#z}",
            "{d:%-a}",
            "{d:%_B}",
            "{d:%-F}",
            "{d:%D}",
            "{d:%Q}",
            "a/b",
            "{id:}",
        ] {
            assert!(parse(bad, "row_key").is_err(), "{bad}");
        }
    }
}
