//! Property-test versions of the `cargo fuzz` targets in `fuzz/` (see README.md, "Fuzzing"), so
//! the same invariants run in every `cargo test`: cursor decoding, id parsing, cell value
//! parsing, the sort-key encoders and query admission never panic on client input, and keep
//! their round trips.
//!
//! They cover what the neighbouring tests leave out: arbitrary text as cursors, ids and cell
//! values; positions, signing keys and scope names of any shape; one-byte edits anywhere in a
//! cursor; bodies signed with the server's key; `with_suffix` and `keys::value_sort` (the
//! encoders applied to parsed cells); decimals of any scale; and edited documents, operation
//! names and the untyped map for `analyze` (tests/sortkey_props.rs, tests/analysis_props.rs and
//! the unit tests of `paging`, `ids` and `model` cover the rest).

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use async_graphql::parser::parse_query;
use async_graphql::Variables;
use base64::Engine;
use bigdecimal::num_bigint::BigInt;
use bigdecimal::{BigDecimal, Zero};
use chrono::Datelike;
use gridgate::graphql::analysis::{analyze, count_tokens, QueryLimits, Refusal, TypeMap};
use gridgate::ids::{FieldId, IdError, IssueId, NodeId, ProjectId, TenantId};
use gridgate::model::{CustomField, FieldType, FieldValue};
use gridgate::options::{self, OptionInput};
use gridgate::paging::{CursorKeys, PagingError, Position, Scope};
use gridgate::sortkey::{decimal, num, text, with_num, with_suffix, MAX_SORT_KEY_BYTES, SEPARATOR};
use proptest::prelude::*;
use rand::SeedableRng;

fn regex(pattern: &str) -> BoxedStrategy<String> {
    proptest::string::string_regex(pattern)
        .expect("valid regex")
        .boxed()
}

/// Text of any kind, or text heavy in what parsers treat specially: control characters
/// (which JSON escapes), multi-byte UTF-8, Unicode whitespace, signs, digits and dashes.
fn any_text() -> BoxedStrategy<String> {
    prop_oneof![
        any::<String>(),
        regex("[\\x00-\\x1f a-zA-Z0-9+\\-._\\u{a0}\\u{2003}\\u{e9}\\u{130}\\u{1F600}]{0,40}"),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Cursors (`paging::Scope::position`)

/// `paging`'s private bounds on a position, restated.
const MAX_SEGMENTS: usize = 8;
const MAX_PK_BYTES: usize = 2048;
/// The longest cursor `Scope::position` reads.
const MAX_CURSOR_BYTES: usize = 32 * 1024;

fn plausible(p: &Position) -> bool {
    p.segment < MAX_SEGMENTS
        && !p.pk.is_empty()
        && p.pk.len() <= MAX_PK_BYTES
        && !p.gsi1sk.is_empty()
        && p.gsi1sk.len() <= MAX_SORT_KEY_BYTES
}

fn scope(name: &str, key: &[u8]) -> Scope {
    Scope::new(
        name.to_owned(),
        Arc::new(CursorKeys::new(key.to_vec(), None)),
    )
}

/// A version 2 cursor as servers signed them, for any body.
fn sign(key: &[u8], json: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(json);
    let tag = mac.finalize().into_bytes();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!("{}.{}", b64.encode(json), b64.encode(tag))
}

/// A version 3 cursor as `Scope::cursor` signs it, for any body: base64url of the body and
/// the first 16 bytes of its HMAC-SHA256.
fn sign_v3(key: &[u8], body: &[u8]) -> String {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(body);
    let mut bytes = body.to_vec();
    bytes.extend_from_slice(&mac.finalize().into_bytes()[..16]);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The digest of a list's name that a version 3 cursor carries.
fn digest(name: &str) -> [u8; 8] {
    use sha2::Digest;
    let mut digest = [0; 8];
    digest.copy_from_slice(&sha2::Sha256::digest(name.as_bytes())[..8]);
    digest
}

/// Sort keys as the index holds them (escapes, separators, cut long values), or any text.
fn gsi1sk() -> BoxedStrategy<String> {
    prop_oneof![
        (any_text(), any::<u32>()).prop_map(|(name, n)| gridgate::keys::name_sort(&name, n)),
        (regex("[\\x00-\\x02a\\u{e9}]{0,600}"), any::<u32>())
            .prop_map(|(name, n)| gridgate::keys::name_sort(&name, n)),
        any::<u32>().prop_map(gridgate::keys::issue_sort),
        any_text(),
        // Just past the sort-key limit.
        (MAX_SORT_KEY_BYTES - 2..MAX_SORT_KEY_BYTES + 3).prop_map(|n| "k".repeat(n)),
    ]
    .boxed()
}

fn pk() -> BoxedStrategy<String> {
    prop_oneof![
        4 => any::<u64>().prop_map(|n| format!("issue-{n:x}")),
        2 => any_text(),
        1 => (MAX_PK_BYTES - 2..MAX_PK_BYTES + 3).prop_map(|n| "p".repeat(n)),
    ]
    .boxed()
}

fn position() -> impl Strategy<Value = Position> {
    (
        prop_oneof![4 => 0usize..MAX_SEGMENTS, 1 => any::<usize>()],
        pk(),
        gsi1sk(),
    )
        .prop_map(|(segment, pk, gsi1sk)| Position {
            segment,
            pk,
            gsi1sk,
        })
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..80)
}

#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, u8),
    Delete(usize),
    Insert(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Replace(at, b)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Insert(at, b)),
    ]
}

/// `cursor` with one byte replaced, deleted or inserted, when that leaves valid UTF-8 and a
/// different text.
fn edited(cursor: &str, edit: &Edit) -> Option<String> {
    let mut bytes = cursor.as_bytes().to_vec();
    let len = bytes.len();
    match *edit {
        Edit::Replace(at, byte) => {
            let at = at % len;
            if bytes[at] == byte {
                return None;
            }
            bytes[at] = byte;
        }
        Edit::Delete(at) => {
            bytes.remove(at % len);
        }
        Edit::Insert(at, byte) => bytes.insert(at % (len + 1), byte),
    }
    String::from_utf8(bytes).ok()
}

proptest! {
    /// Any text is refused as malformed (never foreign, never a panic): only the server's key
    /// makes a cursor.
    #[test]
    fn cursor_decode_refuses_any_text(
        name in any_text(),
        key in key(),
        cursor in prop_oneof![
            any::<String>(),
            regex("[A-Za-z0-9_\\-]{0,120}\\.[A-Za-z0-9_\\-]{0,60}"),
            regex("[A-Za-z0-9_\\-]{0,200}"),
            regex("[A-Za-z0-9_\\-=+/.]{8000,8300}"),
        ],
    ) {
        prop_assert_eq!(
            scope(&name, &key).position("before", &cursor),
            Err(PagingError::MalformedCursor { arg: "before" })
        );
    }

    /// A cursor the scope made reads back as its position, under the key and under the key
    /// rotated to `previous`; another scope calls it foreign; an implausible position is
    /// refused; and any one-byte edit of it is refused.
    #[test]
    fn cursor_round_trips_and_refuses_edits(
        name in any_text(),
        other in any_text(),
        key in key(),
        p in position(),
        edit in edit(),
    ) {
        let s = scope(&name, &key);
        let cursor = s.cursor(&p);
        let decoded = s.position("after", &cursor);
        if !plausible(&p) {
            prop_assert_eq!(decoded, Err(PagingError::MalformedCursor { arg: "after" }));
        } else {
            prop_assert_eq!(decoded.as_ref(), Ok(&p));
            let rotated = Scope::new(
                name.clone(),
                Arc::new(CursorKeys::new(b"the next key".to_vec(), Some(key.clone()))),
            );
            let again = rotated.position("before", &cursor);
            prop_assert_eq!(again.as_ref(), Ok(&p));
            if other != name {
                prop_assert_eq!(
                    scope(&other, &key).position("after", &cursor),
                    Err(PagingError::ForeignCursor { arg: "after" })
                );
            }
        }
        if let Some(forged) = edited(&cursor, &edit) {
            prop_assert!(s.position("after", &forged).is_err(), "accepted {:?}", forged);
        }
    }

    /// Even a body signed with the server's key is checked: accepted exactly when its version,
    /// list and position are right.
    #[test]
    fn signed_cursor_bodies_are_checked(
        name in any_text(),
        key in key(),
        version in prop_oneof![4 => Just(2u8), 1 => any::<u8>()],
        same in any::<bool>(),
        other in any_text(),
        segment in prop_oneof![0u64..10, any::<u64>()],
        pk in pk(),
        gsi1sk in gsi1sk(),
    ) {
        let list = if same { name.clone() } else { other };
        let json = serde_json::json!({ "v": version, "l": list, "s": segment, "k": pk, "g": gsi1sk });
        let cursor = sign(&key, json.to_string().as_bytes());
        let p = Position { segment: usize::try_from(segment).unwrap_or(usize::MAX), pk, gsi1sk };
        let expected = if version != 2 || cursor.len() > MAX_CURSOR_BYTES {
            Err(PagingError::MalformedCursor { arg: "after" })
        } else if list != name {
            Err(PagingError::ForeignCursor { arg: "after" })
        } else if plausible(&p) {
            Ok(p)
        } else {
            Err(PagingError::MalformedCursor { arg: "after" })
        };
        prop_assert_eq!(scope(&name, &key).position("after", &cursor), expected);
    }

    /// A version 3 body signed with the server's key is still checked: accepted exactly when
    /// its version, list and position are right and its `PK` length fits the body.
    #[test]
    fn signed_v3_bodies_are_checked(
        name in any_text(),
        key in key(),
        version in prop_oneof![4 => Just(3u8), 1 => any::<u8>()],
        same in any::<bool>(),
        other in any_text(),
        segment in prop_oneof![0u8..10, any::<u8>()],
        pk in pk(),
        gsi1sk in gsi1sk(),
        pk_len_off in prop_oneof![4 => Just(0i64), 1 => -3i64..3, 1 => any::<u32>().prop_map(i64::from)],
    ) {
        let list = if same { name.clone() } else { other };
        let pk_len = u32::try_from(pk.len() as i64 + pk_len_off).unwrap_or(0);
        let mut body = vec![version];
        body.extend_from_slice(&digest(&list));
        body.push(segment);
        body.extend_from_slice(&pk_len.to_be_bytes());
        body.extend_from_slice(pk.as_bytes());
        body.extend_from_slice(gsi1sk.as_bytes());
        let cursor = sign_v3(&key, &body);
        // The keys as the decoder must split them: `None` when the length overruns the body
        // or cuts a character.
        let keys = [pk.as_bytes(), gsi1sk.as_bytes()].concat();
        let split = keys.split_at_checked(pk_len as usize).and_then(|(a, b)| {
            Some(Position {
                segment: usize::from(segment),
                pk: String::from_utf8(a.to_vec()).ok()?,
                gsi1sk: String::from_utf8(b.to_vec()).ok()?,
            })
        });
        let expected = match split {
            _ if version != 3 || cursor.len() > MAX_CURSOR_BYTES => {
                Err(PagingError::MalformedCursor { arg: "after" })
            }
            None => Err(PagingError::MalformedCursor { arg: "after" }),
            Some(_) if list != name => Err(PagingError::ForeignCursor { arg: "after" }),
            Some(p) if plausible(&p) => Ok(p),
            Some(_) => Err(PagingError::MalformedCursor { arg: "after" }),
        };
        prop_assert_eq!(scope(&name, &key).position("after", &cursor), expected);
    }

    /// Signed bytes of any shape, as a version 3 body, never panic the decoder, and what it
    /// accepts is plausible and reads back.
    #[test]
    fn signed_v3_bodies_of_any_shape(
        key in key(),
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            prop::collection::vec(any::<u8>(), 0..64).prop_map(|mut b| {
                b.splice(0..0, [3].into_iter().chain(digest("issues|project-1|NUM|ASC")));
                b
            }),
        ],
    ) {
        let s = scope("issues|project-1|NUM|ASC", &key);
        if let Ok(p) = s.position("after", &sign_v3(&key, &body)) {
            prop_assert!(plausible(&p), "{:?}", p);
            prop_assert_eq!(s.position("after", &s.cursor(&p)), Ok(p));
        }
    }

    /// A signed body of any shape never panics the decoder, and what it accepts is plausible.
    #[test]
    fn signed_cursor_bodies_of_any_shape(
        key in key(),
        json in prop_oneof![
            any::<String>(),
            regex("\\{(\"[vlskg]\":(2|-1|1e400|\"[a-z\\x00]{0,4}\"|null|\\[\\]|\\{\\}),?){0,7}\\}"),
        ],
    ) {
        let s = scope("issues|project-1|NUM|ASC", &key);
        if let Ok(p) = s.position("after", &sign(&key, json.as_bytes())) {
            prop_assert!(plausible(&p), "{:?}", p);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ids (`ids::*::parse`)

const PREFIXES: [&str; 4] = [
    TenantId::PREFIX,
    ProjectId::PREFIX,
    FieldId::PREFIX,
    IssueId::PREFIX,
];

macro_rules! check_kind {
    ($ty:ty, $text:expr) => {{
        let text: &str = $text;
        match <$ty>::parse(text) {
            Ok(id) => {
                assert_eq!(id.as_str(), text);
                assert_eq!(<$ty>::parse(&id.to_string()).as_ref(), Ok(&id));
                let part = id.part();
                assert!((1..=64).contains(&part.len()), "{text:?}");
                assert!(part.bytes().all(|b| b.is_ascii_alphanumeric()), "{text:?}");
                assert_eq!(text, format!("{}-{part}", <$ty>::PREFIX));
                assert_eq!(<$ty>::from_part(part).as_ref(), Ok(&id));
                Some(id)
            }
            Err(IdError::Malformed { id, prefix, .. }) => {
                assert_eq!((id.as_str(), prefix), (text, <$ty>::PREFIX));
                None
            }
            Err(other) => panic!("a typed parser answered {other:?} for {text:?}"),
        }
    }};
}

/// Every parser on `text`: at most one kind accepts it, an accepted id is the text itself and
/// re-parses to itself, and `NodeId::parse` routes exactly as the typed parsers accept.
fn check_id(text: &str) -> Option<NodeId> {
    let tenant = check_kind!(TenantId, text).map(NodeId::Tenant);
    let project = check_kind!(ProjectId, text).map(NodeId::Project);
    let field = check_kind!(FieldId, text).map(NodeId::Field);
    let issue = check_kind!(IssueId, text).map(NodeId::Issue);
    let accepted: Vec<NodeId> = [tenant, project, field, issue]
        .into_iter()
        .flatten()
        .collect();
    assert!(accepted.len() <= 1, "{text:?} is an id of several kinds");
    let expected = accepted.into_iter().next();
    match (NodeId::parse(text), &expected) {
        (Ok(node), Some(expected)) => assert_eq!(&node, expected),
        (Err(IdError::UnknownKind(id)), None) => {
            assert_eq!(id, text);
            assert!(!PREFIXES.contains(&text.split('-').next().unwrap_or("")));
        }
        (Err(IdError::Malformed { id, prefix, .. }), None) => {
            assert_eq!(id, text);
            assert!(text.starts_with(prefix), "{text:?}");
        }
        (got, expected) => panic!("NodeId::parse({text:?}) = {got:?}, typed parsers: {expected:?}"),
    }
    expected
}

proptest! {
    #[test]
    fn id_parse_any_text(
        text in prop_oneof![
            any_text(),
            (prop::sample::select(PREFIXES.to_vec()), any_text())
                .prop_map(|(prefix, part)| format!("{prefix}-{part}")),
        ],
    ) {
        check_id(&text);
    }

    /// The random part's rules at their edges: 1 to 64 ASCII letters or digits, and one
    /// character outside them anywhere refuses the id.
    #[test]
    fn id_parse_random_part_rules(
        kind in 0usize..4,
        part in regex("[0-9A-Za-z]{0,66}"),
        bad in regex("[^0-9A-Za-z]"),
        at in any::<usize>(),
    ) {
        let id = format!("{}-{part}", PREFIXES[kind]);
        let parsed = check_id(&id);
        prop_assert_eq!(parsed.is_some(), (1..=64).contains(&part.len()), "{}", id);
        let mut broken = part.clone();
        let at = at % (part.len() + 1);
        broken.insert_str(at, &bad);
        let broken = format!("{}-{broken}", PREFIXES[kind]);
        prop_assert!(check_id(&broken).is_none(), "{}", broken);
    }

    /// The ids the server makes parse back to themselves.
    #[test]
    fn generated_ids_round_trip(seed: u64) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for id in [
            TenantId::seeded(&mut rng).to_string(),
            ProjectId::generate_with(&mut rng).to_string(),
            FieldId::seeded(&mut rng).to_string(),
            IssueId::generate_with(&mut rng).to_string(),
        ] {
            prop_assert!(check_id(&id).is_some(), "{}", id);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cell values (`model::FieldValue::parse`)

const TYPES: [FieldType; 6] = [
    FieldType::Text,
    FieldType::Int,
    FieldType::Number,
    FieldType::Date,
    FieldType::Checkbox,
    FieldType::Select,
];

/// The labels of the SELECT field the value properties use, in its options' order.
const OPTION_LABELS: [&str; 5] = ["Zeta", "alpha", "Mid", "b", "Last"];

/// A field of type `ty`; a SELECT field has the options [`OPTION_LABELS`], in that order,
/// after one removed option and one moved option, so its keys are not the ones a fresh list
/// gets.
fn field_of(ty: FieldType) -> CustomField {
    static SELECT: OnceLock<Vec<gridgate::model::SelectOption>> = OnceLock::new();
    let options = if ty == FieldType::Select {
        SELECT
            .get_or_init(|| {
                let mut rng = rand::rngs::StdRng::seed_from_u64(3);
                let input = |id: Option<&str>, label: &str| OptionInput {
                    id: id.map(str::to_string),
                    label: label.to_string(),
                    color: None,
                };
                let mut labels: Vec<OptionInput> =
                    OPTION_LABELS.iter().map(|l| input(None, l)).collect();
                labels.push(input(None, "gone"));
                let first = options::edit(&[], &labels, &mut rng).expect("valid options");
                // Move the first option to the end, remove "gone", then put it back first.
                let mut order: Vec<OptionInput> = first[1..5]
                    .iter()
                    .chain(&first[..1])
                    .map(|o| input(Some(&o.id), &o.label))
                    .collect();
                let moved = options::edit(&first, &order, &mut rng).expect("valid options");
                let zeta = order.pop().expect("five options");
                order.insert(0, zeta);
                options::edit(&moved, &order, &mut rng).expect("valid options")
            })
            .clone()
    } else {
        Vec::new()
    };
    CustomField {
        id: FieldId::parse("xattrib-0001").expect("an id"),
        project: ProjectId::parse("project-0001").expect("an id"),
        name: "f".into(),
        field_type: ty,
        position: 1,
        version: 1,
        deleted: false,
        options,
    }
}

/// Every type on `text`: no panic; an accepted value has the type, its canonical text
/// re-parses to it and is its own canonical text; numbers stay in DynamoDB's range (and their
/// sort encoding within its documented 45 bytes); dates are the trimmed text; and an INT is a
/// NUMBER with the same canonical text, as long as it is within NUMBER's 200-character limit
/// (INT takes any number of padding zeros, NUMBER refuses longer texts before parsing them).
fn check_value(text: &str) {
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
        assert_eq!(again.map(|v| v.to_string()), Ok(canonical.clone()));
        match &value {
            FieldValue::Text(s) => assert_eq!(s, text),
            FieldValue::Int(i) => int = Some(*i),
            FieldValue::Number(d) => {
                assert!(text.trim().len() <= 200, "{text:?}");
                assert!(
                    canonical
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.'),
                    "{canonical}"
                );
                assert!(
                    !(canonical.contains('.') && canonical.ends_with('0')),
                    "{canonical}"
                );
                assert!(d.digits() <= 38, "{canonical}");
                if !d.is_zero() {
                    let abs = d.abs();
                    assert!(abs >= BigDecimal::new(BigInt::from(1), 130), "{canonical}");
                    assert!(abs < BigDecimal::new(BigInt::from(1), -126), "{canonical}");
                }
                assert!(decimal(d).len() <= 45, "{canonical}");
            }
            FieldValue::Date(d) => {
                assert!((1..=9999).contains(&d.year()), "{canonical}");
                assert_eq!(canonical, text.trim());
            }
            FieldValue::Checkbox(b) => {
                assert_eq!(canonical, b.to_string());
                assert!(text.trim().eq_ignore_ascii_case(&canonical), "{text:?}");
            }
            FieldValue::Select(id) => {
                assert_eq!(id, text.trim());
                assert!(!id.is_empty() && id.len() <= gridgate::model::MAX_OPTION_ID);
            }
        }
    }
    if let Some(i) = int.filter(|_| text.trim().len() <= 200) {
        assert_eq!(
            FieldValue::parse(FieldType::Number, text),
            Ok(FieldValue::Number(BigDecimal::from(i))),
            "{text:?} is an INT but not the same NUMBER"
        );
    }
}

/// Number-shaped text: whitespace, sign, padding zeros (up to past the 200-character limit),
/// digits, fraction and exponent (up to far past `i64`).
fn number_text() -> impl Strategy<Value = String> {
    (
        regex("[ \\t\\u{a0}]{0,2}"),
        regex("[-+]?"),
        prop_oneof![0usize..4, 150usize..210],
        regex("[0-9]{0,45}"),
        regex("(\\.[0-9]{0,45})?"),
        regex("([eE][-+]?([0-9]{1,3}|[0-9]{18,22}))?"),
        regex("[ \\n]{0,2}"),
    )
        .prop_map(|(lead, sign, zeros, int, fraction, exponent, tail)| {
            format!(
                "{lead}{sign}{}{int}{fraction}{exponent}{tail}",
                "0".repeat(zeros)
            )
        })
}

proptest! {
    #[test]
    fn value_parse_any_text(text in any_text()) {
        check_value(&text);
    }

    #[test]
    fn value_parse_number_shapes(text in number_text()) {
        check_value(&text);
    }

    #[test]
    fn value_parse_date_shapes(
        y in 0u32..=10_000,
        m in 0u32..=13,
        d in 0u32..=32,
        pad in regex("[ \\t\\n]{0,2}"),
    ) {
        let text = format!("{pad}{y:04}-{m:02}-{d:02}{pad}");
        check_value(&text);
        let real = chrono::NaiveDate::from_ymd_opt(y as i32, m, d).is_some() && (1..=9999).contains(&y);
        prop_assert_eq!(FieldValue::parse(FieldType::Date, &text).is_ok(), real, "{:?}", text);
    }
}

// ---------------------------------------------------------------------------------------------
// Sort keys (`sortkey::with_suffix`, `keys::value_sort`, `sortkey::decimal` at any scale)

fn lower(s: &str) -> String {
    s.to_lowercase()
}

fn is_clean(s: &str) -> bool {
    !s.contains('\0') && !s.contains(SEPARATOR)
}

/// A composite key's value part, before the separator and `suffix`; checks the key's shape.
fn value_part<'a>(key: &'a str, suffix: &str) -> &'a str {
    assert!(key.len() <= MAX_SORT_KEY_BYTES, "{} bytes", key.len());
    assert!(key.ends_with(&format!("{SEPARATOR}{suffix}")));
    let value = &key[..key.len() - suffix.len() - SEPARATOR.len_utf8()];
    assert!(is_clean(value), "{value:?}");
    assert!(
        !value.ends_with('\u{2}'),
        "value part ends inside an escape pair"
    );
    value
}

/// Texts a and b with tie-breakers s and t of equal length, through `key`: whole keys order by
/// (text, tie-breaker); cut ones never swap, and equal value parts leave it to the tie-breaker.
fn check_text_pair(a: &str, s: &str, b: &str, t: &str, key: impl Fn(&str, &str) -> String) {
    let (ka, kb) = (key(&text(a), s), key(&text(b), t));
    let (va, vb) = (value_part(&ka, s), value_part(&kb, t));
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
    let room = (MAX_SORT_KEY_BYTES - SEPARATOR.len_utf8() - s.len()).min(MAX_SORT_KEY_BYTES - 11);
    if text(a).len() <= room && text(b).len() <= room {
        assert_eq!(got, (lower(a), s).cmp(&(lower(b), t)));
    }
}

/// Texts short, long, or sharing a prefix that ends near the cut.
fn text_pair() -> impl Strategy<Value = (String, String)> {
    let unit = "[\\x00\\x02aA\\u{e9}\\u{800}\\u{1F600}]";
    prop_oneof![
        (any_text(), any_text()),
        (
            regex(&format!("{unit}{{300,1100}}")),
            regex(&format!("{unit}{{300,1100}}"))
        ),
        (
            950usize..1024,
            regex(&format!("{unit}{{0,4}}")),
            regex(&format!("{unit}{{0,4}}"))
        )
            .prop_map(|(n, a, b)| {
                let common = "a".repeat(n);
                (format!("{common}{a}"), format!("{common}{b}"))
            }),
    ]
}

/// Cell text that parses as `ty` more often than not.
fn cell_text(ty: FieldType) -> BoxedStrategy<String> {
    match ty {
        FieldType::Text => prop_oneof![any_text(), regex("[\\x00a\\u{e9}]{900,1100}")].boxed(),
        FieldType::Int => {
            prop_oneof![any::<i64>().prop_map(|i| i.to_string()), number_text()].boxed()
        }
        FieldType::Number => number_text().boxed(),
        FieldType::Date => (1u32..=9999, 1u32..=12, 1u32..=31)
            .prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}"))
            .boxed(),
        FieldType::Checkbox => prop::sample::select(vec!["true", "false", "TRUE", " false", "yes"])
            .prop_map(str::to_owned)
            .boxed(),
        FieldType::Select => {
            let mut ids: Vec<String> = field_of(FieldType::Select)
                .options
                .iter()
                .map(|o| o.id.clone())
                .collect();
            ids.extend(["opt-nope".to_string(), String::new()]);
            prop::sample::select(ids).boxed()
        }
    }
}

fn cell_pair() -> impl Strategy<Value = (FieldType, String, String)> {
    prop::sample::select(TYPES.to_vec())
        .prop_flat_map(|ty| (Just(ty), cell_text(ty), cell_text(ty)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// `with_suffix` (project names sort by name, then id) with tie-breakers of equal length.
    #[test]
    fn with_suffix_orders_and_fits(
        (a, b) in text_pair(),
        s in regex("[0-9a-z]{0,64}"),
        t in regex("[0-9a-z]{0,64}"),
    ) {
        let t: String = t.chars().chain(std::iter::repeat('0')).take(s.len()).collect();
        check_text_pair(&a, &s, &b, &t, with_suffix);
        check_text_pair(&a, &s, &a, &t, with_suffix);
    }

    /// Any tie-breaker without U+0000 or the separator: no panic, and the key stays within the
    /// limit whenever the tie-breaker leaves room for the separator.
    #[test]
    fn with_suffix_any_suffix(value in any_text(), suffix in prop_oneof![any_text(), regex("x{1000,1030}")]) {
        let suffix: String = suffix.chars().filter(|c| *c > SEPARATOR).collect();
        let key = with_suffix(&text(&value), &suffix);
        let end = format!("{SEPARATOR}{suffix}");
        prop_assert!(key.ends_with(&end));
        prop_assert!(key.len() <= MAX_SORT_KEY_BYTES.max(suffix.len() + 1), "{} bytes", key.len());
    }

    /// `keys::value_sort` on cells parsed from client text orders by (value, num) in the
    /// column type's order, and fits the sort-key limit.
    #[test]
    fn value_sort_orders_parsed_cells((ty, a, b) in cell_pair(), x in 0u32..3, y in 0u32..3) {
        let (Ok(va), Ok(vb)) = (FieldValue::parse(ty, &a), FieldValue::parse(ty, &b)) else {
            return Ok(());
        };
        let field = field_of(ty);
        let (Some(ka), Some(kb)) = (
            gridgate::keys::value_sort(&field, &va, x),
            gridgate::keys::value_sort(&field, &vb, y),
        ) else {
            // Only a SELECT value that is none of the field's options has no sort string.
            prop_assert!(ty == FieldType::Select && (field.option(&a).is_none() || field.option(&b).is_none()));
            return Ok(());
        };
        value_part(&ka, &num(x));
        value_part(&kb, &num(y));
        let order = match (&va, &vb) {
            (FieldValue::Text(_), FieldValue::Text(_)) => {
                check_text_pair(&a, &num(x), &b, &num(y), |v, n| with_num(v, n.parse().expect("a num")));
                return Ok(());
            }
            (FieldValue::Int(p), FieldValue::Int(q)) => p.cmp(q),
            (FieldValue::Number(p), FieldValue::Number(q)) => p.cmp(q),
            (FieldValue::Date(p), FieldValue::Date(q)) => p.cmp(q),
            (FieldValue::Checkbox(p), FieldValue::Checkbox(q)) => p.cmp(q),
            // The options' order (removed ones keep their place until swept).
            (FieldValue::Select(p), FieldValue::Select(q)) => {
                let at = |id: &str| field.options.iter().position(|o| o.id == id);
                at(p).cmp(&at(q))
            }
            _ => unreachable!("both cells parsed as {ty:?}"),
        };
        prop_assert_eq!(ka.cmp(&kb), order.then(x.cmp(&y)), "{:?} {} / {:?} {}", a, x, b, y);
    }

    /// `decimal` at any scale a `BigDecimal` can have: no panic, ASCII without U+0000 or the
    /// separator, the sign's lead byte, and trailing zeros change nothing.
    #[test]
    fn decimal_any_scale(mantissa: i128, scale: i64) {
        let e = decimal(&BigDecimal::new(BigInt::from(mantissa), scale));
        prop_assert!(e.is_ascii() && is_clean(&e), "{:?}", e);
        let lead = match mantissa.cmp(&0) {
            Ordering::Less => '1',
            Ordering::Equal => '2',
            Ordering::Greater => '3',
        };
        prop_assert!(e.starts_with(lead), "{:?}", e);
        if let Some(scale) = scale.checked_add(1) {
            prop_assert_eq!(decimal(&BigDecimal::new(BigInt::from(mantissa) * 10, scale)), e);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Query admission (`graphql::analysis`)

fn types() -> &'static TypeMap {
    static TYPES: OnceLock<TypeMap> = OnceLock::new();
    TYPES.get_or_init(|| TypeMap::from_sdl(&gridgate::graphql::sdl()))
}

/// Limits that refuse nothing.
const UNLIMITED: QueryLimits = QueryLimits {
    max_cost: u64::MAX,
    max_depth: usize::MAX,
    max_aliases: usize::MAX,
    max_root_fields: usize::MAX,
    max_directives: usize::MAX,
    max_tokens: usize::MAX,
};

/// The token count is exact at its limit, and the document is analysed as the server does:
/// under the token limit and once parsed, `analyze` never panics, without limits it refuses
/// only structural faults and its counts agree, and with the default limits it refuses exactly
/// what `QueryLimits::check` refuses of that analysis. Returns whether the text parsed.
fn check_query(query: &str, operation: Option<&str>, variables: &Variables, untyped: bool) -> bool {
    let n = count_tokens(query, usize::MAX).expect("a count");
    assert!(n <= query.len());
    assert_eq!(count_tokens(query, n), Ok(n));
    if n > 0 {
        assert_eq!(
            count_tokens(query, n - 1),
            Err(Refusal::TooManyTokens { max: n - 1 })
        );
    }
    if n > QueryLimits::default().max_tokens {
        return false;
    }
    let Ok(doc) = parse_query(query) else {
        return false;
    };
    let default_types = TypeMap::default();
    let types = if untyped { &default_types } else { types() };
    let measured = analyze(&doc, operation, variables, types, &UNLIMITED);
    match &measured {
        Ok(a) => {
            assert!(a.cost >= a.fields as u64, "{a:?}");
            assert!(a.fields >= 1 && a.root_fields <= a.fields, "{a:?}");
            assert!(a.aliases <= a.fields && a.depth <= a.fields, "{a:?}");
        }
        Err(refusal) => assert!(
            matches!(
                refusal,
                Refusal::FragmentCycle { .. }
                    | Refusal::UnknownFragment { .. }
                    | Refusal::UnknownOperation { .. }
                    | Refusal::AmbiguousOperation
                    | Refusal::NoOperation
            ),
            "refused {refusal:?} without limits: {query}"
        ),
    }
    let limits = QueryLimits::default();
    let expected = measured.and_then(|a| limits.check(&a).map(|()| a));
    assert_eq!(
        analyze(&doc, operation, variables, types, &limits),
        expected,
        "{query}"
    );
    true
}

/// Documents of every operation type, spaced into tokens, for `edited_document` to break.
const DOCUMENTS: &[&str] = &[
    "{ project ( id : \"project-35e9\" ) { name customFields { id name } issues ( first : 20 , orderBy : { field : NAME } ) { edges { cursor node { num name fieldValues { value } } } pageInfo { hasNextPage } } } }",
    "query Q ( $n : Int = 5 ) @skip ( if : false ) { tenant ( id : 1 ) { projects ( last : $n ) { nodes { issues ( first : $n ) { totalCount } } } } }",
    "query Q { nodes ( ids : [ 1 , 2 , 3 ] ) { ... on Issue { num } ... { id } ...F } } fragment F on Node { id } query Other { a : __typename }",
    "mutation M { createIssue ( input : { projectId : \"p\" , name : \"n\" } ) { issue { id } edge { cursor } } }",
    "subscription S { x ( a : [ [ 1 , 2.5e3 ] , { b : \"\" } ] ) @include ( if : true ) }",
    "{ ...A ...B } fragment A on Query { ...B b : node ( id : 1 ) { id } } fragment B on Query { issue ( id : 2 ) { project { issues { nodes { id } } } } }",
];

const VOCABULARY: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ":",
    "...",
    "@skip",
    "$n",
    "!",
    "=",
    "on",
    "fragment",
    "query",
    "mutation",
    "F",
    "A",
    "B",
    "Q",
    "Other",
    "nodes",
    "issues",
    "first",
    "100",
    "-1",
    "\"s\"",
    "#",
    "\n",
    "__typename",
    "edges",
    "node",
];

/// A document with up to four tokens deleted, duplicated or replaced by another token.
fn edited_document() -> impl Strategy<Value = String> {
    (
        prop::sample::select(DOCUMENTS.to_vec()),
        prop::collection::vec(
            (
                0u8..3,
                any::<usize>(),
                prop::sample::select(VOCABULARY.to_vec()),
            ),
            0..5,
        ),
    )
        .prop_map(|(doc, edits)| {
            let mut tokens: Vec<&str> = doc.split(' ').collect();
            for (kind, at, token) in edits {
                let at = at % tokens.len().max(1);
                match kind {
                    0 if tokens.len() > 1 => {
                        tokens.remove(at);
                    }
                    1 => tokens.insert(at, tokens[at]),
                    _ => tokens[at] = token,
                }
            }
            tokens.join(" ")
        })
}

fn operation_name() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("Q".to_owned())),
        Just(Some("Other".to_owned())),
        Just(Some("M".to_owned())),
        any::<String>().prop_map(Some),
    ]
}

fn variables() -> impl Strategy<Value = Variables> {
    prop_oneof![
        Just(serde_json::json!({})),
        any::<i64>().prop_map(|n| serde_json::json!({ "n": n })),
        Just(serde_json::json!({ "n": 1.5e300 })),
        Just(serde_json::json!({ "n": ["issue-1", 2, null] })),
        Just(serde_json::json!({ "n": { "first": 1 } })),
    ]
    .prop_map(Variables::from_json)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn query_analysis_edited_documents(
        query in edited_document(),
        operation in operation_name(),
        variables in variables(),
        untyped in any::<bool>(),
    ) {
        check_query(&query, operation.as_deref(), &variables, untyped);
    }

    #[test]
    fn query_analysis_any_text(query in any::<String>(), untyped in any::<bool>()) {
        check_query(&query, None, &Variables::default(), untyped);
    }
}

/// The seed documents themselves parse, so the edited ones start from something valid.
#[test]
fn query_analysis_seed_documents_parse() {
    for doc in DOCUMENTS {
        assert!(
            check_query(doc, Some("Q"), &Variables::default(), false),
            "{doc}"
        );
        assert!(check_query(doc, None, &Variables::default(), true), "{doc}");
    }
}
