//! Typed filter columns: `Employee::AGE.gt(30)` instead of a hand-written `"Age gt 30"`.
//!
//! A [`Column<T>`] knows its property name and the Rust type of its values, so a comparison
//! can only take a value of that type, and the literal is printed with the EDM type the field
//! is stored as (an `i64` column prints `30L`, an `i32` column `30`): the service compares an
//! Int32 property with an Int64 literal as "not comparable", so the wrong literal type would
//! silently match nothing.
//!
//! A comparison returns a [`Filter`] rather than a `Result`, so that filters compose; a value
//! the service cannot take is caught by [`Filter::check_limits`], which every query runs
//! before its first request, on either backend. For a double column that is NaN or an
//! infinity (`Employee::SCORE.gt(f64::INFINITY)`): no literal for them is portable, so the
//! query fails with [`Violation::FilterNonFiniteDouble`](crate::Violation::FilterNonFiniteDouble)
//! naming the property.
//!
//! A [`KeyColumn<T, K>`] is the column of a `key_only` field: it compares the key the field is
//! stored in, with the value written as the key template writes it. `K` records what the
//! template allows (see [`KeyColumn`]); a comparison it does not allow is a compile error
//! naming the reason (`#[diagnostic::on_unimplemented]` on [`KeyEquality`] and [`KeyOrder`]).

use std::marker::PhantomData;

use chrono::{DateTime, Utc};

use crate::error::KeyName;
use crate::filter::{CompareOp, Filter};
use crate::keys::KeySpec;
use crate::value::Value;

use super::field::{KeyValue, OrderedKeyValue, PropertyValue};
use super::grammar;

/// A property of entities of some type, for building typed filters.
pub struct Column<T> {
    name: &'static str,
    // `fn() -> T` keeps the column `Send + Sync + Copy` whatever `T` is.
    _type: PhantomData<fn() -> T>,
}

impl<T> Column<T> {
    /// The column of the property `name`.
    pub const fn new(name: &'static str) -> Self {
        Column { name, _type: PhantomData }
    }

    /// The property name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T> Clone for Column<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Column<T> {}

impl<T> std::fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Column").field(&self.name).finish()
    }
}

/// A value a `Column<T>` can be compared with: a `T`, or a `&str` for string columns.
pub trait ColumnValue<T> {
    /// The literal, with `T`'s EDM type.
    fn into_literal(self) -> Value;
}

impl<T: PropertyValue> ColumnValue<T> for T {
    fn into_literal(self) -> Value {
        self.to_value()
    }
}

impl ColumnValue<String> for &str {
    fn into_literal(self) -> Value {
        Value::String(self.to_owned())
    }
}

impl ColumnValue<String> for &String {
    fn into_literal(self) -> Value {
        Value::String(self.clone())
    }
}

macro_rules! comparisons {
    ($($method:ident => $op:ident, $doc:literal;)*) => {
        impl<T: PropertyValue> Column<T> {
            /// The comparison `name op value`.
            pub fn compare(self, op: CompareOp, value: impl ColumnValue<T>) -> Filter {
                Filter::Compare {
                    property: self.name.to_owned(),
                    op,
                    value: value.into_literal(),
                }
            }
            $(
                #[doc = $doc]
                pub fn $method(self, value: impl ColumnValue<T>) -> Filter {
                    self.compare(CompareOp::$op, value)
                }
            )*
        }
    };
}
comparisons! {
    eq => Eq, "`name eq value`";
    ne => Ne, "`name ne value` (false when the property is missing, as every comparison)";
    gt => Gt, "`name gt value`";
    ge => Ge, "`name ge value`";
    lt => Lt, "`name lt value`";
    le => Le, "`name le value`";
}

/// The filter column of a `key_only` field, stored only in a key: it compares the key
/// (`PartitionKey` or `RowKey`) with the value written as the key template writes it, so
/// `Employee::DEPARTMENT.eq("Sales")` is `PartitionKey eq 'Sales'` for `partition_key =
/// "{department}"`, and `Employee::ID.ge(100)` is `RowKey ge '000100'` for `row_key = "{id:06}"`.
///
/// `K` says what the key allows, decided by the derive from the template:
///
/// | `K` | the field | comparisons |
/// |---|---|---|
/// | [`OrderedWholeKey`] | is the whole key, written as is (a string) or in a spec that keeps its order (`{n:06}`, `{n:ordered}`, `{at:ticks}`) | all |
/// | [`UnorderedWholeKey`] | is the whole key, in a spec that does not keep its order (`{at:inverted_ticks}`, an integer or instant without a spec, a GUID, a bool, an enum) | `eq`, `ne` |
/// | [`DateFormattedKey`] | is the whole key, written with a date format (which can drop part of the value) | none |
/// | [`PartOfCompositeKey`] | shares its key with literal text or other fields | none |
///
/// A comparison the key does not allow is a compile error that says why; the type's key helpers
/// (`partition_key_for(..)`, `row_key_prefix(..)`, `row_key_range(..)`) build keys and key ranges
/// from field values instead. A value the spec cannot write (a negative number for `{n:06}`,
/// a number with more digits) equals no key, and compares as below or above every key.
pub struct KeyColumn<T, K> {
    key: KeyName,
    spec: KeySpec,
    // `fn() -> ..` keeps the column `Send + Sync + Copy` whatever the types are.
    _type: PhantomData<fn() -> (T, K)>,
}

/// [`KeyColumn`]: the field is its whole key, in a spec that keeps its order.
#[derive(Debug, Clone, Copy)]
pub struct OrderedWholeKey;
/// [`KeyColumn`]: the field is its whole key, in a spec that does not keep its order.
#[derive(Debug, Clone, Copy)]
pub struct UnorderedWholeKey;
/// [`KeyColumn`]: the field is its whole key, written with a date format.
#[derive(Debug, Clone, Copy)]
pub struct DateFormattedKey;
/// [`KeyColumn`]: the field is only part of its key.
#[derive(Debug, Clone, Copy)]
pub struct PartOfCompositeKey;

/// The key columns that compare with `eq` and `ne`.
#[diagnostic::on_unimplemented(
    message = "a `key_only` field that is `{Self}` has no filter column",
    label = "this field is stored only in a key, and the key alone cannot be compared with it",
    note = "only a field that is its whole key (`partition_key = \"{{department}}\"`), in a spec that \
            writes each value once (not a date format), is filtered through its key; build the key \
            from field values with the type's helpers instead: `partition_key_for(..)` with \
            `Query::partition`, `row_key_for(..)`, `row_key_prefix(..)` or `row_key_range(..)` with \
            `TypedTable::query_range_in`"
)]
pub trait KeyEquality {}
impl KeyEquality for OrderedWholeKey {}
impl KeyEquality for UnorderedWholeKey {}

/// The key columns that also compare with `gt`, `ge`, `lt` and `le`.
#[diagnostic::on_unimplemented(
    message = "a `key_only` field that is `{Self}` cannot be compared with `gt`, `ge`, `lt` or `le`",
    label = "its key does not sort in the field's order",
    note = "only a field that is its whole key, written as is (a string) or in a spec that keeps its \
            order (`{{n:06}}`, `{{n:ordered}}`, `{{at:ticks}}`), compares by order (`inverted_ticks` sorts \
            newest first, a number without a spec sorts as text); use the type's key range helpers \
            instead: `partition_key_range(..)`, `row_key_range(..)`, `row_key_prefix(..)`"
)]
pub trait KeyOrder {}
impl KeyOrder for OrderedWholeKey {}

impl<T, K> KeyColumn<T, K> {
    /// The column of the field written into `key` with `spec`, as its whole key.
    pub const fn new(key: KeyName, spec: KeySpec) -> Self {
        KeyColumn { key, spec, _type: PhantomData }
    }

    /// The key the field is stored in.
    pub const fn key(&self) -> KeyName {
        self.key
    }

    fn compare(&self, op: CompareOp, literal: String) -> Filter {
        Filter::Compare { property: self.key.to_string(), op, value: Value::String(literal) }
    }
}

impl<T, K> Clone for KeyColumn<T, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, K> Copy for KeyColumn<T, K> {}

impl<T, K> std::fmt::Debug for KeyColumn<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("KeyColumn").field(&self.key).field(&self.spec).finish()
    }
}

/// A value a `KeyColumn<T, _>` compares with: a `T`, or a `&str` for a string field.
pub trait KeyOperand<T> {
    /// The value as a key segment encodes it.
    type Value: KeyValue + ?Sized;

    /// The value to encode.
    fn key_value(&self) -> &Self::Value;
}

impl<T: KeyValue> KeyOperand<T> for T {
    type Value = T;

    fn key_value(&self) -> &T {
        self
    }
}

impl KeyOperand<String> for &str {
    type Value = str;

    fn key_value(&self) -> &str {
        self
    }
}

impl KeyOperand<String> for &String {
    type Value = String;

    fn key_value(&self) -> &String {
        self
    }
}

/// Below every key: the empty string sorts first.
const BELOW_EVERY_KEY: &str = "";
/// Above every key written by an order-keeping spec that can fail to write a value: those
/// write digits only, and `:` follows `9`.
const ABOVE_EVERY_DIGIT_KEY: &str = ":";

impl<T, K> KeyColumn<T, K> {
    /// `key eq value`.
    pub fn eq<V: KeyOperand<T>>(self, value: V) -> Filter
    where
        K: KeyEquality,
    {
        self.equality(CompareOp::Eq, value)
    }

    /// `key ne value`.
    pub fn ne<V: KeyOperand<T>>(self, value: V) -> Filter
    where
        K: KeyEquality,
    {
        self.equality(CompareOp::Ne, value)
    }

    /// `key gt value`.
    pub fn gt<V: KeyOperand<T>>(self, value: V) -> Filter
    where
        K: KeyOrder,
        V::Value: OrderedKeyValue,
    {
        self.order(CompareOp::Gt, value)
    }

    /// `key ge value`.
    pub fn ge<V: KeyOperand<T>>(self, value: V) -> Filter
    where
        K: KeyOrder,
        V::Value: OrderedKeyValue,
    {
        self.order(CompareOp::Ge, value)
    }

    /// `key lt value`.
    pub fn lt<V: KeyOperand<T>>(self, value: V) -> Filter
    where
        K: KeyOrder,
        V::Value: OrderedKeyValue,
    {
        self.order(CompareOp::Lt, value)
    }

    /// `key le value`.
    pub fn le<V: KeyOperand<T>>(self, value: V) -> Filter
    where
        K: KeyOrder,
        V::Value: OrderedKeyValue,
    {
        self.order(CompareOp::Le, value)
    }

    fn equality<V: KeyOperand<T>>(&self, op: CompareOp, value: V) -> Filter {
        // A value the spec cannot write equals no key, and no key written by a spec that can
        // fail (fixed-width digits) is empty.
        let literal = value.key_value().encode_key(&self.spec).unwrap_or_else(|_| BELOW_EVERY_KEY.to_owned());
        self.compare(op, literal)
    }

    fn order<V: KeyOperand<T>>(&self, op: CompareOp, value: V) -> Filter
    where
        V::Value: OrderedKeyValue,
    {
        let value = value.key_value();
        let literal =
            value.encode_key(&self.spec).unwrap_or_else(|_| match value.unwritable_side(&self.spec) {
                std::cmp::Ordering::Less => BELOW_EVERY_KEY.to_owned(),
                _ => ABOVE_EVERY_DIGIT_KEY.to_owned(),
            });
        self.compare(op, literal)
    }
}

/// The `PartitionKey` system property.
pub const PARTITION_KEY: Column<String> = Column::new(grammar::PARTITION_KEY);
/// The `RowKey` system property.
pub const ROW_KEY: Column<String> = Column::new(grammar::ROW_KEY);
/// The `Timestamp` system property (the time of the last write).
pub const TIMESTAMP: Column<DateTime<Utc>> = Column::new(grammar::TIMESTAMP);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_take_the_column_type() {
        let Filter::Compare { value, .. } = Column::<u32>::new("Id").gt(5) else {
            unreachable!("a comparison")
        };
        assert_eq!(value, Value::Int64(5));
        let Filter::Compare { value, op, property } = PARTITION_KEY.eq("Sales") else {
            unreachable!("a comparison")
        };
        assert_eq!((value, op, property.as_str()), (Value::from("Sales"), CompareOp::Eq, "PartitionKey"));
    }
}
