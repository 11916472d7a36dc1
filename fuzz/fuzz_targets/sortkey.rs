//! Fuzzes the sort-string encoders of `gridgate::sortkey` (and `keys::value_sort`, which
//! applies them to parsed cell values): they never panic, composite keys never exceed
//! DynamoDB's 1024-byte sort-key limit, no value part holds U+0000 or the separator, and for
//! pairs of values the encodings order as the values do (as tests/sortkey_props.rs states it:
//! exactly while keys fit, monotonically once long texts are cut).
#![no_main]

use std::cmp::Ordering;

use arbitrary::Arbitrary;
use bigdecimal::num_bigint::BigInt;
use bigdecimal::BigDecimal;
use chrono::NaiveDate;
use gridgate::model::{FieldType, FieldValue};
use gridgate::sortkey::{
    date, decimal, int, num, state_open, text, with_num, with_suffix, MAX_SORT_KEY_BYTES, SEPARATOR,
};
use libfuzzer_sys::fuzz_target;

/// The separator and the ten-digit issue number end every `with_num` key.
const SUFFIX_BYTES: usize = 11;
/// The room a value part has beside them.
const VALUE_ROOM: usize = MAX_SORT_KEY_BYTES - SUFFIX_BYTES;
/// Days from the common era of 0001-01-01 and 9999-12-31, the dates cells may hold.
const DAYS: std::ops::RangeInclusive<i32> = 1..=3_652_059;

#[derive(Debug, Arbitrary)]
enum Input {
    Num(u32, u32),
    Text {
        a: String,
        b: String,
        x: u32,
        y: u32,
    },
    /// Two texts sharing a prefix that ends near the cut, so the cut lands where they differ.
    NearTheCut {
        prefix: u8,
        unit: u8,
        a: String,
        b: String,
        x: u8,
        y: u8,
    },
    Int(i64, i64),
    Decimal {
        a: (i128, i16),
        b: (i128, i16),
        x: u8,
        y: u8,
    },
    /// Any scale a `BigDecimal` can have, far outside DynamoDB's range.
    AnyScale {
        mantissa: i128,
        scale: i64,
    },
    Date {
        a: i32,
        b: i32,
        x: u8,
        y: u8,
    },
    /// `with_suffix` with tie-breakers of equal length (as project ids are), or any suffix.
    Suffix {
        a: String,
        b: String,
        len: u8,
        s: Vec<u8>,
        t: Vec<u8>,
        any: String,
    },
    /// Cell texts parsed as a type, then encoded by `keys::value_sort`.
    Values {
        ty: u8,
        a: String,
        b: String,
        x: u8,
        y: u8,
    },
}

fn is_clean(s: &str) -> bool {
    !s.contains('\0') && !s.contains(SEPARATOR)
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

fn value_part(key: &str, suffix: usize) -> &str {
    &key[..key.len() - suffix - SEPARATOR.len_utf8()]
}

/// A composite key's shape: the length limit, the tie-breaker at the end, and a value part
/// with no U+0000, no separator and no half escape pair at its end.
fn check_shape(key: &str, suffix: &str) {
    assert!(key.len() <= MAX_SORT_KEY_BYTES, "{} bytes", key.len());
    assert!(key.ends_with(&format!("{SEPARATOR}{suffix}")));
    let value = value_part(key, suffix.len());
    assert!(is_clean(value), "{value:?}");
    assert!(
        !value.ends_with('\u{2}'),
        "value part ends inside an escape pair"
    );
}

/// Texts a and b with tie-breakers s and t of equal length: a before b never gives a key
/// after b's; equal value parts leave the order to the tie-breaker; whole keys order exactly.
fn check_text_pair(a: &str, s: &str, b: &str, t: &str, key: fn(&str, &str) -> String) {
    let (ka, kb) = (key(&text(a), s), key(&text(b), t));
    check_shape(&ka, s);
    check_shape(&kb, t);
    let (va, vb) = (value_part(&ka, s.len()), value_part(&kb, t.len()));
    let got = ka.cmp(&kb);
    if va == vb {
        assert_eq!(got, s.cmp(t));
    } else {
        assert_eq!(got, va.cmp(vb));
        assert_eq!(
            va.cmp(vb),
            lower(a).cmp(&lower(b)),
            "cut swapped {a:?} and {b:?}"
        );
    }
    let room = MAX_SORT_KEY_BYTES - SEPARATOR.len_utf8() - s.len();
    if text(a).len() <= room.min(VALUE_ROOM) && text(b).len() <= room.min(VALUE_ROOM) {
        assert_eq!(got, (lower(a), s).cmp(&(lower(b), t)));
    }
}

fn num_key(value: &str, n: &str) -> String {
    with_num(value, n.parse().expect("a num"))
}

fn check_num_pair(a: &str, x: u32, b: &str, y: u32) {
    check_text_pair(a, &num(x), b, &num(y), num_key);
}

/// Encoded values a and b (in domain order `order`) with issue numbers x and y.
fn check_composite(ea: &str, x: u32, eb: &str, y: u32, order: Ordering) {
    assert!(is_clean(ea) && is_clean(eb));
    let (ka, kb) = (with_num(ea, x), with_num(eb, y));
    check_shape(&ka, &num(x));
    check_shape(&kb, &num(y));
    assert_eq!(
        ka.cmp(&kb),
        order.then(x.cmp(&y)),
        "{ea:?} {x} / {eb:?} {y}"
    );
}

fn big(m: i128, scale: i64) -> BigDecimal {
    BigDecimal::new(BigInt::from(m), scale)
}

fn alnum(bytes: &[u8], len: usize) -> String {
    const CHARS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    (0..len)
        .map(|i| {
            let b = bytes.get(i).copied().unwrap_or(0);
            char::from(CHARS[usize::from(b) % CHARS.len()])
        })
        .collect()
}

fuzz_target!(|input: Input| match input {
    Input::Num(a, b) => {
        assert_eq!(num(a).cmp(&num(b)), a.cmp(&b));
        assert!(num(a).len() == 10 && num(a).bytes().all(|c| c.is_ascii_digit()));
        assert!(state_open(true) < state_open(false));
    }
    Input::Text { a, b, x, y } => {
        assert_eq!(text(&a).cmp(&text(&b)), lower(&a).cmp(&lower(&b)));
        assert!(is_clean(&text(&a)));
        check_num_pair(&a, x, &b, y);
        check_num_pair(&a, x, &a, y);
    }
    Input::NearTheCut {
        prefix,
        unit,
        a,
        b,
        x,
        y,
    } => {
        // Units of 1 to 4 bytes, and one that text() escapes into a pair.
        let unit = ['a', '\u{e9}', '\u{800}', '\u{1F600}', '\0'][usize::from(unit) % 5];
        let len = VALUE_ROOM - 8 + usize::from(prefix % 12);
        let width = text(&unit.to_string()).len();
        let common: String = std::iter::repeat_n(unit, len / width).collect();
        let (a, b) = (format!("{common}{a}"), format!("{common}{b}"));
        check_num_pair(&a, u32::from(x), &b, u32::from(y));
    }
    Input::Int(a, b) => {
        assert_eq!(int(a).cmp(&int(b)), a.cmp(&b));
        assert_eq!(int(a), decimal(&BigDecimal::from(a)));
        check_composite(&int(a), 1, &int(b), 2, a.cmp(&b));
    }
    Input::Decimal { a, b, x, y } => {
        // Scales within a few hundred keep BigDecimal's own comparison cheap.
        let (a, b) = (
            big(a.0, i64::from(a.1 % 300)),
            big(b.0, i64::from(b.1 % 300)),
        );
        let (ea, eb) = (decimal(&a), decimal(&b));
        assert_eq!(ea.cmp(&eb), a.cmp(&b), "{a} vs {b}");
        assert!(ea.is_ascii());
        check_composite(&ea, u32::from(x), &eb, u32::from(y), a.cmp(&b));
    }
    Input::AnyScale { mantissa, scale } => {
        let d = big(mantissa, scale);
        let e = decimal(&d);
        assert!(e.is_ascii() && is_clean(&e), "{e:?}");
        let lead = match mantissa.cmp(&0) {
            Ordering::Less => '1',
            Ordering::Equal => '2',
            Ordering::Greater => '3',
        };
        assert!(e.starts_with(lead), "{e:?}");
        // Trailing zeros change the representation, not the value, so not the encoding.
        if let Some(scale) = scale.checked_add(1) {
            let scaled = BigDecimal::new(BigInt::from(mantissa) * 10, scale);
            assert_eq!(decimal(&scaled), e);
        }
    }
    Input::Date { a, b, x, y } => {
        let (Some(da), Some(db)) = (
            NaiveDate::from_num_days_from_ce_opt(a),
            NaiveDate::from_num_days_from_ce_opt(b),
        ) else {
            return;
        };
        assert!(is_clean(&date(da)));
        if DAYS.contains(&a) && DAYS.contains(&b) {
            assert_eq!(date(da).cmp(&date(db)), da.cmp(&db));
            check_composite(
                &date(da),
                u32::from(x),
                &date(db),
                u32::from(y),
                da.cmp(&db),
            );
        }
    }
    Input::Suffix {
        a,
        b,
        len,
        s,
        t,
        any,
    } => {
        let len = usize::from(len) % 65;
        let (s, t) = (alnum(&s, len), alnum(&t, len));
        check_text_pair(&a, &s, &b, &t, with_suffix);
        // Any tie-breaker without U+0000 or the separator: no panic, and the limit holds
        // whenever the tie-breaker leaves room for the separator at all.
        let any: String = any.chars().filter(|c| *c > SEPARATOR).collect();
        let key = with_suffix(&text(&a), &any);
        assert!(key.ends_with(&format!("{SEPARATOR}{any}")));
        assert!(
            key.len() <= MAX_SORT_KEY_BYTES.max(any.len() + 1),
            "{} bytes",
            key.len()
        );
    }
    Input::Values { ty, a, b, x, y } => {
        let ty = [
            FieldType::Text,
            FieldType::Int,
            FieldType::Number,
            FieldType::Date,
        ][usize::from(ty) % 4];
        let (Ok(va), Ok(vb)) = (FieldValue::parse(ty, &a), FieldValue::parse(ty, &b)) else {
            return;
        };
        let (x, y) = (u32::from(x), u32::from(y));
        let (ka, kb) = (
            gridgate::keys::value_sort(&va, x),
            gridgate::keys::value_sort(&vb, y),
        );
        check_shape(&ka, &num(x));
        check_shape(&kb, &num(y));
        let order = match (&va, &vb) {
            (FieldValue::Text(_), FieldValue::Text(_)) => return check_num_pair(&a, x, &b, y),
            (FieldValue::Int(p), FieldValue::Int(q)) => p.cmp(q),
            (FieldValue::Number(p), FieldValue::Number(q)) => p.cmp(q),
            (FieldValue::Date(p), FieldValue::Date(q)) => p.cmp(q),
            _ => unreachable!("both values parsed as {ty:?}"),
        };
        assert_eq!(ka.cmp(&kb), order.then(x.cmp(&y)), "{a:?} {x} / {b:?} {y}");
    }
});
