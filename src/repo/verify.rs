//! `verify` and `reindex`: re-derive every index row and `GSI1SK` from the source rows and
//! compare with (or rewrite) what the table holds.
//!
//! Both read the table with a Scan, because source rows written by another tool may lack the
//! `GSI1SK` that would list them in any index partition. Derivation uses the writers' own
//! functions ([`items::issue_items`], [`items::field_items`], [`items::tenant_items`],
//! [`keys::project_sort`]), so a table the gateway wrote is clean by construction and a clean
//! table sorts exactly as the source rows say. A table written before the tenant directory
//! existed has no directory rows: `verify` reports each tenant's as missing and `reindex`
//! writes it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use super::RepoError;
use crate::ids::{FieldId, IssueId, ProjectId, TenantId};
use crate::items::{self, attrs, types, RowChanges};
use crate::keys;
use crate::model::{CustomField, Issue, IssueCounts, Project, ProjectData, Tenant};
use crate::store::{
    retry, table, AttrPath, AttributeValue, Condition, DynStore, Item, Key, StoreError,
    UpdateAction, WriteOp, MAX_TRANSACT_WRITE,
};
use crate::view;

/// What is wrong with one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Problem {
    /// A row (or `GSI1SK`) the source rows imply is not there.
    Missing,
    /// A row is there but differs from what the source rows imply.
    Stale,
    /// A row (or `GSI1SK`) is there that no source row implies.
    Extra,
}

/// One mismatch, and how `reindex` repairs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub problem: Problem,
    pub key: Key,
    pub detail: String,
    fix: Fix,
}

#[derive(Clone, Debug, PartialEq)]
enum Fix {
    Put(Item),
    Delete,
    SetGsi1sk(String),
    RemoveGsi1sk,
    /// Sets a project's issue counters (see `model::IssueCounts`).
    /// Set the project's counters (the actions), if they still read as the scan read them
    /// (the condition): a writer that changed them since keeps its change, and the repair is
    /// left for the next run.
    SetCounts(Vec<UpdateAction>, Condition),
    /// Reported only: the repair is a sweep's (or a person's) job.
    None,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problem = match self.problem {
            Problem::Missing => "missing",
            Problem::Stale => "stale",
            Problem::Extra => "extra",
        };
        write!(f, "{problem} {}: {}", self.key, self.detail)
    }
}

/// The table's source and derived rows, grouped for checking.
#[derive(Default)]
struct Snapshot {
    tenants: BTreeMap<TenantId, Tenant>,
    /// The tenant directory's rows, by key.
    directory: BTreeMap<Key, Item>,
    projects: BTreeMap<ProjectId, (Project, Option<String>)>,
    fields: HashMap<ProjectId, Vec<CustomField>>,
    lookups: HashMap<Key, Item>,
    issues: BTreeMap<IssueId, (Issue, Option<String>)>,
    /// Index rows (IssueSort, FieldValue) by their issue id.
    index_rows: BTreeMap<String, Vec<Item>>,
    pending_sweeps: HashSet<String>,
    /// Each project's saved views, and their indexes once checked (see [`Snapshot::prepare`]).
    views: HashMap<ProjectId, Vec<crate::model::View>>,
    view_indexes: HashMap<ProjectId, Vec<view::CheckedIndex>>,
    /// Each view's partitions other than the serving one (being built, retired, or all of a
    /// deleted view's), by the view's id: its sweep's work while its job is pending.
    view_work: Vec<(crate::ids::ViewId, Vec<String>)>,
    /// The partitions of `view_work` whose job is pending: not checked (see `prepare`).
    in_work: HashSet<String>,
}

fn gsi1sk(item: &Item) -> Option<String> {
    match item.get(table::GSI1SK) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The source rows of the given projects (or of all) checked against their derived rows.
pub async fn verify(
    store: &DynStore,
    only: Option<&ProjectId>,
) -> Result<Vec<Mismatch>, RepoError> {
    let mut snapshot = Snapshot::default();
    let mut bad = Vec::new();
    retry::scan_all(store.as_ref(), |page| {
        for item in page {
            if let Err(e) = snapshot.add(item) {
                bad.push(e);
            }
        }
    })
    .await?;
    if let Some(e) = bad.into_iter().next() {
        return Err(e);
    }
    snapshot.prepare();
    Ok(snapshot.check(only))
}

/// Repairs every mismatch `verify` finds (rewriting derived rows from source rows), in
/// transactions of up to 100 rows; returns what it repaired. Idempotent: a second run finds
/// nothing to do; an interrupted run is finished by running again.
pub async fn reindex(
    store: &DynStore,
    only: Option<&ProjectId>,
) -> Result<Vec<Mismatch>, RepoError> {
    let found = verify(store, only).await?;
    let ops: Vec<WriteOp> = found
        .iter()
        .filter_map(|m| match &m.fix {
            Fix::Put(item) => Some(WriteOp::Put {
                item: item.clone(),
                condition: None,
            }),
            Fix::Delete => Some(WriteOp::Delete {
                key: m.key.clone(),
                condition: None,
            }),
            Fix::SetGsi1sk(value) => Some(WriteOp::Update {
                key: m.key.clone(),
                actions: vec![UpdateAction::Set(
                    AttrPath::new([attrs::GSI1SK]),
                    AttributeValue::S(value.clone()),
                )],
                condition: Some(Condition::Exists),
            }),
            // Conditioned repairs go alone, below.
            Fix::SetCounts(..) => None,
            Fix::RemoveGsi1sk => Some(WriteOp::Update {
                key: m.key.clone(),
                actions: vec![UpdateAction::Remove(AttrPath::new([attrs::GSI1SK]))],
                condition: Some(Condition::Exists),
            }),
            Fix::None => None,
        })
        .collect();
    let mut batch: Vec<WriteOp> = Vec::new();
    for op in ops {
        // A transaction may name an item once: a second repair of the same item (a project's
        // sort key and its counters) goes into the next one.
        if batch.iter().any(|b| b.key() == op.key()) {
            store.transact_write(std::mem::take(&mut batch)).await?;
        }
        batch.push(op);
        if batch.len() == MAX_TRANSACT_WRITE {
            store.transact_write(std::mem::take(&mut batch)).await?;
        }
    }
    if !batch.is_empty() {
        store.transact_write(batch).await?;
    }
    // Counters: each in its own transaction, conditioned on the values the scan read, since
    // writers change them all the time; one that moved since is left for the next run (and
    // left out of what this run repaired).
    let mut left = Vec::new();
    for m in &found {
        let Fix::SetCounts(actions, condition) = &m.fix else {
            continue;
        };
        let op = WriteOp::Update {
            key: m.key.clone(),
            actions: actions.clone(),
            condition: Some(condition.clone()),
        };
        match store.transact_write(vec![op]).await {
            Ok(_) => {}
            Err(StoreError::ConditionFailed { .. } | StoreError::TransactionConflict(_)) => {
                tracing::warn!(key = %m.key, "counters changed while reindex ran: run it again");
                left.push(m.key.clone());
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(found
        .into_iter()
        .filter(|m| m.fix != Fix::None)
        .filter(|m| !(matches!(m.fix, Fix::SetCounts(..)) && left.contains(&m.key)))
        .collect())
}

impl Snapshot {
    fn add(&mut self, item: Item) -> Result<(), RepoError> {
        match items::item_type(&item) {
            Some(types::TENANT) => {
                let tenant = items::decode_tenant(&item)?;
                self.tenants.insert(tenant.id.clone(), tenant);
            }
            Some(types::TENANT_DIRECTORY) => {
                if let Some(key) = items::item_key(&item) {
                    self.directory.insert(key, item);
                }
            }
            Some(types::PROJECT) => {
                let project = items::decode_project(&item)?;
                let sort = gsi1sk(&item);
                self.projects.insert(project.id.clone(), (project, sort));
            }
            Some(types::CUSTOM_FIELD) => {
                let field = items::decode_field(&item)?;
                self.fields
                    .entry(field.project.clone())
                    .or_default()
                    .push(field);
            }
            Some(types::FIELD_LOOKUP) => {
                if let Some(key) = items::item_key(&item) {
                    self.lookups.insert(key, item);
                }
            }
            Some(types::ISSUE) => {
                let sort = gsi1sk(&item);
                let issue = items::decode_issue(item)?;
                self.issues.insert(issue.id.clone(), (issue, sort));
            }
            Some(types::VIEW) => {
                let found = items::decode_view_owned(item)?;
                let serving = found.serving.as_ref().filter(|_| !found.deleted);
                let work = found
                    .building
                    .iter()
                    .chain(found.serving.iter().filter(|_| found.deleted))
                    .map(|i| i.generation)
                    .chain(found.retired.iter().copied())
                    .filter(|g| serving.is_none_or(|s| s.generation != *g))
                    .map(|g| view::partition(&found.id, g))
                    .collect();
                self.view_work.push((found.id.clone(), work));
                if !found.deleted {
                    self.views
                        .entry(found.project.clone())
                        .or_default()
                        .push(found);
                }
            }
            Some(types::FIELD_VALUE | types::ISSUE_SORT | types::VIEW_ROW) => {
                if let Some(pk) = items::item_pk(&item) {
                    self.index_rows
                        .entry(pk.to_string())
                        .or_default()
                        .push(item);
                }
            }
            Some(types::SWEEP) => {
                let job = items::decode_sweep(&item)?;
                // By the job's name: a SELECT field's options job (`<field>#options`) is no
                // deletion, and must not hide the field's rows as one would.
                self.pending_sweeps.insert(job.target.job_name());
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks every project's view indexes against its live fields, once, for the issues'
    /// checks to derive their view rows with.
    fn prepare(&mut self) {
        for (view, partitions) in &self.view_work {
            if self.pending_sweeps.contains(view.as_str()) {
                self.in_work.extend(partitions.iter().cloned());
            }
        }
        for (id, (project, _)) in &self.projects {
            let data = ProjectData {
                project: project.clone(),
                fields: self
                    .fields
                    .get(id)
                    .into_iter()
                    .flatten()
                    .filter(|f| !f.deleted)
                    .cloned()
                    .collect(),
                retired: Vec::new(),
                views: self.views.get(id).cloned().unwrap_or_default(),
            };
            // An index being built is complete only once its build swaps it in, and retired
            // ones are on their way out: while the view's job is pending, its sweep owns them.
            let indexes = view::indexes(&data)
                .into_iter()
                .filter(|i| !self.in_work.contains(&i.partition()))
                .collect();
            self.view_indexes.insert(id.clone(), indexes);
        }
    }

    fn check(&self, only: Option<&ProjectId>) -> Vec<Mismatch> {
        let mut out = Vec::new();
        let wanted = |p: &ProjectId| only.is_none_or(|o| o == p);
        // The directory belongs to no project: checked when the whole table is.
        if only.is_none() {
            self.check_directory(&mut out);
        }
        for (id, (project, sort)) in &self.projects {
            if !wanted(id) || project.deleted {
                continue;
            }
            let key = keys::project(id, &project.tenant);
            let expected = keys::project_sort(&project.name, id);
            check_gsi1sk(&mut out, key.clone(), sort.as_deref(), Some(&expected));
            self.check_counts(&mut out, key, project);
        }
        for (project, fields) in &self.fields {
            if !wanted(project) {
                continue;
            }
            for field in fields {
                let [_, lookup] = items::field_items(field);
                let key = keys::field_lookup(&field.id);
                match self.lookups.get(&key) {
                    None => out.push(mismatch(
                        Problem::Missing,
                        key,
                        "custom field lookup row",
                        Fix::Put(lookup),
                    )),
                    Some(actual) if *actual != lookup => out.push(mismatch(
                        Problem::Stale,
                        key,
                        "custom field lookup row names another project",
                        Fix::Put(lookup),
                    )),
                    Some(_) => {}
                }
            }
        }
        let all_fields: HashSet<&FieldId> = self.fields.values().flatten().map(|f| &f.id).collect();
        for (key, item) in &self.lookups {
            let field = FieldId::parse(&key.pk).ok();
            let project = items::decode_field_lookup(item).ok();
            if field.as_ref().is_some_and(|f| all_fields.contains(f)) {
                continue;
            }
            if project.as_ref().is_some_and(|p| !wanted(p)) {
                continue;
            }
            out.push(mismatch(
                Problem::Extra,
                key.clone(),
                "lookup row of a custom field that does not exist",
                Fix::Delete,
            ));
        }
        let mut seen_partitions = HashSet::new();
        for (id, (issue, sort)) in &self.issues {
            if !wanted(&issue.project) {
                continue;
            }
            seen_partitions.insert(id.to_string());
            self.check_issue(&mut out, issue, sort.as_deref());
        }
        // Index rows whose issue is gone.
        for (pk, rows) in &self.index_rows {
            if seen_partitions.contains(pk) || self.pending_sweeps.contains(pk) {
                continue;
            }
            let issue_known = IssueId::parse(pk).ok().and_then(|id| self.issues.get(&id));
            if issue_known.is_some() {
                // Belongs to an issue of a project outside `only`.
                continue;
            }
            for row in rows {
                let Some(key) = items::item_key(row) else {
                    continue;
                };
                if only.is_some_and(|p| !row_belongs_to(&key, p, &self.fields)) {
                    continue;
                }
                // Rows of a project or field whose sweep is pending are the sweep's to remove.
                let swept = self.pending_sweeps.iter().any(|target| {
                    ProjectId::parse(target).is_ok_and(|p| row_belongs_to(&key, &p, &self.fields))
                        || FieldId::parse(target)
                            .is_ok_and(|f| key.sk == keys::field_value_partition(&f))
                });
                if swept {
                    continue;
                }
                out.push(mismatch(
                    Problem::Extra,
                    key,
                    "index row of an issue that does not exist",
                    Fix::Delete,
                ));
            }
        }
        out.sort_by(|a, b| (&a.key, a.problem).cmp(&(&b.key, b.problem)));
        out
    }

    /// Every tenant's directory row against the one its item derives (a rename moves it), and
    /// no row for a tenant that does not exist.
    fn check_directory(&self, out: &mut Vec<Mismatch>) {
        for tenant in self.tenants.values() {
            let [_, row] = items::tenant_items(tenant);
            let key = keys::tenant_directory(&tenant.id);
            match self.directory.get(&key) {
                None => out.push(mismatch(
                    Problem::Missing,
                    key,
                    "tenant directory row",
                    Fix::Put(row),
                )),
                Some(actual) if *actual != row => {
                    let name = match actual.get(attrs::NAME) {
                        Some(AttributeValue::S(name)) => name.as_str(),
                        _ => "",
                    };
                    let detail = format!(
                        "tenant directory row lists {name:?} under GSI1SK {:?}; the tenant is {:?}, under {:?}",
                        gsi1sk(actual).unwrap_or_default(),
                        tenant.name,
                        gsi1sk(&row).unwrap_or_default(),
                    );
                    out.push(mismatch(Problem::Stale, key, &detail, Fix::Put(row)))
                }
                Some(_) => {}
            }
        }
        for key in self.directory.keys() {
            let exists = TenantId::parse(&key.pk).is_ok_and(|t| self.tenants.contains_key(&t));
            if !exists {
                out.push(mismatch(
                    Problem::Extra,
                    key.clone(),
                    "tenant directory row of a tenant that does not exist",
                    Fix::Delete,
                ));
            }
        }
    }

    /// A project's counters against its issues counted one by one (cells of live fields only).
    fn check_counts(&self, out: &mut Vec<Mismatch>, key: Key, project: &Project) {
        let live: HashSet<&FieldId> = self
            .fields
            .get(&project.id)
            .into_iter()
            .flatten()
            .filter(|f| !f.deleted)
            .map(|f| &f.id)
            .collect();
        let mut expected = IssueCounts::of(
            self.issues
                .values()
                .map(|(issue, _)| issue)
                .filter(|issue| issue.project == project.id),
        );
        expected
            .filled
            .retain(|field, n| live.contains(field) && *n != 0);
        for index in self.view_indexes.get(&project.id).into_iter().flatten() {
            let n = self
                .issues
                .values()
                .filter(|(issue, _)| issue.project == project.id && index.holds(issue))
                .count();
            if n > 0 {
                expected.matched.insert(index.partition(), n as i64);
            }
        }
        let mut actual = project.counts.clone();
        if let Some(actual) = &mut actual {
            actual.filled.retain(|_, n| *n != 0);
            actual
                .matched
                .retain(|p, n| *n != 0 && !self.in_work.contains(p));
        }
        if actual.as_ref() == Some(&expected) {
            return;
        }
        let number = |n: i64| AttributeValue::N(n.to_string());
        let set = |name: &str, n: i64| UpdateAction::Set(AttrPath::new([name]), number(n));
        let mut actions = vec![
            set(attrs::ISSUE_COUNT, expected.issues),
            set(attrs::OPEN_COUNT, expected.open),
            set(attrs::COUNTED, 1),
        ];
        for (field, n) in &expected.filled {
            actions.push(set(&items::filled_attr(field), *n));
        }
        for field in project.counts.iter().flat_map(|c| c.filled.keys()) {
            if !expected.filled.contains_key(field) {
                actions.push(UpdateAction::Remove(AttrPath::new([items::filled_attr(
                    field,
                )])));
            }
        }
        for (partition, n) in &expected.matched {
            actions.push(set(&items::matched_attr(partition), *n));
        }
        for partition in project.counts.iter().flat_map(|c| c.matched.keys()) {
            if !expected.matched.contains_key(partition) {
                actions.push(UpdateAction::Remove(AttrPath::new([items::matched_attr(
                    partition,
                )])));
            }
        }
        let (problem, detail) = match &actual {
            None => (
                Problem::Missing,
                "issue counters (never counted)".to_string(),
            ),
            Some(actual) => (
                Problem::Stale,
                format!(
                    "issue counters: {} issues, {} open, filled {:?}, in views {:?}; the issues say {}, {}, {:?}, {:?}",
                    actual.issues,
                    actual.open,
                    actual.filled.values().collect::<Vec<_>>(),
                    actual.matched.values().collect::<Vec<_>>(),
                    expected.issues,
                    expected.open,
                    expected.filled.values().collect::<Vec<_>>(),
                    expected.matched.values().collect::<Vec<_>>()
                ),
            ),
        };
        // As the scan read them: a counter read as 0 may be absent, and a field counter the
        // scan did not see must still be absent.
        let read = |name: &str, n: i64| {
            let value = number(n);
            if n == 0 {
                Condition::equals_or_missing(name, value)
            } else {
                Condition::equals(name, value)
            }
        };
        let condition = match &project.counts {
            None => Condition::AttributeMissing(attrs::COUNTED.into()),
            Some(read_counts) => {
                let mut all = vec![
                    read(attrs::ISSUE_COUNT, read_counts.issues),
                    read(attrs::OPEN_COUNT, read_counts.open),
                ];
                for (field, n) in &read_counts.filled {
                    all.push(read(&items::filled_attr(field), *n));
                }
                for field in expected.filled.keys() {
                    if !read_counts.filled.contains_key(field) {
                        all.push(Condition::AttributeMissing(items::filled_attr(field)));
                    }
                }
                for (partition, n) in &read_counts.matched {
                    all.push(read(&items::matched_attr(partition), *n));
                }
                for partition in expected.matched.keys() {
                    if !read_counts.matched.contains_key(partition) {
                        all.push(Condition::AttributeMissing(items::matched_attr(partition)));
                    }
                }
                Condition::All(all)
            }
        };
        out.push(mismatch(
            problem,
            key,
            &detail,
            Fix::SetCounts(actions, condition),
        ));
    }

    fn check_issue(&self, out: &mut Vec<Mismatch>, issue: &Issue, sort: Option<&str>) {
        let Some((project, _)) = self.projects.get(&issue.project) else {
            out.push(mismatch(
                Problem::Extra,
                keys::issue(&issue.id, &issue.project),
                "issue of a project that does not exist",
                Fix::None,
            ));
            return;
        };
        if project.deleted && self.pending_sweeps.contains(project.id.as_str()) {
            return;
        }
        let fields: &[CustomField] = self
            .fields
            .get(&issue.project)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let live: Vec<CustomField> = fields.iter().filter(|f| !f.deleted).cloned().collect();
        // Cells of deleted fields whose sweep is pending are the sweep's; other cells that no
        // live field accepts are reported.
        let mut sweeping = HashSet::new();
        for (field_id, text) in &issue.values {
            match fields.iter().find(|f| &f.id == field_id) {
                Some(f) if f.deleted && self.pending_sweeps.contains(f.id.as_str()) => {
                    sweeping.insert(format!("{}{}", keys::VALUE_PREFIX, f.id.part()));
                }
                Some(f) if !f.deleted => {
                    if f.stored_value(text).is_err() {
                        out.push(mismatch(
                            Problem::Stale,
                            keys::issue(&issue.id, &issue.project),
                            &format!(
                                "value {text:?} of {field_id} is not a valid {}",
                                f.field_type.as_str()
                            ),
                            Fix::None,
                        ));
                    }
                }
                _ => out.push(mismatch(
                    Problem::Extra,
                    keys::issue(&issue.id, &issue.project),
                    &format!("cell of {field_id}, which is not a custom field of the project"),
                    Fix::None,
                )),
            }
        }
        // Value rows still under a moved option's old key, per value partition.
        let stale: HashMap<String, Vec<String>> = live
            .iter()
            .filter(|f| f.reindexing())
            .map(|f| {
                let parts = f
                    .options
                    .iter()
                    .flat_map(|o| &o.stale_keys)
                    .map(|k| format!("{}{}", keys::option_part(k), keys::SORT_SEPARATOR))
                    .collect();
                (keys::field_value_partition(&f.id), parts)
            })
            .collect();
        let awaits_sweep = |key: &Key, old: &Item| {
            let sort = gsi1sk(old).unwrap_or_default();
            stale
                .get(&key.sk)
                .is_some_and(|parts| parts.iter().any(|p| sort.starts_with(p.as_str())))
        };
        let mut expected_rows = items::issue_items_lenient(issue, &live);
        if let Some(indexes) = self.view_indexes.get(&issue.project) {
            expected_rows.extend(view::rows(issue, indexes));
        }
        let source_key = keys::issue(&issue.id, &issue.project);
        check_gsi1sk(
            out,
            source_key.clone(),
            sort,
            Some(&keys::issue_sort(issue.num)),
        );
        // Rows of view partitions a pending view sweep owns are its to write or remove.
        let stored: Vec<Item> = self
            .index_rows
            .get(issue.id.as_str())
            .into_iter()
            .flatten()
            .filter(|row| items::item_key(row).is_none_or(|k| !self.in_work.contains(&k.sk)))
            .cloned()
            .collect();
        let stored = stored.as_slice();
        let actual: HashMap<Key, &Item> = stored
            .iter()
            .filter_map(|item| Some((items::item_key(item)?, item)))
            .collect();
        // The writers' own diff, between the index rows stored and those the source implies.
        let expected_index: Vec<Item> = expected_rows
            .into_iter()
            .filter(|row| items::item_key(row).as_ref() != Some(&source_key))
            .collect();
        let RowChanges { puts, deletes } = items::diff_rows(stored, &expected_index);
        for row in puts {
            let Some(key) = items::item_key(&row) else {
                continue;
            };
            match actual.get(&key) {
                None => out.push(mismatch(Problem::Missing, key, "index row", Fix::Put(row))),
                // A moved option's rows keep their old key until the options sweep re-keys
                // them: the sweep's to fix, as the field's status says.
                Some(old) if awaits_sweep(&key, old) => {}
                Some(old) => {
                    let detail = format!(
                        "index row has GSI1SK {:?}, expected {:?}",
                        gsi1sk(old).unwrap_or_default(),
                        gsi1sk(&row).unwrap_or_default()
                    );
                    out.push(mismatch(Problem::Stale, key, &detail, Fix::Put(row)))
                }
            }
        }
        for key in deletes {
            if !sweeping.contains(&key.sk) {
                out.push(mismatch(
                    Problem::Extra,
                    key,
                    "index row that the issue does not imply",
                    Fix::Delete,
                ));
            }
        }
    }
}

/// Whether an orphan index row belongs to project `p` (by its sort-row partition, or its
/// value row's field).
fn row_belongs_to(key: &Key, p: &ProjectId, fields: &HashMap<ProjectId, Vec<CustomField>>) -> bool {
    if key.sk.starts_with(p.as_str()) {
        return true;
    }
    fields.get(p).is_some_and(|fs| {
        fs.iter()
            .any(|f| key.sk == format!("{}{}", keys::VALUE_PREFIX, f.id.part()))
    })
}

fn check_gsi1sk(out: &mut Vec<Mismatch>, key: Key, actual: Option<&str>, expected: Option<&str>) {
    match (actual, expected) {
        (None, Some(e)) => out.push(mismatch(
            Problem::Missing,
            key,
            &format!("GSI1SK (expected {e:?})"),
            Fix::SetGsi1sk(e.to_string()),
        )),
        (Some(a), Some(e)) if a != e => out.push(mismatch(
            Problem::Stale,
            key,
            &format!("GSI1SK is {a:?}, expected {e:?}"),
            Fix::SetGsi1sk(e.to_string()),
        )),
        (Some(a), None) => out.push(mismatch(
            Problem::Extra,
            key,
            &format!("GSI1SK {a:?} on a row that should not be listed"),
            Fix::RemoveGsi1sk,
        )),
        _ => {}
    }
}

fn mismatch(problem: Problem, key: Key, detail: &str, fix: Fix) -> Mismatch {
    Mismatch {
        problem,
        key,
        detail: detail.to_string(),
        fix,
    }
}
