//! The one byte search JSON text needs everywhere: where the next byte is that a JSON string
//! cannot hold as it is (a quote, a backslash or a control character).
//!
//! Reading DynamoDB JSON (`store::ddbjson`) looks for the end of each string, and writing
//! grid rows (`graphql::rows`) asks whether a string needs escaping. Both run once per string
//! of every row of every page, so the search goes eight bytes at a time, with the word tricks
//! of "Bit Twiddling Hacks" (`haszero`, `hasless`).

/// The offset of the first quote, backslash or control character (below U+0020) in
/// `bytes`, if there is one.
pub fn special_at(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    // For each byte of `v`, its high bit is set where the byte is zero (`haszero`) or below
    // 0x20 (`hasless`). A borrow can also flag a byte above a flagged one, never below it:
    // so the lowest flag, the first byte in memory of a little-endian word, is exact.
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let v = u64::from_le_bytes(word);
        let control = v.wrapping_sub(ONES * 0x20) & !v & HIGHS;
        let flags =
            control | zero(v ^ (ONES * u64::from(b'"'))) | zero(v ^ (ONES * u64::from(b'\\')));
        if flags != 0 {
            return Some(offset + flags.trailing_zeros() as usize / 8);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| is_special(b))
        .map(|at| offset + at)
}

/// Whether JSON must escape `byte` inside a string.
pub fn is_special(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The obvious search, byte by byte.
    fn naive(bytes: &[u8]) -> Option<usize> {
        bytes.iter().position(|&b| is_special(b))
    }

    /// Every special byte is found at every offset of a word and of the remainder, and the
    /// bytes next to them in value (space, `#`, `[`, `]`, DEL, non-ASCII) are not; a second
    /// special byte after the first does not move the answer.
    #[test]
    fn finds_the_first_special_byte_anywhere() {
        for len in 1..=20 {
            for at in 0..len {
                for b in (0u8..0x20).chain([b'"', b'\\']) {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    assert_eq!(special_at(&bytes), Some(at), "{b:#x} at {at} of {len}");
                    for later in at + 1..len {
                        let mut two = bytes.clone();
                        two[later] = b'"';
                        assert_eq!(special_at(&two), Some(at), "then a quote at {later}");
                    }
                }
                for b in [b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xa2, 0xdc, 0xff] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    assert_eq!(special_at(&bytes), None, "{b:#x} at {at} of {len}");
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_the_byte_by_byte_search(bytes in proptest::collection::vec(
            proptest::prop_oneof![
                4 => 0x20u8..0x7f,
                1 => proptest::prelude::any::<u8>(),
            ],
            0..64,
        )) {
            proptest::prop_assert_eq!(special_at(&bytes), naive(&bytes));
        }
    }
}
