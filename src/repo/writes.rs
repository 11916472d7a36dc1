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

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use super::sweep::SweepHandle;
use super::{Repo, RepoError};
use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::items::{self, attrs, MutationRecord, RowChanges, SweepJob, SweepTarget};
use crate::keys;
use crate::model::{
    CustomField, FieldType, FieldValue, Issue, IssueState, Project, ProjectData, Tenant,
};
use crate::store::capacity::item_size;
use crate::store::{
    AttrPath, AttributeValue, Condition, DynStore, Item, Key, StoreError, UpdateAction, WriteOp,
    MAX_ITEM_BYTES, MAX_TRANSACT_BYTES, MAX_TRANSACT_WRITE,
};

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

/// How hard a mutation tries before contention becomes a retryable `CONFLICT`: exponential
/// backoff with full jitter, as AWS recommends for conditional-write contention.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub base: Duration,
    pub cap: Duration,
}

impl Default for RetryPolicy {
    /// Enough for 64 writers racing on one project's issue counter (about 64 rounds, each of
    /// which one writer wins) while bounding a single request to a few seconds.
    fn default() -> Self {
        RetryPolicy {
            attempts: 100,
            base: Duration::from_millis(2),
            cap: Duration::from_millis(100),
        }
    }
}

impl RetryPolicy {
    async fn pause(&self, attempt: u32) {
        let ceiling = self
            .base
            .saturating_mul(1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX))
            .min(self.cap);
        let delay = rand::rng().random_range(Duration::ZERO..=ceiling);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
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

/// A planned mutation: the operations and what they produce.
struct Plan {
    ops: Vec<WriteOp>,
    /// The id of the node written or deleted.
    result: String,
    /// The operation carrying the client's `expectedVersion`, if one was given: its failure
    /// is the client's conflict, not contention to retry.
    guarded: Option<usize>,
    /// A sweep to start once the transaction committed.
    sweep: Option<SweepTarget>,
    /// See [`Written::project`].
    project: Option<ProjectData>,
}

impl Plan {
    fn new(ops: Vec<WriteOp>, result: impl Into<String>) -> Self {
        Plan {
            ops,
            result: result.into(),
            guarded: None,
            sweep: None,
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
        }
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
            Ok(Plan::new(
                vec![put_new(items::tenant_item(&tenant))],
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
            if self.tenant(id).await?.name == *name {
                return Ok(Plan::new(Vec::new(), id.to_string()));
            }
            let op = WriteOp::Update {
                key: keys::tenant(id),
                actions: vec![set(attrs::NAME, AttributeValue::S(name.clone()))],
                condition: Some(Condition::Exists),
            };
            Ok(Plan::new(vec![op], id.to_string()))
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
            plan.sweep = Some(target);
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
    ) -> Result<Written, WriteError> {
        let project = ProjectId::parse(project).map_err(|e| invalid("projectId", e.to_string()))?;
        let name = valid_name("name", name)?;
        let position = position.map(valid_position).transpose()?;
        let (project, name) = (&project, &name);
        self.execute(
            client_id,
            "createCustomField",
            &(project, name, field_type, position),
            move || async move {
                let data = self.live_project(project).await?;
                if data.fields.len() >= MAX_FIELDS {
                    return Err(invalid(
                        "projectId",
                        format!("a project has at most {MAX_FIELDS} custom fields"),
                    ));
                }
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
    ) -> Result<Written, WriteError> {
        let id = FieldId::parse(id).map_err(|e| invalid("id", e.to_string()))?;
        let name = name.map(|n| valid_name("name", n)).transpose()?;
        let position = position.map(valid_position).transpose()?;
        let (id, name) = (&id, &name);
        self.execute(
            client_id,
            "updateCustomField",
            &(id, name, position, field_type),
            move || async move {
                let (_, field) = self.live_field(id).await?;
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
                if updated == field {
                    return Ok(Plan::new(Vec::new(), id.to_string()));
                }
                updated.version += 1;
                let [definition, _] = items::field_items(&updated);
                let op = WriteOp::Put {
                    item: definition,
                    condition: Some(field_unchanged(&field)),
                };
                Ok(Plan::new(vec![op], id.to_string()))
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
            let ops = vec![
                bump_fields_version(&data.project),
                WriteOp::Put {
                    item: definition,
                    condition: Some(field_unchanged(&field)),
                },
                put_new(items::sweep_item(&new_job(target.clone()))),
            ];
            let mut plan = Plan::new(ops, id.to_string());
            plan.sweep = Some(target);
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
                let rows = derive(&issue, &data.fields)?;
                let num = data.project.next_issue_num;
                let mut ops = vec![WriteOp::Update {
                    key: keys::project(project, &data.project.tenant),
                    actions: vec![set(
                        attrs::NEXT_ISSUE_NUM,
                        items::number(u64::from(num) + 1),
                    )],
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
            let (data, issue, rows) = self.live_issue(id).await?;
            let source = keys::issue(id, &issue.project);
            let mut rows: Vec<Key> = rows.iter().filter_map(items::item_key).collect();
            rows.retain(|k| *k != source);
            let room = MAX_TRANSACT_WRITE - 2 - usize::from(client_id.is_some());
            let mut ops = vec![
                WriteOp::Delete {
                    key: source,
                    condition: Some(Condition::equals(
                        attrs::VERSION,
                        items::number(issue.version),
                    )),
                },
                WriteOp::ConditionCheck {
                    key: keys::project(&issue.project, &data.project.tenant),
                    condition: Condition::AttributeMissing(attrs::DELETED.into()),
                },
            ];
            let mut sweep = None;
            if rows.len() > room {
                // Keep one slot for the sweep job.
                rows.truncate(room - 1);
                let target = SweepTarget::Issue {
                    project: issue.project.clone(),
                    issue: id.clone(),
                };
                ops.push(put_new(items::sweep_item(&new_job(target.clone()))));
                sweep = Some(target);
            }
            ops.extend(rows.into_iter().map(|key| WriteOp::Delete {
                key,
                condition: None,
            }));
            let mut plan = Plan::new(ops, id.to_string());
            plan.sweep = sweep;
            Ok(plan)
        })
        .await
    }

    // -----------------------------------------------------------------------------------------
    // Planning helpers.

    async fn tenant(&self, id: &TenantId) -> Result<Tenant, WriteError> {
        let out = self.store().get_consistent(&keys::tenant(id)).await?;
        match out.item {
            Some(item) => Ok(items::decode_tenant(&item).map_err(RepoError::from)?),
            None => Err(WriteError::NotFound(format!("tenant {id} does not exist"))),
        }
    }

    async fn live_project(&self, id: &ProjectId) -> Result<ProjectData, WriteError> {
        match self.repo.load_project(id, true).await? {
            Some(data) if !data.project.deleted => Ok(data),
            _ => Err(WriteError::NotFound(format!("project {id} does not exist"))),
        }
    }

    async fn live_field(&self, id: &FieldId) -> Result<(ProjectData, CustomField), WriteError> {
        let missing = || WriteError::NotFound(format!("custom field {id} does not exist"));
        let lookup = self.store().get_consistent(&keys::field_lookup(id)).await?;
        let project = match lookup.item {
            Some(item) => items::decode_field_lookup(&item).map_err(RepoError::from)?,
            None => return Err(missing()),
        };
        let data = self
            .live_project(&project)
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
            .live_project(&issue.project)
            .await
            .map_err(|e| only_not_found(e, missing))?;
        Ok((data, issue, rows))
    }

    // -----------------------------------------------------------------------------------------
    // Execution: idempotency, the transaction, retries.

    /// Plans and commits a mutation, re-planning under contention, and honours the client's
    /// `clientMutationId`: a recorded result of the same mutation with the same input within
    /// the window is returned without writing, and a new result is recorded in the mutation's
    /// own transaction. `input` is the mutation's validated input, fingerprinted so that an id
    /// reused for different input is refused rather than answered with another call's result.
    async fn execute<F, Fut>(
        &self,
        client_id: Option<&str>,
        mutation: &'static str,
        input: &impl std::fmt::Debug,
        mut plan: F,
    ) -> Result<Written, WriteError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Plan, WriteError>>,
    {
        let idempotency = match client_id {
            None => None,
            Some(id) if id.is_empty() || id.len() > MAX_CLIENT_MUTATION_ID_BYTES => {
                return Err(invalid(
                    "clientMutationId",
                    format!("must be 1 to {MAX_CLIENT_MUTATION_ID_BYTES} bytes long"),
                ));
            }
            Some(id) => Some(Idempotency {
                key: keys::mutation_record(id),
                mutation,
                fingerprint: fingerprint(mutation, input),
            }),
        };
        for attempt in 0..self.retry.attempts {
            let mut record_condition = None;
            if let Some(idem) = &idempotency {
                match self.recorded(idem).await? {
                    Recorded::Result(result) => return Ok(Written::replayed(result)),
                    Recorded::Expired(expires_at) => {
                        record_condition = Some(Condition::equals(
                            attrs::EXPIRES_AT,
                            AttributeValue::N(expires_at.to_string()),
                        ))
                    }
                    Recorded::None => record_condition = Some(Condition::NotExists),
                }
            }
            let planned = match plan().await {
                Ok(planned) => planned,
                Err(e) => return self.unless_recorded(idempotency.as_ref(), e).await,
            };
            let Plan {
                mut ops,
                result,
                guarded,
                sweep,
                project,
            } = planned;
            let record_index = idempotency.as_ref().map(|idem| {
                let record = MutationRecord {
                    mutation: mutation.to_string(),
                    fingerprint: idem.fingerprint.clone(),
                    result: result.clone(),
                    expires_at: now_secs() + IDEMPOTENCY_WINDOW.as_secs() as i64,
                };
                ops.push(WriteOp::Put {
                    item: items::mutation_record_item(&idem.key, &record),
                    condition: record_condition.take(),
                });
                ops.len() - 1
            });
            // Nothing to write (an edit that changes nothing, without a clientMutationId).
            let written = if ops.is_empty() {
                Ok(Default::default())
            } else {
                self.store().transact_write(ops).await
            };
            match written {
                Ok(_) => {
                    if let (Some(target), Some(sweeps)) = (sweep, &self.sweeps) {
                        sweeps.start(target);
                    }
                    return Ok(Written {
                        id: result,
                        replayed: false,
                        project,
                    });
                }
                // Another call with the same clientMutationId committed first: the next round
                // reads its record and returns it.
                Err(StoreError::ConditionFailed { index }) if Some(index) == record_index => {}
                // The client's expectedVersion no longer holds (or the row is gone): planning
                // again from a fresh read reports which, as CONFLICT or NOT_FOUND.
                Err(StoreError::ConditionFailed { index }) if Some(index) == guarded => {}
                Err(StoreError::ConditionFailed { .. } | StoreError::TransactionConflict(_)) => {
                    tracing::debug!(mutation, attempt, "write contention, planning again");
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    self.retry.pause(attempt).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        tracing::warn!(mutation, "write contention outlasted the retries");
        let exhausted = WriteError::Conflict {
            message: "too many concurrent changes to the same data: retry the mutation".into(),
            retryable: true,
        };
        self.unless_recorded(idempotency.as_ref(), exhausted).await
    }

    /// An error of a mutation with a `clientMutationId`, unless a concurrent call with the same
    /// id committed meanwhile (then its result is the answer: the planning error, a conflict
    /// or a "not found", only saw that call's own write).
    async fn unless_recorded(
        &self,
        idempotency: Option<&Idempotency>,
        error: WriteError,
    ) -> Result<Written, WriteError> {
        if let Some(idem) = idempotency {
            if matches!(error, WriteError::Conflict { .. } | WriteError::NotFound(_)) {
                if let Ok(Recorded::Result(result)) = self.recorded(idem).await {
                    return Ok(Written::replayed(result));
                }
            }
        }
        if matches!(error, WriteError::Conflict { .. }) {
            self.stats.conflicts.fetch_add(1, Ordering::Relaxed);
        }
        Err(error)
    }

    async fn recorded(&self, idem: &Idempotency) -> Result<Recorded, WriteError> {
        let out = self.store().get_consistent(&idem.key).await?;
        let Some(item) = out.item else {
            return Ok(Recorded::None);
        };
        let record = items::decode_mutation_record(&item).map_err(RepoError::from)?;
        if record.expires_at <= now_secs() {
            return Ok(Recorded::Expired(record.expires_at));
        }
        if record.mutation != idem.mutation || record.fingerprint != idem.fingerprint {
            return Err(invalid(
                "clientMutationId",
                format!(
                    "already used for another mutation or other input in the last {} minutes: \
                     use a new id for each distinct mutation, and the same id only to retry it",
                    IDEMPOTENCY_WINDOW.as_secs() / 60
                ),
            ));
        }
        Ok(Recorded::Result(record.result))
    }
}

/// What identifies one logical mutation for idempotent retries.
struct Idempotency {
    key: Key,
    mutation: &'static str,
    fingerprint: String,
}

/// A stable digest of a mutation's validated input (SHA-256 of its debug form), so retries
/// match whatever the request's bytes (formatting, variables or literals, field order).
fn fingerprint(mutation: &str, input: &impl std::fmt::Debug) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{mutation}\n{input:?}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

enum Recorded {
    None,
    Expired(i64),
    Result(String),
}

// ---------------------------------------------------------------------------------------------
// Validation.

/// A lookup's "does not exist" becomes the caller's own; every other failure (an outage, a
/// throttle, corrupt data) passes through unchanged, so it is never reported as a missing row.
fn only_not_found(e: WriteError, missing: impl FnOnce() -> WriteError) -> WriteError {
    match e {
        WriteError::NotFound(_) => missing(),
        other => other,
    }
}

fn valid_name(field: &str, name: &str) -> Result<String, WriteError> {
    let trimmed = name.trim();
    let chars = trimmed.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(invalid(
            field,
            format!("must be 1 to {MAX_NAME_CHARS} characters after trimming spaces, got {chars}"),
        ));
    }
    Ok(trimmed.to_string())
}

fn valid_position(position: i64) -> Result<u32, WriteError> {
    u32::try_from(position)
        .ok()
        .filter(|p| i32::try_from(*p).is_ok())
        .ok_or_else(|| invalid("position", "must be between 0 and 2147483647"))
}

fn check_expected(
    expected: Option<i64>,
    actual: u64,
    id: &impl std::fmt::Display,
) -> Result<(), WriteError> {
    match expected {
        Some(v) if i64::try_from(actual).ok() != Some(v) => Err(WriteError::Conflict {
            message: format!(
                "{id} is at version {actual}, not the expected {v}: read it again and retry"
            ),
            retryable: false,
        }),
        _ => Ok(()),
    }
}

/// Parses the field ids of cell inputs, refusing duplicates.
fn parse_cell_ids(
    input: &str,
    values: &[CellInput],
) -> Result<Vec<(FieldId, Option<String>)>, WriteError> {
    let mut seen = HashSet::new();
    values
        .iter()
        .enumerate()
        .map(|(i, (id, value))| {
            let field = format!("{input}[{i}].fieldId");
            let id = FieldId::parse(id).map_err(|e| invalid(&field, e.to_string()))?;
            if !seen.insert(id.clone()) {
                return Err(invalid(field, format!("{id} appears more than once")));
            }
            Ok((id, value.clone()))
        })
        .collect()
}

/// Sets or clears cells of `issue` after checking each field is one of the project's and each
/// value is valid for its type; values are stored in canonical form.
fn apply_cells(
    input: &str,
    issue: &mut Issue,
    cells: &[(FieldId, Option<String>)],
    data: &ProjectData,
) -> Result<(), WriteError> {
    for (i, (id, value)) in cells.iter().enumerate() {
        let field = data.field(id).ok_or_else(|| {
            invalid(
                format!("{input}[{i}].fieldId"),
                format!("{id} is not a custom field of {}", data.project.id),
            )
        })?;
        match value {
            None => {
                issue.values.remove(id);
            }
            Some(text) => {
                let name = format!("{input}[{i}].value");
                if field.field_type == FieldType::Text && text.chars().count() > MAX_TEXT_CHARS {
                    return Err(invalid(
                        name,
                        format!("TEXT values are at most {MAX_TEXT_CHARS} characters"),
                    ));
                }
                let value = FieldValue::parse(field.field_type, text)
                    .map_err(|e| invalid(&name, e.to_string()))?;
                issue.values.insert(id.clone(), value.to_string());
            }
        }
    }
    Ok(())
}

/// The plan that turns an issue (as its stored `rows`) into `new`: the source row conditioned
/// on the version read, the project check, and only the index rows that differ from what is
/// stored. Diffing against the stored rows (not rows re-derived from the old issue) means a
/// write also repairs its issue's index rows if they ever drifted.
fn issue_plan(
    data: ProjectData,
    old: &Issue,
    rows: &[Item],
    mut new: Issue,
    guarded: bool,
    client_id: Option<&str>,
    input: &str,
) -> Result<Plan, WriteError> {
    let old_version = old.version;
    // Cells of deleted fields go with any write of the issue, so a sweep that already passed
    // this issue is never undone by a writer that read it earlier.
    new.values
        .retain(|field, _| data.fields.iter().any(|f| &f.id == field));
    // An edit that changes nothing writes nothing and keeps the version, so it cannot make
    // another client's `expectedVersion` stale; unless the stored rows drifted, which any
    // edit repairs.
    if new == *old && items::diff_rows(rows, &derive(old, &data.fields)?).is_empty() {
        let mut plan = Plan::new(Vec::new(), new.id.to_string());
        plan.project = Some(data);
        return Ok(plan);
    }
    // A cell another tool wrote that its field's type does not accept cannot be indexed: the
    // client must set or clear it rather than have it silently dropped.
    for (field_id, text) in &new.values {
        if let Some(field) = data.field(field_id) {
            if FieldValue::parse(field.field_type, text).is_err() {
                return Err(invalid(
                    input,
                    format!(
                        "the issue's cell of {field_id} holds {text:?}, which is not a valid {} \
                         value: set or clear that cell in this call",
                        field.field_type.as_str().to_uppercase()
                    ),
                ));
            }
        }
    }
    new.version = old_version + 1;
    let new_rows = derive(&new, &data.fields)?;
    let RowChanges { puts, deletes } = items::diff_rows(rows, &new_rows);
    let source = keys::issue(&new.id, &new.project);
    let mut ops = Vec::with_capacity(puts.len() + deletes.len() + 2);
    ops.push(WriteOp::ConditionCheck {
        key: keys::project(&data.project.id, &data.project.tenant),
        condition: project_unchanged(&data.project),
    });
    for item in puts {
        if items::item_key(&item).as_ref() == Some(&source) {
            let condition = Condition::equals(attrs::VERSION, items::number(old_version));
            ops.insert(
                0,
                WriteOp::Put {
                    item,
                    condition: Some(condition),
                },
            );
        } else {
            ops.push(WriteOp::Put {
                item,
                condition: None,
            });
        }
    }
    ops.extend(deletes.into_iter().map(|key| WriteOp::Delete {
        key,
        condition: None,
    }));
    check_fits(input, &ops, client_id.is_some())?;
    let mut plan = Plan::new(ops, new.id.to_string());
    plan.guarded = guarded.then_some(0);
    plan.project = Some(data);
    Ok(plan)
}

/// Refuses up front a write that DynamoDB would refuse: more operations than a transaction
/// takes, an item over 400 KB, or more than 4 MB in all.
fn check_fits(input: &str, ops: &[WriteOp], with_record: bool) -> Result<(), WriteError> {
    let count = ops.len() + usize::from(with_record);
    if count > MAX_TRANSACT_WRITE {
        return Err(invalid(
            input,
            format!(
                "this change touches {count} rows, more than the {MAX_TRANSACT_WRITE} one atomic \
                 write may: set fewer values per call"
            ),
        ));
    }
    let mut total = 0;
    for op in ops {
        if let WriteOp::Put { item, .. } = op {
            let size = item_size(item);
            if size > MAX_ITEM_BYTES {
                return Err(invalid(
                    input,
                    format!(
                        "the issue would be {size} bytes, over DynamoDB's {MAX_ITEM_BYTES}-byte \
                         item limit: shorten its values"
                    ),
                ));
            }
            total += size;
        }
    }
    if total > MAX_TRANSACT_BYTES {
        return Err(invalid(
            input,
            format!("this change writes {total} bytes, over the {MAX_TRANSACT_BYTES}-byte limit"),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Rows and operations.

/// The rows of an issue whose values were all checked against `fields`.
fn derive(issue: &Issue, fields: &[CustomField]) -> Result<Vec<Item>, WriteError> {
    items::issue_items(issue, fields).map_err(|e| {
        tracing::error!(issue = %issue.id, error = %e, "checked issue failed to encode");
        WriteError::Repo(RepoError::Item(items::ItemError {
            pk: issue.id.to_string(),
            sk: issue.project.to_string(),
            expected: "issue",
            reason: e.to_string(),
        }))
    })
}

/// The rows an issue as stored derives, leaving out values that no known field or type
/// accepts (written by another tool): used for the *old* side of a diff.
pub(crate) fn derive_lenient(issue: &Issue, fields: &[CustomField]) -> Vec<Item> {
    let mut clean = issue.clone();
    clean.values.retain(|id, text| {
        fields
            .iter()
            .find(|f| &f.id == id)
            .is_some_and(|f| FieldValue::parse(f.field_type, text).is_ok())
    });
    items::issue_items(&clean, fields).unwrap_or_default()
}

fn set(name: &str, value: AttributeValue) -> UpdateAction {
    UpdateAction::Set(AttrPath::new([name]), value)
}

fn put_new(item: Item) -> WriteOp {
    WriteOp::Put {
        item,
        condition: Some(Condition::NotExists),
    }
}

/// The project is not deleted and its fields are the ones the write validated against.
fn project_unchanged(project: &Project) -> Condition {
    let version = items::number(project.fields_version);
    let fields = if project.fields_version == 0 {
        // Read as 0 when absent, so both spellings of "no field changes yet" match.
        Condition::equals_or_missing(attrs::FIELDS_VERSION, version)
    } else {
        Condition::equals(attrs::FIELDS_VERSION, version)
    };
    Condition::All(vec![
        Condition::AttributeMissing(attrs::DELETED.into()),
        fields,
    ])
}

/// The field row still holds what the write read: its `Version` (or none, for rows other tools
/// wrote without one, whose content is then compared too).
fn field_unchanged(field: &CustomField) -> Condition {
    Condition::All(vec![
        Condition::equals_or_missing(attrs::VERSION, items::number(field.version)),
        Condition::equals(attrs::NAME, AttributeValue::S(field.name.clone())),
        Condition::equals(attrs::POSITION, items::number(u64::from(field.position))),
        Condition::AttributeMissing(attrs::DELETED.into()),
    ])
}

/// Bumps the project's fields version (a field was created or deleted), conditioned on the
/// fields the write planned from.
fn bump_fields_version(project: &Project) -> WriteOp {
    WriteOp::Update {
        key: keys::project(&project.id, &project.tenant),
        actions: vec![set(
            attrs::FIELDS_VERSION,
            items::number(project.fields_version + 1),
        )],
        condition: Some(project_unchanged(project)),
    }
}

fn new_job(target: SweepTarget) -> SweepJob {
    SweepJob {
        target,
        created: format!("{:020}", now_millis()),
        lease_owner: None,
        lease_expires: None,
    }
}

pub(crate) fn now_secs() -> i64 {
    now_millis() / 1000
}

pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
