//! The limits on a filter's size and depth, and the errors that report them: the parser
//! enforces them on text, [`Filter::check_limits`](crate::Filter::check_limits) on a filter
//! built in code, and both report a breach the same way.

use crate::error::{Error, Violation};

/// The most discrete comparisons the service accepts in one `$filter`.
pub const MAX_FILTER_COMPARISONS: usize = 15;

/// The deepest nesting of parentheses and `not` in a filter's text: the parser refuses deeper
/// input, and [`Filter::check_limits`](crate::Filter::check_limits) refuses a filter whose
/// canonical text is deeper. A `not` and the parentheses right after it (`not (...)`, as the
/// printer writes it) count as one level.
pub const MAX_FILTER_NESTING: usize = 100;

/// The error for a filter with `count` comparisons, more than [`MAX_FILTER_COMPARISONS`].
pub(super) fn too_many_comparisons(count: usize) -> Error {
    Error::invalid(Violation::TooManyComparisons { count, max: MAX_FILTER_COMPARISONS })
}

/// The error for a `(` or `not` at `position` that opens level [`MAX_FILTER_NESTING`] + 1.
pub(super) fn too_deep(position: usize) -> Error {
    Error::invalid(Violation::FilterSyntax {
        position,
        message: format!("parentheses and `not` are nested more than {MAX_FILTER_NESTING} deep"),
    })
}
