// The grid's columns: Num, Name and State, then the custom fields in position order (or a
// saved view's `columns`), each with what the page needs to show, edit, sort and filter it.
import type { CustomField, FieldType, Issue, IssueColumn, IssueOrder, OrderField } from "./queries";

export type ColumnType = "NUM" | "NAME" | "STATE" | FieldType;

export interface Column {
  /** `num`, `name`, `state` or the custom field's id. */
  key: string;
  label: string;
  type: ColumnType;
  field: CustomField | null;
  /** The column as `IssueOrder`/`IssueFilter` name it. */
  ref: IssueColumn;
}

const BUILT_IN: Column[] = [
  { key: "num", label: "Num", type: "NUM", field: null, ref: { field: "NUM" } },
  { key: "name", label: "Name", type: "NAME", field: null, ref: { field: "NAME" } },
  { key: "state", label: "State", type: "STATE", field: null, ref: { field: "STATE" } },
];

export function fieldColumn(field: CustomField): Column {
  return {
    key: field.id,
    label: field.name,
    type: field.type,
    field,
    ref: { field: "CUSTOM_FIELD", customFieldId: field.id },
  };
}

/** The columns of the grid: every field by position, or only a view's `columns` in its order. */
export function gridColumns(fields: CustomField[], viewColumns: string[] | null): Column[] {
  const byPosition = [...fields].sort((a, b) => a.position - b.position);
  if (viewColumns && viewColumns.length > 0) {
    const byId = new Map(fields.map((f) => [f.id, f]));
    const chosen = viewColumns.flatMap((id) => {
      const field = byId.get(id);
      return field ? [fieldColumn(field)] : [];
    });
    return [...BUILT_IN, ...chosen];
  }
  return [...BUILT_IN, ...byPosition.map(fieldColumn)];
}

/** The key of the column an order or filter names. */
export function columnKey(ref: { field: OrderField; customFieldId?: string | null }): string {
  return ref.field === "CUSTOM_FIELD" ? (ref.customFieldId ?? "") : ref.field.toLowerCase();
}

/** The raw value of a cell as the API spells it, or null for an empty cell. */
export function rawValue(issue: Issue, column: Column): string | null {
  switch (column.type) {
    case "NUM":
      return String(issue.num);
    case "NAME":
      return issue.name;
    case "STATE":
      return issue.state;
    default:
      return issue.fieldValues.find((v) => v.field.id === column.key)?.value ?? null;
  }
}

/** What a cell shows: select cells show the option's label. */
export function displayValue(issue: Issue, column: Column): string {
  const raw = rawValue(issue, column);
  if (raw == null) return "";
  if (column.type === "SELECT") return column.field?.options.find((o) => o.id === raw)?.label ?? raw;
  if (column.type === "STATE") return raw === "OPEN" ? "Open" : "Closed";
  return raw;
}

export function typeLabel(type: ColumnType): string {
  switch (type) {
    case "NUM":
      return "number";
    case "NAME":
    case "TEXT":
      return "text";
    case "STATE":
      return "state";
    case "INT":
      return "integer";
    case "NUMBER":
      return "decimal";
    case "DATE":
      return "date";
    case "CHECKBOX":
      return "checkbox";
    case "SELECT":
      return "select";
  }
}

/** Orders two issues as the API does under `orders` (ties broken by num), so that an issue the
 * page creates can be put where the server would list it. Text is compared case-folded, as the
 * server's sort keys do; only the place of a new row depends on this, never what a page holds. */
export function compareIssues(a: Issue, b: Issue, orders: IssueOrder[], columns: Column[]): number {
  const firstDirection = orders[0]?.direction === "DESC" ? -1 : 1;
  for (const order of orders) {
    const column = columns.find((c) => c.key === columnKey(order)) ?? null;
    const sign = order.direction === "DESC" ? -1 : 1;
    const x = column ? sortable(a, column) : null;
    const y = column ? sortable(b, column) : null;
    if (x == null || y == null) {
      if (x == null && y == null) continue;
      const emptyFirst = order.empty === "FIRST" ? -1 : 1;
      return x == null ? emptyFirst : -emptyFirst;
    }
    if (x < y) return -sign;
    if (x > y) return sign;
  }
  return (a.num - b.num) * firstDirection;
}

function sortable(issue: Issue, column: Column): string | number | null {
  const raw = rawValue(issue, column);
  if (raw == null) return null;
  switch (column.type) {
    case "NUM":
    case "INT":
    case "NUMBER":
      return Number(raw);
    case "NAME":
    case "TEXT":
      return raw.toLowerCase();
    case "STATE":
      return raw === "OPEN" ? 0 : 1;
    case "CHECKBOX":
      return raw === "true" ? 1 : 0;
    case "SELECT":
      return column.field?.options.find((o) => o.id === raw)?.position ?? Number.MAX_SAFE_INTEGER;
    default:
      return raw;
  }
}
