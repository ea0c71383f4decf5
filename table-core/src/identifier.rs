//! The characters a property name is made of: the identifier classes shared by the checks on
//! property names (`validate`) and the filter lexer, so a name one accepts the other reads.
//!
//! The service documents property names as following the naming rules for C#
//! identifiers ("Understanding the Table service data model", Azure Storage REST docs). The
//! C# specification (ECMA-334, "Identifiers") defines them by Unicode general category: the
//! first character is a letter (Lu, Ll, Lt, Lm, Lo), a letter number (Nl) or `_`; later ones
//! may also be combining marks (Mn, Mc), decimal digits (Nd), connectors (Pc, e.g. `_`) and
//! format characters (Cf, e.g. U+200D ZERO WIDTH JOINER). The OData library behind the
//! service's `$filter` lexes property names by the same categories, so one rule serves both.
//! Categories come from the `unicode-general-category` tables (Unicode 16), per code point;
//! a service on an older Unicode version may refuse a character assigned since, with 400.
//! The docs also warn that some C# identifiers are not valid XML names (for the retired Atom
//! format); which ones the service refuses is unverified, so they are accepted here and the
//! service's 400 is the answer.

/// `true` for a character that may begin a property name: a letter (Unicode general category
/// Lu, Ll, Lt, Lm or Lo), a letter number (Nl) or `_` (the C# identifier rule).
pub(crate) fn is_identifier_start(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic() || c == '_';
    }
    use unicode_general_category::GeneralCategory::*;
    matches!(
        unicode_general_category::get_general_category(c),
        UppercaseLetter | LowercaseLetter | TitlecaseLetter | ModifierLetter | OtherLetter | LetterNumber
    )
}

/// `true` for a character that may follow the first in a property name: what may begin one,
/// plus combining marks (Mn, Mc), decimal digits (Nd), connectors (Pc) and format characters
/// (Cf), as in C# identifiers.
pub(crate) fn is_identifier_part(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    use unicode_general_category::GeneralCategory::*;
    matches!(
        unicode_general_category::get_general_category(c),
        UppercaseLetter
            | LowercaseLetter
            | TitlecaseLetter
            | ModifierLetter
            | OtherLetter
            | LetterNumber
            | NonspacingMark
            | SpacingMark
            | DecimalNumber
            | ConnectorPunctuation
            | Format
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_csharp_categories() {
        // First character: Lu, Ll, Lt, Lm, Lo, Nl or `_`.
        for c in ['A', 'z', '_', 'é', 'ǅ', 'ʰ', '中', 'Ⅻ', '\u{10400}'] {
            assert!(is_identifier_start(c) && is_identifier_part(c), "{c:?}");
        }
        // Later characters also: Mn, Mc, Nd, Pc, Cf.
        for c in ['\u{301}', '\u{903}', '7', '٣', '‿', '\u{200d}', '\u{ad}'] {
            assert!(!is_identifier_start(c) && is_identifier_part(c), "{c:?}");
        }
        // Neither: Me, No, spaces, punctuation, symbols, controls, private use.
        for c in ['\u{20dd}', '²', ' ', '\u{a0}', '-', '.', '@', ',', '$', '+', '\u{0}', '\u{e000}'] {
            assert!(!is_identifier_start(c) && !is_identifier_part(c), "{c:?}");
        }
    }
}
