//! The arguments of the connection fields, one type per field: `IssuesArgs` for
//! `Project.issues`, built on paging's `PageArgs` (which `Tenant.projects` takes as it is).
//! The resolver, the prefetch (its key and its speculative read) and the look-ahead all take
//! these types, and each builds or takes them apart with an exhaustive struct pattern, so an
//! argument added to a field does not compile until every one of them handles it; a test holds
//! the names to the schema's. Also the argument types of the issue ordering.

use async_graphql::{Context, Enum, InputObject, InputType, Name, Value, ID};

use super::error::ApiError;
use super::request::referenced_project;
use crate::ids::{FieldId, ProjectId};
use crate::paging::PageArgs;
use crate::repo::{IssueSort, SortField};

/// The arguments of `Project.issues`, as the client wrote them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct IssuesArgs {
    pub page: PageArgs,
    pub order_by: Option<IssueOrder>,
}

impl IssuesArgs {
    /// The arguments' names in the schema.
    pub const NAMES: [&'static str; 5] = ["first", "after", "last", "before", "orderBy"];

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
        })
    }

    /// The sort asked for, checked as far as it can be without the project.
    pub fn unchecked_sort(&self) -> Result<IssueSort, ApiError> {
        match &self.order_by {
            None => Ok(IssueSort::default()),
            Some(order) => order.unchecked_sort(),
        }
    }

    /// The sort asked for, checked against the project's fields.
    pub async fn sort(
        &self,
        ctx: &Context<'_>,
        project: &ProjectId,
    ) -> Result<IssueSort, ApiError> {
        match &self.order_by {
            None => Ok(IssueSort::default()),
            Some(order) => order.to_sort(ctx, project).await,
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
    /// Smallest first (for custom fields: issues without a value still come last).
    #[default]
    Asc,
    /// Largest first (for custom fields: issues without a value still come last).
    Desc,
}

/// How to sort a project's issues. Ties break by `num` in the same direction.
#[derive(InputObject, Clone, Debug, PartialEq, Eq, Hash)]
pub struct IssueOrder {
    /// The column to sort by.
    pub field: IssueOrderField,
    /// The custom field to sort by; required with `CUSTOM_FIELD`, not allowed otherwise.
    pub custom_field_id: Option<ID>,
    /// Ascending or descending; default `ASC`. Issues without a value in a sorted custom field
    /// come last either way.
    #[graphql(default_with = "OrderDirection::Asc")]
    pub direction: OrderDirection,
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
        Ok(IssueSort { field, ascending })
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
        for name in crate::graphql::analysis::PAGE_SIZE_ARGUMENTS {
            assert!(PageArgs::NAMES.contains(&name), "{name}");
        }
    }
}
