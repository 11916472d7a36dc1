//! A filter as a client writes it, before it is checked: the `IssueFilter` tree with its
//! columns and operands as texts ([`Spec`]), serializable, so that a saved view can keep the
//! filter it was given and check it again whenever the project's fields change; and its check
//! against a project's fields into a [`Predicate`], refusing with the path in the filter of
//! the first thing wrong.

use serde::{Deserialize, Serialize};

use super::{
    fold, CellType, Column, Leaf, Op, Predicate, MAX_DEPTH, MAX_IN_VALUES, MAX_LEAVES, MAX_NODES,
};
use crate::ids::{FieldId, ProjectId};

/// A filter of a project's issues as written: either one combinator (exactly one of `and`,
/// `or`, `not`), or a leaf (a `column` and at least one operator). Field names are the
/// schema's (`isEmpty`, `startsWith`, `in`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub and: Option<Vec<Spec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub or: Option<Vec<Spec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not: Option<Box<Spec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<ColumnSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eq: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ne: Option<String>,
    #[serde(default, rename = "in", skip_serializing_if = "Option::is_none")]
    pub in_: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lte: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gte: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_empty: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_with: Option<String>,
}

/// A column as a filter names it: `field` is `NUM`, `NAME`, `STATE` or `CUSTOM_FIELD` (with
/// `customFieldId`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ColumnSpec {
    pub field: ColumnField,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_field_id: Option<String>,
}

/// The column kinds, spelled as the schema's `IssueOrderField`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ColumnField {
    Num,
    Name,
    State,
    CustomField,
}

/// Why a filter is refused: where in it (`filter.or[0].not`) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FilterError {
    pub path: String,
    pub message: String,
}

/// The type of each of a project's live fields (`None`: not one of them).
pub type FieldTypesOf<'a> = dyn Fn(&FieldId) -> Option<CellType> + 'a;

/// What a filter is checked against: its project and the types of the project's fields.
struct Fields<'a> {
    project: &'a ProjectId,
    types: &'a FieldTypesOf<'a>,
}

/// What a filter's check has met so far, for its limits.
#[derive(Default)]
struct Counted {
    nodes: usize,
    leaves: usize,
}

impl Spec {
    /// The filter checked against the field types `types` gives for `project`'s fields; `root`
    /// names the filter in refusals (`filter`).
    pub fn check(
        &self,
        root: &str,
        project: &ProjectId,
        types: &FieldTypesOf<'_>,
    ) -> Result<Predicate, FilterError> {
        let mut counts = Counted::default();
        let fields = Fields { project, types };
        self.check_at(&fields, root, 1, &mut counts)
    }

    fn check_at(
        &self,
        project: &Fields<'_>,
        path: &str,
        depth: usize,
        counts: &mut Counted,
    ) -> Result<Predicate, FilterError> {
        let bad = |message: String| FilterError {
            path: path.to_string(),
            message,
        };
        if depth > MAX_DEPTH {
            return Err(bad(format!("filters nest at most {MAX_DEPTH} levels deep")));
        }
        counts.nodes += 1;
        if counts.nodes > MAX_NODES {
            return Err(bad(format!(
                "a filter has at most {MAX_NODES} objects, combinators included"
            )));
        }
        let Spec {
            and,
            or,
            not,
            column,
            eq,
            ne,
            in_,
            lt,
            lte,
            gt,
            gte,
            is_empty,
            contains,
            starts_with,
        } = self;
        let combinators = [and.is_some(), or.is_some(), not.is_some()]
            .into_iter()
            .filter(|c| *c)
            .count();
        let operators = [
            eq.is_some(),
            ne.is_some(),
            in_.is_some(),
            lt.is_some(),
            lte.is_some(),
            gt.is_some(),
            gte.is_some(),
            is_empty.is_some(),
            contains.is_some(),
            starts_with.is_some(),
        ]
        .into_iter()
        .any(|o| o);
        let leaf = column.is_some() || operators;
        if combinators > 1 || (combinators == 1 && leaf) {
            return Err(bad(
                "a filter is either one of `and`, `or`, `not`, or a `column` with operators, never two of these".into(),
            ));
        }
        let list = |filters: &[Spec], name: &str, counts: &mut Counted| {
            filters
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    f.check_at(project, &format!("{path}.{name}[{i}]"), depth + 1, counts)
                })
                .collect::<Result<Vec<_>, _>>()
        };
        if let Some(all) = and {
            return Ok(Predicate::And(list(all, "and", counts)?));
        }
        if let Some(any) = or {
            return Ok(Predicate::Or(list(any, "or", counts)?));
        }
        if let Some(inner) = not {
            let inner = inner.check_at(project, &format!("{path}.not"), depth + 1, counts)?;
            return Ok(Predicate::Not(Box::new(inner)));
        }
        let Some(column) = column else {
            return Err(bad(if operators {
                "a leaf needs the `column` it tests".into()
            } else {
                "an empty filter: give a `column` and at least one operator, or one of `and`, `or`, `not`".into()
            }));
        };
        if !operators {
            return Err(bad(
                "a leaf needs at least one operator (`eq`, `ne`, `in`, `lt`, `lte`, `gt`, `gte`, `isEmpty`, `contains`, `startsWith`)".into(),
            ));
        }
        counts.leaves += 1;
        if counts.leaves > MAX_LEAVES {
            return Err(bad(format!("a filter has at most {MAX_LEAVES} leaves")));
        }
        let column = column
            .check(project)
            .map_err(|m| bad(format!("column: {m}")))?;
        let operand = |name: &str, text: &str| {
            column
                .operand(text)
                .map_err(|e| bad(format!("{name}: {e}")))
        };
        let mut ops = Vec::new();
        for (name, value, op) in [
            ("eq", eq, Op::Eq as fn(String) -> Op),
            ("ne", ne, Op::Ne),
            ("lt", lt, Op::Lt),
            ("lte", lte, Op::Lte),
            ("gt", gt, Op::Gt),
            ("gte", gte, Op::Gte),
        ] {
            if let Some(text) = value {
                ops.push(op(operand(name, text)?));
            }
        }
        if let Some(values) = in_ {
            if values.len() > MAX_IN_VALUES {
                return Err(bad(format!(
                    "in: at most {MAX_IN_VALUES} values, got {}",
                    values.len()
                )));
            }
            let values = values
                .iter()
                .enumerate()
                .map(|(i, text)| operand(&format!("in[{i}]"), text))
                .collect::<Result<Vec<_>, _>>()?;
            ops.push(Op::In(values));
        }
        if let Some(empty) = is_empty {
            ops.push(Op::IsEmpty(*empty));
        }
        for (name, value, op) in [
            ("contains", contains, Op::Contains as fn(String) -> Op),
            ("startsWith", starts_with, Op::StartsWith),
        ] {
            if let Some(text) = value {
                if !column.is_text() {
                    return Err(bad(format!(
                        "{name}: applies to text columns (NAME and TEXT fields) only"
                    )));
                }
                ops.push(op(fold(text)));
            }
        }
        Ok(Predicate::Leaf(Leaf { column, ops }))
    }
}

impl Spec {
    /// Whether any leaf of the filter tests custom field `field`.
    pub fn mentions(&self, field: &FieldId) -> bool {
        let lists = self.and.iter().chain(&self.or).flatten();
        lists.chain(self.not.as_deref()).any(|f| f.mentions(field))
            || self
                .column
                .as_ref()
                .and_then(|c| c.custom_field_id.as_deref())
                == Some(field.as_str())
    }

    /// The filter without the leaves that no longer check against `project`'s fields (a field
    /// deleted, an option removed): each such leaf is dropped; an `and` or `or` left without
    /// operands is dropped in turn, and so is a `not` whose operand was; `None` when nothing
    /// is left, which is no filter (every issue). So a condition on something gone is
    /// forgotten, never read as false: `and` widens by what it loses, `or` keeps what it has.
    pub fn prune(&self, project: &ProjectId, types: &FieldTypesOf<'_>) -> Option<Spec> {
        let list = |filters: &Option<Vec<Spec>>| -> Option<Option<Vec<Spec>>> {
            match filters {
                None => Some(None),
                Some(fs) => {
                    let kept: Vec<Spec> =
                        fs.iter().filter_map(|f| f.prune(project, types)).collect();
                    (!kept.is_empty()).then_some(Some(kept))
                }
            }
        };
        if self.and.is_some() || self.or.is_some() {
            return Some(Spec {
                and: list(&self.and)?,
                or: list(&self.or)?,
                ..Spec::default()
            });
        }
        if let Some(inner) = &self.not {
            return inner.prune(project, types).map(|inner| Spec {
                not: Some(Box::new(inner)),
                ..Spec::default()
            });
        }
        self.check("filter", project, types)
            .ok()
            .map(|_| self.clone())
    }
}

impl ColumnSpec {
    /// The column, checked against the project's fields.
    fn check(&self, project: &Fields<'_>) -> Result<Column, String> {
        match (self.field, &self.custom_field_id) {
            (ColumnField::CustomField, None) => Err(
                "CUSTOM_FIELD needs `customFieldId`, the id of one of the project's custom fields"
                    .into(),
            ),
            (ColumnField::CustomField, Some(id)) => {
                let unknown = || format!("{id} is not a custom field of {}", project.project);
                let id = FieldId::parse(id).map_err(|_| unknown())?;
                let field_type = (project.types)(&id).ok_or_else(unknown)?;
                Ok(Column::Custom(id, field_type))
            }
            (_, Some(_)) => Err("`customFieldId` only applies to field CUSTOM_FIELD".into()),
            (ColumnField::Num, None) => Ok(Column::Num),
            (ColumnField::Name, None) => Ok(Column::Name),
            (ColumnField::State, None) => Ok(Column::State),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_read_back_in_the_schema_shape() {
        let json = serde_json::json!({
            "or": [
                {"column": {"field": "CUSTOM_FIELD", "customFieldId": "xattrib-3812"}, "in": ["a"], "isEmpty": false},
                {"not": {"column": {"field": "NAME"}, "startsWith": "b"}}
            ]
        });
        let spec: Spec = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&spec).unwrap(), json);
        let unknown = serde_json::json!({"column": {"field": "NUM"}, "like": "x"});
        assert!(serde_json::from_value::<Spec>(unknown).is_err());
    }
}
