//! Key template text (`empid_{id:06}`) parsed into literal and field pieces at compile time.
//!
//! The rules mirror the runtime `KeyTemplate` of table-core: `{{` and `}}` are literal braces,
//! a field is `{name}` or `{name:spec}`, and literal text may not hold a character the service
//! forbids in keys.

/// How a field is written into the key.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Spec {
    Plain,
    ZeroPad(usize),
    Ticks,
    InvertedTicks,
    Ordered,
    Date(String),
}

impl Spec {
    /// The exact width of every encoded value, when the spec fixes one (as table-core's
    /// `KeySpec::fixed_width`).
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            Spec::ZeroPad(width) => Some(*width),
            Spec::Ticks | Spec::InvertedTicks => Some(19),
            Spec::Ordered => Some(20),
            Spec::Plain | Spec::Date(_) => None,
        }
    }

    /// The spec as written after the `:`.
    pub fn text(&self) -> String {
        match self {
            Spec::Plain => String::new(),
            Spec::ZeroPad(width) => format!("0{width}"),
            Spec::Ticks => "ticks".into(),
            Spec::InvertedTicks => "inverted_ticks".into(),
            Spec::Ordered => "ordered".into(),
            Spec::Date(format) => format.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum Piece {
    Literal(String),
    Field { name: String, spec: Spec },
}

/// Longest zero padding: `u64::MAX` has 20 digits.
const MAX_PAD: usize = 20;

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
        None => Spec::Plain,
        Some(spec) => parse_spec(spec).ok_or_else(|| {
            format!(
                "unknown key spec `{spec}` in `{attr}` template; expected zero padding like `06`, \
                 `ticks`, `inverted_ticks`, `ordered` or a date format like `%Y%m%d`"
            )
        })??,
    };
    Ok(Piece::Field { name: name.to_owned(), spec })
}

/// `None` for an unknown spec; `Some(Err)` for a date format with a specific problem.
fn parse_spec(spec: &str) -> Option<Result<Spec, String>> {
    Some(Ok(match spec {
        "ticks" => Spec::Ticks,
        "inverted_ticks" => Spec::InvertedTicks,
        "ordered" => Spec::Ordered,
        s if s.starts_with('%') => {
            return Some(check_date_format(s).map(|()| Spec::Date(s.into())));
        }
        s if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit()) => {
            let width: usize = s.parse().ok()?;
            if width == 0 || width > MAX_PAD {
                return Some(Err(format!("zero padding `{s}` must be between 1 and {MAX_PAD} digits wide")));
            }
            Spec::ZeroPad(width)
        }
        _ => return None,
    }))
}

/// Checks a chrono strftime format: known specifiers only, and none that writes a character
/// keys cannot hold.
fn check_date_format(format: &str) -> Result<(), String> {
    const SIMPLE: &str = "YCymbBhdeaAwuUWGgVjFvHkIlPpMSRTXrZzsf%";
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if is_forbidden_key_char(c) {
            return Err(format!("date format `{format}` contains {c:?}, which keys cannot contain"));
        }
        if c != '%' {
            continue;
        }
        let mut spec = chars.next();
        let flag = spec.filter(|c| matches!(c, '-' | '_' | '0' | '#'));
        if flag.is_some() {
            spec = chars.next();
        }
        // chrono takes a padding flag only before a numeric specifier, and `#` only before `z`;
        // anything else would compile and then fail every key build.
        const NUMERIC: &str = "CdefgGHIjklmMsSuUVwWyY";
        let ok = match (flag, spec) {
            (Some('#'), spec) => spec == Some('z'),
            (Some(_), spec) => spec.is_some_and(|s| NUMERIC.contains(s)),
            (None, spec) => match spec {
                Some('.') => match chars.next() {
                    Some('f') => true,
                    Some('3' | '6' | '9') => chars.next() == Some('f'),
                    _ => false,
                },
                Some('3' | '6' | '9') => chars.next() == Some('f'),
                Some(':') => chars.next() == Some('z'),
                Some('D' | 'x') => {
                    return Err(format!(
                        "date format `{format}` writes `/` (in `%D`/`%x`), which keys cannot contain; \
                     use `%Y%m%d`"
                    ));
                }
                Some('n' | 't') => {
                    return Err(format!(
                        "date format `{format}` writes a control character, which keys cannot contain"
                    ));
                }
                Some(s) => SIMPLE.contains(s),
                None => false,
            },
        };
        if !ok {
            return Err(format!(
                "invalid date format `{format}`; use chrono strftime specifiers like `%Y%m%d`"
            ));
        }
    }
    Ok(())
}

/// The service's forbidden key characters (table-core `validate::is_forbidden_key_char`).
pub fn is_forbidden_key_char(c: char) -> bool {
    matches!(c, '/' | '\\' | '#' | '?' | '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
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
                ("id".to_owned(), Spec::ZeroPad(6)),
                ("at".to_owned(), Spec::InvertedTicks),
                ("day".to_owned(), Spec::Date("%Y%m%d".into())),
            ]
        );
        assert!(parse("a{{b}}", "row_key").is_ok());
        assert!(parse("{d:%-d%_H%0m%#z}", "row_key").is_ok(), "padding flags on numeric specifiers");
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
