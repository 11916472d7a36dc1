//! The job row of a sweep: what it removes or re-keys, and who holds its lease.

use serde::{Deserialize, Serialize};

use super::{check_type, from_item, to_item, types, ItemError};
use crate::ids::{FieldId, IssueId, ProjectId, TenantId, ViewId};
use crate::keys;
use crate::store::Item;

/// What a sweep removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepTarget {
    /// A deleted custom field's cells and index rows, then its definition and lookup rows.
    Field { project: ProjectId, field: FieldId },
    /// Every row of a deleted project: its issues with their index rows, its fields, itself.
    Project {
        project: ProjectId,
        tenant: TenantId,
    },
    /// The rows of a deleted issue that did not fit in the deleting transaction.
    Issue { project: ProjectId, issue: IssueId },
    /// A SELECT field's cells of options that moved (new sort strings) or were removed
    /// (cleared), then the field's list of what was pending.
    Options { project: ProjectId, field: FieldId },
    /// A saved view's indexes: the one being built is filled and then serves, retired ones
    /// (replaced, or all of a deleted view's) are removed with their counters, and a deleted
    /// view's rows go last.
    View { project: ProjectId, view: ViewId },
}

impl SweepTarget {
    /// The id of the entity swept.
    pub fn target_id(&self) -> &str {
        match self {
            SweepTarget::Field { field, .. } | SweepTarget::Options { field, .. } => field.as_str(),
            SweepTarget::Project { project, .. } => project.as_str(),
            SweepTarget::Issue { issue, .. } => issue.as_str(),
            SweepTarget::View { view, .. } => view.as_str(),
        }
    }

    /// The name of the job: the target's id, and for an options sweep a suffix, so a field's
    /// options job and its deletion job are two rows.
    pub fn job_name(&self) -> String {
        match self {
            SweepTarget::Options { field, .. } => format!("{field}#options"),
            other => other.target_id().to_string(),
        }
    }
}

/// A pending sweep and who holds its lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepJob {
    pub target: SweepTarget,
    /// When the job was created (its place in the job list).
    pub created: String,
    pub lease_owner: Option<String>,
    /// Unix milliseconds at which the lease lapses.
    pub lease_expires: Option<i64>,
}

entity! {
    struct SweepItem, enum SweepAttr {
        pk: String = Pk "PK",
        sk: String = Sk "SK",
        gsi1sk: String = Gsi1sk "GSI1SK",
        kind: String = Type "Type",
        target_kind: String = TargetKind "TargetKind",
        target: String = Target "Target",
        project: String = Project "Project",
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tenant: Option<String> = Tenant "Tenant",
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_owner: Option<String> = LeaseOwner "LeaseOwner",
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease_expires: Option<i64> = LeaseExpires "LeaseExpires",
    }
}

pub fn sweep_item(job: &SweepJob) -> Item {
    let key = keys::sweep(&job.target.job_name());
    let (kind, project, tenant) = match &job.target {
        SweepTarget::Field { project, .. } => ("field", project, None),
        SweepTarget::Options { project, .. } => ("options", project, None),
        SweepTarget::Project { project, tenant } => ("project", project, Some(tenant.to_string())),
        SweepTarget::Issue { project, .. } => ("issue", project, None),
        SweepTarget::View { project, .. } => ("view", project, None),
    };
    to_item(&SweepItem {
        pk: key.pk,
        sk: key.sk,
        gsi1sk: job.created.clone(),
        kind: types::SWEEP.into(),
        target_kind: kind.into(),
        target: job.target.target_id().to_string(),
        project: project.to_string(),
        tenant,
        lease_owner: job.lease_owner.clone(),
        lease_expires: job.lease_expires,
    })
}

pub fn decode_sweep(item: &Item) -> Result<SweepJob, ItemError> {
    const E: &str = "sweep job";
    check_type(item, types::SWEEP, E)?;
    let raw: SweepItem = from_item(item, E)?;
    let bad = |e: crate::ids::IdError| ItemError::new(item, E, e.to_string());
    let project = ProjectId::parse(&raw.project).map_err(bad)?;
    let target = match raw.target_kind.as_str() {
        "field" => SweepTarget::Field {
            project,
            field: FieldId::parse(&raw.target).map_err(bad)?,
        },
        "options" => SweepTarget::Options {
            project,
            field: FieldId::parse(&raw.target).map_err(bad)?,
        },
        "project" => SweepTarget::Project {
            project,
            tenant: TenantId::parse(raw.tenant.as_deref().unwrap_or_default()).map_err(bad)?,
        },
        "view" => SweepTarget::View {
            project,
            view: ViewId::parse(&raw.target).map_err(bad)?,
        },
        "issue" => SweepTarget::Issue {
            project,
            issue: IssueId::parse(&raw.target).map_err(bad)?,
        },
        other => {
            return Err(ItemError::new(
                item,
                E,
                format!("unknown target kind {other}"),
            ))
        }
    };
    Ok(SweepJob {
        target,
        created: raw.gsi1sk,
        lease_owner: raw.lease_owner,
        lease_expires: raw.lease_expires,
    })
}
