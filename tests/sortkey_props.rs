//! Property tests for `gridgate::sortkey`: every encoder's byte order must equal its domain order,
//! and composite keys must order by (value, issue number), also once long values are cut; the
//! saved views' composites of several keys must order as a plain comparator does.

use std::cmp::Ordering;
use std::str::FromStr;

use bigdecimal::num_bigint::BigInt;
use bigdecimal::BigDecimal;
use chrono::NaiveDate;
use gridgate::sortkey::{
    composite, composite_exact_bytes, date, decimal, int, num, state_open, text, with_num,
    CompositeKey, MAX_SORT_KEY_BYTES, SEPARATOR,
};
use proptest::prelude::*;

/// Bytes taken by the separator and the issue number at the end of every composite key.
const SUFFIX_BYTES: usize = 11;

/// Value-part room inside a composite key.
const VALUE_ROOM: usize = MAX_SORT_KEY_BYTES - SUFFIX_BYTES;

/// Characters chosen to hit the escapes, the separator, case folding and multi-byte UTF-8.
const TRICKY_CHARS: &str =
    "[\\x00-\\x03\\x1f\\x7fa-cA-C#\\u{e9}\\u{c9}\\u{130}\\u{212a}\\u{1e9e}\\u{1F600}]";

fn tricky_text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("{TRICKY_CHARS}{{0,{max}}}")).unwrap()
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![tricky_text(12), any::<String>()]
}

/// Texts long enough to be cut, with multi-byte chars and U+0000 mixed in.
fn long_text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[\\x00ab\\u{e9}\\u{800}\\u{1F600}]{600,2000}").unwrap()
}

/// Tails that put every kind of unit (escape pair, 1- to 4-byte char, the fillers themselves)
/// right at the cut position.
fn boundary_tail() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        "[\\x00-\\x03aAz\\u{7f}\\u{80}\\u{130}\\u{7ff}\\u{800}\\u{212a}\\u{ffff}\\u{10000}\\u{1F600}]{0,6}",
    )
    .unwrap()
}

/// Pairs of texts sharing a prefix that ends within a few bytes of the cut, so the cut lands
/// inside the part where they differ.
fn boundary_pair() -> impl Strategy<Value = (String, String)> {
    (
        (VALUE_ROOM - 8)..=VALUE_ROOM,
        "[a\\u{e9}]{0,2}",
        boundary_tail(),
        boundary_tail(),
    )
        .prop_map(|(n, mid, a, b)| {
            let common = format!("{}{mid}", "a".repeat(n));
            (format!("{common}{a}"), format!("{common}{b}"))
        })
}

/// True when `s` holds neither U+0000 nor the separator U+0001.
fn is_clean(s: &str) -> bool {
    !s.contains('\0') && !s.contains(SEPARATOR)
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

fn value_part(key: &str) -> &str {
    &key[..key.len() - SUFFIX_BYTES]
}

/// Checks a composite key's shape: length limit, separator, number suffix, no stray U+0000 or
/// U+0001 and no half escape pair at the end of the value part.
fn check_shape(key: &str, n: u32) {
    assert!(key.len() <= MAX_SORT_KEY_BYTES, "{} bytes", key.len());
    assert!(std::str::from_utf8(key.as_bytes()).is_ok());
    assert!(key.ends_with(&format!("{SEPARATOR}{}", num(n))));
    let value = value_part(key);
    assert!(is_clean(value));
    assert!(
        !value.ends_with('\u{2}'),
        "value part ends inside an escape pair"
    );
}

/// For texts that may have been cut: a before b never gives a key after b's, and equal value
/// parts leave the order to the issue number.
fn check_text_composite_monotone(a: &str, x: u32, b: &str, y: u32) {
    let (ka, kb) = (with_num(&text(a), x), with_num(&text(b), y));
    check_shape(&ka, x);
    check_shape(&kb, y);
    let (va, vb) = (value_part(&ka), value_part(&kb));
    let got = ka.cmp(&kb);
    if va == vb {
        assert_eq!(got, x.cmp(&y));
    } else {
        assert_eq!(got, va.cmp(vb));
        // Cutting may merge values but never swaps them.
        assert_eq!(va.cmp(vb), lower(a).cmp(&lower(b)), "cut swapped the order");
    }
    if text(a).len() <= VALUE_ROOM && text(b).len() <= VALUE_ROOM {
        assert_eq!(got, (lower(a), x).cmp(&(lower(b), y)));
    }
}

fn decimal_value() -> impl Strategy<Value = BigDecimal> {
    let special = prop::sample::select(vec![
        "0",
        "-0.0",
        "0.000",
        "1",
        "-1",
        "1.0",
        "0.1",
        "-0.1",
        "0.12",
        "0.123",
        "-0.12",
        "-0.123",
        "1e125",
        "-1e125",
        "1e-130",
        "-1e-130",
        "10",
        "9.99",
        "-10",
        "-9.99",
        "1e38",
        "1e-38",
        "99999999999999999999999999999999999999",
    ])
    .prop_map(|s| BigDecimal::from_str(s).unwrap());
    prop_oneof![
        special,
        (any::<i64>(), -150i64..150).prop_map(|(m, s)| BigDecimal::new(BigInt::from(m), s)),
        (any::<i128>(), -150i64..150).prop_map(|(m, s)| BigDecimal::new(BigInt::from(m), s)),
        // Small mantissas and trailing zeros make numerically equal values with different
        // scales likely, which exercises the equality half of the property.
        (-1000i64..1000, -3i64..3).prop_map(|(m, s)| BigDecimal::new(BigInt::from(m), s)),
        (-99i64..99, 0u32..20, -25i64..25).prop_map(|(m, z, s)| {
            BigDecimal::new(BigInt::from(m) * BigInt::from(10).pow(z), s)
        }),
    ]
}

fn date_value() -> impl Strategy<Value = NaiveDate> {
    // Days 1 and 3_652_059 from the common era are 0001-01-01 and 9999-12-31.
    prop_oneof![
        1i32..=3_652_059,
        1i32..=800,
        3_651_300i32..=3_652_059,
        prop::sample::select(vec![1, 365, 366, 3_652_059])
    ]
    .prop_map(|days| NaiveDate::from_num_days_from_ce_opt(days).unwrap())
}

fn int_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -1100i64..1100,
        prop::sample::select(vec![
            i64::MIN,
            i64::MIN + 1,
            -1,
            0,
            1,
            i64::MAX - 1,
            i64::MAX
        ]),
    ]
}

proptest! {
    #[test]
    fn num_order(a: u32, b: u32) {
        prop_assert_eq!(num(a).cmp(&num(b)), a.cmp(&b));
        prop_assert_eq!(num(a).len(), 10);
    }

    #[test]
    fn text_order(a in any_text(), b in any_text()) {
        prop_assert_eq!(text(a.as_str()).cmp(&text(b.as_str())), lower(&a).cmp(&lower(&b)));
    }

    #[test]
    fn text_never_contains_nul_or_separator(a in any_text()) {
        let t = text(&a);
        prop_assert!(is_clean(&t));
    }

    #[test]
    fn text_composite_order(a in any_text(), x in 0u32..3, b in any_text(), y in 0u32..3) {
        let got = with_num(&text(&a), x).cmp(&with_num(&text(&b), y));
        prop_assert_eq!(got, (lower(&a), x).cmp(&(lower(&b), y)));
    }

    #[test]
    fn text_composite_with_shared_prefix(p in tricky_text(6), a in tricky_text(4), x in 0u32..3, b in tricky_text(4), y in 0u32..3) {
        // Shared prefixes make "one text is a prefix of the other" common.
        let (a, b) = (format!("{p}{a}"), format!("{p}{b}"));
        let got = with_num(&text(&a), x).cmp(&with_num(&text(&b), y));
        prop_assert_eq!(got, (lower(&a), x).cmp(&(lower(&b), y)));
    }

    #[test]
    fn decimal_order(a in decimal_value(), b in decimal_value()) {
        prop_assert_eq!(decimal(&a).cmp(&decimal(&b)), a.cmp(&b), "{} vs {}", a, b);
    }

    #[test]
    fn decimal_never_contains_nul_or_separator(a in decimal_value()) {
        let d = decimal(&a);
        prop_assert!(d.is_ascii() && is_clean(&d));
    }

    #[test]
    fn decimal_composite_order(a in decimal_value(), x in 0u32..4, b in decimal_value(), y in 0u32..4) {
        let got = with_num(&decimal(&a), x).cmp(&with_num(&decimal(&b), y));
        prop_assert_eq!(got, (&a, x).cmp(&(&b, y)), "{} vs {}", a, b);
    }

    #[test]
    fn int_order(a in int_value(), b in int_value()) {
        prop_assert_eq!(int(a).cmp(&int(b)), a.cmp(&b));
        prop_assert_eq!(int(a), decimal(&BigDecimal::from(a)));
    }

    #[test]
    fn date_order(a in date_value(), b in date_value()) {
        prop_assert_eq!(date(a).cmp(&date(b)), a.cmp(&b));
        let d = date(a);
        prop_assert!(is_clean(&d));
    }

    #[test]
    fn date_composite_order(a in date_value(), x in 0u32..4, b in date_value(), y in 0u32..4) {
        let got = with_num(&date(a), x).cmp(&with_num(&date(b), y));
        prop_assert_eq!(got, (a, x).cmp(&(b, y)));
    }

    #[test]
    fn num_never_contains_nul_or_separator(n: u32) {
        prop_assert!(num(n).bytes().all(|b| b.is_ascii_digit()));
    }

    #[test]
    fn long_text_cut(a in long_text(), x: u32, b in long_text(), y: u32) {
        check_text_composite_monotone(&a, x, &b, y);
        check_text_composite_monotone(&a, x, &a, y);
    }

    #[test]
    fn cut_near_the_limit((a, b) in boundary_pair(), x in 0u32..3, y in 0u32..3) {
        check_text_composite_monotone(&a, x, &b, y);
    }

    #[test]
    fn fitting_or_cut_mixed(short in tricky_text(12), long in long_text(), x in 0u32..3, y in 0u32..3) {
        check_text_composite_monotone(&short, x, &long, y);
        check_text_composite_monotone(&long, x, &short, y);
    }
}

#[test]
fn state_order() {
    assert_eq!(state_open(true).cmp(state_open(false)), Ordering::Less);
    for s in [state_open(true), state_open(false)] {
        assert!(is_clean(s));
    }
}

#[test]
fn decimal_examples_order() {
    let chain = [
        "-1e125", "-3.5", "-3", "-1", "-0.123", "-0.12", "-0.1", "-1e-130", "0", "1e-130", "0.001",
        "0.1", "0.12", "0.123", "1", "9.99", "10", "42", "1e100", "1e125",
    ];
    let encoded: Vec<String> = chain
        .iter()
        .map(|s| decimal(&BigDecimal::from_str(s).unwrap()))
        .collect();
    for (i, pair) in encoded.windows(2).enumerate() {
        assert!(pair[0] < pair[1], "{} < {}", chain[i], chain[i + 1]);
        // The separator must not flip prefix pairs such as 0.12 / 0.123 or -0.12 / -0.123.
        assert!(with_num(&pair[0], u32::MAX) < with_num(&pair[1], 0));
    }
    assert_eq!(
        decimal(&BigDecimal::from_str("-0.0").unwrap()),
        decimal(&BigDecimal::from(0))
    );
}

#[test]
fn fitting_text_is_kept_whole() {
    let exact = "x".repeat(VALUE_ROOM);
    assert_eq!(with_num(&exact, 5), format!("{exact}{SEPARATOR}0000000005"));
    assert_eq!(with_num(&exact, 5).len(), MAX_SORT_KEY_BYTES);
}

// ---------------------------------------------------------------------------------------------
// Composite sort strings of saved views (`sortkey::composite`): several keys, each with its
// own direction and empty placement, then the issue number in the first key's direction.

/// A cell of one of three types, so keys of different types mix in one composite.
#[derive(Clone, Debug)]
enum Cell {
    Text(String),
    Int(i64),
    Date(NaiveDate),
}

impl Cell {
    fn part(&self) -> String {
        match self {
            Cell::Text(t) => text(t),
            Cell::Int(i) => int(*i),
            Cell::Date(d) => date(*d),
        }
    }

    /// The order users expect, without sort strings.
    fn cmp(&self, other: &Cell) -> Ordering {
        match (self, other) {
            (Cell::Text(a), Cell::Text(b)) => lower(a).cmp(&lower(b)),
            (Cell::Int(a), Cell::Int(b)) => a.cmp(b),
            (Cell::Date(a), Cell::Date(b)) => a.cmp(b),
            _ => unreachable!("a key's cells share its type"),
        }
    }
}

/// A key's type (0 text, 1 int, 2 date), direction and empty placement.
type KeySpec = (u8, bool, bool);

fn cell_of(kind: u8) -> BoxedStrategy<Option<Cell>> {
    let cell = match kind {
        0 => tricky_text(6).prop_map(Cell::Text).boxed(),
        1 => prop_oneof![-3i64..3, int_value()]
            .prop_map(Cell::Int)
            .boxed(),
        _ => date_value().prop_map(Cell::Date).boxed(),
    };
    prop::option::weighted(0.8, cell).boxed()
}

/// Key specs and two rows of cells for them.
fn composite_case() -> impl Strategy<Value = (Vec<KeySpec>, Vec<Option<Cell>>, Vec<Option<Cell>>)> {
    prop::collection::vec((0u8..3, any::<bool>(), any::<bool>()), 1..=3).prop_flat_map(|specs| {
        let row = specs
            .iter()
            .map(|(kind, _, _)| cell_of(*kind))
            .collect::<Vec<_>>();
        (Just(specs), row.clone(), row)
    })
}

fn composite_of(specs: &[KeySpec], cells: &[Option<Cell>], n: u32) -> String {
    let parts: Vec<Option<String>> = cells.iter().map(|c| c.as_ref().map(Cell::part)).collect();
    let keys: Vec<CompositeKey<'_>> = specs
        .iter()
        .zip(&parts)
        .map(|((_, descending, empty_first), part)| CompositeKey {
            value: part.as_deref(),
            descending: *descending,
            empty_first: *empty_first,
        })
        .collect();
    composite(&keys, n)
}

/// The reference: key by key, empty cells first or last whatever the direction, values in
/// the key's direction; then the issue number in the first key's direction.
fn composite_reference(
    specs: &[KeySpec],
    a: &[Option<Cell>],
    x: u32,
    b: &[Option<Cell>],
    y: u32,
) -> Ordering {
    for ((_, descending, empty_first), (p, q)) in specs.iter().zip(a.iter().zip(b)) {
        let order = match (p, q) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) if *empty_first => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) if *empty_first => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(p), Some(q)) if *descending => q.cmp(p),
            (Some(p), Some(q)) => p.cmp(q),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    if specs[0].1 {
        y.cmp(&x)
    } else {
        x.cmp(&y)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random keys of every type, direction and empty placement order as the reference does.
    #[test]
    fn composite_orders_as_the_reference((specs, a, b) in composite_case(), x in 0u32..3, y in 0u32..3) {
        let (ka, kb) = (composite_of(&specs, &a, x), composite_of(&specs, &b, y));
        prop_assert!(ka.len() <= MAX_SORT_KEY_BYTES);
        prop_assert!(!ka.contains('\0'));
        prop_assert_eq!(ka.cmp(&kb), composite_reference(&specs, &a, x, &b, y), "{:?} {:?} / {:?}", specs, ka, kb);
    }

    /// A one-key composite orders exactly as the single-key sort string of `Project.issues`,
    /// in both directions.
    #[test]
    fn one_key_orders_as_a_plain_sort(a in any_text(), x in 0u32..3, b in any_text(), y in 0u32..3, descending: bool) {
        let key = |t: &str, n| {
            let part = text(t);
            composite(&[CompositeKey { value: Some(&part), descending, empty_first: false }], n)
        };
        let plain = with_num(&text(&a), x).cmp(&with_num(&text(&b), y));
        let expected = if descending { plain.reverse() } else { plain };
        prop_assert_eq!(key(&a, x).cmp(&key(&b, y)), expected);
    }

    /// Values past a key's exact length are cut: three long keys still fit in 1024 bytes, and
    /// a key never swaps two values (values that tie once cut leave the order to what
    /// follows).
    #[test]
    fn long_values_fit_and_stay_monotone(a in long_text(), b in long_text(), descending: bool, keys in 1usize..=3) {
        let (pa, pb) = (text(&a), text(&b));
        let row = |part: &str| -> String {
            let key = CompositeKey { value: Some(part), descending, empty_first: false };
            composite(&vec![key; keys], 7)
        };
        let (ka, kb) = (row(&pa), row(&pb));
        prop_assert!(ka.len() <= MAX_SORT_KEY_BYTES && kb.len() <= MAX_SORT_KEY_BYTES, "{} / {} bytes", ka.len(), kb.len());
        let by_value = lower(&a).cmp(&lower(&b));
        let by_value = if descending { by_value.reverse() } else { by_value };
        prop_assert!(ka.cmp(&kb) == by_value || ka == kb);
        let exact = composite_exact_bytes(keys, descending);
        if pa.len() <= exact && pb.len() <= exact {
            prop_assert_eq!(ka.cmp(&kb), by_value);
        }
    }
}
