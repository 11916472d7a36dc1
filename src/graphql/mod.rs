//! The GraphQL schema: the query root, schema construction and the per-request context.
//!
//! This layer never builds table keys or touches a store directly: it validates arguments,
//! calls the request's loaders and repo, and maps failures to [`ApiError`] codes.

pub mod analysis;
mod args;
mod context;
mod documents;
pub mod error;
mod mutation;
mod order;
mod prefetch;
mod request;
mod rows;
pub mod types;
mod values;
pub(crate) mod views;

use async_graphql::{Context, EmptySubscription, Object, Schema, ID};

pub use context::{
    applied_extension, CostGate, Gateway, GatewayOptions, ValidationCounts, DEFAULT_MAX_CALLS,
    DEFAULT_MAX_READ_UNITS,
};
pub use error::ApiError;
use error::ApiResult;
pub use mutation::MutationRoot;
pub use order::ResponseOrder;
use types::{
    loader, project_data, visible_project, CustomField, Issue, Node, Project, Tenant,
    TenantConnection,
};

use crate::ids::{FieldId, IssueId, NodeId, ProjectId, ViewId};
use crate::paging::PageArgs;

/// The most ids one `nodes` call may ask for.
pub const MAX_NODES: usize = 100;
/// The deepest query accepted; grids need about 6 levels, the margin is for exploration.
pub const MAX_DEPTH: usize = 16;

pub type GridSchema = Schema<QueryRoot, MutationRoot, EmptySubscription>;

/// The schema without per-request wiring: its types and limits, for the SDL and for tests of
/// the schema alone. [`Gateway`] builds the serving schema from the same builder, with the
/// request-context extension that attaches each request's repo, writes and loaders.
pub fn build_schema() -> GridSchema {
    schema_builder().finish()
}

fn schema_builder() -> async_graphql::SchemaBuilder<QueryRoot, MutationRoot, EmptySubscription> {
    Schema::build(QueryRoot, MutationRoot, EmptySubscription).limit_depth(MAX_DEPTH)
}

/// The schema in SDL, as committed in `schema.graphql`.
pub fn sdl() -> String {
    build_schema().sdl()
}

/// The entry points of the read API.
pub struct QueryRoot;

/// The entry points of the read API: list the tenants the caller sees, fetch a tenant,
/// project or issue by id, or any object by its global id, and walk the graph from there. Ids
/// that do not exist, and ids of another tenant's objects, read as null; a malformed id is
/// refused with `BAD_USER_INPUT`.
#[Object(name = "Query")]
impl QueryRoot {
    /// Fetches any object by its global id; null when nothing has that id.
    async fn node(
        &self,
        ctx: &Context<'_>,
        #[graphql(
            desc = "A global id of any kind: `tenant-…`, `project-…`, `xattrib-…` (a custom field), `issue-…` or `xview-…` (a saved view)."
        )]
        id: ID,
    ) -> ApiResult<Option<Node>> {
        let id = NodeId::parse(&id).map_err(ApiError::from)?;
        Ok(load_node(ctx, id).await?)
    }

    /// Fetches up to 100 objects by global id (each at most once), in the order given; an entry
    /// is null when nothing has that id.
    async fn nodes(
        &self,
        ctx: &Context<'_>,
        #[graphql(
            desc = "Up to 100 global ids of any kind, none repeated; more, or a repeated id, is refused with `BAD_USER_INPUT`."
        )]
        ids: Vec<ID>,
    ) -> ApiResult<Vec<Option<Node>>> {
        if ids.len() > MAX_NODES {
            return Err(ApiError::BadUserInput(format!(
                "nodes: at most {MAX_NODES} ids per call, got {}",
                ids.len()
            ))
            .into());
        }
        // Each id once: a repeated id is loaded once but answered once per mention, so
        // repeats would multiply the response (up to 400 KB per issue) at no cost to price.
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        if let Some(repeated) = ids.iter().find(|id| !seen.insert(id.as_str())) {
            return Err(ApiError::BadUserInput(format!(
                "nodes: `{}` is given more than once; ask for each id once",
                repeated.as_str()
            ))
            .into());
        }
        let ids = ids
            .iter()
            .map(|id| NodeId::parse(id))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ApiError::from)?;
        // Loads of all ids run concurrently, so the loaders batch them.
        let nodes =
            futures::future::try_join_all(ids.into_iter().map(|id| load_node(ctx, id))).await?;
        Ok(nodes)
    }

    /// The tenants the caller sees, ordered by name (case-insensitively, then by id): every
    /// tenant without authentication (`--auth none`), the caller's own tenant alone with a
    /// token. Paged with cursors like `Tenant.projects`.
    async fn tenants(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Page size when paging forward: 1 to 100, default 20.")] first: Option<
            i32,
        >,
        #[graphql(desc = "Rows after this cursor.")] after: Option<String>,
        #[graphql(desc = "Page size when paging backward: 1 to 100.")] last: Option<i32>,
        #[graphql(desc = "Rows before this cursor.")] before: Option<String>,
    ) -> ApiResult<TenantConnection> {
        let args = PageArgs {
            first,
            after,
            last,
            before,
        };
        types::tenant_connection(ctx, args).await
    }

    /// A tenant by id; null when there is none.
    async fn tenant(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The tenant's global id, e.g. `tenant-0807`.")] id: ID,
    ) -> ApiResult<Option<Tenant>> {
        let id = types::tenant_id(&id)?;
        let tenant = loader(ctx)?.load_one(id).await.map_err(ApiError::from)?;
        Ok(tenant.map(Tenant))
    }

    /// A project by id; null when there is none.
    async fn project(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The project's global id, e.g. `project-35e9`.")] id: ID,
    ) -> ApiResult<Option<Project>> {
        let id = ProjectId::parse(&id).map_err(ApiError::from)?;
        // The issue pages selected under the project are read while it loads.
        Ok(prefetch::project_with_pages(ctx, &id)
            .await?
            .map(|d| Project(d.project.clone())))
    }

    /// An issue by id; null when there is none.
    async fn issue(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The issue's global id, e.g. `issue-020e`.")] id: ID,
    ) -> ApiResult<Option<Issue>> {
        let id = IssueId::parse(&id).map_err(ApiError::from)?;
        Ok(load_issue(ctx, id).await?)
    }
}

async fn load_node(ctx: &Context<'_>, id: NodeId) -> Result<Option<Node>, ApiError> {
    let loader = loader(ctx)?;
    Ok(match id {
        NodeId::Tenant(id) => loader.load_one(id).await?.map(|t| Node::Tenant(Tenant(t))),
        NodeId::Project(id) => project_data(ctx, &id)
            .await?
            .map(|d| Node::Project(Project(d.project.clone()))),
        NodeId::Issue(id) => load_issue(ctx, id).await?.map(Node::Issue),
        NodeId::Field(id) => load_field(ctx, &id).await?.map(Node::CustomField),
        NodeId::View(id) => load_view(ctx, &id).await?.map(Node::View),
    })
}

/// An issue by id alone; null when there is none, or when its project was deleted (its rows
/// await their sweep).
/// Visible only when its project is the caller's; otherwise reported as a miss.
async fn load_issue(ctx: &Context<'_>, id: IssueId) -> Result<Option<Issue>, ApiError> {
    let repo = types::repo(ctx)?;
    let Some(entry) = loader(ctx)?.load_one(id).await? else {
        return Ok(None);
    };
    let Some(issue) = &entry.value else {
        entry.charge_miss(repo);
        return Ok(None);
    };
    if visible_project(ctx, &issue.project).await?.is_none() {
        entry.charge_miss(repo);
        return Ok(None);
    }
    entry.charge_found(repo);
    Ok(Some(Issue(issue.clone().into())))
}

/// A saved view by id: its lookup item names the project, whose partition holds the view.
async fn load_view(ctx: &Context<'_>, id: &ViewId) -> Result<Option<views::View>, ApiError> {
    let Some(project) = loader(ctx)?.load_one(id.clone()).await? else {
        return Ok(None);
    };
    Ok(visible_project(ctx, &project)
        .await?
        .and_then(|data| views::View::of(&data, id)))
}

/// A custom field by id: its lookup item names the project, whose partition holds the field.
async fn load_field(ctx: &Context<'_>, id: &FieldId) -> Result<Option<CustomField>, ApiError> {
    let Some(project) = loader(ctx)?.load_one(id.clone()).await? else {
        return Ok(None);
    };
    Ok(visible_project(ctx, &project)
        .await?
        .and_then(|data| data.field(id).cloned())
        .map(CustomField::from))
}
