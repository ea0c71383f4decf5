//! The filter grammar's lexical rules: which words are keywords and which text can name a
//! property. The parser reads by them and the printer writes by them, so a name the printer
//! writes bare is one the parser reads back as that property.
//!
//! Identifiers are the crate's property-name identifiers (C# identifiers, see
//! `crate::identifier`); keywords are case-sensitive, as on the real service, so `AND` is a
//! property name and `and` is not.

use crate::identifier::{is_identifier_part, is_identifier_start};

/// Words with a meaning in the grammar; none of them can name a property in a filter.
pub(super) const RESERVED_WORDS: [&str; 19] = [
    "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "true", "false", "null", "add", "sub", "mul",
    "div", "mod", "NaN", "INF",
];

/// Arithmetic operators: reserved words that are valid OData the service does not implement.
pub(super) const ARITHMETIC: [&str; 5] = ["add", "sub", "mul", "div", "mod"];

/// `true` when `name` reads back as that property: an identifier that is not a keyword.
pub(super) fn is_property_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_identifier_start)
        && chars.all(is_identifier_part)
        && !RESERVED_WORDS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(is_property_name("été_1"));
        assert!(is_property_name("_"));
        assert!(is_property_name("AND"));
        // A combining mark (Mn) after the first character, as in C# identifiers.
        assert!(is_property_name("e\u{301}te"));
        assert!(!is_property_name("\u{301}e"));
        assert!(!is_property_name("and"));
        assert!(!is_property_name("NaN"));
        assert!(!is_property_name("1a"));
        assert!(!is_property_name("a-b"));
        assert!(!is_property_name(""));
    }

    #[test]
    fn arithmetic_words_are_reserved() {
        assert!(ARITHMETIC.iter().all(|word| RESERVED_WORDS.contains(word)));
    }
}
