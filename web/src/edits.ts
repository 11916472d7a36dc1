// Every write the grid makes to issues: a cell edit shown at once (Apollo's optimistic
// response) and rolled back with the server's message if it fails, sent with
// `expectedVersion`; on CONFLICT the user sees what someone else wrote and keeps it or
// overwrites it. A new issue is put where the current order lists it, and a deleted one
// leaves every list it was in; neither refetches a page.
import type { ApolloCache, Reference } from "@apollo/client";
import { client, errorCode, errorMessage, listsOf } from "./api";
import type { Column } from "./columns";
import { compareIssues, displayValue, rawValue } from "./columns";
import { ask } from "./dialogs";
import { CREATE_ISSUE, DELETE_ISSUE, ISSUES, ISSUE_BY_ID, ROWS_READ, SET_CELL, UPDATE_ISSUE } from "./queries";
import type { Connection, Edge, Issue, IssueFilter, IssueOrder } from "./queries";
import type { Span } from "./rows";
import type { Source } from "./source";
import { variablesOf } from "./source";

/** The issue as it will read once `value` is written to `column`. */
function edited(issue: Issue, column: Column, value: string | null, columns: Column[]): Issue {
  const next = { ...issue, version: issue.version + 1 };
  if (column.type === "NAME") return { ...next, name: value ?? issue.name };
  if (column.type === "STATE") return { ...next, state: (value ?? issue.state) as Issue["state"] };
  const kept = issue.fieldValues.filter((v) => v.fieldId !== column.key);
  if (value != null) {
    kept.push({
      __typename: "CustomFieldValue",
      value,
      fieldId: column.key,
    } as Issue["fieldValues"][number]);
  }
  const place = (id: string) => {
    const i = columns.findIndex((c) => c.key === id);
    return i < 0 ? Number.MAX_SAFE_INTEGER : i;
  };
  kept.sort((a, b) => place(a.fieldId) - place(b.fieldId));
  return { ...next, fieldValues: kept };
}

async function send(issue: Issue, column: Column, value: string | null, columns: Column[], expectedVersion: number) {
  const optimistic = { __typename: "Issue", ...edited(issue, column, value, columns) };
  if (column.type === "NAME" || column.type === "STATE") {
    const input = { id: issue.id, expectedVersion, ...(column.type === "NAME" ? { name: value } : { state: value }) };
    await client.mutate({
      mutation: UPDATE_ISSUE,
      variables: { input },
      optimisticResponse: { updateIssue: { __typename: "UpdateIssuePayload", issue: optimistic } },
    });
  } else {
    await client.mutate({
      mutation: SET_CELL,
      variables: { input: { issueId: issue.id, values: [{ fieldId: column.key, value }], expectedVersion } },
      optimisticResponse: { setIssueFieldValues: { __typename: "SetIssueFieldValuesPayload", issue: optimistic } },
    });
  }
}

/** Writes to one issue wait for the writes before them: each is sent with the version the
 * server confirmed last, so two quick edits of one issue never conflict with each other. */
const queues = new Map<string, Promise<unknown>>();

/** The issue as the server last confirmed it (the cache without optimistic layers). */
function confirmed(issue: Issue): Issue {
  const id = client.cache.identify({ __typename: "Issue", id: issue.id });
  return client.readFragment<Issue>({ id, fragment: ROWS_READ.issue, fragmentName: "GridIssue" }, false) ?? issue;
}

/** Writes one cell. Resolves to an error message to show, or null when the edit stands. */
export function writeCell(issue: Issue, column: Column, value: string | null, columns: Column[]): Promise<string | null> {
  const before = queues.get(issue.id) ?? Promise.resolve();
  const write = before.then(() => writeNow(confirmed(issue), column, value, columns));
  const settled = write.catch(() => null);
  queues.set(issue.id, settled);
  void settled.then(() => {
    if (queues.get(issue.id) === settled) queues.delete(issue.id);
  });
  return write;
}

async function writeNow(issue: Issue, column: Column, value: string | null, columns: Column[]): Promise<string | null> {
  if (value === rawValue(issue, column)) return null;
  try {
    await send(issue, column, value, columns, issue.version);
    return null;
  } catch (error) {
    if (errorCode(error) !== "CONFLICT") return errorMessage(error);
  }
  // Someone else wrote the issue since this page read it: show what they wrote.
  let theirs: Issue;
  try {
    const fresh = await client.query<{ issue: Issue | null }>({ query: ISSUE_BY_ID, variables: { id: issue.id }, fetchPolicy: "network-only" });
    if (!fresh.data.issue) return "Someone else deleted this issue.";
    theirs = fresh.data.issue;
  } catch (error) {
    return errorMessage(error);
  }
  const mine = value == null ? "(empty)" : displayValue(edited(issue, column, value, columns), column);
  const current = displayValue(theirs, column) || "(empty)";
  const answer = await ask({
    title: "Someone else changed this issue",
    body: (
      `#${theirs.num} was changed while you edited it. ${column.label} is now “${current}”; ` +
      `you wrote “${mine}”.`
    ),
    buttons: [
      { label: "Keep theirs", value: "theirs" },
      { label: "Overwrite with mine", value: "mine", primary: true },
    ],
  });
  if (answer.button !== "mine") return null;
  try {
    await send(theirs, column, value, columns, theirs.version);
    return null;
  } catch (error) {
    return errorMessage(error);
  }
}

/** The entity holding a source's lists, and the start of their names in the cache. */
function entries(source: Source): { id: string; prefix: string } {
  const { id, prefix } = listsOf(variablesOf(source));
  return { id: id ?? "", prefix };
}

/** Every list of `source` in the cache, by entry name. */
function lists(source: Source): Map<string, StoredConnection> {
  const { id, prefix } = entries(source);
  const found = new Map<string, StoredConnection>();
  client.cache.modify({
    id,
    fields: {
      issues(stored, { storeFieldName }) {
        if (storeFieldName.startsWith(prefix)) found.set(storeFieldName, stored as unknown as StoredConnection);
        return stored;
      },
    },
  });
  return found;
}

/** Changes the lists of `source`: `change` gets each entry's name and value. */
function changeLists(source: Source, change: (name: string, list: StoredConnection) => StoredConnection) {
  const { id, prefix } = entries(source);
  client.cache.modify({
    id,
    fields: {
      issues(stored, { storeFieldName }) {
        if (!stored || !storeFieldName.startsWith(prefix)) return stored;
        return change(storeFieldName, stored as unknown as StoredConnection) as unknown as typeof stored;
      },
    },
  });
}

/** Creates an issue and, when it belongs in the list on screen, puts it in its place. Resolves
 * to its row's index in the list (null when it is not in the list or not yet read), or asks
 * for the list to be read again (`reread`) when its place is among rows the grid released. */
export async function createIssue(
  source: Source,
  name: string,
  orders: IssueOrder[],
  filter: IssueFilter | null,
  columns: Column[],
  otherViews: string[],
  spans: { head: Span[]; tail: Span[] },
): Promise<{ index: number | null; error: string | null; reread?: boolean }> {
  let issue: Issue;
  try {
    const created = await client.mutate<{ createIssue: { issue: Issue } }>({
      mutation: CREATE_ISSUE,
      variables: { input: { projectId: source.projectId, name } },
    });
    if (!created.data) return { index: null, error: "The server sent no issue back." };
    issue = created.data.createIssue.issue;
  } catch (error) {
    return { index: null, error: errorMessage(error) };
  }
  // Whether the list's filter keeps the new issue is the server's to say: ask for it alone.
  if (filter) {
    const numLeaf: IssueFilter = { column: { field: "NUM" }, eq: String(issue.num) };
    try {
      const found = await client.query<{ project: { issues: Connection } | null }>({
        query: ISSUES,
        variables: { id: source.projectId, first: 1, filter: { and: [filter, numLeaf] } },
        fetchPolicy: "no-cache",
      });
      if ((found.data.project?.issues.edges.length ?? 0) === 0) return { index: null, error: null };
    } catch (error) {
      return { index: null, error: errorMessage(error) };
    }
  }
  const ref = client.cache.identify({ __typename: "Issue", id: issue.id });
  if (!ref) return { index: null, error: null };
  forgetOtherLists(source, otherViews);
  // The head's chunks in order; the new row goes before the first row it sorts before, or
  // after the last row read when nothing follows it. Else the tail's chunks, from the
  // earliest rows: before the first row it sorts before, or at the very end. The grid
  // releases chunks far from view (rows.ts): `spans` says how many rows each chunk spans and
  // whether its list in the cache holds them all.
  const { prefix } = entries(source);
  const found = lists(source);
  const numbered = (end: "head" | "tail", chunks: Span[]) =>
    chunks.map((span, n) => {
      const name = `${prefix}${end}:${n}`;
      return { name, span, list: span.whole ? found.get(name) : undefined };
    });
  const heads = numbered("head", spans.head);
  // The tail's chunks from the earliest rows (the last one read).
  const tails = numbered("tail", spans.tail).reverse();
  const readable = (list: StoredConnection) => list.edges.map(readIssue);
  const before = (nodes: (Issue | null)[]) => nodes.findIndex((node) => node != null && compareIssues(issue, node, orders, columns) < 0);
  // Where the issue goes among rows not held is not known here: the list is read again (the
  // caller's `reread`), which puts it in its place.
  const reread = { index: null, error: null, reread: true };
  let target: { name: string; at: number } | null = null;
  let index: number | null = null;
  let offset = 0;
  for (const [i, { name, span, list }] of heads.entries()) {
    if (!list) {
      // Past a chunk not held only when it sorts after the next held chunk's first row.
      const next = heads.slice(i + 1).find((head) => head.list)?.list;
      const first = next ? readable(next).find((node) => node != null) : undefined;
      if (!first || compareIssues(issue, first, orders, columns) < 0) return reread;
      offset += span.length;
      continue;
    }
    const nodes = readable(list);
    const at = before(nodes);
    if (at >= 0 || (i === heads.length - 1 && !list.pageInfo.hasNextPage)) {
      const place = at >= 0 ? at : list.edges.length;
      target = { name, at: place };
      index = offset + nodes.slice(0, place).filter((n) => n != null).length;
      break;
    }
    offset += nodes.filter((n) => n != null).length;
  }
  if (!target && tails.some((tail) => !tail.list)) return reread;
  if (!target && tails.length > 0) {
    // Rows of the tail after the new one, to place it counting from the end.
    let after = 0;
    for (const [i, { name, list }] of tails.entries()) {
      if (!list) break; // Not held (see above).
      const nodes = readable(list);
      const at = before(nodes);
      // Before the tail's first row, it is in the part not read yet: the head will read it.
      if (i === 0 && at === 0) break;
      if (at >= 0 || i === tails.length - 1) {
        const place = at >= 0 ? at : list.edges.length;
        target = { name, at: place };
        after += nodes.slice(place).filter((n) => n != null).length;
        for (const rest of tails.slice(i + 1)) after += rest.list ? readable(rest.list).filter((n) => n != null).length : 0;
        const total = heads[0]?.list?.totalCount;
        index = total == null ? null : total - after;
        break;
      }
    }
  }
  changeLists(source, (name, list) => {
    const totalCount = list.totalCount == null ? list.totalCount : list.totalCount + 1;
    if (!target || name !== target.name) return { ...list, totalCount };
    const edge = { __typename: "IssueEdge", cursor: "", node: { __ref: ref } };
    return { ...list, totalCount, edges: [...list.edges.slice(0, target.at), edge, ...list.edges.slice(target.at)] };
  });
  return { index, error: null };
}

/** Drops the cached lists of every other order, filter and view of the project: an issue
 * added or deleted makes their rows and counts stale, and they are read again when shown. */
function forgetOtherLists(source: Source, otherViews: string[]) {
  const { prefix } = entries(source);
  client.cache.modify({
    id: client.cache.identify({ __typename: "Project", id: source.projectId }),
    fields: {
      issues(stored, { storeFieldName, DELETE }) {
        return source.kind === "project" && storeFieldName.startsWith(prefix) ? stored : DELETE;
      },
    },
  });
  for (const view of otherViews) {
    client.cache.evict({ id: client.cache.identify({ __typename: "View", id: view }), fieldName: "issues" });
  }
}

interface StoredConnection {
  totalCount: number | null;
  edges: { cursor: string; node: Reference }[];
  pageInfo: { hasNextPage: boolean };
}

/** An edge's issue as the cache holds it, or null when it was deleted. */
function readIssue(edge: { node: Reference }): Issue | null {
  return client.cache.readFragment<Issue>({ id: edge.node.__ref, fragment: ROWS_READ.issue, fragmentName: "GridIssue" });
}

/** Deletes issues; each leaves the cache (and so every list), and the lists' counts drop. */
export async function deleteIssues(source: Source, ids: string[], otherViews: string[]): Promise<string | null> {
  forgetOtherLists(source, otherViews);
  const failures: string[] = [];
  for (const issueId of ids) {
    try {
      await client.mutate({
        mutation: DELETE_ISSUE,
        variables: { input: { id: issueId } },
        update(cache: ApolloCache<unknown>) {
          forget(cache, source, issueId);
        },
      });
    } catch (error) {
      failures.push(errorMessage(error));
    }
  }
  return failures.length > 0 ? failures[0] : null;
}

/** Takes a deleted issue out of the lists of `source`, whose counts drop if any of them held
 * it, and out of the cache. */
function forget(cache: ApolloCache<unknown>, source: Source, issueId: string) {
  const ref = cache.identify({ __typename: "Issue", id: issueId });
  const held = [...lists(source).values()].some((list) => list.edges.some((edge) => edge.node.__ref === ref));
  if (held) {
    changeLists(source, (_, list) => (list.totalCount == null ? list : { ...list, totalCount: list.totalCount - 1 }));
  }
  cache.evict({ id: ref });
  cache.gc();
}

export type { Edge };
