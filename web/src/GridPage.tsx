// A project's grid page (`/p/<projectId>`): the toolbar (count, filter, new and deleted
// issues, CSV export), the view tabs, the filter bar and the grid, and what each of their
// actions does to the URL, the views and the columns. Single-key sorts and filters live in
// the URL; multi-key sorts live in saved views, so adding a key (Shift-click) saves one.
import { useEffect, useMemo, useRef, useState } from "react";
import { useQuery } from "@apollo/client";
import { authFetch, client, errorCode, errorExtensions, errorMessage, token } from "./api";
import type { Column } from "./columns";
import { columnKey, describeOrder, gridColumns } from "./columns";
import { NewColumnDialog, OptionsDialog } from "./columnDialogs";
import type { OptionDraft } from "./columnDialogs";
import { ask, confirmed, prompted } from "./dialogs";
import { createIssue, deleteIssues, writeCell } from "./edits";
import { FilterBar } from "./filters";
import { Grid } from "./Grid";
import type { MenuItem } from "./menu";
import { CREATE_FIELD, CREATE_VIEW, DELETE_FIELD, DELETE_VIEW, PROJECT, UPDATE_FIELD, UPDATE_VIEW } from "./queries";
import type { CustomField, FieldType, Issue, IssueFilter, IssueOrder, Project, View } from "./queries";
import { forgetViewRows, startReading, useRows } from "./rows";
import { countConditions, countText, sourceOf } from "./source";
import type { Source } from "./source";
import type { GridLocation } from "./url";
import { gridHref, navigate } from "./url";
import { ViewTabs } from "./ViewTabs";

function orderOf(column: Column, direction: "ASC" | "DESC" = "ASC", empty: "FIRST" | "LAST" = "LAST"): IssueOrder {
  return column.ref.field === "CUSTOM_FIELD"
    ? { field: "CUSTOM_FIELD", customFieldId: column.ref.customFieldId, direction, empty }
    : { field: column.ref.field, direction, empty };
}

/** `orders` as the API's input takes them (no `__typename`, no null field id). */
function orderInput(orders: IssueOrder[]): IssueOrder[] {
  return orders.map((o) =>
    o.field === "CUSTOM_FIELD"
      ? { field: o.field, customFieldId: o.customFieldId, direction: o.direction, empty: o.empty }
      : { field: o.field, direction: o.direction, empty: o.empty },
  );
}

/** Sends the page's first two requests (the columns and views, the first rows) at once, before
 * anything renders; the page's own queries then find them in flight or in the cache. Settles
 * once both have answered (or failed). */
export function startGridPage(location: GridLocation): Promise<void> {
  const meta = client.query({ query: PROJECT, variables: { id: location.projectId } }).then(
    () => undefined,
    () => undefined,
  );
  return Promise.all([meta, startReading(sourceOf(location))]).then(() => undefined);
}

export function GridPage(props: { location: GridLocation }) {
  const { location } = props;
  const projectId = location.projectId;
  const meta = useQuery<{ project: Project | null }>(PROJECT, { variables: { id: projectId } });
  const project = meta.data?.project ?? null;
  const view = location.view ? (project?.views.find((v) => v.id === location.view) ?? null) : null;
  const building = project?.views.some((v) => v.status === "BUILDING") ?? false;
  const { startPolling, stopPolling } = meta;
  useEffect(() => {
    // A view's build takes seconds to minutes: its progress is read again every second.
    if (building) startPolling(1000);
    else stopPolling();
  }, [building, startPolling, stopPolling]);

  const source: Source = useMemo(() => sourceOf(location), [location]);
  const rows = useRows(source);
  const columns = useMemo(() => gridColumns(project?.customFields ?? [], view?.columns ?? null), [project, view]);
  const orders: IssueOrder[] = view ? view.orderBy : location.sort ? [location.sort] : [];
  const filter: IssueFilter | null = view ? view.filter : location.filter;

  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [filterOpen, setFilterOpen] = useState(false);
  const [banner, setBanner] = useState<string | null>(null);
  const [dialog, setDialog] = useState<{ kind: "column" } | { kind: "options"; field: CustomField } | null>(null);
  const [reveal, setReveal] = useState<{ row: number; serial: number } | null>(null);
  const [toEnd, setToEnd] = useState(0);

  const viewBuilding = errorCode(rows.error) === "VIEW_BUILDING" || view?.status === "BUILDING";
  // A view whose index was (re)built serves new rows and cursors: read it again from the top.
  const lastStatus = useRef<{ id: string; status: string } | null>(null);
  useEffect(() => {
    const before = lastStatus.current;
    lastStatus.current = view ? { id: view.id, status: view.status } : null;
    if (!view || view.status !== "READY") return;
    const rebuilt = before?.id === view.id && before.status === "BUILDING";
    if (rebuilt || errorCode(rows.error) === "VIEW_BUILDING") {
      forgetViewRows(view.id);
      rows.retry();
    }
  }, [view, rows]);
  useEffect(() => setSelected(new Set()), [source]);
  useEffect(() => {
    if (rows.failure) setBanner(rows.failure);
  }, [rows.failure]);
  // Once shown, the grid stays while a new sort or filter loads (its widths and focus stay).
  const gridShown = useRef(false);
  if (project && !rows.loading && !rows.error) gridShown.current = true;
  // Every field, shown or not: a new row's place depends on the sort's fields.
  const allColumns = useMemo(() => gridColumns(project?.customFields ?? [], null), [project]);

  const go = (next: Partial<GridLocation>) => navigate(gridHref({ ...location, ...next }));
  const refreshMeta = () => meta.refetch().catch((e) => setBanner(errorMessage(e)));
  const fail = (error: unknown) => setBanner(errorMessage(error));

  const saveView = async (orderBy: IssueOrder[], viewFilter: IssueFilter | null, title: string) => {
    const name = await prompted(title, "View name", "", "Create view");
    if (!name) return;
    try {
      const created = await client.mutate<{ createView: { view: View } }>({
        mutation: CREATE_VIEW,
        variables: { input: { projectId, name, orderBy: orderInput(orderBy), filter: viewFilter } },
      });
      await refreshMeta();
      const id = created.data?.createView.view.id;
      if (id) go({ view: id, sort: null, filter: null });
    } catch (e) {
      fail(e);
    }
  };

  const updateView = async (target: View, change: { orderBy?: IssueOrder[]; filter?: IssueFilter | null; name?: string; position?: number }) => {
    try {
      const input: Record<string, unknown> = { id: target.id, expectedVersion: target.version };
      if (change.orderBy) input.orderBy = orderInput(change.orderBy);
      if (change.filter !== undefined) input.filter = change.filter;
      if (change.name !== undefined) input.name = change.name;
      if (change.position !== undefined) input.position = change.position;
      await client.mutate({ mutation: UPDATE_VIEW, variables: { input } });
      if (change.orderBy || change.filter !== undefined) {
        // The view's rows and cursors belong to the index being replaced.
        forgetViewRows(target.id);
        if (target.id === location.view) rows.retry();
      }
      await refreshMeta();
    } catch (e) {
      fail(e);
    }
  };

  /** Moves a view tab one place by swapping positions with its neighbour (positions are sort
   * keys, ties broken by id, not indexes). */
  const moveView = async (target: View, by: number) => {
    const ordered = [...(project?.views ?? [])].sort((a, b) => a.position - b.position || a.id.localeCompare(b.id));
    const other = ordered[ordered.findIndex((v) => v.id === target.id) + by];
    if (!other) return;
    if (other.position === target.position) {
      await updateView(target, { position: by > 0 ? other.position + 1 : Math.max(0, other.position - 1) });
      if (by < 0 && other.position === 0) await updateView(other, { position: 1 });
      return;
    }
    await updateView(target, { position: other.position });
    await updateView(other, { position: target.position });
  };

  const sort = async (
    column: Column,
    add: boolean,
    placement?: { empty: "FIRST" | "LAST" },
    direction?: "ASC" | "DESC",
  ) => {
    const current = orders;
    const at = current.findIndex((o) => columnKey(o) === column.key);
    let next: IssueOrder[];
    if (direction) {
      next = [orderOf(column, direction, at >= 0 ? current[at].empty : "LAST")];
    } else if (placement) {
      next = at >= 0 ? current.map((o, i) => (i === at ? { ...o, empty: placement.empty } : o)) : [orderOf(column, "ASC", placement.empty)];
    } else if (add) {
      next =
        at >= 0
          ? current.map((o, i) => (i === at ? { ...o, direction: o.direction === "ASC" ? "DESC" : "ASC" } : o))
          : [...current, orderOf(column)];
    } else {
      next = at === 0 && current.length === 1 ? [{ ...current[0], direction: current[0].direction === "ASC" ? "DESC" : "ASC" }] : [orderOf(column)];
    }
    if (next.length > 3) {
      setBanner("A view sorts by at most 3 columns.");
      return;
    }
    if (!view) {
      if (next.length === 1) {
        go({ sort: next[0] });
        return;
      }
      await saveView(
        next,
        filter,
        `Sorting by ${describeOrder(next, columns)} needs a saved view: multi-column sorts live in views`,
      );
      return;
    }
    const answer = await ask({
      title: `Sort the view “${view.name}” by ${describeOrder(next, columns)}?`,
      body: "A view's order is its index: updating it rebuilds the view in the background.",
      buttons: [
        { label: "Cancel", value: "cancel" },
        { label: "Save as a new view", value: "new" },
        { label: "Update this view", value: "update", primary: true },
      ],
    });
    if (answer.button === "update") await updateView(view, { orderBy: next });
    else if (answer.button === "new") await saveView(next, view.filter, "New view");
  };

  const applyFilter = async (next: IssueFilter | null) => {
    if (!view) {
      go({ filter: next });
      return;
    }
    if (await confirmed(`Change the filter of “${view.name}”?`, "The view is rebuilt in the background.", "Update view")) {
      await updateView(view, { filter: next });
    }
  };

  const fieldMutation = async (mutation: typeof UPDATE_FIELD, input: Record<string, unknown>) => {
    try {
      await client.mutate({ mutation, variables: { input } });
      await refreshMeta();
      return null;
    } catch (e) {
      return errorMessage(e);
    }
  };

  /** The field beside `field` in position order (`by` -1 left, 1 right), or null at an end. */
  const neighbour = (field: CustomField, by: -1 | 1): CustomField | null => {
    const ordered = [...(project?.customFields ?? [])].sort((a, b) => a.position - b.position);
    return ordered[ordered.findIndex((f) => f.id === field.id) + by] ?? null;
  };

  /** Moves a column one place by swapping positions with its neighbour: a position is a sort
   * key (0 to 2^31 - 1), not an index, so the two may also be equal or far apart. */
  const moveField = async (field: CustomField, by: -1 | 1) => {
    const other = neighbour(field, by);
    if (!other) return;
    let mine = other.position;
    let theirs = field.position;
    if (mine === theirs) {
      // Equal positions: step past the neighbour instead (or push it past, at position 0).
      if (by > 0) mine += 1;
      else if (mine > 0) mine -= 1;
      else theirs += 1;
    }
    const failure =
      (await fieldMutation(UPDATE_FIELD, { id: field.id, position: mine })) ??
      (theirs !== other.position ? await fieldMutation(UPDATE_FIELD, { id: other.id, position: theirs }) : null);
    setBanner(failure);
  };

  const columnMenu = (column: Column): MenuItem[] => {
    const field = column.field;
    const sortedAt = orders.findIndex((o) => columnKey(o) === column.key);
    const items: MenuItem[] = [
      { label: "Sort ascending", run: () => void sort(column, false, undefined, "ASC") },
      { label: "Sort descending", run: () => void sort(column, false, undefined, "DESC") },
      { label: "Add to sort (saves a view)", run: () => void sort(column, true) },
    ];
    if (field) {
      const empty = sortedAt >= 0 ? orders[sortedAt].empty : null;
      items.push(
        { label: "Empty cells first", checked: empty === "FIRST", run: () => void sort(column, false, { empty: "FIRST" }) },
        { label: "Empty cells last", checked: empty === "LAST", run: () => void sort(column, false, { empty: "LAST" }) },
        {
          label: "Rename column…",
          run: async () => {
            const name = await prompted("Rename column", "Name", field.name);
            if (name) {
              const failure = await fieldMutation(UPDATE_FIELD, { id: field.id, name });
              if (failure) setBanner(failure);
            }
          },
        },
        { label: "Move left", disabled: neighbour(field, -1) === null, run: () => void moveField(field, -1) },
        { label: "Move right", disabled: neighbour(field, 1) === null, run: () => void moveField(field, 1) },
      );
      if (field.type === "SELECT") items.push({ label: "Edit options…", run: () => setDialog({ kind: "options", field }) });
      items.push({
        label: "Delete column…",
        run: async () => {
          if (await confirmed(`Delete the column “${field.name}”?`, "Its values are deleted from every issue.", "Delete column", true)) {
            setBanner(await fieldMutation(DELETE_FIELD, { id: field.id }));
          }
        },
      });
    }
    return items;
  };

  const write = async (issue: Issue, column: Column, value: string | null) => {
    const failure = await writeCell(issue, column, value, columns);
    setBanner(failure);
  };

  const addIssue = async () => {
    const name = await prompted("New issue", "Name", "", "Add issue");
    if (!name) return;
    const result = await createIssue(source, name, orders, filter, allColumns, otherLists(), rows.spans);
    setBanner(result.error);
    if (result.reread) rows.retry();
    if (result.index != null) setReveal({ row: result.index, serial: Date.now() });
  };

  /** The views whose cached lists a new or deleted issue makes stale (all but the one shown). */
  const otherLists = () => (project?.views ?? []).map((v) => v.id).filter((id) => id !== location.view);

  const removeSelected = async () => {
    const ids = [...selected];
    if (!(await confirmed(`Delete ${ids.length} issue${ids.length === 1 ? "" : "s"}?`, "This cannot be undone.", "Delete", true))) return;
    setBanner(await deleteIssues(source, ids, otherLists()));
    setSelected(new Set());
  };

  const download = async () => {
    const params = new URLSearchParams({ project: projectId, format: "csv" });
    if (location.view) params.set("view", location.view);
    else {
      if (location.sort) params.set("orderBy", JSON.stringify(orderInput([location.sort])[0]));
      if (location.filter) params.set("filter", JSON.stringify(location.filter));
    }
    if (!token()) {
      // Without a token the browser downloads the stream itself, to disk, in bounded memory.
      const link = document.createElement("a");
      link.href = `/export?${params}`;
      link.download = "";
      link.click();
      return;
    }
    try {
      // A bearer token cannot ride on a link: the file is fetched with it and saved from memory.
      const response = await authFetch(`/export?${params}`);
      if (!response.ok) {
        const body = (await response.json().catch(() => null)) as { errors?: { message: string }[] } | null;
        setBanner(body?.errors?.[0]?.message ?? `The export failed (HTTP ${response.status}).`);
        return;
      }
      const blob = await response.blob();
      const disposition = response.headers.get("Content-Disposition") ?? "";
      const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? `${projectId}.csv`;
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = name;
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
    } catch (e) {
      fail(e);
    }
  };

  if (meta.error && !project) {
    return <p className="error page-message" role="alert">{errorMessage(meta.error)}</p>;
  }
  if (!meta.loading && meta.data && !project) {
    return <p className="error page-message" role="alert">There is no project {projectId}.</p>;
  }

  const count = countText(rows.total, rows.loaded, filter != null);
  const progress = view?.progress ?? (errorExtensions(rows.error)?.progress as View["progress"] | undefined) ?? null;

  return (
    <div className="grid-page">
      <header className="toolbar">
        <a href="/" className="home">
          gridgate
        </a>
        <h1>{project?.name ?? "…"}</h1>
        <span className="count" role="status" aria-live="polite" data-total={rows.total ?? ""}>
          {rows.loading || viewBuilding ? "" : count}
        </span>
        <span className="spacer" />
        <button type="button" aria-expanded={filterOpen} onClick={() => setFilterOpen((o) => !o)}>
          Filter{countConditions(filter) > 0 ? ` (${countConditions(filter)})` : ""}
        </button>
        <button type="button" onClick={() => void addIssue()}>
          + Issue
        </button>
        <button type="button" disabled={selected.size === 0} onClick={() => void removeSelected()}>
          Delete{selected.size > 0 ? ` ${selected.size}` : ""}
        </button>
        <button type="button" onClick={() => setToEnd((n) => n + 1)}>
          Jump to end
        </button>
        <button type="button" onClick={() => void download()}>
          Download CSV
        </button>
      </header>
      {project ? (
        <ViewTabs
          views={project.views}
          current={location.view}
          count={rows.loading || viewBuilding ? null : rows.total}
          describe={(v) => `Sorted by ${describeOrder(v.orderBy, columns) || "num"}${v.filter ? ", filtered" : ""}`}
          open={(viewId) => go({ view: viewId })}
          create={() => void saveView(orders.length > 0 ? orders : [{ field: "NUM", direction: "ASC", empty: "LAST" }], filter, "Save as a view")}
          rename={async (v) => {
            const name = await prompted("Rename view", "Name", v.name);
            if (name) await updateView(v, { name });
          }}
          move={(v, by) => void moveView(v, by)}
          remove={async (v) => {
            if (!(await confirmed(`Delete the view “${v.name}”?`, "Its issues stay; only the view goes.", "Delete view", true))) return;
            try {
              await client.mutate({ mutation: DELETE_VIEW, variables: { input: { id: v.id } } });
              await refreshMeta();
              if (location.view === v.id) go({ view: null });
            } catch (e) {
              fail(e);
            }
          }}
        />
      ) : null}
      {view ? (
        <p className="view-summary">
          Sorted by {describeOrder(view.orderBy, columns) || "num"}
          {view.filter ? ", filtered" : ""}.
        </p>
      ) : null}
      {filterOpen && project ? (
        <FilterBar key={JSON.stringify(filter)} columns={columns} filter={filter} apply={(f) => void applyFilter(f)} close={() => setFilterOpen(false)} />
      ) : null}
      {banner ? (
        <div className="banner error" role="alert">
          <span>{banner}</span>
          <button type="button" aria-label="Dismiss" onClick={() => setBanner(null)}>
            ✕
          </button>
        </div>
      ) : null}
      {rows.error && !viewBuilding ? (
        <p className="error page-message" role="alert">
          {errorMessage(rows.error)}
        </p>
      ) : null}
      {viewBuilding ? (
        <div className="building" role="status">
          <p>This view is being built{progress ? `: ${progress.scanned.toLocaleString("en")} of ${progress.total.toLocaleString("en")} issues read` : ""}.</p>
          <progress max={progress?.total ?? 1} value={progress?.scanned ?? 0} />
        </div>
      ) : project && !rows.error && (gridShown.current || !rows.loading) ? (
        <Grid
          label={`${project.name}: ${view ? view.name : "all issues"}`}
          columns={columns}
          rows={rows}
          orders={orders}
          selected={selected}
          setSelected={setSelected}
          sort={(column, add) => void sort(column, add)}
          columnMenu={columnMenu}
          addColumn={() => setDialog({ kind: "column" })}
          write={(issue, column, value) => void write(issue, column, value)}
          reveal={reveal}
          toEnd={toEnd}
        />
      ) : null}
      {dialog?.kind === "column" ? (
        <NewColumnDialog
          close={() => setDialog(null)}
          create={(name: string, type: FieldType, options: OptionDraft[]) =>
            fieldMutation(CREATE_FIELD, { projectId, name, type, ...(type === "SELECT" ? { options } : {}) })
          }
        />
      ) : null}
      {dialog?.kind === "options" ? (
        <OptionsDialog
          field={dialog.field}
          close={() => setDialog(null)}
          save={(options) => fieldMutation(UPDATE_FIELD, { id: dialog.field.id, options })}
        />
      ) : null}
    </div>
  );
}
