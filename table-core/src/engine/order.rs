//! Keys in the service's sort order.
//!
//! The service orders `PartitionKey` and `RowKey` ordinally by UTF-16 code units, while Rust's
//! `str` order is by code point (UTF-8 bytes). The two disagree only when a character in
//! U+E000..=U+FFFF meets one at or above U+10000: UTF-16 puts the surrogate pair first.
//!
//! Invariant: for any strings `a` and `b`, `encode(a).cmp(&encode(b))` equals
//! [`crate::compare_ordinal`]`(a, b)`. The encoding moves the two UTF-8 lead bytes of
//! U+E000..=U+FFFF (`0xEE`, `0xEF`) above the lead bytes of supplementary characters
//! (`0xF0..=0xF4`) onto `0xF5`/`0xF6`, which never occur in UTF-8. Lead bytes are never
//! continuation bytes, so the mapping is a bijection and comparisons stay plain `memcmp`.
//! Keys without those two bytes (all ASCII keys) are used as they are, without allocating.
//!
//! Stored keys ([`SortKey`]) keep up to [`INLINE`] bytes inside the map node itself: a lookup
//! compares against a dozen keys per node, and following a heap pointer for each comparison
//! (a cache miss apiece) made point reads several times slower. A comparison is settled on
//! the first 8 bytes, kept beside the key as one number made when the key is (so a comparison
//! loads two numbers, with no branch on where the bytes live and no byte swap), unless they
//! are equal (no call to `memcmp` per key of a node). A write searches two maps with a
//! [`SortKey`] of its keys, so it compares this way at every node.

use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;

/// Longest key kept inline in a [`SortKey`] (keeps the type at 40 bytes).
const INLINE: usize = 30;

/// A key in its sortable byte form (see the module docs), ordered and compared by its bytes,
/// so a map of `SortKey`s can be searched with a borrowed `&[u8]`.
///
/// Invariant: `head` is [`Stored::head`] of the key's bytes, so comparing heads orders two
/// keys as their bytes do wherever the heads differ.
#[derive(Debug, Clone)]
pub(crate) struct SortKey {
    head: u64,
    bytes: Stored,
}

/// Where a [`SortKey`]'s bytes live.
#[derive(Debug, Clone)]
enum Stored {
    /// Short keys, stored in place.
    Inline {
        /// Number of bytes used.
        len: u8,
        /// The bytes, zero after `len`.
        bytes: [u8; INLINE],
    },
    /// Longer keys.
    Heap(Box<[u8]>),
}

impl SortKey {
    fn as_bytes(&self) -> &[u8] {
        match &self.bytes {
            // `len <= INLINE` by construction; `get` keeps this total anyway.
            Stored::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or(bytes),
            Stored::Heap(b) => b,
        }
    }
}

impl Stored {
    /// The key kept inline, or `None` when it is too long to be.
    fn inline(key: &[u8]) -> Option<Stored> {
        let len = u8::try_from(key.len()).ok().filter(|_| key.len() <= INLINE)?;
        let mut bytes = [0; INLINE];
        bytes.get_mut(..key.len())?.copy_from_slice(key);
        Some(Stored::Inline { len, bytes })
    }

    /// The first 8 bytes of the key as a big-endian number, zero-padded: its [`SortKey`]'s
    /// head. Where two keys' heads differ, they order the keys as their bytes do: at the first
    /// differing byte either both keys have a byte, or one has ended (padding 0) and is a
    /// proper prefix of the other, which has a byte above 0 there.
    fn head(&self) -> u64 {
        let bytes: &[u8] = match self {
            // Inline bytes are zero after `len`: the padding is already there.
            Stored::Inline { bytes, .. } => bytes,
            Stored::Heap(b) => b,
        };
        // Both hold more than 8 bytes (heap keys are longer than `INLINE`), so this is one load.
        bytes.first_chunk::<8>().map_or(0, |head| u64::from_be_bytes(*head))
    }
}

impl From<&[u8]> for SortKey {
    fn from(key: &[u8]) -> Self {
        let bytes = Stored::inline(key).unwrap_or_else(|| Stored::Heap(key.into()));
        SortKey { head: bytes.head(), bytes }
    }
}

impl Borrow<[u8]> for SortKey {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for SortKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for SortKey {}

impl PartialOrd for SortKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SortKey {
    fn cmp(&self, other: &Self) -> Ordering {
        // Byte order. Most comparisons of a map search are settled by the heads, compared as
        // two numbers rather than by a call to `memcmp` (see `Stored::head`).
        self.head.cmp(&other.head).then_with(|| self.as_bytes().cmp(other.as_bytes()))
    }
}

/// The sortable form of `key`; borrows unless the key holds a character in U+E000..=U+FFFF.
pub(crate) fn encode(key: &str) -> Cow<'_, [u8]> {
    let bytes = key.as_bytes();
    // Most keys are ASCII, told apart a word at a time, where the search below goes a byte at a
    // time (every write encodes both its keys).
    if !key.is_ascii() && bytes.iter().any(|b| matches!(b, 0xEE | 0xEF)) {
        Cow::Owned(
            bytes
                .iter()
                .map(|&b| match b {
                    0xEE => 0xF5,
                    0xEF => 0xF6,
                    other => other,
                })
                .collect(),
        )
    } else {
        Cow::Borrowed(bytes)
    }
}

/// The owned sortable form of `key`, for storing in a map.
pub(crate) fn sort_key(key: &str) -> SortKey {
    SortKey::from(encode(key).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::compare_ordinal;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn private_use_sorts_after_supplementary_characters() {
        let (bmp_high, astral) = ("\u{ff21}", "\u{1f600}");
        assert!(bmp_high < astral, "code point order");
        assert!(encode(bmp_high) > encode(astral), "UTF-16 order");
        assert!(matches!(encode("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_keys_are_inline_and_long_ones_on_the_heap() {
        assert_eq!(std::mem::size_of::<SortKey>(), 40);
        assert!(matches!(sort_key(&"k".repeat(INLINE)).bytes, Stored::Inline { .. }));
        let long = "k".repeat(INLINE + 1);
        assert!(matches!(sort_key(&long).bytes, Stored::Heap(_)));
        assert!(sort_key(&"k".repeat(INLINE)) < sort_key(&long));
    }

    #[test]
    fn heads_order_keys_as_their_bytes_do() {
        // Zero bytes, shared prefixes of 8 bytes and more, both sides of the inline limit.
        let long = "k".repeat(INLINE);
        let keys = [
            "",
            "\0",
            "\0\0",
            "a",
            "a\0",
            "a\0\u{1}",
            "ab",
            "abcdefgh",
            "abcdefgh\0",
            "abcdefghi",
            "abcdefgi",
            "b",
            &long,
            &format!("{long}\0"),
            &format!("{long}a"),
            &format!("{long}b"),
        ];
        for a in keys {
            for b in keys {
                assert_eq!(sort_key(a).cmp(&sort_key(b)), a.as_bytes().cmp(b.as_bytes()), "{a:?} {b:?}");
            }
        }
        let map: BTreeMap<SortKey, &str> = keys.iter().map(|k| (sort_key(k), *k)).collect();
        for k in keys {
            assert_eq!(map.get(&sort_key(k)), Some(&k), "{k:?}");
        }
        assert_eq!(map.get(&sort_key("abcdefg")), None);
    }

    fn interesting_char() -> impl Strategy<Value = char> {
        prop_oneof![
            Just('a'),
            Just('b'),
            Just('\u{e9}'),
            Just('\u{d7ff}'),
            Just('\u{e000}'),
            Just('\u{ffff}'),
            Just('\u{10000}'),
            Just('\u{1f600}'),
            any::<char>(),
        ]
    }

    proptest! {
        #[test]
        fn byte_order_of_encoding_is_ordinal_order(
            a in proptest::collection::vec(interesting_char(), 0..12),
            b in proptest::collection::vec(interesting_char(), 0..12),
        ) {
            let (a, b): (String, String) = (a.into_iter().collect(), b.into_iter().collect());
            prop_assert_eq!(encode(&a).cmp(&encode(&b)), compare_ordinal(&a, &b));
            prop_assert_eq!(sort_key(&a).cmp(&sort_key(&b)), compare_ordinal(&a, &b));
            prop_assert_eq!(sort_key(&a) == sort_key(&b), a == b);
            let (stored, encoded) = (sort_key(&a), encode(&a));
            prop_assert_eq!(Borrow::<[u8]>::borrow(&stored), encoded.as_ref());
        }
    }
}
