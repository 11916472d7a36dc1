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
//
// The rows the cache holds are bounded, whatever the list's length: a chunk more than KEEP
// rows away from the visible range is released (its list leaves the cache, and its issues
// with it), and read again, page by page from the same cursor, when it comes back into view,
// as AG Grid's infinite row model does with `maxBlocksInCache`. A released chunk keeps its
// length and its far cursor, so the rows after it keep their indices and its second reading
// can be checked against its first: a list changed in between is read again from the top.
// Holding every row read left 82 MB live after a scroll through 10,000 issues, and V8's full
// collections of that heap paused the page for 20 to 40 ms, now and then inside a frame's work
// (a long task); releasing leaves 56 MB (Apollo's memoised reads of released rows stay until
// newer reads push them out, api.ts) and no long task.
import { startTransition, useEffect, useMemo, useState } from "react";
import { ApolloError } from "@apollo/client";
import type { ObservableQuery, OperationVariables } from "@apollo/client";
import { CHUNK, chunkList, client, errorMessage } from "./api";
import { ISSUES, ROWS_READ, VIEW_ISSUES } from "./queries";
import type { Connection, Issue } from "./queries";
import { listSize, pageVariables, PAGE, variablesOf } from "./source";
import type { Source } from "./source";

/** The pause before a page that failed is asked for again, and its bound (see `failed`). */
const RETRY_MS = 500;
const RETRY_MAX_MS = 30_000;

/** Pages per chunk (see the module comment). */
const CHUNK_PAGES = 5;

/** How many rows on each side of the visible range the grid keeps: a chunk wholly farther
 * away is released (see the module comment). Ten screens or so, so that scrolling back a
 * little never waits on the server. */
const KEEP = CHUNK_PAGES * PAGE;

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
  /** Asks for the pages holding rows `start..=end` (the visible range), and releases the
   * chunks far from it. */
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
  /** Each end's chunks, in the order of their numbers (see `Span`). */
  spans: { head: Span[]; tail: Span[] };
}

function connectionOf(data: Data | undefined): Connection | undefined {
  return data?.project?.issues ?? data?.project?.view?.issues ?? undefined;
}

/** What a chunk held when it was released: kept while it is released and read again. */
interface Held {
  /** Its rows, the user's own additions and deletions included. */
  length: number;
  /** The issue at its far side (the last row of a head chunk, the first of a tail chunk):
   * where the next chunk begins, and so where its second reading must end. */
  farId: string | null;
}

/** What the grid holds of one chunk, for edits to place a new issue: how many rows it spans,
 * and whether its list in the cache holds them all (false while it is released or being
 * read again). */
export interface Span {
  length: number;
  whole: boolean;
}

/** One chunk: a list in the cache, watched, or a released one's place. */
interface Chunk {
  /** The chunk's watch, or null while it is released. */
  watch: { query: ObservableQuery<Data>; subscription: { unsubscribe(): void } } | null;
  /** The variables of the chunk's first page. */
  variables: OperationVariables;
  connection: Connection | undefined;
  error: ApolloError | undefined;
  /** Pages asked for in this chunk (its first included). */
  pages: number;
  /** Whether the chunk waits for its first page from the server before it shows what the
   * cache holds (every chunk does: its list may hold what is being replaced). */
  awaiting: boolean;
  /** What the chunk held, while it is released or being read again (null otherwise). */
  held: Held | null;
}

type End = "head" | "tail";

/** How many rows a chunk spans: what it holds, or held before it was released. */
function lengthOf(chunk: Chunk): number {
  return chunk.held ? chunk.held.length : (chunk.connection?.edges.length ?? 0);
}

/** Row `i` of a chunk's span. A chunk read again holds a part of its span: the start of it
 * in the head, the end of it in the tail (whose pages are read backward). */
function rowIn(chunk: Chunk, end: End, i: number): Issue | undefined {
  const edges = chunk.connection?.edges ?? [];
  const j = chunk.held && end === "tail" ? i - (chunk.held.length - edges.length) : i;
  return j >= 0 && j < edges.length ? edges[j].node : undefined;
}

/** The page size that reads `rows` more of a chunk: a page, or what is left of it. */
function sized(end: End, rows: number): OperationVariables {
  const size = Math.max(1, Math.min(PAGE, rows));
  return end === "head" ? { first: size } : { last: size };
}

/** The id of the issue at a chunk's far side (see `Held`). */
function farIdOf(end: End, edges: Connection["edges"]): string | null {
  const edge = end === "head" ? edges[edges.length - 1] : edges[0];
  return edge?.node.id ?? null;
}

/** Whether a chunk's list in the cache holds its whole span. */
function isWhole(chunk: Chunk): boolean {
  return chunk.watch !== null && chunk.held === null && chunk.connection !== undefined && !chunk.awaiting;
}

/** The rows of one source (an order and filter, or a view): both ends' chunks, what is in
 * flight, and the listeners to tell when a chunk changes. */
export class RowWindow {
  private chunks: Record<End, Chunk[]> = { head: [], tail: [] };
  private inFlight = new Set<string>();
  private failure: string | null = null;
  private listeners = new Set<() => void>();

  private stopResetListener: () => void;
  /** Counts restarts and the disposal: an answer to a request of an earlier generation is
   * dropped, not written, so a late page of a list read anew (or no longer shown) cannot
   * overwrite the new one in the cache. */
  private generation = 0;
  /** Whether a collection of the cache is due (see `forget`). */
  private collecting = false;
  /** The row count last shown, and what a list read anew keeps showing until it knows its
   * size (`floor`): the grid neither shrinks nor loses its scroll position meanwhile. */
  private shownCount = 0;
  private floor = 0;
  /** The visible range last asked for, and the one whose page last failed: a failed page is
   * asked for again at once when the reader scrolls elsewhere, and otherwise after a pause
   * that doubles with each failure (RETRY_MS up to RETRY_MAX_MS), not at every change of the
   * rows (a tight loop against a server that keeps failing). */
  private range = "";
  private failedRange = "";
  private retryAt = 0;
  private retryMs = RETRY_MS;
  private disposed = false;

  constructor(private readonly variables: OperationVariables, private readonly isView: boolean) {
    this.open("head", 0, null);
    // Signing in resets the cache: read the list again from its first page.
    this.stopResetListener = client.onResetStore(async () => this.restart());
  }

  /** Drops every chunk and reads the list again from its first page (an error ends a
   * watched query's subscription, so a list that failed is read anew, not refetched). */
  restart() {
    // A window no longer shown stays stopped (a caller may hold its rows past the disposal).
    if (this.disposed) return;
    this.generation += 1;
    this.unwatchAll();
    // The lists read so far leave the cache: a page of the new reading merges into its
    // chunk's list by cursor, and must not find the old reading's rows there.
    this.forget([...this.chunks.head, ...this.chunks.tail]);
    this.chunks = { head: [], tail: [] };
    this.inFlight.clear();
    this.failure = null;
    this.failedRange = "";
    this.floor = this.shownCount;
    this.open("head", 0, null);
    this.changed();
  }

  private unwatchAll() {
    for (const chunk of [...this.chunks.head, ...this.chunks.tail]) chunk.watch?.subscription.unsubscribe();
  }

  /** Starts chunk `index` of `end`, after (or before) `cursor`: a new one, or a released one
   * read again (`held`). Its first page is always asked of the server: a window's lists
   * leave the cache when it restarts or is disposed, and a chunk's when it is released. */
  private open(end: End, index: number, cursor: string | null, held: Held | null = null) {
    const variables: OperationVariables = {
      ...pageVariables(this.variables, end, cursor),
      ...(held ? sized(end, held.length) : {}),
      [CHUNK]: index,
    };
    // The chunk is watched in the cache only, through the reading document; its pages are
    // asked for with the request document (see `ROWS_READ`).
    const query = client.watchQuery<Data>({
      query: this.isView ? ROWS_READ.viewIssues : ROWS_READ.issues,
      variables,
      fetchPolicy: "cache-only",
    });
    const chunk: Chunk = { watch: null, variables, connection: undefined, error: undefined, pages: 1, awaiting: true, held };
    this.chunks[end][index] = chunk;
    chunk.watch = {
      query,
      subscription: query.subscribe({
        next: () => {
          if (!chunk.awaiting) this.show(chunk);
        },
      }),
    };
    this.request(
      variables,
      () => {
        chunk.awaiting = false;
        chunk.error = undefined;
        this.show(chunk);
        if (chunk.held) this.readOn(end, chunk);
      },
      (error) => {
        chunk.awaiting = false;
        if (chunk.held) {
          // A released chunk read again stays released: scrolling to it asks again.
          this.release(end, chunk);
          this.failed(errorMessage(error));
        } else {
          chunk.error = error;
        }
        this.changed();
      },
    );
  }

  /** Takes what the cache holds for a chunk now (its watch tells of a change only after
   * the task that wrote it). */
  private show(chunk: Chunk) {
    if (!chunk.watch) return;
    chunk.connection = connectionOf(chunk.watch.query.getCurrentResult().data) ?? chunk.connection;
    this.changed();
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
        this.retryMs = RETRY_MS;
        client.cache.writeQuery({ query, variables, data: result.data });
        done();
      })
      .catch((error: unknown) => {
        if (generation !== this.generation) return;
        failed(error instanceof ApolloError ? error : new ApolloError({ networkError: error as Error }));
      });
  }

  /** The variables of the page after (head) or before (tail) what `chunk` holds, or null
   * when there is none. */
  private nextPage(end: End, chunk: Chunk): OperationVariables | null {
    const connection = chunk.connection;
    if (!connection) return null;
    const more = end === "head" ? connection.pageInfo.hasNextPage : connection.pageInfo.hasPreviousPage;
    const cursor = end === "head" ? connection.pageInfo.endCursor : connection.pageInfo.startCursor;
    if (!more || !cursor) return null;
    return { ...chunk.variables, ...(end === "head" ? { after: cursor } : { before: cursor }) };
  }

  /** Reads a released chunk's next page, until it holds as many rows as it did (pages of
   * what is left, so that the user's own additions and deletions count); then checks that it
   * ends at the issue it ended at, or the list changed in between and is read anew. */
  private readOn(end: End, chunk: Chunk) {
    const held = chunk.held;
    if (!held || this.chunks[end].indexOf(chunk) < 0) return;
    const edges = chunk.connection?.edges ?? [];
    const next = this.nextPage(end, chunk);
    if (edges.length < held.length && next) {
      chunk.pages += 1;
      this.request(
        { ...next, ...sized(end, held.length - edges.length) },
        () => {
          this.show(chunk);
          this.readOn(end, chunk);
        },
        (error) => {
          // Released again: scrolling to it reads it again.
          this.failed(errorMessage(error));
          this.release(end, chunk);
        },
      );
      return;
    }
    if (edges.length === held.length && farIdOf(end, edges) === held.farId) {
      chunk.held = null;
      if (this.failure) this.failure = null;
      this.changed();
      return;
    }
    this.readAnew();
  }

  /** The list changed while it was read (a chunk read again, or the head and tail where they
   * meet, hold other issues than before): it is read again from the top, and the page says
   * why. */
  private readAnew() {
    this.restart();
    this.failure = "The list changed while it was read: it is read again from the top.";
    this.changed();
  }

  /** Releases a chunk: its watch stops, and its list leaves the cache (its issues follow at
   * the next collection). Its length and far cursor stay, to read it again. */
  private release(end: End, chunk: Chunk) {
    chunk.watch?.subscription.unsubscribe();
    chunk.watch = null;
    chunk.held ??= { length: lengthOf(chunk), farId: farIdOf(end, chunk.connection?.edges ?? []) };
    chunk.connection = undefined;
    chunk.pages = 0;
    this.forget([chunk]);
    this.changed();
  }

  /** Drops a chunk's list from the cache, and collects the issues no list holds any more
   * once the browser is idle: a collection walks the whole cache, a few milliseconds. */
  private forget(chunks: Chunk[]) {
    const lists = chunks.map((chunk) => chunkList(chunk.variables));
    // A window's lists all belong to one project or view.
    const id = lists[0]?.id;
    const names = new Set(lists.map((list) => list.name));
    if (id) {
      client.cache.modify({
        id,
        fields: { issues: (stored, { storeFieldName, DELETE }) => (names.has(storeFieldName) ? DELETE : stored) },
      });
    }
    if (this.collecting) return;
    this.collecting = true;
    const collect = () => {
      this.collecting = false;
      client.cache.gc();
    };
    if (typeof requestIdleCallback === "function") requestIdleCallback(collect, { timeout: 1000 });
    else setTimeout(collect, 0);
  }

  /** Releases the chunks wholly more than KEEP rows away from rows `start..=end`. The first
   * chunk of the head and the last of each end (where the list grows) are kept, and so is a
   * chunk with a page on its way. */
  private releaseFar(start: number, end: number, tailStart: number) {
    const far = (from: number, length: number) => from + length < start - KEEP || from > end + KEEP;
    let from = 0;
    this.chunks.head.forEach((chunk, k) => {
      const length = lengthOf(chunk);
      if (k > 0 && k < this.chunks.head.length - 1 && this.releasable(chunk) && far(from, length)) this.release("head", chunk);
      from += length;
    });
    if (!Number.isFinite(tailStart)) return;
    let to = tailStart + this.chunks.tail.reduce((n, chunk) => n + lengthOf(chunk), 0);
    this.chunks.tail.forEach((chunk, k) => {
      const length = lengthOf(chunk);
      to -= length;
      if (k < this.chunks.tail.length - 1 && this.releasable(chunk) && far(to, length)) this.release("tail", chunk);
    });
  }

  /** Whether a chunk is whole and settled: watched, every page answered, none failed. */
  private releasable(chunk: Chunk): boolean {
    return isWhole(chunk) && chunk.error === undefined;
  }

  /** The chunk spanning row `index`, if any (the head's, then the tail's). */
  private locate(index: number, tailStart: number): { end: End; index: number; chunk: Chunk } | null {
    let from = 0;
    for (const [k, chunk] of this.chunks.head.entries()) {
      from += lengthOf(chunk);
      if (index < from) return { end: "head", index: k, chunk };
    }
    if (index < tailStart) return null;
    let at = tailStart;
    for (let k = this.chunks.tail.length - 1; k >= 0; k--) {
      const chunk = this.chunks.tail[k];
      at += lengthOf(chunk);
      if (index < at) return { end: "tail", index: k, chunk };
    }
    return null;
  }

  /** Reads a released chunk again, from the cursor it started at. */
  private reread(end: End, index: number, chunk: Chunk) {
    const cursor = (end === "head" ? chunk.variables.after : chunk.variables.before) as string | null;
    this.open(end, index, cursor ?? null, chunk.held);
  }

  /** A page could not be read: the message says why, and the visible range is not asked for
   * again until it changes. */
  private failed(message: string) {
    this.failure = message;
    this.failedRange = this.range;
    this.retryAt = Date.now() + this.retryMs;
    const generation = this.generation;
    // The grid asks for its visible rows again when they change: tell it once the pause ends.
    setTimeout(() => {
      if (generation === this.generation) this.changed();
    }, this.retryMs);
    this.retryMs = Math.min(2 * this.retryMs, RETRY_MAX_MS);
  }

  private changed() {
    this.snapshot = null;
    for (const listener of this.listeners) listener();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops every watch and drops the lists from the cache: a grid shown again reads them
   * again, and a grid's memory does not outlive it. */
  dispose() {
    this.disposed = true;
    this.generation += 1;
    this.unwatchAll();
    this.forget([...this.chunks.head, ...this.chunks.tail]);
    this.listeners.clear();
    this.stopResetListener();
  }

  private snapshot: Rows | null = null;

  /** The rows as they stand; a new object after each change, the same one until then. */
  rows(): Rows {
    if (this.snapshot) return this.snapshot;
    const head = [...this.chunks.head];
    const tail = [...this.chunks.tail];
    const first = head[0]?.connection;
    const lastHead = head[head.length - 1]?.connection;
    const headLength = head.reduce((n, chunk) => n + lengthOf(chunk), 0);
    const tailLength = tail.reduce((n, chunk) => n + lengthOf(chunk), 0);
    const headHasMore = lastHead ? lastHead.pageInfo.hasNextPage : true;
    const count = first?.totalCount ?? tail[0]?.connection?.totalCount ?? null;
    const size = lastHead ? listSize(headLength, headHasMore, count) : { total: count, rowCount: count ?? 0 };
    const { total } = size;
    if (total != null) this.floor = 0;
    const rowCount = Math.max(size.rowCount, this.floor);
    this.shownCount = rowCount;
    const tailStart = total != null ? Math.max(0, total - tailLength) : Number.POSITIVE_INFINITY;
    // The tail's chunks run backward from the end: the last chunk read holds the earliest rows.
    const tailInOrder = [...tail].reverse();
    const pick = (chunks: Chunk[], end: End, index: number): Issue | undefined => {
      let i = index;
      for (const chunk of chunks) {
        const length = lengthOf(chunk);
        if (i < length) return rowIn(chunk, end, i);
        i -= length;
      }
      return undefined;
    };
    const rowAt = (index: number): Issue | undefined => {
      if (index < headLength) return pick(head, "head", index);
      if (index >= tailStart) return pick(tailInOrder, "tail", index - tailStart);
      return undefined;
    };
    const want = (start: number, end: number) => {
      if (!first) return; // The first page is on its way.
      this.range = `${start}:${end}`;
      if (this.range === this.failedRange && Date.now() < this.retryAt) return;
      let beyond = false;
      for (let i = start; i <= end && i < rowCount; i++) {
        if (rowAt(i) !== undefined) continue;
        const place = this.locate(i, tailStart);
        if (!place) beyond = true;
        else if (!place.chunk.watch) this.reread(place.end, place.index, place.chunk);
      }
      if (beyond) {
        const headDone = !headHasMore || headLength >= tailStart;
        // Read from the end when the visible rows are nearer its frontier than the top's.
        if (total != null && !headDone && tailStart - end < start - headLength) this.grow("tail");
        else if (!headDone) this.grow("head");
      }
      this.releaseFar(start, end, tailStart);
    };
    // Where the head and the tail overlap they must hold the same issues: a list changed by
    // others between reading the top and the end would otherwise show a row twice or lose one
    // at the seam. Then the list is read again from the top.
    if (total != null && headLength > tailStart && tailLength > 0) {
      for (let i = tailStart; i < Math.min(headLength, total); i++) {
        const top = pick(head, "head", i);
        const bottom = pick(tailInOrder, "tail", i - tailStart);
        if (top && bottom && top.id !== bottom.id) {
          queueMicrotask(() => this.readAnew());
          break;
        }
      }
    }
    const errorChunk = [...head, ...tail].find((c) => c.error);
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
      spans: {
        head: head.map((chunk) => ({ length: lengthOf(chunk), whole: isWhole(chunk) })),
        tail: tail.map((chunk) => ({ length: lengthOf(chunk), whole: isWhole(chunk) })),
      },
    };
    return this.snapshot;
  }

  /** Asks for the next page at `end`: in its last chunk, or in a new chunk when that is full. */
  private grow(end: End) {
    const chunks = this.chunks[end];
    const last = chunks[chunks.length - 1];
    if (!last) {
      this.open(end, 0, null);
      return;
    }
    const variables = this.nextPage(end, last);
    if (!variables) return; // Its first page is on its way, or the list ends there.
    const key = `${end}:${(end === "head" ? variables.after : variables.before) as string}`;
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    if (last.pages >= CHUNK_PAGES) {
      this.open(end, chunks.length, (end === "head" ? variables.after : variables.before) as string);
      return;
    }
    last.pages += 1;
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
        this.failed(errorMessage(error));
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
