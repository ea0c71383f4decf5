//! OData `$filter` expressions: the AST and its builders, a parser for user strings, the
//! canonical printer sent on the wire, and the evaluator the embedded engine uses.
//!
//! Invariants:
//! - `Filter::parse(&f.to_string()) == Ok(f)` for every AST that passes
//!   [`Filter::check_limits`] (at most [`MAX_FILTER_COMPARISONS`] comparisons, property names
//!   that are identifiers other than keywords) and whose DateTimes lie in 0001..=9999 at tick
//!   precision (the `Value` invariant); doubles come back with identical bits (NaN as a NaN).
//! - String literals are always escaped (`'` as `''`), so a value can never change the shape
//!   of a filter. A property name the grammar cannot express is printed as a string literal,
//!   which the service rejects (501), never spliced in; [`Filter::check_limits`] reports it.
//! - A parsed filter has at most [`MAX_FILTER_COMPARISONS`] comparisons and bounded nesting,
//!   so evaluating, printing and dropping it never recurse deeply.
//!
//! NaN and the infinities print as `NaN`, `INF` and `-INF`, the double literals of the OData
//! ABNF (V3 and V4), and parse back; whether the Table service accepts them is unconfirmed
//! (at worst it answers 400, never a wrong result). The evaluator follows IEEE 754 for NaN:
//! `eq` is false, `ne` true, the orderings false.

mod ast;
mod eval;
mod parse;
mod print;

pub use ast::{CompareOp, Filter};
pub(crate) use eval::{Operand, Source, same_bytes};

/// The most discrete comparisons the service accepts in one `$filter`.
pub const MAX_FILTER_COMPARISONS: usize = 15;
