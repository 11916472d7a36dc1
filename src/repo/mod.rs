//! The single-table access patterns: every read the API makes, written once above the
//! [`Store`](crate::store::Store) trait so both stores share it; the write layer ([`writes`]),
//! the sweeps that finish deletions ([`sweep`]) and the consistency tools ([`verify`]) sit
//! beside it.
//!
//! Each method names the DynamoDB calls it makes; the per-request cost budgets in the tests
//! are sums of these.

pub mod plan;
mod speculative;
pub mod sweep;
pub mod verify;
pub mod writes;

pub use plan::Plan;

pub use speculative::{SpeculativePage, MISS};

use std::collections::HashMap;

use std::sync::Arc;

use crate::auth::Access;
use crate::filter::Predicate;
use crate::ids::{FieldId, IssueId, ProjectId, TenantId, ViewId};
use crate::items::{self, IssueListRow, ItemError, PartitionRow};
use crate::keys;
use crate::model::{Issue, IssueCounts, Project, ProjectData, Tenant};
use crate::paging::{
    self, CursorKeys, Limits, Page, PageArgs, PageRequest, PagingError, Position, ReadBudget,
    Scope, Segment, UncheckedRequest,
};
use crate::store::{
    retry, CallBudget, CostMeter, CostReport, DynStore, Index, Item, Key, Metered, Query, RawItem,
    SortCondition, StoreError,
};
use crate::telemetry::Fallbacks;

/// Errors of the data layer: the store failed, or it returned an item that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Item(#[from] ItemError),
    /// The page request does not fit the list (a forged cursor).
    #[error(transparent)]
    Paging(#[from] PagingError),
}

impl RepoError {
    /// Whether the request's budget of store calls is spent.
    pub fn is_budget_exceeded(&self) -> bool {
        matches!(self, RepoError::Store(StoreError::BudgetExceeded))
    }

    /// Whether DynamoDB throttled the call and the SDK's retries gave up.
    pub fn is_throttled(&self) -> bool {
        matches!(self, RepoError::Store(StoreError::Throttled(_)))
    }

    /// Whether the store failed to answer (unreachable, throttled), as opposed to a bug or
    /// corrupt data: retrying later may succeed.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            RepoError::Store(StoreError::Unavailable(_) | StoreError::Throttled(_))
        )
    }
}

/// The full key of an issue's source item: its id and its project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssueKey {
    pub issue: IssueId,
    pub project: ProjectId,
}

/// Hashes the issue id alone: an issue has one project, so keys that differ only by project
/// are rare (a wrong guess), and they still compare unequal. A grid page's keys are hashed
/// about eight times each on their way through the request's loader, so this halves that work.
impl std::hash::Hash for IssueKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.issue.hash(state);
    }
}

/// A column to sort a project's issues by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortField {
    Num,
    Name,
    State,
    Custom(FieldId),
    /// A saved view's index (its generation): the order and filter are the view's, in its
    /// rows' sort strings; pages read its partition ascending.
    View {
        view: ViewId,
        generation: u32,
    },
}

/// How a project's issues are sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssueSort {
    pub field: SortField,
    pub ascending: bool,
    /// For a custom field: whether the issues without a value come first (in either
    /// direction) rather than last.
    pub empty_first: bool,
}

impl Default for IssueSort {
    fn default() -> Self {
        IssueSort {
            field: SortField::Num,
            ascending: true,
            empty_first: false,
        }
    }
}

/// A project's issue list: its order and its filter, checked against the project. What a
/// list's cursors are bound to and what the planner reads it by.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IssueList {
    pub sort: IssueSort,
    pub filter: Option<Predicate>,
}

/// How a filtered page was read, for `extensions.plan`: the partitions and key conditions
/// read, the residual filter tested on each issue, and the rows read against those returned.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    pub segments: Vec<PlanSegment>,
    /// The part of the filter no key condition answers, tested on every issue read (in the
    /// canonical text cursors are bound to), or `null`.
    pub residual: Option<String>,
    pub rows_read: usize,
    pub rows_returned: usize,
}

/// One partition a plan reads.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanSegment {
    pub partition: String,
    pub key_condition: String,
}

/// An issue on a page: either the source item itself (when the index row read *is* the issue)
/// or the key of one still to be loaded (when the row read was a derived index row).
#[derive(Clone, Debug)]
pub enum IssueRow {
    Loaded(Issue),
    Key(IssueKey),
}

/// A page of a connection with the cursor of each row.
#[derive(Clone, Debug)]
pub struct Paged<T> {
    pub rows: Vec<(String, T)>,
    pub has_next: bool,
    pub has_previous: bool,
    /// Cursor of where reading stopped when the page was cut short by the read cap.
    pub resume_cursor: Option<String>,
    /// How a filtered page was read (`None` for other pages).
    pub plan: Option<PlanReport>,
}

impl<T> Paged<T> {
    fn empty() -> Self {
        Paged {
            rows: Vec::new(),
            has_next: false,
            has_previous: false,
            resume_cursor: None,
            plan: None,
        }
    }
}

/// The data access layer over one store handle. Built per request (around a metered store),
/// so its read budget for empty-cell searches is the request's.
#[derive(Clone)]
pub struct Repo {
    /// What calls go through: the request's metered view of the store.
    store: DynStore,
    /// The store under the request's meter, for probes (see [`Repo::probe`]).
    base: DynStore,
    meter: Arc<CostMeter>,
    calls: Arc<CallBudget>,
    /// A second allowance, as large, for the project reads that decide visibility (see
    /// [`Repo::checking_probe`]).
    checks: Arc<CallBudget>,
    budget: ReadBudget,
    access: Access,
    cursors: Arc<CursorKeys>,
    /// The application's fall-back counters, for the decoders of what this repo reads and the
    /// request's planned rows (none without metrics).
    fallbacks: Option<Fallbacks>,
}

impl Repo {
    /// A repo for tools and tests: unrestricted, unmetered, with a random cursor key.
    pub fn new(store: DynStore, limits: Limits) -> Self {
        Repo {
            base: store.clone(),
            store,
            meter: CostMeter::new(),
            calls: CallBudget::unlimited(),
            checks: CallBudget::unlimited(),
            budget: ReadBudget::new(limits),
            access: Access::Unrestricted,
            cursors: Arc::new(CursorKeys::random()),
            fallbacks: None,
        }
    }

    /// The repo of one request: every call is metered in `meter` within `calls`, and
    /// everything it loads is checked against `access`.
    pub fn for_request(
        base: DynStore,
        meter: Arc<CostMeter>,
        calls: Arc<CallBudget>,
        limits: Limits,
        access: Access,
        cursors: Arc<CursorKeys>,
    ) -> Self {
        let store: DynStore = Arc::new(Metered::with_budget(
            base.clone(),
            meter.clone(),
            calls.clone(),
        ));
        Repo {
            store,
            base,
            meter,
            checks: calls.clone_limits(),
            calls,
            budget: ReadBudget::new(limits),
            access,
            cursors,
            fallbacks: None,
        }
    }

    /// This repo, counting its fast paths' fall-backs in `fallbacks` (the application's).
    pub fn with_fallbacks(mut self, fallbacks: Option<Fallbacks>) -> Self {
        self.fallbacks = fallbacks;
        self
    }

    /// The application's fall-back counters, when it has metrics.
    pub fn fallbacks(&self) -> Option<&Fallbacks> {
        self.fallbacks.as_ref()
    }

    /// Who the repo reads and writes for.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// A view of this repo whose calls are metered apart, for reads whose cost may only be
    /// reported once it is known that their result is visible to the caller: the caller then
    /// [`charge`](Repo::charge)s either the probe's cost or the price of a miss, so a cost
    /// figure never tells another tenant's row from a missing one. Its calls count against the
    /// request's budget as they are made (a lookup by id makes the same calls whether or not
    /// it finds something); its reads only once charged, at the figure the client sees.
    pub fn probe(&self) -> (Repo, Arc<CostMeter>) {
        self.probe_within(self.calls.clone())
    }

    /// [`Repo::probe`] for project reads, which may be the check that decides whether
    /// something found by id is visible: a call made only because something exists must not
    /// show in the request's budget either, so these count against a second allowance of the
    /// same size (a request's calls stay bounded by twice its budget).
    pub fn checking_probe(&self) -> (Repo, Arc<CostMeter>) {
        self.probe_within(self.checks.clone())
    }

    /// This repo with its calls counted against the visibility-check allowance (see
    /// [`Repo::checking_probe`]), for the write layer's project read after a row found by id.
    pub fn checking(&self) -> Repo {
        let store: DynStore = Arc::new(Metered::with_budget(
            self.base.clone(),
            self.meter.clone(),
            self.checks.clone(),
        ));
        Repo {
            store,
            ..self.clone()
        }
    }

    fn probe_within(&self, calls: Arc<CallBudget>) -> (Repo, Arc<CostMeter>) {
        let meter = CostMeter::new();
        let store: DynStore = Arc::new(Metered::for_probe(self.base.clone(), meter.clone(), calls));
        let repo = Repo {
            store,
            meter: meter.clone(),
            ..self.clone()
        };
        (repo, meter)
    }

    /// Adds a probe's cost to the request's, and its reads to the request's budget.
    pub fn charge(&self, cost: CostReport) {
        self.meter.charge(cost);
        self.calls.spend(cost.read_capacity_units);
    }

    /// The request's call budget (the write layer rewinds it with the meter).
    pub fn call_budget(&self) -> &Arc<CallBudget> {
        &self.calls
    }

    /// The request's meter (the write layer prices `NOT_FOUND` with it).
    pub fn meter(&self) -> &Arc<CostMeter> {
        &self.meter
    }

    /// Reads one page of `segments` after checking the request fits them.
    async fn page(
        &self,
        segments: &[Segment],
        request: &PageRequest,
        sieve: Option<&dyn paging::Sieve>,
    ) -> Result<Page, RepoError> {
        request.check_segments(segments)?;
        Ok(paging::fetch(self.store.as_ref(), segments, request, &self.budget, sieve).await?)
    }

    pub fn store(&self) -> &DynStore {
        &self.store
    }

    /// Items by key: one GetItem for a single key, else BatchGetItem calls of up to 100 keys
    /// (issued concurrently, unprocessed keys retried).
    async fn get_items(&self, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
        match keys {
            [key] => Ok(self.store.get(key).await?.item.into_iter().collect()),
            _ => retry::batch_get_all(self.store.as_ref(), keys).await,
        }
    }

    /// Tenants by id (one GetItem, or BatchGetItem calls of up to 100 keys).
    pub async fn tenants(&self, ids: &[TenantId]) -> Result<HashMap<TenantId, Tenant>, RepoError> {
        let keys: Vec<_> = ids.iter().map(keys::tenant).collect();
        let found = self.get_items(&keys).await?;
        found
            .iter()
            .map(|item| items::decode_tenant(item).map(|t| (t.id.clone(), t)))
            .collect::<Result<_, _>>()
            .map_err(Into::into)
    }

    /// A project and its custom fields: one Query of the project's partition (the project item
    /// and its field definitions share it, so one call brings both). A deleted project (whose
    /// rows await their sweep) is not found.
    pub async fn project_data(&self, id: &ProjectId) -> Result<Option<ProjectData>, RepoError> {
        Ok(self
            .load_project(id, false)
            .await?
            .filter(|data| !data.project.deleted))
    }

    /// The project partition as it is, deleted or not; `consistent` reads it strongly
    /// consistently (what writers decide on).
    pub async fn load_project(
        &self,
        id: &ProjectId,
        consistent: bool,
    ) -> Result<Option<ProjectData>, RepoError> {
        let query = Query {
            consistent,
            ..Query::partition(Index::Table, id.as_str())
        };
        // Every grid page reads this partition: its rows are read as the store read them and
        // decoded typed (see `items::decode_partition_row`).
        let found = retry::query_all_raw(self.store.as_ref(), &query).await?;
        let mut project = None;
        let mut fields = Vec::new();
        let mut retired = Vec::new();
        let mut views = Vec::new();
        for raw in found {
            match items::decode_partition_row(raw, self.fallbacks())? {
                PartitionRow::Project(found) => project = Some(found),
                PartitionRow::Field(field) if field.deleted => retired.push(field),
                PartitionRow::Field(field) => fields.push(field),
                PartitionRow::View(view) if view.deleted => {}
                PartitionRow::View(view) => views.push(view),
                PartitionRow::Other => {}
            }
        }
        fields.sort_by(|a, b| (a.position, &a.id).cmp(&(b.position, &b.id)));
        views.sort_by(|a, b| (a.position, &a.id).cmp(&(b.position, &b.id)));
        Ok(project.map(|project| ProjectData {
            project,
            fields,
            retired,
            views,
        }))
    }

    /// A tenant by id, strongly consistent (one GetItem).
    pub async fn tenant_consistent(&self, id: &TenantId) -> Result<Option<Tenant>, RepoError> {
        let out = self.store.get_consistent(&keys::tenant(id)).await?;
        Ok(out
            .item
            .map(|item| items::decode_tenant(&item))
            .transpose()?)
    }

    /// The project of a custom field, strongly consistent (one GetItem of its lookup row).
    pub async fn field_project_consistent(
        &self,
        id: &FieldId,
    ) -> Result<Option<ProjectId>, RepoError> {
        let out = self.store.get_consistent(&keys::field_lookup(id)).await?;
        Ok(out
            .item
            .map(|item| items::decode_field_lookup(&item))
            .transpose()?)
    }

    /// The project a saved view belongs to, from its lookup item (strongly consistent).
    pub async fn view_project_consistent(
        &self,
        id: &ViewId,
    ) -> Result<Option<ProjectId>, RepoError> {
        let out = self.store.get_consistent(&keys::view_lookup(id)).await?;
        Ok(out
            .item
            .map(|item| items::decode_view_lookup(&item))
            .transpose()?)
    }

    /// The projects that custom fields belong to, from their lookup items (one GetItem, or one
    /// BatchGetItem per 100 fields).
    pub async fn field_projects(
        &self,
        ids: &[FieldId],
    ) -> Result<HashMap<FieldId, ProjectId>, RepoError> {
        let keys: Vec<_> = ids.iter().map(keys::field_lookup).collect();
        let found = self.get_items(&keys).await?;
        let mut out = HashMap::new();
        for item in &found {
            let project = items::decode_field_lookup(item)?;
            if let Some(Ok(field)) = items::item_pk(item).map(FieldId::parse) {
                out.insert(field, project);
            }
        }
        Ok(out)
    }

    /// The projects of saved views, from their lookup items (as [`Repo::field_projects`]).
    pub async fn view_projects(
        &self,
        ids: &[ViewId],
    ) -> Result<HashMap<ViewId, ProjectId>, RepoError> {
        let keys: Vec<_> = ids.iter().map(keys::view_lookup).collect();
        let found = self.get_items(&keys).await?;
        let mut out = HashMap::new();
        for item in &found {
            let project = items::decode_view_lookup(item)?;
            if let Some(Ok(view)) = items::item_pk(item).map(ViewId::parse) {
                out.insert(view, project);
            }
        }
        Ok(out)
    }

    /// Issues by full key (one GetItem, or BatchGetItem calls of up to 100 keys issued
    /// concurrently), each with its key. Keys without an issue are left out. Each key comes
    /// from the item it was read from, whose table key is the key asked for.
    pub async fn issues(&self, keys: &[IssueKey]) -> Result<Vec<(IssueKey, Issue)>, RepoError> {
        let store_keys: Vec<_> = keys
            .iter()
            .map(|k| keys::issue(&k.issue, &k.project))
            .collect();
        // A grid page sorted by any column but num loads its rows here: they are read as the
        // store read them and decoded typed, with no attribute map (see `items::decode_issue_raw`).
        let found = match &store_keys[..] {
            [key] => self
                .store
                .get(key)
                .await?
                .item
                .map(RawItem::Map)
                .into_iter()
                .collect(),
            _ => retry::batch_get_all_raw(self.store.as_ref(), &store_keys).await?,
        };
        let mut ids = items::SharedIds::counting(self.fallbacks.clone());
        found
            .into_iter()
            .map(|raw| {
                let issue = items::decode_issue_raw(raw, &mut ids)?;
                let key = IssueKey {
                    issue: issue.id.clone(),
                    project: issue.project.clone(),
                };
                Ok((key, issue))
            })
            .collect()
    }

    /// An issue by id alone: one Query of its partition for the first item whose sort key
    /// starts with `project-` (the source item sorts before its own sort rows).
    pub async fn issue_by_id(&self, id: &IssueId) -> Result<Option<Issue>, RepoError> {
        self.load_issue(id, false).await
    }

    /// [`Repo::issue_by_id`], strongly consistent when `consistent`.
    pub async fn load_issue(
        &self,
        id: &IssueId,
        consistent: bool,
    ) -> Result<Option<Issue>, RepoError> {
        let query = Query {
            sort: SortCondition::BeginsWith(keys::ISSUE_SOURCE_SK_PREFIX.into()),
            limit: Some(1),
            consistent,
            ..Query::partition(Index::Table, id.as_str())
        };
        let out = self.store.query(&query).await?;
        match out.items.into_iter().next() {
            Some(item) if items::item_type(&item) == Some(items::types::ISSUE) => {
                Ok(Some(items::decode_issue(item)?))
            }
            _ => Ok(None),
        }
    }

    /// An issue and every row it has, strongly consistent (one Query of its partition): what
    /// writers diff against, so a write also repairs index rows that drifted. Only rows of the
    /// layout's types are returned; rows other tools keep in the partition are left alone.
    pub async fn issue_rows_consistent(
        &self,
        id: &IssueId,
    ) -> Result<Option<(Issue, Vec<Item>)>, RepoError> {
        let query = Query {
            consistent: true,
            ..Query::partition(Index::Table, id.as_str())
        };
        let mut rows = retry::query_all(self.store.as_ref(), &query).await?;
        rows.retain(|item| {
            matches!(
                items::item_type(item),
                Some(
                    items::types::ISSUE
                        | items::types::FIELD_VALUE
                        | items::types::ISSUE_SORT
                        | items::types::VIEW_ROW
                )
            )
        });
        let Some(source) = rows
            .iter()
            .find(|item| items::item_type(item) == Some(items::types::ISSUE))
        else {
            return Ok(None);
        };
        let issue = items::decode_issue(source.clone())?;
        Ok(Some((issue, rows)))
    }

    /// The cursor a project has in its tenant's list (by name), for a client that inserts a
    /// new project into its cached list.
    pub fn project_cursor(&self, project: &Project) -> String {
        self.projects_scope(&project.tenant).cursor(&Position {
            segment: 0,
            pk: project.id.to_string(),
            gsi1sk: keys::project_sort(&project.name, &project.id),
        })
    }

    /// The cursor an issue has under its project's default order (by num ascending).
    pub fn issue_cursor(&self, tenant: &TenantId, issue: &Issue) -> String {
        self.issues_scope(tenant, &issue.project, &IssueList::default())
            .cursor(&Position {
                segment: 0,
                pk: issue.id.to_string(),
                gsi1sk: keys::issue_sort(issue.num),
            })
    }

    /// The scope of the tenant list the caller sees, for its cursors: the whole directory for
    /// an unrestricted caller, the caller's own tenant for a tenant's caller, so a cursor of
    /// one list is refused by the other.
    pub fn tenants_scope(&self) -> Scope {
        let name = match &self.access {
            Access::Unrestricted => "tenants|*".to_string(),
            Access::Tenant(principal) => format!("tenants|{}", principal.tenant),
        };
        Scope::new(name, self.cursors.clone())
    }

    /// A page of the tenants the caller sees, by name (case-insensitively, then by id).
    /// Unrestricted: one Query of the `GSI1` partition that holds every tenant's directory
    /// row, whose copy of the name is all a tenant has, so nothing more is read. A tenant's
    /// caller sees its own tenant alone: one GetItem of its tenant item (no other tenant's row
    /// is read), paged in memory as the directory would page it.
    pub async fn tenants_page(&self, request: &PageRequest) -> Result<Paged<Tenant>, RepoError> {
        let scope = self.tenants_scope();
        let segments = [Segment {
            partition: keys::TENANTS_PARTITION.to_string(),
            sort: SortCondition::Any,
            key_prefix: String::new(),
            ascending: true,
            filter: None,
        }];
        let own = match &self.access {
            Access::Unrestricted => {
                let page = self.page(&segments, request, None).await?;
                return paged(&scope, page, |raw| {
                    let item = items::raw_item(raw, "tenant directory row")?;
                    Ok(items::decode_tenant_directory(&item)?)
                });
            }
            Access::Tenant(principal) => principal.tenant.clone(),
        };
        request.check_segments(&segments)?;
        let rows = self
            .tenants(std::slice::from_ref(&own))
            .await?
            .into_values()
            .map(|tenant| {
                let position = Position {
                    segment: 0,
                    pk: tenant.id.to_string(),
                    gsi1sk: keys::tenant_sort(&tenant.name, &tenant.id),
                };
                (position, tenant)
            })
            .collect();
        let page = paging::known_page(rows, request);
        Ok(Paged {
            rows: page
                .rows
                .into_iter()
                .map(|(position, tenant)| (scope.cursor(&position), tenant))
                .collect(),
            has_next: page.has_next,
            has_previous: page.has_previous,
            resume_cursor: None,
            plan: None,
        })
    }

    /// The scope of a tenant's project list, for its cursors.
    pub fn projects_scope(&self, tenant: &TenantId) -> Scope {
        Scope::new(format!("projects|{tenant}"), self.cursors.clone())
    }

    /// A page of a tenant's projects by name: one Query of `GSI1`.
    pub async fn projects_page(
        &self,
        tenant: &TenantId,
        request: &PageRequest,
    ) -> Result<Paged<Project>, RepoError> {
        if !self.access.sees(tenant) {
            return Ok(Paged::empty());
        }
        let segments = [Segment {
            partition: keys::projects_partition(tenant),
            sort: SortCondition::Any,
            key_prefix: String::new(),
            ascending: true,
            filter: None,
        }];
        let page = self.page(&segments, request, None).await?;
        let scope = self.projects_scope(tenant);
        paged(&scope, page, |raw| {
            Ok(items::decode_project(&items::raw_item(raw, "project")?)?)
        })
    }

    /// The scope of a project's issue list in one ordering, for its cursors. It names the
    /// project's tenant too, so a cursor is bound to the tenant it was issued for.
    /// The scope names the filter too (in its canonical text), so a cursor is bound to the
    /// filter it was read with as well as to the order; a list without a filter and with empty
    /// cells last keeps the scope it always had, so cursors clients hold stay valid.
    pub fn issues_scope(&self, tenant: &TenantId, project: &ProjectId, list: &IssueList) -> Scope {
        let sort = &list.sort;
        let field = match &sort.field {
            SortField::Num => "NUM".to_string(),
            SortField::Name => "NAME".to_string(),
            SortField::State => "STATE".to_string(),
            SortField::Custom(f) => format!("CUSTOM_FIELD:{f}"),
            SortField::View { view, generation } => format!("VIEW:{view}.{generation}"),
        };
        let direction = if sort.ascending { "ASC" } else { "DESC" };
        let mut scope = format!("issues|{tenant}|{project}|{field}|{direction}");
        if sort.empty_first {
            scope.push_str("|EMPTY_FIRST");
        }
        if let Some(filter) = &list.filter {
            scope.push_str("|filter:");
            scope.push_str(&filter.to_string());
        }
        Scope::new(scope, self.cursors.clone())
    }

    /// A page of a project's issues in the given order: one Query of `GSI1` per segment read
    /// (one for a page inside a segment). Rows read from derived index rows come back as keys
    /// for the caller to batch-load; rows read from issue items come back loaded.
    pub async fn issues_page(
        &self,
        tenant: &TenantId,
        project: &ProjectId,
        list: &IssueList,
        counts: Option<&IssueCounts>,
        request: &PageRequest,
    ) -> Result<Paged<IssueRow>, RepoError> {
        // Defence in depth: resolvers only page projects they could load, and loading checks
        // the tenant; a list of another tenant's is empty all the same.
        if !self.access.sees(tenant) {
            return Ok(Paged::empty());
        }
        let plan = Plan::new(project, list, counts);
        let sieve = plan.residual.clone().map(|filter| IssueSieve {
            store: self.store.clone(),
            project: project.clone(),
            filter,
            fallbacks: self.fallbacks.clone(),
        });
        let page = self
            .page(
                &plan.segments,
                request,
                sieve.as_ref().map(|s| s as &dyn paging::Sieve),
            )
            .await?;
        let report = plan_report(list, &plan, &page);
        let mut rows = self.issue_rows(tenant, project, list, page)?;
        rows.plan = report;
        Ok(rows)
    }

    /// Connection arguments checked as far as they can be before their list is known (see
    /// [`UncheckedRequest`]).
    pub fn unchecked_request(&self, args: &PageArgs) -> Result<UncheckedRequest, PagingError> {
        UncheckedRequest::from_args(&self.cursors, args)
    }

    /// A read page of a project's issues as connection rows with their cursors.
    fn issue_rows(
        &self,
        tenant: &TenantId,
        project: &ProjectId,
        list: &IssueList,
        page: Page,
    ) -> Result<Paged<IssueRow>, RepoError> {
        let scope = self.issues_scope(tenant, project, list);
        let mut ids = items::SharedIds::counting(self.fallbacks.clone());
        paged(&scope, page, |raw| {
            match items::decode_issue_list_row(raw, &mut ids)? {
                IssueListRow::Issue(issue) => Ok(IssueRow::Loaded(issue)),
                IssueListRow::Index(Ok(issue)) => Ok(IssueRow::Key(IssueKey {
                    issue,
                    project: project.clone(),
                })),
                IssueListRow::Index(Err(pk)) => Err(bad_index_row(pk.as_deref())),
            }
        })
    }

    /// Writes items without conditions, for loading data in bulk (seeding).
    pub async fn bulk_put(&self, items: Vec<Item>) -> Result<(), RepoError> {
        self.store.bulk_put(items).await?;
        Ok(())
    }
}

/// Tests the issues a filtered list reads against what of its filter no key condition answers:
/// issue items as they are, index rows once their issues are loaded (in one batch per query,
/// the issue then taking the row's place).
struct IssueSieve {
    store: DynStore,
    project: ProjectId,
    filter: Predicate,
    fallbacks: Option<Fallbacks>,
}

#[async_trait::async_trait]
impl paging::Sieve for IssueSieve {
    async fn sift(&self, rows: Vec<paging::Row>) -> Result<Vec<paging::Row>, StoreError> {
        let mut ids = items::SharedIds::counting(self.fallbacks.clone());
        let corrupt = |e: ItemError| StoreError::Corrupt(e.to_string());
        // Each row with its issue, or the id of the issue still to load.
        let mut decided = Vec::with_capacity(rows.len());
        let mut wanted = Vec::new();
        for row in rows {
            match items::decode_issue_list_row(row.item.clone(), &mut ids).map_err(corrupt)? {
                IssueListRow::Issue(issue) => decided.push((row, Ok(issue))),
                IssueListRow::Index(Ok(issue)) => {
                    // The lists a filter reads are one project's: its issues are keyed by it.
                    wanted.push(keys::issue(&issue, &self.project));
                    decided.push((row, Err(issue)));
                }
                IssueListRow::Index(Err(pk)) => {
                    return Err(StoreError::Corrupt(
                        bad_index_row(pk.as_deref()).to_string(),
                    ))
                }
            }
        }
        let mut loaded: HashMap<IssueId, (Issue, RawItem)> = HashMap::new();
        if !wanted.is_empty() {
            for raw in retry::batch_get_all_raw(self.store.as_ref(), &wanted).await? {
                let issue = items::decode_issue_raw(raw.clone(), &mut ids).map_err(corrupt)?;
                loaded.insert(issue.id.clone(), (issue, raw));
            }
        }
        Ok(decided
            .into_iter()
            .filter_map(|(mut row, issue)| match issue {
                Ok(issue) => self.filter.matches(&issue).then_some(row),
                Err(id) => {
                    // An index row whose issue is gone (a write in flight) is not in the list.
                    let (issue, raw) = loaded.remove(&id)?;
                    self.filter.matches(&issue).then(|| {
                        row.item = raw;
                        row
                    })
                }
            })
            .collect())
    }
}

/// How a filtered list's page was read (`None` for an unfiltered list).
fn plan_report(list: &IssueList, plan: &Plan, page: &Page) -> Option<PlanReport> {
    list.filter.as_ref().map(|_| PlanReport {
        segments: plan.describe(),
        residual: plan.residual.as_ref().map(ToString::to_string),
        rows_read: page.scanned,
        rows_returned: page.rows.len(),
    })
}

fn bad_index_row(pk: Option<&str>) -> RepoError {
    RepoError::Item(ItemError {
        pk: pk.unwrap_or_default().to_string(),
        sk: String::new(),
        expected: "index row",
        reason: "PK is not an issue id".into(),
    })
}

fn paged<T>(
    scope: &Scope,
    page: Page,
    mut decode: impl FnMut(RawItem) -> Result<T, RepoError>,
) -> Result<Paged<T>, RepoError> {
    let resume_cursor = page.resume.as_ref().map(|p| scope.cursor(p));
    let rows = page
        .rows
        .into_iter()
        .map(|row| Ok((scope.cursor(&row.position), decode(row.item)?)))
        .collect::<Result<_, RepoError>>()?;
    Ok(Paged {
        rows,
        has_next: page.has_next,
        has_previous: page.has_previous,
        resume_cursor,
        plan: None,
    })
}

/// The time now, in Unix seconds (idempotency records, tombstones).
pub(crate) fn now_secs() -> i64 {
    now_millis() / 1000
}

/// The time now, in Unix milliseconds (sweep jobs and their leases, ordering of jobs).
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The project is not deleted and its fields (and views) are the ones a write validated
/// against: every change of a field or a view moves `FieldsVersion` on.
pub(crate) fn project_unchanged(project: &Project) -> crate::store::Condition {
    use crate::items::attrs;
    use crate::store::Condition;
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
