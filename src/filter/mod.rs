//! Filters of a project's issue list: the checked predicate a client's `IssueFilter` becomes once
//! its columns are known ([`Predicate`]), its reference semantics ([`Predicate::matches`], what
//! both stores and every access path must agree with), and the facts the planner and the
//! counters read off it.
//!
//! **Values are compared as sort strings.** Every operand is encoded, when the filter is checked,
//! with the same order-preserving encoder (`sortkey`) that builds the column's `GSI1SK`, and a
//! cell is encoded the same way when it is compared. So a comparison means what the column's
//! order means (text case-folded as sorting folds it, INT and NUMBER numerically, dates by day,
//! OPEN before CLOSED), and a range on the sorted column maps one to one onto a key condition.
//!
//! **Empty cells are SQL's NULL.** Only `isEmpty: true` matches an empty cell; every other
//! operator is false on one, and `not` inverts whatever its operand gave, so `not {eq: "a"}`
//! keeps the empty cells.

use std::fmt;
use std::sync::Arc;

mod spec;
pub use spec::{ColumnField, ColumnSpec, FieldTypesOf, FilterError, Spec};

use crate::ids::FieldId;
use crate::keys;
use crate::model::{
    CustomField, FieldType, FieldValue, Issue, IssueCounts, IssueState, SelectOption,
};

/// At most this many leaves in one filter.
pub const MAX_LEAVES: usize = 20;
/// At most this deep: a leaf at the top is depth 1, a leaf under one combinator depth 2.
pub const MAX_DEPTH: usize = 4;
/// At most this many values in one `in`.
pub const MAX_IN_VALUES: usize = 100;
/// At most this many filter objects in all, combinators included: leaves are bounded by
/// [`MAX_LEAVES`], but `and: [{or: []}, …]` has none, and each node is evaluated on every row
/// read and named in every cursor's scope.
pub const MAX_NODES: usize = 50;

/// Case folding for `contains` and `startsWith`, char by char: `str::to_lowercase` writes a
/// capital sigma at the end of a word as `ς` and elsewhere as `σ`, so a folded operand
/// (`ΟΔΟΣ` → `οδος`) would not be found in the folded text it is part of (`ΟΔΟΣΟΣ` →
/// `οδοσος`).
pub fn fold(text: &str) -> String {
    text.chars().flat_map(char::to_lowercase).collect()
}

/// What a filter needs to know of a custom field to compare its cells: its type, and for
/// SELECT its options, whose keys give the cells their order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CellType {
    /// Every type but SELECT: a value's order is its own.
    Plain(FieldType),
    /// SELECT, with the field's options (removed ones too, whose cells keep their place until
    /// the options sweep clears them).
    Select(Arc<Vec<SelectOption>>),
}

impl CellType {
    pub fn of(field: &CustomField) -> CellType {
        match field.field_type {
            FieldType::Select => CellType::Select(Arc::new(field.options.clone())),
            other => CellType::Plain(other),
        }
    }

    pub fn field_type(&self) -> FieldType {
        match self {
            CellType::Plain(ty) => *ty,
            CellType::Select(_) => FieldType::Select,
        }
    }

    /// A stored cell's text as a sort string's value part (`None`: not a value of the field).
    fn encode(&self, text: &str) -> Option<String> {
        match self {
            CellType::Plain(ty) => FieldValue::parse(*ty, text)
                .ok()
                .map(|value| keys::plain_value_part(&value)),
            // Parsed as every reader parses a SELECT cell (trimmed), then looked up.
            CellType::Select(options) => match FieldValue::parse(FieldType::Select, text) {
                Ok(FieldValue::Select(id)) => options
                    .iter()
                    .find(|o| o.id == id)
                    .map(|o| keys::option_part(&o.key)),
                _ => None,
            },
        }
    }

    /// An operand as a sort string's value part: a SELECT operand is one of the field's live
    /// options.
    fn operand(&self, text: &str) -> Result<String, crate::model::ValueError> {
        match self {
            CellType::Plain(ty) => Ok(keys::plain_value_part(&FieldValue::parse(*ty, text)?)),
            CellType::Select(options) => options
                .iter()
                .find(|o| o.id == text && !o.removed)
                .map(|o| keys::option_part(&o.key))
                .ok_or_else(|| crate::model::ValueError {
                    text: text.to_string(),
                    expected: "select",
                    reason: "not the id of one of the field's options",
                }),
        }
    }
}

/// A column a filter leaf tests.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    Num,
    Name,
    State,
    /// A custom field of the project, with its type (and options) as the filter was checked.
    Custom(FieldId, CellType),
}

impl Column {
    /// Whether `contains` and `startsWith` apply: the text columns.
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            Column::Name | Column::Custom(_, CellType::Plain(FieldType::Text))
        )
    }

    /// Whether the column has a value in `issue`, as the table says: a custom field's cell is
    /// there or not (a stored text that is not a value of the field's type is there too, as the
    /// empty-cell segment, the counters and `verify` see it).
    fn present(&self, issue: &Issue) -> bool {
        match self {
            Column::Custom(field, _) => issue.values.contains_key(field),
            Column::Num | Column::Name | Column::State => true,
        }
    }

    /// The column's value in `issue` as a sort string's value part (`None`: an empty cell, or
    /// a stored text that is not a value of the field's type, which compares as nothing).
    pub(crate) fn encoded(&self, issue: &Issue) -> Option<String> {
        match self {
            Column::Num => Some(keys::num_part(issue.num)),
            Column::Name => Some(keys::text_part(&issue.name)),
            Column::State => Some(keys::state_part(issue.state).to_string()),
            Column::Custom(field, ty) => ty.encode(issue.values.get(field)?),
        }
    }

    /// The column's text in `issue`, case-folded, for `contains` and `startsWith`.
    fn folded(&self, issue: &Issue) -> Option<String> {
        match self {
            Column::Name => Some(fold(&issue.name)),
            Column::Custom(field, CellType::Plain(FieldType::Text)) => {
                issue.values.get(field).map(|t| fold(t))
            }
            _ => None,
        }
    }

    /// Whether every value of the column is indexed under the sort string it derives now:
    /// not so for a SELECT field whose moved or removed options await the options sweep.
    pub fn keys_settled(&self) -> bool {
        match self {
            Column::Custom(_, CellType::Select(options)) => options
                .iter()
                .all(|o| !o.removed && o.stale_keys.is_empty()),
            _ => true,
        }
    }

    /// Whether the column ever has an empty cell (only custom fields do).
    pub fn may_be_empty(&self) -> bool {
        matches!(self, Column::Custom(..))
    }
}

/// Why an operand is not a value of its column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperandError {
    #[error("`{0}` is not an issue number: expected a whole number from 0 to 4294967295")]
    Num(String),
    #[error("`{0}` is not a state: expected OPEN or CLOSED")]
    State(String),
    #[error("{0}")]
    Value(#[from] crate::model::ValueError),
}

impl Column {
    /// The operand `text` (the column's canonical text, as in `FieldValueInput`) as a sort
    /// string's value part.
    pub fn operand(&self, text: &str) -> Result<String, OperandError> {
        match self {
            Column::Num => text
                .trim()
                .parse::<u32>()
                .map(keys::num_part)
                .map_err(|_| OperandError::Num(text.to_string())),
            Column::Name => Ok(keys::text_part(text)),
            Column::State => match text {
                "OPEN" => Ok(keys::state_part(IssueState::Open).to_string()),
                "CLOSED" => Ok(keys::state_part(IssueState::Closed).to_string()),
                _ => Err(OperandError::State(text.to_string())),
            },
            Column::Custom(_, ty) => Ok(ty.operand(text)?),
        }
    }
}

/// One operator of a leaf with its operand, encoded (see the module's documentation).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Eq(String),
    Ne(String),
    In(Vec<String>),
    Lt(String),
    Lte(String),
    Gt(String),
    Gte(String),
    IsEmpty(bool),
    /// Case-folded text.
    Contains(String),
    /// Case-folded text.
    StartsWith(String),
}

impl Op {
    /// Whether the operator holds for a cell: `present` says whether it has a value at all,
    /// `encoded` is its sort-string value part (`None` also for a value its type does not
    /// accept, which no comparison holds for) and `folded` its case-folded text (text columns
    /// only).
    fn holds(&self, present: bool, encoded: Option<&str>, folded: Option<&str>) -> bool {
        if let Op::IsEmpty(empty) = self {
            return present != *empty;
        }
        let Some(cell) = encoded else {
            return false;
        };
        match self {
            Op::Eq(v) => cell == v,
            Op::Ne(v) => cell != v,
            Op::In(vs) => vs.iter().any(|v| v == cell),
            Op::Lt(v) => cell < v.as_str(),
            Op::Lte(v) => cell <= v.as_str(),
            Op::Gt(v) => cell > v.as_str(),
            Op::Gte(v) => cell >= v.as_str(),
            Op::Contains(s) => folded.is_some_and(|f| f.contains(s.as_str())),
            Op::StartsWith(s) => folded.is_some_and(|f| f.starts_with(s.as_str())),
            Op::IsEmpty(_) => false,
        }
    }

    /// Whether the operator needs the cell's case-folded text.
    fn needs_folded(&self) -> bool {
        matches!(self, Op::Contains(_) | Op::StartsWith(_))
    }
}

/// A filter leaf: a column and the operators that must all hold on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Leaf {
    pub column: Column,
    pub ops: Vec<Op>,
}

impl Leaf {
    pub fn matches(&self, issue: &Issue) -> bool {
        let present = self.column.present(issue);
        let encoded = self.column.encoded(issue);
        let folded = if self.ops.iter().any(Op::needs_folded) {
            self.column.folded(issue)
        } else {
            None
        };
        self.ops
            .iter()
            .all(|op| op.holds(present, encoded.as_deref(), folded.as_deref()))
    }
}

/// A checked filter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Predicate {
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
    Not(Box<Predicate>),
    Leaf(Leaf),
}

impl Predicate {
    /// The reference semantics: whether `issue` is in the filtered list.
    pub fn matches(&self, issue: &Issue) -> bool {
        match self {
            Predicate::And(all) => all.iter().all(|p| p.matches(issue)),
            Predicate::Or(any) => any.iter().any(|p| p.matches(issue)),
            Predicate::Not(p) => !p.matches(issue),
            Predicate::Leaf(leaf) => leaf.matches(issue),
        }
    }

    /// The conjuncts of the filter: the operands of a top-level `and` (flattened), or the
    /// filter itself.
    pub fn conjuncts(self) -> Vec<Predicate> {
        match self {
            Predicate::And(all) => all.into_iter().flat_map(Predicate::conjuncts).collect(),
            other => vec![other],
        }
    }

    /// The conjunction of `parts` (`None` when there are none).
    pub fn all(mut parts: Vec<Predicate>) -> Option<Predicate> {
        match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => Some(Predicate::And(parts)),
        }
    }

    /// Every leaf of the filter.
    pub fn leaves(&self) -> Vec<&Leaf> {
        let mut out = Vec::new();
        self.collect_leaves(&mut out);
        out
    }

    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a Leaf>) {
        match self {
            Predicate::And(ps) | Predicate::Or(ps) => {
                ps.iter().for_each(|p| p.collect_leaves(out));
            }
            Predicate::Not(p) => p.collect_leaves(out),
            Predicate::Leaf(leaf) => out.push(leaf),
        }
    }

    /// The truth of the filter for an issue of which only the state is known, when every leaf
    /// tests the state (`None` otherwise): what lets the per-state counters count the list.
    pub fn on_state(&self, state: IssueState) -> Option<bool> {
        let part = keys::state_part(state);
        Some(match self {
            Predicate::And(ps) => {
                let mut all = true;
                for p in ps {
                    all &= p.on_state(state)?;
                }
                all
            }
            Predicate::Or(ps) => {
                let mut any = false;
                for p in ps {
                    any |= p.on_state(state)?;
                }
                any
            }
            Predicate::Not(p) => !p.on_state(state)?,
            Predicate::Leaf(leaf) => {
                if leaf.column != Column::State {
                    return None;
                }
                leaf.ops.iter().all(|op| op.holds(true, Some(part), None))
            }
        })
    }
}

/// The number of issues a list with `filter` holds, from the project's counters, when they
/// tell it: no filter (every issue), a filter whose every leaf tests the state (the open and
/// the closed issues it keeps), or a single `isEmpty` leaf on a custom field (the issues with or
/// without a value). `None` for any other filter.
pub fn count(counts: &IssueCounts, filter: Option<&Predicate>) -> Option<i64> {
    let Some(filter) = filter else {
        return Some(counts.issues);
    };
    if let Predicate::Leaf(Leaf {
        column: Column::Custom(field, _),
        ops,
    }) = filter
    {
        if let [Op::IsEmpty(empty)] = ops.as_slice() {
            let filled = counts.filled(field);
            return Some(if *empty {
                counts.issues - filled
            } else {
                filled
            });
        }
    }
    let open = filter.on_state(IssueState::Open)?;
    let closed = filter.on_state(IssueState::Closed)?;
    Some(i64::from(open) * counts.open + i64::from(closed) * (counts.issues - counts.open))
}

/// The canonical text of a filter: what a cursor's scope names, so a cursor is bound to the
/// filter it was read with (two filters with one text select the same issues).
impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, name: &str, ps: &[Predicate]| {
            write!(f, "{name}(")?;
            for (i, p) in ps.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{p}")?;
            }
            f.write_str(")")
        };
        match self {
            Predicate::And(ps) => list(f, "and", ps),
            Predicate::Or(ps) => list(f, "or", ps),
            Predicate::Not(p) => write!(f, "not({p})"),
            Predicate::Leaf(leaf) => {
                match &leaf.column {
                    Column::Num => f.write_str("NUM")?,
                    Column::Name => f.write_str("NAME")?,
                    Column::State => f.write_str("STATE")?,
                    Column::Custom(id, _) => write!(f, "{id}")?,
                }
                // Operands are written as JSON strings, so no operand can fake a delimiter.
                let quoted = |s: &str| serde_json::Value::from(s).to_string();
                for op in &leaf.ops {
                    match op {
                        Op::Eq(v) => write!(f, " eq {}", quoted(v))?,
                        Op::Ne(v) => write!(f, " ne {}", quoted(v))?,
                        Op::In(vs) => {
                            f.write_str(" in [")?;
                            for (i, v) in vs.iter().enumerate() {
                                if i > 0 {
                                    f.write_str(",")?;
                                }
                                f.write_str(&quoted(v))?;
                            }
                            f.write_str("]")?;
                        }
                        Op::Lt(v) => write!(f, " lt {}", quoted(v))?,
                        Op::Lte(v) => write!(f, " lte {}", quoted(v))?,
                        Op::Gt(v) => write!(f, " gt {}", quoted(v))?,
                        Op::Gte(v) => write!(f, " gte {}", quoted(v))?,
                        Op::IsEmpty(b) => write!(f, " isEmpty {b}")?,
                        Op::Contains(v) => write!(f, " contains {}", quoted(v))?,
                        Op::StartsWith(v) => write!(f, " startsWith {}", quoted(v))?,
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{IssueId, ProjectId};
    use std::collections::BTreeMap;

    fn issue(num: u32, name: &str, state: IssueState, cells: &[(&FieldId, &str)]) -> Issue {
        Issue {
            id: IssueId::generate(),
            project: ProjectId::generate(),
            num,
            name: name.into(),
            state,
            values: cells
                .iter()
                .map(|(f, v)| ((*f).clone(), (*v).into()))
                .collect::<BTreeMap<_, _>>(),
            version: 1,
        }
    }

    fn leaf(column: Column, ops: Vec<Op>) -> Predicate {
        Predicate::Leaf(Leaf { column, ops })
    }

    #[test]
    fn empty_cells_are_null() {
        let f = FieldId::generate();
        let col = Column::Custom(f.clone(), CellType::Plain(FieldType::Int));
        let eq = |v: &str| Op::Eq(col.operand(v).unwrap());
        let empty = issue(1, "a", IssueState::Open, &[]);
        let five = issue(2, "b", IssueState::Open, &[(&f, "5")]);
        let p = leaf(col.clone(), vec![eq("5")]);
        assert!(!p.matches(&empty) && p.matches(&five));
        let ne = leaf(col.clone(), vec![Op::Ne(col.operand("5").unwrap())]);
        assert!(!ne.matches(&empty) && !ne.matches(&five));
        let not = Predicate::Not(Box::new(p));
        assert!(not.matches(&empty) && !not.matches(&five));
        assert!(leaf(col.clone(), vec![Op::IsEmpty(true)]).matches(&empty));
        assert!(leaf(col.clone(), vec![Op::IsEmpty(false)]).matches(&five));
    }

    #[test]
    fn numbers_compare_numerically_and_text_case_folded() {
        let f = FieldId::generate();
        let col = Column::Custom(f.clone(), CellType::Plain(FieldType::Number));
        let ten = issue(1, "Alpha", IssueState::Open, &[(&f, "10")]);
        let range = leaf(
            col.clone(),
            vec![
                Op::Gte(col.operand("9.5").unwrap()),
                Op::Lt(col.operand("1e1").unwrap()),
            ],
        );
        assert!(!range.matches(&ten));
        let upto = leaf(col.clone(), vec![Op::Lte(col.operand("10.0").unwrap())]);
        assert!(upto.matches(&ten));
        let name = leaf(
            Column::Name,
            vec![
                Op::Eq(Column::Name.operand("ALPHA").unwrap()),
                Op::StartsWith("al".into()),
            ],
        );
        assert!(name.matches(&ten));
    }

    #[test]
    fn folding_finds_a_word_in_itself_and_bad_cells_are_not_empty() {
        let f = FieldId::generate();
        let text = Column::Custom(f.clone(), CellType::Plain(FieldType::Text));
        let odos = issue(1, "ΟΔΟΣΟΣ", IssueState::Open, &[(&f, "ΑΣΑ")]);
        let starts = leaf(Column::Name, vec![Op::StartsWith(fold("ΟΔΟΣ"))]);
        assert!(starts.matches(&odos));
        assert!(leaf(text, vec![Op::Contains(fold("ΑΣ"))]).matches(&odos));
        // A cell another tool wrote that its type refuses is there: not empty, and no
        // comparison holds for it.
        let int = Column::Custom(f.clone(), CellType::Plain(FieldType::Int));
        let odd = issue(2, "x", IssueState::Open, &[(&f, "4.5")]);
        assert!(!leaf(int.clone(), vec![Op::IsEmpty(true)]).matches(&odd));
        assert!(leaf(int.clone(), vec![Op::IsEmpty(false)]).matches(&odd));
        assert!(!leaf(int.clone(), vec![Op::Ne(int.operand("1").unwrap())]).matches(&odd));
    }

    #[test]
    fn select_cells_compare_by_their_options_order() {
        let f = FieldId::generate();
        let key = |k: &str, id: &str, removed: bool| SelectOption {
            id: id.into(),
            label: id.into(),
            color: None,
            key: k.into(),
            stale_keys: Vec::new(),
            removed,
        };
        // Ids in the opposite order of the keys: the keys decide.
        let options = vec![
            key("80", "opt-c", false),
            key("8180", "opt-b", false),
            key("8280", "opt-a", true),
        ];
        let col = Column::Custom(f.clone(), CellType::Select(Arc::new(options)));
        let c = issue(1, "x", IssueState::Open, &[(&f, "opt-c")]);
        let b = issue(2, "y", IssueState::Open, &[(&f, "opt-b")]);
        let a = issue(3, "z", IssueState::Open, &[(&f, "opt-a")]);
        let after_c = leaf(col.clone(), vec![Op::Gt(col.operand("opt-c").unwrap())]);
        assert!(!after_c.matches(&c) && after_c.matches(&b));
        // A removed option's cells keep their place until the sweep clears them, but no
        // filter may name it.
        assert!(after_c.matches(&a));
        assert!(col.operand("opt-a").is_err());
        assert!(col.operand("opt-zz").is_err());
    }

    #[test]
    fn state_only_filters_evaluate_on_the_state() {
        let open = Column::State.operand("OPEN").unwrap();
        let p = Predicate::Or(vec![
            leaf(Column::State, vec![Op::Eq(open.clone())]),
            Predicate::Not(Box::new(leaf(Column::State, vec![Op::IsEmpty(false)]))),
        ]);
        assert_eq!(p.on_state(IssueState::Open), Some(true));
        assert_eq!(p.on_state(IssueState::Closed), Some(false));
        let mixed = Predicate::And(vec![
            leaf(Column::State, vec![Op::Eq(open)]),
            leaf(Column::Num, vec![Op::IsEmpty(false)]),
        ]);
        assert_eq!(mixed.on_state(IssueState::Open), None);
    }
}
