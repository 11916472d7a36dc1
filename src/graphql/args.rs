//! The arguments of the connection fields, one type per field: `IssuesArgs` for
//! `Project.issues`, built on paging's `PageArgs` (which `Tenant.projects` takes as it is).
//! The resolver, the prefetch (its key and its speculative read) and the look-ahead all take
//! these types, and each builds or takes them apart with an exhaustive struct pattern, so an
//! argument added to a field does not compile until every one of them handles it; a test holds
//! the names to the schema's. Also the argument types of the issue ordering.

use async_graphql::{Context, Enum, InputObject, InputType, Name, Value, ID};

use super::error::ApiError;
use super::request::{referenced_project, FieldTypeCache};
use crate::filter::{CellType, ColumnField, ColumnSpec, FieldTypesOf, Predicate, Spec};
use crate::ids::{FieldId, ProjectId};
use crate::model::ProjectData;
use crate::paging::PageArgs;
use crate::repo::{IssueList, IssueSort, SortField};

/// The arguments of `Project.issues`, as the client wrote them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct IssuesArgs {
    pub page: PageArgs,
    pub order_by: Option<IssueOrder>,
    pub filter: Option<IssueFilter>,
}

impl IssuesArgs {
    /// The arguments' names in the schema.
    pub const NAMES: [&'static str; 6] = ["first", "after", "last", "before", "orderBy", "filter"];

    /// The arguments of an `issues` field as the look-ahead sees them (literals with the
    /// request's variables put in); `None` when they are not valid, which the resolver reports.
    pub fn from_arguments(arguments: &[(Name, Value)]) -> Option<IssuesArgs> {
        let arg = |name: &str| {
            arguments
                .iter()
                .find(|(n, _)| n.as_str() == name)
                .map(|(_, v)| v.clone())
        };
        fn parse<T: InputType>(value: Option<Value>) -> Option<T> {
            T::parse(value).ok()
        }
        Some(IssuesArgs {
            page: PageArgs {
                first: parse(arg("first"))?,
                after: parse(arg("after"))?,
                last: parse(arg("last"))?,
                before: parse(arg("before"))?,
            },
            order_by: parse(arg("orderBy"))?,
            filter: parse(arg("filter"))?,
        })
    }

    /// The sort asked for, checked as far as it can be without the project.
    pub fn unchecked_sort(&self) -> Result<IssueSort, ApiError> {
        match &self.order_by {
            None => Ok(IssueSort::default()),
            Some(order) => order.unchecked_sort(),
        }
    }

    /// The list asked for (its order and filter), checked against the project's fields.
    pub async fn list(
        &self,
        ctx: &Context<'_>,
        project: &ProjectId,
    ) -> Result<IssueList, ApiError> {
        let sort = match &self.order_by {
            None => IssueSort::default(),
            Some(order) => order.to_sort(ctx, project).await?,
        };
        let filter = match &self.filter {
            None => None,
            Some(filter) => {
                let data = referenced_project(ctx, project).await?;
                if let Ok(types) = ctx.data::<std::sync::Arc<FieldTypeCache>>() {
                    types.learn(&data);
                }
                Some(filter.check(&data)?)
            }
        };
        Ok(IssueList { sort, filter })
    }
}

/// Where the issues without a value go in a list sorted by a custom field.
#[derive(Enum, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum EmptyPlacement {
    /// Before every issue that has a value, whatever the direction.
    First,
    /// After every issue that has a value, whatever the direction.
    #[default]
    Last,
}

/// A column of the issue list, as a filter names it.
#[derive(InputObject, Clone, Debug, PartialEq, Eq, Hash)]
pub struct IssueColumn {
    /// The column: `NUM`, `NAME`, `STATE`, or `CUSTOM_FIELD` with `customFieldId`.
    pub field: IssueOrderField,
    /// The custom field; required with `CUSTOM_FIELD`, not allowed otherwise.
    pub custom_field_id: Option<ID>,
}

/// A filter of a project's issues: either one combinator (exactly one of `and`, `or`, `not`,
/// and nothing else), or a leaf: a `column` and at least one operator, all of which must hold
/// (so `gte` with `lt` is a range).
///
/// Operands are the column's canonical text, as in `FieldValueInput`: NUM an integer, STATE
/// `OPEN` or `CLOSED`, INT and NUMBER numbers (compared numerically), DATE `YYYY-MM-DD`,
/// CHECKBOX `true` or `false` (`false` first), SELECT the id of one of the field's options
/// (compared in the options' order). Text (NAME, TEXT) is compared case-insensitively, as it
/// sorts. An empty cell is like SQL's NULL:
/// only `isEmpty: true` matches it, every other operator is false on it, and `not` inverts the
/// result (so `not: {column: X, eq: "a"}` keeps the empty cells).
///
/// At most 20 leaves, 50 filter objects in all, 4 levels deep, and 100 values in an `in`.
#[derive(InputObject, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct IssueFilter {
    /// Issues that match every one of these filters (all issues when empty).
    pub and: Option<Vec<IssueFilter>>,
    /// Issues that match at least one of these filters (none when empty).
    pub or: Option<Vec<IssueFilter>>,
    /// Issues that do not match this filter.
    pub not: Option<Box<IssueFilter>>,
    /// The column a leaf tests.
    pub column: Option<IssueColumn>,
    /// The cell equals this value.
    pub eq: Option<String>,
    /// The cell has a value other than this one.
    pub ne: Option<String>,
    /// The cell equals one of these values (at most 100).
    #[graphql(name = "in")]
    pub in_: Option<Vec<String>>,
    /// The cell's value is below this one.
    pub lt: Option<String>,
    /// The cell's value is at most this one.
    pub lte: Option<String>,
    /// The cell's value is above this one.
    pub gt: Option<String>,
    /// The cell's value is at least this one.
    pub gte: Option<String>,
    /// `true`: the cell is empty; `false`: it has a value.
    pub is_empty: Option<bool>,
    /// The text contains this text, case-insensitively (NAME and TEXT columns only).
    pub contains: Option<String>,
    /// The text starts with this text, case-insensitively (NAME and TEXT columns only).
    pub starts_with: Option<String>,
}

impl IssueFilter {
    /// The filter checked against the project's fields: `BAD_USER_INPUT` naming the path in
    /// the filter of the first thing wrong.
    pub fn check(&self, project: &ProjectData) -> Result<Predicate, ApiError> {
        let types = |id: &FieldId| project.field(id).map(CellType::of);
        self.check_with(&project.project.id, &types)
    }

    /// [`IssueFilter::check`] against the field types `types` gives (what the read-ahead
    /// knows before the project loads: a field's type never changes).
    pub fn check_with(
        &self,
        project: &ProjectId,
        types: &FieldTypesOf<'_>,
    ) -> Result<Predicate, ApiError> {
        self.to_spec()
            .check("filter", project, types)
            .map_err(|e| ApiError::BadUserInput(e.to_string()))
    }

    /// The filter as `filter` checks (and a saved view keeps) it: field by field, the same.
    pub fn to_spec(&self) -> Spec {
        let IssueFilter {
            and,
            or,
            not,
            column,
            eq,
            ne,
            in_,
            lt,
            lte,
            gt,
            gte,
            is_empty,
            contains,
            starts_with,
        } = self;
        let list = |filters: &Option<Vec<IssueFilter>>| {
            filters
                .as_ref()
                .map(|fs| fs.iter().map(IssueFilter::to_spec).collect())
        };
        Spec {
            and: list(and),
            or: list(or),
            not: not.as_ref().map(|f| Box::new(f.to_spec())),
            column: column.as_ref().map(IssueColumn::to_spec),
            eq: eq.clone(),
            ne: ne.clone(),
            in_: in_.clone(),
            lt: lt.clone(),
            lte: lte.clone(),
            gt: gt.clone(),
            gte: gte.clone(),
            is_empty: *is_empty,
            contains: contains.clone(),
            starts_with: starts_with.clone(),
        }
    }
}

impl IssueColumn {
    fn to_spec(&self) -> ColumnSpec {
        ColumnSpec {
            field: match self.field {
                IssueOrderField::Num => ColumnField::Num,
                IssueOrderField::Name => ColumnField::Name,
                IssueOrderField::State => ColumnField::State,
                IssueOrderField::CustomField => ColumnField::CustomField,
            },
            custom_field_id: self.custom_field_id.as_ref().map(|id| id.to_string()),
        }
    }
}

/// The column to sort issues by.
#[derive(Enum, Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum IssueOrderField {
    /// The issue number.
    Num,
    /// The issue name, case-insensitively.
    Name,
    /// The state, OPEN before CLOSED.
    State,
    /// The custom field given in `customFieldId`, by its type.
    CustomField,
}

/// Sort direction.
#[derive(Enum, Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum OrderDirection {
    /// Smallest first (for custom fields, `empty` places the issues without a value).
    #[default]
    Asc,
    /// Largest first (for custom fields, `empty` places the issues without a value).
    Desc,
}

/// How to sort a project's issues. Ties break by `num` in the same direction.
#[derive(InputObject, Clone, Debug, PartialEq, Eq, Hash)]
pub struct IssueOrder {
    /// The column to sort by.
    pub field: IssueOrderField,
    /// The custom field to sort by; required with `CUSTOM_FIELD`, not allowed otherwise.
    pub custom_field_id: Option<ID>,
    /// Ascending or descending; default `ASC`.
    #[graphql(default_with = "OrderDirection::Asc")]
    pub direction: OrderDirection,
    /// Where issues without a value go, for a custom field: `LAST` (the default) or `FIRST`,
    /// in either direction.
    #[graphql(default_with = "EmptyPlacement::Last")]
    pub empty: EmptyPlacement,
}

impl IssueOrder {
    /// The sort asked for, checked as far as it can be without the project: a custom field
    /// still has to be one of the project's (see [`IssueOrder::to_sort`]).
    pub(crate) fn unchecked_sort(&self) -> Result<IssueSort, ApiError> {
        let ascending = self.direction == OrderDirection::Asc;
        let field = match (self.field, &self.custom_field_id) {
            (IssueOrderField::CustomField, None) => {
                return Err(ApiError::BadUserInput(
                    "orderBy: CUSTOM_FIELD needs `customFieldId`, the id of one of the project's custom fields".into(),
                ))
            }
            (IssueOrderField::CustomField, Some(id)) => {
                SortField::Custom(FieldId::parse(id).map_err(ApiError::from)?)
            }
            (_, Some(_)) => {
                return Err(ApiError::BadUserInput(
                    "orderBy: `customFieldId` only applies to field CUSTOM_FIELD".into(),
                ))
            }
            (IssueOrderField::Num, None) => SortField::Num,
            (IssueOrderField::Name, None) => SortField::Name,
            (IssueOrderField::State, None) => SortField::State,
        };
        Ok(IssueSort {
            field,
            ascending,
            empty_first: self.empty == EmptyPlacement::First,
        })
    }

    pub(crate) async fn to_sort(
        &self,
        ctx: &Context<'_>,
        project: &ProjectId,
    ) -> Result<IssueSort, ApiError> {
        let sort = self.unchecked_sort()?;
        if let SortField::Custom(id) = &sort.field {
            let data = referenced_project(ctx, project).await?;
            if data.field(id).is_none() {
                // One answer whether the field is missing or another project's, so errors
                // tell nothing about data outside this project.
                return Err(ApiError::BadUserInput(format!(
                    "orderBy: {id} is not a custom field of {project}"
                )));
            }
        }
        Ok(sort)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graphql::analysis::TypeMap;

    /// The argument types name exactly the arguments the schema's connection fields take, in
    /// order, and the cost model reads its page sizes from arguments these types have.
    #[test]
    fn the_argument_types_are_the_schemas_arguments() {
        let types = TypeMap::from_sdl(&crate::graphql::sdl());
        let names = |ty: &str, field: &str| -> Vec<String> {
            let field = types.field(ty, field).expect("the field");
            field.arguments.iter().map(|a| a.name.clone()).collect()
        };
        assert_eq!(names("Project", "issues"), IssuesArgs::NAMES);
        assert_eq!(names("Tenant", "projects"), PageArgs::NAMES);
        assert_eq!(names("Query", "tenants"), PageArgs::NAMES);
        for name in crate::graphql::analysis::PAGE_SIZE_ARGUMENTS {
            assert!(PageArgs::NAMES.contains(&name), "{name}");
        }
        assert!(IssuesArgs::NAMES.contains(&crate::graphql::analysis::FILTER_ARGUMENT));
    }
}
