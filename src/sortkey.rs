//! Order-preserving sort strings: this module owns how typed values (issue numbers, text, numbers,
//! dates, issue state) are encoded into the strings stored in the GSI sort key `GSI1SK`.
//!
//! DynamoDB compares string sort keys by their UTF-8 bytes, so every encoder here is built so that
//! byte order of the encodings equals the order of the values. No encoder ever emits U+0000 or
//! U+0001. That keeps [`SEPARATOR`] below every byte an encoding can contain, which is what makes a
//! value that is a prefix of another value sort first once the issue number is appended by
//! [`with_num`].

use bigdecimal::num_bigint::Sign;
use bigdecimal::BigDecimal;
use chrono::{Datelike, NaiveDate};

use crate::model::decimal_digits;

/// Separates the value part from the issue-number part of a composite sort string.
pub const SEPARATOR: char = '\u{1}';

/// DynamoDB's limit on a sort key's size in bytes (kept with the other limits).
pub use crate::store::limits::MAX_SORT_KEY_BYTES;

/// Width of [`num`]'s output; a `u32` never has more than ten decimal digits.
const NUM_WIDTH: usize = 10;

/// The room left for the value part once the separator and the issue number are appended.
const MAX_VALUE_PART_BYTES: usize = MAX_SORT_KEY_BYTES - SEPARATOR.len_utf8() - NUM_WIDTH;

/// The first byte of every escape pair that [`text`] emits. Because the bytes 0x00..=0x02 are
/// always escaped, a 0x02 byte in an encoded text is always the start of a pair.
const ESCAPE: u8 = 0x02;

/// Leading byte of a negative number's encoding; it must sort below [`ZERO`] and [`POSITIVE`].
const NEGATIVE: char = '1';

/// The whole encoding of the number zero.
const ZERO: &str = "2";

/// Leading byte of a positive number's encoding.
const POSITIVE: char = '3';

/// Ends every negative number's encoding. It sorts above every digit, so a negative number whose
/// complemented digits are a prefix of another's (-0.12 against -0.123) sorts after it, which is
/// right because its magnitude is smaller. It also keeps negative encodings prefix-free, which the
/// composite key relies on.
const NEGATIVE_END: char = '~';

/// The midpoint of the exponent's length byte: non-negative exponents with `L` digits get the
/// byte `EXPONENT_MID + L` and negative ones `EXPONENT_MID - L`. An `i128` has at most 39 digits,
/// so the byte stays within `')'..='w'`, printable ASCII well clear of U+0000 and U+0001.
const EXPONENT_MID: u8 = b'P';

/// Issue number: fixed-width 10 ASCII digits, zero padded, so byte order equals `u32` order.
/// For example `num(1) == "0000000001"`.
pub fn num(n: u32) -> String {
    // Digit by digit: `format!` with a width pads a character at a time, and a bulk load of
    // 1,000,000 issues makes nine of these per issue (5 % of the time it spent making rows).
    let mut digits = [b'0'; NUM_WIDTH];
    let mut rest = n;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    // u32::MAX has ten digits: none are left over.
    digits.iter().map(|&d| char::from(d)).collect()
}

/// Text, case-insensitive: lower-cases with [`str::to_lowercase`] (full Unicode), then escapes the
/// bytes 0x00, 0x01 and 0x02 as the pairs 0x02 0x03, 0x02 0x04 and 0x02 0x05, leaving every other
/// byte unchanged.
///
/// The result orders exactly as the lower-cased texts' bytes do, is valid UTF-8, and never
/// contains U+0000 or U+0001. Texts whose lower-case forms are equal encode equally.
pub fn text(s: &str) -> String {
    let lower = s.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    for c in lower.chars() {
        // The escape pairs keep order: an escaped byte becomes 0x02 followed by a code byte that
        // grows with the original byte, and every unescaped byte is at least 0x03, above 0x02.
        match c {
            '\u{0}' => out.push_str("\u{2}\u{3}"),
            '\u{1}' => out.push_str("\u{2}\u{4}"),
            '\u{2}' => out.push_str("\u{2}\u{5}"),
            other => out.push(other),
        }
    }
    out
}

/// Numbers (both INT and NUMBER columns): encodes any [`BigDecimal`] so that byte order equals
/// numeric order, and numerically equal values (`1.0` and `1.00`) encode equally.
///
/// With the value written as `±0.d1…dn × 10^E` (`d1 != 0`, trailing zeros dropped):
/// - zero is `"2"`;
/// - a positive value is `"3"`, the exponent `E`, then the digits `d1…dn`;
/// - a negative value is `"1"`, the exponent `-E`, the complemented digits `(9-d1)…(9-dn)`, then
///   `"~"`.
///
/// The exponent is one length byte followed by `|E|`'s decimal digits: the byte is `'P' + L` for
/// `E >= 0` and `'P' - L` for `E < 0` (with the digits complemented), where `L` is the number of
/// digits of `|E|`. It therefore handles every exponent a `BigDecimal` can have, not only
/// DynamoDB's range. Examples: `42` is `"3Q242"`, `0.001` is `"3O71"`, `-3` is `"1O86~"`.
///
/// The output is ASCII and never contains U+0000 or U+0001. It is about as long as the number
/// of significant digits plus 3 to 6 bytes (DynamoDB's 38 digits need at most 45 bytes).
pub fn decimal(d: &BigDecimal) -> String {
    let (mantissa, scale) = d.as_bigint_and_scale();
    if mantissa.sign() == Sign::NoSign {
        return ZERO.to_owned();
    }
    let digits = decimal_digits(mantissa.magnitude());
    // The value is mantissa × 10^-scale, and the mantissa has `digits.len()` digits, so the value
    // is 0.d1…dk × 10^(len - scale). Both terms fit an i128 with room to spare (`usize` is at most
    // 64 bits on every supported target), so neither the cast nor the subtraction can overflow.
    let exponent = digits.len() as i128 - i128::from(scale);
    encode_nonzero(mantissa.sign() == Sign::Minus, &digits, exponent)
}

/// Convenience for integers: equals `decimal(&BigDecimal::from(i))` without building a big
/// number.
pub fn int(i: i64) -> String {
    if i == 0 {
        return ZERO.to_owned();
    }
    let digits = i.unsigned_abs().to_string();
    // An i64 has at most 19 digits, so the cast is lossless.
    encode_nonzero(i < 0, &digits, digits.len() as i128)
}

/// Dates as `YYYY-MM-DD`, which orders chronologically for years `0..=9999`. The caller only
/// admits years `1..=9999`; outside `0..=9999` the string still never contains U+0000 or U+0001,
/// but its order is not chronological (a negative year gets a `-` sign and a year past 9999
/// gets a fifth digit).
pub fn date(d: NaiveDate) -> String {
    format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day())
}

/// Checkbox values: `"0"` for false and `"1"` for true, so unchecked sorts first.
pub fn checkbox(checked: bool) -> &'static str {
    if checked {
        "1"
    } else {
        "0"
    }
}

/// A SELECT option's order key, as it is: option keys are fractional indexes in hex (see
/// `crate::options`), ASCII digits and `a`..=`f` whose byte order is their order, so they
/// never contain U+0000 or U+0001.
pub fn select(key: &str) -> &str {
    key
}

/// Issue state: `"1"` for OPEN and `"2"` for CLOSED, so OPEN sorts before CLOSED.
pub fn state_open(open: bool) -> &'static str {
    if open {
        "1"
    } else {
        "2"
    }
}

/// The composite sort string of an index row: the value part, [`SEPARATOR`], then [`num`]`(n)`,
/// at most [`MAX_SORT_KEY_BYTES`] bytes long. `value_part` must be the output of one of this
/// module's encoders (in which a 0x02 byte always starts an escape pair).
///
/// When the value part fits in the 1013 bytes left beside the separator and the number, it is
/// kept whole, and the key orders strictly by (value, number). When it is longer it is cut to
/// the longest prefix of at most 1013 bytes that ends on a char boundary and does not split an
/// escape pair. If that cut drops a char that straddles the limit (rather than an escape pair),
/// the 1 to 3 bytes left over are filled with the largest char that fits them (U+007F, U+07FF or
/// U+FFFF). The filler never sorts above the dropped char and never below any char that fits, so
/// cutting stays monotone: a value before another never gets a key after it. Without the
/// filler, `"a…az"` would keep its `z` while `"a…aé"` lost its `é` and sorted first.
///
/// Long values that share their first 1013 bytes (or differ only in a straddling char) get equal
/// value parts, so among them only the issue number decides.
pub fn with_num(value_part: &str, n: u32) -> String {
    with_suffix(value_part, &num(n))
}

/// Like [`with_num`], with any tie-breaking `suffix` (which must not contain U+0000 or U+0001)
/// instead of an issue number: the value part is cut to leave room for the separator and the
/// suffix. Keys with suffixes of equal length cut at the same place and order as [`with_num`]
/// describes.
pub fn with_suffix(value_part: &str, suffix: &str) -> String {
    let max_value = MAX_SORT_KEY_BYTES
        .saturating_sub(SEPARATOR.len_utf8() + suffix.len())
        .min(MAX_VALUE_PART_BYTES);
    let mut out = String::with_capacity(value_part.len().min(max_value) + 1 + suffix.len());
    push_value_part(&mut out, value_part, max_value);
    out.push(SEPARATOR);
    out.push_str(suffix);
    out
}

/// One key of a [`composite`] sort string: a value part (the output of one of this module's
/// encoders), or `None` for an empty cell, with its direction and where its empty cells go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompositeKey<'a> {
    pub value: Option<&'a str>,
    pub descending: bool,
    pub empty_first: bool,
}

/// The most keys a [`composite`] sort string has.
pub const MAX_COMPOSITE_KEYS: usize = 3;

/// Marks an empty cell placed before every value (`0`), a value (`1`), or an empty cell placed
/// after every value (`2`): the same whatever the key's direction.
const EMPTY_FIRST_MARK: char = '0';
const VALUE_MARK: char = '1';
const EMPTY_LAST_MARK: char = '2';

/// A descending key's bytes are each written as two chars from `A` (0) to `P` (15), of the
/// byte's complement, so byte order is reversed; [`DESCENDING_END`] ends the key and sorts
/// above every such char, so a value that is a prefix of another sorts after it.
const DESCENDING_DIGIT: u8 = b'A';
const DESCENDING_END: char = '~';

/// The bytes each of `keys` keys may take, marker and end included, once the issue number
/// (10 bytes) has its place: the 1024 bytes of a `GSI1` sort key shared equally.
pub fn composite_key_budget(keys: usize) -> usize {
    (MAX_SORT_KEY_BYTES - NUM_WIDTH) / keys.clamp(1, MAX_COMPOSITE_KEYS)
}

/// The longest value part a key of a `keys`-key composite keeps whole: ascending, its budget
/// less the marker and the end; descending, half that (each byte takes two chars). Longer value
/// parts are cut as [`with_num`] describes, so order stays monotone: such values tie on the
/// key, and the keys after it (then the issue number) decide among them.
pub fn composite_exact_bytes(keys: usize, descending: bool) -> usize {
    let room = composite_key_budget(keys) - 2;
    if descending {
        room / 2
    } else {
        room
    }
}

/// A saved view's sort string: each key in turn, then the issue number, so that one ascending
/// Query of a view's `GSI1` partition returns its rows in the view's order, whatever the mix of
/// directions.
///
/// A key is a mark ([`EMPTY_FIRST_MARK`], [`VALUE_MARK`], [`EMPTY_LAST_MARK`]), then for a value
/// its part: ascending as it is, ended by [`SEPARATOR`] (below every byte of a part, so a prefix
/// sorts first); descending order-reversed (see [`DESCENDING_DIGIT`]), ended by
/// [`DESCENDING_END`]. The issue number is ascending, or complemented (`u32::MAX - n`, still ten digits) when the
/// first key is descending: ties break by num in the direction of the first key, so a one-key
/// view orders as `Project.issues(orderBy:)` does (exactly for values whose part fits
/// [`composite_exact_bytes`]: 1,012 bytes ascending, 506 descending; beyond, both are cut
/// monotonically, at slightly different lengths). Each key takes at most
/// [`composite_key_budget`] bytes, so the whole is within [`MAX_SORT_KEY_BYTES`].
pub fn composite(keys: &[CompositeKey<'_>], n: u32) -> String {
    let keys = &keys[..keys.len().min(MAX_COMPOSITE_KEYS)];
    let mut out = String::with_capacity(64);
    for key in keys {
        match key.value {
            None if key.empty_first => out.push(EMPTY_FIRST_MARK),
            None => out.push(EMPTY_LAST_MARK),
            Some(value) => {
                out.push(VALUE_MARK);
                let max = composite_exact_bytes(keys.len(), key.descending);
                if key.descending {
                    let mut cut = String::with_capacity(value.len().min(max));
                    push_value_part(&mut cut, value, max);
                    for byte in cut.bytes() {
                        let reversed = 255 - byte;
                        out.push(char::from(DESCENDING_DIGIT + (reversed >> 4)));
                        out.push(char::from(DESCENDING_DIGIT + (reversed & 0x0f)));
                    }
                    out.push(DESCENDING_END);
                } else {
                    push_value_part(&mut out, value, max);
                    out.push(SEPARATOR);
                }
            }
        }
    }
    let first_descending = keys.first().is_some_and(|k| k.descending);
    out.push_str(&num(if first_descending { u32::MAX - n } else { n }));
    out
}

/// Appends `value` to `out`, cut as [`with_num`] describes when it exceeds `max` bytes.
fn push_value_part(out: &mut String, value: &str, max: usize) {
    if value.len() <= max {
        out.push_str(value);
        return;
    }
    let bytes = value.as_bytes();
    let mut cut = max;
    // Position 0 is always a char boundary, so the loop stops.
    while !value.is_char_boundary(cut) {
        cut -= 1;
    }
    // A cut right after 0x02 would leave half an escape pair, which would decode as nothing and
    // would sort as if the pair's code byte were missing.
    while cut > 0 && bytes[cut - 1] == ESCAPE {
        cut -= 1;
    }
    out.push_str(&value[..cut]);
    // `cut` is below `value.len()`, so the byte at `cut` exists: it starts the unit that did not
    // fit. An escape pair that does not fit is dropped without filler: any other value that
    // differs from this one at that position either also starts an escape pair there or has a
    // char there that sorts above the pair, so a shorter key is already in the right place.
    if bytes.get(cut).is_some_and(|&b| b != ESCAPE) {
        if let Some(filler) = filler(max - cut) {
            out.push(filler);
        }
    }
}

/// The largest char whose UTF-8 encoding takes at most `room` bytes, for the 1 to 3 bytes a
/// straddling char can leave; `None` when there is no room.
fn filler(room: usize) -> Option<char> {
    match room {
        1 => Some('\u{7F}'),
        2 => Some('\u{7FF}'),
        3 => Some('\u{FFFF}'),
        _ => None,
    }
}

/// Encodes a non-zero number given its sign, the decimal digits of its mantissa's magnitude
/// (possibly with trailing zeros) and its exponent `E` as in `|x| = 0.d1…dn × 10^E`.
fn encode_nonzero(negative: bool, digits: &str, exponent: i128) -> String {
    // Trailing zeros would make equal values encode differently (1 and 1.0).
    let significant = digits.trim_end_matches('0');
    let mut out = String::with_capacity(significant.len() + 24);
    if negative {
        // A larger exponent means a more negative value, so the exponent is negated; a larger
        // digit means a more negative value, so the digits are complemented. The exponent stays
        // far from i128::MIN (see `decimal`), so negating it cannot overflow.
        out.push(NEGATIVE);
        push_exponent(&mut out, -exponent);
        out.extend(significant.bytes().map(complement_digit));
        out.push(NEGATIVE_END);
    } else {
        out.push(POSITIVE);
        push_exponent(&mut out, exponent);
        out.push_str(significant);
    }
    out
}

/// Appends an order-preserving, prefix-free encoding of `e`: a length byte, then the digits.
/// Prefix-freeness matters because the mantissa digits follow, and they must never decide a
/// comparison between different exponents.
fn push_exponent(out: &mut String, e: i128) {
    let magnitude = e.unsigned_abs().to_string();
    // A u128 has at most 39 digits, so the length fits a u8 and the length byte stays printable.
    let len = magnitude.len() as u8;
    if e >= 0 {
        // More digits means a larger exponent.
        out.push(char::from(EXPONENT_MID + len));
        out.push_str(&magnitude);
    } else {
        // More digits means a smaller exponent, and among equal lengths a larger magnitude is
        // smaller, hence the complemented digits.
        out.push(char::from(EXPONENT_MID - len));
        out.extend(magnitude.bytes().map(complement_digit));
    }
}

/// Maps an ASCII digit `d` to `9 - d`, reversing digit order.
fn complement_digit(b: u8) -> char {
    char::from(b'9' - b + b'0')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn dec(s: &str) -> BigDecimal {
        BigDecimal::from_str(s).unwrap()
    }

    proptest::proptest! {
        /// An issue number is written as `format!` pads it.
        #[test]
        fn num_is_the_number_zero_padded(n in proptest::prelude::any::<u32>()) {
            proptest::prop_assert_eq!(num(n), format!("{n:010}"));
        }
    }

    #[test]
    fn num_examples() {
        assert_eq!(num(42), "0000000042");
        assert_eq!(num(0), "0000000000");
        assert_eq!(num(u32::MAX), "4294967295");
    }

    #[test]
    fn text_examples() {
        assert_eq!(text("Approved"), "approved");
        assert_eq!(
            text("a\u{0}b\u{1}c\u{2}d"),
            "a\u{2}\u{3}b\u{2}\u{4}c\u{2}\u{5}d"
        );
        assert_eq!(text("ÉCOLE"), "école");
    }

    #[test]
    fn decimal_examples() {
        assert_eq!(decimal(&dec("42")), "3Q242");
        assert_eq!(decimal(&dec("0.001")), "3O71");
        assert_eq!(decimal(&dec("-3")), "1O86~");
        assert_eq!(decimal(&dec("1e100")), "3S1011");
        assert_eq!(decimal(&dec("0")), "2");
        assert_eq!(decimal(&dec("-0.0")), "2");
        assert_eq!(decimal(&dec("1.00")), decimal(&dec("1")));
        assert_eq!(decimal(&dec("100")), decimal(&dec("1e2")));
    }

    #[test]
    fn decimal_order_examples() {
        let ordered = ["-3.5", "-3", "0", "0.001", "42", "1e100"];
        for pair in ordered.windows(2) {
            assert!(
                decimal(&dec(pair[0])) < decimal(&dec(pair[1])),
                "{} < {}",
                pair[0],
                pair[1]
            );
        }
    }

    #[test]
    fn int_matches_decimal() {
        for i in [0, 1, -1, 10, -10, 42, 1000, i64::MIN, i64::MAX] {
            assert_eq!(int(i), decimal(&BigDecimal::from(i)), "{i}");
        }
    }

    #[test]
    fn date_examples() {
        let d = NaiveDate::from_ymd_opt(2024, 3, 9).unwrap();
        assert_eq!(date(d), "2024-03-09");
        let first = NaiveDate::from_ymd_opt(1, 1, 1).unwrap();
        assert_eq!(date(first), "0001-01-01");
    }

    #[test]
    fn state_examples() {
        assert!(state_open(true) < state_open(false));
    }

    #[test]
    fn with_num_short_value_is_kept_whole() {
        assert_eq!(with_num("approved", 7), "approved\u{1}0000000007");
    }

    #[test]
    fn with_num_cut_stays_monotone_at_a_straddling_char() {
        let common = "a".repeat(MAX_VALUE_PART_BYTES - 1);
        let low = with_num(&text(&format!("{common}zzz")), 9);
        let high = with_num(&text(&format!("{common}éee")), 1);
        assert!(low < high);
        assert_eq!(high.len(), MAX_SORT_KEY_BYTES);
        assert!(high.starts_with(&format!("{common}\u{7F}\u{1}")));
    }

    #[test]
    fn with_num_never_splits_an_escape_pair() {
        let common = "a".repeat(MAX_VALUE_PART_BYTES - 1);
        let key = with_num(&text(&format!("{common}\u{0}x")), 3);
        assert_eq!(key, format!("{common}\u{1}0000000003"));
    }
}
