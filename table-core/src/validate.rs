//! The service's rules for names, keys, values and entity sizes, checked before any request.
//!
//! Limits follow the real service (protocol doc section 9), not Azurite's laxer checks. Sizes
//! are counted as the service counts them: strings in UTF-16 code units, entity size by the
//! published formula `4 + 2 * len(PK + RK) + Σ (8 + 2 * len(name) + size(value))`, where a
//! string or binary value also pays a 4-byte length prefix.
//!
//! The entity rules after the keys are a sink, [`EntityCheck`], fed the properties of an
//! [`EntityView`]: an [`Entity`], or a typed value that the embedded engine stores without
//! building one (its `TableEntity::write_through`). Both meet the same checks, in the same
//! order, with the same errors.

use crate::datetime::{max_datetime, min_datetime};
use crate::entity::{Entity, EntityKey};
use crate::error::{KeyName, Result, Violation};
use crate::identifier::{is_identifier_part, is_identifier_start};
use crate::value::ValueRef;
use crate::value::{Value, utf16_len};

/// Longest `PartitionKey` or `RowKey`, in UTF-16 code units.
pub const MAX_KEY_LEN: usize = 1024;
/// Longest property name, in characters.
pub const MAX_PROPERTY_NAME_LEN: usize = 255;
/// Largest property value, in bytes as the service counts them (strings: 2 per UTF-16 unit).
pub const MAX_PROPERTY_VALUE_SIZE: usize = 64 * 1024;
/// Largest entity, in bytes as the service counts them.
pub const MAX_ENTITY_SIZE: usize = 1024 * 1024;
/// Most properties on one entity, including `PartitionKey`, `RowKey` and `Timestamp`.
pub const MAX_PROPERTIES: usize = 255;
/// Number of system properties counted toward [`MAX_PROPERTIES`].
pub const SYSTEM_PROPERTIES: usize = 3;
/// Names a custom property may not take.
pub const RESERVED_PROPERTY_NAMES: [&str; 3] = ["PartitionKey", "RowKey", "Timestamp"];

/// Checks a `PartitionKey` or `RowKey`: length and forbidden characters
/// (`/ \ # ?`, U+0000-U+001F, U+007F-U+009F).
// Inlined, so a caller checking two keys pays no call for the common key; the rest of the
// check stays out of line.
#[inline]
pub fn validate_key(which: KeyName, key: &str) -> Result<(), Violation> {
    // Most keys are short ASCII without a forbidden character: settled in one pass over the
    // bytes, one table lookup each (an ASCII key has as many UTF-16 units as bytes; every read
    // and write checks two keys). Any other key takes the full path. Folded rather than
    // stopped at the first byte that is not plain, which is rare: the loop then has no
    // branch per byte and is unrolled (a typed get checked its two 8-byte keys in 137
    // instructions with `all`, 118 so; callgrind, ops_probe `probe_gets`).
    if key.len() <= MAX_KEY_LEN && key.bytes().fold(true, |plain, b| plain & PLAIN_KEY_BYTE[usize::from(b)]) {
        return Ok(());
    }
    validate_unusual_key(which, key)
}

/// [`validate_key`] of a key that is long or not plain ASCII.
fn validate_unusual_key(which: KeyName, key: &str) -> Result<(), Violation> {
    if let Some((position, character)) = key.chars().enumerate().find(|(_, c)| is_forbidden_key_char(*c)) {
        return Err(Violation::KeyCharacter { key: which, character, position });
    }
    let length = utf16_len(key);
    if length > MAX_KEY_LEN {
        return Err(Violation::KeyTooLong { key: which, length, max: MAX_KEY_LEN });
    }
    Ok(())
}

/// `true` for characters the service refuses in keys.
pub const fn is_forbidden_key_char(c: char) -> bool {
    matches!(c, '/' | '\\' | '#' | '?' | '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// `true` at the bytes that are ASCII characters [`is_forbidden_key_char`] accepts: the bytes
/// of a key that [`validate_key`] settles without decoding characters. Derived from that rule
/// when the crate compiles, so the two cannot disagree.
static PLAIN_KEY_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0u8;
    while byte < 0x80 {
        table[byte as usize] = !is_forbidden_key_char(byte as char);
        byte += 1;
    }
    table
};

/// Checks a custom property name: non-empty, at most 255 characters, an identifier by the C#
/// rule the service documents (a letter or `_`, then letters, decimal digits, combining marks,
/// connectors and format characters, by Unicode general category), and not a system property
/// name. OData control names (`odata.etag`, `x@odata.type`) are not identifiers, so they are
/// refused too.
// Inlined into the per-property check of `EntityCheck` (every untyped write checks every
// name), where the call cost about as much as the check of a short ASCII name.
#[inline(always)]
pub fn validate_property_name(name: &str) -> Result<(), Violation> {
    // A name has no more characters than bytes, so only one of more bytes than the limit is
    // counted: every write checks every name.
    if name.len() > MAX_PROPERTY_NAME_LEN {
        let length = name.chars().count();
        if length > MAX_PROPERTY_NAME_LEN {
            return Err(Violation::PropertyNameTooLong {
                name: name.to_owned(),
                length,
                max: MAX_PROPERTY_NAME_LEN,
            });
        }
    }
    let reason = identifier_problem(name)
        .or_else(|| RESERVED_PROPERTY_NAMES.contains(&name).then_some("it is a system property"));
    match reason {
        Some(reason) => Err(Violation::PropertyNameInvalid { name: name.to_owned(), reason }),
        None => Ok(()),
    }
}

/// `true` at the ASCII letters, digits and `_`: the bytes after the first of an ASCII name that
/// [`identifier_problem`] accepts without decoding characters (one lookup each rather than
/// three comparisons: every untyped write checks every name).
static ASCII_IDENTIFIER_PART: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0u8;
    while byte < 0x80 {
        table[byte as usize] = byte.is_ascii_alphanumeric() || byte == b'_';
        byte += 1;
    }
    table
};

/// Why `name` is not an identifier, or `None` when it is one.
fn identifier_problem(name: &str) -> Option<&'static str> {
    // Most names are ASCII identifiers: accepted on their bytes by the ASCII half of the rule
    // below (`is_identifier_start`/`_part`), without decoding characters.
    if let [first, rest @ ..] = name.as_bytes()
        && (first.is_ascii_alphabetic() || *first == b'_')
        && rest.iter().all(|b| ASCII_IDENTIFIER_PART[usize::from(*b)])
    {
        return None;
    }
    let mut chars = name.chars();
    match chars.next() {
        None => Some("it is empty"),
        Some(c) if !is_identifier_start(c) => Some("it must start with a letter or `_`"),
        Some(_) if !chars.all(is_identifier_part) => Some(
            "after the first character it may contain only letters, decimal digits, combining \
             marks, connectors such as `_` and format characters",
        ),
        Some(_) => None,
    }
}

/// Checks a `$select` list: every entry a property name ([`validate_property_name`]) or one of
/// the system properties. An entry is sent verbatim between commas, so `"a,RowKey"` would
/// otherwise select two properties; the violation names the first bad entry.
pub fn validate_select(select: &[String]) -> Result<(), Violation> {
    for (index, entry) in select.iter().enumerate() {
        if RESERVED_PROPERTY_NAMES.contains(&entry.as_str()) {
            continue;
        }
        // A name has no more characters than bytes: only a long one needs counting.
        let reason = if entry.len() > MAX_PROPERTY_NAME_LEN && entry.chars().count() > MAX_PROPERTY_NAME_LEN {
            Some("it is longer than 255 characters")
        } else {
            identifier_problem(entry)
        };
        if let Some(reason) = reason {
            return Err(Violation::SelectEntry { index, entry: entry.clone(), reason });
        }
    }
    Ok(())
}

/// Runs [`validate_select`], converting the violation into an [`crate::Error`].
pub fn check_select(select: &[String]) -> crate::Result<()> {
    validate_select(select).map_err(crate::Error::invalid)
}

/// Checks one property value's size and range.
pub fn validate_value(name: &str, value: &Value) -> Result<(), Violation> {
    let value = ValueRef::of(value);
    validate_sized_value(name, value, stored_size(value))
}

/// [`validate_value`] with the value's [`stored_size`] already known.
// Inlined into the per-property check of `EntityCheck`, where the call cost about as much as
// the checks (every write checks every value); as a call of its own it was not inlined.
#[inline(always)]
fn validate_sized_value(name: &str, value: ValueRef<'_>, size: usize) -> Result<(), Violation> {
    if size > MAX_PROPERTY_VALUE_SIZE {
        return Err(Violation::PropertyValueTooLarge {
            property: name.to_owned(),
            size,
            max: MAX_PROPERTY_VALUE_SIZE,
        });
    }
    if let ValueRef::DateTime(t) = value
        && (t < min_datetime() || t > max_datetime())
    {
        return Err(Violation::DateTimeOutOfRange { property: name.to_owned(), value: t.to_rfc3339() });
    }
    Ok(())
}

impl Value {
    /// The value's size as the service counts it toward the 64 KiB property and 1 MiB entity
    /// limits: strings as UTF-16 (2 bytes per code unit), binary by length, fixed-size types by
    /// their storage width.
    pub fn stored_size(&self) -> usize {
        stored_size(ValueRef::of(self))
    }
}

/// [`Value::stored_size`], of a value owned or borrowed.
#[inline]
fn stored_size(value: ValueRef<'_>) -> usize {
    match value {
        ValueRef::Str(s) => 2 * utf16_len(s),
        ValueRef::Binary(b) => b.len(),
        ValueRef::Int32(_) => 4,
        ValueRef::Int64(_) | ValueRef::Double(_) | ValueRef::DateTime(_) => 8,
        ValueRef::Boolean(_) => 1,
        ValueRef::Guid(_) => 16,
    }
}

/// An entity's size as the service counts it toward [`MAX_ENTITY_SIZE`].
pub fn entity_size(entity: &Entity) -> usize {
    keys_size(&entity.partition_key, &entity.row_key)
        + entity.properties.iter().map(|(name, value)| property_size(name, value)).sum::<usize>()
}

/// One property's share of [`entity_size`].
pub fn property_size(name: &str, value: &Value) -> usize {
    let value = ValueRef::of(value);
    sized_property_size(utf16_len(name), value, stored_size(value))
}

#[inline]
fn keys_size(partition_key: &str, row_key: &str) -> usize {
    4 + 2 * (utf16_len(partition_key) + utf16_len(row_key))
}

/// One property's share of the entity size, given its name's length in UTF-16 units and its
/// value's stored size; strings and binary also pay a 4-byte length prefix.
#[inline]
fn sized_property_size(name_units: usize, value: ValueRef<'_>, value_size: usize) -> usize {
    let prefix = match value {
        ValueRef::Str(_) | ValueRef::Binary(_) => 4,
        _ => 0,
    };
    8 + 2 * name_units + prefix + value_size
}

/// A property name as an [`EntityView`] hands it over: its text, and its length in UTF-16
/// units, which the entity size counts. An [`Entity`]'s names are measured and checked on every
/// write; a derived type's once, when it compiles (`typed::StaticName`).
pub(crate) trait ViewName {
    /// `true` when every name of this kind is known to pass [`validate_property_name`]: the
    /// names of a derived type, which the derive checks with that function when the type
    /// compiles.
    const CHECKED: bool;

    /// The name.
    fn text(&self) -> &str;

    /// The name's length in UTF-16 code units ([`utf16_len`] of [`text`](Self::text)).
    fn utf16_len(&self) -> usize;
}

impl ViewName for str {
    const CHECKED: bool = false;

    fn text(&self) -> &str {
        self
    }

    fn utf16_len(&self) -> usize {
        utf16_len(self)
    }
}

/// Takes an entity's custom properties one by one, in ascending name order, each name once:
/// what the engine's writes and a typed value's
/// [`TableEntity::write_through`](crate::typed::TableEntity::write_through) hand them to. `N`
/// is how the names are held: a derived type's `typed::StaticName`s, or (inside this crate)
/// an `Entity`'s `str`s.
// Here, beside the entity rules, so that the rules (`EntityCheck`) are a sink without this
// module knowing the typed layer above it.
pub trait FieldSink<N: ?Sized> {
    /// The property `name` of `value`.
    fn property(&mut self, name: &N, value: ValueRef<'_>);
}

/// The sink that takes nothing: a walk for one sink alone ([`validate_entity`]).
impl<N: ?Sized> FieldSink<N> for () {
    #[inline(always)]
    fn property(&mut self, _: &N, _: ValueRef<'_>) {}
}

/// Two sinks fed by one walk, first `A` then `B`, each property: a write that checks the entity
/// and sums its row's size walks it once for both.
impl<N: ?Sized, A: FieldSink<N>, B: FieldSink<N>> FieldSink<N> for (A, B) {
    #[inline(always)]
    fn property(&mut self, name: &N, value: ValueRef<'_>) {
        self.0.property(name, value);
        self.1.property(name, value);
    }
}

/// An entity as a write checks and stores it: its keys, and its custom properties handed to a
/// sink ([`FieldSink`]) in ascending name order, each name once. Implemented by [`Entity`] and
/// by a typed value's whole-entity write (`engine::Put`, through the type's
/// `TableEntity::write_through`), so both meet the same sinks: [`EntityCheck`] and the row
/// encoder.
pub(crate) trait EntityView {
    /// How the view holds a property name.
    type Name: ViewName + ?Sized;

    /// `true` when every walk of [`properties`](Self::properties) hands over the same
    /// properties, as an [`Entity`]'s map does. A typed value's walk asks its fields each time
    /// (`PropertyValue::to_value`), which may answer differently, so a row sized by one walk
    /// of it is summed again as the next walk encodes it (`Row::sized`).
    const SAME_EVERY_WALK: bool;

    /// The `PartitionKey`.
    fn partition_key(&self) -> &str;

    /// The `RowKey`.
    fn row_key(&self) -> &str;

    /// The number of custom properties [`properties`](Self::properties) hands over.
    fn property_count(&self) -> usize;

    /// Hands every custom property to `sink`, in ascending name order.
    fn properties<S: FieldSink<Self::Name>>(&self, sink: &mut S);
}

impl EntityView for Entity {
    type Name = str;

    const SAME_EVERY_WALK: bool = true;

    fn partition_key(&self) -> &str {
        &self.partition_key
    }

    fn row_key(&self) -> &str {
        &self.row_key
    }

    fn property_count(&self) -> usize {
        self.properties.len()
    }

    #[inline]
    fn properties<S: FieldSink<str>>(&self, sink: &mut S) {
        for (name, value) in &self.properties {
            sink.property(name, ValueRef::of(value));
        }
    }
}

/// Checks everything the service checks on an entity a client writes: keys, property names,
/// values, property count and total size, in the service's order (keys first).
pub fn validate_entity(entity: &Entity) -> Result<(), Violation> {
    validate_entity_with(entity, ())
}

/// [`validate_entity`], handing each property to `sink` as well, in the same walk: a write
/// sums its row's size while it checks the entity, instead of walking it again for that. The
/// sink, once the entity passes.
#[inline]
pub(crate) fn validate_entity_with<S: FieldSink<str>>(entity: &Entity, sink: S) -> Result<S, Violation> {
    validate_key(KeyName::PartitionKey, &entity.partition_key)?;
    validate_key(KeyName::RowKey, &entity.row_key)?;
    let mut walk = (EntityCheck::new(&entity.partition_key, &entity.row_key), sink);
    entity.properties(&mut walk);
    let (check, sink) = walk;
    check.finish()?;
    Ok(sink)
}

/// The entity rules after the keys, as a sink: fed an entity's properties in order, it answers
/// ([`finish`](Self::finish)) what [`validate_entity`] answers once the keys passed, whoever
/// walks the entity (an [`Entity`]'s map, or a typed value's `write_through`).
///
/// The service checks the property count before any property, but a walk knows the count
/// only at its end: the sink keeps the first property's fault (the name, then the value) and
/// counts on, and `finish` reports, in the service's order, too many properties, then that
/// fault, then the entity's size.
pub(crate) struct EntityCheck<'k> {
    partition_key: &'k str,
    row_key: &'k str,
    /// Custom properties seen.
    count: usize,
    /// The entity's size so far, as the service counts it ([`entity_size`]).
    size: usize,
    /// The first property's fault.
    fault: Option<Violation>,
}

impl<'k> EntityCheck<'k> {
    /// The check of an entity with these keys, which must have passed [`validate_key`] (a
    /// typed value's keys did when they were built).
    #[inline]
    pub(crate) fn new(partition_key: &'k str, row_key: &'k str) -> Self {
        EntityCheck { partition_key, row_key, count: 0, size: keys_size(partition_key, row_key), fault: None }
    }

    /// The number of properties handed over.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// The verdict on the properties handed over (see the type's docs).
    // Inlined into its callers (each write calls it once, a typed one from the crate that
    // derives the type): as a call it cost a typed insert 25 instructions (ops_probe).
    #[inline]
    pub(crate) fn finish(self) -> Result<(), Violation> {
        let key = || EntityKey::new(self.partition_key, self.row_key).to_string();
        let count = self.count + SYSTEM_PROPERTIES;
        if count > MAX_PROPERTIES {
            return Err(Violation::TooManyProperties { key: key(), count, max: MAX_PROPERTIES });
        }
        if let Some(fault) = self.fault {
            return Err(fault);
        }
        if self.size > MAX_ENTITY_SIZE {
            return Err(Violation::EntityTooLarge { key: key(), size: self.size, max: MAX_ENTITY_SIZE });
        }
        Ok(())
    }
}

impl<N: ViewName + ?Sized> FieldSink<N> for EntityCheck<'_> {
    // Inlined into each walk (every write checks every property), where the call cost about
    // as much as the checks. A typed value's walk is compiled in the crate that derives the
    // type, so the sizes it reaches (`stored_size`, `sized_property_size`) are `#[inline]`,
    // or they would stay calls across crates.
    #[inline(always)]
    fn property(&mut self, name: &N, value: ValueRef<'_>) {
        // Each value's stored size (a UTF-16 scan for strings) is computed once.
        let value_size = stored_size(value);
        self.count += 1;
        self.size += sized_property_size(name.utf16_len(), value, value_size);
        if self.fault.is_none()
            && let Err(fault) = check_property(name, value, value_size)
        {
            self.fault = Some(fault);
        }
    }
}

/// One property's rules: its name (unless [`ViewName::CHECKED`]), then its value.
#[inline(always)]
fn check_property<N: ViewName + ?Sized>(
    name: &N,
    value: ValueRef<'_>,
    value_size: usize,
) -> Result<(), Violation> {
    if !N::CHECKED {
        validate_property_name(name.text())?;
    }
    validate_sized_value(name.text(), value, value_size)
}

/// Checks a table name: `^[A-Za-z][A-Za-z0-9]{2,62}$` and not `tables` in any case.
pub fn validate_table_name(name: &str) -> Result<(), Violation> {
    let invalid = |reason| Err(Violation::TableName { name: name.to_owned(), reason });
    if !name.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return invalid("it may contain only ASCII letters and digits");
    }
    if !(3..=63).contains(&name.len()) {
        return Err(Violation::TableNameLength { name: name.to_owned(), length: name.len() });
    }
    if !name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) {
        return invalid("it must start with a letter");
    }
    if name.eq_ignore_ascii_case("tables") {
        return invalid("`tables` is reserved");
    }
    Ok(())
}

/// Runs [`validate_entity`], converting the violation into an [`crate::Error`].
pub fn check_entity(entity: &Entity) -> crate::Result<()> {
    validate_entity(entity).map_err(crate::Error::invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of_len(n: usize) -> String {
        "k".repeat(n)
    }

    #[test]
    fn key_length_limit_is_1024_utf16_units() {
        assert!(validate_key(KeyName::RowKey, &key_of_len(1024)).is_ok());
        assert_eq!(
            validate_key(KeyName::RowKey, &key_of_len(1025)),
            Err(Violation::KeyTooLong { key: KeyName::RowKey, length: 1025, max: 1024 })
        );
        // A character outside the BMP counts twice.
        let wide = format!("{}😀", key_of_len(1022));
        assert!(validate_key(KeyName::PartitionKey, &wide).is_ok());
        let wider = format!("{}😀", key_of_len(1023));
        assert!(validate_key(KeyName::PartitionKey, &wider).is_err());
    }

    #[test]
    fn forbidden_key_characters_are_named_with_their_position() {
        for c in ['/', '\\', '#', '?', '\u{0}', '\t', '\n', '\u{1f}', '\u{7f}', '\u{85}', '\u{9f}'] {
            // Anywhere in a key of a few words, so that every byte of an unrolled pass meets it.
            for position in 0..20 {
                let key = format!("{}{c}{}", "k".repeat(position), "k".repeat(19 - position));
                assert_eq!(
                    validate_key(KeyName::PartitionKey, &key),
                    Err(Violation::KeyCharacter { key: KeyName::PartitionKey, character: c, position }),
                    "{key:?}"
                );
            }
        }
        for ok in ["", "a b", "it's", "%+é", "\u{2028}", "\u{20}", "\u{a0}"] {
            assert!(validate_key(KeyName::RowKey, ok).is_ok(), "{ok:?}");
        }
    }

    #[test]
    fn property_names() {
        assert!(validate_property_name(&"a".repeat(255)).is_ok());
        assert!(matches!(
            validate_property_name(&"a".repeat(256)),
            Err(Violation::PropertyNameTooLong { length: 256, max: 255, .. })
        ));
        for ok in ["a", "_x", "Name1", "été"] {
            assert!(validate_property_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1ab",
            "a-b",
            "a b",
            "odata.x",
            "x@odata.type",
            "a,RowKey",
            "PartitionKey",
            "RowKey",
            "Timestamp",
        ] {
            assert!(
                matches!(validate_property_name(bad), Err(Violation::PropertyNameInvalid { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn ascii_fast_paths_follow_the_character_rules() {
        for b in 0..=127u8 {
            let c = char::from(b);
            let reserved = |n: &str| RESERVED_PROPERTY_NAMES.contains(&n);
            for (name, expected) in [
                (c.to_string(), is_identifier_start(c)),
                (format!("a{c}"), is_identifier_part(c)),
                (format!("_{c}z"), is_identifier_part(c)),
            ] {
                let expected = expected && !reserved(&name);
                assert_eq!(validate_property_name(&name).is_ok(), expected, "{name:?}");
            }
            let key = format!("k{c}");
            assert_eq!(validate_key(KeyName::RowKey, &key).is_ok(), !is_forbidden_key_char(c), "{key:?}");
        }
    }

    #[test]
    fn property_names_are_csharp_identifiers() {
        // Combining marks, as in a decomposed `é`, are accepted after the first character.
        assert!(validate_property_name("Caf\u{65}\u{301}").is_ok());
        assert!(validate_property_name("a\u{200d}b").is_ok());
        assert!(matches!(
            validate_property_name("\u{301}a"),
            Err(Violation::PropertyNameInvalid { reason: "it must start with a letter or `_`", .. })
        ));
        assert!(validate_property_name("a²").is_err());
    }

    #[test]
    fn select_entries_are_property_or_system_names() {
        let list = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert!(validate_select(&list(&["a", "RowKey", "PartitionKey", "Timestamp", "e\u{301}"])).is_ok());
        assert!(validate_select(&[]).is_ok());
        assert_eq!(
            validate_select(&list(&["ok", "a,RowKey"])),
            Err(Violation::SelectEntry {
                index: 1,
                entry: "a,RowKey".into(),
                reason: "after the first character it may contain only letters, decimal digits, \
                         combining marks, connectors such as `_` and format characters",
            })
        );
        for bad in ["", " a", "a b", "1a", "odata.etag", "*", "rowkey,x"] {
            assert!(
                matches!(validate_select(&list(&[bad])), Err(Violation::SelectEntry { index: 0, .. })),
                "{bad:?}"
            );
        }
        assert!(validate_select(&list(&[&"a".repeat(255)])).is_ok());
        assert!(validate_select(&list(&[&"a".repeat(256)])).is_err());
        let err = check_select(&list(&["a,b"])).expect_err("a comma");
        assert_eq!(err.code(), Some(&crate::ErrorCode::InvalidInput));
        assert!(err.to_string().contains("\"a,b\""), "{err}");
    }

    #[test]
    fn string_values_are_limited_to_32k_utf16_units() {
        assert!(validate_value("s", &Value::from("x".repeat(32_768))).is_ok());
        assert_eq!(
            validate_value("s", &Value::from("x".repeat(32_769))),
            Err(Violation::PropertyValueTooLarge { property: "s".into(), size: 65_538, max: 65_536 })
        );
    }

    #[test]
    fn binary_values_are_limited_to_64_kib() {
        assert!(validate_value("b", &Value::Binary(vec![0; 65_536])).is_ok());
        assert!(validate_value("b", &Value::Binary(vec![0; 65_537])).is_err());
    }

    #[test]
    fn datetime_range() {
        assert!(validate_value("t", &Value::DateTime(min_datetime())).is_ok());
        assert!(validate_value("t", &Value::DateTime(max_datetime())).is_ok());
        let before = min_datetime() - chrono::Duration::nanoseconds(100);
        assert!(matches!(
            validate_value("t", &Value::DateTime(before)),
            Err(Violation::DateTimeOutOfRange { .. })
        ));
    }

    #[test]
    fn property_count_limit_is_252_custom() {
        let mut e = Entity::new("p", "r");
        for i in 0..252 {
            e.insert(format!("p{i}"), 1);
        }
        assert!(validate_entity(&e).is_ok());
        e.insert("one_more", 1);
        assert!(matches!(
            validate_entity(&e),
            Err(Violation::TooManyProperties { count: 256, max: 255, .. })
        ));
    }

    #[test]
    fn an_entitys_faults_are_reported_in_the_services_order() {
        // Too many properties, then the first property's fault (its name, then its value, by
        // name order), then the entity's size: whichever properties hold them.
        let mut e = Entity::new("p", "r");
        for i in 0..253 {
            e.insert(format!("p{i:03}"), Value::Binary(vec![0; 8_000]));
        }
        e.insert("a", Value::DateTime(min_datetime() - chrono::Duration::nanoseconds(100)));
        e.insert("zz", Value::Binary(vec![0; 65_537]));
        assert!(matches!(validate_entity(&e), Err(Violation::TooManyProperties { count: 258, .. })));
        e.properties.retain(|name, _| name.as_str() < "p200");
        assert!(
            matches!(validate_entity(&e), Err(Violation::DateTimeOutOfRange { ref property, .. }) if property == "a")
        );
        e.insert("1a", 1);
        assert!(
            matches!(validate_entity(&e), Err(Violation::PropertyNameInvalid { ref name, .. }) if name == "1a")
        );
        e.properties.retain(|name, _| name != "1a" && name != "a");
        e.insert("zz", Value::Binary(vec![0; 65_537]));
        assert!(
            matches!(validate_entity(&e), Err(Violation::PropertyValueTooLarge { ref property, .. }) if property == "zz")
        );
        e.insert("zz", 1);
        assert!(matches!(validate_entity(&e), Err(Violation::EntityTooLarge { .. })));
    }

    #[test]
    fn entity_size_limit_is_1_mib() {
        // 16 binary properties of just under 64 KiB land close to 1 MiB; tune the last one to
        // hit the limit exactly.
        let mut e = Entity::new("p", "r");
        let base = entity_size(&e);
        let per_prop_overhead = |name: &str| 8 + 2 * name.len() + 4;
        let mut remaining = MAX_ENTITY_SIZE - base;
        for i in 0..16 {
            let name = format!("b{i:02}");
            let len = (remaining - per_prop_overhead(&name)).min(65_000);
            e.insert(name.clone(), Value::Binary(vec![0; len]));
            remaining -= per_prop_overhead(&name) + len;
        }
        let name = "last";
        let len = remaining - per_prop_overhead(name);
        e.insert(name, Value::Binary(vec![0; len]));
        assert_eq!(entity_size(&e), MAX_ENTITY_SIZE);
        assert!(validate_entity(&e).is_ok());
        e.insert(name, Value::Binary(vec![0; len + 1]));
        assert!(
            matches!(validate_entity(&e), Err(Violation::EntityTooLarge { size, .. }) if size == MAX_ENTITY_SIZE + 1)
        );
    }

    #[test]
    fn table_names() {
        for ok in ["abc", "A12", &format!("a{}", "b".repeat(62))] {
            assert!(validate_table_name(ok).is_ok(), "{ok}");
        }
        for bad in ["ab", &format!("a{}", "b".repeat(63)), "1abc", "ab-c", "tables", "Tables", "", "abé"] {
            assert!(validate_table_name(bad).is_err(), "{bad}");
        }
        let short = crate::Error::invalid(validate_table_name("ab").expect_err("too short"));
        assert_eq!(short.code(), Some(&crate::ErrorCode::OutOfRangeInput));
        let chars = crate::Error::invalid(validate_table_name("a-bc").expect_err("bad char"));
        assert_eq!(chars.code(), Some(&crate::ErrorCode::InvalidResourceName));
    }
}
