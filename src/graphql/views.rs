//! Saved views in the API: the `View` object (its definition, status and pages), its output
//! types, and the inputs and payloads of `createView`, `updateView` and `deleteView`, which
//! the mutation root resolves through the write layer (`repo::writes`).

use std::sync::Arc;

use async_graphql::{Context, Enum, InputObject, Json, MaybeUndefined, Object, SimpleObject, ID};

use super::args::{
    EmptyPlacement, IssueFilter, IssueOrder, IssueOrderField, IssuesArgs, OrderDirection,
};
use super::error::{ApiError, ApiResult};
use super::prefetch::{self, PageKey};
use super::request::{repo, FieldTypeCache};
use super::types::{issue_connection, IssueConnection, Project};
use super::values::{clamp_count, clamp_i32, clamp_version};
use crate::model::{self, ProjectData, ViewColumn, ViewKey};
use crate::paging::{PageArgs, PageRequest};
use crate::repo::writes::ViewChange;
use crate::repo::{IssueList, IssueSort, SortField};
use crate::view;

/// A saved view of a project: one of the project's views, shared with the request's project.
#[derive(Clone)]
pub struct View {
    data: Arc<ProjectData>,
    index: usize,
}

impl View {
    /// The project's views, by position.
    pub(super) fn all(data: &Arc<ProjectData>) -> Vec<View> {
        (0..data.views.len())
            .map(|index| View {
                data: data.clone(),
                index,
            })
            .collect()
    }

    /// The project's view `id`, if it has it.
    pub(super) fn of(data: &Arc<ProjectData>, id: &crate::ids::ViewId) -> Option<View> {
        let index = data.views.iter().position(|v| &v.id == id)?;
        Some(View {
            data: data.clone(),
            index,
        })
    }

    fn get(&self) -> &model::View {
        &self.data.views[self.index]
    }
}

/// Whether a view's rows are ready.
#[derive(Enum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum ViewStatus {
    /// An index for the view's current order and filter is being built. While it builds, the
    /// view's pages come from its previous index (its previous order and filter), or, for a
    /// view that never had one, are refused with `VIEW_BUILDING` (retryable).
    Building,
    /// The view's pages come from an index of its current order and filter.
    Ready,
}

/// One sort key of a view: the output twin of `IssueOrder`.
#[derive(SimpleObject, Clone, Debug)]
pub struct ViewOrder {
    /// The column.
    pub field: IssueOrderField,
    /// The custom field, with `CUSTOM_FIELD`.
    pub custom_field_id: Option<ID>,
    /// Ascending or descending.
    pub direction: OrderDirection,
    /// Where issues without a value go (custom fields; `LAST` for the other columns).
    pub empty: EmptyPlacement,
}

impl From<&ViewKey> for ViewOrder {
    fn from(key: &ViewKey) -> Self {
        let (field, custom_field_id) = match &key.column {
            ViewColumn::Num => (IssueOrderField::Num, None),
            ViewColumn::Name => (IssueOrderField::Name, None),
            ViewColumn::State => (IssueOrderField::State, None),
            ViewColumn::Custom(id) => (IssueOrderField::CustomField, Some(ID(id.to_string()))),
        };
        ViewOrder {
            field,
            custom_field_id,
            direction: if key.descending {
                OrderDirection::Desc
            } else {
                OrderDirection::Asc
            },
            empty: if key.empty_first {
                EmptyPlacement::First
            } else {
                EmptyPlacement::Last
            },
        }
    }
}

/// How far a view's build got.
#[derive(SimpleObject, Clone, Debug)]
pub struct ViewProgress {
    /// Issues read so far.
    pub scanned: i32,
    /// The project's issues (what the build reads in all, give or take concurrent writes).
    pub total: i32,
}

/// A saved view: a named, shared list of a project's issues, sorted by up to three keys and
/// filtered, with the columns a frontend shows. Each view is served from its own index, kept
/// by every write, so its pages are keyset reads of only its issues and its count is exact.
#[Object]
impl View {
    /// The global id, e.g. `xview-01jq…`.
    pub(super) async fn id(&self) -> ID {
        ID(self.get().id.to_string())
    }

    /// The view's display name (a tab's label): 1 to 500 characters.
    async fn name(&self) -> &str {
        &self.get().name
    }

    /// The project the view belongs to.
    async fn project(&self) -> Project {
        Project(self.data.project.clone())
    }

    /// The view's sort keys, first to last; ties after the last break by issue number in the
    /// first key's direction.
    async fn order_by(&self) -> Vec<ViewOrder> {
        self.get()
            .definition()
            .map(|i| i.keys.iter().map(ViewOrder::from).collect())
            .unwrap_or_default()
    }

    /// The view's filter, in the shape of `IssueFilter` (pass it back as one), or null for
    /// none.
    async fn filter(&self) -> Option<Json<serde_json::Value>> {
        let text = self.get().definition()?.filter.as_deref()?;
        serde_json::from_str(text).ok().map(Json)
    }

    /// The custom fields the view shows, in order (the grid's columns after num, name and
    /// state).
    async fn columns(&self) -> Vec<ID> {
        self.get()
            .columns
            .iter()
            .map(|c| ID(c.to_string()))
            .collect()
    }

    /// The view's place among the project's views (ascending): its tab's place.
    async fn position(&self) -> i32 {
        clamp_i32(self.get().position)
    }

    /// Bumped by every change of the view; pass it as `expectedVersion` to make an update
    /// conditional.
    async fn version(&self) -> i32 {
        clamp_version(self.get().version)
    }

    /// `BUILDING` while an index of the view's current order and filter is being built.
    async fn status(&self) -> ViewStatus {
        if self.get().building.is_some() {
            ViewStatus::Building
        } else {
            ViewStatus::Ready
        }
    }

    /// How far the build got, while `BUILDING`; null when `READY`.
    async fn progress(&self) -> Option<ViewProgress> {
        let view = self.get();
        view.building.as_ref()?;
        let (scanned, total) = progress(&self.data, view);
        Some(ViewProgress {
            scanned: clamp_count(scanned as i64),
            total: clamp_count(total as i64),
        })
    }

    /// The view's issues in its order, paged with cursors; `totalCount` is exact. Cursors are
    /// bound to the view's index: once a rebuilt index replaces it, they are refused, and the
    /// client starts again from the first page. A view whose first index is still being built
    /// answers `VIEW_BUILDING` (retryable, with `extensions.progress`).
    async fn issues(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Page size when paging forward: 1 to 100, default 20.")] first: Option<
            i32,
        >,
        #[graphql(desc = "Rows after this cursor.")] after: Option<String>,
        #[graphql(desc = "Page size when paging backward: 1 to 100.")] last: Option<i32>,
        #[graphql(desc = "Rows before this cursor.")] before: Option<String>,
    ) -> ApiResult<IssueConnection> {
        let view = self.get();
        let project = &self.data.project;
        let Some((_, generation)) = view::readable(&self.data, &view.id) else {
            let (scanned, total) = progress(&self.data, view);
            return Err(ApiError::ViewBuilding {
                message: format!(
                    "view {} is being built ({scanned} of {total} issues read): retry shortly",
                    view.id
                ),
                scanned,
                total,
            }
            .into());
        };
        if let Ok(cache) = ctx.data::<Arc<FieldTypeCache>>() {
            cache.learn_view(&view.id, generation);
        }
        let args = IssuesArgs {
            page: PageArgs {
                first,
                after,
                last,
                before,
            },
            order_by: None,
            filter: None,
        };
        let list = view_list(&view.id, generation);
        let key = PageKey::of_view(&project.id, &view.id, &args);
        let (request, page) = match prefetch::take(ctx, &key)? {
            Some(prefetched) => prefetched.map_err(ApiError::from)?,
            None => {
                let repo = repo(ctx)?;
                let scope = repo.issues_scope(&project.tenant, &project.id, &list);
                let request = PageRequest::from_args(&scope, &args.page).map_err(ApiError::from)?;
                let page = repo
                    .issues_page(&project.tenant, &project.id, &list, None, &request)
                    .await
                    .map_err(ApiError::from)?;
                (request, page)
            }
        };
        let partition = view::partition(&view.id, generation);
        issue_connection(ctx, &project.id, request, page, move |data| {
            let counts = data.project.counts.as_ref()?;
            Some(counts.matched.get(&partition).copied().unwrap_or(0))
        })
        .await
    }
}

/// The list a view's index generation is: its partition read ascending, unfiltered.
pub(super) fn view_list(view: &crate::ids::ViewId, generation: u32) -> IssueList {
    IssueList {
        sort: IssueSort {
            field: SortField::View {
                view: view.clone(),
                generation,
            },
            ascending: true,
            empty_first: false,
        },
        filter: None,
    }
}

/// A building view's progress: issues read, and the project's issues.
fn progress(data: &ProjectData, view: &model::View) -> (u64, u64) {
    let scanned = view.built.map_or(0, |b| b.scanned);
    let total = data
        .project
        .counts
        .as_ref()
        .map_or(scanned, |c| c.issues.max(0) as u64);
    // Issues created during the build can take `scanned` past the count read.
    (scanned, total.max(scanned))
}

/// The input of `createView`.
#[derive(InputObject)]
pub struct CreateViewInput {
    /// The project whose issues the view lists.
    pub project_id: ID,
    /// The tab's label: 1 to 500 characters after trimming.
    pub name: String,
    /// One to three sort keys; ties break by issue number in the first key's direction.
    pub order_by: Vec<IssueOrder>,
    /// Only the issues that match; default all.
    pub filter: Option<IssueFilter>,
    /// The custom fields the view shows, in order; default none.
    pub columns: Option<Vec<ID>>,
    /// The view's place among the project's views; default after the last.
    pub position: Option<i64>,
    /// As for every mutation: echoed, and a retry with the same id and input returns the first
    /// result.
    pub client_mutation_id: Option<String>,
}

/// The input of `updateView`: what is given changes, what is left out stays.
#[derive(InputObject)]
pub struct UpdateViewInput {
    /// The view to change.
    pub id: ID,
    /// A new label: 1 to 500 characters after trimming.
    pub name: Option<String>,
    /// A new order builds a new index beside the one serving (see `View.status`).
    pub order_by: Option<Vec<IssueOrder>>,
    /// A new filter (null: none) builds a new index beside the one serving.
    pub filter: MaybeUndefined<IssueFilter>,
    /// The custom fields the view shows, in order.
    pub columns: Option<Vec<ID>>,
    /// The view's place among the project's views.
    pub position: Option<i64>,
    /// Refuse with `CONFLICT` unless the view is at this version.
    pub expected_version: Option<i64>,
    /// As for every mutation: echoed, and a retry with the same id and input returns the first
    /// result.
    pub client_mutation_id: Option<String>,
}

/// The input of `deleteView`.
#[derive(InputObject)]
pub struct DeleteViewInput {
    /// The view to delete.
    pub id: ID,
    /// As for every mutation: echoed, and a retry with the same id returns the first result.
    pub client_mutation_id: Option<String>,
}

/// The result of `createView` and `updateView`.
#[derive(SimpleObject)]
pub struct ViewPayload {
    /// The view as written, read back strongly consistently.
    pub view: View,
    /// The input's `clientMutationId`.
    pub client_mutation_id: Option<String>,
}

/// The result of `deleteView`.
#[derive(SimpleObject)]
pub struct DeleteViewPayload {
    /// The id of the view deleted.
    pub deleted_id: ID,
    /// The input's `clientMutationId`.
    pub client_mutation_id: Option<String>,
}

/// The write layer's view of a view's order (checked there against the project's fields):
/// each key read as `Project.issues` reads its `orderBy`, refusals naming the key.
fn keys_of(order: &[IssueOrder]) -> Result<Vec<ViewKey>, ApiError> {
    order
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let sort = o.unchecked_sort().map_err(|e| {
                let message = e.message();
                let message = message.strip_prefix("orderBy: ").unwrap_or(message);
                ApiError::BadUserInput(format!("input.orderBy[{i}]: {message}"))
            })?;
            let column = match sort.field {
                SortField::Num => ViewColumn::Num,
                SortField::Name => ViewColumn::Name,
                SortField::State => ViewColumn::State,
                SortField::Custom(id) => ViewColumn::Custom(id),
                // An `IssueOrder` names a column, never a view's index.
                SortField::View { .. } => return Err(ApiError::Internal),
            };
            Ok(ViewKey {
                // Only a custom field has empty cells.
                empty_first: sort.empty_first && matches!(column, ViewColumn::Custom(_)),
                column,
                descending: !sort.ascending,
            })
        })
        .collect()
}

fn ids(columns: &Option<Vec<ID>>) -> Option<Vec<String>> {
    columns
        .as_ref()
        .map(|c| c.iter().map(|id| id.to_string()).collect())
}

impl CreateViewInput {
    pub(super) fn change(&self) -> Result<ViewChange, ApiError> {
        Ok(ViewChange {
            name: Some(self.name.clone()),
            keys: Some(keys_of(&self.order_by)?),
            filter: Some(self.filter.as_ref().map(IssueFilter::to_spec)),
            columns: ids(&self.columns),
            position: self.position,
        })
    }
}

impl UpdateViewInput {
    pub(super) fn change(&self) -> Result<ViewChange, ApiError> {
        Ok(ViewChange {
            name: self.name.clone(),
            keys: self.order_by.as_deref().map(keys_of).transpose()?,
            filter: match &self.filter {
                MaybeUndefined::Undefined => None,
                MaybeUndefined::Null => Some(None),
                MaybeUndefined::Value(f) => Some(Some(f.to_spec())),
            },
            columns: ids(&self.columns),
            position: self.position,
        })
    }
}
