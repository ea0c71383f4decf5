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

use std::marker::PhantomData;

use chrono::{DateTime, Utc};

use crate::filter::{CompareOp, Filter};
use crate::value::Value;

use super::field::PropertyValue;
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
