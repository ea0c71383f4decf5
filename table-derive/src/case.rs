//! `rename_all` rules: field and variant names converted to property names or stored values.

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

pub const RULE_NAMES: &str = "`lowercase`, `UPPERCASE`, `PascalCase`, `camelCase`, `snake_case`, \
     `SCREAMING_SNAKE_CASE`, `kebab-case` or `SCREAMING-KEBAB-CASE`";

impl RenameRule {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "lowercase" => RenameRule::Lower,
            "UPPERCASE" => RenameRule::Upper,
            "PascalCase" => RenameRule::Pascal,
            "camelCase" => RenameRule::Camel,
            "snake_case" => RenameRule::Snake,
            "SCREAMING_SNAKE_CASE" => RenameRule::ScreamingSnake,
            "kebab-case" => RenameRule::Kebab,
            "SCREAMING-KEBAB-CASE" => RenameRule::ScreamingKebab,
            _ => return None,
        })
    }

    /// Applies the rule to a snake_case field name or a PascalCase variant name.
    pub fn apply(self, name: &str) -> String {
        let words = words(name);
        let capitalized = || words.iter().map(|w| capitalize(w)).collect::<Vec<_>>();
        match self {
            RenameRule::Lower => words.concat(),
            RenameRule::Upper => words.concat().to_uppercase(),
            RenameRule::Pascal => capitalized().concat(),
            RenameRule::Camel => {
                let mut out = capitalized();
                if let Some(first) = out.first_mut() {
                    *first = first.to_lowercase();
                }
                out.concat()
            }
            RenameRule::Snake => words.join("_"),
            RenameRule::ScreamingSnake => words.join("_").to_uppercase(),
            RenameRule::Kebab => words.join("-"),
            RenameRule::ScreamingKebab => words.join("-").to_uppercase(),
        }
    }
}

/// Lower-case words of a snake_case or PascalCase identifier.
fn words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut previous_lower = false;
    for c in name.trim_start_matches("r#").chars() {
        if c == '_' {
            previous_lower = false;
            words.push(String::new());
            continue;
        }
        if c.is_uppercase() && previous_lower || words.is_empty() {
            words.push(String::new());
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        if let Some(word) = words.last_mut() {
            word.extend(c.to_lowercase());
        }
    }
    words.retain(|w| !w.is_empty());
    words
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_fields_and_variants() {
        let cases = [
            (RenameRule::Pascal, "first_name", "FirstName"),
            (RenameRule::Camel, "first_name", "firstName"),
            (RenameRule::Snake, "FirstName", "first_name"),
            (RenameRule::ScreamingSnake, "first_name", "FIRST_NAME"),
            (RenameRule::Kebab, "PartTime", "part-time"),
            (RenameRule::Lower, "PartTime", "parttime"),
            (RenameRule::Upper, "a_b", "AB"),
            (RenameRule::Pascal, "r#type", "Type"),
            (RenameRule::Pascal, "address2", "Address2"),
        ];
        for (rule, input, output) in cases {
            assert_eq!(rule.apply(input), output, "{input}");
        }
    }
}
