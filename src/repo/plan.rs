//! The planner of issue lists: which `GSI1` partitions a sorted, filtered list reads, under
//! which key conditions, and what is left for the gateway to test on each issue read.
//!
//! A list is read as segments (see `paging`). The planner looks at the filter's top-level
//! conjuncts:
//! - a leaf on the **sorted column** becomes a key condition on `GSI1SK` (a range, a value, a
//!   text prefix), so the read touches no row outside it; an `isEmpty` leaf on a sorted custom
//!   field picks the segment (the rows with a value, or the empty cells);
//! - a `state` equality on a list **sorted by num** reads the state partition instead, whose
//!   rows for one state are in num order, when the project's counters say the state is rare
//!   (see [`STATE_PARTITION_SHARE`]);
//! - every other conjunct is the **residual**: each row read is tested against it (the issue
//!   loaded first when the row read is an index row), and the page reads on until it is full or
//!   the request's read budget is spent.
//!
//! A leaf leaves the residual only when its key condition answers it exactly; one that is only
//! narrowed by it (an `in` of several values, an operand too long for a sort key) stays. So the
//! residual is always right, and a range on the sorted column reads only the rows it returns.

use super::{IssueList, PlanSegment, SortField};
use crate::filter::{Column, Leaf, Op, Predicate};
use crate::ids::ProjectId;
use crate::items;
use crate::keys;
use crate::model::{IssueCounts, IssueState};
use crate::paging::Segment;
use crate::store::{AttrPath, Filter, SortCondition};

/// A state equality under a num order reads the state partition (index rows, whose issues are
/// then loaded: about half a read unit each) only when at most this share of the issues have
/// that state; otherwise the num partition's issue items (a few hundredths of a unit each) are
/// tested one by one, which reads fewer units for any common state.
const STATE_PARTITION_SHARE: f64 = 0.125;

/// Operands whose encoding is longer than this are not made into key conditions: a stored
/// sort key keeps at least this many bytes of its value whole (see `with_num` in `sortkey`), so up
/// to here a key condition compares exactly what the filter compares.
const MAX_KEY_OPERAND_BYTES: usize = 1000;

/// What comes between a sort string's value part and its tie-breaker.
const SEPARATOR: char = keys::SORT_SEPARATOR;
/// The char after [`SEPARATOR`]: a value part followed by it sorts after every sort string of
/// that value and before every longer value that starts with it.
const AFTER_SEPARATOR: char = '\u{2}';

/// How a list is read.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The segments, in list order (none when the filter can match nothing).
    pub segments: Vec<Segment>,
    /// What no key condition answers: each issue read is tested against it.
    pub residual: Option<Predicate>,
}

impl Plan {
    /// Plans a project's issue list; `counts` (the project's counters, when kept) tell how
    /// common a state is.
    pub fn new(project: &ProjectId, list: &IssueList, counts: Option<&IssueCounts>) -> Plan {
        let conjuncts = list.filter.clone().map(Predicate::conjuncts);
        let mut keyed = KeyRange::default();
        let mut residual = Vec::new();
        let mut state_partition = None;
        // Leaves that are a text prefix of the sorted column alone: the first becomes a
        // `begins_with` when no bound is set; DynamoDB takes one key condition only.
        let mut prefixes = Vec::new();
        for conjunct in conjuncts.into_iter().flatten() {
            let Predicate::Leaf(leaf) = &conjunct else {
                residual.push(conjunct);
                continue;
            };
            // A SELECT column whose options sweep is still moving rows to new keys cannot
            // answer a leaf from the index: rows under old keys would be missed. The residual
            // test compares every row read by the options' current order instead.
            if on_sorted_column(&leaf.column, &list.sort.field) && leaf.column.keys_settled() {
                if let [Op::StartsWith(p)] = leaf.ops.as_slice() {
                    match prefix_key(p) {
                        Some(key) if prefixes.is_empty() => prefixes.push((key, conjunct)),
                        _ => residual.push(conjunct),
                    }
                } else if !keyed.add(leaf) {
                    residual.push(conjunct);
                }
            } else if list.sort.field == SortField::Num
                && leaf.column == Column::State
                && state_partition.is_none()
            {
                match single_value(leaf).filter(|state| rare_state(state, counts)) {
                    Some(value) => state_partition = Some(value.to_string()),
                    None => residual.push(conjunct),
                }
            } else {
                residual.push(conjunct);
            }
        }
        if let Some((key, leaf)) = prefixes.pop() {
            if keyed.lo.is_none() && keyed.hi.is_none() {
                keyed.prefix = Some(key);
                keyed.no_empties = true;
            } else {
                residual.push(leaf);
            }
        }
        Plan {
            segments: keyed.segments(project, list, state_partition),
            residual: Predicate::all(residual),
        }
    }

    /// What the plan reads, for `extensions.plan`: each segment's partition and key condition.
    pub fn describe(&self) -> Vec<PlanSegment> {
        self.segments
            .iter()
            .map(|s| {
                let mut key_condition = describe_condition(&s.sort);
                if s.filter.is_some() {
                    key_condition.push_str(" (issues without a value)");
                }
                PlanSegment {
                    partition: s.partition.clone(),
                    key_condition,
                }
            })
            .collect()
    }
}

fn describe_condition(sort: &SortCondition) -> String {
    let show = |s: &str| serde_json::Value::from(s).to_string();
    match sort {
        SortCondition::Any => "all".into(),
        SortCondition::Eq(v) => format!("GSI1SK = {}", show(v)),
        SortCondition::BeginsWith(v) => format!("begins_with(GSI1SK, {})", show(v)),
        SortCondition::Between(a, b) => format!("GSI1SK BETWEEN {} AND {}", show(a), show(b)),
        SortCondition::Lt(v) => format!("GSI1SK < {}", show(v)),
        SortCondition::Le(v) => format!("GSI1SK <= {}", show(v)),
        SortCondition::Gt(v) => format!("GSI1SK > {}", show(v)),
        SortCondition::Ge(v) => format!("GSI1SK >= {}", show(v)),
    }
}

/// Whether at most [`STATE_PARTITION_SHARE`] of the issues have the state whose sort-string
/// part is `state` (unknown without counters: then no).
fn rare_state(state: &str, counts: Option<&IssueCounts>) -> bool {
    let Some(counts) = counts.filter(|c| c.issues > 0) else {
        return false;
    };
    let with_state = if state == keys::state_part(IssueState::Open) {
        counts.open
    } else {
        counts.issues - counts.open
    };
    (with_state as f64) <= STATE_PARTITION_SHARE * counts.issues as f64
}

/// Whether a leaf tests the column the list is sorted by.
fn on_sorted_column(column: &Column, sorted: &SortField) -> bool {
    match (column, sorted) {
        (Column::Num, SortField::Num)
        | (Column::Name, SortField::Name)
        | (Column::State, SortField::State) => true,
        (Column::Custom(a, _), SortField::Custom(b)) => a == b,
        _ => false,
    }
}

/// The one value a leaf asks for (`eq`, or `in` of one value), when that is all it asks.
fn single_value(leaf: &Leaf) -> Option<&str> {
    match leaf.ops.as_slice() {
        [Op::Eq(v)] => Some(v),
        [Op::In(vs)] if vs.len() == 1 => vs.first().map(String::as_str),
        _ => None,
    }
}

/// What the leaves on the sorted column say about the `GSI1SK` range to read, as inclusive
/// bounds on the sort string.
#[derive(Default)]
struct KeyRange {
    lo: Option<String>,
    hi: Option<String>,
    /// A `begins_with` prefix (used only when no bound is set).
    prefix: Option<String>,
    /// Whether the rows with a value can match (false after `isEmpty: true`).
    no_values: bool,
    /// Whether the empty cells can match (false after any comparison or `isEmpty: false`).
    no_empties: bool,
}

impl KeyRange {
    /// Narrows the range by a leaf on the sorted column; `false` when the range does not answer
    /// the leaf exactly (it stays in the residual, and may still have narrowed the range).
    fn add(&mut self, leaf: &Leaf) -> bool {
        let num = leaf.column == Column::Num;
        let mut exact = true;
        for op in &leaf.ops {
            if !matches!(op, Op::IsEmpty(true)) {
                self.no_empties = true;
            }
            let long = |v: &String| v.len() > MAX_KEY_OPERAND_BYTES;
            match op {
                Op::IsEmpty(true) => {
                    if leaf.column.may_be_empty() {
                        self.no_values = true;
                    } else {
                        // Num, name and state always have a value.
                        self.no_values = true;
                        self.no_empties = true;
                    }
                }
                Op::IsEmpty(false) => {}
                Op::Eq(v) | Op::Gte(v) | Op::Gt(v) | Op::Lte(v) | Op::Lt(v) if long(v) => {
                    exact = false;
                }
                Op::Eq(v) => {
                    self.lower(lower_bound(v, true, num));
                    self.upper(upper_bound(v, true, num));
                }
                Op::Gte(v) => self.lower(lower_bound(v, true, num)),
                Op::Gt(v) => self.lower(lower_bound(v, false, num)),
                Op::Lte(v) => self.upper(upper_bound(v, true, num)),
                Op::Lt(v) => self.upper(upper_bound(v, false, num)),
                Op::In(vs) => {
                    // The range of the values narrows; only one value is answered exactly.
                    if vs.iter().any(long) || vs.is_empty() {
                        exact = false;
                        if vs.is_empty() {
                            self.no_values = true;
                        }
                        continue;
                    }
                    if let (Some(min), Some(max)) = (vs.iter().min(), vs.iter().max()) {
                        self.lower(lower_bound(min, true, num));
                        self.upper(upper_bound(max, true, num));
                    }
                    exact &= vs.len() == 1;
                }
                Op::StartsWith(_) | Op::Ne(_) | Op::Contains(_) => exact = false,
            }
        }
        exact
    }

    fn lower(&mut self, bound: Option<String>) {
        match bound {
            None => self.no_values = true,
            Some(b) => {
                if self.lo.as_ref().is_none_or(|lo| &b > lo) {
                    self.lo = Some(b);
                }
            }
        }
    }

    fn upper(&mut self, bound: Option<String>) {
        match bound {
            None => self.no_values = true,
            Some(b) => {
                if self.hi.as_ref().is_none_or(|hi| &b < hi) {
                    self.hi = Some(b);
                }
            }
        }
    }

    /// The key condition of the rows with a value; `None` when none can match.
    fn condition(&mut self) -> Option<SortCondition> {
        if self.no_values {
            return None;
        }
        if let Some(prefix) = self.prefix.take() {
            return Some(SortCondition::BeginsWith(prefix));
        }
        match (self.lo.take(), self.hi.take()) {
            (None, None) => Some(SortCondition::Any),
            (Some(lo), None) => Some(SortCondition::Ge(lo)),
            (None, Some(hi)) => Some(SortCondition::Le(hi)),
            (Some(lo), Some(hi)) if lo <= hi => Some(SortCondition::Between(lo, hi)),
            (Some(_), Some(_)) => None,
        }
    }

    fn segments(
        mut self,
        project: &ProjectId,
        list: &IssueList,
        state_partition: Option<String>,
    ) -> Vec<Segment> {
        let ascending = list.sort.ascending;
        let segment = |partition: String, sort: SortCondition, filter: Option<Filter>| Segment {
            partition,
            sort,
            key_prefix: String::new(),
            ascending,
            filter,
        };
        let empties = !self.no_empties;
        let values = self.condition();
        match &list.sort.field {
            SortField::Num => match (state_partition, values) {
                (_, None) => Vec::new(),
                (None, Some(sort)) => {
                    vec![segment(keys::issues_by_num_partition(project), sort, None)]
                }
                // A num range within one state: the state rows are `state ␁ num`, and a
                // position names them by num alone, as the num partition does.
                (Some(state), Some(sort)) => match state_range(&state, sort) {
                    Some(sort) => vec![Segment {
                        key_prefix: format!("{state}{SEPARATOR}"),
                        ..segment(keys::state_partition(project), sort, None)
                    }],
                    None => Vec::new(),
                },
            },
            SortField::Name => values
                .map(|sort| segment(keys::name_partition(project), sort, None))
                .into_iter()
                .collect(),
            SortField::State => values
                .map(|sort| segment(keys::state_partition(project), sort, None))
                .into_iter()
                .collect(),
            SortField::View { view, generation } => values
                .map(|sort| segment(keys::view_partition(view, *generation), sort, None))
                .into_iter()
                .collect(),
            SortField::Custom(field) => {
                let with_value =
                    values.map(|sort| segment(keys::field_value_partition(field), sort, None));
                // The issues without a value, in num order, picked out of the project's issue
                // items by a filter.
                let without = empties.then(|| {
                    segment(
                        keys::issues_by_num_partition(project),
                        SortCondition::Any,
                        Some(Filter::AttributeNotExists(AttrPath::new([
                            items::VALUES,
                            field.as_str(),
                        ]))),
                    )
                });
                let (first, second) = if list.sort.empty_first {
                    (without, with_value)
                } else {
                    (with_value, without)
                };
                first.into_iter().chain(second).collect()
            }
        }
    }
}

/// The key condition within one state's rows (`state ␁ num`) for a num condition.
fn state_range(state: &str, num: SortCondition) -> Option<SortCondition> {
    let at = |n: &str| format!("{state}{SEPARATOR}{n}");
    let lowest = format!("{state}{SEPARATOR}");
    let highest = format!("{state}{AFTER_SEPARATOR}");
    let (lo, hi) = match num {
        SortCondition::Any => return Some(SortCondition::BeginsWith(lowest)),
        SortCondition::Ge(lo) => (at(&lo), highest),
        SortCondition::Le(hi) => (lowest, at(&hi)),
        SortCondition::Between(lo, hi) => (at(&lo), at(&hi)),
        // The planner makes no other condition for num.
        _ => return None,
    };
    (lo <= hi).then_some(SortCondition::Between(lo, hi))
}

/// The `begins_with` operand of a text prefix (case-folded already): the key holds the text
/// folded and escaped, so a prefix that folding leaves as it is, encoded, starts exactly the
/// keys whose text starts with it. `None` when folding would change it or it is too long.
fn prefix_key(prefix: &str) -> Option<String> {
    let encoded = keys::text_part(prefix);
    // A sigma folds to `σ` or `ς` in keys depending on where a word ends, which a prefix
    // cannot know: such prefixes are tested on the rows instead.
    let keyable = !prefix.is_empty()
        && !prefix.contains(['σ', 'ς'])
        && prefix.to_lowercase() == prefix
        && encoded.len() <= MAX_KEY_OPERAND_BYTES;
    keyable.then_some(encoded)
}

/// The inclusive lower bound on `GSI1SK` of the values above (`inclusive`: at or above) the
/// encoded value `v`. Sort strings of num are the value itself; the others are
/// `value ␁ num`, so `v ␁` is below every key of `v` and `v ␂` above them all and below every
/// longer value.
fn lower_bound(v: &str, inclusive: bool, num: bool) -> Option<String> {
    if num {
        let n: u32 = v.parse().ok()?;
        let n = if inclusive { Some(n) } else { n.checked_add(1) };
        return n.map(keys::num_part);
    }
    Some(if inclusive {
        format!("{v}{SEPARATOR}")
    } else {
        format!("{v}{AFTER_SEPARATOR}")
    })
}

/// The inclusive upper bound on `GSI1SK` of the values below (`inclusive`: at or below) `v`;
/// `None` when there are none.
fn upper_bound(v: &str, inclusive: bool, num: bool) -> Option<String> {
    if num {
        let n: u32 = v.parse().ok()?;
        let n = if inclusive { Some(n) } else { n.checked_sub(1) };
        return n.map(keys::num_part);
    }
    Some(if inclusive {
        format!("{v}{AFTER_SEPARATOR}")
    } else {
        format!("{v}{SEPARATOR}")
    })
}
