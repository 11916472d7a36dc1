// A keyset-paged list of issues served in place of `/graphql` (the global `fetch`), for the
// row window's tests: pages forward (`first`/`after`) and backward (`last`/`before`) by a
// numeric sort key, creates and deletes, failures and delays on demand, and every page
// request recorded.
(globalThis as unknown as { window: unknown }).window = globalThis;
(globalThis as unknown as { sessionStorage: unknown }).sessionStorage = { getItem: () => null, setItem() {}, removeItem() {} };

export interface Row {
  id: string;
  key: number;
  num: number;
  name: string;
}

export const server = {
  list: [] as Row[],
  /** Page requests answered or in flight, by their variables. */
  requests: [] as Record<string, unknown>[],
  pending: 0,
  /** How many page requests to fail (HTTP 500) from now on. */
  failing: 0,
  /** Milliseconds before a page is answered. */
  delay: 0,
  /** Whether `totalCount` is null (a filter the server cannot count). */
  noCount: false,
  /** Where the next created issue goes in the list (the end when null). */
  createAt: null as number | null,
};

let nextId = 1;

/** A fresh list of `n` issues, keys 0, 10, 20, … */
export function seed(n: number): void {
  server.list = [];
  server.requests = [];
  server.failing = 0;
  server.delay = 0;
  server.noCount = false;
  server.createAt = null;
  for (let i = 0; i < n; i++) server.list.push(row(i * 10));
}

function row(key: number, name?: string): Row {
  const id = nextId++;
  return { id: `i${id}`, key, num: id, name: name ?? `n${id}` };
}

/** Someone else adds an issue at position `at`. */
export function insertAt(at: number, name?: string): Row {
  const before = server.list[at - 1]?.key ?? -10;
  const after = server.list[at]?.key ?? before + 20;
  const added = row((before + after) / 2, name);
  server.list.splice(at, 0, added);
  return added;
}

const cursor = (r: Row) => `k${r.key}`;
const keyOf = (c: string) => Number(c.slice(1));

function node(r: Row) {
  return { __typename: "Issue", id: r.id, num: r.num, name: r.name, state: "OPEN", version: 1, fieldValues: [] };
}

function page(v: Record<string, unknown>) {
  const list = server.list;
  let rows: Row[];
  let hasNextPage = false;
  let hasPreviousPage = false;
  if (v.last != null) {
    const upto = v.before ? list.filter((r) => r.key < keyOf(v.before as string)) : list;
    rows = upto.slice(Math.max(0, upto.length - (v.last as number)));
    hasPreviousPage = upto.length > rows.length;
    hasNextPage = v.before != null;
  } else {
    const from = v.after ? list.filter((r) => r.key > keyOf(v.after as string)) : list;
    rows = from.slice(0, v.first as number);
    hasNextPage = from.length > rows.length;
    hasPreviousPage = v.after != null;
  }
  const issues = {
    __typename: "IssueConnection",
    totalCount: server.noCount ? null : list.length,
    edges: rows.map((r) => ({ __typename: "IssueEdge", cursor: cursor(r), node: node(r) })),
    pageInfo: {
      __typename: "PageInfo",
      hasNextPage,
      hasPreviousPage,
      startCursor: rows.length ? cursor(rows[0]) : null,
      endCursor: rows.length ? cursor(rows[rows.length - 1]) : null,
    },
  };
  return { data: { project: { __typename: "Project", id: v.id, issues } } };
}

const json = (body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });

globalThis.fetch = (async (_url: unknown, init: { body: string }) => {
  const body = JSON.parse(init.body) as { operationName: string; variables: Record<string, unknown> & { input?: Record<string, string> } };
  if (body.operationName === "GridCreateIssue") {
    const at = server.createAt;
    const last = server.list[server.list.length - 1];
    const added = at != null ? insertAt(at, body.variables.input?.name) : row((last?.key ?? 0) + 10, body.variables.input?.name);
    if (at == null) server.list.push(added);
    // The default order is by num: the new issue's num is its place.
    if (at != null) added.num = (server.list[at - 1]?.num ?? 0) + 0.5;
    return json({ data: { createIssue: { __typename: "CreateIssuePayload", issue: node(added) } } });
  }
  if (body.operationName === "GridDeleteIssue") {
    const id = body.variables.input?.id;
    server.list = server.list.filter((r) => r.id !== id);
    return json({ data: { deleteIssue: { __typename: "DeleteIssuePayload", deletedId: id } } });
  }
  server.pending++;
  server.requests.push(body.variables);
  await new Promise((resolve) => setTimeout(resolve, server.delay));
  server.pending--;
  if (server.failing > 0) {
    server.failing--;
    return new Response("failing on purpose", { status: 500 });
  }
  return json(page(body.variables));
}) as typeof fetch;
