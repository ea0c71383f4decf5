//! The names and rules that `#[derive(TableEntity)]` and this crate both rely on, each defined
//! once. Not a public API: names here may change in any release.
//!
//! # How the two sides share them
//!
//! table-derive takes a normal dependency on table-core, pinned to the exact version (`=`, as
//! thiserror pins thiserror-impl), and reads table-core while it expands. So the compiler, not
//! a convention, keeps them in step:
//!
//! - this module defines what had no home of its own: the system and discriminator property
//!   names, the key specs written as words, and which chrono date formats a key may use;
//! - the derive calls the runtime's own definitions for the rest: [`KeySpec`]'s `Display`
//!   (the spec as written) and [`KeySpec::fixed_width`] (which fields a key can be cut at),
//!   [`is_forbidden_key_char`] and [`validate_property_name`].
//!
//! The alternatives were worse: a copy in the derive plus a test that compares (two
//! definitions to keep in step), a source file included by both with `#[path]` (it cannot be
//! packaged), or a third crate for a handful of names (one more crate to publish and pin). The
//! cost is that the proc macro links table-core, which every user of the derive builds anyway.
//!
//! What a dependency cannot share is tested instead:
//! - the `__private` items generated code calls are compiled by the derive's tests against
//!   both `table_core` and `table_client`, so a rename on one side fails them;
//! - the tests below compare this module with the places that still spell a name themselves
//!   ([`RESERVED_PROPERTY_NAMES`](crate::RESERVED_PROPERTY_NAMES), [`KeyName`]'s
//!   `Display`, the typed columns, the filter printer), and the date format rule with what
//!   the key codec actually writes;
//! - table-derive's tests build keys with every fixed-width spec and read them back.
//!
//! [`KeyName`]: crate::KeyName
//! [`is_forbidden_key_char`]: crate::is_forbidden_key_char
//! [`validate_property_name`]: crate::validate_property_name

use crate::keys::KeySpec;
use crate::validate::is_forbidden_key_char;

/// The `PartitionKey` system property.
pub const PARTITION_KEY: &str = "PartitionKey";
/// The `RowKey` system property.
pub const ROW_KEY: &str = "RowKey";
/// The `Timestamp` system property, set by the service on every write.
pub const TIMESTAMP: &str = "Timestamp";
/// The system properties, which no field may be stored as.
pub const SYSTEM_PROPERTIES: [&str; 3] = [PARTITION_KEY, ROW_KEY, TIMESTAMP];

/// The property holding the discriminator of `entity_type = "..."` (an `Edm.String`).
pub const ENTITY_TYPE: &str = "EntityType";
/// The property holding `version = N` (an `Edm.Int32`).
pub const ENTITY_VERSION: &str = "EntityVersion";

/// The key specs written as a word after the `:` of a template field (`{at:ticks}`), each
/// spelt as its `Display` writes it.
pub const NAMED_SPECS: [KeySpec; 3] = [KeySpec::Ticks, KeySpec::InvertedTicks, KeySpec::Ordered];

/// The named spec written as `word`, if any.
pub fn named_spec(word: &str) -> Option<KeySpec> {
    NAMED_SPECS.into_iter().find(|spec| spec.to_string() == word)
}

/// Checks a chrono `strftime` format for a key (`{day:%Y%m%d}`): known specifiers only, each
/// one chrono can write, and none that writes a character keys cannot hold. The error is a
/// message naming the format.
pub fn check_date_format(format: &str) -> Result<(), String> {
    // Specifiers that take no flag and write no forbidden character.
    const SIMPLE: &str = "YCymbBhdeaAwuUWGgVjFvHkIlPpMSRTXrZzsf%";
    // Specifiers chrono pads, so `-`, `_` and `0` may precede them.
    const NUMERIC: &str = "CdefgGHIjklmMsSuUVwWyY";
    let invalid =
        || Err(format!("invalid date format `{format}`; use chrono strftime specifiers like `%Y%m%d`"));
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if is_forbidden_key_char(c) {
            return Err(format!("date format `{format}` contains {c:?}, which keys cannot contain"));
        }
        if c != '%' {
            continue;
        }
        let ok = match chars.next() {
            Some('-' | '_' | '0') => chars.next().is_some_and(|s| NUMERIC.contains(s)),
            // `%#z` is a parsing-only specifier: chrono refuses to write it.
            Some('#') => false,
            Some('.') => match chars.next() {
                Some('f') => true,
                Some('3' | '6' | '9') => chars.next() == Some('f'),
                _ => false,
            },
            Some('3' | '6' | '9') => chars.next() == Some('f'),
            Some(':') => chars.next() == Some('z'),
            Some('D' | 'x') => {
                return Err(format!(
                    "date format `{format}` writes `/` (in `%D`/`%x`), which keys cannot contain; use `%Y%m%d`"
                ));
            }
            Some('n' | 't') => {
                return Err(format!(
                    "date format `{format}` writes a control character, which keys cannot contain"
                ));
            }
            Some(s) => SIMPLE.contains(s),
            None => false,
        };
        if !ok {
            return invalid();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::KeyName;
    use crate::filter::Filter;
    use crate::keys;
    use crate::typed::column;
    use crate::validate::RESERVED_PROPERTY_NAMES;

    #[test]
    fn system_names_agree_with_every_module_that_spells_them() {
        assert_eq!(RESERVED_PROPERTY_NAMES, SYSTEM_PROPERTIES);
        assert_eq!(KeyName::PartitionKey.to_string(), PARTITION_KEY);
        assert_eq!(KeyName::RowKey.to_string(), ROW_KEY);
        assert_eq!(
            [column::PARTITION_KEY.name(), column::ROW_KEY.name(), column::TIMESTAMP.name()],
            SYSTEM_PROPERTIES
        );
        assert!(matches!(
            Filter::partition_key_eq("p"),
            Filter::Compare { property, .. } if property == PARTITION_KEY
        ));
    }

    #[test]
    fn every_spec_without_a_parameter_is_named() {
        for spec in [
            KeySpec::Plain,
            KeySpec::ZeroPad(6),
            KeySpec::Ticks,
            KeySpec::InvertedTicks,
            KeySpec::Ordered,
            KeySpec::Date("%Y"),
        ] {
            // Exhaustive, so that a new spec has to be placed here.
            let named = match spec {
                KeySpec::Plain | KeySpec::ZeroPad(_) | KeySpec::Date(_) => false,
                KeySpec::Ticks | KeySpec::InvertedTicks | KeySpec::Ordered => true,
            };
            assert_eq!(named_spec(&spec.to_string()), named.then_some(spec), "{spec:?}");
        }
        assert_eq!(named_spec("tick"), None);
    }

    /// Every format made of one specifier (with any flag or modifier) or one literal character.
    fn candidate_formats() -> Vec<String> {
        let printable = (' '..='~').chain(['\t', '\n', '\u{7f}', '\u{85}', 'é']);
        let mut formats = Vec::new();
        for c in printable {
            formats.push(format!("%{c}"));
            formats.push(format!("a{c}b"));
            for prefix in ["-", "_", "0", "#", ".", ":", "3", "6", "9", ".3", ".6", ".9", "::"] {
                formats.push(format!("%{prefix}{c}"));
            }
        }
        formats
    }

    #[test]
    fn accepted_date_formats_are_written_by_the_key_codec_as_valid_key_text() {
        let instants: Vec<DateTime<Utc>> = ["2014-08-22T00:50:32.1234567Z", "0001-01-01T00:00:00Z"]
            .into_iter()
            .map(|t| t.parse().expect("test instant"))
            .collect();
        let mut accepted = 0;
        for format in candidate_formats() {
            let checked = check_date_format(&format);
            for at in &instants {
                let written = keys::date(*at, &format);
                let writable = written.as_ref().is_ok_and(|text| !text.chars().any(is_forbidden_key_char));
                // The derive may refuse a format chrono could write, never the reverse: an
                // accepted format would fail every key build.
                assert!(checked.is_err() || writable, "{format:?} is accepted but writes {written:?}");
            }
            accepted += usize::from(checked.is_ok());
        }
        assert!(accepted > 100, "only {accepted} formats accepted");
        for refused in ["%D", "%x", "%m/%d", "%n", "%Q", "%#z", "%-a", "%_B", "%-F", "%.2f", "%"] {
            assert!(check_date_format(refused).is_err(), "{refused}");
        }
        for fine in ["%Y%m%d", "%-d%_H%0m", "%:z", "%.3f", "%9f", "%Y-%m-%dT%H:%M:%S%.f%z"] {
            assert_eq!(check_date_format(fine), Ok(()), "{fine}");
        }
    }
}
