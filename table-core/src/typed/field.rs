//! How one Rust field becomes one property value, or one key segment, and back.
//!
//! The mapping of each Rust type to its EDM type is the table on [`PropertyValue`] (this
//! module is private, so its users read it there).
//!
//! Reading never panics: a missing property or one of another EDM type is a [`ValueError`],
//! which the derive turns into an error naming the property.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::convert::identity;

use chrono::{DateTime, Datelike, Utc};
use uuid::Uuid;

use crate::datetime::{format_datetime, truncate_to_ticks};
use crate::keys::{self, KeyCodecError, KeySpec, KeyText};
use crate::value::ValueRef;
use crate::value::{EdmType, Value};

use super::encode::FieldValue;

/// Why a property value cannot become a field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// The property is absent and the field is not an `Option`.
    #[error("the property is missing and the field is not an Option")]
    Missing,
    /// The property has another EDM type than the field maps to.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// The EDM type the field maps to.
        expected: EdmType,
        /// The EDM type found.
        found: EdmType,
    },
    /// The value has the right type but does not fit the field.
    #[error("{0}")]
    Invalid(String),
}

/// A Rust type stored as one property value of one EDM type.
///
/// Mapping of the types implemented here (each round-trips its type's full range exactly):
///
/// | Rust | EDM type | note |
/// |---|---|---|
/// | `String` | `Edm.String` | |
/// | `bool` | `Edm.Boolean` | |
/// | `i8`, `i16`, `u8`, `u16` | `Edm.Int32` | as the service and the other SDKs store small integers; reads also accept an `Edm.Int64`, and a value out of the type's range is an error |
/// | `i32` | `Edm.Int32` | |
/// | `i64` | `Edm.Int64` | |
/// | `u32` | `Edm.Int64` | the full range fits; reads also accept a non-negative `Edm.Int32` |
/// | `u64` | `Edm.Int64` | two's complement bit-cast, as .NET's `unchecked((long)ulong)`: values above `i64::MAX` are stored negative, so filters compare them as negative numbers |
/// | `f64` | `Edm.Double` | NaN and the infinities included |
/// | `f32` | `Edm.Double` | widened exactly; reads accept only a double that is exactly an `f32` (NaN and the infinities included), so `0.1` written as a double is an error, not rounded |
/// | `DateTime<Utc>` | `Edm.DateTime` | truncated to 100 ns, the service's precision |
/// | `Uuid` | `Edm.Guid` | |
/// | `Vec<u8>` | `Edm.Binary` | |
/// | `Option<T>` | as `T` | `None` is an absent property |
///
/// `#[derive(PropertyValue)]` implements it for unit-only enums (stored as strings), and you
/// can implement it for your own newtypes.
pub trait PropertyValue: Sized {
    /// The EDM type of the stored value.
    const EDM_TYPE: EdmType;

    /// The value to store: the same on every call, as a write may ask more than once (the
    /// embedded engine checks a value, then encodes it). When a value of another size comes
    /// back, the engine's write fails with `Violation::UnstableValues` and stores nothing; one
    /// of the same size (another number, or a date out of the service's range) is stored
    /// unchecked, though reads of it still never panic.
    fn to_value(&self) -> Value;

    /// The field from a stored value.
    fn from_value(value: Value) -> Result<Self, ValueError>;

    /// [`to_value`](Self::to_value), borrowed from the field where it can be, for writes that
    /// build no `Value` (the embedded engine's). Must equal `to_value`, as the default does.
    #[doc(hidden)]
    fn to_field_value(&self) -> FieldValue<'_> {
        FieldValue::owned(self.to_value())
    }

    /// [`from_value`](Self::from_value) of a value a reader lends where it holds it (the
    /// embedded engine's stored row), for reads that build no `Value`. Must equal `from_value`
    /// of the owned value, as the default does. The built-in types state their EDM rule here,
    /// once: their `from_value` lends the owned value to it.
    #[doc(hidden)]
    #[inline]
    fn from_stored(value: ValueRef<'_>) -> Result<Self, ValueError> {
        Self::from_value(value.to_value())
    }
}

/// A field stored as one property: a [`PropertyValue`] (the property must be present) or an
/// `Option` of one (an absent property is `None`, and `None` is not written).
pub trait Property: Sized {
    /// The value type, which typed filter columns compare against.
    type Value: PropertyValue;

    /// The value to store, `None` to leave the property out.
    fn to_property(&self) -> Option<Value>;

    /// The field from the property, `None` when the entity does not have it.
    fn from_property(value: Option<Value>) -> Result<Self, ValueError>;

    /// [`from_property`](Self::from_property) of a lent value (see
    /// [`PropertyValue::from_stored`]). Must equal `from_property` of the owned value, as the
    /// default does.
    #[doc(hidden)]
    #[inline]
    fn from_stored_property(value: Option<ValueRef<'_>>) -> Result<Self, ValueError> {
        Self::from_property(value.map(ValueRef::to_value))
    }

    /// [`to_property`](Self::to_property), borrowed from the field where it can be (see
    /// [`PropertyValue::to_field_value`]).
    #[doc(hidden)]
    fn to_field(&self) -> Option<FieldValue<'_>> {
        self.to_property().map(FieldValue::owned)
    }
}

impl<T: PropertyValue> Property for T {
    type Value = T;

    fn to_property(&self) -> Option<Value> {
        Some(self.to_value())
    }

    fn to_field(&self) -> Option<FieldValue<'_>> {
        Some(self.to_field_value())
    }

    fn from_property(value: Option<Value>) -> Result<Self, ValueError> {
        T::from_value(value.ok_or(ValueError::Missing)?)
    }

    #[inline]
    fn from_stored_property(value: Option<ValueRef<'_>>) -> Result<Self, ValueError> {
        T::from_stored(value.ok_or(ValueError::Missing)?)
    }
}

impl<T: PropertyValue> Property for Option<T> {
    type Value = T;

    fn to_property(&self) -> Option<Value> {
        self.as_ref().map(T::to_value)
    }

    fn to_field(&self) -> Option<FieldValue<'_>> {
        self.as_ref().map(T::to_field_value)
    }

    fn from_property(value: Option<Value>) -> Result<Self, ValueError> {
        value.map(T::from_value).transpose()
    }

    #[inline]
    fn from_stored_property(value: Option<ValueRef<'_>>) -> Result<Self, ValueError> {
        value.map(T::from_stored).transpose()
    }
}

fn wrong_type<T>(expected: EdmType, found: ValueRef<'_>) -> Result<T, ValueError> {
    Err(ValueError::WrongType { expected, found: found.edm_type() })
}

// The rules below are each written once, in `from_stored`, over a lent value. `from_value`
// takes an owned value of the field's own variant as it is (a `String` or `Vec<u8>` keeps its
// buffer) and lends any other to `from_stored`, whose rule then gives the fault. `from_stored`
// is inlinable, so that a decoder compiled for the engine's row reader matches a stored value
// away where it is read, and builds no `Value`.

/// `from_value` of a type stored as exactly the `Value` variant `$variant` (see above).
macro_rules! from_own_variant {
    ($variant:ident) => {
        #[inline]
        fn from_value(value: Value) -> Result<Self, ValueError> {
            match value {
                Value::$variant(v) => Ok(v),
                other => Self::from_stored(ValueRef::of(&other)),
            }
        }
    };
}

/// `from_value` of a type that converts the stored value rather than keeping it as it is
/// (widened integers, `f32`, `u64`): the owned value lent to `from_stored` (see above).
macro_rules! from_lent_value {
    () => {
        #[inline]
        fn from_value(value: Value) -> Result<Self, ValueError> {
            Self::from_stored(ValueRef::of(&value))
        }
    };
}

/// Implements `PropertyValue` for a `Copy` type stored as exactly one `Value` variant;
/// `$stored` makes the value a field stores (itself, or a `DateTime` truncated to the
/// service's 100 ns ticks).
macro_rules! exact_value {
    ($($ty:ty => $variant:ident, $stored:expr);* $(;)?) => {$(
        impl PropertyValue for $ty {
            const EDM_TYPE: EdmType = EdmType::$variant;

            fn to_value(&self) -> Value {
                Value::$variant($stored(*self))
            }

            #[inline]
            fn to_field_value(&self) -> FieldValue<'_> {
                FieldValue::from($stored(*self))
            }

            from_own_variant!($variant);

            #[inline]
            fn from_stored(value: ValueRef<'_>) -> Result<Self, ValueError> {
                match value {
                    ValueRef::$variant(v) => Ok(v),
                    other => wrong_type(EdmType::$variant, other),
                }
            }
        }
    )*};
}
exact_value!(bool => Boolean, identity; i32 => Int32, identity; i64 => Int64, identity;
    f64 => Double, identity; Uuid => Guid, identity; DateTime<Utc> => DateTime, truncate_to_ticks);

/// Implements `PropertyValue` for a type that owns its bytes, stored as exactly one `Value`
/// variant (`$ty => Variant as ValueRef variant`); `$field` borrows the field as the value.
macro_rules! exact_owned_value {
    ($($ty:ty => $variant:ident as $lent:ident, $field:expr);* $(;)?) => {$(
        impl PropertyValue for $ty {
            const EDM_TYPE: EdmType = EdmType::$variant;

            fn to_value(&self) -> Value {
                Value::$variant(self.clone())
            }

            #[inline]
            fn to_field_value(&self) -> FieldValue<'_> {
                FieldValue::from($field(self))
            }

            from_own_variant!($variant);

            #[inline]
            fn from_stored(value: ValueRef<'_>) -> Result<Self, ValueError> {
                match value {
                    ValueRef::$lent(v) => Ok(v.to_owned()),
                    other => wrong_type(EdmType::$variant, other),
                }
            }
        }
    )*};
}
exact_owned_value!(String => String as Str, String::as_str; Vec<u8> => Binary as Binary, Vec::as_slice);

/// Implements `PropertyValue` for an integer type stored widened to a wider EDM integer
/// (`$ty => Variant as wide`). Reads take either EDM integer, as long as the value fits the
/// field: a row another client wrote with the other width (an `Int64` of 5 for a `u8`) reads,
/// and a value out of the field's range is an error, never wrapped.
macro_rules! widened_integer_value {
    ($($ty:ident => $variant:ident as $wide:ident);* $(;)?) => {$(
        impl PropertyValue for $ty {
            const EDM_TYPE: EdmType = EdmType::$variant;

            fn to_value(&self) -> Value {
                Value::$variant($wide::from(*self))
            }

            #[inline]
            fn to_field_value(&self) -> FieldValue<'_> {
                FieldValue::from($wide::from(*self))
            }

            from_lent_value!();

            #[inline]
            fn from_stored(value: ValueRef<'_>) -> Result<Self, ValueError> {
                let n = match value {
                    ValueRef::Int32(n) => i64::from(n),
                    ValueRef::Int64(n) => n,
                    other => return wrong_type(EdmType::$variant, other),
                };
                $ty::try_from(n)
                    .map_err(|_| ValueError::Invalid(format!("{n} is out of range for {}", stringify!($ty))))
            }
        }
    )*};
}
widened_integer_value!(
    // Int64, not a bit-cast Int32: every u32 then compares numerically in filters.
    u32 => Int64 as i64;
    // Int32, as the service and the other SDKs store small integers.
    i8 => Int32 as i32; i16 => Int32 as i32; u8 => Int32 as i32; u16 => Int32 as i32;
);

impl PropertyValue for f32 {
    // Widening to f64 is exact, so every f32 (NaN and the infinities included) is stored as is.
    const EDM_TYPE: EdmType = EdmType::Double;

    fn to_value(&self) -> Value {
        Value::Double(f64::from(*self))
    }

    #[inline]
    fn to_field_value(&self) -> FieldValue<'_> {
        FieldValue::from(f64::from(*self))
    }

    from_lent_value!();

    #[inline]
    fn from_stored(value: ValueRef<'_>) -> Result<Self, ValueError> {
        let wide = f64::from_stored(value)?;
        // A double another client wrote may need more precision or range than an f32 has
        // (0.1, 1e300): refused rather than rounded, so a read never changes the data.
        // `as` rounds to nearest; the value is kept only when widening it back gives `wide`.
        let narrow = wide as f32;
        if f64::from(narrow) == wide || wide.is_nan() {
            Ok(narrow)
        } else {
            Err(ValueError::Invalid(format!("{wide:?} is not exactly representable as f32")))
        }
    }
}

impl PropertyValue for u64 {
    // A bit-cast keeps the whole range in Edm.Int64, readable by .NET as `(ulong)long`.
    const EDM_TYPE: EdmType = EdmType::Int64;

    fn to_value(&self) -> Value {
        Value::Int64(i64::from_ne_bytes(self.to_ne_bytes()))
    }

    #[inline]
    fn to_field_value(&self) -> FieldValue<'_> {
        FieldValue::from(i64::from_ne_bytes(self.to_ne_bytes()))
    }

    from_lent_value!();

    #[inline]
    fn from_stored(value: ValueRef<'_>) -> Result<Self, ValueError> {
        match value {
            ValueRef::Int64(n) => Ok(u64::from_ne_bytes(n.to_ne_bytes())),
            other => wrong_type(EdmType::Int64, other),
        }
    }
}

/// A Rust type that can be one segment of a key template (`{field}` or `{field:spec}`).
///
/// Which specs apply: strings, GUIDs, booleans and derived enums only `{field}`; integers
/// (`i8` to `i64`, `u8` to `u64`) also zero padding (`{id:06}`) and `ordered`;
/// `DateTime<Utc>` also `ticks`, `inverted_ticks` and date formats. `{field}` writes integers in decimal, instants as the service prints them
/// (`2020-01-02T03:04:05.0000000Z`) and GUIDs hyphenated in lower case.
pub trait KeyValue {
    /// The key segment for this value.
    fn encode_key(&self, spec: &KeySpec) -> Result<String, KeyCodecError>;

    /// Appends the key segment to `out` (what [`encode_key`](KeyValue::encode_key) returns); on
    /// error `out` is left as it was. Types whose segment can be written in place override it
    /// so that building a key allocates no segment `String`.
    fn write_key(&self, spec: &KeySpec, out: &mut KeyText) -> Result<(), KeyCodecError> {
        out.push_str(&self.encode_key(spec)?);
        Ok(())
    }

    /// The value from a key segment written by [`encode_key`](KeyValue::encode_key).
    fn decode_key(text: &str, spec: &KeySpec) -> Result<Self, KeyCodecError>
    where
        Self: Sized;

    /// [`decode_key`](KeyValue::decode_key) of a segment the caller may own (a key that is one
    /// field whole, handed over by a reader that owns it): a type that can keep owned text
    /// (`String`) overrides it to spare a copy. On error the text comes back, for the message.
    fn decode_key_cow<'t>(text: Cow<'t, str>, spec: &KeySpec) -> Result<Self, (KeyCodecError, Cow<'t, str>)>
    where
        Self: Sized,
    {
        Self::decode_key(&text, spec).map_err(|e| (e, text))
    }
}

/// A [`KeyValue`] whose order-preserving specs (a string as it is, integers zero padded or
/// `ordered`, instants as `ticks`) write keys that sort as the values do, so that a key column
/// of a field that is its whole key compares with `gt`, `ge`, `lt` and `le`.
pub trait OrderedKeyValue: KeyValue {
    /// Where a value that `spec` cannot write lies: below every value it can (`Less`, e.g. a
    /// negative integer for zero padding) or above them (`Greater`, e.g. too many digits).
    fn unwritable_side(&self, spec: &KeySpec) -> Ordering;
}

impl OrderedKeyValue for str {
    fn unwritable_side(&self, _: &KeySpec) -> Ordering {
        // A string is written as it is, whatever it holds.
        Ordering::Greater
    }
}

impl OrderedKeyValue for String {
    fn unwritable_side(&self, spec: &KeySpec) -> Ordering {
        self.as_str().unwritable_side(spec)
    }
}

impl OrderedKeyValue for DateTime<Utc> {
    fn unwritable_side(&self, _: &KeySpec) -> Ordering {
        // Ticks cover 0001-01-01 to 9999-12-31: a value they cannot write is before or after.
        if self.year() < 1 { Ordering::Less } else { Ordering::Greater }
    }
}

fn unsupported<T>(spec: &KeySpec, ty: &'static str) -> Result<T, KeyCodecError> {
    Err(KeyCodecError::UnsupportedSpec { spec: spec.to_string(), ty })
}

impl KeyValue for str {
    fn encode_key(&self, spec: &KeySpec) -> Result<String, KeyCodecError> {
        encode_by_writing(self, spec)
    }

    fn write_key(&self, spec: &KeySpec, out: &mut KeyText) -> Result<(), KeyCodecError> {
        match spec {
            KeySpec::Plain => {
                out.push_str(self);
                Ok(())
            }
            _ => unsupported(spec, "a string"),
        }
    }
}

impl KeyValue for String {
    fn encode_key(&self, spec: &KeySpec) -> Result<String, KeyCodecError> {
        self.as_str().encode_key(spec)
    }

    fn write_key(&self, spec: &KeySpec, out: &mut KeyText) -> Result<(), KeyCodecError> {
        self.as_str().write_key(spec, out)
    }

    fn decode_key(text: &str, spec: &KeySpec) -> Result<Self, KeyCodecError> {
        match spec {
            KeySpec::Plain => Ok(text.to_owned()),
            _ => unsupported(spec, "String"),
        }
    }

    fn decode_key_cow<'t>(text: Cow<'t, str>, spec: &KeySpec) -> Result<Self, (KeyCodecError, Cow<'t, str>)> {
        match spec {
            KeySpec::Plain => Ok(text.into_owned()),
            _ => unsupported(spec, "String").map_err(|e| (e, text)),
        }
    }
}

/// [`KeyValue::encode_key`] for types that implement [`KeyValue::write_key`] themselves.
fn encode_by_writing<T: KeyValue + ?Sized>(value: &T, spec: &KeySpec) -> Result<String, KeyCodecError> {
    let mut out = KeyText::new();
    value.write_key(spec, &mut out)?;
    Ok(out.into())
}

/// Implements `KeyValue` for an integer type: written in place through [`keys::KeyInt`],
/// read back through the i128 codecs of [`keys`].
macro_rules! integer_key {
    ($($ty:ident),*) => {$(
        impl KeyValue for $ty {
            fn encode_key(&self, spec: &KeySpec) -> Result<String, KeyCodecError> {
                encode_by_writing(self, spec)
            }

            // Inlined: a derived type's key builder passes a constant spec (see `KeyBuilder`).
            #[inline]
            fn write_key(&self, spec: &KeySpec, out: &mut KeyText) -> Result<(), KeyCodecError> {
                let value = keys::KeyInt::from(*self);
                match spec {
                    KeySpec::Plain => keys::write_plain(out, value),
                    KeySpec::ZeroPad(width) => keys::write_zero_padded(out, value, *width)?,
                    KeySpec::Ordered => keys::write_ordered(out, value),
                    _ => return unsupported(spec, stringify!($ty)),
                }
                Ok(())
            }

            // Always inlined: a derived decoder passes a constant spec, so the match on it
            // folds (see `keys::parse_zero_padded`); as a call it cost a key-only field about
            // 90 instructions (callgrind).
            #[inline(always)]
            fn decode_key(text: &str, spec: &KeySpec) -> Result<Self, KeyCodecError> {
                let wide = match spec {
                    KeySpec::Plain => text.parse::<i128>().map_err(|_| KeyCodecError::Malformed {
                        text: text.to_owned(),
                        expected: "a decimal integer".to_owned(),
                    })?,
                    KeySpec::ZeroPad(width) => keys::parse_zero_padded(text, *width)?,
                    KeySpec::Ordered => keys::parse_ordered(text)?,
                    _ => return unsupported(spec, stringify!($ty)),
                };
                $ty::try_from(wide).map_err(|_| KeyCodecError::OutOfRange {
                    value: wide.to_string(),
                    ty: stringify!($ty),
                })
            }
        }
    )*};
}
integer_key!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Implements `OrderedKeyValue` for an integer type: only negative values fall below what a
/// spec writes (zero padding); the rest fall above (too many digits).
macro_rules! ordered_integer_key {
    ($($ty:ident),*) => {$(
        impl OrderedKeyValue for $ty {
            fn unwritable_side(&self, _: &KeySpec) -> Ordering {
                if i128::from(*self) < 0 { Ordering::Less } else { Ordering::Greater }
            }
        }
    )*};
}
ordered_integer_key!(i8, i16, i32, i64, u8, u16, u32, u64);

impl KeyValue for DateTime<Utc> {
    fn encode_key(&self, spec: &KeySpec) -> Result<String, KeyCodecError> {
        match spec {
            KeySpec::Plain => Ok(format_datetime(*self)),
            KeySpec::Ticks => keys::ticks(*self),
            KeySpec::InvertedTicks => keys::inverted_ticks(*self),
            KeySpec::Date(format) => keys::date(*self, format),
            _ => unsupported(spec, "DateTime<Utc>"),
        }
    }

    fn write_key(&self, spec: &KeySpec, out: &mut KeyText) -> Result<(), KeyCodecError> {
        match spec {
            KeySpec::Ticks => keys::write_ticks(out, *self),
            KeySpec::InvertedTicks => keys::write_inverted_ticks(out, *self),
            _ => {
                out.push_str(&self.encode_key(spec)?);
                Ok(())
            }
        }
    }

    fn decode_key(text: &str, spec: &KeySpec) -> Result<Self, KeyCodecError> {
        match spec {
            KeySpec::Plain => crate::datetime::parse_datetime(text).map_err(|_| KeyCodecError::Malformed {
                text: text.to_owned(),
                expected: "an ISO 8601 UTC instant".to_owned(),
            }),
            KeySpec::Ticks => keys::parse_ticks(text),
            KeySpec::InvertedTicks => keys::parse_inverted_ticks(text),
            KeySpec::Date(format) => keys::parse_date(text, format),
            _ => unsupported(spec, "DateTime<Utc>"),
        }
    }
}

impl KeyValue for Uuid {
    fn encode_key(&self, spec: &KeySpec) -> Result<String, KeyCodecError> {
        match spec {
            KeySpec::Plain => Ok(self.hyphenated().to_string()),
            _ => unsupported(spec, "Uuid"),
        }
    }

    fn decode_key(text: &str, spec: &KeySpec) -> Result<Self, KeyCodecError> {
        match spec {
            KeySpec::Plain => Uuid::parse_str(text).map_err(|_| KeyCodecError::Malformed {
                text: text.to_owned(),
                expected: "a GUID".to_owned(),
            }),
            _ => unsupported(spec, "Uuid"),
        }
    }
}

impl KeyValue for bool {
    fn encode_key(&self, spec: &KeySpec) -> Result<String, KeyCodecError> {
        match spec {
            KeySpec::Plain => Ok(self.to_string()),
            _ => unsupported(spec, "bool"),
        }
    }

    fn decode_key(text: &str, spec: &KeySpec) -> Result<Self, KeyCodecError> {
        match (spec, text) {
            (KeySpec::Plain, "true") => Ok(true),
            (KeySpec::Plain, "false") => Ok(false),
            (KeySpec::Plain, _) => Err(KeyCodecError::Malformed {
                text: text.to_owned(),
                expected: "`true` or `false`".to_owned(),
            }),
            _ => unsupported(spec, "bool"),
        }
    }
}

impl<T: KeyValue + ?Sized> KeyValue for &T {
    fn encode_key(&self, spec: &KeySpec) -> Result<String, KeyCodecError> {
        (**self).encode_key(spec)
    }

    fn write_key(&self, spec: &KeySpec, out: &mut KeyText) -> Result<(), KeyCodecError> {
        (**self).write_key(spec, out)
    }

    fn decode_key(_: &str, spec: &KeySpec) -> Result<Self, KeyCodecError>
    where
        Self: Sized,
    {
        unsupported(spec, "a reference")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A value of any EDM type, extremes and the edges of the narrow types' ranges included.
    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            ".{0,8}".prop_map(Value::String),
            any::<i32>().prop_map(Value::Int32),
            prop::sample::select(vec![
                i32::MIN,
                -32_769,
                -129,
                -1,
                0,
                127,
                255,
                256,
                65_535,
                65_536,
                i32::MAX
            ])
            .prop_map(Value::Int32),
            any::<i64>().prop_map(Value::Int64),
            prop::sample::select(vec![i64::MIN, -1, 0, 255, 4_294_967_295, 4_294_967_296, i64::MAX])
                .prop_map(Value::Int64),
            any::<f64>().prop_map(Value::Double),
            any::<f32>().prop_map(|f| Value::Double(f64::from(f))),
            prop::sample::select(vec![f64::NAN, f64::INFINITY, -0.0, 0.1, 5e-324, f64::MAX])
                .prop_map(Value::Double),
            any::<bool>().prop_map(Value::Boolean),
            (-11_644_473_600i64..253_402_300_800, 0u32..1_000_000_000)
                .prop_map(|(s, n)| { Value::DateTime(DateTime::from_timestamp(s, n).expect("in range")) }),
            any::<u128>().prop_map(|g| Value::Guid(Uuid::from_u128(g))),
            proptest::collection::vec(any::<u8>(), 0..8).prop_map(Value::Binary),
        ]
    }

    /// A newtype as users write one: `from_value` only, the default `from_stored`.
    #[derive(Debug)]
    struct Celsius(f64);

    impl PropertyValue for Celsius {
        const EDM_TYPE: EdmType = EdmType::Double;

        fn to_value(&self) -> Value {
            Value::Double(self.0)
        }

        fn from_value(value: Value) -> Result<Self, ValueError> {
            match value {
                Value::Double(d) if d >= -273.15 => Ok(Celsius(d)),
                Value::Double(d) => Err(ValueError::Invalid(format!("{d} is below absolute zero"))),
                other => Err(ValueError::WrongType { expected: EdmType::Double, found: other.edm_type() }),
            }
        }
    }

    /// A field of type `T` (required, and optional) reads a lent value (a reader's
    /// `take_slot_lent`) as it reads the owned one, or an absent one: the same value or fault.
    /// Compared through `Debug`, where NaN equals itself.
    fn lent_reads_as_owned<T: PropertyValue + std::fmt::Debug>(value: &Value) -> Result<(), TestCaseError> {
        let same = |lent: &dyn std::fmt::Debug, owned: &dyn std::fmt::Debug| {
            prop_assert_eq!(
                format!("{lent:?}"),
                format!("{owned:?}"),
                "{:?} as {}",
                value,
                std::any::type_name::<T>()
            );
            Ok(())
        };
        same(&T::from_stored(ValueRef::of(value)), &T::from_value(value.clone()))?;
        same(&T::from_stored_property(Some(ValueRef::of(value))), &T::from_property(Some(value.clone())))?;
        same(
            &Option::<T>::from_stored_property(Some(ValueRef::of(value))),
            &Option::<T>::from_property(Some(value.clone())),
        )?;
        same(&T::from_stored_property(None), &T::from_property(None))?;
        same(&Option::<T>::from_stored_property(None), &Option::<T>::from_property(None))
    }

    proptest! {
        #[test]
        fn every_field_type_reads_a_lent_value_as_the_owned_one(value in any_value()) {
            lent_reads_as_owned::<String>(&value)?;
            lent_reads_as_owned::<bool>(&value)?;
            lent_reads_as_owned::<i32>(&value)?;
            lent_reads_as_owned::<i64>(&value)?;
            lent_reads_as_owned::<f64>(&value)?;
            lent_reads_as_owned::<Uuid>(&value)?;
            lent_reads_as_owned::<Vec<u8>>(&value)?;
            lent_reads_as_owned::<DateTime<Utc>>(&value)?;
            lent_reads_as_owned::<u32>(&value)?;
            lent_reads_as_owned::<i8>(&value)?;
            lent_reads_as_owned::<i16>(&value)?;
            lent_reads_as_owned::<u8>(&value)?;
            lent_reads_as_owned::<u16>(&value)?;
            lent_reads_as_owned::<f32>(&value)?;
            lent_reads_as_owned::<u64>(&value)?;
            lent_reads_as_owned::<Celsius>(&value)?;
        }
    }

    #[test]
    fn missing_and_wrong_types_are_errors() {
        assert_eq!(i32::from_property(None), Err(ValueError::Missing));
        assert_eq!(Option::<i32>::from_property(None), Ok(None));
        assert_eq!(
            i32::from_property(Some(Value::Int64(1))),
            Err(ValueError::WrongType { expected: EdmType::Int32, found: EdmType::Int64 })
        );
        assert!(matches!(u32::from_value(Value::Int64(-1)), Err(ValueError::Invalid(_))));
        assert_eq!(u32::from_value(Value::Int32(7)), Ok(7));
    }

    #[test]
    fn small_integers_are_int32_and_read_either_integer_in_range() {
        assert_eq!((u8::EDM_TYPE, i16::EDM_TYPE), (EdmType::Int32, EdmType::Int32));
        assert_eq!(i8::MIN.to_value(), Value::Int32(-128));
        assert_eq!(u16::MAX.to_value(), Value::Int32(65_535));
        assert_eq!(i8::from_value(Value::Int32(-128)), Ok(i8::MIN));
        assert_eq!(i8::from_value(Value::Int32(127)), Ok(i8::MAX));
        assert_eq!(i16::from_value(Value::Int32(-32_768)), Ok(i16::MIN));
        assert_eq!(u16::from_value(Value::Int32(65_535)), Ok(u16::MAX));
        assert_eq!(u8::from_value(Value::Int32(255)), Ok(u8::MAX));
        assert_eq!(u8::from_value(Value::Int64(200)), Ok(200));
        assert_eq!(i16::from_value(Value::Int64(-300)), Ok(-300));
        let invalid = |message: &str| ValueError::Invalid(message.to_owned());
        assert_eq!(u8::from_value(Value::Int32(256)), Err(invalid("256 is out of range for u8")));
        assert_eq!(u8::from_value(Value::Int32(-1)), Err(invalid("-1 is out of range for u8")));
        assert_eq!(i8::from_value(Value::Int32(128)), Err(invalid("128 is out of range for i8")));
        assert_eq!(i8::from_value(Value::Int32(-129)), Err(invalid("-129 is out of range for i8")));
        assert_eq!(u16::from_value(Value::Int32(65_536)), Err(invalid("65536 is out of range for u16")));
        assert_eq!(i16::from_value(Value::Int32(32_768)), Err(invalid("32768 is out of range for i16")));
        assert_eq!(
            u16::from_value(Value::Int64(i64::MAX)),
            Err(invalid("9223372036854775807 is out of range for u16"))
        );
        assert_eq!(
            i8::from_value(Value::Int64(i64::MIN)),
            Err(invalid("-9223372036854775808 is out of range for i8"))
        );
        assert_eq!(
            u8::from_value(Value::Double(1.0)),
            Err(ValueError::WrongType { expected: EdmType::Int32, found: EdmType::Double })
        );
        assert_eq!(
            Option::<i16>::from_property(Some(Value::from("1"))),
            Err(ValueError::WrongType { expected: EdmType::Int32, found: EdmType::String })
        );
    }

    #[test]
    fn f32_is_a_double_and_reads_only_exact_ones() {
        assert_eq!(f32::EDM_TYPE, EdmType::Double);
        assert_eq!(0.1f32.to_value(), Value::Double(f64::from(0.1f32)));
        assert_eq!(f32::from_value(Value::Double(f64::from(0.1f32))), Ok(0.1));
        for exact in [0.0, -0.0, 1.5, f32::MIN_POSITIVE, f32::MAX, f32::MIN, f32::INFINITY, f32::NEG_INFINITY]
        {
            let read = f32::from_value(exact.to_value());
            assert_eq!(read.map(f32::to_bits), Ok(exact.to_bits()), "{exact}");
        }
        assert!(f32::from_value(Value::Double(f64::NAN)).is_ok_and(f32::is_nan));
        assert!(f32::from_value(f32::NAN.to_value()).is_ok_and(f32::is_nan));
        let invalid = |message: &str| ValueError::Invalid(message.to_owned());
        assert_eq!(
            f32::from_value(Value::Double(0.1)),
            Err(invalid("0.1 is not exactly representable as f32"))
        );
        assert_eq!(
            f32::from_value(Value::Double(1e300)),
            Err(invalid("1e300 is not exactly representable as f32"))
        );
        assert_eq!(
            f32::from_value(Value::Double(5e-324)),
            Err(invalid("5e-324 is not exactly representable as f32"))
        );
        assert_eq!(
            f32::from_value(Value::Int32(1)),
            Err(ValueError::WrongType { expected: EdmType::Double, found: EdmType::Int32 })
        );
    }

    #[test]
    fn small_integer_keys_round_trip_and_refuse_what_does_not_fit() {
        assert_eq!(u16::MAX.encode_key(&KeySpec::ZeroPad(5)), Ok("65535".to_owned()));
        assert_eq!(7u16.encode_key(&KeySpec::ZeroPad(5)), Ok("00007".to_owned()));
        assert_eq!(i8::MIN.encode_key(&KeySpec::Plain), Ok("-128".to_owned()));
        assert_eq!(i8::MIN.encode_key(&KeySpec::Ordered), (-128i64).encode_key(&KeySpec::Ordered));
        assert_eq!(u8::decode_key("255", &KeySpec::Plain), Ok(u8::MAX));
        assert_eq!(i16::decode_key("-32768", &KeySpec::Plain), Ok(i16::MIN));
        assert_eq!(u16::decode_key("65535", &KeySpec::ZeroPad(5)), Ok(u16::MAX));
        let ordered = i8::MAX.encode_key(&KeySpec::Ordered).unwrap();
        assert_eq!(i8::decode_key(&ordered, &KeySpec::Ordered), Ok(i8::MAX));
        let out_of_range = |value: &str, ty| KeyCodecError::OutOfRange { value: value.to_owned(), ty };
        assert_eq!(u8::decode_key("256", &KeySpec::Plain), Err(out_of_range("256", "u8")));
        assert_eq!(u8::decode_key("-1", &KeySpec::Plain), Err(out_of_range("-1", "u8")));
        assert_eq!(u16::decode_key("65536", &KeySpec::ZeroPad(5)), Err(out_of_range("65536", "u16")));
        assert_eq!(i8::decode_key("-129", &KeySpec::Plain), Err(out_of_range("-129", "i8")));
        let above = 32_768u64.encode_key(&KeySpec::Ordered).unwrap();
        assert_eq!(i16::decode_key(&above, &KeySpec::Ordered), Err(out_of_range("32768", "i16")));
        assert!(5u8.encode_key(&KeySpec::Ticks).is_err());
        assert_eq!(200u8.unwritable_side(&KeySpec::ZeroPad(2)), Ordering::Greater);
        assert_eq!((-1i8).unwritable_side(&KeySpec::ZeroPad(2)), Ordering::Less);
    }

    #[test]
    fn u64_is_bit_cast() {
        assert_eq!(u64::MAX.to_value(), Value::Int64(-1));
        assert_eq!(u64::from_value(Value::Int64(-1)), Ok(u64::MAX));
    }

    #[test]
    fn specs_that_do_not_apply_are_errors_not_panics() {
        assert!("a".encode_key(&KeySpec::Ticks).is_err());
        assert!(5i32.encode_key(&KeySpec::Ticks).is_err());
        assert!(i32::decode_key("99999999999", &KeySpec::Plain).is_err());
        assert_eq!(
            i64::decode_key(&i64::MIN.encode_key(&KeySpec::Ordered).unwrap(), &KeySpec::Ordered),
            Ok(i64::MIN)
        );
    }
}
