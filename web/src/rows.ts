// The grid's rows: a sparse window over a keyset-paged list of issues. Pages of PAGE rows are
// read forward from the top (`first`/`after`, the "head") and, once the reader jumps towards
// the end, backward from the end (`last`/`before`, the "tail"); row i is the head's i-th, or
// the tail's (i - (total - tail length))-th. Each page is asked for once: a page in flight is
// not asked for again, and the reader's visible range decides which end grows. With no
// `totalCount` (a filter the counters cannot answer), the grid shows what it has read plus
// one page and grows as it reads; only then is there no tail, since a row's index from the
// end is unknown, and the count becomes known once the list has been read to its end.
//
// Each end is a series of chunks of CHUNK_PAGES pages. A chunk is one list in Apollo's cache,
// grown page by page and merged by `relayStylePagination`, and watched by one cache-only
// `ObservableQuery` over the reading document (`ROWS_READ` in queries.ts says why it is not
// the request's own); the next chunk starts after the previous one's end cursor. Watching one
// list of the whole grid would read all of it again on every page (the cache re-reads a list
// when it changes): tens of milliseconds per page at 10,000 rows, long tasks while scrolling.
// A chunk re-reads at most CHUNK_PAGES × PAGE rows, and the chunks that did not change are
// not read at all (the cache keys each chunk apart; see `CHUNK` in api.ts).
import { startTransition, useEffect, useMemo, useState } from "react";
import { ApolloError } from "@apollo/client";
import type { ObservableQuery, OperationVariables } from "@apollo/client";
import { CHUNK, client, errorMessage } from "./api";
import { ISSUES, ROWS_READ, VIEW_ISSUES } from "./queries";
import type { Connection, Edge, Issue } from "./queries";
import { listSize, pageVariables, variablesOf } from "./source";
import type { Source } from "./source";

/** Pages per chunk (see the module comment). */
const CHUNK_PAGES = 10;

interface Data {
  project: {
    issues?: Connection;
    view?: { status: string; progress: { scanned: number; total: number } | null; issues: Connection } | null;
  } | null;
}

export interface Rows {
  /** The number of issues, when the server can count them (or the list was read to its end). */
  total: number | null;
  /** How many rows the grid shows (the total, or what was read plus a page). */
  rowCount: number;
  /** The issue at row `index` (from 0), or undefined while its page has not been read. */
  rowAt(index: number): Issue | undefined;
  /** Asks for the pages holding rows `start..=end` (the visible range). */
  want(start: number, end: number): void;
  /** How many rows have been read (a lower bound on the total when it is unknown). */
  loaded: number;
  loading: boolean;
  /** Why the list could not be read (its first page failed). */
  error: ApolloError | undefined;
  /** Why a later page could not be read; scrolling to it asks again. */
  failure: string | null;
  /** Reads the list again from its first page (after a view finished building). */
  retry: () => void;
}

function connectionOf(data: Data | undefined): Connection | undefined {
  return data?.project?.issues ?? data?.project?.view?.issues ?? undefined;
}

/** One chunk: a list in the cache, watched. */
interface Chunk {
  query: ObservableQuery<Data>;
  /** The variables of the chunk's first page. */
  variables: OperationVariables;
  connection: Connection | undefined;
  error: ApolloError | undefined;
  /** Pages asked for in this chunk (its first included). */
  pages: number;
  /** Whether the chunk waits for its first page from the server before it shows what the
   * cache holds (a list read anew: what the cache holds is what is being replaced). */
  awaiting: boolean;
}

type End = "head" | "tail";

/** The rows of one source (an order and filter, or a view): both ends' chunks, what is in
 * flight, and the listeners to tell when a chunk changes. */
class RowWindow {
  private chunks: Record<End, Chunk[]> = { head: [], tail: [] };
  private inFlight = new Set<string>();
  private failure: string | null = null;
  private listeners = new Set<() => void>();
  private subscriptions: { unsubscribe(): void }[] = [];

  private stopResetListener: () => void;
  /** Counts restarts and the disposal: an answer to a request of an earlier generation is
   * dropped, not written, so a late page of a list read anew (or no longer shown) cannot
   * overwrite the new one in the cache. */
  private generation = 0;

  constructor(private readonly variables: OperationVariables, private readonly isView: boolean) {
    this.open("head", null);
    // Signing in resets the cache: read the list again from its first page.
    this.stopResetListener = client.onResetStore(async () => this.restart());
  }

  /** Drops every chunk and reads the list again from its first page (an error ends a
   * watched query's subscription, so a list that failed is read anew, not refetched). */
  restart() {
    this.generation += 1;
    for (const s of this.subscriptions) s.unsubscribe();
    this.subscriptions = [];
    this.chunks = { head: [], tail: [] };
    this.inFlight.clear();
    this.failure = null;
    this.open("head", null, true);
    this.changed();
  }

  /** Starts chunk number `chunks[end].length` of `end`, after (or before) `cursor`; `fresh`
   * asks the server even when the cache has an answer (a restart: what the cache holds, a
   * view nulled by VIEW_BUILDING say, is what is being replaced). */
  private open(end: End, cursor: string | null, fresh = false) {
    const index = this.chunks[end].length;
    const variables: OperationVariables = { ...pageVariables(this.variables, end, cursor), [CHUNK]: index };
    // The chunk is watched in the cache only, through the reading document; its pages are
    // asked for with the request document (see `ROWS_READ`).
    const query = client.watchQuery<Data>({
      query: this.isView ? ROWS_READ.viewIssues : ROWS_READ.issues,
      variables,
      fetchPolicy: "cache-only",
    });
    const chunk: Chunk = { query, variables, connection: undefined, error: undefined, pages: 1, awaiting: fresh };
    this.chunks[end].push(chunk);
    const show = () => {
      chunk.connection = connectionOf(query.getCurrentResult().data) ?? chunk.connection;
      this.changed();
    };
    this.subscriptions.push(
      query.subscribe({
        next: () => {
          if (!chunk.awaiting) show();
        },
      }),
    );
    // What the cache holds answers the chunk, unless the list is being read anew.
    const held = query.getCurrentResult();
    if (!fresh && held.data && !held.partial && connectionOf(held.data)) return;
    this.request(
      variables,
      () => {
        chunk.awaiting = false;
        chunk.error = undefined;
        show();
      },
      (error) => {
        chunk.awaiting = false;
        chunk.error = error;
        this.changed();
      },
    );
  }

  /** Sends one page's request with the request document and writes the answer to the cache,
   * where the chunk's watch reads it; then `done`, or `failed` with why the page could not be
   * read. The request itself neither reads nor writes the cache (`no-cache`), and Apollo
   * forgets it once answered. */
  private request(variables: OperationVariables, done: () => void, failed: (error: ApolloError) => void): void {
    const generation = this.generation;
    const query = this.isView ? VIEW_ISSUES : ISSUES;
    // A GraphQL error rejects (the default error policy), as a failed request does.
    client
      .query<Data>({ query, variables, fetchPolicy: "no-cache" })
      .then((result) => {
        if (generation !== this.generation) return;
        client.cache.writeQuery({ query, variables, data: result.data });
        done();
      })
      .catch((error: unknown) => {
        if (generation !== this.generation) return;
        failed(error instanceof ApolloError ? error : new ApolloError({ networkError: error as Error }));
      });
  }

  private changed() {
    this.snapshot = null;
    for (const listener of this.listeners) listener();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  dispose() {
    this.generation += 1;
    for (const s of this.subscriptions) s.unsubscribe();
    this.listeners.clear();
    this.stopResetListener();
  }

  private snapshot: Rows | null = null;

  /** The rows as they stand; a new object after each change, the same one until then. */
  rows(): Rows {
    if (this.snapshot) return this.snapshot;
    const head = this.chunks.head.map((c) => c.connection?.edges ?? []);
    const tail = this.chunks.tail.map((c) => c.connection?.edges ?? []);
    const first = this.chunks.head[0]?.connection;
    const lastHead = this.chunks.head[this.chunks.head.length - 1]?.connection;
    const headLength = head.reduce((n, edges) => n + edges.length, 0);
    const tailLength = tail.reduce((n, edges) => n + edges.length, 0);
    const headHasMore = lastHead ? lastHead.pageInfo.hasNextPage : true;
    const count = first?.totalCount ?? this.chunks.tail[0]?.connection?.totalCount ?? null;
    const { total, rowCount } = lastHead ? listSize(headLength, headHasMore, count) : { total: count, rowCount: count ?? 0 };
    const tailStart = total != null ? Math.max(0, total - tailLength) : Number.POSITIVE_INFINITY;
    const pick = (chunks: Edge[][], index: number): Issue | undefined => {
      let i = index;
      for (const edges of chunks) {
        if (i < edges.length) return edges[i].node;
        i -= edges.length;
      }
      return undefined;
    };
    // The tail's chunks run backward from the end: the last chunk read holds the earliest rows.
    const tailInOrder = [...tail].reverse();
    const rowAt = (index: number): Issue | undefined => {
      if (index < headLength) return pick(head, index);
      if (index >= tailStart) return pick(tailInOrder, index - tailStart);
      return undefined;
    };
    const want = (start: number, end: number) => {
      if (!first) return; // The first page is on its way.
      let missing = false;
      for (let i = start; i <= end && i < rowCount; i++) {
        if (rowAt(i) === undefined) {
          missing = true;
          break;
        }
      }
      if (!missing) return;
      const headDone = !headHasMore || headLength >= tailStart;
      // Read from the end when the visible rows are nearer its frontier than the top's.
      if (total != null && !headDone && tailStart - end < start - headLength) this.grow("tail");
      else if (!headDone) this.grow("head");
    };
    // Where the head and the tail overlap they must hold the same issues: a list changed by
    // others between reading the top and the end would otherwise show a row twice or lose one
    // at the seam. Then the list is read again from the top.
    if (total != null && headLength > tailStart && tailLength > 0) {
      for (let i = tailStart; i < Math.min(headLength, total); i++) {
        if (pick(head, i)?.id !== pick(tailInOrder, i - tailStart)?.id) {
          queueMicrotask(() => {
            this.restart();
            this.failure = "The list changed while it was read: it is read again from the top.";
            this.changed();
          });
          break;
        }
      }
    }
    const errorChunk = [...this.chunks.head, ...this.chunks.tail].find((c) => c.error);
    this.snapshot = {
      total,
      rowCount,
      rowAt,
      want,
      loaded: total != null ? Math.min(total, headLength + tailLength) : headLength,
      loading: first === undefined && errorChunk === undefined,
      error: errorChunk?.error,
      failure: this.failure,
      retry: () => this.restart(),
    };
    return this.snapshot;
  }

  /** Asks for the next page at `end`: in its last chunk, or in a new chunk when that is full. */
  private grow(end: End) {
    const chunks = this.chunks[end];
    const last = chunks[chunks.length - 1];
    if (!last) {
      this.open(end, null);
      return;
    }
    const connection = last.connection;
    if (!connection) return; // Its first page is on its way.
    const more = end === "head" ? connection.pageInfo.hasNextPage : connection.pageInfo.hasPreviousPage;
    const cursor = end === "head" ? connection.pageInfo.endCursor : connection.pageInfo.startCursor;
    if (!more || !cursor) return;
    const key = `${end}:${cursor}`;
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    if (last.pages >= CHUNK_PAGES) {
      this.open(end, cursor);
      return;
    }
    last.pages += 1;
    const variables: OperationVariables = { ...last.variables, ...(end === "head" ? { after: cursor } : { before: cursor }) };
    this.request(
      variables,
      () => {
        if (this.failure) {
          this.failure = null;
          this.changed();
        }
      },
      (error) => {
        // The page may be asked for again (by scrolling to it); the message says why it is missing.
        last.pages -= 1;
        this.inFlight.delete(key);
        this.failure = errorMessage(error);
        this.changed();
      },
    );
  }
}

/** Drops every list of a view from the cache: its order or filter changed, so its rows and
 * cursors belong to an index that is being replaced. */
export function forgetViewRows(viewId: string): void {
  client.cache.evict({ id: client.cache.identify({ __typename: "View", id: viewId }), fieldName: "issues" });
  client.cache.gc();
}

/** A window started before the page rendered (see `startReading`), for `useRows` to take. */
let early: { key: string; window: RowWindow } | null = null;

/** Starts reading `source`'s first page at once, before React renders the page: the request
 * then overlaps the first render instead of following it. Settles once the first page has
 * answered (or failed). */
export function startReading(source: Source): Promise<void> {
  const variables = variablesOf(source);
  const started = new RowWindow(variables, source.kind === "view");
  early = { key: JSON.stringify(variables), window: started };
  return new Promise((resolve) => {
    const check = () => {
      if (started.rows().loading) return;
      stop();
      resolve();
    };
    const stop = started.subscribe(check);
    check();
  });
}

/** The rows of `source`, re-rendered in a transition when a page arrives: React renders it in
 * slices between the browser's frames, so scrolling never waits on a long task. */
export function useRows(source: Source): Rows {
  const key = JSON.stringify(variablesOf(source));
  const rowWindow = useMemo(() => {
    if (early?.key === key) {
      const started = early.window;
      early = null;
      return started;
    }
    return new RowWindow(JSON.parse(key) as OperationVariables, source.kind === "view");
  }, [key, source.kind]);
  const [state, setState] = useState(() => ({ of: rowWindow, rows: rowWindow.rows() }));
  useEffect(() => {
    const update = () => setState({ of: rowWindow, rows: rowWindow.rows() });
    const unsubscribe = rowWindow.subscribe(() => startTransition(update));
    // A page that arrived before this subscription is rendered now.
    update();
    return () => {
      unsubscribe();
      rowWindow.dispose();
    };
  }, [rowWindow]);
  // Until a new source's first change is rendered, its rows are read from it directly.
  return state.of === rowWindow ? state.rows : rowWindow.rows();
}
