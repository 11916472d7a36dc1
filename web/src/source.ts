// What a grid lists and how its requests name it: a project's issues under an order and a
// filter, or a saved view; the variables of its pages; and the size of the list a head of
// pages implies. The page (rows.ts) and the first paint (first.ts) both derive their requests
// from here, so the first paint's answers are the ones the page asks for.
import type { IssueFilter, IssueOrder } from "./queries";
import type { GridLocation } from "./url";

/** Rows per page. */
export const PAGE = 100;

export type Source =
  | { kind: "project"; projectId: string; orderBy: IssueOrder | null; filter: IssueFilter | null }
  | { kind: "view"; projectId: string; viewId: string };

export function sourceOf(location: GridLocation): Source {
  return location.view
    ? { kind: "view", projectId: location.projectId, viewId: location.view }
    : { kind: "project", projectId: location.projectId, orderBy: location.sort, filter: location.filter };
}

/** The variables every page of `source` shares. */
export function variablesOf(source: Source): Record<string, unknown> {
  return source.kind === "view"
    ? { id: source.projectId, view: source.viewId }
    : { id: source.projectId, orderBy: source.orderBy, filter: source.filter };
}

/** A page's variables: forward from the top after `cursor` (the head), or backward from the
 * end before it (the tail). */
export function pageVariables(shared: Record<string, unknown>, end: "head" | "tail", cursor: string | null): Record<string, unknown> {
  return { ...shared, ...(end === "head" ? { first: PAGE, after: cursor } : { last: PAGE, before: cursor }) };
}

/** The list's size from the pages read from its top: the count (a head read to its end is the
 * whole list, whatever a count said when it was read), and how many rows the grid shows (the
 * count, or what was read plus a page while more may follow). */
export function listSize(headLength: number, headHasMore: boolean, count: number | null): { total: number | null; rowCount: number } {
  const total = headHasMore ? count : headLength;
  return { total, rowCount: total != null ? total : headLength + (headHasMore ? PAGE : 0) };
}

/** The toolbar's count: "1,234 issues", or "at least 300 issues" while the count is unknown;
 * "match" under a filter. */
export function countText(total: number | null, loaded: number, filtered: boolean): string {
  const match = filtered ? " match" : "";
  return total != null
    ? `${total.toLocaleString("en")} issue${total === 1 ? "" : "s"}${match}`
    : `at least ${loaded.toLocaleString("en")} issues${match}`;
}

/** How many conditions a filter holds at its top (the toolbar's "Filter (2)"). */
export function countConditions(filter: IssueFilter | null): number {
  if (!filter) return 0;
  return filter.and ? filter.and.length : 1;
}
