//! Keys in the service's sort order.
//!
//! The service orders `PartitionKey` and `RowKey` ordinally by UTF-16 code units, while Rust's
//! `str` order is by code point (UTF-8 bytes). The two disagree only when a character in
//! U+E000..=U+FFFF meets one at or above U+10000: UTF-16 puts the surrogate pair first.
//!
//! Invariant: for any strings `a` and `b`, `encode(a).cmp(&encode(b))` equals
//! [`crate::value::compare_ordinal`]`(a, b)`. The encoding moves the two UTF-8 lead bytes of
//! U+E000..=U+FFFF (`0xEE`, `0xEF`) above the lead bytes of supplementary characters
//! (`0xF0..=0xF4`) onto `0xF5`/`0xF6`, which never occur in UTF-8. Lead bytes are never
//! continuation bytes, so the mapping is a bijection and comparisons stay plain `memcmp`.
//! Keys without those two bytes (all ASCII keys) are used as they are, without allocating.

use std::borrow::Cow;

/// A key in its sortable byte form; see the module docs.
pub(crate) type SortKey = Box<[u8]>;

/// The sortable form of `key`; borrows unless the key holds a character in U+E000..=U+FFFF.
pub(crate) fn encode(key: &str) -> Cow<'_, [u8]> {
    let bytes = key.as_bytes();
    if bytes.iter().any(|b| matches!(b, 0xEE | 0xEF)) {
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
    encode(key).into_owned().into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::compare_ordinal;
    use proptest::prelude::*;

    #[test]
    fn private_use_sorts_after_supplementary_characters() {
        let (bmp_high, astral) = ("\u{ff21}", "\u{1f600}");
        assert!(bmp_high < astral, "code point order");
        assert!(encode(bmp_high) > encode(astral), "UTF-16 order");
        assert!(matches!(encode("plain"), Cow::Borrowed(_)));
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
            a in proptest::collection::vec(interesting_char(), 0..6),
            b in proptest::collection::vec(interesting_char(), 0..6),
        ) {
            let (a, b): (String, String) = (a.into_iter().collect(), b.into_iter().collect());
            prop_assert_eq!(encode(&a).cmp(&encode(&b)), compare_ordinal(&a, &b));
        }
    }
}
