//! OData `$filter` expressions: the AST, a parser for user strings, the canonical printer sent
//! on the wire, and the evaluator the embedded engine uses.
//!
//! Invariants: `parse(&print(f)) == f` for every AST, and string literals are always escaped
//! by the printer, so a value can never change the shape of a filter.

mod ast;
mod eval;
mod parse;
mod print;

pub use ast::{CompareOp, Filter};
