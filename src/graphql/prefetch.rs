//! Prefetch: the issue pages a query selects under `project(id:)` are read while the project
//! loads, not after it, so a grid page takes one wave of calls fewer (see
//! `repo::speculative` for why that is safe).
//!
//! `Query.project` looks ahead at its selection for `issues` fields, reads each distinct page
//! speculatively beside the project's own load, and files the pages the repo confirms under
//! their arguments; `Project.issues` takes its page from here when its arguments match, and
//! otherwise pages as usual. So a page is read once either way, and a selection the lookahead
//! cannot see (a field skipped by a directive on a fragment, say) costs at most one
//! speculative Query, reported.
//!
//! A filtered page is read ahead when the field types it names were seen before (see
//! `request::FieldTypeCache`) and its key conditions answer the whole filter; once the project
//! loads, the filter is checked against it and the page kept only for the same list.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_graphql::{Context, SelectionField, Value};

use super::args::{IssueFilter, IssuesArgs};
use super::error::ApiError;
use super::request::{project_data, repo, FieldTypeCache};
use super::views::view_list;
use crate::ids::{FieldId, ProjectId, ViewId};
use crate::model::ProjectData;
use crate::paging::{PageRequest, UncheckedRequest};
use crate::repo::{IssueList, IssueRow, Paged, RepoError};

/// At most this many distinct pages of one project are read ahead; further `issues` fields
/// (aliases with other arguments) page after the project loads, as they always could.
const MAX_PREFETCHED_PAGES: usize = 4;

/// Identifies one `issues` field of one project by all its arguments, as written: the one
/// arguments type, so a page read ahead is only ever taken by a field that asked for exactly it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PageKey {
    project: ProjectId,
    /// For `View.issues`: the view (whose index is the list).
    view: Option<ViewId>,
    args: IssuesArgs,
}

impl PageKey {
    pub(crate) fn new(project: &ProjectId, args: &IssuesArgs) -> Self {
        PageKey {
            project: project.clone(),
            view: None,
            args: args.clone(),
        }
    }

    /// The key of a page of `view`'s issues.
    pub(crate) fn of_view(project: &ProjectId, view: &ViewId, args: &IssuesArgs) -> Self {
        PageKey {
            view: Some(view.clone()),
            ..PageKey::new(project, args)
        }
    }
}

type Confirmed = Result<(PageRequest, Paged<IssueRow>), RepoError>;

/// The request's confirmed prefetched pages, each with the number of fields that ask for it
/// (aliases of one page), until they have taken it.
#[derive(Default)]
pub(crate) struct Prefetched(Mutex<HashMap<PageKey, (Confirmed, usize)>>);

/// The request's prefetch cache (attached to every request by the gateway).
fn prefetched<'a>(ctx: &Context<'a>) -> Result<&'a Prefetched, ApiError> {
    ctx.data::<Prefetched>().map_err(|_| {
        tracing::error!("request has no prefetch cache");
        ApiError::Internal
    })
}

/// The prefetched page of an `issues` field with these arguments, if one was read.
pub(crate) fn take(ctx: &Context<'_>, key: &PageKey) -> Result<Option<Confirmed>, ApiError> {
    let mut pages = prefetched(ctx)?.0.lock().unwrap_or_else(|e| e.into_inner());
    let Some((page, claims)) = pages.get_mut(key) else {
        return Ok(None);
    };
    if *claims > 1 {
        // Another alias asks for the same page: it gets a copy (a failed read, which is not
        // copied, is made again by the field that finds none).
        *claims -= 1;
        return Ok(page.as_ref().ok().map(|p| Ok(p.clone())));
    }
    Ok(pages.remove(key).map(|(page, _)| page))
}

/// Loads a project (as [`project_data`] does) and, concurrently, the issue pages the
/// selection asks of it.
pub(crate) async fn project_with_pages(
    ctx: &Context<'_>,
    id: &ProjectId,
) -> Result<Option<Arc<ProjectData>>, ApiError> {
    let wanted = wanted_pages(ctx, id);
    if wanted.is_empty() {
        return project_data(ctx, id).await;
    }
    let repo = repo(ctx)?;
    let speculate = futures::future::join_all(wanted.into_iter().map(|wanted| async move {
        let page = repo
            .speculate_issues_page(id.clone(), wanted.list.clone(), wanted.request)
            .await;
        (
            (
                wanted.key,
                wanted.claims,
                wanted.list.sort,
                wanted.filter,
                wanted.view,
            ),
            page,
        )
    }));
    let (data, pages) = futures::join!(project_data(ctx, id), speculate);
    let project = data.as_ref().ok().and_then(Option::as_deref);
    let mut confirmed = Vec::new();
    for ((key, claims, sort, filter, view), page) in pages {
        // The list as the resolver would check it against the project now loaded: a page read
        // with a field type that no longer holds is another list, and dropped; so is a view's
        // page read from an index the view no longer serves from.
        let checked = match (view, filter, project) {
            (Some(view), _, Some(data)) => {
                crate::view::readable(data, &view).map(|(_, g)| view_list(&view, g))
            }
            (Some(_), _, None) => None,
            (None, None, _) => Some(IssueList { sort, filter: None }),
            (None, Some(filter), Some(data)) => {
                filter.check(data).ok().map(|predicate| IssueList {
                    sort,
                    filter: Some(predicate),
                })
            }
            (None, Some(_), None) => None,
        };
        if let Some(result) = repo
            .confirm_issues_page(page, project, checked.as_ref())
            .await
        {
            confirmed.push((key, (result, claims)));
        }
    }
    if !confirmed.is_empty() {
        prefetched(ctx)?
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(confirmed);
    }
    data
}

/// A page the selection asks for, and what reading it needs.
struct Wanted {
    key: PageKey,
    /// How many fields ask for it.
    claims: usize,
    /// The list, its filter checked against the field types seen before.
    list: IssueList,
    /// The filter as written, checked again once the project is loaded.
    filter: Option<IssueFilter>,
    /// For a view's page: the view (its index generation as last seen is in `list`).
    view: Option<ViewId>,
    request: UncheckedRequest,
}

/// The distinct pages the `issues` fields under this field ask for; fields whose arguments
/// are invalid are left to their resolver, which reports them.
fn wanted_pages(ctx: &Context<'_>, project: &ProjectId) -> Vec<Wanted> {
    let Ok(repo) = repo(ctx) else {
        return Vec::new();
    };
    let field_types = ctx.data_opt::<Arc<FieldTypeCache>>();
    let mut wanted: Vec<Wanted> = Vec::new();
    for field in ctx.look_ahead().field("issues").selection_fields() {
        if skipped(&field) {
            continue;
        }
        let Ok(arguments) = field.arguments() else {
            continue;
        };
        let Some(args) = IssuesArgs::from_arguments(&arguments) else {
            continue;
        };
        let Ok(sort) = args.unchecked_sort() else {
            continue;
        };
        // A filter's columns are the project's: it is checked against the types of the fields
        // seen before (a field's type never changes), and read ahead only if every column is
        // known; the repo reads ahead only what key conditions answer in full.
        let predicate = match &args.filter {
            None => None,
            Some(filter) => {
                let types = |field: &FieldId| field_types.and_then(|cache| cache.get(field));
                match filter.check_with(project, &types) {
                    Ok(predicate) => Some(predicate),
                    Err(_) => continue,
                }
            }
        };
        let Ok(request) = repo.unchecked_request(&args.page) else {
            continue;
        };
        let key = PageKey::new(project, &args);
        if let Some(same) = wanted.iter_mut().find(|w| w.key == key) {
            same.claims += 1;
        } else if wanted.len() < MAX_PREFETCHED_PAGES {
            wanted.push(Wanted {
                key,
                claims: 1,
                list: IssueList {
                    sort,
                    filter: predicate,
                },
                filter: args.filter.clone(),
                view: None,
                request,
            });
        }
    }
    // A view's page (`view(id:) { issues }`), when the generation of the view's serving index
    // was seen before: its partition is then known before the project loads.
    for field in ctx.look_ahead().field("view").selection_fields() {
        if skipped(&field) || wanted.len() >= MAX_PREFETCHED_PAGES {
            continue;
        }
        let Some(view) = field.arguments().ok().and_then(|arguments| {
            arguments
                .iter()
                .find(|(name, _)| name.as_str() == "id")
                .and_then(|(_, value)| match value {
                    Value::String(id) => ViewId::parse(id).ok(),
                    _ => None,
                })
        }) else {
            continue;
        };
        let Some(generation) = field_types.and_then(|cache| cache.view_generation(&view)) else {
            continue;
        };
        for issues in field.selection_set().filter(|f| f.name() == "issues") {
            if skipped(&issues) || wanted.len() >= MAX_PREFETCHED_PAGES {
                continue;
            }
            let Some(args) = issues
                .arguments()
                .ok()
                .and_then(|arguments| IssuesArgs::from_arguments(&arguments))
            else {
                continue;
            };
            let Ok(request) = repo.unchecked_request(&args.page) else {
                continue;
            };
            let key = PageKey::of_view(project, &view, &args);
            if let Some(same) = wanted.iter_mut().find(|w| w.key == key) {
                same.claims += 1;
                continue;
            }
            wanted.push(Wanted {
                key,
                claims: 1,
                list: view_list(&view, generation),
                filter: None,
                view: Some(view.clone()),
                request,
            });
        }
    }
    wanted
}

/// Whether the field carries `@skip(if: true)` or `@include(if: false)`.
fn skipped(field: &SelectionField<'_>) -> bool {
    let Ok(directives) = field.directives() else {
        return false;
    };
    directives.iter().any(|directive| {
        let condition = directive
            .arguments
            .iter()
            .find(|(name, _)| name.node.as_str() == "if")
            .map(|(_, value)| &value.node);
        matches!(
            (directive.name.node.as_str(), condition),
            ("skip", Some(Value::Boolean(true))) | ("include", Some(Value::Boolean(false)))
        )
    })
}
