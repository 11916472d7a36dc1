//! Equality of attribute values as DynamoDB's conditions see it: numbers by value, sets as sets.

use std::collections::HashSet;

use crate::store::AttributeValue;

/// Equality as DynamoDB's `=` and set comparison see it: numbers compare by numeric value
/// (`"1.50"` equals `"1.5"` and `"15e-1"`), sets compare as sets (element order is not
/// significant), maps and lists compare element by element. A number that does not parse
/// falls back to string equality, which DynamoDB would never have stored in the first place.
pub(super) fn values_equal(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as V;
    match (a, b) {
        (V::N(x), V::N(y)) => numbers_equal(x, y),
        (V::Ss(x), V::Ss(y)) => as_set(x.iter()) == as_set(y.iter()),
        (V::Bs(x), V::Bs(y)) => as_set(x.iter()) == as_set(y.iter()),
        (V::Ns(x), V::Ns(y)) => {
            as_set(
                x.iter()
                    .map(|n| canonical_number(n).ok_or_else(|| n.clone())),
            ) == as_set(
                y.iter()
                    .map(|n| canonical_number(n).ok_or_else(|| n.clone())),
            )
        }
        (V::M(x), V::M(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        (V::L(x), V::L(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| values_equal(v, w))
        }
        _ => a == b,
    }
}

fn as_set<T: Eq + std::hash::Hash>(values: impl Iterator<Item = T>) -> HashSet<T> {
    values.collect()
}

fn numbers_equal(x: &str, y: &str) -> bool {
    match (canonical_number(x), canonical_number(y)) {
        (Some(a), Some(b)) => a == b,
        _ => x == y,
    }
}

/// A decimal number as (negative, significant digits, power of ten), with leading and trailing
/// zeros removed, so two spellings of one value give equal triples. Zero is `(false, "", 0)`.
fn canonical_number(n: &str) -> Option<(bool, String, i64)> {
    let n = n.trim();
    let (negative, unsigned) = match n.as_bytes().first() {
        Some(b'-') => (true, &n[1..]),
        Some(b'+') => (false, &n[1..]),
        _ => (false, n),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{int}{frac}");
    let mut power = exponent.checked_sub(i64::try_from(frac.len()).ok()?)?;
    let trimmed = digits.trim_start_matches('0');
    let significant = trimmed.trim_end_matches('0');
    if significant.is_empty() {
        return Some((false, String::new(), 0));
    }
    power = power.checked_add(i64::try_from(trimmed.len() - significant.len()).ok()?)?;
    Some((negative, significant.to_owned(), power))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_by_value() {
        for (a, b) in [
            ("1.5", "1.50"),
            ("15e-1", "1.5"),
            ("0", "-0.00"),
            ("100", "1E2"),
            ("+7", "7"),
        ] {
            assert!(numbers_equal(a, b), "{a} = {b}");
        }
        for (a, b) in [("1.5", "1.05"), ("-1", "1"), ("10", "1")] {
            assert!(!numbers_equal(a, b), "{a} != {b}");
        }
        assert!(values_equal(
            &AttributeValue::Ss(vec!["a".into(), "b".into()]),
            &AttributeValue::Ss(vec!["b".into(), "a".into()])
        ));
        assert!(!values_equal(
            &AttributeValue::S("1".into()),
            &AttributeValue::N("1".into())
        ));
    }
}
