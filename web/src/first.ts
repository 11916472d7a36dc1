// The first paint: a small script (first.js) that puts a grid's first rows on screen before
// the page's own script (grid.js, React and Apollo Client) has even been evaluated. It sends
// the page's first two requests (the project's columns and views, the first page of rows) as
// soon as the HTML is read, draws the toolbar, the tabs, the header and the rows in view as
// plain DOM, the same markup the page renders, and then loads grid.js, which takes those two
// answers instead of asking again (handoff.ts) and replaces this DOM with its own when it
// renders, showing the same rows in the same places. Evaluating grid.js takes longer than
// both requests on loopback, so the rows are on screen well before it has run.
//
// The markup is the page's (GridPage.tsx, ViewTabs.tsx, Grid.tsx), built from the same
// helpers (columns.ts, source.ts); a browser test compares the two, so they cannot drift
// apart unseen. Where the page would show something else (an error, a sign-in, a view that
// is building or missing), nothing is painted and the page shows it.
import { ADD_COLUMN_WIDTH, cellLook, chipStyle, defaultWidth, describeOrder, gridColumns, OVERSCAN, ROW_HEIGHT, SELECT_WIDTH, sortMark, typeLabel } from "./columns";
import type { Column } from "./columns";
import { handoff, prefetch } from "./handoff";
import type { Connection, Issue, IssueOrder, Project } from "./queries";
import { countConditions, countText, listSize, pageVariables, sourceOf, variablesOf } from "./source";
import { token } from "./token";
import type { GridLocation } from "./url";
import { parseLocation } from "./url";

/** The documents as the page's Apollo Client sends them, printed at build time (build.mjs). */
declare const __FIRST_DOCUMENTS__: { GridProject: string; GridIssues: string; GridViewIssues: string };

/** How long the page's script waits for the first answers before it starts anyway: a slow
 * server then delays the page's own start by at most this. */
const PATIENCE_MS = 300;

const appSource = (document.currentScript as HTMLScriptElement | null)?.dataset.app ?? null;
let appLoading = false;

/** Loads the page's script (preloaded by the HTML, so it is usually here already). */
function loadApp(): void {
  if (appLoading || !appSource) return;
  appLoading = true;
  const script = document.createElement("script");
  script.src = appSource;
  document.body.appendChild(script);
}

type Child = Node | string | null | false;

/** An element with attributes (null and false ones left out) and children. */
function el(tag: string, attributes: Record<string, string | number | boolean | null | undefined>, ...children: Child[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    // `true` is an attribute present without a value (`disabled`), as React writes it.
    if (name === "className") element.className = String(value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === false) continue;
    element.append(child);
  }
  return element;
}

function cellContent(issue: Issue, column: Column): Child {
  const look = cellLook(issue, column);
  switch (look.kind) {
    case "checkbox":
      return el("span", { className: "checkbox", "aria-label": look.checked ? "checked" : "not checked" }, look.checked ? "☑" : "☐");
    case "chip": {
      const { className, background } = chipStyle(look.color);
      const chip = el("span", { className }, look.label);
      if (background) chip.style.background = background;
      return chip;
    }
    case "text":
      return look.text;
    case "empty":
      return null;
  }
}

function row(index: number, issue: Issue, columns: Column[], widths: number[]): HTMLElement {
  const element = el(
    "div",
    { className: "grid-row", role: "row", "aria-rowindex": index + 2, "aria-selected": "false", "data-issue": issue.id },
    el("div", { className: "grid-cell select", role: "gridcell", "aria-colindex": 1, "data-row": index, "data-col": 0 }, el("span", { className: "checkbox" }, "☐")),
    ...columns.map((column, i) =>
      el(
        "div",
        {
          className: `grid-cell type-${column.type.toLowerCase()}`,
          role: "gridcell",
          "aria-colindex": i + 2,
          "aria-readonly": column.type === "NUM" ? "true" : null,
          "data-row": index,
          "data-col": i + 1,
          "data-column": column.key,
        },
        cellContent(issue, column),
      ),
    ),
  );
  element.style.transform = `translateY(${index * ROW_HEIGHT}px)`;
  element.style.height = `${ROW_HEIGHT}px`;
  setWidths(element, widths);
  return element;
}

/** Gives a row's cells their widths (the selection column's first). */
function setWidths(rowElement: HTMLElement, widths: number[]): void {
  const cells = rowElement.children;
  for (let i = 0; i < cells.length && i < widths.length; i++) (cells[i] as HTMLElement).style.width = `${widths[i]}px`;
}

function header(columns: Column[], orders: IssueOrder[], widths: number[]): HTMLElement {
  const element = el(
    "div",
    { className: "grid-row header", role: "row", "aria-rowindex": 1 },
    el("div", { className: "grid-cell select", role: "columnheader", "aria-colindex": 1, "data-row": -1, "data-col": 0 }, el("span", { className: "visually-hidden" }, "Selected")),
    ...columns.map((column, i) => {
      const { ariaSort, mark } = sortMark(column, orders);
      return el(
        "div",
        { className: "grid-cell columnheader", role: "columnheader", "aria-colindex": i + 2, "aria-sort": ariaSort, "data-row": -1, "data-col": i + 1, "data-column": column.key },
        el(
          "button",
          { type: "button", className: "sort", title: "Click to sort; Shift-click to add a sort key" },
          el("span", { className: "label" }, column.label),
          el("span", { className: "type" }, typeLabel(column.type)),
          mark ? el("span", { className: "sorted", "aria-hidden": "true" }, mark) : null,
          column.field?.status === "REINDEXING" ? el("span", { className: "muted" }, " reindexing…") : null,
        ),
        el("span", { className: "menu " }, el("button", { type: "button", "aria-label": `Column menu: ${column.label}`, "aria-haspopup": "menu", "aria-expanded": "false" }, "⋯")),
        el("span", { className: "resizer", "aria-hidden": "true" }),
      );
    }),
    el("div", { className: "grid-cell add-column", role: "columnheader", "aria-colindex": columns.length + 2 }, el("button", { type: "button", "aria-label": "Add a column" }, "+")),
  );
  setWidths(element, widths);
  return element;
}

function tabs(project: Project, current: string | null, total: number | null, columns: Column[]): HTMLElement {
  const views = [...project.views].sort((a, b) => a.position - b.position);
  return el(
    "nav",
    { className: "tabs", "aria-label": "Views" },
    el(
      "div",
      { role: "tablist", "aria-label": "Views" },
      el("button", { type: "button", role: "tab", "aria-selected": String(current === null) }, "All issues"),
      ...views.map((view) =>
        el(
          "span",
          { className: "tab" },
          el(
            "button",
            {
              type: "button",
              role: "tab",
              "aria-selected": String(current === view.id),
              "data-view": view.id,
              title: `Sorted by ${describeOrder(view.orderBy, columns) || "num"}${view.filter ? ", filtered" : ""}`,
            },
            el("span", { className: "name" }, view.name),
            current === view.id && total != null ? el("span", { className: "tab-count" }, ` ${total.toLocaleString("en")}`) : null,
            view.status === "BUILDING" ? el("span", { className: "progress" }, ` building ${view.progress ? `${view.progress.scanned}/${view.progress.total}` : "…"}`) : null,
          ),
          el("span", { className: "menu " }, el("button", { type: "button", "aria-label": `View menu: ${view.name}`, "aria-haspopup": "menu", "aria-expanded": "false" }, "⋯")),
        ),
      ),
    ),
    el("button", { type: "button", className: "new-view" }, "+ Save as view"),
  );
}

/** Draws the grid page with the first page of rows, as GridPage renders it. */
function paint(location: GridLocation, project: Project, connection: Connection): void {
  const root = document.getElementById("root");
  if (!root || root.childElementCount > 0) return;
  const view = location.view ? (project.views.find((v) => v.id === location.view) ?? null) : null;
  const columns = gridColumns(project.customFields, view?.columns ?? null);
  const orders = view ? view.orderBy : location.sort ? [location.sort] : [];
  const filter = view ? view.filter : location.filter;
  const edges = connection.edges;
  const { total, rowCount } = listSize(edges.length, connection.pageInfo.hasNextPage, connection.totalCount ?? null);
  const widths = [SELECT_WIDTH, ...columns.map(defaultWidth)];
  const width = widths.reduce((a, b) => a + b, 0) + ADD_COLUMN_WIDTH;
  const conditions = countConditions(filter);

  const body = el("div", { className: "grid-body", role: "rowgroup" });
  body.style.height = `${rowCount * ROW_HEIGHT}px`;
  body.style.width = `${width}px`;
  const headerGroup = el("div", { className: "grid-header", role: "rowgroup" }, header(columns, orders, widths));
  headerGroup.style.width = `${width}px`;
  const scroller = el(
    "div",
    {
      className: "grid-scroller",
      role: "grid",
      "aria-label": `${project.name}: ${view ? view.name : "all issues"}`,
      "aria-rowcount": total != null ? total + 1 : -1,
      "aria-colcount": columns.length + 2,
      "aria-multiselectable": "true",
    },
    headerGroup,
    body,
  );
  const page = el(
    "div",
    // Marked, so that tests (and anyone reading the DOM) can tell it from the page's own, and
    // inert: it answers nothing, so it takes no focus, clicks or scrolling (see styles.css).
    { className: "grid-page", "data-first-paint": true, inert: true },
    el(
      "header",
      { className: "toolbar" },
      el("a", { href: "/", className: "home" }, "gridgate"),
      el("h1", {}, project.name),
      el("span", { className: "count", role: "status", "aria-live": "polite", "data-total": total ?? "" }, countText(total, edges.length, filter != null)),
      el("span", { className: "spacer" }),
      el("button", { type: "button", "aria-expanded": "false" }, `Filter${conditions > 0 ? ` (${conditions})` : ""}`),
      el("button", { type: "button" }, "+ Issue"),
      el("button", { type: "button", disabled: true }, "Delete"),
      el("button", { type: "button" }, "Jump to end"),
      el("button", { type: "button" }, "Download CSV"),
    ),
    tabs(project, location.view, total, columns),
    view ? el("p", { className: "view-summary" }, `Sorted by ${describeOrder(view.orderBy, columns) || "num"}${view.filter ? ", filtered" : ""}.`) : null,
    el("div", { className: "grid-frame" }, scroller),
  );
  root.append(page);
  // The rows in view (the scroller's height is known once it is in the page) and as many
  // again as the grid renders beyond them.
  const inView = Math.ceil(scroller.clientHeight / ROW_HEIGHT) + OVERSCAN;
  edges.slice(0, inView).forEach((edge, i) => body.append(row(i, edge.node, columns, widths)));
  handoff().painted = true;
}

type Answer = {
  data?: { project: (Project & { issues?: Connection; view?: { status: string; issues: Connection } | null }) | null };
  errors?: unknown[];
};

/** The first paint's rows, when both answers are whole and the page would show them. */
function painting(location: GridLocation, projectAnswer: Answer | null, pageAnswer: Answer | null): { project: Project; connection: Connection } | null {
  if (!projectAnswer?.data || projectAnswer.errors || !pageAnswer?.data || pageAnswer.errors) return null;
  const project = projectAnswer.data.project;
  const listed = pageAnswer.data.project;
  if (!project || !listed) return null;
  if (location.view) {
    // Both answers must see the view ready: one read while it was building shows the build.
    const view = project.views.find((v) => v.id === location.view);
    if (view?.status !== "READY" || listed.view?.status !== "READY") return null;
    return { project, connection: listed.view.issues };
  }
  return listed.issues ? { project, connection: listed.issues } : null;
}

/** Sends the first requests and paints their answers; whatever happens, the page's script is
 * loaded (a failure here must never keep the page from running). */
function start(): void {
  const opening = parseLocation(new URL(window.location.href));
  if (!opening) {
    loadApp();
    return;
  }
  const source = sourceOf(opening);
  const bearer = token();
  const pageQuery = source.kind === "view" ? "GridViewIssues" : "GridIssues";
  const asked = Promise.all([
    prefetch("GridProject", __FIRST_DOCUMENTS__.GridProject, { id: opening.projectId }, bearer),
    prefetch(pageQuery, __FIRST_DOCUMENTS__[pageQuery], pageVariables(variablesOf(source), "head", null), bearer),
  ]);
  const patience = setTimeout(loadApp, PATIENCE_MS);
  void asked.then(([projectAnswer, pageAnswer]) => {
    clearTimeout(patience);
    try {
      const shown = painting(opening, projectAnswer as Answer | null, pageAnswer as Answer | null);
      if (shown && !handoff().started) paint(opening, shown.project, shown.connection);
    } finally {
      // The page's script runs after the browser has shown the rows (or at once, with none).
      requestAnimationFrame(() => setTimeout(loadApp, 0));
      setTimeout(loadApp, 50);
    }
  });
}

try {
  start();
} catch (error) {
  console.error(error);
  loadApp();
}
