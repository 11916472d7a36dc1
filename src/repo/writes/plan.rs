//! Planning: the operations a mutation commits, each conditioned on the state it was planned
//! from — issue rows derived by `items::issue_items` and diffed by `items::diff_rows`, and the
//! conditions on versions, tombstones and the project's fields.

use super::validate::check_fits;
use super::{invalid, Plan, WriteError};
use crate::ids::IssueId;
use crate::items::{self, attrs, RowChanges, SweepJob, SweepTarget};
use crate::keys;
use crate::model::{CustomField, Issue, IssueCounts, Project, ProjectData};
use crate::repo::now_millis;
pub(super) use crate::repo::project_unchanged;
use crate::repo::RepoError;
use crate::store::{AttrPath, AttributeValue, Condition, Item, Key, UpdateAction, WriteOp};
use crate::view;

/// The plan that turns an issue (as its stored `rows`) into `new`: the source row conditioned
/// on the version read, the project check, and only the index rows that differ from what is
/// stored. Diffing against the stored rows (not rows re-derived from the old issue) means a
/// write also repairs its issue's index rows if they ever drifted.
pub(super) fn issue_plan(
    data: ProjectData,
    old: &Issue,
    rows: &[Item],
    mut new: Issue,
    guarded: bool,
    client_id: Option<&str>,
    input: &str,
) -> Result<Plan, WriteError> {
    let old_version = old.version;
    // Cells of deleted fields go with any write of the issue, so a sweep that already passed
    // this issue is never undone by a writer that read it earlier.
    new.values
        .retain(|field, _| data.fields.iter().any(|f| &f.id == field));
    // An edit that changes nothing writes nothing and keeps the version, so it cannot make
    // another client's `expectedVersion` stale; unless the stored rows drifted, which any
    // edit repairs.
    // The project's view indexes, checked once for everything this write derives and counts.
    let indexes = view::indexes(&data);
    if new == *old && items::diff_rows(rows, &derive(old, &data, &indexes)?).is_empty() {
        let mut plan = Plan::new(Vec::new(), new.id.to_string());
        plan.project = Some(data);
        return Ok(plan);
    }
    // A cell another tool wrote that its field's type does not accept cannot be indexed: the
    // client must set or clear it rather than have it silently dropped.
    for (field_id, text) in &new.values {
        if let Some(field) = data.field(field_id) {
            if field.stored_value(text).is_err() {
                return Err(invalid(
                    input,
                    format!(
                        "the issue's cell of {field_id} holds {text:?}, which is not a valid {} \
                         value: set or clear that cell in this call",
                        field.field_type.as_str().to_uppercase()
                    ),
                ));
            }
        }
    }
    new.version = old_version + 1;
    let new_rows = derive(&new, &data, &indexes)?;
    let mut counts = count_actions(&data, Some(old), Some(&new));
    counts.extend(view_count_actions(&indexes, rows, &new_rows));
    let RowChanges { puts, deletes } = items::diff_rows(rows, &new_rows);
    let source = keys::issue(&new.id, &new.project);
    let mut ops = Vec::with_capacity(puts.len() + deletes.len() + 2);
    ops.push(project_op(
        &data.project,
        project_unchanged(&data.project),
        counts,
    ));
    let stored_keys: std::collections::HashSet<Key> =
        rows.iter().filter_map(items::item_key).collect();
    for item in puts {
        let key = items::item_key(&item);
        if key.as_ref() == Some(&source) {
            let condition = Condition::equals(attrs::VERSION, items::number(old_version));
            ops.insert(
                0,
                WriteOp::Put {
                    item,
                    condition: Some(condition),
                },
            );
        } else {
            let condition = key.and_then(|k| view_row_condition(&k, stored_keys.contains(&k)));
            ops.push(WriteOp::Put { item, condition });
        }
    }
    ops.extend(deletes.into_iter().map(|key| WriteOp::Delete {
        condition: view_row_condition(&key, true),
        key,
    }));
    ops.extend(build_guards(&indexes, &new.id, rows, &new_rows));
    check_fits(input, &ops, client_id.is_some())?;
    let mut plan = Plan::new(ops, new.id.to_string());
    plan.guarded = guarded.then_some(0);
    plan.project = Some(data);
    Ok(plan)
}

/// The rows of an issue whose values were all checked against the project's fields: its
/// source and index rows, and its rows in `indexes`, the project's view indexes
/// (`view::indexes`, checked once per write).
pub(super) fn derive(
    issue: &Issue,
    data: &ProjectData,
    indexes: &[view::CheckedIndex],
) -> Result<Vec<Item>, WriteError> {
    let mut rows = derive_items(issue, &data.fields)?;
    rows.extend(view::rows(issue, indexes));
    Ok(rows)
}

/// The condition on a write of a view index row that the stored rows had (`stored`) or not:
/// it is still there, or still absent. An index being built has a second writer, its build,
/// which inserts the rows of issues it reads (see `repo::sweep::views`); a writer that planned
/// from rows read before such an insert must fail and plan again rather than count the row
/// twice. Other rows (`None`) are the writer's alone.
pub(super) fn view_row_condition(key: &Key, stored: bool) -> Option<Condition> {
    view::row_partition(&key.sk)?;
    Some(if stored {
        Condition::Exists
    } else {
        Condition::NotExists
    })
}

/// For each index being built in which the issue has no row before or after the write: a check
/// that its build did not insert one meanwhile (which the write would otherwise leave behind,
/// counted, for an issue the index no longer holds).
pub(super) fn build_guards(
    indexes: &[view::CheckedIndex],
    issue: &IssueId,
    stored: &[Item],
    new: &[Item],
) -> Vec<WriteOp> {
    let has = |rows: &[Item], key: &Key| {
        rows.iter()
            .any(|r| items::item_key(r).as_ref() == Some(key))
    };
    indexes
        .iter()
        .filter(|index| index.building)
        .map(|index| index.row_key(issue))
        .filter(|key| !has(stored, key) && !has(new, key))
        .map(|key| WriteOp::ConditionCheck {
            key,
            condition: Condition::NotExists,
        })
        .collect()
}

/// The view index counters' changes (`Matched:<partition>`) for an issue whose rows go from
/// `stored` to `new`: one more for each index it enters, one less for each it leaves. Taken
/// from the stored rows, so the counters follow the rows whatever the issue was before.
pub(super) fn view_count_actions(
    indexes: &[view::CheckedIndex],
    stored: &[Item],
    new: &[Item],
) -> Vec<UpdateAction> {
    // Only the indexes the project's views keep are counted: a row left in an index that is
    // gone (its view deleted or rebuilt) must not bring its counter back.
    let kept: std::collections::BTreeSet<String> =
        indexes.iter().map(view::CheckedIndex::partition).collect();
    let partitions = |rows: &[Item]| -> std::collections::BTreeSet<String> {
        rows.iter()
            .filter_map(items::item_key)
            .filter_map(|key| view::row_partition(&key.sk).map(str::to_string))
            .filter(|partition| kept.contains(partition))
            .collect()
    };
    let (before, after) = (partitions(stored), partitions(new));
    let add = |partition: &String, n: i64| {
        UpdateAction::Add(AttrPath::new([items::matched_attr(partition)]), n)
    };
    after
        .difference(&before)
        .map(|p| add(p, 1))
        .chain(before.difference(&after).map(|p| add(p, -1)))
        .collect()
}

/// The source and index rows of an issue whose values were all checked against `fields`.
fn derive_items(issue: &Issue, fields: &[CustomField]) -> Result<Vec<Item>, WriteError> {
    items::issue_items(issue, fields).map_err(|e| {
        tracing::error!(issue = %issue.id, error = %e, "checked issue failed to encode");
        WriteError::Repo(RepoError::Item(items::ItemError {
            pk: issue.id.to_string(),
            sk: issue.project.to_string(),
            expected: "issue",
            reason: e.to_string(),
        }))
    })
}

/// The project item's counter changes (see `model::IssueCounts`) for an issue going from `old`
/// (`None`: created) to `new` (`None`: deleted). Cells of fields that are not the project's
/// live ones are not counted.
pub(super) fn count_actions(
    data: &ProjectData,
    old: Option<&Issue>,
    new: Option<&Issue>,
) -> Vec<UpdateAction> {
    let mut delta = IssueCounts::default();
    if let Some(old) = old {
        delta.add(old, -1);
    }
    if let Some(new) = new {
        delta.add(new, 1);
    }
    let add = |name: &str, n: i64| UpdateAction::Add(AttrPath::new([name]), n);
    let mut actions = Vec::new();
    if delta.issues != 0 {
        actions.push(add(attrs::ISSUE_COUNT, delta.issues));
    }
    if delta.open != 0 {
        actions.push(add(attrs::OPEN_COUNT, delta.open));
    }
    for (field, n) in &delta.filled {
        if *n != 0 && data.field(field).is_some() {
            actions.push(add(&items::filled_attr(field), *n));
        }
    }
    actions
}

/// The project item's part in a write of one of its issues: a check of `condition`, or, when
/// the write changes the issue counters, their update under the same condition. The item is in
/// every issue write already, so keeping the counters adds no item to the transaction.
pub(super) fn project_op(
    project: &Project,
    condition: Condition,
    counts: Vec<UpdateAction>,
) -> WriteOp {
    let key = keys::project(&project.id, &project.tenant);
    if counts.is_empty() {
        WriteOp::ConditionCheck { key, condition }
    } else {
        WriteOp::Update {
            key,
            actions: counts,
            condition: Some(condition),
        }
    }
}

pub(super) fn set(name: &str, value: AttributeValue) -> UpdateAction {
    UpdateAction::Set(AttrPath::new([name]), value)
}

pub(super) fn put_new(item: Item) -> WriteOp {
    WriteOp::Put {
        item,
        condition: Some(Condition::NotExists),
    }
}

/// The field row still holds what the write read: its `Version` (or none, for rows other tools
/// wrote without one, whose content is then compared too).
pub(super) fn field_unchanged(field: &CustomField) -> Condition {
    Condition::All(vec![
        Condition::equals_or_missing(attrs::VERSION, items::number(field.version)),
        Condition::equals(attrs::NAME, AttributeValue::S(field.name.clone())),
        Condition::equals(attrs::POSITION, items::number(u64::from(field.position))),
        Condition::AttributeMissing(attrs::DELETED.into()),
    ])
}

/// Bumps the project's fields version (a field was created or deleted), conditioned on the
/// fields the write planned from.
pub(super) fn bump_fields_version(project: &Project) -> WriteOp {
    WriteOp::Update {
        key: keys::project(&project.id, &project.tenant),
        actions: vec![set(
            attrs::FIELDS_VERSION,
            items::number(project.fields_version + 1),
        )],
        condition: Some(project_unchanged(project)),
    }
}

pub(super) fn new_job(target: SweepTarget) -> SweepJob {
    SweepJob {
        target,
        created: format!("{:020}", now_millis()),
        lease_owner: None,
        lease_expires: None,
    }
}
