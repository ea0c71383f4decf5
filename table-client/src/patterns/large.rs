//! The large-entity pattern: one string or binary value larger than a property's 64 KiB is
//! split across properties `<Name>_0`, `<Name>_1`, ... of the same entity (each at most
//! 64 KiB), so it is still written and read atomically with its entity, up to the entity's
//! 1 MiB (beyond that, the guide's advice is blob storage).
//!
//! Invariants: `<Name>_Parts` (`Edm.Int32`) holds the number of parts, so parts left behind by
//! a merge of a shorter value are never joined; strings are cut at character boundaries into
//! at most 32 768 UTF-16 code units, binary values into at most 65 536 bytes; every part has
//! the value's type.
//!
//! Encryption: the parts are properties of the entity, written by its client, so a client with
//! an encryption policy encrypts the parts its resolver names (name them with
//! [`LargeProperty::holds`]), each bound to the entity's keys; a move of the entity encrypts
//! them again for its new keys.

use table_core::{
    Entity, Error, MAX_ENTITY_SIZE, MAX_PROPERTY_VALUE_SIZE, Result, Value, Violation, entity_size,
    utf16_len, validate_property_name,
};

use crate::error;

/// A string or binary property stored in parts, so it can exceed 64 KiB.
///
/// ```rust
/// use table_client::patterns::LargeProperty;
/// use table_client::{Entity, TableServiceClient, Value};
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let table = service.create_table("Employees").await?;
/// let cv = LargeProperty::new("Cv")?;
/// let text = "experience ".repeat(10_000); // 110,000 characters: over one property's 64 KiB
/// let mut ann = Entity::new("Sales", "empid_000001").with("Name", "Ann");
/// let parts = cv.store(&mut ann, text.clone())?;
/// assert!(parts > 1);
/// table.insert(ann).await?;
/// let stored = table.get("Sales", "empid_000001").await?;
/// assert_eq!(cv.load(&stored)?, Some(Value::from(text)));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargeProperty {
    name: String,
}

impl LargeProperty {
    /// The large property `name`: parts `<name>_0`, `<name>_1`, ... and the count
    /// `<name>_Parts`. Fails when those are not valid property names.
    pub fn new(name: &str) -> Result<Self> {
        let property = LargeProperty { name: name.to_owned() };
        // `_Parts` is the longest suffix; the part names differ only in what follows `_`.
        validate_property_name(&property.count_name()).map_err(Error::invalid)?;
        validate_property_name(&property.part_name(0)).map_err(Error::invalid)?;
        Ok(property)
    }

    /// The name of part `index` (`Body_0`).
    pub fn part_name(&self, index: usize) -> String {
        format!("{}_{index}", self.name)
    }

    /// `true` for the name of one of this property's parts (`Body_0`, `Body_1`, ...), not its
    /// count: what an [encryption resolver](crate::encryption::EncryptionPolicy::encrypt_properties)
    /// names to store a large string encrypted, part by part (a binary value cannot be).
    ///
    /// ```
    /// use table_client::encryption::{AesKeyWrap, EncryptionPolicy};
    /// use table_client::patterns::LargeProperty;
    ///
    /// # fn main() -> table_client::Result<()> {
    /// let cv = LargeProperty::new("Cv")?;
    /// let policy = EncryptionPolicy::new(AesKeyWrap::new("local:key1", [7; 32]))
    ///     .encrypt_properties(move |_pk, _rk, name| cv.holds(name));
    /// # let _ = policy;
    /// # Ok(())
    /// # }
    /// ```
    pub fn holds(&self, property: &str) -> bool {
        self.is_own(property) && property != self.count_name()
    }

    fn count_name(&self) -> String {
        format!("{}_Parts", self.name)
    }

    /// `true` for this property's count and for any `<name>_<digits>` part.
    fn is_own(&self, property: &str) -> bool {
        property.strip_prefix(&self.name).is_some_and(|rest| {
            rest == "_Parts"
                || rest
                    .strip_prefix('_')
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    }

    /// Stores `value` (a `String` or `Binary`) in `entity` as parts, replacing any parts of an
    /// earlier value. Fails, leaving `entity` as it was, for another value type, or with
    /// `EntityTooLarge` when the entity would exceed 1 MiB. Returns the number of parts.
    pub fn store(&self, entity: &mut Entity, value: impl Into<Value>) -> Result<usize> {
        let parts = split(value.into()).ok_or_else(|| {
            error::invalid_input(format!(
                "the large property `{}` holds only strings and binary values",
                self.name
            ))
        })?;
        let old: Vec<(String, Value)> =
            entity.properties.extract_if(.., |name, _| self.is_own(name)).collect();
        let count = parts.len();
        for (index, part) in parts.into_iter().enumerate() {
            entity.insert(self.part_name(index), part);
        }
        entity.insert(self.count_name(), i32::try_from(count).unwrap_or(i32::MAX));
        let size = entity_size(entity);
        if size > MAX_ENTITY_SIZE {
            entity.properties.retain(|name, _| !self.is_own(name));
            entity.properties.extend(old);
            return Err(Error::invalid(Violation::EntityTooLarge {
                key: entity.key().to_string(),
                size,
                max: MAX_ENTITY_SIZE,
            }));
        }
        Ok(count)
    }

    /// The value stored in `entity`, joined from its parts; `None` when the entity has none.
    /// A missing part or parts of mixed types is a `Decode` error naming the part.
    pub fn load(&self, entity: &Entity) -> Result<Option<Value>> {
        let Some(count) = entity.get(&self.count_name()) else {
            return Ok(None);
        };
        let count = match count {
            Value::Int32(n) => usize::try_from(*n).ok(),
            _ => None,
        }
        .ok_or_else(|| self.corrupt(format!("{} is not a part count", self.count_name())))?;
        let mut joined: Option<Value> = None;
        for index in 0..count {
            let name = self.part_name(index);
            let part = entity.get(&name).ok_or_else(|| self.corrupt(format!("part {name} is missing")))?;
            joined = Some(match (joined, part) {
                (None, Value::String(s)) => Value::String(s.clone()),
                (None, Value::Binary(b)) => Value::Binary(b.clone()),
                (Some(Value::String(mut acc)), Value::String(s)) => {
                    acc.push_str(s);
                    Value::String(acc)
                }
                (Some(Value::Binary(mut acc)), Value::Binary(b)) => {
                    acc.extend_from_slice(b);
                    Value::Binary(acc)
                }
                _ => return Err(self.corrupt(format!("part {name} has another type"))),
            });
        }
        joined.map(Some).ok_or_else(|| self.corrupt(format!("{} is 0", self.count_name())))
    }

    /// [`load`](Self::load), then removes the parts from `entity` (e.g. before reading the
    /// rest of it as a typed entity).
    pub fn take(&self, entity: &mut Entity) -> Result<Option<Value>> {
        let value = self.load(entity)?;
        entity.properties.retain(|name, _| !self.is_own(name));
        Ok(value)
    }

    fn corrupt(&self, why: String) -> Error {
        error::decode(format!("the large property `{}` cannot be read: {why}", self.name))
    }
}

/// A string or binary value cut into parts of at most 64 KiB (at least one part, so an empty
/// value keeps its type); `None` for other types.
fn split(value: Value) -> Option<Vec<Value>> {
    match value {
        Value::String(s) => {
            let max_units = MAX_PROPERTY_VALUE_SIZE / 2;
            let mut parts = vec![String::new()];
            let mut units = 0;
            for c in s.chars() {
                if units + c.len_utf16() > max_units {
                    parts.push(String::new());
                    units = 0;
                }
                units += c.len_utf16();
                parts.last_mut()?.push(c);
            }
            debug_assert!(parts.iter().all(|p| utf16_len(p) <= max_units));
            Some(parts.into_iter().map(Value::String).collect())
        }
        Value::Binary(b) if b.is_empty() => Some(vec![Value::Binary(b)]),
        Value::Binary(b) => {
            Some(b.chunks(MAX_PROPERTY_VALUE_SIZE).map(|c| Value::Binary(c.to_vec())).collect())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use table_core::ErrorKind;

    use super::*;

    #[test]
    fn strings_split_at_character_boundaries_and_join_back() {
        let text: String = "a😀".repeat(20_000);
        let body = LargeProperty::new("Body").unwrap();
        let mut e = Entity::new("p", "r");
        let parts = body.store(&mut e, text.clone()).unwrap();
        assert_eq!(parts, 2);
        for i in 0..parts {
            let part = e.get(&body.part_name(i)).unwrap();
            assert!(part.stored_size() <= MAX_PROPERTY_VALUE_SIZE);
        }
        assert_eq!(body.load(&e).unwrap(), Some(Value::String(text)));
    }

    #[test]
    fn shorter_values_drop_old_parts_and_empty_values_keep_their_type() {
        let body = LargeProperty::new("Body").unwrap();
        let mut e = Entity::new("p", "r").with("Body_Other", 1);
        body.store(&mut e, vec![7u8; 200_000]).unwrap();
        assert_eq!(body.store(&mut e, Vec::<u8>::new()).unwrap(), 1);
        assert_eq!(e.properties.len(), 3, "{:?}", e.properties.keys());
        assert_eq!(body.take(&mut e).unwrap(), Some(Value::Binary(vec![])));
        assert_eq!(e.properties.len(), 1);
        assert_eq!(body.load(&e).unwrap(), None);
    }

    #[test]
    fn a_failed_store_leaves_the_entity_as_it_was() {
        let body = LargeProperty::new("Body").unwrap();
        let mut e = Entity::new("p", "r");
        body.store(&mut e, "x").unwrap();
        let before = e.clone();
        let err = body.store(&mut e, vec![0u8; 1_100_000]).unwrap_err();
        assert_eq!(err.code().map(|c| c.as_str()), Some("EntityTooLarge"));
        assert_eq!(e, before);
        assert_eq!(body.store(&mut e, 5).unwrap_err().kind(), ErrorKind::InvalidInput);
        assert_eq!(e, before);
    }

    #[test]
    fn holds_names_the_parts_only() {
        let body = LargeProperty::new("Body").unwrap();
        assert!(body.holds("Body_0") && body.holds("Body_12"));
        for other in ["Body_Parts", "Body", "Body_", "Body_x", "Bodyx_0", "Other_0"] {
            assert!(!body.holds(other), "{other}");
        }
    }

    #[test]
    fn damaged_parts_are_decode_errors() {
        let body = LargeProperty::new("Body").unwrap();
        let mut e = Entity::new("p", "r");
        body.store(&mut e, "x".repeat(40_000)).unwrap();
        e.insert("Body_1", vec![1u8]);
        assert_eq!(body.load(&e).unwrap_err().kind(), ErrorKind::Decode);
        e.properties.remove("Body_1");
        assert!(body.load(&e).unwrap_err().to_string().contains("Body_1"));
        assert!(LargeProperty::new("9x").is_err());
    }

    proptest::proptest! {
        // Each case moves megabytes; a few dozen cover the boundaries.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        #[test]
        fn any_value_joins_back_from_parts_within_the_property_limit(
            text in proptest::string::string_regex("[a-z\u{e9}\u{1f600}\u{ffff}]{0,40000}").unwrap(),
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200_000),
        ) {
            let property = LargeProperty::new("V").unwrap();
            for value in [Value::String(text.clone()), Value::Binary(bytes.clone())] {
                let mut e = Entity::new("p", "r");
                let parts = property.store(&mut e, value.clone()).unwrap();
                for i in 0..parts {
                    let part = e.get(&property.part_name(i)).unwrap();
                    proptest::prop_assert!(part.stored_size() <= MAX_PROPERTY_VALUE_SIZE);
                }
                proptest::prop_assert_eq!(property.load(&e).unwrap(), Some(value));
            }
        }
    }
}
