//! OData `$filter` expressions: the AST and its builders, a parser for user strings, the
//! canonical printer sent on the wire, and the evaluator the embedded engine uses.
//!
//! Invariants:
//! - `Filter::parse(&f.to_string()) == Ok(f)` for every AST that passes
//!   [`Filter::check_limits`] (at most [`MAX_FILTER_COMPARISONS`] comparisons, at most
//!   [`MAX_FILTER_NESTING`] levels of parentheses and `not` in the printed text, property
//!   names that are identifiers other than keywords, finite doubles) and whose DateTimes lie
//!   in 0001..=9999 at tick precision (the `Value` invariant); doubles come back with
//!   identical bits. NaN and the infinities round-trip too (NaN as a NaN), although
//!   `check_limits` refuses them.
//! - Printing never deepens: the canonical text of a parsed filter is nested no deeper than
//!   the text it was parsed from, so whatever parses also passes the nesting check.
//! - String literals are always escaped (`'` as `''`), so a value can never change the shape
//!   of a filter. A property name the grammar cannot express is printed as a string literal,
//!   which the service rejects (501), never spliced in; [`Filter::check_limits`] reports it.
//! - A parsed filter has at most [`MAX_FILTER_COMPARISONS`] comparisons and at most
//!   [`MAX_FILTER_NESTING`] levels of nesting, so evaluating, printing and dropping it never
//!   recurse deeply.
//!
//! Doubles: finite ones print in plain decimal notation (no exponent), which the service and
//! Azurite both read (Azurite answers a filter with `1e300` as if nothing matched). NaN and the
//! infinities have no portable literal: they print as `NaN`, `INF` and `-INF` (the OData
//! ABNF's double literals, which the parser accepts), but whether the service accepts them is
//! unconfirmed and Azurite matches nothing with them, silently, so
//! [`Filter::check_limits`] refuses a comparison with one
//! ([`Violation::FilterNonFiniteDouble`](crate::Violation::FilterNonFiniteDouble)) before
//! any request, on every backend. The evaluator follows IEEE 754 for NaN: `eq` is false, `ne`
//! true, the orderings false.
//!
//! Module map, imports running one way: `ast` (the tree and its builders; imports nothing from
//! this module), `lexical` (keywords, and which names a filter can name), `limits` (the size
//! and depth limits and the errors reporting them), `parse` (text to tree: `ast`, `lexical`,
//! `limits`), `print` (tree to canonical text, and `check_limits`, which audits that text:
//! `ast`, `lexical`, `limits`), `eval` (the comparison rules, and [`Filter::matches`]: `ast`),
//! `compiled` (the form the engine evaluates, names resolved once per query: `ast`, `eval`).

mod ast;
mod compiled;
mod eval;
mod lexical;
mod limits;
mod parse;
mod print;

pub use ast::{CompareOp, Filter};
pub(crate) use compiled::Compiled;
pub(crate) use eval::{PropertyRef, Source, same_bytes};
pub use limits::{MAX_FILTER_COMPARISONS, MAX_FILTER_NESTING};
