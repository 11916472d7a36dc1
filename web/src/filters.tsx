// The filter bar: conditions joined with AND, and OR groups of conditions, each condition a
// column, one of its type's operators and a value, built into the API's `IssueFilter`, and
// read back from one (a link's or a view's).
import { useState } from "react";
import type { Column, ColumnType } from "./columns";
import type { IssueColumn, IssueFilter } from "./queries";

export type Op =
  | "contains"
  | "startsWith"
  | "eq"
  | "ne"
  | "lt"
  | "lte"
  | "gt"
  | "gte"
  | "in"
  | "isEmpty"
  | "isNotEmpty"
  | "checked"
  | "unchecked";

export interface Condition {
  column: string;
  op: Op;
  value: string;
  values: string[];
}

export type Clause = { kind: "condition"; condition: Condition } | { kind: "or"; conditions: Condition[] };

const OP_LABELS: Record<Op, string> = {
  contains: "contains",
  startsWith: "starts with",
  eq: "is",
  ne: "is not",
  lt: "<",
  lte: "≤",
  gt: ">",
  gte: "≥",
  in: "is any of",
  isEmpty: "is empty",
  isNotEmpty: "is not empty",
  checked: "is checked",
  unchecked: "is not checked",
};

const DATE_LABELS: Partial<Record<Op, string>> = { lt: "is before", gt: "is after", lte: "is on or before", gte: "is on or after" };

/** The operators of a column type, in the order the menu lists them. */
export function operators(type: ColumnType): Op[] {
  const empty: Op[] = ["isEmpty", "isNotEmpty"];
  switch (type) {
    case "NAME":
      return ["contains", "startsWith", "eq", "ne"];
    case "TEXT":
      return ["contains", "startsWith", "eq", "ne", ...empty];
    case "NUM":
      return ["eq", "ne", "lt", "lte", "gt", "gte"];
    case "INT":
    case "NUMBER":
    case "DATE":
      return ["eq", "ne", "lt", "lte", "gt", "gte", ...empty];
    case "SELECT":
      return ["eq", "ne", "in", ...empty];
    case "STATE":
      return ["eq", "ne"];
    case "CHECKBOX":
      return ["checked", "unchecked"];
  }
}

function opLabel(op: Op, type: ColumnType): string {
  return (type === "DATE" ? DATE_LABELS[op] : undefined) ?? OP_LABELS[op];
}

function takesValue(op: Op): boolean {
  return !["isEmpty", "isNotEmpty", "checked", "unchecked"].includes(op);
}

function leaf(ref: IssueColumn, condition: Condition): IssueFilter {
  const column = ref.field === "CUSTOM_FIELD" ? { field: ref.field, customFieldId: ref.customFieldId } : { field: ref.field };
  switch (condition.op) {
    case "isEmpty":
      return { column, isEmpty: true };
    case "isNotEmpty":
      return { column, isEmpty: false };
    case "checked":
      return { column, eq: "true" };
    case "unchecked":
      // `not` keeps the empty cells (the API's NULL semantics), which a grid shows unchecked.
      return { not: { column, eq: "true" } };
    case "in":
      return { column, in: condition.values };
    default:
      return { column, [condition.op]: condition.value } as IssueFilter;
  }
}

/** The `IssueFilter` of the bar's clauses, or null for none. Incomplete conditions are left out. */
export function toFilter(clauses: Clause[], columns: Column[]): IssueFilter | null {
  const build = (condition: Condition): IssueFilter | null => {
    const column = columns.find((c) => c.key === condition.column);
    if (!column) return null;
    if (takesValue(condition.op) && (condition.op === "in" ? condition.values.length === 0 : condition.value === "")) return null;
    return leaf(column.ref, condition);
  };
  const parts = clauses.flatMap((clause): IssueFilter[] => {
    if (clause.kind === "condition") {
      const built = build(clause.condition);
      return built ? [built] : [];
    }
    const alternatives = clause.conditions.flatMap((c) => {
      const built = build(c);
      return built ? [built] : [];
    });
    if (alternatives.length === 0) return [];
    return alternatives.length === 1 ? alternatives : [{ or: alternatives }];
  });
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0] : { and: parts };
}

function keyOf(column: IssueColumn | undefined): string | null {
  if (!column) return null;
  return column.field === "CUSTOM_FIELD" ? (column.customFieldId ?? null) : column.field.toLowerCase();
}

function conditionOf(filter: IssueFilter, columns: Column[]): Condition | null {
  if (typeof filter !== "object" || filter === null) return null;
  if (filter.not && filter.not.eq === "true" && keyOf(filter.not.column)) {
    return { column: keyOf(filter.not.column)!, op: "unchecked", value: "", values: [] };
  }
  const column = keyOf(filter.column);
  if (!column) return null;
  if (filter.isEmpty !== undefined && filter.isEmpty !== null) {
    return { column, op: filter.isEmpty ? "isEmpty" : "isNotEmpty", value: "", values: [] };
  }
  if (Array.isArray(filter.in)) return { column, op: "in", value: "", values: filter.in.map(String) };
  // A checkbox column's one positive test is "is checked".
  if (filter.eq === "true" && columns.find((c) => c.key === column)?.type === "CHECKBOX") {
    return { column, op: "checked", value: "", values: [] };
  }
  for (const op of ["contains", "startsWith", "eq", "ne", "lt", "lte", "gt", "gte"] as const) {
    const value = filter[op];
    if (typeof value === "string") return { column, op, value, values: [] };
  }
  return null;
}

/** The bar's clauses for a filter, or null when the filter has a shape the bar cannot show
 * (one written by hand, or a link's that is not a filter at all). */
export function fromFilter(filter: IssueFilter | null, columns: Column[]): Clause[] | null {
  if (!filter) return [];
  if (typeof filter !== "object") return null;
  const top = Array.isArray(filter.and) ? filter.and : filter.and === undefined ? [filter] : null;
  if (!top) return null;
  const clauses: Clause[] = [];
  for (const part of top) {
    const single = conditionOf(part, columns);
    if (single) {
      clauses.push({ kind: "condition", condition: single });
      continue;
    }
    if (part && typeof part === "object" && Array.isArray(part.or)) {
      const conditions = part.or.map((c) => conditionOf(c, columns));
      if (conditions.some((c) => c === null)) return null;
      clauses.push({ kind: "or", conditions: conditions as Condition[] });
      continue;
    }
    return null;
  }
  return clauses;
}

function newCondition(columns: Column[]): Condition {
  const column = columns.find((c) => c.key === "name") ?? columns[0];
  return { column: column.key, op: operators(column.type)[0], value: "", values: [] };
}

export function FilterBar(props: {
  columns: Column[];
  filter: IssueFilter | null;
  apply: (filter: IssueFilter | null) => void;
  close: () => void;
}) {
  const { columns } = props;
  const [clauses, setClauses] = useState<Clause[]>(() => fromFilter(props.filter, columns) ?? []);
  const unreadable = fromFilter(props.filter, columns) === null;

  const update = (index: number, clause: Clause | null) =>
    setClauses((all) => (clause ? all.map((c, i) => (i === index ? clause : c)) : all.filter((_, i) => i !== index)));

  return (
    <section className="filter-bar" aria-label="Filter">
      {unreadable ? <p className="muted">This filter was written by hand; building a new one replaces it.</p> : null}
      {clauses.length === 0 ? <p className="muted">No conditions: every issue is shown.</p> : null}
      {clauses.map((clause, index) => (
        <div className="clause" key={index}>
          <span className="joiner">{index === 0 ? "Where" : "and"}</span>
          {clause.kind === "condition" ? (
            <ConditionRow
              columns={columns}
              condition={clause.condition}
              change={(condition) => update(index, condition ? { kind: "condition", condition } : null)}
            />
          ) : (
            <div className="or-group" role="group" aria-label="Any of">
              {clause.conditions.map((condition, j) => (
                <div className="or-row" key={j}>
                  <span className="joiner">{j === 0 ? "any of" : "or"}</span>
                  <ConditionRow
                    columns={columns}
                    condition={condition}
                    change={(changed) => {
                      const conditions = changed
                        ? clause.conditions.map((c, k) => (k === j ? changed : c))
                        : clause.conditions.filter((_, k) => k !== j);
                      update(index, conditions.length > 0 ? { kind: "or", conditions } : null);
                    }}
                  />
                </div>
              ))}
              <button
                type="button"
                onClick={() => update(index, { kind: "or", conditions: [...clause.conditions, newCondition(columns)] })}
              >
                + or
              </button>
            </div>
          )}
        </div>
      ))}
      <div className="buttons">
        <button type="button" onClick={() => setClauses((all) => [...all, { kind: "condition", condition: newCondition(columns) }])}>
          + Condition
        </button>
        <button
          type="button"
          onClick={() => setClauses((all) => [...all, { kind: "or", conditions: [newCondition(columns), newCondition(columns)] }])}
        >
          + OR group
        </button>
        <span className="spacer" />
        <button type="button" onClick={() => props.apply(null)}>
          Clear
        </button>
        <button type="button" className="primary" onClick={() => props.apply(toFilter(clauses, columns))}>
          Apply filter
        </button>
        <button type="button" onClick={props.close} aria-label="Close the filter bar">
          ✕
        </button>
      </div>
    </section>
  );
}

function ConditionRow(props: { columns: Column[]; condition: Condition; change: (condition: Condition | null) => void }) {
  const { columns, condition, change } = props;
  const column = columns.find((c) => c.key === condition.column) ?? columns[0];
  const ops = operators(column.type);
  return (
    <div className="condition">
      <select
        aria-label="Column"
        value={column.key}
        onChange={(e) => {
          const next = columns.find((c) => c.key === e.target.value) ?? column;
          change({ column: next.key, op: operators(next.type)[0], value: "", values: [] });
        }}
      >
        {columns.map((c) => (
          <option key={c.key} value={c.key}>
            {c.label}
          </option>
        ))}
      </select>
      <select aria-label="Operator" value={condition.op} onChange={(e) => change({ ...condition, op: e.target.value as Op })}>
        {ops.map((op) => (
          <option key={op} value={op}>
            {opLabel(op, column.type)}
          </option>
        ))}
      </select>
      {takesValue(condition.op) ? <ValueInput column={column} condition={condition} change={change} /> : null}
      <button type="button" aria-label="Remove the condition" onClick={() => change(null)}>
        ✕
      </button>
    </div>
  );
}

function ValueInput(props: { column: Column; condition: Condition; change: (condition: Condition) => void }) {
  const { column, condition, change } = props;
  if (column.type === "SELECT" || column.type === "STATE") {
    const options =
      column.type === "STATE"
        ? [
            { id: "OPEN", label: "Open" },
            { id: "CLOSED", label: "Closed" },
          ]
        : [...(column.field?.options ?? [])].sort((a, b) => a.position - b.position);
    if (condition.op === "in") {
      return (
        <span className="multi" role="group" aria-label="Values">
          {options.map((o) => (
            <label key={o.id}>
              <input
                type="checkbox"
                checked={condition.values.includes(o.id)}
                onChange={(e) =>
                  change({
                    ...condition,
                    values: e.target.checked ? [...condition.values, o.id] : condition.values.filter((v) => v !== o.id),
                  })
                }
              />
              {o.label}
            </label>
          ))}
        </span>
      );
    }
    return (
      <select aria-label="Value" value={condition.value} onChange={(e) => change({ ...condition, value: e.target.value })}>
        <option value="">(choose)</option>
        {options.map((o) => (
          <option key={o.id} value={o.id}>
            {o.label}
          </option>
        ))}
      </select>
    );
  }
  return (
    <input
      aria-label="Value"
      type={column.type === "DATE" ? "date" : "text"}
      inputMode={column.type === "INT" || column.type === "NUM" ? "numeric" : column.type === "NUMBER" ? "decimal" : undefined}
      value={condition.value}
      onChange={(e) => change({ ...condition, value: e.target.value })}
    />
  );
}
