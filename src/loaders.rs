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
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use async_graphql::dataloader::{DataLoader, HashMapCache, Loader};
use futures::future::{try_join_all, BoxFuture};
use futures::stream::{FuturesUnordered, StreamExt};
use futures::task::AtomicWaker;

use crate::ids::{FieldId, IssueId, ProjectId, TenantId, ViewId};
use crate::model::{Issue, ProjectData, Tenant};
pub use crate::repo::MISS;
use crate::repo::{IssueKey, Repo, RepoError};
use crate::store::CostReport;

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
pub type RequestLoader = DataLoader<Loaders, HashMapCache<foldhash::fast::RandomState>>;

impl Loaders {
    /// A caching data loader for one request, whose batches run in `batches` (which must
    /// [`drive`](Batches::drive) the request's execution).
    pub fn for_request(repo: Repo, batches: &Batches) -> RequestLoader {
        let batches = batches.clone();
        DataLoader::with_cache(
            Loaders { repo },
            move |batch| batches.push(batch),
            HashMapCache::<foldhash::fast::RandomState>::new(),
        )
        // No timer: a batch starts once every resolver that was ready has asked for its keys
        // (see `Batches`), so it never waits idle and still collects the whole round.
        .delay(Duration::ZERO)
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

/// The request's loader batches, run inside the request's own task rather than spawned.
///
/// A DataLoader gathers the keys asked for until its batch starts. Started by a timer (the
/// default: 1 ms after the first key), every round of loads waits idle for the timer; started
/// at once on another thread, it may leave before sibling resolvers ask for their keys.
/// Here a batch is queued when its first key is asked for and started by [`Batches::drive`]
/// only after the request's execution has been polled: by then every resolver that could
/// run has run up to its load, so a round's keys are in one batch (the call budgets the tests
/// assert depend on it) and the batch starts in the same turn, without waiting.
#[derive(Clone, Default)]
pub struct Batches(Arc<BatchQueue>);

#[derive(Default)]
struct BatchQueue {
    queued: Mutex<Vec<BoxFuture<'static, ()>>>,
    /// Wakes the driving task when a batch is queued from elsewhere.
    waker: AtomicWaker,
}

impl Batches {
    fn push(&self, batch: BoxFuture<'static, ()>) {
        self.0
            .queued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(batch);
        self.0.waker.wake();
    }

    /// Runs `work` (a request's execution) and the batches its loads queue, polling `work`
    /// first on every turn; batches still running when `work` is done are dropped.
    pub async fn drive<F: Future>(&self, work: F) -> F::Output {
        let mut work = pin!(work);
        let mut running = FuturesUnordered::new();
        std::future::poll_fn(|cx| {
            self.0.waker.register(cx.waker());
            if let Poll::Ready(output) = work.as_mut().poll(cx) {
                return Poll::Ready(output);
            }
            running.extend(
                self.0
                    .queued
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .drain(..),
            );
            // Polls the batches until none can progress; a finished batch wakes the loads
            // waiting on it, and so this task, which then polls `work` again.
            while let Poll::Ready(Some(())) = running.poll_next_unpin(cx) {}
            Poll::Pending
        })
        .await
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

/// Projects with their fields (shared, not copied, by everything that refers to them): one
/// Query per project, all issued concurrently (a project's
/// table key includes its tenant, so it cannot be fetched by BatchGetItem from its id alone).
/// A project of another tenant is dropped here, as if it did not exist.
impl Loader<ProjectId> for Loaders {
    type Value = Arc<Probed<Arc<ProjectData>>>;
    type Error = Arc<RepoError>;

    async fn load(
        &self,
        keys: &[ProjectId],
    ) -> LoadResult<ProjectId, Arc<Probed<Arc<ProjectData>>>> {
        let access = self.repo.access();
        let found = try_join_all(keys.iter().map(|id| {
            self.probed(true, move |probe| async move {
                Ok(probe
                    .project_data(id)
                    .await?
                    .filter(|data| access.sees(&data.project.tenant))
                    .map(Arc::new))
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
        self.charge_lookups(&meter, keys.len(), found.is_ok());
        found.map_err(Arc::new)
    }
}

impl Loaders {
    /// Prices a batch of lookups by id (field or view to project) made on a probe: each key
    /// as a miss, whatever was found, so the cost says nothing of ids of other tenants; a
    /// failed read at what it cost.
    fn charge_lookups(&self, meter: &crate::store::CostMeter, keys: usize, found: bool) {
        let report = meter.report();
        self.repo.charge(CostReport {
            dynamodb_calls: report.dynamodb_calls,
            read_capacity_units: if found {
                MISS.read_capacity_units * keys as f64
            } else {
                report.read_capacity_units
            },
            write_capacity_units: 0.0,
        });
    }
}

/// Saved views' projects by view id, priced as field lookups are.
impl Loader<ViewId> for Loaders {
    type Value = ProjectId;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[ViewId]) -> LoadResult<ViewId, ProjectId> {
        let (probe, meter) = self.repo.probe();
        let found = probe.view_projects(keys).await;
        self.charge_lookups(&meter, keys.len(), found.is_ok());
        found.map_err(Arc::new)
    }
}

/// Issues by full key: one BatchGetItem per 100 keys, issued concurrently. Shared, because
/// the DataLoader clones every value it hands out: an `Issue` clone is a string and a map
/// entry per cell, 50 times a page.
impl Loader<IssueKey> for Loaders {
    type Value = Arc<Issue>;
    type Error = Arc<RepoError>;

    async fn load(&self, keys: &[IssueKey]) -> LoadResult<IssueKey, Arc<Issue>> {
        let issues = self.repo.issues(keys).await.map_err(Arc::new)?;
        Ok(issues
            .into_iter()
            .map(|(key, issue)| (key, Arc::new(issue)))
            .collect())
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
