// Every GraphQL document the page sends, and the TypeScript shapes of what they return. The
// README's "Use it from your own frontend" section quotes these documents.
import { gql } from "@apollo/client";
import type { DocumentNode } from "graphql";
import { Kind, visit } from "graphql";

export type FieldType = "TEXT" | "INT" | "NUMBER" | "DATE" | "CHECKBOX" | "SELECT";
export type OrderField = "NUM" | "NAME" | "STATE" | "CUSTOM_FIELD";
export type Direction = "ASC" | "DESC";
export type Empty = "FIRST" | "LAST";

export interface SelectOption {
  id: string;
  label: string;
  color: string | null;
  position: number;
}

export interface CustomField {
  id: string;
  name: string;
  type: FieldType;
  position: number;
  version: number;
  status: "READY" | "REINDEXING";
  options: SelectOption[];
}

export interface IssueOrder {
  field: OrderField;
  customFieldId?: string | null;
  direction: Direction;
  empty: Empty;
}

export interface IssueColumn {
  field: OrderField;
  customFieldId?: string | null;
}

/** `IssueFilter` exactly as the API takes it. */
export interface IssueFilter {
  and?: IssueFilter[];
  or?: IssueFilter[];
  not?: IssueFilter;
  column?: IssueColumn;
  eq?: string;
  ne?: string;
  in?: string[];
  lt?: string;
  lte?: string;
  gt?: string;
  gte?: string;
  isEmpty?: boolean;
  contains?: string;
  startsWith?: string;
}

export interface View {
  id: string;
  name: string;
  position: number;
  version: number;
  status: "BUILDING" | "READY";
  progress: { scanned: number; total: number } | null;
  orderBy: IssueOrder[];
  filter: IssueFilter | null;
  columns: string[];
}

/** A cell: a SELECT cell's value is its option's id. */
export interface CellValue {
  value: string;
  fieldId: string;
}

export interface Issue {
  id: string;
  num: number;
  name: string;
  state: "OPEN" | "CLOSED";
  version: number;
  fieldValues: CellValue[];
}

export interface Edge {
  cursor: string;
  node: Issue;
}

export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export interface Connection {
  totalCount: number | null;
  edges: Edge[];
  pageInfo: PageInfo;
}

export interface Project {
  id: string;
  name: string;
  version: number;
  tenant: { id: string; name: string };
  customFields: CustomField[];
  views: View[];
}

const FIELD = gql`
  fragment GridField on CustomField {
    id
    name
    type
    position
    version
    status
    options {
      id
      label
      color
      position
    }
  }
`;

const VIEW = gql`
  fragment GridView on View {
    id
    name
    position
    version
    status
    progress {
      scanned
      total
    }
    orderBy {
      field
      customFieldId
      direction
      empty
    }
    filter
    columns
  }
`;

export const ISSUE = gql`
  fragment GridIssue on Issue {
    id
    num
    name
    state
    version
    fieldValues {
      value
      fieldId
    }
  }
`;

const CONNECTION = gql`
  fragment GridConnection on IssueConnection {
    totalCount
    edges {
      cursor
      node {
        ...GridIssue
      }
    }
    pageInfo {
      hasNextPage
      hasPreviousPage
      startCursor
      endCursor
    }
  }
  ${ISSUE}
`;

/** The grid's columns and views: read once, and again after a column or view changes. */
export const PROJECT = gql`
  query GridProject($id: ID!) {
    project(id: $id) {
      id
      name
      version
      tenant {
        id
        name
      }
      customFields {
        ...GridField
      }
      views {
        ...GridView
      }
    }
  }
  ${FIELD}
  ${VIEW}
`;

/** One page of the grid under an order and a filter (`first`/`after` or `last`/`before`). */
export const ISSUES = gql`
  query GridIssues(
    $id: ID!
    $first: Int
    $after: String
    $last: Int
    $before: String
    $orderBy: IssueOrder
    $filter: IssueFilter
  ) {
    project(id: $id) {
      id
      issues(first: $first, after: $after, last: $last, before: $before, orderBy: $orderBy, filter: $filter) {
        ...GridConnection
      }
    }
  }
  ${CONNECTION}
`;

/** One page of a saved view. */
export const VIEW_ISSUES = gql`
  query GridViewIssues($id: ID!, $view: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    project(id: $id) {
      id
      view(id: $view) {
        id
        status
        progress {
          scanned
          total
        }
        issues(first: $first, after: $after, last: $last, before: $before) {
          ...GridConnection
        }
      }
    }
  }
  ${CONNECTION}
`;

/** The client-only field the grid's rows read an issue's cells through (see `ROWS_READ`). */
export const CELLS = "gridCells";

/** `document` as the grid's rows are watched in the cache: each issue's `fieldValues { ... }`
 * is read as `fieldValues: gridCells @client`, whose read function (api.ts) hands over the
 * stored cells as one value. Apollo then memoises one result per issue instead of one per
 * cell and one per cell array, each held in a WeakMap; at 10,000 rows those were about
 * 200,000 WeakMap entries, and marking them made V8's full collections pause the page for
 * 50 to 80 ms (long tasks) while scrolling. Requests still send `document` itself. */
function readingRows(document: DocumentNode): DocumentNode {
  return visit(document, {
    Field(node) {
      if (node.name.value !== "fieldValues" || !node.selectionSet) return undefined;
      return {
        kind: Kind.FIELD,
        alias: { kind: Kind.NAME, value: "fieldValues" },
        name: { kind: Kind.NAME, value: CELLS },
        arguments: [],
        directives: [{ kind: Kind.DIRECTIVE, name: { kind: Kind.NAME, value: "client" }, arguments: [] }],
      };
    },
  });
}

/** The rows' documents as they are watched in the cache. */
export const ROWS_READ = {
  issues: readingRows(ISSUES),
  viewIssues: readingRows(VIEW_ISSUES),
  issue: readingRows(ISSUE),
};

/** Re-reads one issue (after a conflict, to show what someone else wrote). */
export const ISSUE_BY_ID = gql`
  query GridIssue($id: ID!) {
    issue(id: $id) {
      ...GridIssue
    }
  }
  ${ISSUE}
`;

export const TENANTS = gql`
  query GridTenants($after: String) {
    tenants(first: 20, after: $after) {
      edges {
        cursor
        node {
          id
          name
          projects(first: 25) {
            edges {
              cursor
              node {
                id
                name
              }
            }
            pageInfo {
              hasNextPage
              endCursor
            }
          }
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`;

export const SET_CELL = gql`
  mutation GridSetCell($input: SetIssueFieldValuesInput!) {
    setIssueFieldValues(input: $input) {
      issue {
        ...GridIssue
      }
    }
  }
  ${ISSUE}
`;

export const UPDATE_ISSUE = gql`
  mutation GridUpdateIssue($input: UpdateIssueInput!) {
    updateIssue(input: $input) {
      issue {
        ...GridIssue
      }
    }
  }
  ${ISSUE}
`;

export const CREATE_ISSUE = gql`
  mutation GridCreateIssue($input: CreateIssueInput!) {
    createIssue(input: $input) {
      issue {
        ...GridIssue
      }
    }
  }
  ${ISSUE}
`;

export const DELETE_ISSUE = gql`
  mutation GridDeleteIssue($input: DeleteIssueInput!) {
    deleteIssue(input: $input) {
      deletedId
    }
  }
`;

export const CREATE_FIELD = gql`
  mutation GridCreateField($input: CreateCustomFieldInput!) {
    createCustomField(input: $input) {
      customField {
        ...GridField
      }
    }
  }
  ${FIELD}
`;

export const UPDATE_FIELD = gql`
  mutation GridUpdateField($input: UpdateCustomFieldInput!) {
    updateCustomField(input: $input) {
      customField {
        ...GridField
      }
    }
  }
  ${FIELD}
`;

export const DELETE_FIELD = gql`
  mutation GridDeleteField($input: DeleteCustomFieldInput!) {
    deleteCustomField(input: $input) {
      deletedId
    }
  }
`;

export const CREATE_VIEW = gql`
  mutation GridCreateView($input: CreateViewInput!) {
    createView(input: $input) {
      view {
        ...GridView
      }
    }
  }
  ${VIEW}
`;

export const UPDATE_VIEW = gql`
  mutation GridUpdateView($input: UpdateViewInput!) {
    updateView(input: $input) {
      view {
        ...GridView
      }
    }
  }
  ${VIEW}
`;

export const DELETE_VIEW = gql`
  mutation GridDeleteView($input: DeleteViewInput!) {
    deleteView(input: $input) {
      deletedId
    }
  }
`;
