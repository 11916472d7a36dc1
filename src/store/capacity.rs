//! Read capacity as DynamoDB charges it, so the embedded store reports the same costs.
//!
//! Rules (eventually consistent reads, as every gridgate read is): an item's size is the sum of
//! its attribute names and values; a Query sums the sizes of all items it read (before any
//! filter) and rounds the total up to 4 KB; BatchGetItem rounds each item up to 4 KB on its own.
//! One 4 KB unit costs 0.5 RCU, or 1 RCU when strongly consistent.
//!
//! Writes: an item costs 1 WCU per started 1 KB, counting the larger of its size before and
//! after the write (a delete counts the item it removed, at least 1 WCU); inside
//! TransactWriteItems every operation, condition checks included, costs twice that.

use std::ops::{Add, AddAssign};
use std::str::FromStr;

use bigdecimal::num_bigint::Sign;
use bigdecimal::{BigDecimal, Zero};

use super::{AttributeValue, Item};

/// Size of one read unit.
pub const READ_UNIT_BYTES: usize = 4096;
/// Cost of one read unit with eventually consistent reads.
const EVENTUAL_RCU_PER_UNIT: f64 = 0.5;

/// Size of one write unit.
pub const WRITE_UNIT_BYTES: usize = 1024;

/// Consumed read and write capacity units of one or more calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Capacity {
    pub read_units: f64,
    pub write_units: f64,
}

impl Capacity {
    pub const ZERO: Capacity = Capacity {
        read_units: 0.0,
        write_units: 0.0,
    };

    pub fn read(read_units: f64) -> Self {
        Capacity {
            read_units,
            write_units: 0.0,
        }
    }

    pub fn write(write_units: f64) -> Self {
        Capacity {
            read_units: 0.0,
            write_units,
        }
    }

    /// What a strongly consistent read of items totalling `bytes` costs (GetItem, or a
    /// consistent Query): 1 RCU per started 4 KB, at least one.
    pub fn for_consistent_bytes(bytes: usize) -> Self {
        Capacity::read(units(bytes).max(1) as f64)
    }

    /// What one operation of a write costs, given the sizes of the item before and after
    /// (0 when absent), inside a transaction or not.
    pub fn for_write(before: usize, after: usize, transactional: bool) -> Self {
        let units = before.max(after).div_ceil(WRITE_UNIT_BYTES).max(1) as f64;
        Capacity::write(if transactional { 2.0 * units } else { units })
    }

    /// What a Query that read items totalling `bytes` costs. DynamoDB charges at least one
    /// unit even for a query that read nothing.
    pub fn for_query_bytes(bytes: usize) -> Self {
        Capacity::read(units(bytes).max(1) as f64 * EVENTUAL_RCU_PER_UNIT)
    }

    /// What reading items of these sizes in a BatchGetItem costs: each rounded up on its own.
    pub fn for_batch_get_sizes(sizes: impl IntoIterator<Item = usize>) -> Self {
        let total: usize = sizes.into_iter().map(|s| units(s).max(1)).sum();
        Capacity::read(total as f64 * EVENTUAL_RCU_PER_UNIT)
    }
}

impl Add for Capacity {
    type Output = Capacity;
    fn add(self, rhs: Capacity) -> Capacity {
        Capacity {
            read_units: self.read_units + rhs.read_units,
            write_units: self.write_units + rhs.write_units,
        }
    }
}

impl AddAssign for Capacity {
    fn add_assign(&mut self, rhs: Capacity) {
        self.read_units += rhs.read_units;
        self.write_units += rhs.write_units;
    }
}

fn units(bytes: usize) -> usize {
    bytes.div_ceil(READ_UNIT_BYTES)
}

/// The size of an item as DynamoDB counts it.
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| attribute_size(name, value))
        .sum()
}

/// What one attribute adds to its item's size: its name and its value.
pub fn attribute_size(name: &str, value: &AttributeValue) -> usize {
    name.len() + value_size(value)
}

/// What a key attribute (always `S`) adds to its item's size.
pub fn key_size(name: &str, value: &str) -> usize {
    name.len() + value.len()
}

/// The size of one attribute value as DynamoDB counts it: strings and binaries by length,
/// numbers by significant digits (two per byte, plus one), one byte for booleans and nulls,
/// three bytes plus one per element for lists and maps.
pub fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| k.len() + value_size(v) + 1)
                .sum::<usize>()
        }
        AttributeValue::L(list) => 3 + list.iter().map(|v| value_size(v) + 1).sum::<usize>(),
        AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
        AttributeValue::Ns(set) => set.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(set) => set.iter().map(Vec::len).sum(),
    }
}

/// DynamoDB stores a number as base-100 digit pairs aligned on the decimal point (leading and
/// trailing zero pairs dropped), plus one byte, plus one more for a negative number: `1.5` is
/// `01|.50`, 3 bytes; `-100.001` is `01|00|.00|10`, 6 bytes. (Calibrated against DynamoDB Local's
/// reported capacity; see `tests/store/conformance.rs`.) A string that is not a number — which
/// a store would have rejected — is counted by its length.
fn number_size(n: &str) -> usize {
    plain_number_size(n).unwrap_or_else(|| exact_number_size(n))
}

/// [`number_size`] of a plain decimal (`-?digits(.digits)?`, what gridgate writes and
/// DynamoDB returns), by scanning its digits: metering runs on every number of every item
/// read, and parsing each into a big decimal cost a grid page several percent of its CPU.
/// `None` for any other spelling (exponents, a sign `+`, blanks), left to the exact path.
fn plain_number_size(n: &str) -> Option<usize> {
    let (negative, digits) = match n.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, n),
    };
    let (int, frac) = match digits.split_once('.') {
        Some((int, frac)) => (int, frac),
        None => (digits, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty()
        || !all_digits(int)
        || !all_digits(frac)
        || (digits.len() > int.len() && frac.is_empty())
    {
        return None;
    }
    // Powers of ten of the highest and lowest non-zero digits: the integer part's digits are
    // the powers len-1 down to 0, the fraction's -1 down to -len.
    let int = int.trim_start_matches('0');
    let frac_significant = frac.trim_end_matches('0');
    let highest = if !int.is_empty() {
        int.len() as i64 - 1
    } else {
        let zeros = frac_significant.bytes().take_while(|b| *b == b'0').count();
        if zeros == frac_significant.len() {
            return Some(1); // zero, whatever its sign
        }
        -(zeros as i64) - 1
    };
    let lowest = if !frac_significant.is_empty() {
        -(frac_significant.len() as i64)
    } else {
        (int.len() - int.trim_end_matches('0').len()) as i64
    };
    let pairs = highest.div_euclid(2) - lowest.div_euclid(2) + 1;
    Some(pairs as usize + 1 + usize::from(negative))
}

/// [`number_size`] of any spelling a store accepts, through a big decimal.
fn exact_number_size(n: &str) -> usize {
    let Ok(d) = BigDecimal::from_str(n.trim()) else {
        return n.len();
    };
    let d = d.normalized();
    if d.is_zero() {
        return 1;
    }
    let (int, scale) = d.as_bigint_and_exponent();
    let digits = int.magnitude().to_string().len() as i64;
    // Powers of ten of the lowest and highest non-zero digits; each base-100 pair covers the
    // powers 2k and 2k+1.
    let lowest = -scale;
    let highest = digits - 1 - scale;
    let pairs = highest.div_euclid(2) - lowest.div_euclid(2) + 1;
    let sign = usize::from(int.sign() == Sign::Minus);
    pairs as usize + 1 + sign
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<std::collections::HashMap<_, _>>()
            .into()
    }

    #[test]
    fn sizes_follow_dynamodb_rules() {
        let it = item(&[
            ("PK", AttributeValue::S("issue-020e".into())),
            ("Num", AttributeValue::N("-12.50".into())),
            ("Ok", AttributeValue::Bool(true)),
            (
                "Values",
                AttributeValue::M(
                    [("a".to_string(), AttributeValue::S("xy".into()))]
                        .into_iter()
                        .collect(),
                ),
            ),
        ]);
        // PK: 2 + 10; Num: 3 + (12|.50 -> 2 pairs + 1 + 1 for the sign); Ok: 2 + 1;
        // Values: 6 + 3 + (1 + 2 + 1).
        assert_eq!(item_size(&it), 12 + 7 + 3 + 13);
    }

    #[test]
    fn numbers_count_base_100_pairs_aligned_on_the_point() {
        for (n, size) in [
            ("0", 1),
            ("-1", 3),
            ("-0.000123", 4),
            ("1.5", 3),
            ("3.14159", 5),
            ("100.001", 5),
            ("-100.001", 6),
            ("-1.5", 4),
            ("12.5", 3),
            ("123000", 3),
            ("1E-130", 2),
            ("12345678901234567890123456789012345678", 20),
            ("-12345678901234567890123456789012345678", 21),
        ] {
            assert_eq!(number_size(n), size, "{n}");
        }
    }

    proptest::proptest! {
        /// The digit scan agrees with the big-decimal path on every plain decimal, zeros and
        /// signs included, and leaves every other spelling to it.
        #[test]
        fn plain_numbers_are_sized_as_the_exact_path_sizes_them(
            n in "-?[0-9]{1,40}(\\.[0-9]{1,40})?",
            other in "[-+]?[0-9]{0,5}(\\.[0-9]{0,5})?([eE][-+]?[0-9]{1,3})?",
        ) {
            proptest::prop_assert_eq!(plain_number_size(&n), Some(exact_number_size(&n)), "{}", n);
            if let Some(size) = plain_number_size(&other) {
                proptest::prop_assert_eq!(size, exact_number_size(&other), "{}", other);
            }
        }
    }

    #[test]
    fn query_rounds_the_total_and_batch_get_each_item() {
        assert_eq!(Capacity::for_query_bytes(0).read_units, 0.5);
        assert_eq!(Capacity::for_query_bytes(4096).read_units, 0.5);
        assert_eq!(Capacity::for_query_bytes(4097).read_units, 1.0);
        assert_eq!(
            Capacity::for_batch_get_sizes([10, 10, 5000]).read_units,
            2.0
        );
    }
}
