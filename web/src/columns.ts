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
      return issue.fieldValues.find((v) => v.fieldId === column.key)?.value ?? null;
  }
}

/** How a cell looks: what the grid renders, and the first paint too (first.ts). */
export type CellLook =
  | { kind: "text"; text: string }
  | { kind: "chip"; label: string; color: string | null }
  | { kind: "checkbox"; checked: boolean }
  | { kind: "empty" };

export function cellLook(issue: Issue, column: Column): CellLook {
  const raw = rawValue(issue, column);
  switch (column.type) {
    case "CHECKBOX":
      return { kind: "checkbox", checked: raw === "true" };
    case "SELECT": {
      if (raw == null) return { kind: "empty" };
      const option = column.field?.options.find((o) => o.id === raw);
      return { kind: "chip", label: option?.label ?? raw, color: option?.color ?? null };
    }
    case "STATE":
      return { kind: "chip", label: displayValue(issue, column), color: raw === "OPEN" ? "green" : "gray" };
    default:
      return { kind: "text", text: displayValue(issue, column) };
  }
}

const NAMED_COLOURS = ["default", "gray", "brown", "orange", "yellow", "green", "blue", "purple", "pink", "red"];

/** A chip's class and background: a class for the named colours, a CSS colour for `#rrggbb`. */
export function chipStyle(color: string | null): { className: string; background: string | null } {
  if (color && color.startsWith("#")) return { className: "chip", background: color };
  const named = color && NAMED_COLOURS.includes(color) ? color : "default";
  return { className: `chip chip-${named}`, background: null };
}

/** How a column's header marks the sort: `aria-sort` for the first key, and the arrow (with
 * the key's number when there are several) for every key. */
export function sortMark(column: Column, orders: IssueOrder[]): { ariaSort: "ascending" | "descending" | undefined; mark: string | null } {
  const place = orders.findIndex((o) => columnKey(o) === column.key);
  if (place < 0) return { ariaSort: undefined, mark: null };
  const ascending = orders[place].direction === "ASC";
  return {
    ariaSort: place === 0 ? (ascending ? "ascending" : "descending") : undefined,
    mark: `${ascending ? "▲" : "▼"}${orders.length > 1 ? place + 1 : ""}`,
  };
}

/** An order in words ("Name ascending, then Num descending"). */
export function describeOrder(orders: IssueOrder[], columns: Column[]): string {
  return orders
    .map((o) => `${columns.find((c) => c.key === columnKey(o))?.label ?? "?"} ${o.direction === "ASC" ? "ascending" : "descending"}`)
    .join(", then ");
}

/** Row height, and the widths of the selection column, the "+" column and each type's
 * column, in pixels: the grid's and the first paint's layout. */
export const ROW_HEIGHT = 32;
export const SELECT_WIDTH = 40;
export const ADD_COLUMN_WIDTH = 48;
/** Rows rendered beyond those in view, on each side. */
export const OVERSCAN = 4;

export function defaultWidth(column: Column): number {
  switch (column.type) {
    case "NUM":
      return 96;
    case "NAME":
      return 320;
    case "CHECKBOX":
      return 110;
    default:
      return 160;
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
