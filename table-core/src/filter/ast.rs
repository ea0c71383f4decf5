//! The filter AST and its builders.
//!
//! Comparisons are normalised with the property on the left (`30 lt Age` is `Age gt 30`). The
//! AST itself accepts any property name, any value and any depth; [`Filter::check_limits`]
//! (beside the printer, which it audits the canonical text with) rejects what the service would (too many comparisons, property names the grammar cannot
//! express), what the parser would (nesting too deep) and what has no portable literal (NaN
//! and the infinities).

use std::ops::Bound;

use crate::keys::prefix_successor;
use crate::value::Value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// `eq`
    Eq,
    /// `ne`
    Ne,
    /// `gt`
    Gt,
    /// `ge`
    Ge,
    /// `lt`
    Lt,
    /// `le`
    Le,
}

impl CompareOp {
    /// Every operator, in grammar order.
    pub const ALL: [CompareOp; 6] =
        [CompareOp::Eq, CompareOp::Ne, CompareOp::Gt, CompareOp::Ge, CompareOp::Lt, CompareOp::Le];

    /// The keyword, e.g. `"ge"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
        }
    }

    /// The operator of a (case-sensitive) keyword.
    pub fn from_keyword(word: &str) -> Option<CompareOp> {
        CompareOp::ALL.into_iter().find(|op| op.as_str() == word)
    }

    /// The operator with its operands swapped: `a lt b` is `b gt a`.
    pub fn mirrored(self) -> CompareOp {
        match self {
            CompareOp::Eq => CompareOp::Eq,
            CompareOp::Ne => CompareOp::Ne,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::Ge => CompareOp::Le,
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::Le => CompareOp::Ge,
        }
    }
}

impl std::fmt::Display for CompareOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `$filter` expression.
///
/// Build one with [`Filter::eq`] and friends, combine with [`and`](Filter::and),
/// [`or`](Filter::or) and `!` ([`std::ops::Not`]), parse one with [`Filter::parse`], print the
/// canonical wire form with `to_string()` / [`Filter::to_odata`], and evaluate it with
/// [`Filter::matches`].
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// `property op literal`.
    Compare {
        /// The property name (system properties included).
        property: String,
        /// The operator.
        op: CompareOp,
        /// The literal; its EDM type decides the literal form.
        value: Value,
    },
    /// A bare property: true only for a Boolean `true` value.
    Property(String),
    /// `left and right`
    And(Box<Filter>, Box<Filter>),
    /// `left or right`
    Or(Box<Filter>, Box<Filter>),
    /// `not inner`
    Not(Box<Filter>),
}

impl Filter {
    /// `property op value`.
    pub fn compare(property: impl Into<String>, op: CompareOp, value: impl Into<Value>) -> Filter {
        Filter::Compare { property: property.into(), op, value: value.into() }
    }

    /// `property eq value`.
    pub fn eq(property: impl Into<String>, value: impl Into<Value>) -> Filter {
        Filter::compare(property, CompareOp::Eq, value)
    }

    /// `property ne value` (false when the property is missing, like every comparison).
    pub fn ne(property: impl Into<String>, value: impl Into<Value>) -> Filter {
        Filter::compare(property, CompareOp::Ne, value)
    }

    /// `property gt value`.
    pub fn gt(property: impl Into<String>, value: impl Into<Value>) -> Filter {
        Filter::compare(property, CompareOp::Gt, value)
    }

    /// `property ge value`.
    pub fn ge(property: impl Into<String>, value: impl Into<Value>) -> Filter {
        Filter::compare(property, CompareOp::Ge, value)
    }

    /// `property lt value`.
    pub fn lt(property: impl Into<String>, value: impl Into<Value>) -> Filter {
        Filter::compare(property, CompareOp::Lt, value)
    }

    /// `property le value`.
    pub fn le(property: impl Into<String>, value: impl Into<Value>) -> Filter {
        Filter::compare(property, CompareOp::Le, value)
    }

    /// A bare Boolean property: true only when it holds Boolean `true`.
    pub fn property(property: impl Into<String>) -> Filter {
        Filter::Property(property.into())
    }

    /// `PartitionKey eq 'pk'`.
    pub fn partition_key_eq(partition_key: impl Into<String>) -> Filter {
        Filter::eq("PartitionKey", partition_key.into())
    }

    /// `self and other`.
    #[must_use]
    pub fn and(self, other: Filter) -> Filter {
        Filter::And(Box::new(self), Box::new(other))
    }

    /// `self or other`.
    #[must_use]
    pub fn or(self, other: Filter) -> Filter {
        Filter::Or(Box::new(self), Box::new(other))
    }

    /// All conditions joined with `and` (left to right); `None` for no condition at all, which
    /// a query expresses by sending no `$filter`.
    pub fn all_of(filters: impl IntoIterator<Item = Filter>) -> Option<Filter> {
        filters.into_iter().reduce(Filter::and)
    }

    /// Entities whose `property` is a string in the given range, compared ordinally as the
    /// service does (UTF-16 code units).
    ///
    /// The filter always has a lower bound (`property ge ''` when `lower` is unbounded): an
    /// upper bound alone would also match every non-string value, because `lt`/`le` are true
    /// for values of another type. So a missing or non-string property never matches.
    pub fn range(property: impl Into<String>, lower: Bound<&str>, upper: Bound<&str>) -> Filter {
        let property = property.into();
        let low = match lower {
            Bound::Included(s) => Filter::ge(property.clone(), s),
            Bound::Excluded(s) => Filter::gt(property.clone(), s),
            Bound::Unbounded => Filter::ge(property.clone(), ""),
        };
        match upper {
            Bound::Included(s) => low.and(Filter::le(property, s)),
            Bound::Excluded(s) => low.and(Filter::lt(property, s)),
            Bound::Unbounded => low,
        }
    }

    /// Entities whose `property` is a string starting with `prefix`:
    /// `P ge 'pre' and P lt 'prf'`, the upper bound being the least string above every string
    /// with the prefix in UTF-16 order.
    ///
    /// Edge cases: the empty prefix gives `P ge ''` (every string); a prefix ending in U+FFFF
    /// (the largest UTF-16 unit) carries into the previous character, and a prefix made only of
    /// U+FFFF has no upper bound. `char::MAX` (U+10FFFF, a surrogate pair) is followed by
    /// U+E000 in UTF-16 order, not by a carry.
    pub fn prefix(property: impl Into<String>, prefix: &str) -> Filter {
        let upper = prefix_successor(prefix);
        let upper = upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        Filter::range(property, Bound::Included(prefix), upper)
    }

    /// The number of discrete comparisons, as [`Filter::check_limits`] counts them against the
    /// service's limit. A bare Boolean property counts as one (it means `P eq true`).
    ///
    /// Counted with a heap stack, not recursion: a filter built in code may be far deeper than
    /// any the parser returns, and counting is the first check it meets.
    pub fn comparison_count(&self) -> usize {
        let mut count = 0;
        let mut pending = vec![self];
        while let Some(filter) = pending.pop() {
            match filter {
                Filter::Compare { .. } | Filter::Property(_) => count += 1,
                Filter::And(a, b) | Filter::Or(a, b) => pending.extend([&**a, &**b]),
                Filter::Not(inner) => pending.push(inner),
            }
        }
        count
    }
}

impl std::ops::Not for Filter {
    type Output = Filter;

    /// `not self`.
    fn not(self) -> Filter {
        Filter::Not(Box::new(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrored_swaps_operands() {
        for op in CompareOp::ALL {
            assert_eq!(op.mirrored().mirrored(), op);
            assert_eq!(CompareOp::from_keyword(op.as_str()), Some(op));
        }
        assert_eq!(CompareOp::Lt.mirrored(), CompareOp::Gt);
        assert_eq!(CompareOp::from_keyword("EQ"), None);
    }

    #[test]
    fn comparison_count_counts_leaves() {
        let f = Filter::eq("a", 1).and(!Filter::property("b").or(Filter::lt("c", 2)));
        assert_eq!(f.comparison_count(), 3);
    }
}
