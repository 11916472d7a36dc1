//! What a resolver gets of its request: the request's loaders and repo (attached by the
//! request context), and the project data everything under a project is checked against.

use std::sync::{Arc, Mutex};

use async_graphql::{Context, ContextBase, Value};

use super::error::ApiError;
use crate::filter::CellType;
use crate::ids::{FieldId, ProjectId, ViewId};
use crate::loaders::RequestLoader;
use crate::model::ProjectData;
use crate::repo::{PlanReport, Repo};

pub(crate) fn loader<'a, T>(ctx: &ContextBase<'a, T>) -> Result<&'a RequestLoader, ApiError> {
    ctx.data::<RequestLoader>().map_err(|_| {
        tracing::error!("request has no loader");
        ApiError::Internal
    })
}

pub(crate) fn repo<'a, T>(ctx: &ContextBase<'a, T>) -> Result<&'a Repo, ApiError> {
    ctx.data::<Repo>().map_err(|_| {
        tracing::error!("request has no repo");
        ApiError::Internal
    })
}

/// A project and its fields, through the request's cache; `None` when the caller cannot see
/// one with this id (reported as a miss).
pub(crate) async fn project_data<T>(
    ctx: &ContextBase<'_, T>,
    id: &ProjectId,
) -> Result<Option<Arc<ProjectData>>, ApiError> {
    let Some(entry) = loader(ctx)?.load_one(id.clone()).await? else {
        return Ok(None);
    };
    entry.charge_lookup(repo(ctx)?);
    Ok(entry.value.clone())
}

/// The types of the custom fields the gateway has seen, shared by every request: a field's
/// type never changes and its id is never reused, so a type once seen is right for as long as
/// the field lives. The read-ahead checks a filter against it before the project loads
/// (`graphql::prefetch`); the project, once loaded, confirms the field is still its own.
///
/// A SELECT field's options can change: the read-ahead may check a filter against options
/// since edited, which is why the loaded project re-checks every read-ahead filter and reads
/// again when the checked list differs. Each entry keeps the field's `version` it was learnt
/// at, so learning again compares a number, not the options; and the options kept are
/// bounded in number (see [`OPTIONS_KEPT`]), since a field may have hundreds.
pub(crate) struct FieldTypeCache(Mutex<Learnt>);

struct Learnt {
    types: lru::LruCache<FieldId, (u64, CellType)>,
    /// The generation of each saved view's serving index, as last read: the read-ahead of a
    /// view's page needs its partition before the project (which says it) loads. A view's
    /// rebuild changes it, and the loaded project then tells the read-ahead it read another
    /// list (dropped as a miss, read again).
    views: lru::LruCache<ViewId, u32>,
    /// The options the SELECT entries hold, all together.
    options: usize,
}

/// At most this many field types are kept.
const FIELD_TYPES_KEPT: usize = 10_000;
/// At most this many SELECT options are kept in all (a few MB at most): past it, the least
/// recently used entries go.
const OPTIONS_KEPT: usize = 20_000;

fn options_of(cell: &CellType) -> usize {
    match cell {
        CellType::Plain(_) => 0,
        CellType::Select(options) => options.len(),
    }
}

impl Default for FieldTypeCache {
    fn default() -> Self {
        let size =
            std::num::NonZeroUsize::new(FIELD_TYPES_KEPT).unwrap_or(std::num::NonZeroUsize::MIN);
        FieldTypeCache(Mutex::new(Learnt {
            types: lru::LruCache::new(size),
            views: lru::LruCache::new(size),
            options: 0,
        }))
    }
}

impl FieldTypeCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Learnt> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes the types of a loaded project's fields (by the lists that filter them, so an
    /// unfiltered grid page takes no lock).
    pub(crate) fn learn(&self, data: &ProjectData) {
        let mut learnt = self.lock();
        for field in &data.fields {
            if learnt
                .types
                .peek(&field.id)
                .is_some_and(|(version, _)| *version == field.version)
            {
                continue;
            }
            let cell = CellType::of(field);
            learnt.options += options_of(&cell);
            if let Some((_, old)) = learnt.types.push(field.id.clone(), (field.version, cell)) {
                learnt.options -= options_of(&old.1);
            }
            while learnt.options > OPTIONS_KEPT {
                match learnt.types.pop_lru() {
                    Some((_, (_, gone))) => learnt.options -= options_of(&gone),
                    None => break,
                }
            }
        }
    }

    /// Notes the generation of a view's serving index (by the view pages read).
    pub(crate) fn learn_view(&self, view: &ViewId, generation: u32) {
        let mut learnt = self.lock();
        if learnt.views.peek(view) != Some(&generation) {
            learnt.views.push(view.clone(), generation);
        }
    }

    /// The generation of `view`'s serving index, if one was seen.
    pub(crate) fn view_generation(&self, view: &ViewId) -> Option<u32> {
        self.lock().views.get(view).copied()
    }

    /// The type of `field`, if it was seen.
    pub(crate) fn get(&self, field: &FieldId) -> Option<CellType> {
        self.lock().types.get(field).map(|(_, cell)| cell.clone())
    }
}

/// The project of something loaded by id, to decide whether the caller may see it: when it
/// may not, the check itself is not reported (the lookup is reported as a miss instead).
pub(crate) async fn visible_project(
    ctx: &Context<'_>,
    id: &ProjectId,
) -> Result<Option<Arc<ProjectData>>, ApiError> {
    let Some(entry) = loader(ctx)?.load_one(id.clone()).await? else {
        return Ok(None);
    };
    entry.charge_check(repo(ctx)?);
    Ok(entry.value.clone())
}

/// A project that another loaded entity refers to: its absence is corrupt data, not a 404.
pub(crate) async fn referenced_project<T>(
    ctx: &ContextBase<'_, T>,
    id: &ProjectId,
) -> Result<Arc<ProjectData>, ApiError> {
    project_data(ctx, id).await?.ok_or_else(|| {
        tracing::error!(project = %id, "dangling reference to a missing project");
        ApiError::Internal
    })
}

/// How a request's filtered pages were read, each as `extensions.plan` shows it, when the
/// gateway explains plans (attached to the request only then).
#[derive(Clone, Default)]
pub(crate) struct PlanLog(Arc<Mutex<Vec<Value>>>);

impl PlanLog {
    /// The plans noted, leaving none.
    pub(crate) fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Notes how the page of the field being resolved was read, when plans are explained.
pub(crate) fn note_plan(ctx: &Context<'_>, report: &PlanReport) {
    let Some(log) = ctx.data_opt::<PlanLog>() else {
        return;
    };
    let mut value = match serde_json::to_value(report) {
        Ok(value) => value,
        Err(e) => {
            tracing::error!(error = %e, "plan report not serializable");
            return;
        }
    };
    if let (Some(object), Some(path)) = (value.as_object_mut(), ctx.path_node) {
        object.insert("path".into(), path.to_string().into());
    }
    match Value::from_json(value) {
        Ok(value) => log.0.lock().unwrap_or_else(|e| e.into_inner()).push(value),
        Err(e) => tracing::error!(error = %e, "plan report not a GraphQL value"),
    }
}
