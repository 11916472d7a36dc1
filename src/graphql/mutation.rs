//! The mutation root: every edit a grid makes, Relay-style (one `input`, one payload, an
//! optional `clientMutationId` echoed back and honoured for idempotent retries).
//!
//! Resolvers only translate: the write layer (`repo::writes`) validates, plans and commits,
//! and each payload returns the written node read back strongly consistently from the table.

use std::sync::Arc;

use async_graphql::{Context, InputObject, Object, SimpleObject, ID};

use super::error::{ApiError, ApiResult};
use super::types::{
    loader, project_data, CustomField, CustomFieldType, Issue, IssueEdge, IssueState, Project,
    ProjectEdge, Tenant,
};
use super::views::{
    CreateViewInput, DeleteViewInput, DeleteViewPayload, UpdateViewInput, View, ViewPayload,
};
use crate::auth::Permission;
use crate::ids::{FieldId, IssueId, ProjectId, TenantId, ViewId};
use crate::loaders::Probed;
use crate::model;
use crate::options::OptionInput;
use crate::repo::writes::{CellInput, Writes, Written};
use crate::repo::IssueKey;

fn writes<'a>(ctx: &Context<'a>) -> Result<&'a Writes, ApiError> {
    ctx.data::<Writes>().map_err(|_| {
        tracing::error!("request has no write layer");
        ApiError::Internal
    })
}

/// The written node is gone again (deleted by a concurrent call between write and read).
fn vanished(what: &str, id: &str) -> ApiError {
    ApiError::NotFound(format!("{what} {id} was deleted by another call"))
}

/// Reads a tenant back from the table (strongly consistent).
async fn read_tenant(ctx: &Context<'_>, id: &str) -> Result<Tenant, ApiError> {
    let writes = writes(ctx)?;
    let id = TenantId::parse(id).map_err(|_| ApiError::Internal)?;
    let tenant = writes
        .repo()
        .tenant_consistent(&id)
        .await?
        .ok_or_else(|| vanished("tenant", id.as_str()))?;
    loader(ctx)?.feed_one(id, tenant.clone()).await;
    Ok(Tenant(tenant))
}

/// Reads a project and its fields back (one strongly consistent Query) and hands them to the
/// request's loader, so nested fields of the payload see the write.
async fn read_project(
    ctx: &Context<'_>,
    id: &ProjectId,
) -> Result<Arc<model::ProjectData>, ApiError> {
    let data = writes(ctx)?
        .repo()
        .load_project(id, true)
        .await?
        .filter(|d| !d.project.deleted)
        .ok_or_else(|| vanished("project", id.as_str()))?;
    let data = Arc::new(data);
    loader(ctx)?
        .feed_one(id.clone(), Probed::known(data.clone()))
        .await;
    Ok(data)
}

/// Reads an issue back (one strongly consistent Query) and hands it, and the project data the
/// write was checked against, to the request's loader: the payload's nested fields (cells,
/// project) need no further reads.
async fn read_issue(ctx: &Context<'_>, written: Written) -> Result<model::Issue, ApiError> {
    if let Some(data) = written.project {
        loader(ctx)?
            .feed_one(data.project.id.clone(), Probed::known(Arc::new(data)))
            .await;
    }
    let id = IssueId::parse(&written.id).map_err(|_| ApiError::Internal)?;
    let issue = writes(ctx)?
        .repo()
        .load_issue(&id, true)
        .await?
        .ok_or_else(|| vanished("issue", id.as_str()))?;
    // A replayed result (no project fed above) may name an issue whose project was deleted
    // since: that is "gone", not a dangling reference.
    if project_data(ctx, &issue.project).await?.is_none() {
        return Err(vanished("issue", id.as_str()));
    }
    let loader = loader(ctx)?;
    loader.feed_one(id, Probed::known(issue.clone())).await;
    let key = IssueKey {
        issue: issue.id.clone(),
        project: issue.project.clone(),
    };
    loader.feed_one(key, Arc::new(issue.clone())).await;
    Ok(issue)
}

async fn read_field(ctx: &Context<'_>, id: &str) -> Result<CustomField, ApiError> {
    let id = FieldId::parse(id).map_err(|_| ApiError::Internal)?;
    let project = writes(ctx)?
        .repo()
        .field_project_consistent(&id)
        .await?
        .ok_or_else(|| vanished("custom field", id.as_str()))?;
    let data = read_project(ctx, &project).await?;
    data.field(&id)
        .cloned()
        .map(CustomField::from)
        .ok_or_else(|| vanished("custom field", id.as_str()))
}

/// Reads a view back with its project (one strongly consistent read of its lookup, one of
/// the project's partition).
async fn read_view(ctx: &Context<'_>, id: &str) -> Result<View, ApiError> {
    let id = ViewId::parse(id).map_err(|_| ApiError::Internal)?;
    let project = writes(ctx)?
        .repo()
        .view_project_consistent(&id)
        .await?
        .ok_or_else(|| vanished("view", id.as_str()))?;
    let data = read_project(ctx, &project).await?;
    View::of(&data, &id).ok_or_else(|| vanished("view", id.as_str()))
}

fn cells(values: Vec<FieldValueInput>) -> Vec<CellInput> {
    values
        .into_iter()
        .map(|v| (v.field_id.to_string(), v.value))
        .collect()
}

/// One cell to set: a custom field and its new value.
#[derive(InputObject)]
pub struct FieldValueInput {
    /// The custom field (one of the issue's project's).
    pub field_id: ID,
    /// The value as text, e.g. `2023-05-01`, `42`, `-3.5`, `Approved`, `true`, or a SELECT
    /// option's id; null clears the cell.
    pub value: Option<String>,
}

/// The input of `createTenant`: the new tenant's name.
#[derive(InputObject)]
pub struct CreateTenantInput {
    /// The tenant's name: 1 to 500 characters after trimming the spaces around it.
    pub name: String,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `createTenant`.
#[derive(SimpleObject)]
pub struct CreateTenantPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The new tenant, read back strongly consistently.
    pub tenant: Tenant,
}

/// The input of `updateTenant`: which tenant, and its new name.
#[derive(InputObject)]
pub struct UpdateTenantInput {
    /// The tenant's global id, e.g. `tenant-0807`; `NOT_FOUND` when there is none.
    pub id: ID,
    /// The new name: 1 to 500 characters after trimming the spaces around it.
    pub name: String,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `updateTenant`.
#[derive(SimpleObject)]
pub struct UpdateTenantPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The tenant as it is now, read back strongly consistently.
    pub tenant: Tenant,
}

/// The input of `createProject`: the tenant to create it in, and its name.
#[derive(InputObject)]
pub struct CreateProjectInput {
    /// The global id of the tenant to create the project in, e.g. `tenant-0807`; `NOT_FOUND`
    /// when there is none.
    pub tenant_id: ID,
    /// The project's name: 1 to 500 characters after trimming the spaces around it.
    pub name: String,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `createProject`.
#[derive(SimpleObject)]
pub struct CreateProjectPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The new project, read back strongly consistently.
    pub project: Project,
    /// The new project as an edge of its tenant's `projects`, with its cursor there.
    pub edge: ProjectEdge,
}

/// The input of `updateProject`: which project, and its new name; what is null stays as it
/// is.
#[derive(InputObject)]
pub struct UpdateProjectInput {
    /// The project's global id, e.g. `project-35e9`; `NOT_FOUND` when there is none.
    pub id: ID,
    /// The new name: 1 to 500 characters after trimming the spaces around it; null keeps the
    /// name.
    pub name: Option<String>,
    /// Write only if the project is still at this `version`; otherwise `CONFLICT`.
    pub expected_version: Option<i64>,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `updateProject`.
#[derive(SimpleObject)]
pub struct UpdateProjectPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The project as it is now, read back strongly consistently.
    pub project: Project,
}

/// The input of `deleteProject`: which project.
#[derive(InputObject)]
pub struct DeleteProjectInput {
    /// The project's global id, e.g. `project-35e9`; `NOT_FOUND` when there is none.
    pub id: ID,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `deleteProject`.
#[derive(SimpleObject)]
pub struct DeleteProjectPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The global id of the deleted project, to drop it from the client's lists.
    pub deleted_id: ID,
}

/// The input of `createCustomField`: the project to add the column to, and the column's name,
/// type and place.
#[derive(InputObject)]
pub struct CreateCustomFieldInput {
    /// The global id of the project to add the field to, e.g. `project-35e9`; `NOT_FOUND`
    /// when there is none.
    pub project_id: ID,
    /// The column's name: 1 to 500 characters after trimming the spaces around it.
    pub name: String,
    /// The type of the field's values, which decides how they are validated and sorted; it
    /// cannot be changed later.
    #[graphql(name = "type")]
    pub field_type: CustomFieldType,
    /// The column's place among the project's fields (ascending), 0 to 2147483647; default
    /// after the last field.
    pub position: Option<i64>,
    /// A SELECT field's options, in order (without ids: they are new); at most 200, labels
    /// unique ignoring case. Refused with `BAD_USER_INPUT` for other types.
    pub options: Option<Vec<SelectOptionInput>>,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// One option of a SELECT field as a client sends it.
#[derive(InputObject, Clone, Debug)]
pub struct SelectOptionInput {
    /// The id of one of the field's options, to keep it; leave it out for a new option.
    pub id: Option<ID>,
    /// The label: 1 to 100 characters after trimming the spaces around it, unique within the
    /// field ignoring case.
    pub label: String,
    /// `#rrggbb`, or one of default, gray, brown, orange, yellow, green, blue, purple, pink,
    /// red; null for none.
    pub color: Option<String>,
}

/// The repository's form of option inputs.
fn option_inputs(inputs: &[SelectOptionInput]) -> Vec<OptionInput> {
    inputs
        .iter()
        .map(|input| OptionInput {
            id: input.id.as_ref().map(|id| id.to_string()),
            label: input.label.clone(),
            color: input.color.clone(),
        })
        .collect()
}

/// The result of `createCustomField`.
#[derive(SimpleObject)]
pub struct CreateCustomFieldPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The new custom field, read back strongly consistently.
    pub custom_field: CustomField,
}

/// The input of `updateCustomField`: which field, and its new name or place; what is null
/// stays as it is.
#[derive(InputObject)]
pub struct UpdateCustomFieldInput {
    /// The custom field's global id, e.g. `xattrib-3812`; `NOT_FOUND` when there is none.
    pub id: ID,
    /// The new name: 1 to 500 characters after trimming the spaces around it; null keeps the
    /// name.
    pub name: Option<String>,
    /// The column's new place among the project's fields (ascending), 0 to 2147483647; null
    /// keeps the place.
    pub position: Option<i64>,
    /// A field's type cannot change; giving a different one is refused with
    /// `BAD_USER_INPUT`.
    #[graphql(name = "type")]
    pub field_type: Option<CustomFieldType>,
    /// A SELECT field's whole new option list, in order: an option with the `id` of an
    /// existing one keeps it (renamed or recoloured as given, moved to its new place), one
    /// without `id` is added, and existing options left out are removed, their cells cleared.
    /// A move re-keys the moved options' cells only, and removals clear cells, in the
    /// background: until that is done the field's `status` is `REINDEXING`. Null keeps the
    /// options.
    pub options: Option<Vec<SelectOptionInput>>,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `updateCustomField`.
#[derive(SimpleObject)]
pub struct UpdateCustomFieldPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The custom field as it is now, read back strongly consistently.
    pub custom_field: CustomField,
}

/// The input of `deleteCustomField`: which field.
#[derive(InputObject)]
pub struct DeleteCustomFieldInput {
    /// The custom field's global id, e.g. `xattrib-3812`; `NOT_FOUND` when there is none.
    pub id: ID,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `deleteCustomField`.
#[derive(SimpleObject)]
pub struct DeleteCustomFieldPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The global id of the deleted custom field, to drop its column from the client's grid.
    pub deleted_id: ID,
}

/// The input of `createIssue`: the project to add the row to, and the row's name, state and
/// first cells.
#[derive(InputObject)]
pub struct CreateIssueInput {
    /// The global id of the project to add the issue to, e.g. `project-35e9`; `NOT_FOUND`
    /// when there is none.
    pub project_id: ID,
    /// The issue's name: 1 to 500 characters after trimming the spaces around it.
    pub name: String,
    /// Default `OPEN`.
    pub state: Option<IssueState>,
    /// Initial cells; at most 96 per call (95 with a `clientMutationId`: one atomic write
    /// holds 100 rows).
    pub field_values: Option<Vec<FieldValueInput>>,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `createIssue`.
#[derive(SimpleObject)]
pub struct CreateIssuePayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The new issue, read back strongly consistently.
    pub issue: Issue,
    /// The new issue as an edge of its project's `issues` in the default order (by num),
    /// with its cursor there.
    pub edge: IssueEdge,
}

/// The input of `updateIssue`: which issue, and its new name or state; what is null stays as
/// it is.
#[derive(InputObject)]
pub struct UpdateIssueInput {
    /// The issue's global id, e.g. `issue-020e`; `NOT_FOUND` when there is none.
    pub id: ID,
    /// The new name: 1 to 500 characters after trimming the spaces around it; null keeps the
    /// name.
    pub name: Option<String>,
    /// The new state; null keeps the state.
    pub state: Option<IssueState>,
    /// Write only if the issue is still at this `version`; otherwise `CONFLICT`.
    pub expected_version: Option<i64>,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `updateIssue`.
#[derive(SimpleObject)]
pub struct UpdateIssuePayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The issue as it is now, read back strongly consistently.
    pub issue: Issue,
}

/// The input of `setIssueFieldValues`: which issue, and the cells to set or clear.
#[derive(InputObject)]
pub struct SetIssueFieldValuesInput {
    /// The issue's global id, e.g. `issue-020e`; `NOT_FOUND` when there is none.
    pub issue_id: ID,
    /// Cells to set or (with a null value) clear; others keep their values.
    pub values: Vec<FieldValueInput>,
    /// Write only if the issue is still at this `version`; otherwise `CONFLICT`.
    pub expected_version: Option<i64>,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `setIssueFieldValues`.
#[derive(SimpleObject)]
pub struct SetIssueFieldValuesPayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The issue as it is now, with its new cells, read back strongly consistently.
    pub issue: Issue,
}

/// The input of `deleteIssue`: which issue.
#[derive(InputObject)]
pub struct DeleteIssueInput {
    /// The issue's global id, e.g. `issue-020e`; `NOT_FOUND` when there is none.
    pub id: ID,
    /// Optional, 1 to 200 bytes, echoed in the payload. A retry with the same id and the same
    /// input within 10 minutes returns the first result instead of applying again; the id
    /// reused for another mutation or other input is refused with `BAD_USER_INPUT`.
    pub client_mutation_id: Option<String>,
}

/// The result of `deleteIssue`.
#[derive(SimpleObject)]
pub struct DeleteIssuePayload {
    /// The input's `clientMutationId`, echoed back; null when none was given.
    pub client_mutation_id: Option<String>,
    /// The global id of the deleted issue, to drop its row from the client's grid.
    pub deleted_id: ID,
}

/// The entry points of the write API. Each mutation is atomic: the rows it changes change
/// together or not at all.
pub struct MutationRoot;

/// The entry points of the write API, one per edit a grid makes (Relay style: one `input`, one
/// payload). Each mutation is atomic, and the mutations of one document run in order. Errors
/// carry `extensions.code`: `BAD_USER_INPUT` for invalid input (the message names the input
/// field), `NOT_FOUND` for an id that does not exist (or is another tenant's), and `CONFLICT`
/// for a stale `expectedVersion` or contention that outlasted the retries (see
/// `extensions.retryable`).
#[Object(name = "Mutation")]
impl MutationRoot {
    /// Creates a tenant. Needs the `grid:admin` scope: without it the request is refused with
    /// `FORBIDDEN` before anything runs.
    async fn create_tenant(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The new tenant's name.")] input: CreateTenantInput,
    ) -> ApiResult<CreateTenantPayload> {
        let cmid = input.client_mutation_id;
        // The request context refuses a caller without the scope before anything runs (see
        // `ADMIN_MUTATIONS`); the write path checks again, as tenancy is checked in the data
        // path.
        if !writes(ctx)?.repo().access().may(Permission::Admin) {
            return Err(ApiError::Forbidden(format!(
                "creating tenants needs the `{}` scope",
                Permission::Admin.scope()
            ))
            .into());
        }
        let written = writes(ctx)?
            .create_tenant(cmid.as_deref(), &input.name)
            .await
            .map_err(ApiError::from)?;
        Ok(CreateTenantPayload {
            tenant: read_tenant(ctx, &written.id).await?,
            client_mutation_id: cmid,
        })
    }

    /// Renames a tenant.
    async fn update_tenant(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The tenant and its new name.")] input: UpdateTenantInput,
    ) -> ApiResult<UpdateTenantPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .update_tenant(cmid.as_deref(), &input.id, &input.name)
            .await
            .map_err(ApiError::from)?;
        Ok(UpdateTenantPayload {
            tenant: read_tenant(ctx, &written.id).await?,
            client_mutation_id: cmid,
        })
    }

    /// Creates a project in a tenant.
    async fn create_project(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The tenant to create the project in, and its name.")]
        input: CreateProjectInput,
    ) -> ApiResult<CreateProjectPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .create_project(cmid.as_deref(), &input.tenant_id, &input.name)
            .await
            .map_err(ApiError::from)?;
        let id = ProjectId::parse(&written.id).map_err(|_| ApiError::Internal)?;
        let project = read_project(ctx, &id).await?.project.clone();
        Ok(CreateProjectPayload {
            edge: ProjectEdge {
                cursor: writes(ctx)?.repo().project_cursor(&project),
                node: Project(project.clone()),
            },
            project: Project(project),
            client_mutation_id: cmid,
        })
    }

    /// Renames a project.
    async fn update_project(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The project and what to change.")] input: UpdateProjectInput,
    ) -> ApiResult<UpdateProjectPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .update_project(
                cmid.as_deref(),
                &input.id,
                input.name.as_deref(),
                input.expected_version,
            )
            .await
            .map_err(ApiError::from)?;
        let id = ProjectId::parse(&written.id).map_err(|_| ApiError::Internal)?;
        Ok(UpdateProjectPayload {
            project: Project(read_project(ctx, &id).await?.project.clone()),
            client_mutation_id: cmid,
        })
    }

    /// Deletes a project: it disappears at once; its issues and fields are removed in the
    /// background.
    async fn delete_project(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The project to delete.")] input: DeleteProjectInput,
    ) -> ApiResult<DeleteProjectPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .delete_project(cmid.as_deref(), &input.id)
            .await
            .map_err(ApiError::from)?;
        loader(ctx)?.clear::<ProjectId>();
        Ok(DeleteProjectPayload {
            deleted_id: ID(written.id),
            client_mutation_id: cmid,
        })
    }

    /// Adds a custom field (a column) to a project; at most 200 per project.
    async fn create_custom_field(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The project, and the new column's name, type and place.")]
        input: CreateCustomFieldInput,
    ) -> ApiResult<CreateCustomFieldPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .create_field(
                cmid.as_deref(),
                &input.project_id,
                &input.name,
                input.field_type.into(),
                input.position,
                &option_inputs(input.options.as_deref().unwrap_or_default()),
            )
            .await
            .map_err(ApiError::from)?;
        Ok(CreateCustomFieldPayload {
            custom_field: read_field(ctx, &written.id).await?,
            client_mutation_id: cmid,
        })
    }

    /// Renames or moves a custom field; its values are untouched.
    async fn update_custom_field(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The custom field and what to change.")] input: UpdateCustomFieldInput,
    ) -> ApiResult<UpdateCustomFieldPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .update_field(
                cmid.as_deref(),
                &input.id,
                input.name.as_deref(),
                input.position,
                input.field_type.map(Into::into),
                input.options.as_deref().map(option_inputs).as_deref(),
            )
            .await
            .map_err(ApiError::from)?;
        Ok(UpdateCustomFieldPayload {
            custom_field: read_field(ctx, &written.id).await?,
            client_mutation_id: cmid,
        })
    }

    /// Deletes a custom field: it disappears at once; its values are removed in the
    /// background.
    async fn delete_custom_field(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The custom field to delete.")] input: DeleteCustomFieldInput,
    ) -> ApiResult<DeleteCustomFieldPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .delete_field(cmid.as_deref(), &input.id)
            .await
            .map_err(ApiError::from)?;
        loader(ctx)?.clear::<ProjectId>();
        Ok(DeleteCustomFieldPayload {
            deleted_id: ID(written.id),
            client_mutation_id: cmid,
        })
    }

    /// Saves a view of a project: a name, one to three sort keys, a filter and the columns to
    /// show. Its index is built in the background (`status: BUILDING`, then `READY`); a
    /// project has at most 20 views.
    async fn create_view(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The project, and the view's name, order, filter and columns.")]
        input: CreateViewInput,
    ) -> ApiResult<ViewPayload> {
        let change = input.change()?;
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .create_view(cmid.as_deref(), &input.project_id, &change)
            .await
            .map_err(ApiError::from)?;
        Ok(ViewPayload {
            view: read_view(ctx, &written.id).await?,
            client_mutation_id: cmid,
        })
    }

    /// Renames, moves or redefines a view. A new order or filter builds a new index beside the
    /// one serving, which keeps serving the previous definition until the new one is ready.
    async fn update_view(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The view and what to change.")] input: UpdateViewInput,
    ) -> ApiResult<ViewPayload> {
        let change = input.change()?;
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .update_view(cmid.as_deref(), &input.id, &change, input.expected_version)
            .await
            .map_err(ApiError::from)?;
        Ok(ViewPayload {
            view: read_view(ctx, &written.id).await?,
            client_mutation_id: cmid,
        })
    }

    /// Deletes a view: it is gone at once; its index is removed in the background.
    async fn delete_view(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The view to delete.")] input: DeleteViewInput,
    ) -> ApiResult<DeleteViewPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .delete_view(cmid.as_deref(), &input.id)
            .await
            .map_err(ApiError::from)?;
        loader(ctx)?.clear::<ProjectId>();
        Ok(DeleteViewPayload {
            deleted_id: ID(written.id),
            client_mutation_id: cmid,
        })
    }

    /// Creates an issue with the project's next number.
    async fn create_issue(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The project, and the new issue's name, state and cells.")]
        input: CreateIssueInput,
    ) -> ApiResult<CreateIssuePayload> {
        let cmid = input.client_mutation_id;
        let values = cells(input.field_values.unwrap_or_default());
        let written = writes(ctx)?
            .create_issue(
                cmid.as_deref(),
                &input.project_id,
                &input.name,
                input.state.map(Into::into),
                &values,
            )
            .await
            .map_err(ApiError::from)?;
        let issue = read_issue(ctx, written).await?;
        let tenant = project_data(ctx, &issue.project)
            .await?
            .ok_or_else(|| vanished("project", issue.project.as_str()))?
            .project
            .tenant
            .clone();
        let cursor = writes(ctx)?.repo().issue_cursor(&tenant, &issue);
        let issue = Issue::from(issue);
        Ok(CreateIssuePayload {
            edge: IssueEdge {
                cursor,
                node: super::rows::Row(issue.clone()),
            },
            issue,
            client_mutation_id: cmid,
        })
    }

    /// Renames an issue or changes its state.
    async fn update_issue(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The issue and what to change.")] input: UpdateIssueInput,
    ) -> ApiResult<UpdateIssuePayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .update_issue(
                cmid.as_deref(),
                &input.id,
                input.name.as_deref(),
                input.state.map(Into::into),
                input.expected_version,
            )
            .await
            .map_err(ApiError::from)?;
        Ok(UpdateIssuePayload {
            issue: Issue::from(read_issue(ctx, written).await?),
            client_mutation_id: cmid,
        })
    }

    /// Sets or clears cells of an issue.
    async fn set_issue_field_values(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The issue and the cells to set or clear.")]
        input: SetIssueFieldValuesInput,
    ) -> ApiResult<SetIssueFieldValuesPayload> {
        let cmid = input.client_mutation_id;
        let values = cells(input.values);
        let written = writes(ctx)?
            .set_issue_values(
                cmid.as_deref(),
                &input.issue_id,
                &values,
                input.expected_version,
            )
            .await
            .map_err(ApiError::from)?;
        Ok(SetIssueFieldValuesPayload {
            issue: Issue::from(read_issue(ctx, written).await?),
            client_mutation_id: cmid,
        })
    }

    /// Deletes an issue and every row it owns.
    async fn delete_issue(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The issue to delete.")] input: DeleteIssueInput,
    ) -> ApiResult<DeleteIssuePayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .delete_issue(cmid.as_deref(), &input.id)
            .await
            .map_err(ApiError::from)?;
        let loader = loader(ctx)?;
        loader.clear::<IssueId>();
        loader.clear::<IssueKey>();
        Ok(DeleteIssuePayload {
            deleted_id: ID(written.id),
            client_mutation_id: cmid,
        })
    }
}
