//! The mutation root: every edit a grid makes, Relay-style (one `input`, one payload, an
//! optional `clientMutationId` echoed back and honoured for idempotent retries).
//!
//! Resolvers only translate: the write layer (`repo::writes`) validates, plans and commits,
//! and each payload returns the written node read back strongly consistently from the table.

use std::sync::Arc;

use async_graphql::{Context, InputObject, Object, SimpleObject, ID};

use super::error::{ApiError, ApiResult};
use super::rows::Row;
use super::types::{
    loader, project_data, CustomField, CustomFieldType, Issue, IssueEdge, IssueState, Project,
    ProjectEdge, Tenant,
};
use crate::auth::Permission;
use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::loaders::Probed;
use crate::model;
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
    /// The value as text, e.g. `2023-05-01`, `42`, `-3.5`, `Approved`; null clears the cell.
    pub value: Option<String>,
}

#[derive(InputObject)]
pub struct CreateTenantInput {
    /// 1 to 500 characters (spaces around it are trimmed).
    pub name: String,
    /// Echoed in the payload; a retry with the same id within 10 minutes returns the first
    /// result instead of applying again.
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct CreateTenantPayload {
    pub client_mutation_id: Option<String>,
    pub tenant: Tenant,
}

#[derive(InputObject)]
pub struct UpdateTenantInput {
    pub id: ID,
    pub name: String,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct UpdateTenantPayload {
    pub client_mutation_id: Option<String>,
    pub tenant: Tenant,
}

#[derive(InputObject)]
pub struct CreateProjectInput {
    pub tenant_id: ID,
    pub name: String,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct CreateProjectPayload {
    pub client_mutation_id: Option<String>,
    pub project: Project,
    /// The new project as an edge of its tenant's `projects`, with its cursor there.
    pub edge: ProjectEdge,
}

#[derive(InputObject)]
pub struct UpdateProjectInput {
    pub id: ID,
    pub name: Option<String>,
    /// Write only if the project is still at this `version`; otherwise `CONFLICT`.
    pub expected_version: Option<i64>,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct UpdateProjectPayload {
    pub client_mutation_id: Option<String>,
    pub project: Project,
}

#[derive(InputObject)]
pub struct DeleteProjectInput {
    pub id: ID,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct DeleteProjectPayload {
    pub client_mutation_id: Option<String>,
    pub deleted_id: ID,
}

#[derive(InputObject)]
pub struct CreateCustomFieldInput {
    pub project_id: ID,
    pub name: String,
    #[graphql(name = "type")]
    pub field_type: CustomFieldType,
    /// The column's place; default after the last field.
    pub position: Option<i64>,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct CreateCustomFieldPayload {
    pub client_mutation_id: Option<String>,
    pub custom_field: CustomField,
}

#[derive(InputObject)]
pub struct UpdateCustomFieldInput {
    pub id: ID,
    pub name: Option<String>,
    pub position: Option<i64>,
    /// A field's type cannot change; giving a different one is refused with
    /// `BAD_USER_INPUT`.
    #[graphql(name = "type")]
    pub field_type: Option<CustomFieldType>,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct UpdateCustomFieldPayload {
    pub client_mutation_id: Option<String>,
    pub custom_field: CustomField,
}

#[derive(InputObject)]
pub struct DeleteCustomFieldInput {
    pub id: ID,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct DeleteCustomFieldPayload {
    pub client_mutation_id: Option<String>,
    pub deleted_id: ID,
}

#[derive(InputObject)]
pub struct CreateIssueInput {
    pub project_id: ID,
    pub name: String,
    /// Default `OPEN`.
    pub state: Option<IssueState>,
    /// Initial cells; at most 96 per call (95 with a `clientMutationId`: one atomic write
    /// holds 100 rows).
    pub field_values: Option<Vec<FieldValueInput>>,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct CreateIssuePayload {
    pub client_mutation_id: Option<String>,
    pub issue: Issue,
    /// The new issue as an edge of its project's `issues` in the default order (by num),
    /// with its cursor there.
    pub edge: IssueEdge,
}

#[derive(InputObject)]
pub struct UpdateIssueInput {
    pub id: ID,
    pub name: Option<String>,
    pub state: Option<IssueState>,
    /// Write only if the issue is still at this `version`; otherwise `CONFLICT`.
    pub expected_version: Option<i64>,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct UpdateIssuePayload {
    pub client_mutation_id: Option<String>,
    pub issue: Issue,
}

#[derive(InputObject)]
pub struct SetIssueFieldValuesInput {
    pub issue_id: ID,
    /// Cells to set or (with a null value) clear; others keep their values.
    pub values: Vec<FieldValueInput>,
    /// Write only if the issue is still at this `version`; otherwise `CONFLICT`.
    pub expected_version: Option<i64>,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct SetIssueFieldValuesPayload {
    pub client_mutation_id: Option<String>,
    pub issue: Issue,
}

#[derive(InputObject)]
pub struct DeleteIssueInput {
    pub id: ID,
    pub client_mutation_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct DeleteIssuePayload {
    pub client_mutation_id: Option<String>,
    pub deleted_id: ID,
}

/// The entry points of the write API. Each mutation is atomic: the rows it changes change
/// together or not at all.
pub struct MutationRoot;

#[Object(name = "Mutation")]
impl MutationRoot {
    /// Creates a tenant.
    async fn create_tenant(
        &self,
        ctx: &Context<'_>,
        input: CreateTenantInput,
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
        input: UpdateTenantInput,
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
        input: UpdateProjectInput,
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
        input: DeleteProjectInput,
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
        input: UpdateCustomFieldInput,
    ) -> ApiResult<UpdateCustomFieldPayload> {
        let cmid = input.client_mutation_id;
        let written = writes(ctx)?
            .update_field(
                cmid.as_deref(),
                &input.id,
                input.name.as_deref(),
                input.position,
                input.field_type.map(Into::into),
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
        input: DeleteCustomFieldInput,
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

    /// Creates an issue with the project's next number.
    async fn create_issue(
        &self,
        ctx: &Context<'_>,
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
                node: Row(issue.clone()),
            },
            issue,
            client_mutation_id: cmid,
        })
    }

    /// Renames an issue or changes its state.
    async fn update_issue(
        &self,
        ctx: &Context<'_>,
        input: UpdateIssueInput,
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
        input: DeleteIssueInput,
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
