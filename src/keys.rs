//! The single-table layout's key values: which `PK`, `SK` and `GSI1SK` every item gets, and
//! which partition every access pattern reads.
//!
//! This is the only module that knows how keys are spelled (`xvalue-…`, `project-…#name`, …);
//! the sort strings inside `GSI1SK` come from `crate::sortkey`.

use crate::ids::{FieldId, IssueId, ProjectId, TenantId, ViewId};
use crate::model::{CustomField, FieldValue, IssueState};
use crate::sortkey;
use crate::store::Key;

/// Prefix of a field-value index row's sort key: `xvalue-<field id part>`.
pub const VALUE_PREFIX: &str = "xvalue-";
/// Suffix of an issue's name sort row (`project-<id>#name`).
const NAME_SUFFIX: &str = "#name";
/// Suffix of an issue's state sort row (`project-<id>#state`).
const STATE_SUFFIX: &str = "#state";

/// The one item of a tenant.
pub fn tenant(tenant: &TenantId) -> Key {
    Key::new(tenant.as_str(), tenant.as_str())
}

/// `GSI1` partition (and table `SK`) of the tenant directory: one row per tenant, by name, so
/// the tenants can be listed with a keyset Query (see ARCHITECTURE.md, "Additions to the
/// layout").
pub const TENANTS_PARTITION: &str = "tenants";

/// A tenant's row in the tenant directory, in the tenant's own table partition beside its item.
pub fn tenant_directory(tenant: &TenantId) -> Key {
    Key::new(tenant.as_str(), TENANTS_PARTITION)
}

/// `GSI1SK` of a tenant's directory row: its name, then its id after a separator, so tenants
/// sort case-insensitively by name and those of the same name still have distinct, stable
/// positions (as projects do in their tenant, see [`project_sort`]).
pub fn tenant_sort(name: &str, tenant: &TenantId) -> String {
    sortkey::with_suffix(&sortkey::text(name), tenant.part())
}

/// A project's own item; its `SK` is the owning tenant.
pub fn project(project: &ProjectId, tenant: &TenantId) -> Key {
    Key::new(project.as_str(), tenant.as_str())
}

/// A custom field's definition item, inside its project's partition.
pub fn field(project: &ProjectId, field: &FieldId) -> Key {
    Key::new(project.as_str(), field.as_str())
}

/// The lookup item that maps a field id to its project, so `node(id:)` can find a field
/// without knowing the project (see ARCHITECTURE.md, "Additions to the layout").
pub fn field_lookup(field: &FieldId) -> Key {
    Key::new(field.as_str(), field.as_str())
}

/// A saved view's definition item, inside its project's partition.
pub fn view(project: &ProjectId, view: &ViewId) -> Key {
    Key::new(project.as_str(), view.as_str())
}

/// The lookup item that maps a view id to its project (as [`field_lookup`] does for fields).
pub fn view_lookup(view: &ViewId) -> Key {
    Key::new(view.as_str(), view.as_str())
}

/// Prefix of a view index row's sort key and `GSI1` partition: `xvrow-<view id part>.<generation>`.
pub const VIEW_ROW_PREFIX: &str = "xvrow-";

/// `GSI1` partition holding the rows of generation `generation` of a view's index (also their
/// table `SK`): each index of a view has its own partition, so a rebuilt index fills beside
/// the one that serves.
pub fn view_partition(view: &ViewId, generation: u32) -> String {
    format!("{VIEW_ROW_PREFIX}{}.{generation}", view.part())
}

/// An issue's row in generation `generation` of a view's index.
pub fn view_row(issue: &IssueId, view: &ViewId, generation: u32) -> Key {
    Key::new(issue.as_str(), view_partition(view, generation))
}

/// The most keys a view sorts by.
pub const MAX_VIEW_KEYS: usize = sortkey::MAX_COMPOSITE_KEYS;

/// One key of a view row's sort string: the cell's value part (`None`: empty), its direction
/// and where empty cells go.
pub struct ViewKeyPart {
    pub value: Option<String>,
    pub descending: bool,
    pub empty_first: bool,
}

/// `GSI1SK` of a view index row: the composite of its keys, then the num (see
/// `sortkey::composite`).
pub fn view_sort(parts: &[ViewKeyPart], num: u32) -> String {
    let keys: Vec<sortkey::CompositeKey<'_>> = parts
        .iter()
        .map(|p| sortkey::CompositeKey {
            value: p.value.as_deref(),
            descending: p.descending,
            empty_first: p.empty_first,
        })
        .collect();
    sortkey::composite(&keys, num)
}

/// An issue's source item; its `SK` is the owning project.
pub fn issue(issue: &IssueId, project: &ProjectId) -> Key {
    Key::new(issue.as_str(), project.as_str())
}

/// An issue's value index row for one custom field.
pub fn field_value(issue: &IssueId, field: &FieldId) -> Key {
    Key::new(issue.as_str(), field_value_partition(field))
}

/// An issue's name sort row.
pub fn name_row(issue: &IssueId, project: &ProjectId) -> Key {
    Key::new(issue.as_str(), name_partition(project))
}

/// An issue's state sort row.
pub fn state_row(issue: &IssueId, project: &ProjectId) -> Key {
    Key::new(issue.as_str(), state_partition(project))
}

/// The record of a mutation by its caller and `clientMutationId` (see `repo::writes`): the
/// caller (`<tenant>#<sha256 of subject>`, empty without authentication) is part of the key, so one
/// caller's id can never replay, or block, another's.
pub fn mutation_record(caller: &str, client_mutation_id: &str) -> Key {
    let pk = if caller.is_empty() {
        format!("mutation#{client_mutation_id}")
    } else {
        format!("mutation#{caller}#{client_mutation_id}")
    };
    Key::new(pk.clone(), pk)
}

/// `GSI1` partition (and table `SK`) of the pending sweep jobs.
pub const SWEEPS_PARTITION: &str = "sweeps";

/// A sweep job, named after the deleted entity.
pub fn sweep(target_id: &str) -> Key {
    Key::new(format!("sweep#{target_id}"), SWEEPS_PARTITION)
}

/// `GSI1` partition holding a tenant's projects, by name.
pub fn projects_partition(tenant: &TenantId) -> String {
    tenant.as_str().to_string()
}

/// `GSI1` partition holding a project's issue items, by num.
pub fn issues_by_num_partition(project: &ProjectId) -> String {
    project.as_str().to_string()
}

/// `GSI1` partition holding a project's name sort rows.
pub fn name_partition(project: &ProjectId) -> String {
    format!("{project}{NAME_SUFFIX}")
}

/// `GSI1` partition holding a project's state sort rows.
pub fn state_partition(project: &ProjectId) -> String {
    format!("{project}{STATE_SUFFIX}")
}

/// `GSI1` partition holding one custom field's value rows (also their table `SK`).
pub fn field_value_partition(field: &FieldId) -> String {
    format!("{VALUE_PREFIX}{}", field.part())
}

/// Table sort-key prefix that selects an issue's source item within its partition (the source
/// item's `SK` is `project-<id>`, a prefix of its sort rows' keys, so it sorts first).
pub const ISSUE_SOURCE_SK_PREFIX: &str = "project-";

/// `GSI1SK` of a project: its name, with the project id after a separator so that projects
/// of the same name still have distinct, stable positions.
pub fn project_sort(name: &str, project: &ProjectId) -> String {
    sortkey::with_suffix(&sortkey::text(name), project.part())
}

/// The value part of a num's sort string (the whole `GSI1SK` of an issue item).
pub fn num_part(num: u32) -> String {
    sortkey::num(num)
}

/// The value part of a text's sort string (names, TEXT values), whole.
pub fn text_part(text: &str) -> String {
    sortkey::text(text)
}

/// The value part of a state's sort string.
pub fn state_part(state: IssueState) -> &'static str {
    sortkey::state_open(state == IssueState::Open)
}

/// The separator between a sort string's value part and its tie-breaker.
pub const SORT_SEPARATOR: char = sortkey::SEPARATOR;

/// `GSI1SK` of an issue item: its num.
pub fn issue_sort(num: u32) -> String {
    sortkey::num(num)
}

/// `GSI1SK` of an issue's name sort row.
pub fn name_sort(name: &str, num: u32) -> String {
    sortkey::with_num(&sortkey::text(name), num)
}

/// `GSI1SK` of an issue's state sort row.
pub fn state_sort(state: IssueState, num: u32) -> String {
    sortkey::with_num(sortkey::state_open(state == IssueState::Open), num)
}

/// `GSI1SK` of a field value row; `None` for a SELECT value that is not one of the field's
/// options (a cell no writer of this gateway writes, which gets no index row).
pub fn value_sort(field: &CustomField, value: &FieldValue, num: u32) -> Option<String> {
    Some(sortkey::with_num(&value_part(field, value)?, num))
}

/// The value part of a field value's sort string, whole (not cut to the key's length): what
/// [`value_sort`] starts with, and what filters compare cells and operands by. A SELECT value
/// sorts by its option's key, so it needs the field; `None` when the option is not the
/// field's.
pub fn value_part(field: &CustomField, value: &FieldValue) -> Option<String> {
    match value {
        FieldValue::Select(id) => field.option(id).map(|o| option_part(&o.key)),
        other => Some(plain_value_part(other)),
    }
}

/// The value part of a SELECT option with order key `key`.
pub fn option_part(key: &str) -> String {
    sortkey::select(key).to_string()
}

/// The value part of a value whose order does not depend on its field (every type but
/// SELECT, whose values are given their option's part by [`option_part`]).
pub fn plain_value_part(value: &FieldValue) -> String {
    match value {
        FieldValue::Text(s) => sortkey::text(s),
        FieldValue::Int(i) => sortkey::int(*i),
        FieldValue::Number(d) => sortkey::decimal(d),
        FieldValue::Date(d) => sortkey::date(*d),
        FieldValue::Checkbox(b) => sortkey::checkbox(*b).to_string(),
        FieldValue::Select(id) => sortkey::text(id),
    }
}

/// The `GSI1SK` a value row with sort string `sort` gets when its value part `from` becomes
/// `to` (an option that moved): the same issue number after the new part, made by
/// [`value_sort`]'s own function. `None` when `sort` is not `from`, the separator and a num.
pub fn rekeyed_sort(sort: &str, from: &str, to: &str) -> Option<String> {
    let num = sort.strip_prefix(from)?.strip_prefix(SORT_SEPARATOR)?;
    Some(sortkey::with_num(to, num.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_layout_contract() {
        let t = TenantId::parse("tenant-0807").unwrap();
        let p = ProjectId::parse("project-35e9").unwrap();
        let f = FieldId::parse("xattrib-3812").unwrap();
        let i = IssueId::parse("issue-020e").unwrap();
        assert_eq!(tenant(&t), Key::new("tenant-0807", "tenant-0807"));
        assert_eq!(tenant_directory(&t), Key::new("tenant-0807", "tenants"));
        assert_eq!(project(&p, &t), Key::new("project-35e9", "tenant-0807"));
        assert_eq!(field(&p, &f), Key::new("project-35e9", "xattrib-3812"));
        assert_eq!(issue(&i, &p), Key::new("issue-020e", "project-35e9"));
        assert_eq!(field_value(&i, &f), Key::new("issue-020e", "xvalue-3812"));
        assert_eq!(
            name_row(&i, &p),
            Key::new("issue-020e", "project-35e9#name")
        );
        assert_eq!(
            state_row(&i, &p),
            Key::new("issue-020e", "project-35e9#state")
        );
        assert!(name_row(&i, &p).sk.starts_with(ISSUE_SOURCE_SK_PREFIX));
    }

    #[test]
    fn project_sort_strings_order_by_name_then_id() {
        let a = ProjectId::parse("project-b").unwrap();
        let b = ProjectId::parse("project-a").unwrap();
        assert!(project_sort("Alpha", &a) < project_sort("beta", &b));
        assert!(project_sort("Same", &b) < project_sort("same", &a));
    }

    #[test]
    fn tenant_sort_strings_order_by_name_then_id() {
        let a = TenantId::parse("tenant-b").unwrap();
        let b = TenantId::parse("tenant-a").unwrap();
        assert!(tenant_sort("Alpha", &a) < tenant_sort("beta", &b));
        assert!(tenant_sort("Same", &b) < tenant_sort("same", &a));
        // A name that is a prefix of another sorts first, whatever the ids.
        assert!(tenant_sort("Acme", &a) < tenant_sort("Acme Media", &b));
    }
}
