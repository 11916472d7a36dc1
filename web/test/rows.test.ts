// The grid's row window (src/rows.ts) and its edits (src/edits.ts) against a plain list served
// in place of the API (server.ts), with Apollo's real cache: rows scrolled through, released
// and read again are the list's, in order, each once; the user's own edits and other writers'
// changes are taken in without losing a row; a failing server is not asked in a loop.
import "./server";
import { test } from "node:test";
import assert from "node:assert/strict";
import { createIssue, deleteIssues } from "../src/edits";
import { RowWindow } from "../src/rows";
import type { Source } from "../src/source";
import { insertAt, seed, server } from "./server";

const SOURCE: Source = { kind: "project", projectId: "P1", orderBy: null, filter: null };
const VARIABLES = { id: "P1", orderBy: null, filter: null };

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

/** Waits until no page is in flight (a few ticks in a row). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    await tick();
    if (server.pending === 0) {
      await tick();
      await tick();
      if (server.pending === 0) return;
    }
  }
  throw new Error("pages stayed in flight");
}

/** Shows rows `start..=end` as the grid does (asking again after each change) until every one
 * of them is read; fails if they never are (within a few seconds). */
async function view(w: RowWindow, start: number, end: number): Promise<void> {
  const until = Date.now() + 5000;
  while (Date.now() < until) {
    const rows = w.rows();
    const last = Math.min(end, rows.rowCount - 1);
    rows.want(start, last);
    await settle();
    const now = w.rows();
    let missing = 0;
    for (let i = start; i <= Math.min(end, now.rowCount - 1); i++) if (!now.rowAt(i)) missing++;
    if (missing === 0 && server.pending === 0) return;
  }
  throw new Error(`rows ${start}..${end} were never read`);
}

/** Scrolls a screenful (60 rows) at a time from `from` to `to`, either way. */
async function scroll(w: RowWindow, from: number, to: number): Promise<void> {
  const step = from <= to ? 55 : -55;
  for (let s = from; step > 0 ? s <= to : s >= to; s += step) await view(w, Math.max(0, s), Math.max(0, s) + 60);
}

/** Every row the window holds is the list's row at that index, and none shows twice; the
 * row count is the list's length when the window knows it. */
function sameAsList(w: RowWindow, what: string): void {
  const rows = w.rows();
  if (rows.total != null) assert.equal(rows.rowCount, server.list.length, `${what}: row count`);
  const seen = new Set<string>();
  for (let i = 0; i < rows.rowCount; i++) {
    const issue = rows.rowAt(i);
    if (!issue) continue;
    assert.equal(issue.id, server.list[i].id, `${what}: row ${i}`);
    assert.ok(!seen.has(issue.id), `${what}: ${issue.name} shows twice`);
    seen.add(issue.id);
  }
}

/** A window over a fresh list of `issues`, its first page read. */
async function opened(issues: number): Promise<RowWindow> {
  seed(issues);
  const w = new RowWindow(VARIABLES, false);
  await settle();
  return w;
}

/** Counts the restarts (each reads the list's first page again). */
function firstPages(): number {
  return server.requests.filter((v) => v.first != null && v.after == null).length;
}

test("scrolling down and back up reads only the released chunk again", async () => {
  const w = await opened(2000);
  await scroll(w, 0, 1940);
  const down = server.requests.length;
  assert.equal(down, 20, "each page once on the way down");
  await scroll(w, 1940, 0);
  // Rows 500..999 were released at the bottom; the first and last chunks are always kept.
  assert.equal(server.requests.length - down, 5);
  sameAsList(w, "back at the top");
  w.dispose();
});

test("a tail chunk released and read again holds the list's rows while it fills", async () => {
  const w = await opened(2000);
  await scroll(w, 1940, 0);
  let wrong = 0;
  w.subscribe(() => {
    const rows = w.rows();
    for (let i = 0; i < rows.rowCount; i++) {
      const issue = rows.rowAt(i);
      if (issue && issue.id !== server.list[i].id) wrong++;
    }
  });
  await scroll(w, 0, 1940);
  assert.equal(wrong, 0);
  sameAsList(w, "down again");
  w.dispose();
});

test("an issue someone else adds to a released chunk reads the list anew, keeping its size", async () => {
  const w = await opened(3000);
  await scroll(w, 0, 2900);
  insertAt(700);
  const before = firstPages();
  await scroll(w, 2900, 600);
  assert.equal(firstPages() - before, 1, "one restart");
  sameAsList(w, "back in the changed chunk");
  w.dispose();
});

test("the user's own deletion and addition do not make a released chunk read anew", async () => {
  const w = await opened(3000);
  await scroll(w, 0, 800);
  const victim = w.rows().rowAt(700);
  assert.ok(victim);
  assert.equal(await deleteIssues(SOURCE, [victim.id], []), null);
  server.createAt = 600;
  const added = await createIssue(SOURCE, "mine", [], null, [], [], w.rows().spans);
  assert.deepEqual(added, { index: 600, error: null });
  await settle();
  sameAsList(w, "after the edits");
  const before = firstPages();
  await scroll(w, 800, 2900);
  await scroll(w, 2900, 500);
  assert.equal(firstPages(), before, "no restart");
  sameAsList(w, "back at the edited rows");
  w.dispose();
});

test("an issue added past a released chunk is placed by the chunks' lengths", async () => {
  const w = await opened(3000);
  await scroll(w, 0, 2940);
  // Rows 500..1999 are released; a new issue goes at the end in this order.
  const added = await createIssue(SOURCE, "last", [], null, [], [], w.rows().spans);
  assert.deepEqual(added, { index: 3000, error: null });
  await settle();
  sameAsList(w, "after adding at the end");
  w.dispose();
});

test("an issue added among rows being read again makes the list read anew, never twice", async () => {
  const w = await opened(3000);
  await scroll(w, 0, 2000);
  await scroll(w, 2000, 1050);
  server.delay = 30;
  w.rows().want(990, 1050); // rows 500..999 are read again, page by page
  await new Promise((resolve) => setTimeout(resolve, 75));
  server.createAt = 850;
  const added = await createIssue(SOURCE, "placed", [], null, [], [], w.rows().spans);
  assert.deepEqual(added, { index: null, error: null, reread: true });
  let twice = 0;
  w.subscribe(() => {
    const rows = w.rows();
    const ids = new Set<string>();
    for (let i = 0; i < rows.rowCount; i++) {
      const issue = rows.rowAt(i);
      if (!issue) continue;
      if (ids.has(issue.id)) twice++;
      ids.add(issue.id);
    }
  });
  w.restart();
  server.delay = 0;
  await view(w, 990, 1050);
  assert.equal(twice, 0);
  sameAsList(w, "read anew");
  w.dispose();
});

test("a restart keeps the row count, counted or not, until the list's size is known", async () => {
  for (const noCount of [false, true]) {
    seed(5000);
    server.noCount = noCount;
    const w = new RowWindow(VARIABLES, false);
    await settle();
    await scroll(w, 0, 3000);
    const shown = w.rows().rowCount;
    w.restart();
    assert.equal(w.rows().rowCount, shown, `noCount ${noCount}: while the first page is on its way`);
    await settle();
    assert.equal(w.rows().rowCount, noCount ? shown : 5000, `noCount ${noCount}: after it`);
    await view(w, 3000, 3060);
    sameAsList(w, `noCount ${noCount}: read anew`);
    w.dispose();
  }
});

test("a page that fails is asked for again when the reader scrolls or after a pause, not in a loop", async () => {
  const w = await opened(3000);
  await scroll(w, 0, 2000);
  // The grid asks for its visible rows again after every change of the rows.
  let range: [number, number] = [700, 760];
  const stop = w.subscribe(() => setTimeout(() => w.rows().want(range[0], range[1]), 0));
  server.failing = 1e9;
  for (const visible of [
    [700, 760],
    [2100, 2160],
  ] as [number, number][]) {
    range = visible;
    const before = server.requests.length;
    w.rows().want(...range);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(server.requests.length - before, 1, `rows ${range}: one request`);
    assert.match(w.rows().failure ?? "", /could not be reached/);
  }
  // The server answers again: the rows in view are read once the pause ends, and the rows
  // scrolled back to at once.
  stop();
  server.failing = 0;
  await view(w, 2100, 2160);
  await view(w, 700, 760);
  assert.equal(w.rows().failure, null);
  sameAsList(w, "once the server answers");
  w.dispose();
});
