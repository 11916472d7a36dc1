//! Per-request DataLoaders: every entity load of one GraphQL request goes through here, so
//! loads from anywhere in the query are de-duplicated, cached for the request, and batched
//! into as few DynamoDB calls as the access patterns allow.
//!
//! A [`Loaders`] is built per request around that request's metered [`Repo`] and is never
//! shared between requests, so one caller's cache can never answer another's load.
//!
//! Tenancy is enforced here, in the data path: a tenant of another caller is never read, and
//! a project (with everything under it) of another tenant is dropped as soon as it is read,
//! before any resolver sees it. Loads by id are [`Probed`]: their cost reaches
//! `extensions.cost` only once it is known whether the caller may see the result, and an
//! invisible result is reported at the price of a miss, so nothing (data, errors or cost
//! figures) tells another tenant's row from one that does not exist.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_graphql::dataloader::{DataLoader, HashMapCache, Loader};
use futures::future::try_join_all;

use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::model::{Issue, ProjectData, Tenant};
use crate::repo::{IssueKey, Repo, RepoError};
use crate::store::CostReport;

/// What an eventually consistent read that finds nothing costs: one call, one read unit.
pub const MISS: CostReport = CostReport {
    dynamodb_calls: 1,
    read_capacity_units: 0.5,
    write_capacity_units: 0.0,
};

/// The result of a load by id and what it cost, charged to the request at most once as
/// found and at most once as missed (see the module docs).
pub struct Probed<T> {
    /// `None` when nothing the caller may see has the id.
    pub value: Option<T>,
    cost: CostReport,
    charged: AtomicBool,
    miss_charged: AtomicBool,
}

impl<T> Probed<T> {
    /// A value the request already paid for (read back by a mutation), to feed a loader.
    pub fn known(value: T) -> Arc<Self> {
        let known = Probed::new(Some(value), CostReport::default());
        known.charged.store(true, Ordering::Relaxed);
        known
    }

    fn new(value: Option<T>, cost: CostReport) -> Arc<Self> {
        Arc::new(Probed {
            value,
            cost,
            charged: AtomicBool::new(false),
            miss_charged: AtomicBool::new(false),
        })
    }

    /// Reports the load as a lookup the client asked for: its cost when the value is
    /// visible, the price of a miss when not.
    pub fn charge_lookup(&self, repo: &Repo) {
        if self.value.is_some() {
            self.charge_found(repo);
        } else {
            self.charge_miss(repo);
        }
    }

    /// Reports the load as a check made on the way to something else (the project of an
    /// issue looked up by id): its cost when visible, nothing when not (the lookup that
    /// needed the check is then reported as a miss instead).
    pub fn charge_check(&self, repo: &Repo) {
        if self.value.is_some() {
            self.charge_found(repo);
        }
    }

    /// Reports what the load cost (once).
    pub fn charge_found(&self, repo: &Repo) {
        if !self.charged.swap(true, Ordering::Relaxed) {
            repo.charge(self.cost);
        }
    }

    /// Reports the load as a miss (once).
    pub fn charge_miss(&self, repo: &Repo) {
        if !self.miss_charged.swap(true, Ordering::Relaxed) {
            repo.charge(MISS);
        }
    }
}

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

    /// Runs `load` on a probe of the repo (`checking`: one for project reads, see
    /// [`Repo::checking_probe`]); see [`Probed`].
    async fn probed<T, F, Fut>(&self, checking: bool, load: F) -> Result<Arc<Probed<T>>, RepoError>
    where
        F: FnOnce(Repo) -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, RepoError>>,
    {
        let (probe, meter) = if checking {
            self.repo.checking_probe()
        } else {
            self.repo.probe()
        };
        let result = load(probe).await;
        // A failed probe's calls are reported at once: outages are not secret.
        let value = result.inspect_err(|_| self.repo.charge(meter.report()))?;
        Ok(Probed::new(value, meter.report()))
    }
}

type LoadResult<K, V> = Result<HashMap<K, V>, Arc<RepoError>>;

/// Tenants: one BatchGetItem per 100 ids. Only the caller's own tenant is ever read: any
/// other id is answered "none" without a call, exactly like an id nobody has.
impl Loader<TenantId> for Loaders {
    type Value = Tenant;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[TenantId]) -> LoadResult<TenantId, Tenant> {
        let access = self.repo.access();
        let visible: Vec<TenantId> = keys.iter().filter(|t| access.sees(t)).cloned().collect();
        if visible.is_empty() {
            return Ok(HashMap::new());
        }
        self.repo.tenants(&visible).await.map_err(Arc::new)
    }
}

/// Projects with their fields: one Query per project, all issued concurrently (a project's
/// table key includes its tenant, so it cannot be fetched by BatchGetItem from its id alone).
/// A project of another tenant is dropped here, as if it did not exist.
impl Loader<ProjectId> for Loaders {
    type Value = Arc<Probed<ProjectData>>;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[ProjectId]) -> LoadResult<ProjectId, Arc<Probed<ProjectData>>> {
        let access = self.repo.access();
        let found = try_join_all(keys.iter().map(|id| {
            self.probed(true, move |probe| async move {
                Ok(probe
                    .project_data(id)
                    .await?
                    .filter(|data| access.sees(&data.project.tenant)))
            })
        }))
        .await
        .map_err(Arc::new)?;
        Ok(keys.iter().cloned().zip(found).collect())
    }
}

/// Custom field → its project: one BatchGetItem of lookup items per 100 ids. Lookup items
/// are tiny and alike, so the load is reported as one read unit per id, found or not (the
/// project read that decides visibility comes after, through the project loader).
impl Loader<FieldId> for Loaders {
    type Value = ProjectId;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[FieldId]) -> LoadResult<FieldId, ProjectId> {
        let (probe, meter) = self.repo.probe();
        let found = probe.field_projects(keys).await;
        let calls = meter.report().dynamodb_calls;
        self.repo.charge(CostReport {
            dynamodb_calls: calls,
            read_capacity_units: if found.is_ok() {
                MISS.read_capacity_units * keys.len() as f64
            } else {
                meter.report().read_capacity_units
            },
            write_capacity_units: 0.0,
        });
        found.map_err(Arc::new)
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

/// Issues by id alone: one small Query per issue, all issued concurrently. Whether the
/// caller may see one is decided by its project (see `graphql::load_issue`).
impl Loader<IssueId> for Loaders {
    type Value = Arc<Probed<Issue>>;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[IssueId]) -> LoadResult<IssueId, Arc<Probed<Issue>>> {
        let found = try_join_all(keys.iter().map(|id| {
            self.probed(false, move |probe: Repo| async move {
                probe.issue_by_id(id).await
            })
        }))
        .await
        .map_err(Arc::new)?;
        Ok(keys.iter().cloned().zip(found).collect())
    }
}
