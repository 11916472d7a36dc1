//! Saved views' indexes (issue 22): an index once checked against its project's fields (its
//! keys' columns and its filter's predicate), and the one row an issue derives in it. Writers,
//! the build of an index and `verify` all derive rows with [`CheckedIndex::row`], so they
//! cannot disagree on which issues a view holds or on their sort strings (whose order is the
//! view's exactly up to the exact length `keys` gives each key, and monotone beyond).

use crate::filter::{CellType, Column, FilterError, Predicate, Spec};
use crate::ids::{FieldId, IssueId, ViewId};
use crate::items;
use crate::keys::{self, ViewKeyPart};
use crate::model::{Issue, ProjectData, View, ViewColumn, ViewIndex};
use crate::store::{Item, Key};

/// At most this many views in a project.
pub const MAX_VIEWS: usize = 20;

/// Why a view's index does not check against its project's fields.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    #[error("a view sorts by 1 to 3 keys, not {0}")]
    KeyCount(usize),
    #[error("key {0}: {1} is not a custom field of the project")]
    UnknownKeyField(usize, FieldId),
    #[error("{0}")]
    Filter(#[from] FilterError),
    #[error("the stored filter is unreadable: {0}")]
    UnreadableFilter(String),
}

/// One index of a view, checked against its project's fields.
#[derive(Clone, Debug)]
pub struct CheckedIndex {
    pub view: ViewId,
    pub generation: u32,
    /// Whether the index is being built: its build inserts rows beside the writers, so a
    /// writer that derives no row in it checks that none appeared (see `writes::plan`).
    pub building: bool,
    keys: Vec<(Column, bool, bool)>,
    filter: Option<Predicate>,
}

impl CheckedIndex {
    /// `index` of `view`, checked against `project`'s live fields.
    pub fn check(
        view: &View,
        index: &ViewIndex,
        project: &ProjectData,
    ) -> Result<CheckedIndex, ViewError> {
        let building = view.building.as_ref() == Some(index);
        CheckedIndex::check_for(&view.id, building, index, project)
    }

    /// [`CheckedIndex::check`] of an index of view `view` (`building` or not) that may not be
    /// written yet: what a view's edit checks before writing it.
    pub fn check_for(
        view: &ViewId,
        building: bool,
        index: &ViewIndex,
        project: &ProjectData,
    ) -> Result<CheckedIndex, ViewError> {
        if index.keys.is_empty() || index.keys.len() > keys::MAX_VIEW_KEYS {
            return Err(ViewError::KeyCount(index.keys.len()));
        }
        let keys = index
            .keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                let column = match &key.column {
                    ViewColumn::Num => Column::Num,
                    ViewColumn::Name => Column::Name,
                    ViewColumn::State => Column::State,
                    ViewColumn::Custom(id) => {
                        let field = project
                            .field(id)
                            .ok_or_else(|| ViewError::UnknownKeyField(i, id.clone()))?;
                        Column::Custom(id.clone(), CellType::of(field))
                    }
                };
                Ok((column, key.descending, key.empty_first))
            })
            .collect::<Result<Vec<_>, ViewError>>()?;
        let filter = match filter_of(index)? {
            None => None,
            Some(spec) => {
                let types = |id: &FieldId| project.field(id).map(CellType::of);
                Some(spec.check("filter", &project.project.id, &types)?)
            }
        };
        Ok(CheckedIndex {
            view: view.clone(),
            generation: index.generation,
            building,
            keys,
            filter,
        })
    }

    /// The index's `GSI1` partition.
    pub fn partition(&self) -> String {
        partition(&self.view, self.generation)
    }

    /// Whether `issue` belongs in the index (its filter holds).
    pub fn holds(&self, issue: &Issue) -> bool {
        self.filter.as_ref().is_none_or(|f| f.matches(issue))
    }

    /// The index's sort string for `issue`: its keys' cells, then its num.
    pub fn sort(&self, issue: &Issue) -> String {
        let parts: Vec<ViewKeyPart> = self
            .keys
            .iter()
            .map(|(column, descending, empty_first)| ViewKeyPart {
                value: column.encoded(issue),
                descending: *descending,
                empty_first: *empty_first,
            })
            .collect();
        keys::view_sort(&parts, issue.num)
    }

    /// The key of `issue`'s row in the index (whether or not it has one).
    pub fn row_key(&self, issue: &IssueId) -> Key {
        keys::view_row(issue, &self.view, self.generation)
    }

    /// The row `issue` has in the index, if its filter holds.
    pub fn row(&self, issue: &Issue) -> Option<Item> {
        self.holds(issue)
            .then(|| items::view_row_item(&issue.id, &self.view, self.generation, self.sort(issue)))
    }
}

/// Every index the project's views keep (serving and building), checked. An index that no
/// longer checks (a field it names was deleted) keeps no rows: dropping such keys and leaves
/// and rebuilding the view is the field deletion's part (issue 22).
pub fn indexes(project: &ProjectData) -> Vec<CheckedIndex> {
    project
        .views
        .iter()
        .flat_map(|view| view.indexes().map(move |index| (view, index)))
        .filter_map(
            |(view, index)| match CheckedIndex::check(view, index, project) {
                Ok(checked) => Some(checked),
                Err(e) => {
                    // Until the rebuild on a field's (or option's) removal exists, such an index
                    // is no longer kept: said once per derivation, not silently.
                    tracing::warn!(view = %view.id, generation = index.generation, error = %e,
                    "a view index no longer checks against its project's fields; it is not kept");
                    None
                }
            },
        )
        .collect()
}

/// The view `id` of the project and the generation of the index its pages are read from: the
/// serving one, if it still checks against the project's fields (one naming a field deleted
/// since is not kept by writers, and its view is being rebuilt). `None` for a view the
/// project does not have.
pub fn readable<'a>(project: &'a ProjectData, id: &ViewId) -> Option<(&'a View, u32)> {
    let view = project.views.iter().find(|v| &v.id == id)?;
    let index = view.readable()?;
    CheckedIndex::check(view, index, project).ok()?;
    Some((view, index.generation))
}

/// The filter an index keeps, as written (`None`: no filter).
pub fn filter_of(index: &ViewIndex) -> Result<Option<Spec>, ViewError> {
    index
        .filter
        .as_deref()
        .map(|text| {
            serde_json::from_str(text).map_err(|e| ViewError::UnreadableFilter(e.to_string()))
        })
        .transpose()
}

/// Whether `index` sorts or filters by custom field `field`.
pub fn names(index: &ViewIndex, field: &FieldId) -> bool {
    index
        .keys
        .iter()
        .any(|k| matches!(&k.column, ViewColumn::Custom(id) if id == field))
        || filter_of(index)
            .ok()
            .flatten()
            .is_some_and(|f| f.mentions(field))
}

/// The filter as an index keeps it: `filter::Spec`'s JSON.
pub fn filter_text(spec: &Spec) -> String {
    // Strings, booleans, lists and objects: serializing cannot fail.
    serde_json::to_string(spec).unwrap_or_default()
}

/// The `GSI1` partition of generation `generation` of `view`'s index (which also names its
/// counter, `Matched:<partition>`).
pub fn partition(view: &ViewId, generation: u32) -> String {
    keys::view_partition(view, generation)
}

/// The rows `issue` has in the project's view indexes.
pub fn rows(issue: &Issue, indexes: &[CheckedIndex]) -> Vec<Item> {
    indexes
        .iter()
        .filter_map(|index| index.row(issue))
        .collect()
}

/// Whether a row (by its table `SK`) is a view index row, and of which index partition.
pub fn row_partition(sk: &str) -> Option<&str> {
    sk.starts_with(keys::VIEW_ROW_PREFIX).then_some(sk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{IssueId, ProjectId, TenantId};
    use crate::model::{CustomField, FieldType, IssueState, Project, ViewKey};
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn project(field: &FieldId) -> ProjectData {
        let id = ProjectId::parse("project-35e9").unwrap();
        ProjectData {
            project: Project {
                id: id.clone(),
                tenant: TenantId::parse("tenant-0807").unwrap(),
                name: "P".into(),
                next_issue_num: 1,
                version: 1,
                fields_version: 0,
                deleted: false,
                counts: None,
            },
            fields: vec![CustomField {
                id: field.clone(),
                project: id,
                name: "Estimate".into(),
                field_type: FieldType::Int,
                position: 1,
                version: 1,
                deleted: false,
                options: Vec::new(),
            }],
            retired: Vec::new(),
            views: Vec::new(),
        }
    }

    fn view(keys: Vec<ViewKey>, filter: Option<&str>) -> (View, ViewIndex) {
        let index = ViewIndex {
            generation: 1,
            keys,
            filter: filter.map(str::to_string),
        };
        let view = View {
            id: ViewId::parse("xview-01").unwrap(),
            project: ProjectId::parse("project-35e9").unwrap(),
            name: "V".into(),
            columns: Vec::new(),
            position: 1,
            version: 1,
            serving: Some(index.clone()),
            building: None,
            built: None,
            retired: Vec::new(),
            deleted: false,
        };
        (view, index)
    }

    proptest! {
        /// The index's rows, read in sort-string order, are the filter's issues in the view's
        /// order: its keys (each in its direction, empty cells first or last), then num in
        /// the first key's direction.
        #[test]
        fn rows_order_as_the_view_says(
            cells in prop::collection::vec((prop::option::of(-3i64..3), "[a-c]{1,2}", any::<bool>()), 1..25),
            int_desc: bool, empty_first: bool, name_desc: bool,
        ) {
            let field = FieldId::parse("xattrib-3812").unwrap();
            let data = project(&field);
            let keys = vec![
                ViewKey { column: ViewColumn::Custom(field.clone()), descending: int_desc, empty_first },
                ViewKey { column: ViewColumn::Name, descending: name_desc, empty_first: false },
            ];
            let (view, index) = view(keys, Some(r#"{"column":{"field":"STATE"},"eq":"OPEN"}"#));
            let checked = CheckedIndex::check(&view, &index, &data).unwrap();
            let issues: Vec<Issue> = cells.iter().enumerate().map(|(i, (value, name, open))| Issue {
                id: IssueId::generate(),
                project: data.project.id.clone(),
                num: i as u32 + 1,
                name: name.clone(),
                state: if *open { IssueState::Open } else { IssueState::Closed },
                values: value.iter().map(|v| (field.clone(), v.to_string().into())).collect(),
                version: 1,
            }).collect();
            let mut rows: Vec<(String, u32)> = issues
                .iter()
                .filter_map(|issue| checked.row(issue).map(|_| (checked.sort(issue), issue.num)))
                .collect();
            rows.sort();
            let got: Vec<u32> = rows.into_iter().map(|(_, num)| num).collect();
            let mut expected: Vec<&Issue> = issues.iter().filter(|i| i.state == IssueState::Open).collect();
            let value = |i: &Issue| i.values.get(&field).map(|v| v.parse::<i64>().unwrap());
            expected.sort_by(|a, b| {
                let by_value = match (value(a), value(b)) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => if empty_first { Ordering::Less } else { Ordering::Greater },
                    (Some(_), None) => if empty_first { Ordering::Greater } else { Ordering::Less },
                    (Some(x), Some(y)) => if int_desc { y.cmp(&x) } else { x.cmp(&y) },
                };
                let by_name = if name_desc { b.name.cmp(&a.name) } else { a.name.cmp(&b.name) };
                let by_num = if int_desc { b.num.cmp(&a.num) } else { a.num.cmp(&b.num) };
                by_value.then(by_name).then(by_num)
            });
            let expected: Vec<u32> = expected.into_iter().map(|i| i.num).collect();
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn an_index_on_a_field_the_project_lacks_does_not_check() {
        let field = FieldId::parse("xattrib-3812").unwrap();
        let other = FieldId::parse("xattrib-0000").unwrap();
        let (view, index) = view(
            vec![ViewKey {
                column: ViewColumn::Custom(other.clone()),
                descending: false,
                empty_first: false,
            }],
            None,
        );
        let err = CheckedIndex::check(&view, &index, &project(&field)).unwrap_err();
        assert_eq!(err, ViewError::UnknownKeyField(0, other));
    }
}
