//! One page of an export, read through the gateway exactly as a client reads it: the GraphQL
//! documents (`Project.issues` with the list's `IssuesArgs`, or `View.issues`), their variables
//! built from `IssuesArgs` by an exhaustive pattern, and the answer decoded into the rows and
//! columns the writers take.

use std::collections::HashMap;

use async_graphql::{InputType, Name, Value, Variables};
use serde::Deserialize;

use super::{ExportError, ExportList};
use crate::graphql::error::ErrorCode;
use crate::graphql::types::IssuesArgs;
use crate::paging::PageArgs;

/// The selection of a page of issues: what every row of the export is made of.
macro_rules! page_selection {
    () => {
        "{ pageInfo { hasNextPage endCursor } \
           nodes { id num name state fieldValues { field { id } value } } }"
    };
}

/// What the first page reads beside its rows: the project's name (the file's) and its custom
/// fields (the columns, and the labels of SELECT options).
macro_rules! head_selection {
    () => {
        "name customFields { id name type options { id label } }"
    };
}

/// The variables of `Project.issues`, one per argument (`IssuesArgs::NAMES`).
macro_rules! issues_variables {
    () => {
        "$project: ID!, $first: Int, $after: String, $last: Int, $before: String, \
         $orderBy: IssueOrder, $filter: IssueFilter"
    };
}

macro_rules! issues_arguments {
    () => {
        "issues(first: $first, after: $after, last: $last, before: $before, \
         orderBy: $orderBy, filter: $filter) "
    };
}

/// The variables and arguments of `View.issues` (paging only: the view is the order and the
/// filter).
macro_rules! view_variables {
    () => {
        "$project: ID!, $view: ID!, $first: Int, $after: String, $last: Int, $before: String"
    };
}

macro_rules! view_arguments {
    () => {
        "issues(first: $first, after: $after, last: $last, before: $before) "
    };
}

/// The first page of a project's issues, with the project's name and fields.
const ISSUES_HEAD: &str = concat!(
    "query ExportIssues(",
    issues_variables!(),
    ") { project(id: $project) { ",
    head_selection!(),
    " ",
    issues_arguments!(),
    page_selection!(),
    " } }"
);

/// A later page of a project's issues.
const ISSUES_NEXT: &str = concat!(
    "query ExportIssues(",
    issues_variables!(),
    ") { project(id: $project) { ",
    issues_arguments!(),
    page_selection!(),
    " } }"
);

/// The first page of a view, with the project's name and fields and the view's columns.
const VIEW_HEAD: &str = concat!(
    "query ExportView(",
    view_variables!(),
    ") { project(id: $project) { ",
    head_selection!(),
    " view(id: $view) { columns ",
    view_arguments!(),
    page_selection!(),
    " } } }"
);

/// A later page of a view.
const VIEW_NEXT: &str = concat!(
    "query ExportView(",
    view_variables!(),
    ") { project(id: $project) { view(id: $view) { ",
    view_arguments!(),
    page_selection!(),
    " } } }"
);

/// Which page of the export a request reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The first, which also reads the project's name and fields (and a view's columns).
    Head,
    /// Any later one.
    Next,
}

/// The GraphQL document of a page of `list` (public for tests that price it with
/// `graphql::analysis`).
pub fn document(list: &ExportList, which: Which) -> &'static str {
    match (list, which) {
        (ExportList::Issues { .. }, Which::Head) => ISSUES_HEAD,
        (ExportList::Issues { .. }, Which::Next) => ISSUES_NEXT,
        (ExportList::View(_), Which::Head) => VIEW_HEAD,
        (ExportList::View(_), Which::Next) => VIEW_NEXT,
    }
}

/// The arguments of a page of `list`: `first` rows after `after`, and the list's order and
/// filter (a view's page has neither: the view is both).
pub fn arguments(list: &ExportList, first: usize, after: Option<String>) -> IssuesArgs {
    let page = PageArgs {
        first: Some(i32::try_from(first).unwrap_or(i32::MAX)),
        after,
        last: None,
        before: None,
    };
    match list {
        ExportList::Issues { order_by, filter } => IssuesArgs {
            page,
            order_by: order_by.clone(),
            filter: filter.as_deref().cloned(),
        },
        ExportList::View(_) => IssuesArgs {
            page,
            order_by: None,
            filter: None,
        },
    }
}

/// The variables of a page of `list` of `project`: the connection's arguments as one
/// `IssuesArgs`, taken apart field by field, so an argument added to `Project.issues` does not
/// compile until the export passes it on.
pub fn variables(project: &str, list: &ExportList, args: &IssuesArgs) -> Variables {
    let IssuesArgs {
        page:
            PageArgs {
                first,
                after,
                last,
                before,
            },
        order_by,
        filter,
    } = args;
    let mut map = async_graphql::indexmap::IndexMap::new();
    map.insert(Name::new("project"), Value::from(project));
    if let ExportList::View(view) = list {
        map.insert(Name::new("view"), Value::from(view.as_str()));
    }
    let mut put = |name: &str, value: Option<Value>| {
        if let Some(value) = value {
            map.insert(Name::new(name), value);
        }
    };
    put("first", first.map(Value::from));
    put("after", after.as_deref().map(Value::from));
    put("last", last.map(Value::from));
    put("before", before.as_deref().map(Value::from));
    // A view's page takes no order or filter (the view is both); its `IssuesArgs` has none.
    put("orderBy", order_by.as_ref().map(InputType::to_value));
    put("filter", filter.as_ref().map(InputType::to_value));
    Variables::from_value(Value::Object(map))
}

/// A column after num, name and state: one of the project's custom fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The field's global id (`xattrib-…`): NDJSON's key.
    pub id: String,
    /// The field's name: the CSV header's.
    pub name: String,
    /// A SELECT field's option labels by option id; `None` for the other types, whose cells
    /// are written as the API's canonical text.
    labels: Option<HashMap<String, String>>,
}

impl Column {
    /// The text of a cell holding `value` (the API's canonical text): a SELECT cell's option
    /// label, or `None` for a removed option's cell (the API's `option: null`) until the sweep
    /// clears it.
    pub fn text<'a>(&'a self, value: &'a str) -> Option<&'a str> {
        match &self.labels {
            Some(labels) => labels.get(value).map(String::as_str),
            None => Some(value),
        }
    }
}

/// An issue as a page lists it.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub id: String,
    pub num: i64,
    pub name: String,
    /// `OPEN` or `CLOSED`, as the API spells it.
    pub state: String,
    field_values: Vec<Cell>,
}

impl Row {
    /// The row's values by field id.
    pub fn values(&self) -> HashMap<&str, &str> {
        self.field_values
            .iter()
            .map(|cell| (cell.field.id.as_str(), cell.value.as_str()))
            .collect()
    }
}

#[derive(Clone, Debug, Deserialize)]
struct Cell {
    field: FieldRef,
    value: String,
}

#[derive(Clone, Debug, Deserialize)]
struct FieldRef {
    id: String,
}

/// One page read.
#[derive(Debug)]
pub struct Page {
    pub rows: Vec<Row>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<String>,
}

/// What the first page read of the project.
#[derive(Debug)]
pub struct Head {
    pub project_name: String,
    pub columns: Vec<Column>,
}

/// A page read, and what the first also read of the project.
#[derive(Debug)]
pub struct Read {
    pub head: Option<Head>,
    pub page: Page,
}

#[derive(Deserialize)]
struct Data {
    project: Option<ProjectData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectData {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    custom_fields: Option<Vec<FieldData>>,
    #[serde(default)]
    issues: Option<Connection>,
    #[serde(default)]
    view: Option<ViewData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FieldData {
    id: String,
    name: String,
    #[serde(rename = "type")]
    field_type: String,
    options: Vec<OptionData>,
}

#[derive(Deserialize)]
struct OptionData {
    id: String,
    label: String,
}

#[derive(Deserialize)]
struct ViewData {
    columns: Option<Vec<String>>,
    issues: Connection,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Connection {
    page_info: PageInfo,
    nodes: Vec<Row>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

/// The gateway's answer to a page: its first error as the export's (with its code and
/// extensions), a missing project or view as `NOT_FOUND`, else the page.
pub fn decode(
    response: async_graphql::Response,
    project: &str,
    list: &ExportList,
    which: Which,
) -> Result<Read, ExportError> {
    if let Some(error) = response.errors.into_iter().next() {
        return Err(ExportError::from_server_error(error));
    }
    let data: Data =
        serde_json::from_value(response.data.into_json().map_err(malformed)?).map_err(malformed)?;
    // Another tenant's project reads as null, exactly like an id nobody has.
    let project_data = data
        .project
        .ok_or_else(|| ExportError::NotFound(format!("there is no project {project}")))?;
    let (connection, view_columns) = match list {
        ExportList::Issues { .. } => (project_data.issues, None),
        ExportList::View(view) => {
            let view = project_data.view.ok_or_else(|| {
                ExportError::NotFound(format!("project {project} has no view {view}"))
            })?;
            (Some(view.issues), view.columns)
        }
    };
    let connection = connection.ok_or_else(|| malformed("the page has no issues"))?;
    let next = match (
        connection.page_info.has_next_page,
        connection.page_info.end_cursor,
    ) {
        (true, Some(cursor)) => Some(cursor),
        (true, None) => return Err(malformed("a page with more to read has no end cursor")),
        (false, _) => None,
    };
    let page = Page {
        rows: connection.nodes,
        next,
    };
    if which == Which::Next {
        return Ok(Read { head: None, page });
    }
    let name = project_data
        .name
        .ok_or_else(|| malformed("the first page has no project name"))?;
    let fields = project_data
        .custom_fields
        .ok_or_else(|| malformed("the first page has no custom fields"))?;
    let head = Head {
        project_name: name,
        columns: columns(fields, view_columns),
    };
    Ok(Read {
        head: Some(head),
        page,
    })
}

/// The export's columns after num, name and state: the project's custom fields in position
/// order (as `customFields` lists them), or a view's `columns` in its order when it has any.
fn columns(fields: Vec<FieldData>, view_columns: Option<Vec<String>>) -> Vec<Column> {
    let mut all: Vec<Column> = fields
        .into_iter()
        .map(|field| Column {
            labels: (field.field_type == "SELECT").then(|| {
                field
                    .options
                    .into_iter()
                    .map(|option| (option.id, option.label))
                    .collect()
            }),
            id: field.id,
            name: field.name,
        })
        .collect();
    match view_columns.filter(|c| !c.is_empty()) {
        None => all,
        Some(ids) => ids
            .iter()
            .filter_map(|id| {
                let at = all.iter().position(|c| &c.id == id)?;
                Some(all.swap_remove(at))
            })
            .collect(),
    }
}

fn malformed(cause: impl std::fmt::Display) -> ExportError {
    tracing::error!(%cause, "an export page was not in the shape its document asks for");
    ExportError::Api {
        code: ErrorCode::InternalServerError,
        message: "the export failed; the log says why".into(),
        extensions: serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graphql::analysis::{analyze, QueryLimits, TypeMap};

    fn cost(list: &ExportList, which: Which, first: usize) -> u64 {
        let args = arguments(list, first, None);
        let doc = async_graphql::parser::parse_query(document(list, which)).unwrap();
        let types = TypeMap::from_sdl(&crate::graphql::sdl());
        let variables = variables("project-1", list, &args);
        analyze(&doc, None, &variables, &types, &QueryLimits::default())
            .unwrap()
            .cost
    }

    /// What a page of 100 rows costs the caller (`graphql::analysis`'s price of the document):
    /// about what a client's 100-row grid page of every cell costs (4,245), within the cost
    /// limit; a filter adds `FILTERED_LIST_COST`, as it does to any client's page.
    #[test]
    fn a_page_costs_what_the_api_charges_for_it() {
        let issues = ExportList::Issues {
            order_by: None,
            filter: None,
        };
        let view = ExportList::View("xview-1".into());
        let costs = [
            cost(&issues, Which::Head, 100),
            cost(&issues, Which::Next, 100),
            cost(&view, Which::Head, 100),
            cost(&view, Which::Next, 100),
        ];
        assert_eq!(costs, [4144, 3902, 4146, 3903]);
        let filtered = ExportList::Issues {
            order_by: None,
            filter: Some(Box::default()),
        };
        assert_eq!(
            cost(&filtered, Which::Next, 100),
            3902 + crate::graphql::analysis::FILTERED_LIST_COST
        );
    }
}
