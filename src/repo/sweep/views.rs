//! The sweep of a saved view: it fills the index being built from the project's issues, makes
//! it the serving one once every issue was read, and removes the rows and counters of retired
//! indexes (the ones replaced, or all of a deleted view's, whose rows go last).
//!
//! The build reads the issues in num order and writes, per batch and in one transaction, each
//! read issue's row (conditioned on the issue's `Version` as read and on the row's state as
//! read), the index's counter, and its progress on the view row (conditioned on the index being
//! built still being this one). Writers keep the building index too; a writer's row write is
//! conditioned on the row's state it planned from (see `writes::plan::build_guards`), so a
//! build and a writer racing on one issue cannot both count it: one of them fails and reads
//! again. A build resumes after the last num its progress names, so a killed build neither
//! repeats nor skips an issue.

use std::time::Duration;

use super::{RepoError, Run};
use crate::ids::{ProjectId, ViewId};
use crate::items::{self, attrs};
use crate::keys;
use crate::model::{BuildProgress, Issue, ProjectData, View, ViewIndex};
use crate::paging::Limits;
use crate::repo::{now_millis, Repo};
use crate::store::{
    retry, AttrPath, AttributeValue, Condition, Index, Key, Query, SortCondition, UpdateAction,
    WriteOp, MAX_TRANSACT_WRITE,
};
use crate::view::CheckedIndex;

/// Issues per build transaction: two operations each (the issue's check and its row), beside
/// the counter, the progress and the lease check.
const BUILD_BATCH: usize = (MAX_TRANSACT_WRITE - 3) / 2;

/// How many times a build batch is planned again after losing to a concurrent writer before
/// the run leaves the job for later.
const BUILD_ATTEMPTS: u32 = 50;
const BUILD_BACKOFF_BASE: Duration = Duration::from_millis(5);
const BUILD_BACKOFF_CAP: Duration = Duration::from_millis(500);

impl Run<'_> {
    /// The view's pending work: its building index filled and swapped in, then its retired
    /// indexes removed; for a deleted view every index, then the view's own rows.
    pub(super) async fn view(
        &mut self,
        project: &ProjectId,
        view: &ViewId,
    ) -> Result<bool, RepoError> {
        let Some(definition) = self.view_row(project, view).await? else {
            return Ok(true);
        };
        if definition.deleted {
            // Rows written just before the tombstone reach `GSI1` within the settle delay.
            self.settle_after(self.created).await;
            let generations: Vec<u32> = definition
                .indexes()
                .map(|i| i.generation)
                .chain(definition.retired.iter().copied())
                .collect();
            for generation in generations {
                if !self.retire(project, view, generation).await? {
                    return Ok(false);
                }
            }
            return self
                .delete_keys(&[keys::view(project, view), keys::view_lookup(view)])
                .await;
        }
        // Retired generations go once the change that retired them has settled in `GSI1`: the
        // edit that put this job, or the swap this run makes.
        let mut retired_at = self.created;
        if definition.building.is_some() {
            if !self.build(project, view).await? {
                return Ok(false);
            }
            retired_at = now_millis();
        }
        // The retired list as it is now (the swap just added the index it replaced).
        let Some(definition) = self.view_row(project, view).await? else {
            return Ok(true);
        };
        if !definition.retired.is_empty() {
            self.settle_after(retired_at).await;
        }
        for generation in definition.retired.clone() {
            if !self.retire(project, view, generation).await? {
                return Ok(false);
            }
        }
        self.forget_retired(project, &definition).await
    }

    /// The view's row as the table holds it now.
    async fn view_row(
        &self,
        project: &ProjectId,
        view: &ViewId,
    ) -> Result<Option<View>, RepoError> {
        let item = self
            .store()
            .get_consistent(&keys::view(project, view))
            .await?
            .item;
        Ok(item.map(items::decode_view_owned).transpose()?)
    }

    /// The project and the view as they are now, strongly consistent; `None` when either is
    /// gone (a deleted project's sweep removes everything) or the view builds nothing.
    async fn build_state(
        &self,
        project: &ProjectId,
        view: &ViewId,
    ) -> Result<Option<(ProjectData, View, ViewIndex)>, RepoError> {
        let repo = Repo::new(self.store().clone(), Limits::default());
        let Some(data) = repo.load_project(project, true).await? else {
            return Ok(None);
        };
        if data.project.deleted {
            return Ok(None);
        }
        let Some(found) = data.views.iter().find(|v| &v.id == view).cloned() else {
            return Ok(None);
        };
        let Some(index) = found.building.clone() else {
            return Ok(None);
        };
        Ok(Some((data, found, index)))
    }

    /// Fills the view's building index from the project's issues, batch by batch, then makes
    /// it the serving one. `false` when interrupted (the job stays, and resumes).
    async fn build(&mut self, project: &ProjectId, view: &ViewId) -> Result<bool, RepoError> {
        // Issues written before the view was created reached the table before its job did;
        // `GSI1` (eventually consistent on DynamoDB) lists them once it settled. Later writes
        // keep the index themselves.
        self.settle_after(self.created).await;
        let batch = self.sweeper.config.batch.clamp(1, BUILD_BATCH);
        let mut attempts = 0u32;
        // The project and the view as read, kept from batch to batch (each commit checks them
        // unchanged) and read again only after a batch that failed.
        let mut state = None;
        loop {
            let (data, definition, index, checked, progress) = match state.take() {
                Some(state) => state,
                None => {
                    let Some((data, definition, index)) = self.build_state(project, view).await?
                    else {
                        return Ok(true);
                    };
                    let checked = match CheckedIndex::check(&definition, &index, &data) {
                        Ok(checked) => checked,
                        Err(e) => {
                            // A field it names was deleted: that deletion gives the view a new
                            // index (and puts this job again), so this run stops here.
                            tracing::warn!(view = %view, error = %e, "view index no longer checks");
                            return Ok(false);
                        }
                    };
                    // A SELECT field whose options sweep is still re-keying or clearing cells
                    // would give rows its sweep then changes under the index: the build waits
                    // for it (the options job, queued first, normally ran already).
                    if data
                        .fields
                        .iter()
                        .any(|f| f.reindexing() && crate::view::names(&index, &f.id))
                    {
                        tracing::info!(view = %view, "view build waits for an options sweep");
                        return Ok(false);
                    }
                    let progress = definition.built.unwrap_or_default();
                    (data, definition, index, checked, progress)
                }
            };
            if !self.next_batch().await? {
                return Ok(false);
            }
            let query = Query {
                limit: Some(batch as u32),
                sort: SortCondition::Gt(keys::issue_sort(progress.through)),
                ..Query::partition(Index::Gsi1, keys::issues_by_num_partition(project))
            };
            let found = self.store().query(&query).await?.items;
            let issues: Vec<Issue> = found
                .into_iter()
                .filter(|item| items::item_type(item) == Some(items::types::ISSUE))
                .map(items::decode_issue)
                .collect::<Result<_, _>>()?;
            let ops = if issues.is_empty() {
                swap_ops(&data, &definition, &index)
            } else {
                self.build_ops(&data, &checked, &index, progress, &issues)
                    .await?
            };
            if self.write_batch(ops).await? {
                attempts = 0;
                let Some(last) = issues.last() else {
                    return Ok(true);
                };
                let progress = BuildProgress {
                    through: last.num,
                    scanned: progress.scanned + issues.len() as u64,
                };
                state = Some((data, definition, index, checked, progress));
                continue;
            }
            // A writer changed an issue (or the project, or the view) since it was read: plan
            // the batch again from what the table holds now.
            attempts += 1;
            if attempts >= BUILD_ATTEMPTS {
                tracing::warn!(view = %view, "view build keeps losing to writers; leaving it for later");
                return Ok(false);
            }
            let ceiling = BUILD_BACKOFF_BASE
                .saturating_mul(1u32 << attempts.min(10))
                .min(BUILD_BACKOFF_CAP);
            let delay = rand::Rng::random_range(&mut rand::rng(), Duration::ZERO..=ceiling);
            // Backoff under contention, not synchronisation.
            tokio::time::sleep(delay).await;
        }
    }

    /// One build batch: each issue's row as the index derives it, where it differs from the
    /// row stored, conditioned on the issue's version and the row as read; the counter; the
    /// progress.
    async fn build_ops(
        &self,
        data: &ProjectData,
        checked: &CheckedIndex,
        index: &ViewIndex,
        progress: BuildProgress,
        issues: &[Issue],
    ) -> Result<Vec<WriteOp>, RepoError> {
        let row_keys: Vec<Key> = issues.iter().map(|i| checked.row_key(&i.id)).collect();
        let stored = retry::batch_get_all(self.store().as_ref(), &row_keys).await?;
        let stored_sort = |key: &Key| -> Option<&AttributeValue> {
            stored
                .iter()
                .find(|row| items::item_key(row).as_ref() == Some(key))
                .and_then(|row| row.get(attrs::GSI1SK))
        };
        let mut ops = Vec::with_capacity(issues.len() * 2 + 2);
        let mut delta = 0i64;
        for (issue, key) in issues.iter().zip(&row_keys) {
            let derived = checked.row(issue);
            let stored = stored_sort(key);
            let op = match (derived, stored) {
                (Some(row), None) => {
                    delta += 1;
                    WriteOp::Put {
                        item: row,
                        condition: Some(Condition::NotExists),
                    }
                }
                (Some(row), Some(sort)) if row.get(attrs::GSI1SK) != Some(sort) => WriteOp::Put {
                    item: row,
                    condition: Some(Condition::equals(attrs::GSI1SK, sort.clone())),
                },
                (None, Some(sort)) => {
                    delta -= 1;
                    WriteOp::Delete {
                        key: key.clone(),
                        condition: Some(Condition::equals(attrs::GSI1SK, sort.clone())),
                    }
                }
                _ => continue,
            };
            ops.push(WriteOp::ConditionCheck {
                key: keys::issue(&issue.id, &issue.project),
                condition: Condition::equals(attrs::VERSION, items::number(issue.version)),
            });
            ops.push(op);
        }
        let project = &data.project;
        let mut counter = vec![UpdateAction::Add(
            AttrPath::new([items::matched_attr(&checked.partition())]),
            delta,
        )];
        if delta == 0 {
            counter.clear();
        }
        // The project's fields (and views) are still the ones the rows were derived with.
        ops.push(project_check(data, counter));
        let last = issues.last().map_or(progress.through, |i| i.num);
        ops.push(WriteOp::Update {
            key: keys::view(&project.id, &checked.view),
            actions: vec![
                set(attrs::BUILT_THROUGH, items::number(u64::from(last))),
                set(
                    attrs::SCANNED,
                    items::number(progress.scanned + issues.len() as u64),
                ),
            ],
            condition: Some(building(index)),
        });
        Ok(ops)
    }

    /// Removes the rows of one generation of a view's index, then its counter.
    async fn retire(
        &mut self,
        project: &ProjectId,
        view: &ViewId,
        generation: u32,
    ) -> Result<bool, RepoError> {
        let partition = keys::view_partition(view, generation);
        let mut previous = Vec::new();
        loop {
            let query = Query {
                limit: Some((MAX_TRANSACT_WRITE - 1) as u32),
                ..Query::partition(Index::Gsi1, partition.clone())
            };
            let rows = self.store().query(&query).await?.items;
            if rows.is_empty() {
                break;
            }
            let row_keys: Vec<Key> = rows.iter().filter_map(items::item_key).collect();
            if !self.wait_for_index(&row_keys, &mut previous).await
                || !self.delete_keys(&row_keys).await?
            {
                return Ok(false);
            }
        }
        let Some(tenant) = self.project_tenant(project).await? else {
            return Ok(true);
        };
        let op = WriteOp::Update {
            key: keys::project(project, &tenant),
            actions: vec![UpdateAction::Remove(AttrPath::new([items::matched_attr(
                &partition,
            )]))],
            condition: Some(Condition::Exists),
        };
        self.write_batch(vec![op]).await
    }

    /// Drops the generations this run removed from the view's retired list, if the list is
    /// still the one read (a swap or an edit meanwhile retired another, which the next pass
    /// removes).
    async fn forget_retired(
        &mut self,
        project: &ProjectId,
        definition: &View,
    ) -> Result<bool, RepoError> {
        if definition.retired.is_empty() {
            return Ok(true);
        }
        let op = WriteOp::Update {
            key: keys::view(project, &definition.id),
            actions: vec![UpdateAction::Remove(AttrPath::new([attrs::RETIRED]))],
            condition: Some(Condition::equals(
                attrs::RETIRED,
                AttributeValue::S(items::retired_json(&definition.retired)),
            )),
        };
        if self.write_batch(vec![op]).await? {
            return Ok(true);
        }
        // The list changed: the job was put again with it, and its next run removes the rest.
        Ok(false)
    }

    /// Waits until the settle delay after `at` (unix ms) has passed.
    async fn settle_after(&self, at: i64) {
        let wait = at.saturating_add(self.settle_ms()) - now_millis();
        if wait > 0 {
            // Background work waiting out the index's propagation delay, not synchronisation.
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
    }

    fn settle_ms(&self) -> i64 {
        i64::try_from(self.sweeper.config.settle.as_millis()).unwrap_or(i64::MAX)
    }
}

/// The swap once every issue was read: the built index serves, the one it replaces (if any)
/// is retired, and the project's fields version moves on, so a writer that planned with the
/// old set of indexes fails and plans again rather than write rows of a retired one.
fn swap_ops(data: &ProjectData, view: &View, index: &ViewIndex) -> Vec<WriteOp> {
    let mut retired = view.retired.clone();
    retired.extend(view.serving.as_ref().map(|s| s.generation));
    let project = &data.project;
    let mut actions = vec![
        set(attrs::SERVING, AttributeValue::S(items::index_json(index))),
        UpdateAction::Remove(AttrPath::new([attrs::BUILDING])),
        UpdateAction::Remove(AttrPath::new([attrs::BUILT_THROUGH])),
        UpdateAction::Remove(AttrPath::new([attrs::SCANNED])),
    ];
    if !retired.is_empty() {
        actions.push(set(
            attrs::RETIRED,
            AttributeValue::S(items::retired_json(&retired)),
        ));
    }
    vec![
        project_check(
            data,
            vec![set(
                attrs::FIELDS_VERSION,
                items::number(project.fields_version + 1),
            )],
        ),
        WriteOp::Update {
            key: keys::view(&project.id, &view.id),
            actions,
            condition: Some(building(index)),
        },
    ]
}

/// The view row still builds `index`.
fn building(index: &ViewIndex) -> Condition {
    Condition::equals(attrs::BUILDING, AttributeValue::S(items::index_json(index)))
}

/// The project row is live and its fields version is the one read; with `actions`, an update
/// under that condition.
fn project_check(data: &ProjectData, actions: Vec<UpdateAction>) -> WriteOp {
    let project = &data.project;
    let key = keys::project(&project.id, &project.tenant);
    let condition = crate::repo::project_unchanged(project);
    if actions.is_empty() {
        WriteOp::ConditionCheck { key, condition }
    } else {
        WriteOp::Update {
            key,
            actions,
            condition: Some(condition),
        }
    }
}

fn set(name: &str, value: AttributeValue) -> UpdateAction {
    UpdateAction::Set(AttrPath::new([name]), value)
}
