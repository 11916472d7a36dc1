//! The domain: tenants, projects, custom fields, issues and typed field values, independent of
//! how they are stored or served.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use bigdecimal::num_bigint::BigUint;
use bigdecimal::{BigDecimal, ToPrimitive, Zero};
use chrono::{Datelike, NaiveDate};

use crate::ids::{FieldId, IssueId, ProjectId, TenantId, ViewId};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant {
    pub id: TenantId,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Project {
    pub id: ProjectId,
    pub tenant: TenantId,
    pub name: String,
    /// The num the next created issue gets.
    pub next_issue_num: u32,
    /// Optimistic-concurrency version, bumped by every change of the project's own
    /// attributes (its name); creating issues or fields does not bump it.
    pub version: u64,
    /// Bumped whenever a custom field is created or deleted, so a cell write can check in the
    /// same transaction that the fields it validated against are still the project's.
    pub fields_version: u64,
    /// Set when the project was deleted and its rows await the sweep: it is gone for the API.
    pub deleted: bool,
    /// The project's issue counters, kept by every write of an issue in its own transaction;
    /// `None` for a project written before counters existed, until `reindex` counts it.
    pub counts: Option<IssueCounts>,
}

/// The counters of a project's issues: how many there are, how many are open, and how many
/// have a value in each custom field (fields without one have none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IssueCounts {
    pub issues: i64,
    pub open: i64,
    pub filled: BTreeMap<FieldId, i64>,
    /// The issues in each index of the project's saved views, by the index's `GSI1` partition
    /// (not counted by [`IssueCounts::of`], which sees issues, not views).
    pub matched: BTreeMap<String, i64>,
}

impl IssueCounts {
    /// The issues with a value in `field`.
    pub fn filled(&self, field: &FieldId) -> i64 {
        self.filled.get(field).copied().unwrap_or(0)
    }

    /// The counters of a set of issues, counted one by one (what the writers' increments must
    /// add up to).
    pub fn of<'a>(issues: impl IntoIterator<Item = &'a Issue>) -> IssueCounts {
        let mut counts = IssueCounts::default();
        for issue in issues {
            counts.add(issue, 1);
        }
        counts
    }

    /// Counts `issue` `sign` times (1 to add it, -1 to take it away).
    pub fn add(&mut self, issue: &Issue, sign: i64) {
        self.issues += sign;
        if issue.state == IssueState::Open {
            self.open += sign;
        }
        for field in issue.values.keys() {
            *self.filled.entry(field.clone()).or_default() += sign;
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomField {
    pub id: FieldId,
    pub project: ProjectId,
    pub name: String,
    pub field_type: FieldType,
    pub position: u32,
    /// Bumped by every change of the field row.
    pub version: u64,
    /// Set when the field was deleted and its cells await the sweep: it is gone for the API.
    pub deleted: bool,
    /// A SELECT field's options in their order (by [`SelectOption::key`]), removed ones
    /// included until the options sweep has cleared their cells; empty for other types.
    pub options: Vec<SelectOption>,
}

impl CustomField {
    /// The option with id `id`, removed or not.
    pub fn option(&self, id: &str) -> Option<&SelectOption> {
        self.options.iter().find(|o| o.id == id)
    }

    /// The options clients see and may choose, in order.
    pub fn live_options(&self) -> impl Iterator<Item = &SelectOption> {
        self.options.iter().filter(|o| !o.removed)
    }

    /// The live option a SELECT cell holding `value` (its canonical text) names, with its
    /// place among the live options; `None` for other types and for removed or unknown ids.
    pub fn live_option(&self, value: &str) -> Option<(usize, &SelectOption)> {
        if self.field_type != FieldType::Select {
            return None;
        }
        self.live_options()
            .enumerate()
            .find(|(_, option)| option.id == value)
    }

    /// Whether the options sweep still has cells to re-key or clear (`REINDEXING`).
    pub fn reindexing(&self) -> bool {
        self.options
            .iter()
            .any(|o| o.removed || !o.stale_keys.is_empty())
    }

    /// A stored cell's text as a value of this field: for SELECT, the id of one of its options,
    /// removed ones included (their cells keep their place until the sweep clears them).
    pub fn stored_value(&self, text: &str) -> Result<FieldValue, ValueError> {
        let value = FieldValue::parse(self.field_type, text)?;
        match &value {
            FieldValue::Select(id) if self.option(id).is_none() => Err(ValueError {
                text: text.to_string(),
                expected: "select",
                reason: "not one of the field's options",
            }),
            _ => Ok(value),
        }
    }

    /// A value a client writes into a cell of this field: for SELECT, the id of one of its
    /// live options.
    pub fn input_value(&self, text: &str) -> Result<FieldValue, ValueError> {
        let value = self.stored_value(text)?;
        match &value {
            FieldValue::Select(id) if self.option(id).is_some_and(|o| o.removed) => {
                Err(ValueError {
                    text: text.to_string(),
                    expected: "select",
                    reason: "the option was removed from the field",
                })
            }
            _ => Ok(value),
        }
    }
}

/// One choice of a SELECT field. Its cells hold its `id`; they sort by its `key`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SelectOption {
    /// Stable within the field (`opt-1a2b3c4d`); what a cell stores.
    pub id: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    /// The option's order key: a fractional index (see `crate::options`), so moving one option
    /// changes only its own key, and only its own cells need new sort strings.
    pub key: String,
    /// Keys the option had before it moved, whose cells' index rows the options sweep has not
    /// re-keyed yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_keys: Vec<String>,
    /// Removed from the field: no cell may take it, and the options sweep clears the cells
    /// that have it, then forgets it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Issue {
    pub id: IssueId,
    pub project: ProjectId,
    pub num: u32,
    pub name: String,
    pub state: IssueState,
    /// The truth for custom field values: field id → canonical text of the value (see
    /// [`FieldValue`]). Only set values are present. Reading keeps the text as stored, so an
    /// issue can be read without its project's field definitions; writers check every value
    /// against its field's type.
    pub values: BTreeMap<FieldId, CellText>,
    pub version: u64,
}

/// The text of one cell: inline up to 24 bytes, so that decoding the short cells of a grid
/// page (numbers, dates, words) allocates nothing.
pub type CellText = compact_str::CompactString;

/// A project together with its custom fields in position order: what one Query of the
/// project's partition returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectData {
    pub project: Project,
    /// The live fields, by position.
    pub fields: Vec<CustomField>,
    /// Deleted fields whose cells a sweep is still removing: invisible to the API, but their
    /// types still derive (and so remove) their index rows.
    pub retired: Vec<CustomField>,
    /// The project's saved views, by position (deleted ones left out).
    pub views: Vec<View>,
}

/// A saved view (issue 22): a named list of the project's issues in its own order, filtered,
/// served from its own index. `serving` is the index pages read; `building` one being filled
/// beside it (the first, or a new order or filter), which replaces it once complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub id: ViewId,
    pub project: ProjectId,
    pub name: String,
    /// The custom fields a frontend shows, in order.
    pub columns: Vec<FieldId>,
    pub position: u32,
    pub version: u64,
    pub serving: Option<ViewIndex>,
    pub building: Option<ViewIndex>,
    /// How far the build of `building` got (none before its first batch).
    pub built: Option<BuildProgress>,
    /// Generations no longer kept whose rows (and counters) a sweep has yet to remove.
    pub retired: Vec<u32>,
    pub deleted: bool,
}

impl View {
    /// The indexes writers keep: the serving one and the one being built.
    pub fn indexes(&self) -> impl Iterator<Item = &ViewIndex> {
        self.serving.iter().chain(&self.building)
    }

    /// The generation a new index of this view takes: above every one it has or still sweeps,
    /// so a new index never shares a partition with rows of another.
    pub fn next_generation(&self) -> u32 {
        self.indexes()
            .map(|i| i.generation)
            .chain(self.retired.iter().copied())
            .max()
            .unwrap_or(0)
            .saturating_add(1)
    }

    /// The index pages are read from: the serving one; `None` while the first one builds.
    pub fn readable(&self) -> Option<&ViewIndex> {
        self.serving.as_ref()
    }

    /// The definition clients see: the index being built when one is (the view's order and
    /// filter as last set), else the serving one.
    pub fn definition(&self) -> Option<&ViewIndex> {
        self.building.as_ref().or(self.serving.as_ref())
    }
}

/// How far a view's build went: the issues are read in num order, so a resumed build starts
/// after `through`; `scanned` is how many issues it has read so far (its progress).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildProgress {
    pub through: u32,
    pub scanned: u64,
}

/// One index of a view: its generation (which names its `GSI1` partition), its keys and its
/// filter, as the view was given them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewIndex {
    pub generation: u32,
    /// One to three keys.
    pub keys: Vec<ViewKey>,
    /// The filter as written (`filter::Spec`'s JSON), checked against the project's fields
    /// whenever rows are derived.
    pub filter: Option<String>,
}

/// One sort key of a view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ViewKey {
    pub column: ViewColumn,
    pub descending: bool,
    /// Issues without a value go first (else last), whatever the direction.
    pub empty_first: bool,
}

/// A column a view sorts by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ViewColumn {
    Num,
    Name,
    State,
    Custom(FieldId),
}

impl ProjectData {
    pub fn field(&self, id: &FieldId) -> Option<&CustomField> {
        self.fields.iter().find(|f| &f.id == id)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    Text,
    Int,
    Number,
    Date,
    Checkbox,
    Select,
}

impl FieldType {
    /// The spelling stored in the `FieldType` attribute.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::Int => "int",
            FieldType::Number => "number",
            FieldType::Date => "date",
            FieldType::Checkbox => "checkbox",
            FieldType::Select => "select",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "text" => Some(FieldType::Text),
            "int" => Some(FieldType::Int),
            "number" => Some(FieldType::Number),
            "date" => Some(FieldType::Date),
            "checkbox" => Some(FieldType::Checkbox),
            "select" => Some(FieldType::Select),
            _ => None,
        }
    }

    /// Whether values of this type are stored as DynamoDB numbers (`N`) rather than strings.
    pub fn is_numeric(self) -> bool {
        matches!(self, FieldType::Int | FieldType::Number)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IssueState {
    Open,
    Closed,
}

impl IssueState {
    pub fn as_str(self) -> &'static str {
        match self {
            IssueState::Open => "open",
            IssueState::Closed => "closed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "open" => Some(IssueState::Open),
            "closed" => Some(IssueState::Closed),
            _ => None,
        }
    }
}

/// A typed custom field value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldValue {
    Text(String),
    Int(i64),
    Number(BigDecimal),
    Date(NaiveDate),
    /// Checked or not; an unset cell is empty, and `false` sorts before `true`.
    Checkbox(bool),
    /// The id of one of the field's options (checked against them by
    /// [`CustomField::stored_value`] and [`CustomField::input_value`]); sorts by the options'
    /// order.
    Select(String),
}

/// The longest option id a SELECT cell may hold.
pub const MAX_OPTION_ID: usize = 64;

/// Why a text is not a valid value of a field type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a valid {expected} value: {reason}")]
pub struct ValueError {
    pub text: String,
    pub expected: &'static str,
    pub reason: &'static str,
}

/// DynamoDB numbers hold at most 38 significant digits.
const MAX_NUMBER_DIGITS: u64 = 38;
/// DynamoDB's number range: magnitudes from 1E-130 to below 1E+126.
const MIN_NUMBER_EXPONENT: i64 = -130;
const MAX_NUMBER_EXPONENT: i64 = 125;
/// The longest NUMBER text parsed: long enough for every canonical form (`-0.000…1` of 1e-130
/// is 133 characters) with room for zeros a client pads, short enough that no input is costly.
const MAX_NUMBER_TEXT: usize = 200;

impl FieldValue {
    /// Parses the canonical (or any accepted) text of a value of type `ty`.
    pub fn parse(ty: FieldType, text: &str) -> Result<Self, ValueError> {
        let err = |reason| ValueError {
            text: text.to_string(),
            expected: ty.as_str(),
            reason,
        };
        match ty {
            FieldType::Text => Ok(FieldValue::Text(text.to_string())),
            FieldType::Int => text
                .trim()
                .parse::<i64>()
                .map(FieldValue::Int)
                .map_err(|_| err("expected a whole number between -9223372036854775808 and 9223372036854775807")),
            FieldType::Number => {
                let trimmed = text.trim();
                // A decimal DynamoDB can hold has at most 38 digits and a 3-digit exponent;
                // anything much longer is refused before parsing, and so are the digit
                // separators Rust's parser would accept but no other client would write.
                if trimmed.len() > MAX_NUMBER_TEXT {
                    return Err(err(
                        "a number is written in at most 200 characters (without padding zeros)",
                    ));
                }
                if trimmed.contains('_') {
                    return Err(err("expected a decimal number such as -3.5 or 1e10"));
                }
                let d = BigDecimal::from_str(trimmed)
                    .map_err(|_| err("expected a decimal number such as -3.5 or 1e10"))?
                    .normalized();
                if d.digits() > MAX_NUMBER_DIGITS {
                    return Err(err("at most 38 significant digits are supported"));
                }
                if !d.is_zero() {
                    // The magnitude lies in [10^(exp-1), 10^exp). An exponent too large to
                    // compute is out of range too.
                    let exponent = i64::try_from(d.digits())
                        .ok()
                        .and_then(|digits| digits.checked_sub(d.fractional_digit_count()));
                    let in_range = exponent.is_some_and(|e| {
                        (MIN_NUMBER_EXPONENT + 1..=MAX_NUMBER_EXPONENT + 1).contains(&e)
                    });
                    if !in_range {
                        return Err(err("magnitude must lie between 1e-130 and 1e126"));
                    }
                }
                Ok(FieldValue::Number(d))
            }
            FieldType::Date => {
                let trimmed = text.trim();
                // Exactly YYYY-MM-DD: chrono alone would also take `99-1-1` or `+2023-01-01`.
                let shaped = trimmed.len() == 10
                    && trimmed.bytes().enumerate().all(|(i, b)| match i {
                        4 | 7 => b == b'-',
                        _ => b.is_ascii_digit(),
                    });
                if !shaped {
                    return Err(err("expected a date as YYYY-MM-DD"));
                }
                let date = NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
                    .map_err(|_| err("expected a real calendar date as YYYY-MM-DD"))?;
                if !(1..=9999).contains(&chrono::Datelike::year(&date)) {
                    return Err(err("years 0001 to 9999 are supported"));
                }
                Ok(FieldValue::Date(date))
            }
            FieldType::Checkbox => match text.trim() {
                t if t.eq_ignore_ascii_case("true") => Ok(FieldValue::Checkbox(true)),
                t if t.eq_ignore_ascii_case("false") => Ok(FieldValue::Checkbox(false)),
                _ => Err(err("expected true or false")),
            },
            FieldType::Select => {
                let trimmed = text.trim();
                if trimmed.is_empty() || trimmed.len() > MAX_OPTION_ID {
                    return Err(err("expected the id of one of the field's options"));
                }
                Ok(FieldValue::Select(trimmed.to_string()))
            }
        }
    }

    pub fn field_type(&self) -> FieldType {
        match self {
            FieldValue::Text(_) => FieldType::Text,
            FieldValue::Int(_) => FieldType::Int,
            FieldValue::Number(_) => FieldType::Number,
            FieldValue::Date(_) => FieldType::Date,
            FieldValue::Checkbox(_) => FieldType::Checkbox,
            FieldValue::Select(_) => FieldType::Select,
        }
    }
}

/// The canonical text: `Approved`, `42`, `-3.5`, `2023-05-01`, `true`. Numbers are written in plain
/// decimal notation without trailing zeros, so equal numbers always read the same.
impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Text(s) => f.write_str(s),
            FieldValue::Int(i) => write!(f, "{i}"),
            FieldValue::Number(d) => f.write_str(&plain_decimal(d)),
            // chrono's `format` reads its pattern again at every call, which a bulk load of
            // dates paid for each cell; its `%Y` writes the years this one does as they are.
            FieldValue::Date(d) if (0..=9999).contains(&d.year()) => {
                write!(f, "{:04}-{:02}-{:02}", d.year(), d.month(), d.day())
            }
            FieldValue::Date(d) => write!(f, "{}", d.format("%Y-%m-%d")),
            FieldValue::Checkbox(b) => write!(f, "{b}"),
            FieldValue::Select(id) => f.write_str(id),
        }
    }
}

/// The canonical text of a stored value of type `ty` (see [`FieldValue`]'s `Display`), without
/// parsing it when it is already canonical, as every value this gateway wrote is: a grid page
/// shows hundreds of cells, and parsing and printing each number or date again costs more than
/// everything else the cell needs. Text that does not parse is returned as it is.
pub fn canonical_text(ty: FieldType, raw: &str) -> Cow<'_, str> {
    if is_canonical(ty, raw) {
        return Cow::Borrowed(raw);
    }
    match FieldValue::parse(ty, raw) {
        Ok(value) => Cow::Owned(value.to_string()),
        Err(_) => Cow::Borrowed(raw),
    }
}

/// Whether `raw` is written exactly as [`FieldValue`]'s `Display` would write its value (or,
/// for a date, would not parse, and so is shown as it is either way).
fn is_canonical(ty: FieldType, raw: &str) -> bool {
    /// `0`, or digits without a leading zero.
    fn whole(digits: &str) -> bool {
        !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'))
    }
    match ty {
        FieldType::Text => true,
        FieldType::Select => raw.trim() == raw,
        FieldType::Checkbox => raw == "true" || raw == "false",
        FieldType::Date => {
            raw.len() == 10
                && raw.bytes().enumerate().all(|(i, b)| match i {
                    4 | 7 => b == b'-',
                    _ => b.is_ascii_digit(),
                })
        }
        FieldType::Int | FieldType::Number => {
            let unsigned = raw.strip_prefix('-').unwrap_or(raw);
            let (int, fraction) = match unsigned.split_once('.') {
                Some((int, fraction)) if ty == FieldType::Number => (int, Some(fraction)),
                Some(_) => return false,
                None => (unsigned, None),
            };
            let fraction_ok = fraction.is_none_or(|f| {
                !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) && !f.ends_with('0')
            });
            // `-0` is written `0`; `-0.5` is canonical.
            let zero = int == "0" && fraction.is_none();
            whole(int) && fraction_ok && !(zero && raw.starts_with('-'))
        }
    }
}

/// The decimal digits of `magnitude`, as its `Display` writes them. A magnitude that fits a
/// `u128` (every mantissa [`FieldValue::parse`] admits: at most 38 digits) is written as
/// one: the big number's own conversion divides it limb by limb, and with
/// `BigDecimal::normalized`, which `plain_decimal` used before, took 3 % of a bulk load's
/// time making rows.
pub(crate) fn decimal_digits(magnitude: &BigUint) -> String {
    match magnitude.to_u128() {
        Some(small) => small.to_string(),
        None => magnitude.to_string(),
    }
}

/// Writes a decimal without exponent notation (BigDecimal's Display switches to scientific
/// notation for large exponents, which would make the same value read differently).
fn plain_decimal(d: &BigDecimal) -> String {
    if d.is_zero() {
        return "0".to_string();
    }
    let (int, scale) = d.as_bigint_and_scale();
    let negative = int.sign() == bigdecimal::num_bigint::Sign::Minus;
    // Normalized: without the mantissa's trailing zeros, each taken off the scale, as
    // `BigDecimal::normalized` would (which writes the big number's decimal digits and reads
    // them back into another).
    let mut digits = decimal_digits(int.magnitude());
    let zeros = digits.bytes().rev().take_while(|&b| b == b'0').count();
    digits.truncate(digits.len() - zeros);
    let scale = scale - zeros as i64;
    let body = if scale <= 0 {
        format!("{digits}{}", "0".repeat((-scale) as usize))
    } else {
        let scale = scale as usize;
        if digits.len() > scale {
            let (i, f) = digits.split_at(digits.len() - scale);
            format!("{i}.{f}")
        } else {
            format!("0.{}{digits}", "0".repeat(scale - digits.len()))
        }
    };
    if negative {
        format!("-{body}")
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A decimal written another way: `BigDecimal`'s own plain writing of it, normalized.
    fn plain_decimal_by_bigdecimal(d: &BigDecimal) -> String {
        d.normalized().to_plain_string()
    }

    /// The dates at the fast path's bounds, as chrono writes them.
    #[test]
    fn dates_at_the_bounds_of_four_digit_years() {
        for (y, m, d, text) in [
            (0, 1, 1, "0000-01-01"),
            (-1, 12, 31, "-0001-12-31"),
            (9999, 12, 31, "9999-12-31"),
            (10000, 1, 1, "+10000-01-01"),
        ] {
            let date = NaiveDate::from_ymd_opt(y, m, d).unwrap();
            assert_eq!(FieldValue::Date(date).to_string(), text);
        }
    }

    proptest! {
        /// A magnitude's digits are the ones its `Display` writes, past a `u128` too.
        #[test]
        fn digits_are_the_numbers_display(
            limbs in prop::collection::vec(any::<u32>(), 0..6),
        ) {
            let magnitude = BigUint::new(limbs);
            prop_assert_eq!(decimal_digits(&magnitude), magnitude.to_string());
        }

        /// A decimal is written as `BigDecimal` writes it plainly, normalized: small and large
        /// mantissas, trailing zeros, and scales on both sides of the point.
        #[test]
        fn a_decimal_is_written_as_bigdecimal_writes_it_plainly(
            mantissa in prop_oneof![
                any::<i64>().prop_map(i128::from),
                any::<i128>(),
                (any::<i64>(), 0u32..6).prop_map(|(m, z)| i128::from(m) * 10i128.pow(z)),
            ],
            big in any::<bool>(),
            scale in -30i64..30,
        ) {
            let int = bigdecimal::num_bigint::BigInt::from(mantissa);
            // Past a u128 (by a factor of 10^30) when the mantissa is past about 3.4e8.
            let int = if big { int * bigdecimal::num_bigint::BigInt::from(10u128.pow(30)) } else { int };
            let d = BigDecimal::new(int, scale);
            prop_assert_eq!(plain_decimal(&d), plain_decimal_by_bigdecimal(&d));
        }

        /// A date is written as chrono's `%Y-%m-%d` writes it: years around those the fast
        /// path writes itself (0 to 9999) and at its bounds, and years across chrono's range.
        #[test]
        fn a_date_is_written_as_chrono_writes_it(
            day in prop_oneof![
                -800_000i32..800_000,
                // Around 1 January of years 0 and 10000.
                -400i32..400,
                3_651_695i32..3_652_495,
                chrono::NaiveDate::MIN.num_days_from_ce()..=chrono::NaiveDate::MAX.num_days_from_ce(),
            ],
        ) {
            let date = NaiveDate::from_num_days_from_ce_opt(day).unwrap();
            prop_assert_eq!(
                FieldValue::Date(date).to_string(),
                date.format("%Y-%m-%d").to_string()
            );
        }

        /// The shortcut gives what parsing and printing give, for any text of any type.
        #[test]
        fn canonical_text_is_what_display_writes(
            raw in prop_oneof![
                "-?[0-9]{0,4}(\\.[0-9]{0,4})?",
                "-?[0-9]{1,3}e-?[0-9]",
                "[0-9]{4}-[0-9]{2}-[0-9]{2}",
                " ?[0-9.-]{0,8} ?",
                ".{0,12}",
            ],
        ) {
            for ty in [FieldType::Text, FieldType::Int, FieldType::Number, FieldType::Date] {
                let slow = FieldValue::parse(ty, &raw)
                    .map(|v| v.to_string())
                    .unwrap_or_else(|_| raw.clone());
                let fast = super::canonical_text(ty, &raw);
                prop_assert_eq!(fast.as_ref(), slow.as_str(), "{:?}", ty);
            }
        }
    }

    fn canon(ty: FieldType, s: &str) -> String {
        FieldValue::parse(ty, s).unwrap().to_string()
    }

    #[test]
    fn canonical_text() {
        assert_eq!(canon(FieldType::Number, "-3.50"), "-3.5");
        assert_eq!(canon(FieldType::Number, "1e3"), "1000");
        assert_eq!(canon(FieldType::Number, "0.00"), "0");
        assert_eq!(canon(FieldType::Number, "-0.001"), "-0.001");
        assert_eq!(canon(FieldType::Number, "12.5e-3"), "0.0125");
        assert_eq!(canon(FieldType::Int, "42"), "42");
        assert_eq!(canon(FieldType::Date, "2023-05-01"), "2023-05-01");
        assert_eq!(canon(FieldType::Text, "Approved"), "Approved");
    }

    #[test]
    fn rejects_invalid_values() {
        assert!(FieldValue::parse(FieldType::Int, "4.2").is_err());
        assert!(FieldValue::parse(FieldType::Number, "abc").is_err());
        assert!(FieldValue::parse(FieldType::Number, "1e200").is_err());
        assert!(FieldValue::parse(
            FieldType::Number,
            "1234567890123456789012345678901234567890"
        )
        .is_err());
        assert!(FieldValue::parse(FieldType::Date, "2023-02-30").is_err());
        assert!(FieldValue::parse(FieldType::Date, "0000-01-01").is_err());
        for bad in [
            "1e9223372036854775807",
            "-1.5e9223372036854775807",
            "1e-9223372036854775808",
            "1_000",
            "1.0_5",
        ] {
            assert!(FieldValue::parse(FieldType::Number, bad).is_err(), "{bad}");
        }
        for bad in [
            "99-1-1",
            "2023-1-1",
            "+2023-01-01",
            "2023-01-1",
            "2023/01/01",
        ] {
            assert!(FieldValue::parse(FieldType::Date, bad).is_err(), "{bad}");
        }
        assert_eq!(canon(FieldType::Date, " 2023-01-01 "), "2023-01-01");
        // The canonical forms of the extremes parse again.
        for extreme in [
            "9.99e125",
            "-1e-130",
            "-12345678901234567890123456789012345678e88",
        ] {
            let text = canon(FieldType::Number, extreme);
            assert_eq!(canon(FieldType::Number, &text), text, "{extreme}");
        }
    }

    proptest::proptest! {
        /// Any text, and especially numbers with huge exponents, is answered with a value or
        /// an error, never a panic (it comes straight from clients).
        #[test]
        fn parsing_never_panics(
            text in "[-+]?[0-9]{0,3}(\\.[0-9]{0,3})?([eE][-+]?[0-9]{1,3})?|[-+]?[0-9]{0,3}[eE][-+]?[0-9]{15,25}|\\PC{0,40}"
        ) {
            for ty in [FieldType::Text, FieldType::Int, FieldType::Number, FieldType::Date] {
                if let Ok(value) = FieldValue::parse(ty, &text) {
                    // What parses re-parses to itself (canonical text is stable).
                    let canonical = value.to_string();
                    proptest::prop_assert_eq!(FieldValue::parse(ty, &canonical), Ok(value));
                }
            }
        }
    }
}
