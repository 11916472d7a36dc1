//! Per-request DataLoaders: every entity load of one GraphQL request goes through here, so
//! loads from anywhere in the query are de-duplicated, cached for the request, and batched
//! into as few DynamoDB calls as the access patterns allow.
//!
//! A [`Loaders`] is built per request around that request's metered [`Repo`] and is never
//! shared between requests, so one caller's cache can never answer another's load.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::dataloader::{DataLoader, HashMapCache, Loader};
use futures::future::try_join_all;

use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::model::{Issue, ProjectData, Tenant};
use crate::repo::{IssueKey, Repo, RepoError};

/// The loader behind the request's [`DataLoader`]; one `Loader` impl per key type.
pub struct Loaders {
    repo: Repo,
}

/// The per-request data loader.
pub type RequestLoader = DataLoader<Loaders, HashMapCache>;

impl Loaders {
    /// A caching data loader for one request.
    pub fn for_request(repo: Repo) -> RequestLoader {
        DataLoader::with_cache(Loaders { repo }, tokio::spawn, HashMapCache::default())
    }
}

type LoadResult<K, V> = Result<HashMap<K, V>, Arc<RepoError>>;

/// Tenants: one BatchGetItem per 100 ids.
impl Loader<TenantId> for Loaders {
    type Value = Tenant;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[TenantId]) -> LoadResult<TenantId, Tenant> {
        self.repo.tenants(keys).await.map_err(Arc::new)
    }
}

/// Projects with their fields: one Query per project, all issued concurrently (a project's
/// table key includes its tenant, so it cannot be fetched by BatchGetItem from its id alone).
impl Loader<ProjectId> for Loaders {
    type Value = ProjectData;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[ProjectId]) -> LoadResult<ProjectId, ProjectData> {
        let found = try_join_all(keys.iter().map(|id| self.repo.project_data(id)))
            .await
            .map_err(Arc::new)?;
        Ok(found
            .into_iter()
            .flatten()
            .map(|data| (data.project.id.clone(), data))
            .collect())
    }
}

/// Custom field → its project: one BatchGetItem of lookup items per 100 ids.
impl Loader<FieldId> for Loaders {
    type Value = ProjectId;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[FieldId]) -> LoadResult<FieldId, ProjectId> {
        self.repo.field_projects(keys).await.map_err(Arc::new)
    }
}

/// Issues by full key: one BatchGetItem per 100 keys, issued concurrently.
impl Loader<IssueKey> for Loaders {
    type Value = Issue;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[IssueKey]) -> LoadResult<IssueKey, Issue> {
        self.repo.issues(keys).await.map_err(Arc::new)
    }
}

/// Issues by id alone: one small Query per issue, all issued concurrently.
impl Loader<IssueId> for Loaders {
    type Value = Issue;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[IssueId]) -> LoadResult<IssueId, Issue> {
        let found = try_join_all(keys.iter().map(|id| self.repo.issue_by_id(id)))
            .await
            .map_err(Arc::new)?;
        Ok(found
            .into_iter()
            .flatten()
            .map(|issue| (issue.id.clone(), issue))
            .collect())
    }
}
