//! The form of a filter the engine tests each stored row with: every property's kind
//! (`PartitionKey`, `RowKey`, `Timestamp` or custom) decided and every literal borrowed once
//! per query, instead of once per row as a walk of the [`Filter`] does.
//!
//! Invariant: a compiled filter matches exactly the entities its filter does. Both walks end
//! in the same leaf tests (`eval`'s `compare` and `is_true`), which hold every comparison rule,
//! and both resolve names with [`PropertyRef::named`]; only the walk over `and`, `or` and `not`
//! is written twice.

use super::ast::{CompareOp, Filter};
use super::eval::{PropertyRef, Source, compare, is_true};
use crate::value::ValueRef;

/// A [`Filter`] with its names resolved, borrowing its names and literals from it.
///
/// Built and walked recursively, as deep as the filter: the engine compiles only filters that
/// passed [`Filter::check_limits`], which bounds their depth.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Compiled<'f> {
    /// `property op literal`.
    Compare { property: PropertyRef<'f>, op: CompareOp, literal: ValueRef<'f> },
    /// A bare property: true only for a Boolean `true` value.
    IsTrue(PropertyRef<'f>),
    /// `left and right`
    And(Box<Compiled<'f>>, Box<Compiled<'f>>),
    /// `left or right`
    Or(Box<Compiled<'f>>, Box<Compiled<'f>>),
    /// `not inner`
    Not(Box<Compiled<'f>>),
}

impl<'f> Compiled<'f> {
    /// `filter`, compiled.
    pub(crate) fn new(filter: &'f Filter) -> Self {
        let compiled = |inner: &'f Filter| Box::new(Compiled::new(inner));
        match filter {
            Filter::Compare { property, op, value } => Compiled::Compare {
                property: PropertyRef::named(property),
                op: *op,
                literal: ValueRef::of(value),
            },
            Filter::Property(property) => Compiled::IsTrue(PropertyRef::named(property)),
            Filter::And(left, right) => Compiled::And(compiled(left), compiled(right)),
            Filter::Or(left, right) => Compiled::Or(compiled(left), compiled(right)),
            Filter::Not(inner) => Compiled::Not(compiled(inner)),
        }
    }

    /// `true` when the entity `source` reads satisfies the filter: what
    /// [`Filter::matches`] answers for it.
    // Always inlined, so that a filter of one comparison (the commonest) is tested in the
    // caller's loop; any other filter is walked by `walk`, a call, as the tree is recursive.
    // With every filter a call of `walk`, a scan paid 93 more instructions per row it
    // returned, the call's and its dispatch's (ops_probe `probe_scans`: 2,777.5 rather than
    // 2,684.7); with a lone `IsTrue` inlined as well, 2,707.7.
    #[inline(always)]
    pub(crate) fn matches<S: Source + ?Sized>(&self, source: &S) -> bool {
        if let Compiled::Compare { property, op, literal } = self {
            return compare(source, *property, *op, *literal);
        }
        self.walk(source)
    }

    /// [`matches`](Self::matches), the walk down the tree to its leaves.
    fn walk<S: Source + ?Sized>(&self, source: &S) -> bool {
        match self {
            Compiled::Compare { property, op, literal } => compare(source, *property, *op, *literal),
            Compiled::IsTrue(property) => is_true(source, *property),
            Compiled::And(left, right) => left.walk(source) && right.walk(source),
            Compiled::Or(left, right) => left.walk(source) || right.walk(source),
            Compiled::Not(inner) => !inner.walk(source),
        }
    }
}
