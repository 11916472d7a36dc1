//! The options sweep of a SELECT field: the index rows of a moved option's old keys get its
//! new key, the cells of a removed option are cleared and counted off, and rows that
//! disagree with their issue are re-derived; then the field forgets what was pending.

use super::{RepoError, Run};
use crate::ids::{FieldId, ProjectId, TenantId};
use crate::items::{self, attrs};
use crate::keys;
use crate::model::CustomField;
use crate::store::{
    AttrPath, AttributeValue, Condition, Index, Item, Key, Query, SortCondition, StoreError,
    UpdateAction, WriteOp,
};

impl Run<'_> {
    /// The field as the table holds it now; `None` once it is gone or deleted (its deletion's
    /// own sweep then removes every cell).
    async fn live_field(
        &self,
        project: &ProjectId,
        field: &FieldId,
    ) -> Result<Option<CustomField>, RepoError> {
        let Some(item) = self
            .store()
            .get_consistent(&keys::field(project, field))
            .await?
            .item
        else {
            return Ok(None);
        };
        let field = items::decode_field(&item)?;
        Ok((!field.deleted).then_some(field))
    }

    /// A SELECT field's pending option work: the index rows of a moved option's old keys get
    /// its new key, and the cells of a removed option are cleared, each counted off its
    /// field's counter.
    pub(super) async fn options(
        &mut self,
        project: &ProjectId,
        field: &FieldId,
    ) -> Result<bool, RepoError> {
        let Some(definition) = self.live_field(project, field).await? else {
            return Ok(true);
        };
        // Cleared cells are counted off the project row, whose key needs the tenant.
        let tenant = self.project_tenant(project).await?;
        let keyed = OptionRows {
            project,
            tenant: tenant.as_ref(),
            field: &definition,
        };
        for option in &definition.options {
            let pending = option
                .stale_keys
                .iter()
                .chain(option.removed.then_some(&option.key));
            for key in pending {
                if !self.option_rows(&keyed, key).await? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The value rows under the option key `from` (one that moved away, or a removed
    /// option's), until none is left. Each row is dealt with by what its `Value` says:
    /// - it names a live option: its sort string gets that option's current key;
    /// - it names a removed option, and its issue holds that option: the cell, the row and
    ///   one off the field's counter go;
    /// - anything else (the issue is gone, holds another value, or the row names no option):
    ///   the row is the issue's to derive, so it gets its issue's current value's key, or goes.
    ///
    /// Every write is conditioned on what it read (the row's `GSI1SK`, the issue's `Version`),
    /// so a concurrent edit wins and its row is read again, or no longer found. A batch whose
    /// transaction fails is retried one row at a time, so one row that cannot be written does
    /// not hold up the others.
    async fn option_rows(&mut self, keyed: &OptionRows<'_>, from: &str) -> Result<bool, RepoError> {
        let field = keyed.field;
        let from_part = keys::option_part(from);
        let mut previous = Vec::new();
        loop {
            let query = Query {
                limit: Some(self.sweeper.config.batch as u32),
                sort: SortCondition::BeginsWith(format!("{from_part}{}", keys::SORT_SEPARATOR)),
                ..Query::partition(Index::Gsi1, keys::field_value_partition(&field.id))
            };
            let rows = self.store().query(&query).await?.items;
            if rows.is_empty() {
                return Ok(true);
            }
            let row_keys: Vec<Key> = rows.iter().filter_map(items::item_key).collect();
            if !self.wait_for_index(&row_keys, &mut previous).await || !self.next_batch().await? {
                return Ok(false);
            }
            let issues = self.issues_of(&rows, keyed.project).await?;
            let cell = AttrPath::new([items::VALUES, field.id.as_str()]);
            let mut groups: Vec<(Vec<WriteOp>, i64)> = Vec::with_capacity(rows.len());
            for row in &rows {
                let (Some(key), Some(AttributeValue::S(sort))) =
                    (items::item_key(row), row.get(attrs::GSI1SK))
                else {
                    continue;
                };
                let unchanged = Condition::equals(attrs::GSI1SK, AttributeValue::S(sort.clone()));
                let issue = issues
                    .iter()
                    .find(|i| items::item_pk(i) == Some(key.pk.as_str()));
                let value = row.get(items::VALUE);
                // The option the row names, when its issue's cell says the same.
                let agreed = issue
                    .and_then(|i| cell.get(i))
                    .filter(|held| Some(*held) == value)
                    .and_then(|held| match held {
                        AttributeValue::S(id) => field.option(id),
                        _ => None,
                    });
                let group = match (issue, agreed) {
                    (Some(_), Some(option)) if !option.removed => {
                        rekey(key, sort, &from_part, &option.key, unchanged)
                    }
                    (Some(issue), Some(_)) => match clear_cell(issue, &cell, key, unchanged) {
                        Some(ops) => (ops, 1),
                        None => continue,
                    },
                    // The row disagrees with its issue, or has none: it becomes the row the
                    // issue's own cell derives (the writers' function), or goes.
                    (issue, _) => {
                        let derived = issue.and_then(|i| derived_row(i, field, &key));
                        let op = match derived {
                            Some(item) => WriteOp::Put {
                                item,
                                condition: Some(unchanged),
                            },
                            None => WriteOp::Delete {
                                key,
                                condition: Some(unchanged),
                            },
                        };
                        (vec![op], 0)
                    }
                };
                groups.push(group);
            }
            self.write_groups(keyed, groups).await?;
        }
    }

    /// Writes each group of operations (with the number of cells it clears), all in one
    /// transaction, or one group at a time when that fails.
    async fn write_groups(
        &self,
        keyed: &OptionRows<'_>,
        groups: Vec<(Vec<WriteOp>, i64)>,
    ) -> Result<(), RepoError> {
        let batch = |groups: &[(Vec<WriteOp>, i64)]| {
            let mut ops: Vec<WriteOp> = groups.iter().flat_map(|(ops, _)| ops.clone()).collect();
            let cleared: i64 = groups.iter().map(|(_, n)| n).sum();
            ops.extend(keyed.count_off(cleared));
            ops
        };
        if groups.is_empty() || self.write_batch(batch(&groups)).await? {
            return Ok(());
        }
        for group in groups.chunks(1) {
            self.write_batch(batch(group)).await?;
        }
        Ok(())
    }

    /// The tenant of `project`, from its lookup-free project row: the project partition's
    /// first page (the project row sorts among its field rows by its `SK`, the tenant id).
    pub(super) async fn project_tenant(
        &self,
        project: &ProjectId,
    ) -> Result<Option<TenantId>, RepoError> {
        let query = Query {
            consistent: true,
            sort: SortCondition::BeginsWith("tenant-".into()),
            ..Query::partition(Index::Table, project.as_str())
        };
        let rows = self.store().query(&query).await?.items;
        Ok(rows
            .iter()
            .find(|row| items::item_type(row) == Some(items::types::PROJECT))
            .and_then(items::item_key)
            .and_then(|key| TenantId::parse(&key.sk).ok()))
    }

    /// Once every pending option's rows are done: the field drops its old keys and removed
    /// options, if it is still as this run read it and the job is still this run's (an edit
    /// that added work put the job again, which took the lease away).
    pub(super) async fn forget_pending(
        &mut self,
        project: &ProjectId,
        field: &FieldId,
    ) -> Result<Forget, RepoError> {
        let Some(definition) = self.live_field(project, field).await? else {
            return Ok(Forget::Done);
        };
        if !definition.reindexing() {
            return Ok(Forget::Done);
        }
        let mut settled = definition.clone();
        settled.options.retain(|o| !o.removed);
        for option in &mut settled.options {
            option.stale_keys.clear();
        }
        settled.version += 1;
        let [row, _] = items::field_items(&settled);
        let ops = vec![
            WriteOp::Put {
                item: row,
                condition: Some(Condition::equals(
                    attrs::VERSION,
                    items::number(definition.version),
                )),
            },
            WriteOp::ConditionCheck {
                key: self.job_key.clone(),
                condition: self.sweeper.owns_lease(),
            },
        ];
        match self.store().transact_write(ops).await {
            Ok(_) => Ok(Forget::Done),
            Err(StoreError::ConditionFailed { .. } | StoreError::TransactionConflict(_)) => {
                let job = self.store().get_consistent(&self.job_key).await?.item;
                let ours = job.as_ref().and_then(|j| j.get(attrs::LEASE_OWNER))
                    == Some(&AttributeValue::S(self.sweeper.config.owner.clone()));
                Ok(if ours {
                    Forget::Changed
                } else {
                    Forget::LostLease
                })
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// How many times a run looks again when the field changed under its options sweep.
pub(super) const FORGET_ATTEMPTS: usize = 3;

/// How forgetting a field's pending option work ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Forget {
    Done,
    /// The field changed since it was read (the lease is still this run's): look again.
    Changed,
    /// Another run holds the job now.
    LostLease,
}

/// What an options sweep writes with: the field as it read it and where its counter lives.
struct OptionRows<'a> {
    project: &'a ProjectId,
    tenant: Option<&'a TenantId>,
    field: &'a CustomField,
}

impl OptionRows<'_> {
    /// The project update that takes `n` cleared cells off the field's counter; none for none,
    /// or when the project row is gone (its own sweep removes everything).
    fn count_off(&self, n: i64) -> Option<WriteOp> {
        let tenant = self.tenant.filter(|_| n > 0)?;
        Some(WriteOp::Update {
            key: keys::project(self.project, tenant),
            actions: vec![UpdateAction::Add(
                AttrPath::new([items::filled_attr(&self.field.id)]),
                -n,
            )],
            condition: Some(Condition::Exists),
        })
    }
}

/// A value row's new sort string under option key `to` (it was under `from_part`), if it
/// still has the sort string `unchanged` names; no cell is cleared.
fn rekey(
    key: Key,
    sort: &str,
    from_part: &str,
    to: &str,
    unchanged: Condition,
) -> (Vec<WriteOp>, i64) {
    let Some(new_sort) = keys::rekeyed_sort(sort, from_part, &keys::option_part(to)) else {
        return (Vec::new(), 0);
    };
    let op = WriteOp::Update {
        key,
        actions: vec![UpdateAction::Set(
            AttrPath::new([attrs::GSI1SK]),
            AttributeValue::S(new_sort),
        )],
        condition: Some(unchanged),
    };
    (vec![op], 0)
}

/// Clearing a removed option's cell: the cell goes from the issue (whose version moves on,
/// conditioned on the one read) and its value row goes (conditioned on its sort string).
fn clear_cell(
    issue: &Item,
    cell: &AttrPath,
    row: Key,
    unchanged: Condition,
) -> Option<Vec<WriteOp>> {
    let key = items::item_key(issue)?;
    let version = issue.get(attrs::VERSION)?;
    Some(vec![
        WriteOp::Update {
            key,
            actions: vec![
                UpdateAction::Remove(cell.clone()),
                UpdateAction::Set(AttrPath::new([attrs::VERSION]), version_after(version)),
            ],
            condition: Some(Condition::equals(attrs::VERSION, version.clone())),
        },
        WriteOp::Delete {
            key: row,
            condition: Some(unchanged),
        },
    ])
}

/// The value row of `field` that `issue` (a source item) derives, if it is the row `key` and
/// the issue's cell is a value of the field.
fn derived_row(issue: &Item, field: &CustomField, key: &Key) -> Option<Item> {
    let mut issue = items::decode_issue(issue.clone()).ok()?;
    issue.values.retain(|id, _| id == &field.id);
    items::issue_items(&issue, std::slice::from_ref(field))
        .ok()?
        .into_iter()
        .find(|row| items::item_key(row).as_ref() == Some(key))
}

/// The version after `version` (a stored `N`).
fn version_after(version: &AttributeValue) -> AttributeValue {
    let next = match version {
        AttributeValue::N(n) => n.parse::<u64>().map_or(1, |v| v.saturating_add(1)),
        _ => 1,
    };
    items::number(next)
}
