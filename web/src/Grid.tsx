// The grid: TanStack Table holds the column model (order, widths, resizing) and TanStack
// Virtual renders only the rows in view, over the sparse row window of `rows.ts`. The markup
// follows the WAI-ARIA grid pattern (role grid/row/columnheader/gridcell, aria-rowcount and
// aria-rowindex counting the header row as 1, aria-sort on the sorted column), with one cell
// in the tab order and the keyboard moving between cells: arrows, Home/End, Ctrl+Home/End,
// PageUp/PageDown; Enter or F2 edits, Enter commits, Escape cancels, typing starts an edit,
// Space toggles a checkbox, Delete clears a cell.
import { memo, useEffect, useMemo, useRef, useState } from "react";
import type { KeyboardEvent as ReactKeyboardEvent } from "react";
import { getCoreRowModel, useReactTable } from "@tanstack/react-table";
import type { ColumnDef, ColumnSizingState } from "@tanstack/react-table";
import { useVirtualizer } from "@tanstack/react-virtual";
import type { Column } from "./columns";
import { ADD_COLUMN_WIDTH, defaultWidth, OVERSCAN, rawValue, ROW_HEIGHT, SELECT_WIDTH, sortMark, typeLabel } from "./columns";
import { CellView, Editor, isEditable, togglesInPlace } from "./cells";
import { MenuButton } from "./menu";
import type { MenuItem } from "./menu";
import type { Issue, IssueOrder } from "./queries";
import type { Rows } from "./rows";

const NO_ROWS: Issue[] = [];

export interface GridProps {
  label: string;
  columns: Column[];
  rows: Rows;
  orders: IssueOrder[];
  selected: Set<string>;
  setSelected: (selected: Set<string>) => void;
  sort: (column: Column, add: boolean) => void;
  columnMenu: (column: Column) => MenuItem[];
  addColumn: (() => void) | null;
  write: (issue: Issue, column: Column, value: string | null) => void;
  /** A row to scroll to and focus (a new issue's), changed to ask again. */
  reveal: { row: number; serial: number } | null;
  /** Set to scroll to the last row (the toolbar's "End"). */
  toEnd: number;
}

interface Editing {
  row: number;
  col: number;
  initial: string | null;
}

interface RowActions {
  select: (row: number) => void;
  click: (row: number, col: number, isActive: boolean, toggles: boolean) => void;
  edit: (row: number, col: number) => void;
  commit: (issue: Issue, column: Column, value: string | null) => void;
  cancel: () => void;
}

interface RowProps {
  index: number;
  start: number;
  issue: Issue | undefined;
  columns: Column[];
  widths: string;
  selected: boolean;
  /** The active cell's column when it is in this row, else -1. */
  activeCol: number;
  editing: Editing | null;
  actions: RowActions;
}

/** One row of the grid; memoised, so scrolling and a page arriving render only the rows that
 * changed (the issue objects of Apollo's cache keep their identity while unchanged). */
const GridRow = memo(function GridRow(props: RowProps) {
  const { index, issue, columns, activeCol, editing, actions, selected } = props;
  const widths = props.widths.split(",").map(Number);
  return (
    <div
      className={selected ? "grid-row selected" : "grid-row"}
      role="row"
      aria-rowindex={index + 2}
      aria-busy={issue ? undefined : true}
      aria-selected={selected}
      data-issue={issue?.id}
      style={{ transform: `translateY(${props.start}px)`, height: ROW_HEIGHT }}
    >
      <div
        className="grid-cell select"
        role="gridcell"
        aria-colindex={1}
        style={{ width: SELECT_WIDTH }}
        tabIndex={activeCol === 0 ? 0 : -1}
        data-row={index}
        data-col={0}
        onClick={() => actions.select(index)}
      >
        {issue ? <span className="checkbox">{selected ? "☑" : "☐"}</span> : null}
      </div>
      {columns.map((column, i) => {
        const col = i + 1;
        const isActive = activeCol === col;
        const isEditing = editing && editing.col === col;
        return (
          <div
            key={column.key}
            className={`grid-cell type-${column.type.toLowerCase()}${isActive ? " active" : ""}`}
            role="gridcell"
            aria-colindex={col + 1}
            aria-readonly={isEditable(column) ? undefined : true}
            style={{ width: widths[i] }}
            tabIndex={isActive ? 0 : -1}
            data-row={index}
            data-col={col}
            data-column={column.key}
            onClick={() => actions.click(index, col, isActive, issue !== undefined && togglesInPlace(column))}
            onDoubleClick={() => actions.edit(index, col)}
          >
            {issue ? (
              isEditing ? (
                <Editor
                  issue={issue}
                  column={column}
                  initial={editing.initial}
                  commit={(value) => actions.commit(issue, column, value)}
                  cancel={actions.cancel}
                />
              ) : (
                <CellView issue={issue} column={column} />
              )
            ) : i === 1 ? (
              <span className="loading">Loading…</span>
            ) : null}
          </div>
        );
      })}
    </div>
  );
});

export function Grid(props: GridProps) {
  const { columns, rows, orders } = props;
  const [sizing, setSizing] = useState<ColumnSizingState>({});
  const defs = useMemo<ColumnDef<Issue>[]>(
    () => columns.map((c) => ({ id: c.key, header: c.label, size: defaultWidth(c), minSize: 60, maxSize: 800 })),
    [columns],
  );
  const table = useReactTable({
    data: NO_ROWS,
    columns: defs,
    getCoreRowModel: getCoreRowModel(),
    columnResizeMode: "onChange",
    state: { columnSizing: sizing },
    onColumnSizingChange: setSizing,
  });
  const headers = table.getHeaderGroups()[0]?.headers ?? [];
  const width = SELECT_WIDTH + table.getTotalSize() + (props.addColumn ? ADD_COLUMN_WIDTH : 0);

  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: rows.rowCount,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: OVERSCAN,
    // The virtualizer re-renders the rows in view with React's flushSync by default, making
    // every scroll event one synchronous render; batched, the scroll stays off long tasks.
    useFlushSync: false,
  });
  const items = virtualizer.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items[items.length - 1]?.index ?? -1;
  useEffect(() => {
    if (last >= 0) rows.want(first, last);
  }, [first, last, rows]);

  // The cell in the tab order: row -1 is the header row; col 0 is the selection column.
  const [cell, setActive] = useState({ row: 0, col: 2 });
  // With no rows the header holds the tab stop.
  const active = cell.row >= rows.rowCount ? { row: -1, col: cell.col } : cell;
  const [editing, setEditing] = useState<Editing | null>(null);
  const wantsFocus = useRef(false);
  const colCount = columns.length + 1;

  const moveTo = (row: number, col: number) => {
    const r = Math.max(-1, Math.min(rows.rowCount - 1, row));
    const c = Math.max(0, Math.min(colCount - 1, col));
    wantsFocus.current = true;
    setActive({ row: r, col: c });
    if (r >= 0) virtualizer.scrollToIndex(r, { align: "auto" });
  };

  useEffect(() => {
    if (!wantsFocus.current || editing) return;
    const cell = scroller.current?.querySelector<HTMLElement>(`[data-row="${active.row}"][data-col="${active.col}"]`);
    if (cell) {
      wantsFocus.current = false;
      cell.focus({ preventScroll: true });
    }
  });

  useEffect(() => {
    if (props.reveal) moveTo(props.reveal.row, 2);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [props.reveal]);
  useEffect(() => {
    if (props.toEnd > 0 && rows.rowCount > 0) moveTo(rows.rowCount - 1, active.col);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [props.toEnd]);

  const toggleSelected = (issue: Issue) => {
    const next = new Set(props.selected);
    if (next.has(issue.id)) next.delete(issue.id);
    else next.add(issue.id);
    props.setSelected(next);
  };

  const startEdit = (row: number, col: number, initial: string | null) => {
    const issue = rows.rowAt(row);
    const column = columns[col - 1];
    if (!issue || !column || !isEditable(column)) return;
    if (togglesInPlace(column)) {
      props.write(issue, column, rawValue(issue, column) === "true" ? "false" : "true");
      return;
    }
    setEditing({ row, col, initial });
  };

  const onKeyDown = (e: ReactKeyboardEvent<HTMLDivElement>) => {
    if (editing) return;
    const { row, col } = active;
    // A header's menu (sorts, empty cells, rename, move, delete, options) from the keyboard.
    if (row === -1 && (e.key === "ContextMenu" || (e.shiftKey && e.key === "F10") || (e.altKey && e.key === "ArrowDown"))) {
      scroller.current?.querySelector<HTMLButtonElement>(`[data-row="-1"][data-col="${col}"] .menu > button`)?.click();
      e.preventDefault();
      return;
    }
    const page = Math.max(1, Math.floor((scroller.current?.clientHeight ?? 320) / ROW_HEIGHT) - 2);
    const ctrl = e.ctrlKey || e.metaKey;
    const column = columns[col - 1];
    const issue = row >= 0 ? rows.rowAt(row) : undefined;
    switch (e.key) {
      case "ArrowUp":
        moveTo(row - 1, col);
        break;
      case "ArrowDown":
        moveTo(row + 1, col);
        break;
      case "ArrowLeft":
        moveTo(row, col - 1);
        break;
      case "ArrowRight":
        moveTo(row, col + 1);
        break;
      case "Home":
        moveTo(ctrl ? 0 : row, 0);
        break;
      case "End":
        moveTo(ctrl ? rows.rowCount - 1 : row, colCount - 1);
        break;
      case "PageUp":
        moveTo(row - page, col);
        break;
      case "PageDown":
        moveTo(row + page, col);
        break;
      case "Enter":
      case "F2":
        if (row === -1 && column) props.sort(column, e.shiftKey);
        else if (col === 0 && issue) toggleSelected(issue);
        else startEdit(row, col, null);
        break;
      case " ":
        if (col === 0 && issue) toggleSelected(issue);
        else if (column && togglesInPlace(column)) startEdit(row, col, null);
        else return;
        break;
      case "Delete":
      case "Backspace":
        if (issue && column && column.field && !togglesInPlace(column)) props.write(issue, column, null);
        else return;
        break;
      default:
        if (e.key.length === 1 && !ctrl && !e.altKey && issue && column && ["NAME", "TEXT", "INT", "NUMBER"].includes(column.type)) {
          startEdit(row, col, e.key);
          break;
        }
        return;
    }
    e.preventDefault();
  };

  // The columns' widths as one string, so a row re-renders only when a width changes.
  const widths = headers.map((h) => h.getSize()).join(",");

  // What a row may do, through a ref: the object rows receive never changes, so a row whose
  // issue, place and state are unchanged is not rendered again (rows are memoised).
  const latest = useRef({ moveTo, startEdit, toggleSelected, write: props.write, setEditing, wantsFocus, rows });
  latest.current = { moveTo, startEdit, toggleSelected, write: props.write, setEditing, wantsFocus, rows };
  const actions = useMemo<RowActions>(
    () => ({
      select: (row) => {
        const { moveTo, toggleSelected, rows } = latest.current;
        moveTo(row, 0);
        const issue = rows.rowAt(row);
        if (issue) toggleSelected(issue);
      },
      click: (row, col, isActive, toggles) => {
        const { moveTo, startEdit } = latest.current;
        if (isActive && toggles) startEdit(row, col, null);
        else moveTo(row, col);
      },
      edit: (row, col) => latest.current.startEdit(row, col, null),
      commit: (issue, column, value) => {
        const { setEditing, wantsFocus, write } = latest.current;
        setEditing(null);
        wantsFocus.current = true;
        write(issue, column, value);
      },
      cancel: () => {
        const { setEditing, wantsFocus } = latest.current;
        setEditing(null);
        wantsFocus.current = true;
      },
    }),
    [],
  );

  return (
    <div className="grid-frame">
      <div
        ref={scroller}
        className="grid-scroller"
        role="grid"
        aria-label={props.label}
        aria-rowcount={rows.total != null ? rows.total + 1 : -1}
        aria-colcount={colCount + (props.addColumn ? 1 : 0)}
        aria-multiselectable="true"
        onKeyDown={onKeyDown}
      >
        <div className="grid-header" role="rowgroup" style={{ width }}>
          <div className="grid-row header" role="row" aria-rowindex={1}>
            <div
              className="grid-cell select"
              role="columnheader"
              aria-colindex={1}
              style={{ width: SELECT_WIDTH }}
              tabIndex={active.row === -1 && active.col === 0 ? 0 : -1}
              data-row={-1}
              data-col={0}
            >
              <span className="visually-hidden">Selected</span>
            </div>
            {headers.map((header, i) => {
              const column = columns[i];
              const { ariaSort, mark } = sortMark(column, orders);
              return (
                <div
                  key={header.id}
                  className="grid-cell columnheader"
                  role="columnheader"
                  aria-colindex={i + 2}
                  aria-sort={ariaSort}
                  style={{ width: header.getSize() }}
                  tabIndex={active.row === -1 && active.col === i + 1 ? 0 : -1}
                  data-row={-1}
                  data-col={i + 1}
                  data-column={column.key}
                >
                  <button
                    type="button"
                    className="sort"
                    tabIndex={-1}
                    title="Click to sort; Shift-click to add a sort key"
                    onClick={(e) => props.sort(column, e.shiftKey)}
                  >
                    <span className="label">{column.label}</span>
                    <span className="type">{typeLabel(column.type)}</span>
                    {mark ? (
                      <span className="sorted" aria-hidden="true">
                        {mark}
                      </span>
                    ) : null}
                    {column.field?.status === "REINDEXING" ? <span className="muted"> reindexing…</span> : null}
                  </button>
                  <MenuButton label={`Column menu: ${column.label}`} text="⋯" items={props.columnMenu(column)} />
                  <span
                    className="resizer"
                    aria-hidden="true"
                    onMouseDown={header.getResizeHandler()}
                    onTouchStart={header.getResizeHandler()}
                  />
                </div>
              );
            })}
            {props.addColumn ? (
              <div className="grid-cell add-column" role="columnheader" aria-colindex={colCount + 1}>
                <button type="button" aria-label="Add a column" tabIndex={-1} onClick={props.addColumn}>
                  +
                </button>
              </div>
            ) : null}
          </div>
        </div>
        <div className="grid-body" role="rowgroup" style={{ height: virtualizer.getTotalSize(), width }}>
          {items.map((item) => {
            const issue = rows.rowAt(item.index);
            return (
              <GridRow
                key={item.key}
                index={item.index}
                start={item.start}
                issue={issue}
                columns={columns}
                widths={widths}
                selected={issue ? props.selected.has(issue.id) : false}
                activeCol={active.row === item.index ? active.col : -1}
                editing={editing && editing.row === item.index ? editing : null}
                actions={actions}
              />
            );
          })}
        </div>
      </div>
    </div>
  );
}
