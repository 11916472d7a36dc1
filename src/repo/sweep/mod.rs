//! Sweeps: the background half of deletions that are too big for one transaction — a
//! deleted custom field's cells, a deleted project's rows, the rest of a very wide issue —
//! and of a SELECT field's option edits (`options`): the jobs, their leases and batches.
//!
//! The deleting mutation commits a tombstone (or removes the source row) together with a
//! **job row** in the `sweeps` partition of `GSI1`, so the API stops showing the entity at once
//! and the work cannot be forgotten. A sweep then removes the rows in batches of small
//! transactions. It is idempotent (each batch re-reads what is left) and resumable: `serve`
//! runs every job it finds at start-up. Several gateway instances may share a table, so a job
//! is claimed with a **lease** (a conditional write of `LeaseOwner`/`LeaseExpires` on the job
//! row, renewed before every batch); another instance takes over only once the lease lapses.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::now_millis;
use super::RepoError;
use crate::ids::{FieldId, IssueId, ProjectId};
use crate::items::{self, attrs, SweepJob, SweepTarget};
use crate::keys;
use crate::store::{
    retry, AttrPath, AttributeValue, Condition, DynStore, Filter, Index, Item, Key, Query,
    StoreError, UpdateAction, WriteOp, MAX_TRANSACT_WRITE,
};

mod options;
mod views;
use options::{Forget, FORGET_ATTEMPTS};

/// How a sweeper works.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Who this instance is, in lease rows (unique per process).
    pub owner: String,
    /// How long a claim lasts without renewal.
    pub lease: Duration,
    /// Cells removed per transaction (each cell is two operations).
    pub batch: usize,
    /// Stop after this many batches, as if the process died there (for crash tests).
    pub stop_after_batches: Option<usize>,
    /// How long after a deletion its sweep looks once more before finishing: `GSI1` is
    /// eventually consistent on DynamoDB, so index rows of writes that committed just before
    /// the tombstone may reach the index after a first pass. Zero for stores whose index is
    /// updated with the table (the embedded store, DynamoDB Local).
    pub settle: Duration,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            owner: format!("gateway-{}", ulid::Ulid::new().to_string().to_lowercase()),
            lease: Duration::from_secs(30),
            batch: MAX_TRANSACT_WRITE / 2 - 1,
            stop_after_batches: None,
            settle: Duration::from_secs(5),
        }
    }
}

/// How one sweep ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepOutcome {
    /// Every row is gone, and so is the job.
    Finished,
    /// Another instance holds the lease.
    Held,
    /// The job row is gone: someone else finished it.
    NoJob,
    /// Stopped early (`stop_after_batches`) or lost the lease half-way.
    Interrupted,
}

/// Runs sweeps against one store.
#[derive(Clone)]
pub struct Sweeper {
    store: DynStore,
    config: SweepConfig,
}

impl Sweeper {
    pub fn new(store: DynStore, config: SweepConfig) -> Self {
        Sweeper { store, config }
    }

    /// Every pending job, oldest first: one Query of the `sweeps` partition of `GSI1` per
    /// page. A job row that cannot be read is logged and left out, so it cannot block the
    /// others.
    pub async fn pending(&self) -> Result<Vec<SweepJob>, RepoError> {
        let query = Query::partition(Index::Gsi1, keys::SWEEPS_PARTITION);
        let found = retry::query_all(self.store.as_ref(), &query).await?;
        Ok(found
            .iter()
            .filter_map(|item| match items::decode_sweep(item) {
                Ok(job) => Some(job),
                Err(e) => {
                    tracing::error!(error = %e, "unreadable sweep job left out");
                    None
                }
            })
            .collect())
    }

    /// Runs every pending job once; returns how each ended. A job that fails is logged and
    /// counted as interrupted, and the others still run.
    pub async fn run_pending(&self) -> Result<Vec<(SweepTarget, SweepOutcome)>, RepoError> {
        let mut outcomes = Vec::new();
        for job in self.pending().await? {
            let outcome = match self.run(&job.target).await {
                Ok(outcome) => outcome,
                Err(e) => {
                    tracing::error!(target = job.target.target_id(), error = %e, "sweep failed");
                    SweepOutcome::Interrupted
                }
            };
            outcomes.push((job.target, outcome));
        }
        Ok(outcomes)
    }

    /// Claims the job of `target` and removes its rows.
    pub async fn run(&self, target: &SweepTarget) -> Result<SweepOutcome, RepoError> {
        let job_key = keys::sweep(&target.job_name());
        let job = match self.claim(&job_key).await? {
            Claim::Claimed(job) => job,
            Claim::Held => return Ok(SweepOutcome::Held),
            Claim::NoJob => return Ok(SweepOutcome::NoJob),
        };
        let created = job.created.parse::<i64>().unwrap_or(0);
        let mut run = Run {
            sweeper: self,
            job_key: job_key.clone(),
            created,
            batches: 0,
            stalled: 0,
        };
        let mut done = run.passes(target).await?;
        let settle_ms = i64::try_from(self.config.settle.as_millis()).unwrap_or(i64::MAX);
        let wait = created.saturating_add(settle_ms) - now_millis();
        if done && wait > 0 {
            // Background work waiting out the index's propagation delay, not synchronisation.
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
            done = run.passes(target).await?;
        }
        let last_rows = match target {
            SweepTarget::Field { project, field } => {
                vec![keys::field(project, field), keys::field_lookup(field)]
            }
            SweepTarget::Project { project, tenant } => vec![keys::project(project, tenant)],
            SweepTarget::Issue { .. } | SweepTarget::Options { .. } | SweepTarget::View { .. } => {
                Vec::new()
            }
        };
        let done = match target {
            // The field forgets what was pending only after the settled pass, and only if it
            // did not change meanwhile: a rename or a move while the sweep ran makes it look
            // again (a few times; after that the next round takes it up).
            SweepTarget::Options { project, field } if done => {
                let mut forgotten = Forget::Changed;
                for _ in 0..FORGET_ATTEMPTS {
                    forgotten = run.forget_pending(project, field).await?;
                    if forgotten != Forget::Changed || !run.passes(target).await? {
                        break;
                    }
                }
                forgotten == Forget::Done
            }
            _ => done,
        };
        let done = done && run.finish(last_rows).await?;
        Ok(if done {
            SweepOutcome::Finished
        } else {
            SweepOutcome::Interrupted
        })
    }

    async fn claim(&self, job_key: &Key) -> Result<Claim, RepoError> {
        let Some(item) = self.store.get_consistent(job_key).await?.item else {
            return Ok(Claim::NoJob);
        };
        let job = items::decode_sweep(&item)?;
        let now = now_millis();
        let free = job.lease_owner.as_deref() == Some(self.config.owner.as_str())
            || job.lease_expires.is_none_or(|t| t <= now);
        if !free {
            return Ok(Claim::Held);
        }
        let claimed = job.clone();
        let condition = match job.lease_expires {
            Some(t) => Condition::equals(attrs::LEASE_EXPIRES, AttributeValue::N(t.to_string())),
            None => Condition::AttributeMissing(attrs::LEASE_EXPIRES.into()),
        };
        let op = WriteOp::Update {
            key: job_key.clone(),
            actions: self.lease_actions(),
            condition: Some(condition),
        };
        match self.store.transact_write(vec![op]).await {
            Ok(_) => Ok(Claim::Claimed(claimed)),
            Err(StoreError::ConditionFailed { .. } | StoreError::TransactionConflict(_)) => {
                Ok(Claim::Held)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn lease_actions(&self) -> Vec<UpdateAction> {
        let expires = now_millis().saturating_add(self.config.lease.as_millis() as i64);
        vec![
            UpdateAction::Set(
                AttrPath::new([attrs::LEASE_OWNER]),
                AttributeValue::S(self.config.owner.clone()),
            ),
            UpdateAction::Set(
                AttrPath::new([attrs::LEASE_EXPIRES]),
                AttributeValue::N(expires.to_string()),
            ),
        ]
    }

    fn owns_lease(&self) -> Condition {
        Condition::equals(
            attrs::LEASE_OWNER,
            AttributeValue::S(self.config.owner.clone()),
        )
    }
}

enum Claim {
    Claimed(SweepJob),
    Held,
    NoJob,
}

/// One claimed run of a job.
struct Run<'a> {
    sweeper: &'a Sweeper,
    job_key: Key,
    /// When the job was created (unix ms).
    created: i64,
    batches: usize,
    /// Rounds in a row that read the same index rows as the round before.
    stalled: u32,
}

/// How many rounds without progress a sweep waits before leaving the job for later.
const MAX_STALLED_ROUNDS: u32 = 12;
const STALL_BASE: Duration = Duration::from_millis(50);
const STALL_CAP: Duration = Duration::from_secs(2);

impl Run<'_> {
    fn store(&self) -> &DynStore {
        &self.sweeper.store
    }

    /// Before each batch: stop if told to (crash tests), and renew the lease, stopping if it
    /// was lost to another instance.
    async fn next_batch(&mut self) -> Result<bool, RepoError> {
        if self
            .sweeper
            .config
            .stop_after_batches
            .is_some_and(|n| self.batches >= n)
        {
            return Ok(false);
        }
        self.batches += 1;
        let op = WriteOp::Update {
            key: self.job_key.clone(),
            actions: self.sweeper.lease_actions(),
            condition: Some(self.sweeper.owns_lease()),
        };
        match self.store().transact_write(vec![op]).await {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed { .. }) => {
                tracing::warn!(job = %self.job_key, "sweep lease lost to another instance");
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// One pass over what is left of the target's rows; `false` when interrupted.
    async fn passes(&mut self, target: &SweepTarget) -> Result<bool, RepoError> {
        match target {
            SweepTarget::Field { project, field } => self.field(project, field).await,
            SweepTarget::Project { project, .. } => self.project(project).await,
            SweepTarget::Issue { issue, .. } => self.issue_rows(std::slice::from_ref(issue)).await,
            SweepTarget::Options { project, field } => self.options(project, field).await,
            SweepTarget::View { project, view } => self.view(project, view).await,
        }
    }

    /// The source items of the issues whose index rows `rows` are (those still there).
    async fn issues_of(&self, rows: &[Item], project: &ProjectId) -> Result<Vec<Item>, RepoError> {
        let issue_keys: Vec<Key> = rows
            .iter()
            .filter_map(items::item_pk)
            .filter_map(|pk| IssueId::parse(pk).ok())
            .map(|issue| keys::issue(&issue, project))
            .collect();
        Ok(retry::batch_get_all(self.store().as_ref(), &issue_keys).await?)
    }

    /// Removes the rows in `keys` and the job row, in one transaction, if the lease is ours.
    async fn finish(&mut self, keys: Vec<Key>) -> Result<bool, RepoError> {
        let mut ops: Vec<WriteOp> = keys
            .into_iter()
            .map(|key| WriteOp::Delete {
                key,
                condition: None,
            })
            .collect();
        ops.push(WriteOp::Delete {
            key: self.job_key.clone(),
            condition: Some(self.sweeper.owns_lease()),
        });
        match self.store().transact_write(ops).await {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// A deleted field: every value row (from the field's `GSI1` partition) and its cell in
    /// the issue's `Values`, then the cells that have no value row (drift). The definition and
    /// lookup rows go last, with the job.
    async fn field(&mut self, project: &ProjectId, field: &FieldId) -> Result<bool, RepoError> {
        let cell = AttrPath::new([items::VALUES, field.as_str()]);
        // Value rows, one batch at a time, always from the start: each batch removes what it
        // read, so a restart simply continues.
        let mut previous = Vec::new();
        loop {
            let query = Query {
                limit: Some(self.sweeper.config.batch as u32),
                ..Query::partition(Index::Gsi1, keys::field_value_partition(field))
            };
            let rows = self.store().query(&query).await?.items;
            if rows.is_empty() {
                break;
            }
            let row_keys: Vec<Key> = rows.iter().filter_map(items::item_key).collect();
            if !self.wait_for_index(&row_keys, &mut previous).await || !self.next_batch().await? {
                return Ok(false);
            }
            let issues = self.issues_of(&rows, project).await?;
            let mut ops = Vec::with_capacity(rows.len() * 2);
            for issue in &issues {
                if cell.get(issue).is_some() {
                    if let Some(key) = items::item_key(issue) {
                        ops.push(remove_cell(key, &cell));
                    }
                }
            }
            ops.extend(row_keys.into_iter().map(|key| WriteOp::Delete {
                key,
                condition: None,
            }));
            self.write_batch(ops).await?;
        }
        // Cells without a value row (written by another tool, or drift): found by a filtered
        // read of the project's issues.
        let mut start = None;
        loop {
            let query = Query {
                limit: Some(500),
                start: start.take(),
                filter: Some(Filter::AttributeExists(cell.clone())),
                ..Query::partition(Index::Gsi1, keys::issues_by_num_partition(project))
            };
            let out = self.store().query(&query).await?;
            for chunk in out.items.chunks(self.sweeper.config.batch.max(1)) {
                if !self.next_batch().await? {
                    return Ok(false);
                }
                let ops = chunk
                    .iter()
                    .filter_map(items::item_key)
                    .map(|key| remove_cell(key, &cell))
                    .collect();
                self.write_batch(ops).await?;
            }
            match out.last_evaluated {
                Some(next) => start = Some(next),
                None => break,
            }
        }
        Ok(true)
    }

    /// A deleted project: the partitions of its issues (found through every `GSI1` partition
    /// that lists them, so index rows whose issue is already gone go too), then its fields.
    async fn project(&mut self, project: &ProjectId) -> Result<bool, RepoError> {
        for partition in [
            keys::issues_by_num_partition(project),
            keys::name_partition(project),
            keys::state_partition(project),
        ] {
            let mut previous = Vec::new();
            loop {
                let query = Query {
                    limit: Some(25),
                    ..Query::partition(Index::Gsi1, partition.clone())
                };
                let rows = self.store().query(&query).await?.items;
                if rows.is_empty() {
                    break;
                }
                // The rows read go by their own keys too, so a row whose partition is not an
                // issue id (written by another tool) cannot keep the sweep from ending.
                let row_keys: Vec<Key> = rows.iter().filter_map(items::item_key).collect();
                if !self.wait_for_index(&row_keys, &mut previous).await {
                    return Ok(false);
                }
                let mut doomed = row_keys;
                for pk in rows.iter().filter_map(items::item_pk) {
                    if IssueId::parse(pk).is_ok() {
                        doomed.extend(partition_keys(self.store(), pk, true).await?);
                    }
                }
                doomed.sort();
                doomed.dedup();
                if !self.delete_keys(&doomed).await? {
                    return Ok(false);
                }
            }
        }
        // The project's own partition: its field rows (and their lookup rows). The project
        // row itself goes last, with the job.
        let query = Query::partition(Index::Table, project.as_str());
        let rows = retry::query_all(self.store().as_ref(), &query).await?;
        let mut keys_to_delete = Vec::new();
        for row in &rows {
            let Some(key) = items::item_key(row) else {
                continue;
            };
            match items::item_type(row) {
                Some(items::types::CUSTOM_FIELD) => {
                    if let Ok(field) = FieldId::parse(&key.sk) {
                        keys_to_delete.push(keys::field_lookup(&field));
                    }
                    keys_to_delete.push(key);
                }
                // Saved views and their lookups go with the project (their index rows went
                // with the issues' partitions).
                Some(items::types::VIEW) => {
                    if let Ok(view) = crate::ids::ViewId::parse(&key.sk) {
                        keys_to_delete.push(keys::view_lookup(&view));
                    }
                    keys_to_delete.push(key);
                }
                _ => {}
            }
        }
        self.delete_keys(&keys_to_delete).await
    }

    /// Every row of the given issues' partitions.
    async fn issue_rows(&mut self, issues: &[IssueId]) -> Result<bool, RepoError> {
        let mut keys_to_delete = Vec::new();
        for issue in issues {
            keys_to_delete.extend(partition_keys(self.store(), issue.as_str(), true).await?);
        }
        self.delete_keys(&keys_to_delete).await
    }

    /// Deletes rows in transactions of up to 99 (the 100th checks the lease); renews the
    /// lease even when there is nothing to delete, so a slow round never lets it lapse.
    async fn delete_keys(&mut self, keys: &[Key]) -> Result<bool, RepoError> {
        if keys.is_empty() {
            return self.next_batch().await;
        }
        for chunk in keys.chunks(MAX_TRANSACT_WRITE - 1) {
            if !self.next_batch().await? {
                return Ok(false);
            }
            self.write_batch(deletes(chunk)).await?;
        }
        Ok(true)
    }

    /// Called with the keys each round read from `GSI1`. When they are the same as the round
    /// before, the deletes have not reached the index yet (it is eventually consistent on
    /// DynamoDB) or the rows resist deletion: wait, longer each time, and after a while give
    /// up (`false`), leaving the job for a later try instead of spinning.
    async fn wait_for_index(&mut self, rows: &[Key], previous: &mut Vec<Key>) -> bool {
        if rows != previous.as_slice() {
            self.stalled = 0;
            *previous = rows.to_vec();
            return true;
        }
        self.stalled += 1;
        if self.stalled > MAX_STALLED_ROUNDS {
            tracing::warn!(job = %self.job_key, "sweep makes no progress; leaving it for later");
            return false;
        }
        let delay = STALL_BASE
            .saturating_mul(1u32 << self.stalled.min(10))
            .min(STALL_CAP);
        // Background work waiting for the index to catch up, not synchronisation.
        tokio::time::sleep(delay).await;
        true
    }

    /// One batch, conditioned on still holding the lease; `false` when a condition failed (or
    /// the transaction met another) and nothing was written.
    async fn write_batch(&self, mut ops: Vec<WriteOp>) -> Result<bool, RepoError> {
        if ops.is_empty() {
            return Ok(true);
        }
        ops.push(WriteOp::ConditionCheck {
            key: self.job_key.clone(),
            condition: self.sweeper.owns_lease(),
        });
        match self.store().transact_write(ops).await {
            Ok(_) => Ok(true),
            // The issue changed between read and write (a concurrent edit, a delete): the next
            // round reads again. Losing the lease shows at the next renewal.
            Err(StoreError::ConditionFailed { .. } | StoreError::TransactionConflict(_)) => {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

fn remove_cell(issue: Key, cell: &AttrPath) -> WriteOp {
    WriteOp::Update {
        key: issue,
        actions: vec![UpdateAction::Remove(cell.clone())],
        condition: Some(Condition::Exists),
    }
}

fn deletes(keys: &[Key]) -> Vec<WriteOp> {
    keys.iter()
        .map(|key| WriteOp::Delete {
            key: key.clone(),
            condition: None,
        })
        .collect()
}

/// The keys of every row in a table partition (an issue's source and index rows).
pub(crate) async fn partition_keys(
    store: &DynStore,
    partition: &str,
    consistent: bool,
) -> Result<Vec<Key>, RepoError> {
    let query = Query {
        consistent,
        ..Query::partition(Index::Table, partition)
    };
    Ok(retry::query_all(store.as_ref(), &query)
        .await?
        .iter()
        .filter_map(items::item_key)
        .collect())
}

/// Runs every pending job (failures are logged by [`Sweeper::run_pending`]).
async fn run_all(sweeper: &Sweeper) {
    match sweeper.run_pending().await {
        Ok(outcomes) if !outcomes.is_empty() => {
            tracing::info!(jobs = outcomes.len(), ?outcomes, "ran pending sweeps")
        }
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "could not list pending sweeps"),
    }
}

/// The running gateway's sweeper: a background task that runs the sweeps mutations start,
/// one at a time, plus the jobs found at start-up.
#[derive(Clone)]
pub struct SweepHandle {
    tx: mpsc::UnboundedSender<SweepTarget>,
    pending: Arc<watch::Sender<usize>>,
    /// How many periodic rounds over all pending jobs have ended.
    rounds: Arc<watch::Sender<u64>>,
}

impl SweepHandle {
    /// Starts the background task. It first runs the jobs left by earlier processes, then the
    /// sweeps mutations queue, and every lease period all pending jobs again, so a crashed
    /// instance's work is taken over.
    pub fn spawn(sweeper: Sweeper) -> SweepHandle {
        let (tx, mut rx) = mpsc::unbounded_channel::<SweepTarget>();
        let pending = Arc::new(watch::Sender::new(1usize));
        let rounds = Arc::new(watch::Sender::new(0u64));
        let handle = SweepHandle {
            tx,
            pending: pending.clone(),
            rounds: rounds.clone(),
        };
        let lease = sweeper.config.lease;
        tokio::spawn(async move {
            run_all(&sweeper).await;
            pending.send_modify(|n| *n -= 1);
            // Jobs are looked for again every lease period: jobs held by another instance are
            // taken over once that instance's lease lapses, and jobs of instances that are gone
            // are found even if this one never restarts.
            let mut retry_at = tokio::time::Instant::now() + lease;
            loop {
                let target = tokio::select! {
                    target = rx.recv() => match target {
                        Some(target) => Some(target),
                        None => break,
                    },
                    () = tokio::time::sleep_until(retry_at) => None,
                };
                match target {
                    Some(target) => {
                        match sweeper.run(&target).await {
                            Ok(outcome) => {
                                tracing::info!(target = target.target_id(), ?outcome, "sweep ended")
                            }
                            // The job row stays: a later round (or another instance) resumes it.
                            Err(e) => {
                                tracing::error!(target = target.target_id(), error = %e, "sweep failed")
                            }
                        }
                        pending.send_modify(|n| *n -= 1);
                    }
                    None => {
                        run_all(&sweeper).await;
                        rounds.send_modify(|n| *n += 1);
                        retry_at = tokio::time::Instant::now() + lease;
                    }
                }
            }
        });
        handle
    }

    /// Queues a sweep.
    pub fn start(&self, target: SweepTarget) {
        self.pending.send_modify(|n| *n += 1);
        if self.tx.send(target).is_err() {
            // The task is gone (shutting down): the job row stays for the next start-up.
            self.pending.send_modify(|n| *n -= 1);
        }
    }

    /// Completes once every queued sweep (and the start-up resume) has ended.
    pub async fn wait_idle(&self) {
        let mut rx = self.pending.subscribe();
        // The sender lives in `self`, so the channel cannot close while waiting.
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// How many periodic rounds over all pending jobs have ended so far.
    pub fn rounds(&self) -> u64 {
        *self.rounds.borrow()
    }

    /// Completes once at least `n` periodic rounds have ended.
    pub async fn wait_rounds(&self, n: u64) {
        let mut rx = self.rounds.subscribe();
        let _ = rx.wait_for(|done| *done >= n).await;
    }
}
