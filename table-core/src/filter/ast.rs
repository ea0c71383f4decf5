//! The filter AST. Comparisons are normalised with the property on the left.

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

/// A `$filter` expression.
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
