//! The write layer: every mutation a grid makes, each one validated before anything is sent
//! and then carried out as **one** TransactWriteItems call (one redb write transaction on the
//! embedded store), so a source row and every index row derived from it change together or
//! not at all.
//!
//! Each mutation is planned from a strongly consistent read: the plan is the list of
//! operations, each conditioned on the state it was planned from (a version, the project's
//! `NextIssueNum`, the absence of a tombstone). When another writer got there first the
//! transaction fails as a whole; without `expectedVersion` the plan is made again after a
//! bounded, jittered backoff, with it the client gets `CONFLICT`. Index rows come from
//! [`items::issue_items`] and the changes from [`items::diff_rows`], the same functions the
//! seeder, `verify` and `reindex` use.
//!
//! This file holds the mutations themselves; `validate` checks inputs, `plan` builds the
//! conditioned operations, and `commit` runs them (idempotency, retries).

mod commit;
mod plan;
mod validate;
mod views;

use views::FieldChange;
pub use views::{ViewChange, MAX_VIEW_COLUMNS};

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use commit::RetryPolicy;
use plan::{
    build_guards, bump_fields_version, count_actions, derive, field_unchanged, issue_plan, new_job,
    project_op, project_unchanged, put_new, set, view_count_actions, view_row_condition,
};
use validate::{
    apply_cells, check_expected, check_fits, parse_cell_ids, valid_name, valid_position,
};

use super::now_secs;
use super::sweep::SweepHandle;
use super::{Repo, RepoError};
use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::items::{self, attrs, SweepTarget};
use crate::keys;
use crate::model::{
    CustomField, FieldType, Issue, IssueCounts, IssueState, Project, ProjectData, Tenant,
};
use crate::options::{self, OptionInput};
use crate::store::{
    AttrPath, AttributeValue, Condition, DynStore, Item, Key, StoreError, UpdateAction, WriteOp,
    MAX_TRANSACT_WRITE,
};
use crate::view;

/// The most custom fields one project may have.
pub const MAX_FIELDS: usize = 200;
/// The longest name (tenant, project, field, issue), in characters after trimming.
pub const MAX_NAME_CHARS: usize = 500;
/// The longest TEXT value, in characters.
pub const MAX_TEXT_CHARS: usize = 10_000;
/// The longest `clientMutationId`, in bytes.
pub const MAX_CLIENT_MUTATION_ID_BYTES: usize = 200;
/// How long a `clientMutationId` makes a retry return the first result.
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(10 * 60);

/// Why a mutation did not apply. Each variant is one client-facing code.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// The input is wrong; `field` names the input field, the message says how.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// The entity to change does not exist (or is being deleted).
    #[error("{0}")]
    NotFound(String),
    /// The data changed under the write: a stale `expectedVersion`, or contention that
    /// outlasted the retries (`retryable`).
    #[error("{message}")]
    Conflict { message: String, retryable: bool },
}

impl From<StoreError> for WriteError {
    fn from(e: StoreError) -> Self {
        WriteError::Repo(RepoError::Store(e))
    }
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> WriteError {
    WriteError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// What a mutation wrote, for its payload.
#[derive(Clone, Debug)]
pub struct Written {
    /// The id of the node written, or deleted.
    pub id: String,
    /// Whether this is the recorded result of an earlier call with the same
    /// `clientMutationId` (nothing was written this time).
    pub replayed: bool,
    /// The project and fields the write was planned and checked against (issue writes only):
    /// the transaction's `FieldsVersion` check proves the fields were still these at commit.
    pub project: Option<ProjectData>,
}

impl Written {
    fn replayed(id: String) -> Self {
        Written {
            id,
            replayed: true,
            project: None,
        }
    }
}

/// A mutation a request committed: its name (`updateIssue`) and the node it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub mutation: &'static str,
    pub id: String,
}

/// The mutations one request committed, in the order they committed. Whoever answers the
/// request reads it, so that an answer that fails after a write (a later mutation refused, the
/// call budget spent, the time up) still says exactly what was applied.
#[derive(Clone, Debug, Default)]
pub struct AppliedLog(Arc<Mutex<Vec<Applied>>>);

impl AppliedLog {
    fn push(&self, applied: Applied) {
        self.lock().push(applied);
    }

    /// What was committed so far.
    pub fn entries(&self) -> Vec<Applied> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Applied>> {
        // Entries are pushed whole, so a panicking holder leaves the list usable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A planned mutation: the operations and what they produce.
struct Plan {
    ops: Vec<WriteOp>,
    /// The id of the node written or deleted.
    result: String,
    /// The operation carrying the client's `expectedVersion`, if one was given: its failure
    /// is the client's conflict, not contention to retry.
    guarded: Option<usize>,
    /// The sweeps to start once the transaction committed.
    sweep: Vec<SweepTarget>,
    /// See [`Written::project`].
    project: Option<ProjectData>,
}

impl Plan {
    fn new(ops: Vec<WriteOp>, result: impl Into<String>) -> Self {
        Plan {
            ops,
            result: result.into(),
            guarded: None,
            sweep: Vec::new(),
            project: None,
        }
    }
}

/// Counters of write contention, shared by every request of a gateway.
#[derive(Debug, Default)]
pub struct WriteStats {
    /// Transactions that lost to a concurrent writer and were planned again.
    pub retries: AtomicU64,
    /// Mutations that ended in `CONFLICT` (stale version, or retries exhausted).
    pub conflicts: AtomicU64,
}

/// The write layer over one (per-request, metered) store.
#[derive(Clone)]
pub struct Writes {
    repo: Repo,
    retry: RetryPolicy,
    sweeps: Option<SweepHandle>,
    stats: Arc<WriteStats>,
    applied: AppliedLog,
}

/// A custom field value as a client sends it: `None` clears the cell.
pub type CellInput = (String, Option<String>);

impl Writes {
    pub fn new(repo: Repo, sweeps: Option<SweepHandle>) -> Self {
        Writes {
            repo,
            retry: RetryPolicy::default(),
            sweeps,
            stats: Arc::default(),
            applied: AppliedLog::default(),
        }
    }

    /// Records every committed mutation in `log` (the request's).
    pub fn with_applied(mut self, log: AppliedLog) -> Self {
        self.applied = log;
        self
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    pub fn with_stats(mut self, stats: Arc<WriteStats>) -> Self {
        self.stats = stats;
        self
    }

    fn store(&self) -> &DynStore {
        self.repo.store()
    }

    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    // -----------------------------------------------------------------------------------------
    // The mutations.

    pub async fn create_tenant(
        &self,
        client_id: Option<&str>,
        name: &str,
    ) -> Result<Written, WriteError> {
        let name = valid_name("name", name)?;
        let name = &name;
        self.execute(client_id, "createTenant", &(name,), move || async move {
            let tenant = Tenant {
                id: TenantId::generate(),
                name: name.clone(),
            };
            // The tenant and its directory row (what `Query.tenants` lists) appear together.
            let [item, directory] = items::tenant_items(&tenant);
            Ok(Plan::new(
                vec![put_new(item), put_new(directory)],
                tenant.id.to_string(),
            ))
        })
        .await
    }

    pub async fn update_tenant(
        &self,
        client_id: Option<&str>,
        id: &str,
        name: &str,
    ) -> Result<Written, WriteError> {
        let id = TenantId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let name = valid_name("name", name)?;
        let (id, name) = (&id, &name);
        self.execute(client_id, "updateTenant", &(id, name), move || async move {
            let current = self.tenant(id).await?;
            if current.name == *name {
                return Ok(Plan::new(Vec::new(), id.to_string()));
            }
            let renamed = Tenant {
                id: id.clone(),
                name: name.clone(),
            };
            let [_, directory] = items::tenant_items(&renamed);
            let ops = vec![
                // Conditioned on the name as read: a rename that raced this one is planned
                // again, so the tenant and its directory row always carry the same name.
                WriteOp::Update {
                    key: keys::tenant(id),
                    actions: vec![set(attrs::NAME, AttributeValue::S(name.clone()))],
                    condition: Some(Condition::equals(
                        attrs::NAME,
                        AttributeValue::S(current.name.clone()),
                    )),
                },
                // The directory row moves to the new name's place. Put whole, without a
                // condition of its own (the tenant's update guards the transaction), so a
                // tenant written before the directory existed gets its row by its next rename.
                WriteOp::Put {
                    item: directory,
                    condition: None,
                },
            ];
            Ok(Plan::new(ops, id.to_string()))
        })
        .await
    }

    pub async fn create_project(
        &self,
        client_id: Option<&str>,
        tenant: &str,
        name: &str,
    ) -> Result<Written, WriteError> {
        let tenant = TenantId::parse(tenant).map_err(|e| invalid("tenantId", e.to_string()))?;
        let name = valid_name("name", name)?;
        let (tenant, name) = (&tenant, &name);
        self.execute(
            client_id,
            "createProject",
            &(tenant, name),
            move || async move {
                self.tenant(tenant).await?;
                let project = Project {
                    id: ProjectId::generate(),
                    tenant: tenant.clone(),
                    name: name.clone(),
                    next_issue_num: 1,
                    version: 1,
                    fields_version: 0,
                    deleted: false,
                    counts: Some(IssueCounts::default()),
                };
                let ops = vec![
                    WriteOp::ConditionCheck {
                        key: keys::tenant(tenant),
                        condition: Condition::Exists,
                    },
                    put_new(items::project_item(&project)),
                ];
                Ok(Plan::new(ops, project.id.to_string()))
            },
        )
        .await
    }

    pub async fn update_project(
        &self,
        client_id: Option<&str>,
        id: &str,
        name: Option<&str>,
        expected_version: Option<i64>,
    ) -> Result<Written, WriteError> {
        let id = ProjectId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let name = name.map(|n| valid_name("name", n)).transpose()?;
        let (id, name) = (&id, &name);
        self.execute(
            client_id,
            "updateProject",
            &(id, name, expected_version),
            move || async move {
                let data = self.live_project(id).await?;
                let project = &data.project;
                check_expected(expected_version, project.version, &id)?;
                let name = name.clone().unwrap_or_else(|| project.name.clone());
                if name == project.name {
                    return Ok(Plan::new(Vec::new(), id.to_string()));
                }
                let mut plan = Plan::new(
                    vec![WriteOp::Update {
                        key: keys::project(id, &project.tenant),
                        actions: vec![
                            set(attrs::NAME, AttributeValue::S(name.clone())),
                            set(
                                attrs::GSI1SK,
                                AttributeValue::S(keys::project_sort(&name, id)),
                            ),
                            set(attrs::VERSION, items::number(project.version + 1)),
                        ],
                        condition: Some(Condition::All(vec![
                            Condition::equals(attrs::VERSION, items::number(project.version)),
                            Condition::AttributeMissing(attrs::DELETED.into()),
                        ])),
                    }],
                    id.to_string(),
                );
                plan.guarded = expected_version.map(|_| 0);
                Ok(plan)
            },
        )
        .await
    }

    /// Tombstones the project (it leaves the API and its tenant's list at once) and records a
    /// sweep that removes its issues, fields and finally the project row.
    pub async fn delete_project(
        &self,
        client_id: Option<&str>,
        id: &str,
    ) -> Result<Written, WriteError> {
        let id = ProjectId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let id = &id;
        self.execute(client_id, "deleteProject", &(id,), move || async move {
            let data = self.live_project(id).await?;
            let target = SweepTarget::Project {
                project: id.clone(),
                tenant: data.project.tenant.clone(),
            };
            let ops = vec![
                WriteOp::Update {
                    key: keys::project(id, &data.project.tenant),
                    actions: vec![
                        set(attrs::DELETED, items::number(now_secs() as u64)),
                        UpdateAction::Remove(AttrPath::new([attrs::GSI1SK])),
                    ],
                    condition: Some(Condition::AttributeMissing(attrs::DELETED.into())),
                },
                put_new(items::sweep_item(&new_job(target.clone()))),
            ];
            let mut plan = Plan::new(ops, id.to_string());
            plan.sweep = vec![target];
            Ok(plan)
        })
        .await
    }

    pub async fn create_field(
        &self,
        client_id: Option<&str>,
        project: &str,
        name: &str,
        field_type: FieldType,
        position: Option<i64>,
        options: &[OptionInput],
    ) -> Result<Written, WriteError> {
        let project = ProjectId::parse(project).map_err(|e| invalid("projectId", e.to_string()))?;
        let name = valid_name("name", name)?;
        let position = position.map(valid_position).transpose()?;
        if field_type != FieldType::Select && !options.is_empty() {
            return Err(invalid("options", "only SELECT fields have options"));
        }
        // Checked before the transaction too, so a refusal costs no read.
        let checked = options::edit(&[], options, &mut rand::rng()).map_err(options_refused)?;
        let (project, name, checked) = (&project, &name, &checked);
        self.execute(
            client_id,
            "createCustomField",
            &(project, name, field_type, position, options),
            move || async move {
                let data = self.live_project(project).await?;
                if data.fields.len() >= MAX_FIELDS {
                    return Err(invalid(
                        "projectId",
                        format!("a project has at most {MAX_FIELDS} custom fields"),
                    ));
                }
                project_options_fit(&data, None, checked)?;
                let position = position.unwrap_or_else(|| {
                    data.fields
                        .iter()
                        .map(|f| f.position)
                        .max()
                        .map_or(1, |p| p.saturating_add(1))
                });
                let field = CustomField {
                    id: FieldId::generate(),
                    project: project.clone(),
                    name: name.clone(),
                    field_type,
                    position,
                    version: 1,
                    deleted: false,
                    options: checked.clone(),
                };
                let [definition, lookup] = items::field_items(&field);
                let ops = vec![
                    bump_fields_version(&data.project),
                    put_new(definition),
                    put_new(lookup),
                ];
                Ok(Plan::new(ops, field.id.to_string()))
            },
        )
        .await
    }

    pub async fn update_field(
        &self,
        client_id: Option<&str>,
        id: &str,
        name: Option<&str>,
        position: Option<i64>,
        field_type: Option<FieldType>,
        options: Option<&[OptionInput]>,
    ) -> Result<Written, WriteError> {
        let id = FieldId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let name = name.map(|n| valid_name("name", n)).transpose()?;
        let position = position.map(valid_position).transpose()?;
        let (id, name) = (&id, &name);
        self.execute(
            client_id,
            "updateCustomField",
            &(id, name, position, field_type, options),
            move || async move {
                let (data, field) = self.live_field(id).await?;
                if let Some(t) = field_type.filter(|t| *t != field.field_type) {
                    return Err(invalid(
                        "type",
                        format!(
                            "a custom field's type cannot be changed (it is {}, not {}): existing \
                         values would sort and validate differently; create a new field of type \
                         {} and copy the values over instead",
                            field.field_type.as_str().to_uppercase(),
                            t.as_str().to_uppercase(),
                            t.as_str().to_uppercase()
                        ),
                    ));
                }
                let mut updated = field.clone();
                if let Some(name) = &name {
                    updated.name = name.clone();
                }
                if let Some(position) = position {
                    updated.position = position;
                }
                if let Some(options) = options {
                    if field.field_type != FieldType::Select && !options.is_empty() {
                        return Err(invalid("options", "only SELECT fields have options"));
                    }
                    updated.options = options::edit(&field.options, options, &mut rand::rng())
                        .map_err(options_refused)?;
                    project_options_fit(&data, Some(id), &updated.options)?;
                }
                if updated == field {
                    return Ok(Plan::new(Vec::new(), id.to_string()));
                }
                updated.version += 1;
                let [definition, _] = items::field_items(&updated);
                let mut ops = vec![WriteOp::Put {
                    item: definition,
                    condition: Some(field_unchanged(&field)),
                }];
                let mut sweep = Vec::new();
                if updated.options != field.options {
                    // Cell writers check the project's fields version: one that validated a
                    // cell against the old options (or derived its sort string from them)
                    // must not commit after this.
                    ops.push(bump_fields_version(&data.project));
                }
                if pending_work(&updated) != pending_work(&field) && updated.reindexing() {
                    // A plain put, not `put_new`: a job may be pending already. Putting it
                    // again drops its lease, so a sweep half-way through stops at its next
                    // batch and the new run starts from the field's current options. An edit
                    // that adds no work (a rename while the sweep runs) leaves the job alone,
                    // so edits cannot keep postponing it.
                    let target = SweepTarget::Options {
                        project: data.project.id.clone(),
                        field: id.clone(),
                    };
                    ops.push(WriteOp::Put {
                        item: items::sweep_item(&new_job(target.clone())),
                        condition: None,
                    });
                    sweep.push(target);
                }
                // An option moved (its key changed) or removed; an added option re-keys
                // nothing, and a view's rows do not change with it.
                let reordered = field.options.iter().any(|old| {
                    updated
                        .option(&old.id)
                        .is_none_or(|new| new.key != old.key || new.removed != old.removed)
                });
                if reordered {
                    // Views that sort or filter by the field are rebuilt with the options'
                    // new order (and without what names a removed option).
                    let mut after = data.clone();
                    if let Some(slot) = after.fields.iter_mut().find(|f| f.id == *id) {
                        *slot = updated.clone();
                    }
                    let (view_ops, view_sweeps) =
                        views::dependent_views(&data, &after, id, FieldChange::OptionsReordered);
                    ops.extend(view_ops);
                    sweep.extend(view_sweeps);
                }
                let mut plan = Plan::new(ops, id.to_string());
                plan.sweep = sweep;
                Ok(plan)
            },
        )
        .await
    }

    /// Tombstones the field (it leaves the API at once) and records a sweep that removes its
    /// cells and value rows in batches.
    pub async fn delete_field(
        &self,
        client_id: Option<&str>,
        id: &str,
    ) -> Result<Written, WriteError> {
        let id = FieldId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let id = &id;
        self.execute(client_id, "deleteCustomField", &(id,), move || async move {
            let (data, field) = self.live_field(id).await?;
            let target = SweepTarget::Field {
                project: data.project.id.clone(),
                field: id.clone(),
            };
            let mut tombstoned = field.clone();
            tombstoned.deleted = true;
            tombstoned.version += 1;
            let [definition, _] = items::field_items(&tombstoned);
            let mut bump = bump_fields_version(&data.project);
            if let WriteOp::Update { actions, .. } = &mut bump {
                // The field's counter goes with it.
                actions.push(UpdateAction::Remove(AttrPath::new([items::filled_attr(
                    id,
                )])));
            }
            let mut ops = vec![
                bump,
                WriteOp::Put {
                    item: definition,
                    condition: Some(field_unchanged(&field)),
                },
                put_new(items::sweep_item(&new_job(target.clone()))),
            ];
            // The views that sort or filter by the field lose those keys and leaves, and are
            // rebuilt without them; every view stops showing it.
            let mut after = data.clone();
            after.fields.retain(|f| f.id != *id);
            let (view_ops, mut sweeps) =
                views::dependent_views(&data, &after, id, FieldChange::Deleted);
            ops.extend(view_ops);
            sweeps.insert(0, target);
            let mut plan = Plan::new(ops, id.to_string());
            plan.sweep = sweeps;
            Ok(plan)
        })
        .await
    }

    pub async fn create_issue(
        &self,
        client_id: Option<&str>,
        project: &str,
        name: &str,
        state: Option<IssueState>,
        values: &[CellInput],
    ) -> Result<Written, WriteError> {
        let project = ProjectId::parse(project).map_err(|e| invalid("projectId", e.to_string()))?;
        let name = valid_name("name", name)?;
        let cells = parse_cell_ids("fieldValues", values)?;
        let (project, name, cells) = (&project, &name, &cells);
        self.execute(
            client_id,
            "createIssue",
            &(project, name, state, cells),
            move || async move {
                let data = self.live_project(project).await?;
                let mut issue = Issue {
                    id: IssueId::generate(),
                    project: project.clone(),
                    num: data.project.next_issue_num,
                    name: name.clone(),
                    state: state.unwrap_or(IssueState::Open),
                    values: BTreeMap::new(),
                    version: 1,
                };
                apply_cells("fieldValues", &mut issue, cells, &data)?;
                let indexes = view::indexes(&data);
                let rows = derive(&issue, &data, &indexes)?;
                let num = data.project.next_issue_num;
                let mut actions = vec![set(
                    attrs::NEXT_ISSUE_NUM,
                    items::number(u64::from(num) + 1),
                )];
                actions.extend(count_actions(&data, None, Some(&issue)));
                actions.extend(view_count_actions(&indexes, &[], &rows));
                let mut ops = vec![WriteOp::Update {
                    key: keys::project(project, &data.project.tenant),
                    actions,
                    condition: Some(Condition::All(vec![
                        Condition::equals(attrs::NEXT_ISSUE_NUM, items::number(u64::from(num))),
                        project_unchanged(&data.project),
                    ])),
                }];
                ops.extend(rows.into_iter().map(put_new));
                check_fits("fieldValues", &ops, client_id.is_some())?;
                let mut plan = Plan::new(ops, issue.id.to_string());
                plan.project = Some(data);
                Ok(plan)
            },
        )
        .await
    }

    pub async fn update_issue(
        &self,
        client_id: Option<&str>,
        id: &str,
        name: Option<&str>,
        state: Option<IssueState>,
        expected_version: Option<i64>,
    ) -> Result<Written, WriteError> {
        let id = IssueId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let name = name.map(|n| valid_name("name", n)).transpose()?;
        let (id, name) = (&id, &name);
        self.execute(
            client_id,
            "updateIssue",
            &(id, name, state, expected_version),
            move || async move {
                let (data, old, rows) = self.live_issue(id).await?;
                check_expected(expected_version, old.version, &id)?;
                let mut new = old.clone();
                if let Some(name) = &name {
                    new.name = name.clone();
                }
                if let Some(state) = state {
                    new.state = state;
                }
                let guarded = expected_version.is_some();
                let input = if name.is_some() { "name" } else { "state" };
                issue_plan(data, &old, &rows, new, guarded, client_id, input)
            },
        )
        .await
    }

    pub async fn set_issue_values(
        &self,
        client_id: Option<&str>,
        id: &str,
        values: &[CellInput],
        expected_version: Option<i64>,
    ) -> Result<Written, WriteError> {
        let id = IssueId::parse(id).map_err(|e| invalid("issueId", e.to_string()))?;
        let cells = parse_cell_ids("values", values)?;
        let (id, cells) = (&id, &cells);
        self.execute(
            client_id,
            "setIssueFieldValues",
            &(id, cells, expected_version),
            move || async move {
                let (data, old, rows) = self.live_issue(id).await?;
                check_expected(expected_version, old.version, &id)?;
                let mut new = old.clone();
                apply_cells("values", &mut new, cells, &data)?;
                let guarded = expected_version.is_some();
                issue_plan(data, &old, &rows, new, guarded, client_id, "values")
            },
        )
        .await
    }

    /// Deletes the issue and every row it owns in one transaction; an issue with more rows
    /// than a transaction takes loses its source row and as many index rows as fit at once
    /// (so it is gone for the API) and a sweep removes the rest.
    pub async fn delete_issue(
        &self,
        client_id: Option<&str>,
        id: &str,
    ) -> Result<Written, WriteError> {
        let id = IssueId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let id = &id;
        self.execute(client_id, "deleteIssue", &(id,), move || async move {
            let (data, issue, stored) = self.live_issue(id).await?;
            let source = keys::issue(id, &issue.project);
            let mut rows: Vec<Key> = stored.iter().filter_map(items::item_key).collect();
            let indexes = view::indexes(&data);
            let mut counts = count_actions(&data, Some(&issue), None);
            counts.extend(view_count_actions(&indexes, &stored, &[]));
            let guards = build_guards(&indexes, id, &stored, &[]);
            rows.retain(|k| *k != source);
            let room = MAX_TRANSACT_WRITE - 2 - guards.len() - usize::from(client_id.is_some());
            let mut ops = vec![
                WriteOp::Delete {
                    key: source,
                    condition: Some(Condition::equals(
                        attrs::VERSION,
                        items::number(issue.version),
                    )),
                },
                // The fields the counters were planned with are still the project's, so a
                // field deleted meanwhile does not get its counter back.
                project_op(&data.project, project_unchanged(&data.project), counts),
            ];
            ops.extend(guards);
            let mut sweep = Vec::new();
            if rows.len() > room {
                // Keep one slot for the sweep job.
                rows.truncate(room - 1);
                let target = SweepTarget::Issue {
                    project: issue.project.clone(),
                    issue: id.clone(),
                };
                ops.push(put_new(items::sweep_item(&new_job(target.clone()))));
                sweep.push(target);
            }
            // View rows as everywhere: removed only as the writer read them (see
            // `view_row_condition`).
            ops.extend(rows.into_iter().map(|key| WriteOp::Delete {
                condition: view_row_condition(&key, true),
                key,
            }));
            let mut plan = Plan::new(ops, id.to_string());
            plan.sweep = sweep;
            Ok(plan)
        })
        .await
    }

    // -----------------------------------------------------------------------------------------
    // Planning helpers.

    /// A tenant the caller may write to; another's is not found, and is not even read.
    async fn tenant(&self, id: &TenantId) -> Result<Tenant, WriteError> {
        if !self.repo.access().sees(id) {
            return Err(WriteError::NotFound(format!("tenant {id} does not exist")));
        }
        let out = self.store().get_consistent(&keys::tenant(id)).await?;
        match out.item {
            Some(item) => Ok(items::decode_tenant(&item).map_err(RepoError::from)?),
            None => Err(WriteError::NotFound(format!("tenant {id} does not exist"))),
        }
    }

    /// A live project of the caller's tenant (another tenant's is not found, before anything
    /// about it is looked at).
    async fn live_project(&self, id: &ProjectId) -> Result<ProjectData, WriteError> {
        match self.repo.load_project(id, true).await? {
            Some(data)
                if !data.project.deleted && self.repo.access().sees(&data.project.tenant) =>
            {
                Ok(data)
            }
            _ => Err(WriteError::NotFound(format!("project {id} does not exist"))),
        }
    }

    /// [`Writes::live_project`] as the check that decides whether a row found by id is the
    /// caller's: a read made only because the row exists, so it counts against the request's
    /// check allowance rather than its budget (see `Repo::checking`).
    async fn visible_project(&self, id: &ProjectId) -> Result<ProjectData, WriteError> {
        let checking = Writes {
            repo: self.repo.checking(),
            ..self.clone()
        };
        checking.live_project(id).await
    }

    async fn live_field(&self, id: &FieldId) -> Result<(ProjectData, CustomField), WriteError> {
        let missing = || WriteError::NotFound(format!("custom field {id} does not exist"));
        let lookup = self.store().get_consistent(&keys::field_lookup(id)).await?;
        let project = match lookup.item {
            Some(item) => items::decode_field_lookup(&item).map_err(RepoError::from)?,
            None => return Err(missing()),
        };
        let data = self
            .visible_project(&project)
            .await
            .map_err(|e| only_not_found(e, missing))?;
        let field = data.field(id).cloned().ok_or_else(missing)?;
        Ok((data, field))
    }

    /// An issue of a live project, with every row it has (see
    /// [`Repo::issue_rows_consistent`]).
    async fn live_issue(
        &self,
        id: &IssueId,
    ) -> Result<(ProjectData, Issue, Vec<Item>), WriteError> {
        let missing = || WriteError::NotFound(format!("issue {id} does not exist"));
        let (issue, rows) = self
            .repo
            .issue_rows_consistent(id)
            .await?
            .ok_or_else(missing)?;
        let data = self
            .visible_project(&issue.project)
            .await
            .map_err(|e| only_not_found(e, missing))?;
        Ok((data, issue, rows))
    }
}

/// The keys and removed options a field's options sweep has yet to deal with.
fn pending_work(field: &CustomField) -> Vec<(&str, bool, &[String])> {
    field
        .options
        .iter()
        .filter(|o| o.removed || !o.stale_keys.is_empty())
        .map(|o| (o.key.as_str(), o.removed, o.stale_keys.as_slice()))
        .collect()
}

/// Refuses an option list that would take the project's SELECT fields past
/// [`options::MAX_PROJECT_OPTIONS`] live options (`field`: the one being edited, whose old list
/// does not count).
fn project_options_fit(
    data: &ProjectData,
    field: Option<&FieldId>,
    options: &[crate::model::SelectOption],
) -> Result<(), WriteError> {
    let others: usize = data
        .fields
        .iter()
        .filter(|f| Some(&f.id) != field)
        .map(|f| f.live_options().count())
        .sum();
    let total = others + options.iter().filter(|o| !o.removed).count();
    if total > options::MAX_PROJECT_OPTIONS {
        return Err(invalid(
            "options",
            format!(
                "a project's SELECT fields have at most {} options in all; this would make {total}",
                options::MAX_PROJECT_OPTIONS
            ),
        ));
    }
    Ok(())
}

/// An option list's refusal, naming its path in the input.
fn options_refused(e: options::OptionsError) -> WriteError {
    invalid(e.path, e.message)
}

/// A lookup's "does not exist" becomes the caller's own; every other failure (an outage, a
/// throttle, corrupt data) passes through unchanged, so it is never reported as a missing row.
fn only_not_found(e: WriteError, missing: impl FnOnce() -> WriteError) -> WriteError {
    match e {
        WriteError::NotFound(_) => missing(),
        other => other,
    }
}
