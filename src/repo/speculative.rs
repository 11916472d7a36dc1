//! Speculative reads: a page of a project's issues read while the project itself is still
//! loading, so a grid page does not wait for one call before starting the next.
//!
//! A page's index Query needs only ids the request names (the project's, the sorted field's,
//! the cursor's position), but whether the caller may see the page is decided by the project
//! row: its tenant, and for a custom-field sort whether the field is one of its fields. So the
//! Query starts at once on a probe (its call counts against the request's budget as it is
//! made, as every lookup by id does; nothing it reads is reported yet), and
//! [`Repo::confirm_issues_page`] decides once the project is known: the page is kept and its
//! cost reported only when the project is the caller's, has the field, and every cursor was
//! issued for this very list. Otherwise the page is dropped before anything of it reaches a
//! response, and the read is reported as one miss, whatever it found, so neither data nor
//! cost figures tell another tenant's rows from missing ones.

use super::{plan_report, IssueList, IssueRow, Paged, Plan, Repo, RepoError, SortField};
use crate::ids::ProjectId;
use crate::model::ProjectData;
use crate::paging::{self, Direction, Page, PageRequest, UncheckedRequest};
use crate::store::CostReport;

/// What an eventually consistent read that finds nothing costs: one call, half a read unit
/// (DynamoDB's minimum charge), and the price at which anything the caller may not see is
/// reported.
pub const MISS: CostReport = CostReport {
    dynamodb_calls: 1,
    read_capacity_units: 0.5,
    write_capacity_units: 0.0,
};

/// A page of a project's issues read before the project was known to be visible: nothing of
/// it may be used before [`Repo::confirm_issues_page`].
pub struct SpeculativePage {
    project: ProjectId,
    list: IssueList,
    request: UncheckedRequest,
    /// `None` when the page was not read ahead (see [`Repo::speculate_issues_page`]).
    read: Option<Result<Page, RepoError>>,
    /// Whether only the list's first segment was read, so a page it did not fill may go on
    /// in the next one.
    first_segment_only: bool,
    cost: CostReport,
}

impl Repo {
    /// Reads a page of `project`'s issues on a probe, before the project is loaded: one Query
    /// of `GSI1` (as [`Repo::issues_page`] makes for a page inside a segment), whatever the
    /// data, so a read ahead says nothing through the call budget either. Only the list's
    /// first segment is read ahead, and only forward from its start or a position in it: the
    /// empty cells of a custom-field sort (a filtered, growing search) are read, if the page
    /// needs them, after the project is confirmed.
    ///
    /// A filtered list (its filter checked against the field types seen before) is read ahead
    /// only when its key conditions answer the whole filter: a residual would be a search paid
    /// from the request's read budget.
    pub async fn speculate_issues_page(
        &self,
        project: ProjectId,
        list: IssueList,
        request: UncheckedRequest,
    ) -> SpeculativePage {
        let plan = Plan::new(&project, &list, None);
        let answered = plan.residual.is_none();
        let mut segments = plan.segments;
        let wanted = request.request();
        let first_segment_only = segments.len() > 1;
        // A list whose first segment is picked out by a filter (the empty cells, when they
        // come first) is read once the project is confirmed: a filtered read spends the
        // request's read budget.
        let unfiltered_first = segments.first().is_some_and(|s| s.filter.is_none());
        let readable = answered
            && unfiltered_first
            && (!first_segment_only
                || (wanted.direction == Direction::Forward
                    && wanted.before.is_none()
                    && wanted.after.as_ref().is_none_or(|p| p.segment == 0)));
        let (probe, meter) = self.probe();
        let read = if readable {
            segments.truncate(1);
            Some(probe.page(&segments, wanted, None).await)
        } else {
            None
        };
        SpeculativePage {
            project,
            list,
            request,
            read,
            first_segment_only,
            cost: meter.report(),
        }
    }

    /// Keeps a speculative page once its project is loaded, reading the rest of a page that
    /// goes on past the list's first segment, (`None`: not found or not the
    /// caller's): returns the page as [`Repo::issues_page`] would have read it, with the
    /// request it answers, when the project is visible, has the sorted field, and the cursors
    /// belong to this list. Otherwise the page is dropped and reported as a miss; the caller
    /// then pages the usual way, which reports whatever is wrong (a field of another
    /// project, a cursor of another list) exactly as without speculation.
    ///
    /// `checked` is the list as the caller checked its arguments against the loaded project:
    /// a page read for another list (a filter checked against a field type that no longer
    /// holds) is dropped as a miss.
    pub async fn confirm_issues_page(
        &self,
        speculative: SpeculativePage,
        project: Option<&ProjectData>,
        checked: Option<&IssueList>,
    ) -> Option<Result<(PageRequest, Paged<IssueRow>), RepoError>> {
        let SpeculativePage {
            project: id,
            list,
            request,
            read,
            first_segment_only,
            cost,
        } = speculative;
        let read = read?;
        let owner = project.filter(|data| {
            checked == Some(&list)
                && data.project.id == id
                && self.access.sees(&data.project.tenant)
                && match &list.sort.field {
                    SortField::Custom(field) => data.field(field).is_some(),
                    // `checked` is the view's list at the generation it serves from now, so a
                    // page read at another one is another list already.
                    SortField::View { .. } => true,
                    SortField::Num | SortField::Name | SortField::State => true,
                }
        });
        let Some(owner) = owner else {
            self.charge(MISS);
            return None;
        };
        let tenant = &owner.project.tenant;
        let Ok(request) = request.check(&self.issues_scope(tenant, &id, &list)) else {
            self.charge(MISS);
            return None;
        };
        // From here on the read is the caller's own: it is reported at what it cost, and a
        // failed one too (outages are not secret); a failed read is simply made again.
        self.charge(cost);
        let mut page = read.ok()?;
        let plan = Plan::new(&id, &list, None);
        if first_segment_only && !page.has_next {
            // The first segment ended before the page was full: the page goes on in the next
            // segments (the empty cells), read now that the project is known.
            let rest = paging::fetch_rest(
                self.store.as_ref(),
                &plan.segments,
                &request,
                &self.budget,
                None,
                page,
                1,
            );
            page = match rest.await {
                Ok(page) => page,
                Err(e) => return Some(Err(e.into())),
            };
        }
        let report = plan_report(&list, &plan, &page);
        Some(self.issue_rows(tenant, &id, &list, page).map(|mut rows| {
            rows.plan = report;
            (request, rows)
        }))
    }
}
