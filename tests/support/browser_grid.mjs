// Drives gridgate's web grid (`/p/<projectId>`) in Debian's headless Chromium with
// playwright-core, with every non-loopback request blocked, and reports what a user would
// see. Used by tests/api/grid.rs, which judges what this reports against the API, and by
// benches/grid_browser.sh, which reports the page's timings.
//
//   node browser_grid.mjs <spec.json>
//
// The spec names the server (`baseUrl`), the npm prefix holding playwright-core
// (`playwright`), the browser (`chromium`), the time limit of each step (`stepTimeoutMs`) and
// the `scenario` with its parameters:
//
//   scroll   { urls: [path…], upwards?: [bool…], back?: [bool…] }: opens each grid and
//            scrolls it from top to bottom (or jumps to its end and scrolls up to its top),
//            collecting every row's aria-rowindex, num and name; also the GraphQL page
//            requests sent, the long tasks seen while scrolling, and when the first 50 rows
//            were on screen. With `back`, it then scrolls back up to the top, collecting the
//            rows again (`back.rows`, and the requests of both ways in `back.operations`).
//   load     { urls: [path…] }: opens each grid in a fresh page; when were 50 rows on screen.
//   firstPaint { urls: [path…], rows? }: opens each grid with the page's script withheld (the
//            first paint alone) and whole; the markup of each and the requests sent.
//   edit     { path, steps: [{column, kind, value}] }: edits cells of the first row by
//            keyboard, then reloads and reads the row; an "invalid" step reports the message.
//   conflict { path, column, first, second }: two browser contexts edit the same cell; the
//            second answers the conflict dialog with "Overwrite with mine".
//   views    { viewPath, allPath, sortColumn, addColumn, viewName, screenshot? }: jumps to
//            the end of the list, reads a view's tab, headers and count (and saves a picture
//            of it), then Shift-click sorts by two columns and saves the view.
//   export   { path }: clicks "Download CSV" and reports the file.
//   manage   { path, issueName, columnName, renamed }: adds and deletes an issue, adds,
//            renames, moves and deletes a column.
//   signin   { path, token }: answers the sign-in dialog of `--auth jwt`.
//   filter   { path, conditions: [{column, op, value}] }: builds a filter in the bar.
//   filterGroups { path, clauses: [{column, op, value?} | {or: [{column, op, value?}…]}] }:
//            builds a filter of conditions and OR groups in the bar, reads every row it
//            shows, its count and the bar read back from the address.
//   conflictTheirs { path, column, first, second }: as conflict, but the second user answers
//            "Keep theirs".
//   addAtEnd { path, issueName }: jumps to the end of the list and adds an issue there.
//   viewTabs { path, rename, renamed, remove }: renames a view and deletes one from their
//            tabs' menus.
//   signinAgain { path, token, badToken, sortColumn }: signs in, then with a refused token
//            in storage sorts (an action) and reloads, signing in again each time.
//
// It prints one JSON object: { "result": …, "consoleErrors", "pageErrors", "violations",
// "blocked", "failure" }. Every wait is on a condition, bounded by the step time limit.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { CHROMIUM_ARGS, isLoopback } from './browser_common.mjs';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(path.join(spec.playwright, 'node_modules', 'noop.js'));
const { chromium } = require('playwright-core');


const report = { result: null, consoleErrors: [], pageErrors: [], violations: [], blocked: [], failure: null };

const browser = await chromium.launch({
  executablePath: spec.chromium,
  headless: true,
  args: CHROMIUM_ARGS,
});

/** A fresh browser context (its own storage, as a second user has). */
async function newContext(viewport = { width: 1280, height: 900 }) {
  const context = await browser.newContext({ viewport, acceptDownloads: true, baseURL: spec.baseUrl });
  context.setDefaultTimeout(spec.stepTimeoutMs);
  context.setDefaultNavigationTimeout(spec.stepTimeoutMs);
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (isLoopback(url)) return route.continue();
    report.blocked.push(url);
    return route.abort('blockedbyclient');
  });
  await context.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
    window.__longTasks = [];
    try {
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
      }).observe({ type: 'longtask', buffered: true });
    } catch {
      // No long-task timing in this browser: nothing is reported.
    }
    // The moment the first 50 rows are on screen with their data (row 51 counts the header).
    new MutationObserver((_, observer) => {
      if (window.__firstRows === undefined && document.querySelector('[role="row"][aria-rowindex="51"]:not([aria-busy])')) {
        window.__firstRows = performance.now();
        observer.disconnect();
      }
    }).observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ['aria-busy'] });
  });
  return context;
}

async function newPage(context) {
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') report.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => report.pageErrors.push(String(error)));
  return page;
}

/** Counts the GraphQL requests a page sends, by operation name. */
function countOperations(page) {
  const counts = {};
  page.on('request', (request) => {
    if (!request.url().endsWith('/graphql') || request.method() !== 'POST') return;
    try {
      const body = JSON.parse(request.postData() ?? '{}');
      // Pages read backward from the end (`last`) are counted apart.
      const name = `${body.operationName ?? '(anonymous)'}${body.variables?.last != null ? ':last' : ''}`;
      counts[name] = (counts[name] ?? 0) + 1;
    } catch {
      counts['(unreadable)'] = (counts['(unreadable)'] ?? 0) + 1;
    }
  });
  return counts;
}

const ROWS = '[role="grid"] [role="row"]';
/** The page's own grid, not the first paint's (which answers nothing; see web/src/first.ts). */
const GRID = '.grid-page:not([data-first-paint]) [role="grid"]';

async function openGrid(page, url) {
  await page.goto(url);
  await page.waitForSelector(GRID);
  await settled(page);
}

/** Waits until no rendered row is waiting for its page. */
async function settled(page) {
  await page.waitForFunction(() => document.querySelector('[role="grid"] [role="row"][aria-busy="true"]') === null);
}

/** Waits until the virtualizer has rendered the rows at the grid's scroll position (it
 * re-renders on the scroll event, a frame after the scroll). */
async function rendered(page) {
  await page.waitForFunction(() => {
    const grid = document.querySelector('[role="grid"]');
    const header = grid.querySelector('[role="row"][aria-rowindex="1"]');
    const height = 32;
    const headerHeight = header?.offsetHeight ?? 0;
    // The rows the grid holds now, read ones or not (aria-rowcount is -1 while unknown).
    const rows = Math.round((grid.scrollHeight - headerHeight) / height);
    const top = Math.min(Math.floor(grid.scrollTop / height), rows - 1);
    const bottom = Math.min(Math.floor((grid.scrollTop + grid.clientHeight - headerHeight) / height), rows - 1);
    const has = (i) => grid.querySelector(`[role="row"][aria-rowindex="${i + 2}"]`) !== null;
    return has(top) && (bottom < top || has(bottom));
  });
}

async function visibleRows(page) {
  return page.$$eval(`${ROWS}[aria-rowindex]`, (rows) =>
    rows
      .filter((row) => row.getAttribute('aria-rowindex') !== '1' && !row.hasAttribute('aria-busy'))
      .map((row) => ({
        index: Number(row.getAttribute('aria-rowindex')),
        num: Number(row.querySelector('[data-column="num"]')?.textContent ?? 'NaN'),
        name: row.querySelector('[data-column="name"]')?.textContent ?? '',
      })),
  );
}

/** Scrolls the grid from top to bottom a screenful at a time, collecting every row once. */
async function scrollAll(page) {
  const seen = new Map();
  const duplicates = [];
  await page.evaluate(() => {
    window.__longTasks = [];
  });
  for (let step = 0; ; step++) {
    await settled(page);
    for (const row of await visibleRows(page)) {
      const before = seen.get(row.index);
      if (before && (before.num !== row.num || before.name !== row.name)) duplicates.push({ before, row });
      seen.set(row.index, row);
    }
    const atBottom = await page.$eval('[role="grid"]', (grid) => {
      const bottom = grid.scrollTop + grid.clientHeight >= grid.scrollHeight - 1;
      if (!bottom) grid.scrollTop += grid.clientHeight - 64;
      return bottom;
    });
    await rendered(page);
    if (atBottom) {
      // With no count the grid grows as it reads: the bottom is the end only once it stops.
      await settled(page);
      const grew = await page.$eval('[role="grid"]', (grid) => grid.scrollTop + grid.clientHeight < grid.scrollHeight - 1);
      if (!grew) {
        for (const row of await visibleRows(page)) seen.set(row.index, row);
        break;
      }
    }
    if (step > 100000) throw new Error('the grid never reached its end');
  }
  const rows = [...seen.values()].sort((a, b) => a.index - b.index);
  const info = await page.evaluate(() => ({
    longTasks: window.__longTasks,
    rowCount: Number(document.querySelector('[role="grid"]').getAttribute('aria-rowcount')),
    count: document.querySelector('.count')?.textContent ?? '',
  }));
  return { rows, duplicates, ...info };
}

/** Jumps to the end of the grid, then scrolls up to the top a screenful at a time, collecting
 * every row once: the tail read backward (`last`/`before`) until it meets the head. */
async function scrollAllUp(page) {
  await page.getByRole('button', { name: 'Jump to end' }).click();
  const scrolled = await scrollBackUp(page);
  return { ...scrolled, rowCount: Number(await page.getAttribute('[role="grid"]', 'aria-rowcount')) };
}

/** From where the grid stands, scrolls up to its top a screenful at a time, collecting every
 * row once: rows released on the way down are read again. */
async function scrollBackUp(page) {
  const seen = new Map();
  const duplicates = [];
  for (let step = 0; ; step++) {
    await rendered(page);
    await settled(page);
    for (const row of await visibleRows(page)) {
      const before = seen.get(row.index);
      if (before && (before.num !== row.num || before.name !== row.name)) duplicates.push({ before, row });
      seen.set(row.index, row);
    }
    const atTop = await page.$eval('[role="grid"]', (grid) => {
      const top = grid.scrollTop <= 0;
      if (!top) grid.scrollTop = Math.max(0, grid.scrollTop - (grid.clientHeight - 64));
      return top;
    });
    if (atTop) break;
    if (step > 100000) throw new Error('the grid never reached its top');
  }
  return { rows: [...seen.values()].sort((a, b) => a.index - b.index), duplicates };
}

async function scenarioScroll() {
  const context = await newContext({ width: 1280, height: spec.viewportHeight ?? 1900 });
  const out = [];
  for (const [i, url] of spec.urls.entries()) {
    const upwards = spec.upwards?.[i] === true;
    const page = await newPage(context);
    const operations = countOperations(page);
    const started = Date.now();
    await openGrid(page, url);
    const firstRowsMs = await page.evaluate(() => window.__firstRows ?? null);
    const initial = await page.evaluate(() => ({
      rowCount: Number(document.querySelector('[role="grid"]').getAttribute('aria-rowcount')),
      count: document.querySelector('.count')?.textContent ?? '',
    }));
    const loadMs = Date.now() - started;
    const scrolled = upwards ? await scrollAllUp(page) : await scrollAll(page);
    const down = { ...operations };
    const back = spec.back?.[i] === true ? { ...(await scrollBackUp(page)), operations } : null;
    out.push({ url, upwards, firstRowsMs, loadMs, scrollMs: Date.now() - started - loadMs, operations: down, initial, ...scrolled, back });
    report.violations.push(...(await page.evaluate(() => window.__violations)));
    await page.close();
  }
  return out;
}

/** Opens each URL in a fresh page and reports when its first 50 rows were on screen. */
async function scenarioLoad() {
  const context = await newContext({ width: 1280, height: 1900 });
  const out = [];
  for (const url of spec.urls) {
    const page = await newPage(context);
    await page.goto(url);
    await page.waitForSelector('[role="row"][aria-rowindex="51"]:not([aria-busy])');
    out.push({ url, firstRowsMs: await page.evaluate(() => window.__firstRows ?? null) });
    await page.close();
  }
  return out;
}

/** The grid page as markup, one line per element or run of text, for comparing two renders:
 * attributes sorted, the style as the browser reads it, without what only focus changes
 * (tabindex, the active cell's class) and without body rows past the first `rows`. */
function markupOfPage(rows) {
  const lines = [];
  const walk = (element, depth) => {
    if (element.matches('.grid-body > [role="row"]') && Number(element.getAttribute('aria-rowindex')) > rows + 1) return;
    const attributes = [...element.attributes]
      .filter((a) => !['tabindex', 'data-first-paint', 'inert'].includes(a.name))
      .map((a) => {
        let value = a.value;
        if (a.name === 'class') value = value.split(/\s+/).filter((c) => c && c !== 'active').join(' ');
        if (a.name === 'style') value = element.style.cssText;
        return `${a.name}=${JSON.stringify(value)}`;
      })
      .sort();
    lines.push(`${' '.repeat(depth)}<${element.tagName.toLowerCase()} ${attributes.join(' ')}>`);
    let text = '';
    const flush = () => {
      if (text) lines.push(`${' '.repeat(depth + 1)}${JSON.stringify(text)}`);
      text = '';
    };
    for (const child of element.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) text += child.textContent;
      else if (child.nodeType === Node.ELEMENT_NODE) {
        flush();
        walk(child, depth + 1);
      }
    }
    flush();
  };
  walk(document.querySelector('.grid-page'), 0);
  return lines;
}

/** Each grid twice: with the page's script withheld, so that only the first paint shows, and
 * whole, once the page has rendered its own rows; what each shows (toolbar, tabs, header and
 * the first `rows` rows) and the requests the whole page sent. */
async function scenarioFirstPaint() {
  const rows = spec.rows ?? 50;
  const out = [];
  for (const url of spec.urls) {
    const withheld = await newContext({ width: 1280, height: 1900 });
    await withheld.route('**/assets/grid.js', (route) => route.fulfill({ contentType: 'text/javascript', body: '// withheld by the test' }));
    const first = await newPage(withheld);
    const firstOperations = countOperations(first);
    await first.goto(url);
    await first.waitForSelector(`.grid-page[data-first-paint] ${ROWS}[aria-rowindex="${rows + 1}"]`);
    const painted = await first.evaluate(markupOfPage, rows);
    // It answers nothing, so it takes no input: inert, and no pointer events.
    const paintedInert = await first.evaluate(() => {
      const root = document.querySelector('.grid-page[data-first-paint]');
      return root.inert === true && getComputedStyle(root).pointerEvents === 'none';
    });
    await withheld.close();

    // Whole, with the page's script held back until the first paint is on screen, so that the
    // page always takes over from it (its wait for its own rows, then the replacement).
    const context = await newContext({ width: 1280, height: 1900 });
    const page = await newPage(context);
    const operations = countOperations(page);
    const painting = page.waitForSelector(`.grid-page[data-first-paint] ${ROWS}[aria-rowindex="${rows + 1}"]`, { state: 'attached' });
    await context.route('**/assets/grid.js', async (route) => {
      await painting.catch(() => undefined);
      await route.continue();
    });
    await page.goto(url);
    await page.waitForSelector(`${GRID} [role="row"][aria-rowindex="${rows + 1}"]:not([aria-busy])`);
    const rendered = await page.evaluate(markupOfPage, rows);
    const firstPainted = await page.evaluate(() => window.__gridgate?.painted ?? false);
    report.violations.push(...(await page.evaluate(() => window.__violations)));
    await context.close();
    out.push({ url, painted, paintedInert, rendered, firstPainted, firstOperations, operations });
  }
  return out;
}

function cell(page, row, column) {
  return page.locator(`${ROWS}[aria-rowindex="${row + 1}"] [data-column="${column}"]`);
}

/** Waits for the response of the mutation an edit sends. */
function mutationDone(page) {
  return page.waitForResponse((response) => {
    if (!response.url().endsWith('/graphql')) return false;
    const body = response.request().postData() ?? '';
    return /"operationName":"Grid(SetCell|UpdateIssue)"/.test(body);
  });
}

/** Edits the cell of `column` in row `row` (from 1) with the keyboard, as a user would. */
async function editCell(page, row, step) {
  const target = cell(page, row, step.column);
  await target.click();
  if (step.kind === 'checkbox') {
    const done = mutationDone(page);
    await page.keyboard.press('Space');
    await done;
    return;
  }
  if (step.kind === 'type') {
    // Typing on a focused cell starts the edit with what was typed.
    const done = mutationDone(page);
    await page.keyboard.type(step.value);
    await page.keyboard.press('Enter');
    await done;
    return;
  }
  if (step.kind === 'escape') {
    await page.keyboard.press('Enter');
    const editor = target.locator('input');
    await editor.fill(step.value);
    await editor.press('Escape');
    await editor.waitFor({ state: 'detached' });
    return;
  }
  if (step.kind === 'select') {
    await page.keyboard.press('Enter');
    const done = mutationDone(page);
    await page.locator(`[role="listbox"] [role="option"]`, { hasText: step.value }).first().dispatchEvent('mousedown');
    await done;
    return;
  }
  await page.keyboard.press('F2');
  const editor = target.locator('input');
  await editor.waitFor();
  const done = step.expectNoRequest ? null : mutationDone(page);
  await editor.fill(step.value);
  await editor.press('Enter');
  if (done) await done;
}

async function readRow(page, row, columns) {
  const values = {};
  for (const column of columns) values[column] = (await cell(page, row, column).textContent()) ?? '';
  return values;
}

async function scenarioEdit() {
  const context = await newContext();
  const page = await newPage(context);
  const operations = countOperations(page);
  await openGrid(page, spec.path);
  const readsBefore = { ...operations };
  const messages = [];
  for (const step of spec.steps) {
    if (step.kind === 'invalid') {
      const before = await cell(page, 1, step.column).textContent();
      await editCell(page, 1, { ...step, kind: 'text' });
      const banner = page.locator('.banner[role="alert"]');
      await banner.waitFor();
      // The optimistic value is rolled back once the server refuses it.
      await page.waitForFunction(
        ([selector, text]) => document.querySelector(selector)?.textContent === text,
        [`${ROWS}[aria-rowindex="2"] [data-column="${step.column}"]`, before ?? ''],
      );
      messages.push({ column: step.column, message: (await banner.locator('span').textContent()) ?? '', after: await cell(page, 1, step.column).textContent() });
      await banner.getByRole('button', { name: 'Dismiss' }).click();
      continue;
    }
    await editCell(page, 1, step);
  }
  const columns = [...new Set(spec.steps.map((s) => s.column)), 'num'];
  const beforeReload = await readRow(page, 1, columns);
  const readsAfter = { ...operations };
  await page.reload();
  await page.waitForSelector(GRID);
  await settled(page);
  const afterReload = await readRow(page, 1, columns);
  report.violations.push(...(await page.evaluate(() => window.__violations)));
  return { beforeReload, afterReload, messages, readsBefore, readsAfter };
}

/** Two users (two browser contexts) edit the same cell of the first row: the first writes
 * `spec.first`, then the second, still holding the old version, writes `spec.second` and meets
 * the conflict dialog. Returns the second page, its dialog and what it says; `operations`
 * counts the second page's requests. */
async function meetConflict() {
  const first = await newPage(await newContext());
  const second = await newPage(await newContext());
  const operations = countOperations(second);
  await openGrid(first, spec.path);
  await openGrid(second, spec.path);
  await editCell(first, 1, { column: spec.column, kind: 'text', value: spec.first });
  // The second user still sees the old version and edits the same cell.
  const target = cell(second, 1, spec.column);
  await target.click();
  await second.keyboard.press('F2');
  const editor = target.locator('input');
  await editor.fill(spec.second);
  await editor.press('Enter');
  const dialog = second.getByRole('dialog', { name: 'Someone else changed this issue' });
  await dialog.waitFor();
  const text = (await dialog.textContent()) ?? '';
  return { second, dialog, text, operations };
}

async function scenarioConflict() {
  const { second, dialog, text } = await meetConflict();
  const done = mutationDone(second);
  await dialog.getByRole('button', { name: 'Overwrite with mine' }).click();
  await done;
  await second.waitForFunction(
    ([selector, value]) => document.querySelector(selector)?.textContent === value,
    [`${ROWS}[aria-rowindex="2"] [data-column="${spec.column}"]`, spec.second],
  );
  return { dialog: text, shown: await cell(second, 1, spec.column).textContent() };
}

async function headerState(page) {
  return page.$$eval('[role="columnheader"][data-column]', (headers) =>
    headers.map((h) => ({
      column: h.getAttribute('data-column'),
      sort: h.getAttribute('aria-sort'),
      indicator: h.querySelector('.sorted')?.textContent ?? null,
    })),
  );
}

async function scenarioViews() {
  const page = await newPage(await newContext());
  const operations = countOperations(page);
  await openGrid(page, spec.allPath);
  await page.getByRole('button', { name: 'Jump to end' }).click();
  await rendered(page);
  await settled(page);
  const rows = await visibleRows(page);
  const jump = { last: rows[rows.length - 1], operations: { ...operations } };
  await openGrid(page, spec.viewPath);
  const view = {
    tab: await page.locator('[role="tab"][aria-selected="true"] .name').textContent(),
    tabCount: await page.locator('[role="tab"][aria-selected="true"] .tab-count').textContent(),
    tabTitle: await page.locator('[role="tab"][aria-selected="true"]').getAttribute('title'),
    headers: await headerState(page),
    count: await page.locator('.count').textContent(),
    rowCount: Number(await page.getAttribute('[role="grid"]', 'aria-rowcount')),
    rows: (await visibleRows(page)).slice(0, 10),
  };
  if (spec.screenshot) {
    await cell(page, 3, 'name').click();
    await page.screenshot({ path: spec.screenshot });
  }
  await openGrid(page, spec.allPath);
  await page.locator(`[role="columnheader"][data-column="${spec.sortColumn}"] button.sort`).click();
  await page.waitForURL(/sort=/);
  await settled(page);
  await page.locator(`[role="columnheader"][data-column="${spec.addColumn}"] button.sort`).click({ modifiers: ['Shift'] });
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  const title = await dialog.locator('h2').textContent();
  await dialog.getByRole('textbox').fill(spec.viewName);
  await dialog.getByRole('button', { name: 'Create view' }).click();
  await page.waitForURL(/view=/);
  const url = page.url();
  await page.locator('[role="tab"][aria-selected="true"]', { hasText: spec.viewName }).waitFor();
  const createdTab = await page.locator('[role="tab"][aria-selected="true"] .name').textContent();
  // A plain click on a header of a view offers to re-sort the view itself.
  await page.waitForSelector(`${ROWS}[aria-rowindex="2"]:not([aria-busy])`);
  await page.locator(`[role="columnheader"][data-column="${spec.resortColumn}"] button.sort`).click();
  const resort = page.getByRole('dialog');
  await resort.waitFor();
  const resortTitle = await resort.locator('h2').textContent();
  await resort.getByRole('button', { name: 'Update this view' }).click();
  // The view rebuilds in the background; the page shows its progress, then reads the rebuilt
  // index. Wait until the rows on screen are in the new order (or the step times out).
  await page.waitForFunction(
    ([column, expected]) => {
      if (document.querySelector(`[role="columnheader"][data-column="${column}"]`)?.getAttribute('aria-sort') !== 'ascending') return false;
      const nums = [...document.querySelectorAll('[role="grid"] [role="row"][aria-rowindex]:not([aria-busy])')]
        .filter((row) => row.getAttribute('aria-rowindex') !== '1')
        .sort((a, b) => Number(a.getAttribute('aria-rowindex')) - Number(b.getAttribute('aria-rowindex')))
        .slice(0, expected.length)
        .map((row) => Number(row.querySelector('[data-column="num"]')?.textContent));
      return JSON.stringify(nums) === JSON.stringify(expected);
    },
    [spec.resortColumn, spec.resortFirst],
  );
  await settled(page);
  const resorted = { title: resortTitle, rows: (await visibleRows(page)).slice(0, 10), tabs: await page.$$eval('[role="tab"] .name', (t) => t.map((e) => e.textContent)) };
  return { jump, view, resorted, created: { title, url, tab: createdTab } };
}

async function headerLabels(page) {
  return page.$$eval('[role="columnheader"][data-column] .label', (labels) => labels.map((l) => l.textContent));
}

async function answer(page, button, text) {
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  if (text !== undefined) await dialog.getByRole('textbox').first().fill(text);
  await dialog.getByRole('button', { name: button }).click();
  await dialog.waitFor({ state: 'detached' });
}

async function columnMenu(page, label, item) {
  await page.getByRole('button', { name: `Column menu: ${label}` }).click();
  await page.getByRole('menuitem', { name: item }).click();
}

/** Adds an issue, deletes it, and adds, renames, moves and deletes a column. */
async function scenarioManage() {
  const page = await newPage(await newContext());
  const operations = countOperations(page);
  await openGrid(page, spec.path);
  const count = async () => page.locator('.count').textContent();
  const out = { countBefore: await count() };
  await page.getByRole('button', { name: '+ Issue' }).click();
  await answer(page, 'Add issue', spec.issueName);
  const added = page.locator(`${ROWS}[data-issue]`, { has: page.locator('[data-column="name"]', { hasText: spec.issueName }) });
  await added.waitFor();
  out.addedAt = Number(await added.getAttribute('aria-rowindex'));
  out.countAfterAdd = await count();
  out.readsAfterAdd = { ...operations };
  await added.locator('.select').click();
  await page.getByRole('button', { name: 'Delete 1' }).click();
  await answer(page, 'Delete');
  await added.waitFor({ state: 'detached' });
  out.countAfterDelete = await count();
  await page.getByRole('button', { name: 'Add a column' }).click();
  const dialog = page.getByRole('dialog', { name: 'New column' });
  await dialog.getByLabel('Name').fill(spec.columnName);
  await dialog.getByLabel('Type').selectOption('SELECT');
  await dialog.getByLabel('Option 1 label').fill('Minor');
  await dialog.getByRole('button', { name: '+ Option' }).click();
  await dialog.getByLabel('Option 2 label').fill('Major');
  await dialog.getByRole('button', { name: 'Add column' }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.locator('[role="columnheader"] .label', { hasText: spec.columnName }).waitFor();
  out.afterAdd = await headerLabels(page);
  await columnMenu(page, spec.columnName, 'Rename column…');
  await answer(page, 'Save', spec.renamed);
  await page.locator('[role="columnheader"] .label', { hasText: spec.renamed }).waitFor();
  await columnMenu(page, spec.renamed, 'Move left');
  await page.waitForFunction(
    ([name]) => {
      const labels = [...document.querySelectorAll('[role="columnheader"][data-column] .label')].map((l) => l.textContent);
      return labels.indexOf(name) === labels.length - 2;
    },
    [spec.renamed],
  );
  out.afterMove = await headerLabels(page);
  await columnMenu(page, spec.renamed, 'Delete column…');
  await answer(page, 'Delete column');
  await page.locator('[role="columnheader"] .label', { hasText: spec.renamed }).waitFor({ state: 'detached' });
  out.afterDelete = await headerLabels(page);
  return out;
}

/** Sets one condition row of the filter bar (`row` holds its Column, Operator and Value
 * controls): its column, its operator and, when the operator takes one, its value. */
async function fillCondition(row, condition) {
  await row.getByLabel('Column').selectOption(condition.column);
  await row.getByLabel('Operator').selectOption(condition.op);
  if (condition.value === undefined) return;
  const value = row.getByLabel('Value');
  if ((await value.evaluate((e) => e.tagName)) === 'SELECT') await value.selectOption(condition.value);
  else await value.fill(condition.value);
}

/** Builds a filter of conditions in the filter bar, applies it, and reads the rows, the
 * count and the bar read back from the address. */
async function scenarioFilter() {
  const page = await newPage(await newContext());
  await openGrid(page, spec.path);
  await page.getByRole('button', { name: /^Filter/ }).click();
  const bar = page.getByRole('region', { name: 'Filter' });
  for (const [i, condition] of spec.conditions.entries()) {
    await bar.getByRole('button', { name: '+ Condition' }).click();
    await fillCondition(bar.locator('.clause').nth(i), condition);
  }
  await bar.getByRole('button', { name: 'Apply filter' }).click();
  await page.waitForURL(/filter=/);
  await settled(page);
  await page.waitForFunction(() => document.querySelector('.count')?.textContent?.includes('match'));
  const url = decodeURIComponent(new URL(page.url()).searchParams.get('filter') ?? '');
  const rows = await visibleRows(page);
  const count = await page.locator('.count').textContent();
  await page.reload();
  await page.waitForSelector(GRID);
  await page.getByRole('button', { name: /^Filter/ }).click();
  const readBack = await page.$$eval('.filter-bar .condition', (conditions) =>
    conditions.map((c) => [...c.querySelectorAll('select, input')].map((e) => e.value)),
  );
  return { filter: JSON.parse(url), rows, count, readBack };
}

/** Under `--auth jwt`: the sign-in dialog, then the grid and the home page with the token. */
async function scenarioSignIn() {
  const page = await newPage(await newContext());
  await page.goto(spec.path);
  const dialog = page.getByRole('dialog', { name: 'Sign in' });
  await dialog.waitFor();
  await dialog.getByRole('textbox').fill(spec.token);
  await dialog.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForSelector(`${ROWS}[aria-rowindex="2"]:not([aria-busy])`);
  const rows = await visibleRows(page);
  await page.goto('/');
  await page.locator('.home-page h2').first().waitFor();
  const tenants = await page.$$eval('.home-page h2', (h) => h.map((e) => e.textContent));
  const stored = await page.evaluate(() => sessionStorage.getItem('gridgate.token') !== null);
  return { rows, tenants, stored };
}

/** Builds a filter of conditions and OR groups in the filter bar and applies it; reads the
 * filter from the address, the count, every row the grid shows (scrolled to its end) and the
 * bar's clauses read back from the address after a reload. */
async function scenarioFilterGroups() {
  const page = await newPage(await newContext());
  await openGrid(page, spec.path);
  await page.getByRole('button', { name: /^Filter/ }).click();
  const bar = page.getByRole('region', { name: 'Filter' });
  for (const [i, clause] of spec.clauses.entries()) {
    if (!clause.or) {
      await bar.getByRole('button', { name: '+ Condition' }).click();
      await fillCondition(bar.locator('.clause').nth(i), clause);
      continue;
    }
    await bar.getByRole('button', { name: '+ OR group' }).click();
    const group = bar.locator('.clause').nth(i).getByRole('group', { name: 'Any of' });
    // A new group holds two conditions; "+ or" adds each further one.
    for (let j = 2; j < clause.or.length; j++) await group.getByRole('button', { name: '+ or' }).click();
    for (const [j, condition] of clause.or.entries()) await fillCondition(group.locator('.or-row').nth(j), condition);
  }
  await bar.getByRole('button', { name: 'Apply filter' }).click();
  await page.waitForURL(/filter=/);
  // The count is blank while the filtered list's first page is read.
  await page.waitForFunction(() => document.querySelector('.count')?.textContent?.includes('match'));
  await settled(page);
  const filter = JSON.parse(new URL(page.url()).searchParams.get('filter') ?? 'null');
  const count = page.locator('.count');
  const initial = {
    count: await count.textContent(),
    total: await count.getAttribute('data-total'),
    rowCount: Number(await page.getAttribute('[role="grid"]', 'aria-rowcount')),
  };
  const scrolled = await scrollAll(page);
  await page.reload();
  await page.waitForSelector(GRID);
  await page.getByRole('button', { name: /^Filter/ }).click();
  await page.locator('.filter-bar .condition').first().waitFor();
  const readBack = await page.$$eval('.filter-bar .clause', (clauses) =>
    clauses.map((clause) => {
      const values = (condition) => [...condition.querySelectorAll('select, input')].map((e) => e.value);
      const group = clause.querySelector('.or-group');
      return group ? { or: [...group.querySelectorAll('.condition')].map(values) } : values(clause.querySelector('.condition'));
    }),
  );
  report.violations.push(...(await page.evaluate(() => window.__violations)));
  return { filter, initial, rows: scrolled.rows, duplicates: scrolled.duplicates, count: scrolled.count, rowCount: scrolled.rowCount, readBack };
}

/** Two users edit one cell; the second answers the conflict dialog with "Keep theirs". What
 * the second page shows then and after a reload, and the requests it sent. */
async function scenarioConflictTheirs() {
  const { second, dialog, text, operations } = await meetConflict();
  await dialog.getByRole('button', { name: 'Keep theirs' }).click();
  await dialog.waitFor({ state: 'detached' });
  // The page read the issue as the first user left it when it met the conflict.
  await second.waitForFunction(
    ([selector, value]) => document.querySelector(selector)?.textContent === value,
    [`${ROWS}[aria-rowindex="2"] [data-column="${spec.column}"]`, spec.first],
  );
  const shown = await cell(second, 1, spec.column).textContent();
  const banners = await second.locator('.banner[role="alert"]').count();
  const sent = { ...operations };
  await second.reload();
  await second.waitForSelector(GRID);
  await settled(second);
  const afterReload = await cell(second, 1, spec.column).textContent();
  report.violations.push(...(await second.evaluate(() => window.__violations)));
  return { dialog: text, shown, banners, sent, afterReload };
}

/** Jumps to the end of the list and adds an issue, which the order puts last: where it shows,
 * the grid's size and count before and after, and the pages read by then. */
async function scenarioAddAtEnd() {
  const page = await newPage(await newContext());
  const operations = countOperations(page);
  await openGrid(page, spec.path);
  const grid = page.locator(GRID);
  const state = async () => {
    const rows = (await visibleRows(page)).sort((a, b) => a.index - b.index);
    return {
      rowCount: Number(await grid.getAttribute('aria-rowcount')),
      count: await page.locator('.count').textContent(),
      rows,
      reads: { ...operations },
    };
  };
  const rowCount = Number(await grid.getAttribute('aria-rowcount'));
  await page.getByRole('button', { name: 'Jump to end' }).click();
  // The last row is on screen with its data (read backward from the end).
  await page.waitForSelector(`${GRID} [role="row"][aria-rowindex="${rowCount}"]:not([aria-busy])`);
  await rendered(page);
  await settled(page);
  const before = await state();
  await page.getByRole('button', { name: '+ Issue' }).click();
  await answer(page, 'Add issue', spec.issueName);
  const added = page.locator(`${ROWS}[data-issue]`, { has: page.locator('[data-column="name"]', { hasText: spec.issueName }) });
  await added.waitFor();
  await settled(page);
  const addedAt = Number(await added.getAttribute('aria-rowindex'));
  const addedNum = Number(await added.locator('[data-column="num"]').textContent());
  const after = await state();
  report.violations.push(...(await page.evaluate(() => window.__violations)));
  return { before, after, addedAt, addedNum };
}

/** Renames a view (`rename` to `renamed`) and deletes one (`remove`) through their tabs'
 * menus: the tabs, the selected tab and the address after each. */
async function scenarioViewTabs() {
  const page = await newPage(await newContext());
  await openGrid(page, spec.path);
  const tabs = async () => ({
    names: await page.$$eval('[role="tab"] .name', (names) => names.map((n) => n.textContent)),
    // "All issues" has no name part; a view's tab also shows its count.
    selected: (await page.locator('[role="tab"][aria-selected="true"]').evaluate((t) => t.querySelector('.name')?.textContent ?? t.textContent)) ?? '',
    url: page.url(),
  });
  const viewTab = (name) => page.locator('[role="tab"][data-view]', { has: page.locator('.name', { hasText: new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }) });
  const opened = await tabs();
  const menu = async (name, item) => {
    await page.getByRole('button', { name: `View menu: ${name}`, exact: true }).click();
    await page.getByRole('menuitem', { name: item }).click();
  };

  await menu(spec.rename, 'Rename…');
  await answer(page, 'Save', spec.renamed);
  await viewTab(spec.renamed).waitFor();
  await viewTab(spec.rename).waitFor({ state: 'detached' });
  const renamed = await tabs();

  const removed = await viewTab(spec.remove).getAttribute('data-view');
  await menu(spec.remove, 'Delete view…');
  await answer(page, 'Delete view');
  await page.locator(`[role="tab"][data-view="${removed}"]`).waitFor({ state: 'detached' });
  await page.waitForURL((url) => !url.searchParams.has('view'));
  await page.waitForSelector(`${GRID} [role="row"][aria-rowindex="2"]:not([aria-busy])`);
  await settled(page);
  const deleted = { ...(await tabs()), removed, count: await page.locator('.count').textContent() };
  report.violations.push(...(await page.evaluate(() => window.__violations)));
  return { opened, renamed, deleted };
}

/** Under `--auth jwt`: signs in, then puts a token the server refuses in the tab's storage
 * and sorts by `sortColumn` (an action), then does so again and reloads; each time the
 * sign-in dialog must come back, and signing in with `token` shows the rows. */
async function scenarioSignInAgain() {
  const page = await newPage(await newContext());
  const signIn = async () => {
    const dialog = page.getByRole('dialog', { name: 'Sign in' });
    await dialog.waitFor();
    const text = (await dialog.textContent()) ?? '';
    await dialog.getByRole('textbox').fill(spec.token);
    await dialog.getByRole('button', { name: 'Sign in' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.waitForSelector(`${GRID} [role="row"][aria-rowindex="2"]:not([aria-busy])`);
    await settled(page);
    return { text, rows: await visibleRows(page), url: page.url() };
  };
  const refuse = () => page.evaluate((bad) => sessionStorage.setItem('gridgate.token', bad), spec.badToken);
  await page.goto(spec.path);
  const first = await signIn();
  await refuse();
  await page.locator(`[role="columnheader"][data-column="${spec.sortColumn}"] button.sort`).click();
  const afterAction = await signIn();
  await refuse();
  await page.reload();
  const afterReload = await signIn();
  const stored = await page.evaluate(() => sessionStorage.getItem('gridgate.token'));
  report.violations.push(...(await page.evaluate(() => window.__violations)));
  return { first, afterAction, afterReload, stored: stored === spec.token };
}

async function scenarioExport() {
  const page = await newPage(await newContext());
  await openGrid(page, spec.path);
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download CSV' }).click();
  const file = await download;
  const stream = await file.createReadStream();
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return { name: file.suggestedFilename(), text: Buffer.concat(chunks).toString('utf8') };
}

const scenarios = {
  scroll: scenarioScroll,
  load: scenarioLoad,
  firstPaint: scenarioFirstPaint,
  edit: scenarioEdit,
  conflict: scenarioConflict,
  views: scenarioViews,
  export: scenarioExport,
  manage: scenarioManage,
  filter: scenarioFilter,
  signin: scenarioSignIn,
  filterGroups: scenarioFilterGroups,
  conflictTheirs: scenarioConflictTheirs,
  addAtEnd: scenarioAddAtEnd,
  viewTabs: scenarioViewTabs,
  signinAgain: scenarioSignInAgain,
};

try {
  const run = scenarios[spec.scenario];
  if (!run) throw new Error(`no scenario ${spec.scenario}`);
  report.result = await run();
} catch (error) {
  report.failure = String(error?.stack ?? error);
}
await browser.close();
process.stdout.write(JSON.stringify(report));
