//! Expressions for the DynamoDB store: key conditions, filters, write conditions and updates,
//! with every attribute name and value behind a `#name` / `:value` placeholder.

use std::collections::HashMap;

use super::convert::SdkValue;
use crate::store::table::PK;
use crate::store::{AttributeValue, Condition, Filter, SortCondition, StoreError, UpdateAction};

/// An expression under construction with its placeholder maps.
#[derive(Default)]
pub(super) struct Expression {
    pub(super) expression: Option<String>,
    pub(super) names: HashMap<String, String>,
    pub(super) values: HashMap<String, SdkValue>,
}

impl Expression {
    /// Registers `#placeholder` for an attribute name and returns the placeholder.
    pub(super) fn name(&mut self, placeholder: &str, attribute: &str) -> String {
        self.names
            .insert(placeholder.to_string(), attribute.to_string());
        placeholder.to_string()
    }

    /// Registers `:placeholder` for a value and returns the placeholder.
    pub(super) fn value(&mut self, placeholder: &str, value: SdkValue) -> String {
        self.values.insert(placeholder.to_string(), value);
        placeholder.to_string()
    }
}

/// The sort-key half of a key condition, or `None` for [`SortCondition::Any`]. Only registers
/// `#sk` when used: DynamoDB rejects unused placeholders.
pub(super) fn sort_condition(
    expr: &mut Expression,
    attribute: &str,
    sort: &SortCondition,
) -> Option<String> {
    let s = |v: &String| SdkValue::S(v.clone());
    let condition = match sort {
        SortCondition::Any => return None,
        SortCondition::Eq(v) => format!("#sk = {}", expr.value(":s", s(v))),
        SortCondition::BeginsWith(v) => format!("begins_with(#sk, {})", expr.value(":s", s(v))),
        SortCondition::Between(lo, hi) => format!(
            "#sk BETWEEN {} AND {}",
            expr.value(":a", s(lo)),
            expr.value(":b", s(hi))
        ),
        SortCondition::Lt(v) => format!("#sk < {}", expr.value(":s", s(v))),
        SortCondition::Le(v) => format!("#sk <= {}", expr.value(":s", s(v))),
        SortCondition::Gt(v) => format!("#sk > {}", expr.value(":s", s(v))),
        SortCondition::Ge(v) => format!("#sk >= {}", expr.value(":s", s(v))),
    };
    expr.name("#sk", attribute);
    Some(condition)
}

/// `attribute_not_exists(#f0.#f1)` and friends: every path segment is a placeholder, because
/// field ids contain `-` and would otherwise parse as subtraction.
pub(super) fn filter_expression(
    expr: &mut Expression,
    filter: &Filter,
) -> Result<String, StoreError> {
    let (function, path) = match filter {
        Filter::AttributeNotExists(path) => ("attribute_not_exists", path),
        Filter::AttributeExists(path) => ("attribute_exists", path),
    };
    if path.0.is_empty() {
        return Err(StoreError::Invalid(
            "filter on an empty attribute path".into(),
        ));
    }
    let segments: Vec<String> = path
        .0
        .iter()
        .enumerate()
        .map(|(i, segment)| expr.name(&format!("#f{i}"), segment))
        .collect();
    Ok(format!("{function}({})", segments.join(".")))
}

/// The condition expression of one transactional write.
pub(super) fn condition_expression(condition: Condition) -> Expression {
    let mut expr = Expression::default();
    expr.expression = Some(condition_text(&mut expr, &condition));
    expr
}

/// Registers a fresh placeholder for an attribute name (`#n0`, `#n1`, …).
fn fresh_name(expr: &mut Expression, attribute: &str) -> String {
    let placeholder = format!("#n{}", expr.names.len());
    expr.name(&placeholder, attribute)
}

/// Registers a fresh placeholder for a value (`:v0`, `:v1`, …).
fn fresh_value(expr: &mut Expression, value: &AttributeValue) -> String {
    let placeholder = format!(":v{}", expr.values.len());
    expr.value(&placeholder, value.clone().into())
}

pub(super) fn condition_text(expr: &mut Expression, condition: &Condition) -> String {
    match condition {
        Condition::NotExists => format!("attribute_not_exists({})", fresh_name(expr, PK)),
        Condition::Exists => format!("attribute_exists({})", fresh_name(expr, PK)),
        Condition::AttributeEquals { name, value } => {
            format!("{} = {}", fresh_name(expr, name), fresh_value(expr, value))
        }
        Condition::AttributeMissing(name) => format!(
            "attribute_exists({}) AND attribute_not_exists({})",
            fresh_name(expr, PK),
            fresh_name(expr, name)
        ),
        Condition::All(all) => {
            if all.is_empty() {
                return format!(
                    "attribute_exists({}) OR attribute_not_exists({0})",
                    fresh_name(expr, PK)
                );
            }
            all.iter()
                .map(|c| format!("({})", condition_text(expr, c)))
                .collect::<Vec<_>>()
                .join(" AND ")
        }
        Condition::Any(any) => {
            if any.is_empty() {
                // No alternative holds: a condition that is always false.
                return format!(
                    "attribute_exists({}) AND attribute_not_exists({0})",
                    fresh_name(expr, PK)
                );
            }
            any.iter()
                .map(|c| format!("({})", condition_text(expr, c)))
                .collect::<Vec<_>>()
                .join(" OR ")
        }
    }
}

/// `SET #n0.#n1 = :v0 REMOVE #n2`: every path segment is a placeholder.
pub(super) fn update_expression(
    expr: &mut Expression,
    actions: &[UpdateAction],
) -> Result<String, StoreError> {
    let mut sets = Vec::new();
    let mut removes = Vec::new();
    let mut adds = Vec::new();
    for action in actions {
        let path = action.path();
        if path.0.is_empty() {
            return Err(StoreError::Invalid(
                "update of an empty attribute path".into(),
            ));
        }
        let path = path
            .0
            .iter()
            .map(|segment| fresh_name(expr, segment))
            .collect::<Vec<_>>()
            .join(".");
        match action {
            UpdateAction::Set(_, value) => {
                sets.push(format!("{path} = {}", fresh_value(expr, value)))
            }
            UpdateAction::Remove(_) => removes.push(path),
            UpdateAction::Add(_, delta) => adds.push(format!(
                "{path} {}",
                fresh_value(expr, &AttributeValue::N(delta.to_string()))
            )),
        }
    }
    let mut text = Vec::new();
    if !sets.is_empty() {
        text.push(format!("SET {}", sets.join(", ")));
    }
    if !removes.is_empty() {
        text.push(format!("REMOVE {}", removes.join(", ")));
    }
    if !adds.is_empty() {
        text.push(format!("ADD {}", adds.join(", ")));
    }
    if text.is_empty() {
        return Err(StoreError::Invalid(
            "an update needs at least one action".into(),
        ));
    }
    Ok(text.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::table::{GSI1SK, SK};
    use crate::store::AttrPath;

    #[test]
    fn query_expressions_use_placeholders_for_every_name() {
        let mut expr = Expression::default();
        let filter = Filter::AttributeNotExists(AttrPath::new(["Values", "xattrib-3812"]));
        assert_eq!(
            filter_expression(&mut expr, &filter).unwrap(),
            "attribute_not_exists(#f0.#f1)"
        );
        assert_eq!(expr.names["#f1"], "xattrib-3812");
        let sort = SortCondition::Between("a".into(), "b".into());
        assert_eq!(
            sort_condition(&mut expr, GSI1SK, &sort).unwrap(),
            "#sk BETWEEN :a AND :b"
        );
        assert_eq!(expr.names["#sk"], GSI1SK);
        let mut unused = Expression::default();
        assert_eq!(sort_condition(&mut unused, SK, &SortCondition::Any), None);
        assert!(unused.names.is_empty());
    }
}
