//! Fuzzes `gridgate::model::FieldValue::parse`, which checks every custom-field cell a client
//! writes: any text of any type is answered with a value or an error, never a panic; a value's
//! canonical text re-parses to the same value and is its own canonical text; and the accepted
//! values stay in the range the storage and the sort-key encoders are built for.
#![no_main]

use arbitrary::Arbitrary;
use bigdecimal::num_bigint::BigInt;
use bigdecimal::{BigDecimal, Zero};
use chrono::Datelike;
use gridgate::model::{FieldType, FieldValue};
use libfuzzer_sys::fuzz_target;

const TYPES: [FieldType; 4] = [
    FieldType::Text,
    FieldType::Int,
    FieldType::Number,
    FieldType::Date,
];

#[derive(Debug, Arbitrary)]
enum Input {
    /// Any text, parsed as every type.
    Raw(String),
    /// Number-shaped text: sign, digits, fraction, exponent (huge ones too), padding.
    Number {
        negative: bool,
        plus: bool,
        zeros: u8,
        int: u64,
        fraction: Option<u64>,
        exponent: Option<i64>,
        upper: bool,
        spaces: bool,
    },
    /// Date-shaped text, real calendar dates or not.
    Date {
        year: u16,
        month: u8,
        day: u8,
        spaces: bool,
    },
}

fn check(text: &str) {
    let mut int = None;
    for ty in TYPES {
        let Ok(value) = FieldValue::parse(ty, text) else {
            continue;
        };
        assert_eq!(value.field_type(), ty);
        let canonical = value.to_string();
        let again = FieldValue::parse(ty, &canonical);
        assert_eq!(
            again.as_ref(),
            Ok(&value),
            "{ty:?} {text:?} -> {canonical:?}"
        );
        assert_eq!(
            again.map(|v| v.to_string()).as_deref(),
            Ok(canonical.as_str())
        );
        match &value {
            FieldValue::Text(s) => assert_eq!(s, text),
            FieldValue::Int(i) => {
                assert_eq!(canonical, i.to_string());
                int = Some(*i);
            }
            FieldValue::Number(d) => {
                // Plain decimal notation, no trailing zeros, DynamoDB's 38 digits and range.
                assert!(
                    canonical
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.'),
                    "{canonical}"
                );
                assert!(
                    !canonical.contains('.') || !canonical.ends_with('0'),
                    "{canonical}"
                );
                assert!(d.digits() <= 38, "{canonical}");
                if !d.is_zero() {
                    let abs = d.abs();
                    assert!(abs >= BigDecimal::new(BigInt::from(1), 130), "{canonical}");
                    assert!(abs < BigDecimal::new(BigInt::from(1), -126), "{canonical}");
                }
                // The sort encoding's documented bound for DynamoDB numbers.
                assert!(gridgate::sortkey::decimal(d).len() <= 45, "{canonical}");
            }
            FieldValue::Date(d) => {
                assert!((1..=9999).contains(&d.year()), "{canonical}");
                assert_eq!(canonical, text.trim());
                assert_eq!(gridgate::sortkey::date(*d), canonical);
            }
        }
    }
    // Every INT is a NUMBER too, with the same canonical text, within NUMBER's 200-character
    // limit (INT takes any number of padding zeros; NUMBER refuses longer texts unparsed).
    if let Some(i) = int.filter(|_| text.trim().len() <= 200) {
        let number = FieldValue::parse(FieldType::Number, text);
        assert_eq!(
            number,
            Ok(FieldValue::Number(BigDecimal::from(i))),
            "{text:?}"
        );
    }
}

fuzz_target!(|input: Input| match input {
    Input::Raw(text) => check(&text),
    Input::Number {
        negative,
        plus,
        zeros,
        int,
        fraction,
        exponent,
        upper,
        spaces,
    } => {
        let mut text = String::new();
        if spaces {
            text.push(' ');
        }
        if negative {
            text.push('-');
        } else if plus {
            text.push('+');
        }
        text.push_str(&"0".repeat(usize::from(zeros % 64)));
        text.push_str(&int.to_string());
        if let Some(fraction) = fraction {
            text.push_str(&format!(".{fraction}"));
        }
        if let Some(exponent) = exponent {
            text.push(if upper { 'E' } else { 'e' });
            text.push_str(&exponent.to_string());
        }
        if spaces {
            text.push('\t');
        }
        check(&text);
    }
    Input::Date {
        year,
        month,
        day,
        spaces,
    } => {
        let text = format!("{year:04}-{month:02}-{day:02}");
        check(&text);
        if spaces {
            check(&format!(" {text}\n"));
        }
    }
});
