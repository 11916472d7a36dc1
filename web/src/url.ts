// The grid's place in the URL: `/p/<projectId>?view=<viewId>` or
// `/p/<projectId>?sort=<column>&filter=<IssueFilter JSON>`, so that a link reopens the same
// grid. A sort is `name`, `-name` (descending), `xattrib-…~first` (empty cells first).
import type { IssueFilter, IssueOrder } from "./queries";

export interface GridLocation {
  projectId: string;
  view: string | null;
  sort: IssueOrder | null;
  filter: IssueFilter | null;
}

export function parseSort(text: string | null): IssueOrder | null {
  if (!text) return null;
  let rest = text;
  const direction = rest.startsWith("-") ? "DESC" : "ASC";
  if (rest.startsWith("-")) rest = rest.slice(1);
  let empty: "FIRST" | "LAST" = "LAST";
  if (rest.endsWith("~first")) {
    empty = "FIRST";
    rest = rest.slice(0, -"~first".length);
  }
  const builtIn = ["num", "name", "state"];
  if (builtIn.includes(rest)) return { field: rest.toUpperCase() as "NUM" | "NAME" | "STATE", direction, empty };
  if (rest.length > 0) return { field: "CUSTOM_FIELD", customFieldId: rest, direction, empty };
  return null;
}

export function formatSort(order: IssueOrder): string {
  const column = order.field === "CUSTOM_FIELD" ? (order.customFieldId ?? "") : order.field.toLowerCase();
  return `${order.direction === "DESC" ? "-" : ""}${column}${order.empty === "FIRST" ? "~first" : ""}`;
}

export function parseLocation(url: URL): GridLocation | null {
  const match = /^\/p\/([^/]+)\/?$/.exec(url.pathname);
  if (!match) return null;
  let filter: IssueFilter | null = null;
  const filterText = url.searchParams.get("filter");
  if (filterText) {
    try {
      filter = JSON.parse(filterText) as IssueFilter;
    } catch {
      filter = null;
    }
  }
  let projectId = match[1];
  try {
    projectId = decodeURIComponent(projectId);
  } catch {
    // A malformed escape is left as written: the server answers that there is no such project.
  }
  return {
    projectId,
    view: url.searchParams.get("view"),
    sort: parseSort(url.searchParams.get("sort")),
    filter,
  };
}

export function gridHref(location: GridLocation): string {
  const params = new URLSearchParams();
  if (location.view) params.set("view", location.view);
  else {
    if (location.sort) params.set("sort", formatSort(location.sort));
    if (location.filter) params.set("filter", JSON.stringify(location.filter));
  }
  const query = params.toString();
  return `/p/${encodeURIComponent(location.projectId)}${query ? `?${query}` : ""}`;
}

/** Moves the page to `href` without reloading it. */
export function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  window.dispatchEvent(new PopStateEvent("popstate"));
}
