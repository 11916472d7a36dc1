//! The GraphQL object types of the read API: nodes, connections, enums and inputs.
//!
//! Resolvers here translate between GraphQL and the domain; every load goes through the
//! request's loaders or repo (never a key built here), and every failure leaves as an
//! [`ApiError`] with its code.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::{ComplexObject, Context, Interface, Object, SimpleObject, ID};

pub use super::args::{
    EmptyPlacement, IssueColumn, IssueFilter, IssueOrder, IssueOrderField, IssuesArgs,
    OrderDirection,
};
use super::error::{ApiError, ApiResult};
use super::prefetch::{self, PageKey};
pub(crate) use super::request::{
    loader, note_plan, project_data, referenced_project, repo, visible_project,
};
use super::rows::{self, Objects};
use super::values::{clamp_count, clamp_i32, clamp_version, CustomFieldStatus};
pub use super::values::{CustomFieldType, IssueState};
use crate::filter;
use crate::ids::{FieldId, TenantId};
use crate::model::{self, ProjectData};
use crate::paging::{Direction, PageArgs, PageRequest};
use crate::repo::{IssueKey, IssueRow, Paged};

/// Anything with a global id that `node(id:)` can fetch again.
#[derive(Interface)]
#[graphql(field(name = "id", ty = "ID", desc = "The global id, e.g. `issue-020e`."))]
pub enum Node {
    Tenant(Tenant),
    Project(Project),
    CustomField(CustomField),
    Issue(Issue),
    View(super::views::View),
}

/// An organisation that owns projects.
#[derive(Clone)]
pub struct Tenant(pub model::Tenant);

/// An organisation that owns projects. A caller whose token names a tenant sees nothing of any
/// other: another tenant's objects read as null, exactly like ids that do not exist.
#[Object]
impl Tenant {
    /// The global id, e.g. `tenant-0807`.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }

    /// The tenant's display name: 1 to 500 characters, without spaces at either end.
    async fn name(&self) -> &str {
        &self.0.name
    }

    /// The tenant's projects ordered by name (case-insensitively).
    async fn projects(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Page size when paging forward: 1 to 100, default 20.")] first: Option<
            i32,
        >,
        #[graphql(desc = "Rows after this cursor.")] after: Option<String>,
        #[graphql(desc = "Page size when paging backward: 1 to 100.")] last: Option<i32>,
        #[graphql(desc = "Rows before this cursor.")] before: Option<String>,
    ) -> ApiResult<ProjectConnection> {
        let args = PageArgs {
            first,
            after,
            last,
            before,
        };
        let scope = repo(ctx)?.projects_scope(&self.0.id);
        let request = PageRequest::from_args(&scope, &args).map_err(ApiError::from)?;
        let page = repo(ctx)?
            .projects_page(&self.0.id, &request)
            .await
            .map_err(ApiError::from)?;
        let direction = request.direction;
        let resume = page.resume_cursor.clone();
        let rows = page
            .rows
            .into_iter()
            .map(|(c, p)| (c, Project(p)))
            .collect();
        Ok(ProjectConnection::build(
            rows,
            page.has_previous,
            page.has_next,
            resume,
            direction,
        ))
    }
}

/// A project: a grid of issues with the project's own custom columns.
#[derive(Clone)]
pub struct Project(pub model::Project);

/// A project: one grid, whose rows are its issues and whose extra columns are its custom
/// fields.
#[Object]
impl Project {
    /// The global id, e.g. `project-35e9`.
    async fn id(&self) -> ID {
        ID(self.0.id.to_string())
    }

    /// The project's display name: 1 to 500 characters, without spaces at either end.
    async fn name(&self) -> &str {
        &self.0.name
    }

    /// Bumped by every change of the project's own attributes (its name); pass it as
    /// `expectedVersion` to make an update conditional.
    async fn version(&self) -> i32 {
        clamp_version(self.0.version)
    }

    /// The tenant that owns the project.
    async fn tenant(&self, ctx: &Context<'_>) -> ApiResult<Tenant> {
        let tenant: Option<model::Tenant> = loader(ctx)?
            .load_one(self.0.tenant.clone())
            .await
            .map_err(ApiError::from)?;
        Ok(Tenant(tenant.ok_or_else(|| {
            tracing::error!(project = %self.0.id, tenant = %self.0.tenant, "dangling tenant");
            ApiError::Internal
        })?))
    }

    /// The project's custom fields (extra typed columns), in `position` order.
    async fn custom_fields(&self, ctx: &Context<'_>) -> ApiResult<Fields> {
        Ok(Fields::new(referenced_project(ctx, &self.0.id).await?))
    }

    /// The project's saved views (a grid's tabs), in `position` order.
    async fn views(&self, ctx: &Context<'_>) -> ApiResult<Vec<super::views::View>> {
        Ok(super::views::View::all(
            &referenced_project(ctx, &self.0.id).await?,
        ))
    }

    /// One of the project's saved views by id; null when the project has no such view. A
    /// grid page asks for its view's issues here: the page is read beside the project.
    async fn view(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The view's global id, e.g. `xview-01jq…`.")] id: ID,
    ) -> ApiResult<Option<super::views::View>> {
        let id = crate::ids::ViewId::parse(&id).map_err(ApiError::from)?;
        Ok(super::views::View::of(
            &referenced_project(ctx, &self.0.id).await?,
            &id,
        ))
    }

    /// The project's issues, sorted by any column, filtered, and paged with cursors. Issues
    /// without a value in a sorted custom field come last in either direction, or first with
    /// `empty: FIRST`. A filtered page reads on until it is full; a page (filtered, or sorted by
    /// a custom field) may come back shorter than asked, with `hasNextPage: true`, when finding
    /// its rows took too many reads: continue from `endCursor` (or `startCursor` when paging
    /// backward). Cursors are bound to the order and the filter they were read with.
    // The arguments are the schema's, one per GraphQL argument; they become one `IssuesArgs`
    // at once.
    #[allow(clippy::too_many_arguments)]
    async fn issues(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Page size when paging forward: 1 to 100, default 20.")] first: Option<
            i32,
        >,
        #[graphql(desc = "Rows after this cursor.")] after: Option<String>,
        #[graphql(desc = "Page size when paging backward: 1 to 100.")] last: Option<i32>,
        #[graphql(desc = "Rows before this cursor.")] before: Option<String>,
        #[graphql(desc = "Sort order; default `{field: NUM, direction: ASC}`.")] order_by: Option<
            IssueOrder,
        >,
        #[graphql(desc = "Only the issues that match this filter; default all.")] filter: Option<
            IssueFilter,
        >,
    ) -> ApiResult<IssueConnection> {
        let args = IssuesArgs {
            page: PageArgs {
                first,
                after,
                last,
                before,
            },
            order_by,
            filter,
        };
        let key = PageKey::new(&self.0.id, &args);
        // The page, the request it answers, and the list's filter (for the count).
        let (request, page, filter) = match prefetch::take(ctx, &key)? {
            Some(prefetched) => {
                let (request, page) = prefetched.map_err(ApiError::from)?;
                // A page read ahead was confirmed against this list, checked the same way.
                let filter = match &args.filter {
                    Some(_) => args.list(ctx, &self.0.id).await?.filter,
                    None => None,
                };
                (request, page, filter)
            }
            None => {
                let list = args.list(ctx, &self.0.id).await?;
                let scope = repo(ctx)?.issues_scope(&self.0.tenant, &self.0.id, &list);
                let request = PageRequest::from_args(&scope, &args.page).map_err(ApiError::from)?;
                // The planner weighs a filter's access paths by the project's counters (the
                // project is the request's already: a filter was checked against it).
                let data = match &list.filter {
                    Some(_) => Some(referenced_project(ctx, &self.0.id).await?),
                    None => None,
                };
                let counts = data.as_ref().and_then(|d| d.project.counts.as_ref());
                let page: Paged<IssueRow> = repo(ctx)?
                    .issues_page(&self.0.tenant, &self.0.id, &list, counts, &request)
                    .await
                    .map_err(ApiError::from)?;
                (request, page, list.filter)
            }
        };
        let project = &self.0.id;
        issue_connection(ctx, project, request, page, move |data| {
            data.project
                .counts
                .as_ref()
                .and_then(|counts| filter::count(counts, filter.as_ref()))
        })
        .await
    }
}

/// The connection of a read page of issues (`Project.issues`, `View.issues`): the issues its
/// index rows name are loaded in one batch with every other issue load of the request, and
/// `totalCount`, when selected, is `count` of the project (which the request has loaded
/// already, so it costs no read) or, failing that, the page's length when the page holds the
/// whole list.
pub(super) async fn issue_connection(
    ctx: &Context<'_>,
    project: &crate::ids::ProjectId,
    request: PageRequest,
    page: Paged<IssueRow>,
    count: impl FnOnce(&ProjectData) -> Option<i64>,
) -> ApiResult<IssueConnection> {
    if let Some(plan) = &page.plan {
        note_plan(ctx, plan);
    }
    // Rows read from derived index rows are loaded in one batch with every other issue
    // load of this request.
    let keys: Vec<IssueKey> = page
        .rows
        .iter()
        .filter_map(|(_, row)| match row {
            IssueRow::Key(key) => Some(key.clone()),
            IssueRow::Loaded(_) => None,
        })
        .collect();
    let mut loaded: HashMap<IssueKey, Arc<model::Issue>> = if keys.is_empty() {
        HashMap::new()
    } else {
        loader(ctx)?.load_many(keys).await.map_err(ApiError::from)?
    };
    let rows: Vec<(String, Row)> = page
        .rows
        .into_iter()
        .filter_map(|(cursor, row)| {
            let issue = match row {
                IssueRow::Loaded(issue) => Some(Issue::from(issue)),
                IssueRow::Key(key) => {
                    // Shared with the loader's cache, not copied.
                    let issue = loaded.remove(&key).map(Issue);
                    if issue.is_none() {
                        // An index row without its issue: a write was interrupted or is in
                        // flight. Skip the row rather than fail the page.
                        tracing::warn!(issue = %key.issue, "index row without its issue");
                    }
                    issue
                }
            };
            issue.map(|i| (cursor, rows::Row(i)))
        })
        .collect();
    // The page holds the whole list only when nothing bounds it: paging forward,
    // `hasPreviousPage` says only whether `after` was given, and a page stopped by
    // `before` says nothing of what lies beyond it (and backward alike).
    let whole = !page.has_previous
        && !page.has_next
        && page.resume_cursor.is_none()
        && request.after.is_none()
        && request.before.is_none();
    let length = rows.len() as i64;
    let mut connection = IssueConnection::build(
        rows,
        page.has_previous,
        page.has_next,
        page.resume_cursor,
        request.direction,
    );
    if ctx.look_ahead().field("totalCount").exists() {
        // The project is the request's already (it was loaded to check the list), so this
        // is no read.
        let data = referenced_project(ctx, project).await?;
        let counted = count(&data);
        let whole = whole.then_some(length);
        connection.total_count = counted.or(whole).map(clamp_count);
    }
    Ok(connection)
}

/// A custom field: an extra typed column defined per project.
#[derive(Clone)]
pub struct CustomField(FieldSource);

/// Where a [`CustomField`]'s definition lives: a grid page names the same few fields in every
/// cell, so those share the request's project instead of each copying the definition.
#[derive(Clone)]
enum FieldSource {
    Owned(model::CustomField),
    /// `fields[index]` of a project.
    Shared(Arc<ProjectData>, usize),
}

impl CustomField {
    /// The `index`th field of a loaded project (which must have it).
    pub(super) fn of_project(data: &Arc<ProjectData>, index: usize) -> Self {
        CustomField(FieldSource::Shared(data.clone(), index))
    }

    fn get(&self) -> &model::CustomField {
        match &self.0 {
            FieldSource::Owned(field) => field,
            FieldSource::Shared(data, index) => &data.fields[*index],
        }
    }
}

impl From<model::CustomField> for CustomField {
    fn from(field: model::CustomField) -> Self {
        CustomField(FieldSource::Owned(field))
    }
}

/// A custom field: an extra typed column defined per project. Its `type` decides how its
/// values are validated and sorted, and never changes.
#[Object(serial)]
impl CustomField {
    /// The global id, e.g. `xattrib-3812`.
    async fn id(&self) -> ID {
        ID(self.get().id.as_str().to_owned())
    }

    /// The column's display name: 1 to 500 characters, without spaces at either end. Names
    /// need not be unique within a project; tell fields apart by `id`.
    async fn name(&self) -> &str {
        &self.get().name
    }

    /// The type of the field's values, which decides how they sort.
    #[graphql(name = "type")]
    async fn field_type(&self) -> CustomFieldType {
        self.get().field_type.into()
    }

    /// The column's place among the project's custom fields (ascending).
    async fn position(&self) -> i32 {
        clamp_i32(self.get().position)
    }

    /// Bumped by every change of the field (name, position, options, status).
    async fn version(&self) -> i32 {
        clamp_version(self.get().version)
    }

    /// A SELECT field's options in their order; empty for other types.
    async fn options(&self) -> Vec<SelectOption> {
        SelectOption::all(self.get())
    }

    /// `REINDEXING` while moved or removed options' cells are being re-keyed or cleared in
    /// the background, else `READY`.
    async fn status(&self) -> CustomFieldStatus {
        CustomFieldStatus::of(self.get())
    }

    /// The project the field belongs to.
    async fn project(&self, ctx: &Context<'_>) -> ApiResult<Project> {
        Ok(Project(
            referenced_project(ctx, &self.get().project)
                .await?
                .project
                .clone(),
        ))
    }
}

/// An issue: one row of a project's grid. Shared, because a connection lists each issue
/// twice (as an edge's node and among `nodes`).
#[derive(Clone)]
pub struct Issue(pub Arc<model::Issue>);

// Serial resolution. The objects of a grid page's rows (issues, their edges and connection,
// cells, page info) resolve their fields one after another, in selection order, instead of
// through a `FuturesUnordered`: that allocates a task per field and returns fields in
// completion order, for the response shape to put back. It cannot cost a wave: among these
// objects' fields only `project`, `fieldValues`, `fieldValue` and a field's `project` load
// anything, always the row's own project, which the first of them loads for the rest. Rows
// of a list still resolve concurrently, so their loads still batch. `Project`, `Tenant` and
// the roots stay concurrent: their fields load different things.

impl From<model::Issue> for Issue {
    fn from(issue: model::Issue) -> Self {
        Issue(Arc::new(issue))
    }
}

/// An issue: one row of a project's grid, with its number, name and state and its values of
/// the project's custom fields.
#[Object(serial)]
impl Issue {
    /// The global id, e.g. `issue-020e`.
    async fn id(&self) -> ID {
        ID(self.0.id.as_str().to_owned())
    }

    /// The issue's number within its project (1, 2, 3, ...).
    async fn num(&self) -> i32 {
        clamp_i32(self.0.num)
    }

    /// The issue's name: 1 to 500 characters, without spaces at either end.
    async fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether the issue is open or closed.
    async fn state(&self) -> IssueState {
        self.0.state.into()
    }

    /// Bumped by every change of the issue (name, state, cells); pass it as
    /// `expectedVersion` to make an update conditional.
    async fn version(&self) -> i32 {
        clamp_version(self.0.version)
    }

    /// The project the issue belongs to.
    async fn project(&self, ctx: &Context<'_>) -> ApiResult<Project> {
        Ok(Project(
            referenced_project(ctx, &self.0.project)
                .await?
                .project
                .clone(),
        ))
    }

    /// The values this issue has, in the fields' `position` order; fields without a value are
    /// left out.
    async fn field_values(&self, ctx: &Context<'_>) -> ApiResult<Cells> {
        let data = referenced_project(ctx, &self.0.project).await?;
        Ok(Cells::new(self.0.clone(), data))
    }

    /// This issue's value of one custom field; null when it has none or the field is not one
    /// of the project's.
    async fn field_value(
        &self,
        ctx: &Context<'_>,
        #[graphql(
            desc = "The custom field's global id, e.g. `xattrib-3812`; a malformed id is refused with `BAD_USER_INPUT`."
        )]
        field_id: ID,
    ) -> ApiResult<Option<CustomFieldValue>> {
        let field_id = FieldId::parse(&field_id).map_err(ApiError::from)?;
        let Some(raw) = self.0.values.get(&field_id) else {
            return Ok(None);
        };
        let data = referenced_project(ctx, &self.0.project).await?;
        Ok(data
            .fields
            .iter()
            .position(|field| field.id == field_id)
            .map(|index| CustomFieldValue::new(CustomField::of_project(&data, index), raw)))
    }
}

/// One cell: a custom field and this issue's value of it.
#[derive(SimpleObject)]
#[graphql(complex, serial)]
pub struct CustomFieldValue {
    #[graphql(skip)]
    field: CustomField,
    /// The value's canonical text: `2023-05-01`, `42`, `-3.5`, `Approved`, `true`, or for SELECT
    /// the option's id (`opt-1a2b3c4d`, see `option`).
    value: String,
}

#[ComplexObject]
impl CustomFieldValue {
    /// The custom field (the column) this cell belongs to.
    async fn field(&self) -> &CustomField {
        &self.field
    }

    /// The id of the custom field this cell belongs to: `field { id }` as a plain value, for
    /// clients that keep cells flat (a grid's normalised cache writes and reads a page's 800
    /// cells on every page, and a nested object per cell doubles that work).
    async fn field_id(&self) -> ID {
        ID(self.field.get().id.as_str().to_owned())
    }

    /// A SELECT cell's option (its `value` is the option's id); null for other types, and for
    /// the cells of a removed option until the background sweep clears them.
    async fn option(&self) -> Option<SelectOption> {
        SelectOption::of_cell(self.field.get(), &self.value)
    }
}

/// One choice of a SELECT field.
#[derive(SimpleObject, Clone)]
pub struct SelectOption {
    /// The option's id, e.g. `opt-1a2b3c4d`: what a cell of the field holds. Stable across
    /// renames and moves.
    pub id: ID,
    /// The label a grid shows.
    pub label: String,
    /// `#rrggbb` or a named colour (default, gray, brown, orange, yellow, green, blue,
    /// purple, pink, red); null for none.
    pub color: Option<String>,
    /// The option's place among the field's options, from 0: cells sort in this order.
    pub position: i32,
}

impl SelectOption {
    /// The live options of `field`, in order.
    pub(super) fn all(field: &model::CustomField) -> Vec<SelectOption> {
        field
            .live_options()
            .enumerate()
            .map(|(position, option)| SelectOption::new(option, position))
            .collect()
    }

    /// The live option a cell holding `value` names.
    pub(super) fn of_cell(field: &model::CustomField, value: &str) -> Option<SelectOption> {
        field
            .live_option(value)
            .map(|(position, option)| SelectOption::new(option, position))
    }

    fn new(option: &model::SelectOption, position: usize) -> Self {
        SelectOption {
            id: ID(option.id.clone()),
            label: option.label.clone(),
            color: option.color.clone(),
            position: i32::try_from(position).unwrap_or(i32::MAX),
        }
    }
}

impl CustomFieldValue {
    pub(super) fn new(field: CustomField, raw: &str) -> Self {
        // Stored numbers may come back in another spelling (DynamoDB normalizes them); the
        // canonical text is what clients see.
        let value = model::canonical_text(field.get().field_type, raw).into_owned();
        CustomFieldValue { field, value }
    }
}

/// Relay page information.
#[derive(SimpleObject)]
#[graphql(serial)]
pub struct PageInfo {
    /// Paging forward (`first`/`after`): whether more rows may follow this page, true also
    /// when the page came back shorter than asked because finding its rows took too many reads
    /// (see `Project.issues`). Paging backward (`last`/`before`): whether `before` was given.
    pub has_next_page: bool,
    /// Paging backward (`last`/`before`): whether more rows may come before this page, true
    /// also when the page came back shorter than asked because finding its rows took too many
    /// reads. Paging forward (`first`/`after`): whether `after` was given.
    pub has_previous_page: bool,
    /// The cursor of the first edge (or where a backward page cut short stopped reading).
    pub start_cursor: Option<String>,
    /// The cursor of the last edge (or where a forward page cut short stopped reading).
    pub end_cursor: Option<String>,
}

/// Declares a Relay connection type and its edge type for one node type, so every
/// connection has the same shape and the same page-info rules.
macro_rules! connection {
    ($conn:ident, $edge:ident, $node:ty, $what:literal $(, #[$attr:meta])?) => {
        connection!(
            $conn, $edge, $node, $what, Vec<$edge>, Vec<$node> $(, #[$attr])?
        );
    };
    // With the types of the `edges` and `nodes` lists (any collection of the edges or nodes).
    // `; total_count` gives the connection a `totalCount`, set after `build`.
    (
        $conn:ident, $edge:ident, $node:ty, $what:literal, $edges:ty, $nodes:ty
        $(, #[$attr:meta])? $(; $total:ident)?
    ) => {
        #[doc = concat!("A row of a list of ", $what, " and its cursor.")]
        #[derive(SimpleObject)]
        $(#[$attr])?
        pub struct $edge {
            /// An opaque cursor: pass it as `after` or `before` with the same connection and
            /// ordering.
            pub cursor: String,
            #[doc = concat!("The row itself: one of the ", $what, " of the list.")]
            pub node: $node,
        }

        #[doc = concat!("A page of ", $what, " (Relay cursor connection).")]
        #[derive(SimpleObject)]
        $(#[$attr])?
        pub struct $conn {
            /// The page's rows with their cursors, in the list's order (also when paging
            /// backward); empty when no row matches.
            pub edges: $edges,
            /// The edges' nodes, for clients that need no cursors.
            pub nodes: $nodes,
            /// Whether more rows lie beyond this page, and the cursors to continue from.
            pub page_info: PageInfo,
            $(
                /// The exact number of issues in the list (after its filter), for sizing a
                /// scrollbar; costs no read. Never null when the list has no filter, when every
                /// leaf of its filter tests `STATE`, or when its filter is a single `isEmpty`
                /// leaf on a custom field, on projects whose counters are kept (every project
                /// created or reindexed by this version). Otherwise null, unless the page holds
                /// the whole list (no page before or after it), whose length it then is.
                pub $total: Option<i32>,
            )?
        }

        impl $conn {
            fn build(
                rows: Vec<(String, $node)>,
                has_previous_page: bool,
                has_next_page: bool,
                resume_cursor: Option<String>,
                direction: Direction,
            ) -> Self {
                let page_info = PageInfo::new(
                    rows.first().map(|(c, _)| c.clone()),
                    rows.last().map(|(c, _)| c.clone()),
                    has_previous_page,
                    has_next_page,
                    resume_cursor,
                    direction,
                );
                let nodes = rows.iter().map(|(_, n)| n.clone()).collect();
                let edges = rows
                    .into_iter()
                    .map(|(cursor, node)| $edge { cursor, node })
                    .collect();
                $conn {
                    edges,
                    nodes,
                    page_info,
                    $( $total: None, )?
                }
            }
        }
    };
}

impl PageInfo {
    fn new(
        mut start_cursor: Option<String>,
        mut end_cursor: Option<String>,
        has_previous_page: bool,
        has_next_page: bool,
        resume_cursor: Option<String>,
        direction: Direction,
    ) -> Self {
        // A page cut short by the read cap continues from where reading stopped, which may lie
        // beyond its last edge.
        if let Some(resume) = resume_cursor {
            match direction {
                Direction::Forward => end_cursor = Some(resume),
                Direction::Backward => start_cursor = Some(resume),
            }
        }
        PageInfo {
            has_next_page,
            has_previous_page,
            start_cursor,
            end_cursor,
        }
    }
}

/// The object types planned rows fall back to (see [`rows::Objects`]): `rows` is given them
/// here rather than importing them, so it depends on nothing above it.
pub struct GridObjects;

impl Objects for GridObjects {
    type Field = CustomField;
    type Cell = CustomFieldValue;
    type SelectOption = SelectOption;
    type Issue = Issue;
    type Edge = IssueEdge;

    fn field(project: &Arc<ProjectData>, index: usize) -> CustomField {
        CustomField::of_project(project, index)
    }

    fn cell(project: &Arc<ProjectData>, index: usize, raw: &str) -> CustomFieldValue {
        CustomFieldValue::new(CustomField::of_project(project, index), raw)
    }

    fn issue(issue: &Issue) -> &model::Issue {
        &issue.0
    }

    fn edge(edge: &IssueEdge) -> (&str, &model::Issue) {
        (&edge.cursor, &edge.node.0 .0)
    }
}

/// An issue listed by a connection, resolved by plan (`rows::Row`).
pub type Row = rows::Row<GridObjects>;
type Rows = rows::Rows<GridObjects>;
type Edges = rows::Edges<GridObjects>;
type Fields = rows::Fields<GridObjects>;
type Cells = rows::Cells<GridObjects>;

// Tenant and project connections stay concurrent: `edges` and `nodes` may each select a
// tenant's projects or a project's issues.
connection!(TenantConnection, TenantEdge, Tenant, "tenants");
connection!(ProjectConnection, ProjectEdge, Project, "projects");

/// A page of the tenants the caller sees (`Query.tenants`). Each tenant listed is given to the
/// request's tenant loader, so a `tenant` asked for again under the list (a project's, say)
/// costs no read.
pub(super) async fn tenant_connection(
    ctx: &Context<'_>,
    args: PageArgs,
) -> ApiResult<TenantConnection> {
    let repo = repo(ctx)?;
    let request = PageRequest::from_args(&repo.tenants_scope(), &args).map_err(ApiError::from)?;
    let page = repo.tenants_page(&request).await.map_err(ApiError::from)?;
    loader(ctx)?
        .feed_many(page.rows.iter().map(|(_, t)| (t.id.clone(), t.clone())))
        .await;
    let rows = page.rows.into_iter().map(|(c, t)| (c, Tenant(t))).collect();
    Ok(TenantConnection::build(
        rows,
        page.has_previous,
        page.has_next,
        page.resume_cursor,
        request.direction,
    ))
}

// Issue connections list their rows by plan (`rows.rs`).
connection!(IssueConnection, IssueEdge, Row, "issues", Edges, Rows, #[graphql(serial)]; total_count);

pub(crate) fn tenant_id(id: &str) -> Result<TenantId, ApiError> {
    TenantId::parse(id).map_err(ApiError::from)
}
