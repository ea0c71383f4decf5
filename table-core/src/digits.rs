//! Decimal digits written at a fixed width: the one digit writer of timestamps (every write
//! prints one for its ETag) and of numeric key segments (every typed write of a numbered key).
//!
//! Invariant: [`put_digits`] writes only ASCII digits, so any text made of them and other
//! ASCII is UTF-8.

/// `00` to `99`, the two ASCII digits of each number below 100 back to back: numbers are
/// written two digits per division by 100, half the divisions of one digit at a time.
static DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut n = 0;
    while n < 100 {
        pairs[2 * n] = b'0' + (n / 10) as u8;
        pairs[2 * n + 1] = b'0' + (n % 10) as u8;
        n += 1;
    }
    pairs
};

/// Writes the last `slot.len()` decimal digits of `n` into `slot`, zero-padded: the whole of
/// `n` when it has at most that many digits.
// Inlined: callers pass slots of constant length, so the loop unrolls into a few multiplies.
#[inline]
pub(crate) fn put_digits(slot: &mut [u8], mut n: u64) {
    let mut rest = slot;
    while let [head @ .., tens, ones] = rest {
        // Below 200 - 1: `n % 100 < 100`.
        let pair = (n % 100) as usize * 2;
        (*tens, *ones) = (DIGIT_PAIRS[pair], DIGIT_PAIRS[pair + 1]);
        n /= 100;
        rest = head;
    }
    if let [digit] = rest {
        *digit = b'0' + (n % 10) as u8;
    }
}

/// Number of decimal digits of `n` (1 for zero).
#[inline]
pub(crate) fn digit_count(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5_000))]
        #[test]
        fn digits_are_the_zero_padded_decimal_text(n in any::<u64>(), width in 0usize..24) {
            let mut slot = vec![b'x'; width];
            put_digits(&mut slot, n);
            let full = format!("{n:0width$}");
            // The last `width` digits of the zero-padded text.
            prop_assert_eq!(&slot[..], &full.as_bytes()[full.len() - width..]);
            prop_assert_eq!(digit_count(n), n.to_string().len());
        }
    }

    #[test]
    fn edges() {
        for n in [0, 9, 10, 99, 100, 999_999_999, 1_000_000_000, u64::MAX] {
            let mut slot = [0u8; 20];
            put_digits(&mut slot, n);
            assert_eq!(std::str::from_utf8(&slot).ok(), Some(format!("{n:020}").as_str()));
            assert_eq!(digit_count(n), n.to_string().len());
        }
    }
}
