//! Short text kept inline: [`InlineText`] holds up to `N` bytes in place and longer text on
//! the heap, so that short text made and dropped on every write (the keys a typed write
//! builds) costs no allocation, while text of any length stays correct.
//!
//! Invariant: text of at most `N` bytes is always inline and longer text always on the heap,
//! so each text has one representation; equality, hashing and `Debug` are those of the `str`.

use std::hash::{Hash, Hasher};

use arrayvec::ArrayString;

/// Text of up to `N` bytes in place, longer text in a `String` (see the module docs).
#[derive(Clone)]
pub(crate) enum InlineText<const N: usize> {
    /// At most `N` bytes.
    Inline(ArrayString<N>),
    /// More than `N` bytes.
    Heap(String),
}

impl<const N: usize> InlineText<N> {
    /// Empty text.
    #[inline]
    pub(crate) fn new() -> Self {
        InlineText::Inline(ArrayString::new())
    }

    /// The text.
    #[inline]
    pub(crate) fn as_str(&self) -> &str {
        match self {
            InlineText::Inline(inline) => inline.as_str(),
            InlineText::Heap(heap) => heap.as_str(),
        }
    }

    /// Appends `text`.
    #[inline]
    pub(crate) fn push_str(&mut self, text: &str) {
        match self {
            InlineText::Inline(inline) => {
                if inline.try_push_str(text).is_err() {
                    self.spill(text);
                }
            }
            InlineText::Heap(heap) => heap.push_str(text),
        }
    }

    /// Appends `c`.
    #[inline]
    pub(crate) fn push(&mut self, c: char) {
        match self {
            InlineText::Inline(inline) => {
                if inline.try_push(c).is_err() {
                    self.spill(c.encode_utf8(&mut [0; 4]));
                }
            }
            InlineText::Heap(heap) => heap.push(c),
        }
    }

    /// Moves inline text that `more` would take past `N` bytes to the heap, `more` appended,
    /// as the invariant wants.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, more: &str) {
        // Room for as much again: what is appended after the spill (a key's later fields)
        // seldom needs a second allocation.
        let mut heap = String::with_capacity(2 * (self.as_str().len() + more.len()));
        heap.push_str(self.as_str());
        heap.push_str(more);
        *self = InlineText::Heap(heap);
    }
}

impl<const N: usize> From<String> for InlineText<N> {
    /// `text`, copied inline when it fits (its buffer then freed), else kept as it is.
    fn from(text: String) -> Self {
        match ArrayString::from(&text) {
            Ok(inline) => InlineText::Inline(inline),
            Err(_) => InlineText::Heap(text),
        }
    }
}

impl<const N: usize> From<InlineText<N>> for String {
    /// The text, its buffer kept when it has one.
    fn from(text: InlineText<N>) -> Self {
        match text {
            InlineText::Inline(inline) => inline.as_str().to_owned(),
            InlineText::Heap(heap) => heap,
        }
    }
}

impl<const N: usize> PartialEq for InlineText<N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl<const N: usize> Eq for InlineText<N> {}

impl<const N: usize> Hash for InlineText<N> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl<const N: usize> std::fmt::Debug for InlineText<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::hash_map::DefaultHasher;

    use proptest::prelude::*;

    use super::*;

    /// Small enough that the properties below cross the boundary often.
    type Small = InlineText<8>;

    fn hash_of(value: &impl Hash) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    fn is_inline(text: &Small) -> bool {
        matches!(text, InlineText::Inline(_))
    }

    proptest! {
        /// Built by pieces and characters, or taken from a `String`, the text is what a
        /// `String` would hold, inline exactly when it has at most `N` bytes, and compares,
        /// hashes, prints and turns back into a `String` as that `String`.
        #[test]
        fn behaves_as_the_string_it_holds(pieces in proptest::collection::vec("[a-z\u{e9}\u{1f600}]{0,5}", 0..6)) {
            let (mut built, mut expected) = (Small::new(), String::new());
            for (index, piece) in pieces.iter().enumerate() {
                match index % 2 {
                    0 => built.push_str(piece),
                    _ => piece.chars().for_each(|c| built.push(c)),
                }
                expected.push_str(piece);
                prop_assert_eq!(built.as_str(), expected.as_str());
                prop_assert_eq!(is_inline(&built), expected.len() <= 8);
            }
            let taken = Small::from(expected.clone());
            for text in [&built, &taken] {
                prop_assert_eq!(text.as_str(), expected.as_str());
                prop_assert_eq!(is_inline(text), expected.len() <= 8);
                prop_assert_eq!(text, &built);
                prop_assert_eq!(hash_of(text), hash_of(&built));
                prop_assert_eq!(format!("{text:?}"), format!("{expected:?}"));
                prop_assert_eq!(String::from(text.clone()), expected.clone());
            }
        }
    }

    #[test]
    fn the_boundary_is_n_bytes_not_characters() {
        // Four two-byte characters are 8 bytes: inline; one more byte is not.
        let mut at = Small::new();
        at.push_str("\u{e9}\u{e9}\u{e9}");
        at.push('\u{e9}');
        assert!(is_inline(&at));
        let (mut by_str, mut by_char) = (at.clone(), at.clone());
        by_str.push_str("x");
        by_char.push('x');
        for past in [by_str, by_char] {
            assert!(!is_inline(&past));
            assert_eq!(past.as_str(), "\u{e9}\u{e9}\u{e9}\u{e9}x");
            assert_ne!(past, at);
        }
    }
}
