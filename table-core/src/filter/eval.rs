//! The evaluator: does an entity match a filter, with the real service's semantics
//! (protocol doc 6.2; where Azurite differs, the service wins). The rules are listed on
//! [`Filter::matches`].
//!
//! This is the engine's hot path: it borrows the entity's values and never allocates. It
//! reads properties through [`Source`], so the engine evaluates filters on its stored rows
//! directly, without first turning them into [`Entity`]s. The rules live in the two leaf
//! tests, [`compare`] and [`is_true`]: [`Filter::matches`] walks the AST to them, deciding each
//! name's [`PropertyRef`] as it meets it, and the engine walks a
//! [`Compiled`](super::compiled::Compiled) filter, whose names were decided once per query.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};

use crate::entity::Entity;
use crate::value::{ValueRef, compare_ordinal};

use super::ast::{CompareOp, Filter};

impl Filter {
    /// `true` when `entity` satisfies this filter, as the real service decides it:
    ///
    /// - `PartitionKey`, `RowKey` (strings) and `Timestamp` (DateTime) are filterable like any
    ///   property.
    /// - A missing property makes every comparison false, `ne` included; `not` flips that.
    /// - A bare property is true only when it holds Boolean `true`.
    /// - Same types compare naturally: numbers numerically, strings ordinally by UTF-16 code
    ///   units, `false < true`, DateTimes by instant, Guids by value (byte order), Binary
    ///   bytewise.
    /// - Across types, an Int64 property meets an Int32 literal, and a Double property an Int32
    ///   or Int64 literal, numerically and exactly (no lossy `i64 -> f64` cast). Every other
    ///   pair, Int32 property against an Int64 or Double literal included, is "not
    ///   comparable": `eq`, `gt`, `ge` false; `ne`, `lt`, `le` true.
    /// - NaN follows IEEE 754: `ne` true, `eq` and the orderings false.
    pub fn matches(&self, entity: &Entity) -> bool {
        match self {
            Filter::Compare { property, op, value } => {
                compare(entity, PropertyRef::named(property), *op, ValueRef::of(value))
            }
            Filter::Property(property) => is_true(entity, PropertyRef::named(property)),
            Filter::And(left, right) => left.matches(entity) && right.matches(entity),
            Filter::Or(left, right) => left.matches(entity) || right.matches(entity),
            Filter::Not(inner) => !inner.matches(entity),
        }
    }
}

/// `property op literal` on `source`: false when the property is missing, else the
/// comparison rules of [`Filter::matches`].
// Inlined into the walks, as `evaluate` into it: the hint is what keeps `evaluate` from
// staying a call, 50 instructions per row a scan returned (ops_probe `probe_scans`).
#[inline]
pub(super) fn compare<S: Source + ?Sized>(
    source: &S,
    property: PropertyRef<'_>,
    op: CompareOp,
    literal: ValueRef<'_>,
) -> bool {
    property.read(source).is_some_and(|found| evaluate(found, op, literal))
}

/// A bare property on `source`: true only when it holds Boolean `true`.
#[inline]
pub(super) fn is_true<S: Source + ?Sized>(source: &S, property: PropertyRef<'_>) -> bool {
    matches!(property.read(source), Some(ValueRef::Boolean(true)))
}

/// A property a filter names, its kind decided from the name: the system properties are
/// fields of every entity, any other name a custom property (which can never be named like a
/// system one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PropertyRef<'f> {
    /// `PartitionKey`
    PartitionKey,
    /// `RowKey`
    RowKey,
    /// `Timestamp`
    Timestamp,
    /// A custom property, by name.
    Custom(&'f str),
}

impl<'f> PropertyRef<'f> {
    /// The property called `name` (case-sensitive, as the service reads names).
    pub(crate) fn named(name: &'f str) -> Self {
        match name {
            "PartitionKey" => PropertyRef::PartitionKey,
            "RowKey" => PropertyRef::RowKey,
            "Timestamp" => PropertyRef::Timestamp,
            _ => PropertyRef::Custom(name),
        }
    }

    /// The property's value on `source`; `None` when it has none.
    // Always inlined, with the source's `custom` and the comparison, into the compiled
    // filter's walk: the value then reaches the comparison in registers. Left to `#[inline]`
    // it stayed a call, 72 more instructions per row a scan returned (ops_probe `probe_scans`).
    #[inline(always)]
    fn read<S: Source + ?Sized>(self, source: &S) -> Option<ValueRef<'_>> {
        match self {
            PropertyRef::PartitionKey => Some(ValueRef::Str(source.partition_key())),
            PropertyRef::RowKey => Some(ValueRef::Str(source.row_key())),
            PropertyRef::Timestamp => source.timestamp().map(ValueRef::DateTime),
            PropertyRef::Custom(name) => source.custom(name),
        }
    }
}

/// Where a filter reads an entity's properties from: an [`Entity`], or a row as the engine
/// stores it.
pub(crate) trait Source {
    /// The `PartitionKey`.
    fn partition_key(&self) -> &str;
    /// The `RowKey`.
    fn row_key(&self) -> &str;
    /// The `Timestamp`, when set.
    fn timestamp(&self) -> Option<DateTime<Utc>>;
    /// A custom property (never a system one) by name.
    fn custom(&self, name: &str) -> Option<ValueRef<'_>>;
}

impl Source for Entity {
    fn partition_key(&self) -> &str {
        &self.partition_key
    }

    fn row_key(&self) -> &str {
        &self.row_key
    }

    fn timestamp(&self) -> Option<DateTime<Utc>> {
        self.timestamp
    }

    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        if self.properties.len() <= LINEAR_LOOKUP_MAX {
            self.properties
                .iter()
                .find(|(candidate, _)| same_bytes(candidate.as_bytes(), name.as_bytes()))
                .map(|(_, value)| ValueRef::of(value))
        } else {
            self.properties.get(name).map(ValueRef::of)
        }
    }
}

/// Up to this many properties a linear scan beats the map's binary search: it compares
/// lengths (stored in the map node) first and so rarely touches a name's heap bytes, each a
/// likely cache miss in a large scan.
const LINEAR_LOOKUP_MAX: usize = 16;

/// Byte equality, inlined. In scans over many entities, where every string is a cache miss,
/// an inlined loop measured several times faster than `==` (a `memcmp` call per row). It
/// compares whole words: names and keys are mostly 4 to 30 bytes, and a byte loop spent
/// about 4 instructions a byte on them. The last word overlaps the one before when the
/// length is not a multiple of its size.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if let (Some(a_last), Some(b_last)) = (a.last_chunk::<8>(), b.last_chunk::<8>()) {
        let (a_words, b_words) = (a.as_chunks::<8>().0, b.as_chunks::<8>().0);
        return a_last == b_last && a_words.iter().zip(b_words).all(|(x, y)| x == y);
    }
    let halves = |s: &[u8]| Some((*s.first_chunk::<4>()?, *s.last_chunk::<4>()?));
    match (halves(a), halves(b)) {
        (Some(a_halves), Some(b_halves)) => a_halves == b_halves,
        _ => a.iter().zip(b).all(|(x, y)| x == y),
    }
}

/// How a property's value relates to a literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ordered(Ordering),
    /// A NaN is involved.
    Unordered,
    /// The types do not compare.
    NotComparable,
}

// Inlined, `relate` too, into the leaf tests: with `relate` a call, a scan cost 38 more
// instructions per row it returned (ops_probe `probe_scans`). Both always: as hints, LLVM
// kept one or the other a call after an unrelated edit of table-core (the ETag's cached
// second), 50 and 40 more per row.
#[inline(always)]
fn evaluate(property: ValueRef<'_>, op: CompareOp, literal: ValueRef<'_>) -> bool {
    // Ordinal equality is byte equality: skip the UTF-16 walk for the most common test.
    if let (ValueRef::Str(a), ValueRef::Str(b)) = (property, literal) {
        match op {
            CompareOp::Eq => return same_bytes(a.as_bytes(), b.as_bytes()),
            CompareOp::Ne => return !same_bytes(a.as_bytes(), b.as_bytes()),
            _ => {}
        }
    }
    satisfies(op, relate(property, literal))
}

fn satisfies(op: CompareOp, outcome: Outcome) -> bool {
    match outcome {
        Outcome::Ordered(o) => match op {
            CompareOp::Eq => o == Ordering::Equal,
            CompareOp::Ne => o != Ordering::Equal,
            CompareOp::Gt => o == Ordering::Greater,
            CompareOp::Ge => o != Ordering::Less,
            CompareOp::Lt => o == Ordering::Less,
            CompareOp::Le => o != Ordering::Greater,
        },
        Outcome::Unordered => op == CompareOp::Ne,
        Outcome::NotComparable => matches!(op, CompareOp::Ne | CompareOp::Lt | CompareOp::Le),
    }
}

#[inline(always)]
fn relate(property: ValueRef<'_>, literal: ValueRef<'_>) -> Outcome {
    use ValueRef as O;
    let partial = |o: Option<Ordering>| o.map_or(Outcome::Unordered, Outcome::Ordered);
    match (property, literal) {
        (O::Str(a), O::Str(b)) => Outcome::Ordered(compare_ordinal(a, b)),
        (O::Int32(a), O::Int32(b)) => Outcome::Ordered(a.cmp(&b)),
        (O::Int64(a), O::Int64(b)) => Outcome::Ordered(a.cmp(&b)),
        (O::Int64(a), O::Int32(b)) => Outcome::Ordered(a.cmp(&i64::from(b))),
        (O::Double(a), O::Double(b)) => partial(a.partial_cmp(&b)),
        (O::Double(a), O::Int32(b)) => partial(a.partial_cmp(&f64::from(b))),
        (O::Double(a), O::Int64(b)) => partial(compare_f64_i64(a, b)),
        (O::Boolean(a), O::Boolean(b)) => Outcome::Ordered(a.cmp(&b)),
        (O::DateTime(a), O::DateTime(b)) => Outcome::Ordered(a.cmp(&b)),
        (O::Guid(a), O::Guid(b)) => Outcome::Ordered(a.cmp(&b)),
        (O::Binary(a), O::Binary(b)) => Outcome::Ordered(a.cmp(b)),
        _ => Outcome::NotComparable,
    }
}

/// Compares a double with an integer exactly; `None` for NaN. Casting the integer to `f64`
/// would round (2^53 + 1 becomes 2^53), so the double's integer part is compared as an `i64`.
fn compare_f64_i64(d: f64, i: i64) -> Option<Ordering> {
    // 2^63 is exact as a double; every double in [-2^63, 2^63) has its integer part in i64.
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if d.is_nan() {
        return None;
    }
    if d >= TWO_POW_63 {
        return Some(Ordering::Greater);
    }
    if d < -TWO_POW_63 {
        return Some(Ordering::Less);
    }
    let whole = d.trunc();
    // In range and integral, so the cast is exact.
    let whole_int = whole as i64;
    Some(whole_int.cmp(&i).then_with(|| {
        // Same integer part: the fraction (sign of d - whole) decides.
        (d - whole).partial_cmp(&0.0).unwrap_or(Ordering::Equal)
    }))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The word-wise comparison agrees with `==` at every length around its word sizes,
        /// on equal slices and on slices that differ in one byte anywhere.
        #[test]
        fn same_bytes_is_equality(
            a in proptest::collection::vec(any::<u8>(), 0..40),
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
            shorter in any::<bool>(),
        ) {
            prop_assert!(same_bytes(&a, &a.clone()));
            let mut b = a.clone();
            if let Some(byte) = (!a.is_empty()).then(|| &mut b[at.index(a.len())]) {
                *byte ^= flip;
                prop_assert!(!same_bytes(&a, &b) && !same_bytes(&b, &a));
            }
            if shorter && !a.is_empty() {
                prop_assert!(!same_bytes(&a, &a[..a.len() - 1]));
            }
        }
    }

    #[test]
    fn double_vs_int64_is_exact() {
        use Ordering::*;
        let big = 1i64 << 53;
        // 2^53 + 1 is not a double; a lossy cast would call these equal.
        assert_eq!(compare_f64_i64(big as f64, big + 1), Some(Less));
        assert_eq!(compare_f64_i64(big as f64, big), Some(Equal));
        assert_eq!(compare_f64_i64(-0.5, 0), Some(Less));
        assert_eq!(compare_f64_i64(0.5, 0), Some(Greater));
        assert_eq!(compare_f64_i64(-0.0, 0), Some(Equal));
        assert_eq!(compare_f64_i64(9.223_372_036_854_776e18, i64::MAX), Some(Greater));
        assert_eq!(compare_f64_i64(-9.223_372_036_854_776e18, i64::MIN), Some(Equal));
        assert_eq!(compare_f64_i64(f64::NEG_INFINITY, i64::MIN), Some(Less));
        assert_eq!(compare_f64_i64(f64::INFINITY, i64::MAX), Some(Greater));
        assert_eq!(compare_f64_i64(f64::NAN, 0), None);
    }

    #[test]
    fn outcomes_per_operator() {
        use CompareOp::*;
        let table = [
            (Outcome::Ordered(Ordering::Less), [false, true, false, false, true, true]),
            (Outcome::Ordered(Ordering::Equal), [true, false, false, true, false, true]),
            (Outcome::Ordered(Ordering::Greater), [false, true, true, true, false, false]),
            (Outcome::Unordered, [false, true, false, false, false, false]),
            (Outcome::NotComparable, [false, true, false, false, true, true]),
        ];
        for (outcome, expected) in table {
            for (op, want) in [Eq, Ne, Gt, Ge, Lt, Le].into_iter().zip(expected) {
                assert_eq!(satisfies(op, outcome), want, "{op} on {outcome:?}");
            }
        }
    }
}
