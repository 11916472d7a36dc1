//! The saved-view mutations (create, update, delete) and what a field's deletion or option
//! edit does to the views that name it: each change of a view's order or filter gives it a new
//! index generation, built by its sweep beside the one serving (see `repo::sweep::views`).

use super::plan::{bump_fields_version, new_job, project_unchanged};
use super::validate::{check_expected, valid_name, valid_position};
use super::{invalid, only_not_found, Plan, WriteError, Writes, Written};
use crate::filter::{CellType, Spec};
use crate::ids::{FieldId, ProjectId, ViewId};
use crate::items::{self, attrs, SweepTarget};
use crate::keys;
use crate::model::{ProjectData, View, ViewColumn, ViewIndex, ViewKey};
use crate::repo::RepoError;
use crate::store::{Condition, WriteOp};
use crate::view::{self, CheckedIndex, MAX_VIEWS};

/// The most custom fields a view lists in `columns`.
pub const MAX_VIEW_COLUMNS: usize = super::MAX_FIELDS;

/// A view as a client creates it, or what an update changes (`None`: unchanged).
#[derive(Clone, Debug, Default)]
pub struct ViewChange {
    pub name: Option<String>,
    /// One to three keys.
    pub keys: Option<Vec<ViewKey>>,
    /// `Some(None)` clears the filter.
    pub filter: Option<Option<Spec>>,
    pub columns: Option<Vec<String>>,
    pub position: Option<i64>,
}

impl Writes {
    pub async fn create_view(
        &self,
        client_id: Option<&str>,
        project: &str,
        change: &ViewChange,
    ) -> Result<Written, WriteError> {
        let project = ProjectId::parse(project).map_err(|e| invalid("projectId", e.to_string()))?;
        let name = valid_name("name", change.name.as_deref().unwrap_or_default())?;
        let position = change.position.map(valid_position).transpose()?;
        if change.keys.is_none() {
            return Err(invalid("orderBy", "a view sorts by 1 to 3 keys"));
        }
        let columns = parse_columns(change.columns.as_deref())?.unwrap_or_default();
        let (project, name, columns) = (&project, &name, &columns);
        self.execute(
            client_id,
            "createView",
            &(project, change),
            move || async move {
                let data = self.live_project(project).await?;
                if data.views.len() >= MAX_VIEWS {
                    return Err(invalid(
                        "projectId",
                        format!("a project has at most {MAX_VIEWS} views"),
                    ));
                }
                let id = ViewId::generate();
                let filter = change.filter.clone().flatten();
                let index = checked_index(&data, &id, change.keys.as_deref(), filter, 1)?;
                let view = View {
                    id: id.clone(),
                    project: project.clone(),
                    name: name.clone(),
                    columns: checked_columns(&data, columns)?,
                    position: position.unwrap_or_else(|| {
                        data.views
                            .iter()
                            .map(|v| v.position)
                            .max()
                            .map_or(1, |p| p.saturating_add(1))
                    }),
                    version: 1,
                    serving: None,
                    building: Some(index),
                    built: None,
                    retired: Vec::new(),
                    deleted: false,
                };
                let [definition, lookup] = items::view_items(&view);
                let target = view_target(&view);
                let ops = vec![
                    bump_fields_version(&data.project),
                    WriteOp::Put {
                        item: definition,
                        condition: Some(Condition::NotExists),
                    },
                    WriteOp::Put {
                        item: lookup,
                        condition: Some(Condition::NotExists),
                    },
                    put_job(target.clone()),
                ];
                let mut plan = Plan::new(ops, id.to_string());
                plan.sweep = vec![target];
                Ok(plan)
            },
        )
        .await
    }

    pub async fn update_view(
        &self,
        client_id: Option<&str>,
        id: &str,
        change: &ViewChange,
        expected_version: Option<i64>,
    ) -> Result<Written, WriteError> {
        let id = ViewId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let name = change
            .name
            .as_deref()
            .map(|n| valid_name("name", n))
            .transpose()?;
        let position = change.position.map(valid_position).transpose()?;
        let columns = parse_columns(change.columns.as_deref())?;
        let (id, name, columns) = (&id, &name, &columns);
        self.execute(
            client_id,
            "updateView",
            &(id, change, expected_version),
            move || async move {
                let (data, view) = self.live_view(id).await?;
                check_expected(expected_version, view.version, &id)?;
                let mut updated = view.clone();
                if let Some(name) = name {
                    updated.name = name.clone();
                }
                if let Some(position) = position {
                    updated.position = position;
                }
                if let Some(columns) = columns {
                    updated.columns = checked_columns(&data, columns)?;
                }
                if change.keys.is_some() || change.filter.is_some() {
                    let current = view.definition();
                    let keys = match &change.keys {
                        Some(keys) => keys.clone(),
                        None => current.map(|i| i.keys.clone()).unwrap_or_default(),
                    };
                    let filter = match &change.filter {
                        Some(filter) => filter.clone(),
                        None => current.and_then(stored_filter),
                    };
                    let index = checked_index(&data, id, Some(&keys), filter, 0)?;
                    redefine(&mut updated, index, false);
                }
                if updated == view {
                    return Ok(Plan::new(Vec::new(), id.to_string()));
                }
                updated.version += 1;
                let reindexed = updated.building != view.building;
                let mut ops = vec![rewrite(&view, &updated)];
                let mut plan_sweeps = Vec::new();
                if reindexed || updated.retired != view.retired {
                    ops.push(bump_fields_version(&data.project));
                    let target = view_target(&updated);
                    ops.push(put_job(target.clone()));
                    plan_sweeps.push(target);
                } else {
                    ops.push(WriteOp::ConditionCheck {
                        key: keys::project(&data.project.id, &data.project.tenant),
                        condition: project_unchanged(&data.project),
                    });
                }
                // A stale `expectedVersion` was refused above; a failed condition is the view's
                // build or another edit moving on, planned again (and checked again).
                let mut plan = Plan::new(ops, id.to_string());
                plan.sweep = plan_sweeps;
                Ok(plan)
            },
        )
        .await
    }

    /// Tombstones the view (it leaves the API at once, and writers stop keeping its indexes)
    /// and records the sweep that removes its rows, counters and finally the view itself.
    pub async fn delete_view(
        &self,
        client_id: Option<&str>,
        id: &str,
    ) -> Result<Written, WriteError> {
        let id = ViewId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let id = &id;
        self.execute(client_id, "deleteView", &(id,), move || async move {
            let (data, view) = self.live_view(id).await?;
            let mut deleted = view.clone();
            deleted.retired = view
                .retired
                .iter()
                .copied()
                .chain(view.indexes().map(|i| i.generation))
                .collect();
            deleted.serving = None;
            deleted.building = None;
            deleted.built = None;
            deleted.deleted = true;
            deleted.version += 1;
            let target = view_target(&view);
            let ops = vec![
                rewrite(&view, &deleted),
                bump_fields_version(&data.project),
                put_job(target.clone()),
            ];
            let mut plan = Plan::new(ops, id.to_string());
            plan.sweep = vec![target];
            Ok(plan)
        })
        .await
    }

    /// A live view the caller may see, with its project.
    async fn live_view(&self, id: &ViewId) -> Result<(ProjectData, View), WriteError> {
        let missing = || WriteError::NotFound(format!("view {id} does not exist"));
        let lookup = self.store().get_consistent(&keys::view_lookup(id)).await?;
        let project = match lookup.item {
            Some(item) => items::decode_view_lookup(&item).map_err(RepoError::from)?,
            None => return Err(missing()),
        };
        let data = self
            .visible_project(&project)
            .await
            .map_err(|e| only_not_found(e, missing))?;
        let view = data
            .views
            .iter()
            .find(|v| &v.id == id)
            .cloned()
            .ok_or_else(missing)?;
        Ok((data, view))
    }
}

/// The views of `data` that name `field` (in a key or their filter), each given a new index
/// without it (see [`without_field`]) to build beside the one serving, with the operations
/// that rewrite them and record their sweeps: what a field's deletion (`data` without the
/// field) or a SELECT field's option edit (`data` with the new options, whose order keys the
/// rows derive) commits with it.
pub(super) fn dependent_views(
    before: &ProjectData,
    after: &ProjectData,
    field: &FieldId,
    change: FieldChange,
) -> (Vec<WriteOp>, Vec<SweepTarget>) {
    let mut ops = Vec::new();
    let mut sweeps = Vec::new();
    for view in &before.views {
        let mut updated = view.clone();
        updated.columns.retain(|c| after.field(c).is_some());
        if let Some(index) = view.definition().filter(|i| view::names(i, field)) {
            redefine(
                &mut updated,
                without_field(after, index, field, change),
                true,
            );
        }
        if updated == *view {
            continue;
        }
        updated.version += 1;
        ops.push(rewrite(view, &updated));
        // Only a new index is the sweep's work (a view that merely stops showing the field
        // leaves a build under way alone).
        if updated.building != view.building {
            let target = view_target(&updated);
            ops.push(put_job(target.clone()));
            sweeps.push(target);
        }
    }
    (ops, sweeps)
}

/// What happened to the field views depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FieldChange {
    /// Deleted: its keys and leaves go.
    Deleted,
    /// A SELECT field's options moved or were removed: its keys stay (their rows' sort
    /// strings change), and leaves naming a removed option go.
    OptionsReordered,
}

/// `index` after `change` of `field`: a deleted field's keys dropped (a view left without
/// keys sorts by num ascending), and the filter's leaves that no longer check against `after`
/// dropped (see `Spec::prune`).
fn without_field(
    after: &ProjectData,
    index: &ViewIndex,
    field: &FieldId,
    change: FieldChange,
) -> ViewIndex {
    let mut keys: Vec<ViewKey> = index
        .keys
        .iter()
        .filter(|k| {
            change == FieldChange::OptionsReordered || k.column != ViewColumn::Custom(field.clone())
        })
        .cloned()
        .collect();
    if keys.is_empty() {
        keys.push(ViewKey {
            column: ViewColumn::Num,
            descending: false,
            empty_first: false,
        });
    }
    let types = |id: &FieldId| after.field(id).map(CellType::of);
    let filter = stored_filter(index).and_then(|f| f.prune(&after.project.id, &types));
    ViewIndex {
        generation: 0,
        keys,
        filter: filter.map(|f| view::filter_text(&f)),
    }
}

/// Gives `view` the definition `index` (its generation is assigned here): a new index to
/// build, unless it is the one already being built, or (`force` aside) the one serving, in
/// which case a build under way is dropped. `force` builds anew even an identical definition
/// (the rows' sort strings changed with a field's options).
fn redefine(view: &mut View, mut index: ViewIndex, force: bool) {
    let same = |other: Option<&ViewIndex>| {
        other.is_some_and(|o| o.keys == index.keys && o.filter == index.filter)
    };
    if !force && same(view.building.as_ref()) {
        return;
    }
    if let Some(building) = view.building.take() {
        view.retired.push(building.generation);
        view.built = None;
    }
    if !force && same(view.serving.as_ref()) {
        return;
    }
    index.generation = view.next_generation();
    view.building = Some(index);
}

/// The index a client's keys and filter define, checked against the project's fields.
fn checked_index(
    data: &ProjectData,
    view: &ViewId,
    keys: Option<&[ViewKey]>,
    filter: Option<Spec>,
    generation: u32,
) -> Result<ViewIndex, WriteError> {
    let keys = keys.unwrap_or_default();
    for (i, key) in keys.iter().enumerate() {
        if keys[..i].iter().any(|k| k.column == key.column) {
            return Err(invalid(
                format!("orderBy[{i}]"),
                "the view already sorts by this column",
            ));
        }
    }
    let index = ViewIndex {
        generation,
        keys: keys.to_vec(),
        filter: filter.as_ref().map(view::filter_text),
    };
    // The same check every writer and the build make (the keys' fields, the filter's limits,
    // columns and operands), reported with the input's path.
    CheckedIndex::check_for(view, true, &index, data).map_err(|e| match e {
        view::ViewError::Filter(e) => invalid(e.path, e.message),
        view::ViewError::UnknownKeyField(i, id) => invalid(
            format!("orderBy[{i}].customFieldId"),
            format!("{id} is not a custom field of {}", data.project.id),
        ),
        other => invalid("orderBy", other.to_string()),
    })?;
    Ok(index)
}

/// The custom field ids a view shows, parsed before anything is read: each once, at most
/// [`MAX_VIEW_COLUMNS`].
fn parse_columns(columns: Option<&[String]>) -> Result<Option<Vec<FieldId>>, WriteError> {
    let Some(columns) = columns else {
        return Ok(None);
    };
    if columns.len() > MAX_VIEW_COLUMNS {
        return Err(invalid(
            "columns",
            format!("a view shows at most {MAX_VIEW_COLUMNS} custom fields"),
        ));
    }
    let mut ids: Vec<FieldId> = Vec::with_capacity(columns.len());
    for (i, text) in columns.iter().enumerate() {
        let path = format!("columns[{i}]");
        let id = FieldId::parse(text).map_err(|e| invalid(&path, e.to_string()))?;
        if ids.contains(&id) {
            return Err(invalid(path, format!("{id} appears more than once")));
        }
        ids.push(id);
    }
    Ok(Some(ids))
}

/// The columns, each one of the project's fields.
fn checked_columns(data: &ProjectData, columns: &[FieldId]) -> Result<Vec<FieldId>, WriteError> {
    for (i, id) in columns.iter().enumerate() {
        if data.field(id).is_none() {
            return Err(invalid(
                format!("columns[{i}]"),
                format!("{id} is not a custom field of {}", data.project.id),
            ));
        }
    }
    Ok(columns.to_vec())
}

/// The filter an index keeps, as written; an unreadable one (which no writer keeps either)
/// is logged and read as none.
fn stored_filter(index: &ViewIndex) -> Option<Spec> {
    view::filter_of(index).unwrap_or_else(|e| {
        tracing::error!(error = %e, "a view's stored filter is unreadable");
        None
    })
}

fn view_target(view: &View) -> SweepTarget {
    SweepTarget::View {
        project: view.project.clone(),
        view: view.id.clone(),
    }
}

/// A view's job, put plainly: one may be pending already, and putting it again drops its
/// lease, so a build under way stops at its next batch and the new run starts from the view
/// as it is now.
fn put_job(target: SweepTarget) -> WriteOp {
    WriteOp::Put {
        item: items::sweep_item(&new_job(target)),
        condition: None,
    }
}

/// The view row rewritten from `old` (as read) to `new`, if it is still exactly as read: its
/// version, and what its build and sweep write (the index built, the progress, the retired
/// generations), so neither an edit nor the build undoes the other.
fn rewrite(old: &View, new: &View) -> WriteOp {
    let [item, _] = items::view_items(new);
    let [read, _] = items::view_items(old);
    let same = |name: &str| match read.get(name) {
        Some(value) => Condition::equals(name, value.clone()),
        None => Condition::AttributeMissing(name.to_string()),
    };
    WriteOp::Put {
        item,
        condition: Some(Condition::All(vec![
            Condition::equals(attrs::VERSION, items::number(old.version)),
            Condition::AttributeMissing(attrs::DELETED.into()),
            same(attrs::SERVING),
            same(attrs::BUILDING),
            same(attrs::BUILT_THROUGH),
            same(attrs::SCANNED),
            same(attrs::RETIRED),
        ])),
    }
}
