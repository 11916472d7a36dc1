// Loads gridgate's browser pages (GraphiQL and GraphQL Playground) in Debian's headless
// Chromium, driven by playwright-core, with every non-loopback request blocked, and runs one
// query in each page's editor. Used by tests/api/pages.rs, which judges what this reports.
//
//   node browser_pages.mjs <spec.json>
//
// The spec names the server (`baseUrl`), the npm prefix holding playwright-core
// (`playwright`), the browser (`chromium`), a fresh user-data directory (`userDataDir`), the
// query to run (`query`), the dialog GraphiQL should open (`graphiqlDialog`), and the time
// limit of each step in milliseconds (`stepTimeoutMs`). It prints one JSON object:
//
//   { "pages": [ { "name", "status", "headers", "requests", "blocked", "consoleErrors",
//                  "pageErrors", "violations", "steps", "result", "failure" } ] }
//
// where `requests` is every URL the page asked for, `blocked` those that went elsewhere than
// loopback (and were aborted), `violations` the page's securitypolicyviolation events, `steps`
// the milliseconds each step took, `result` the text of the result pane after the run, and
// `failure` the first step that did not complete. It exits non-zero only when the browser
// itself cannot be driven.
//
// Every wait is on a condition (a selector, a predicate), bounded by the step time limit;
// nothing waits for a fixed time.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { CHROMIUM_ARGS, isLoopback } from './browser_common.mjs';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(path.join(spec.playwright, 'node_modules', 'noop.js'));
const { chromium } = require('playwright-core');

const context = await chromium.launchPersistentContext(spec.userDataDir, {
  executablePath: spec.chromium,
  headless: true,
  args: CHROMIUM_ARGS,
  viewport: { width: 1280, height: 800 },
});
context.setDefaultTimeout(spec.stepTimeoutMs);
context.setDefaultNavigationTimeout(spec.stepTimeoutMs);

// Collected for every page; the page under test is the one whose name is current.
let current = null;
await context.route('**/*', (route) => {
  const url = route.request().url();
  if (isLoopback(url)) {
    return route.continue();
  }
  current?.blocked.push(url);
  return route.abort('blockedbyclient');
});
context.on('request', (request) => current?.requests.push(request.url()));
// Record CSP violations as the page sees them (init scripts run before the page's own and
// are not subject to its policy).
await context.addInitScript(() => {
  window.__gridgateViolations = [];
  document.addEventListener('securitypolicyviolation', (event) => {
    window.__gridgateViolations.push({
      directive: event.violatedDirective,
      blockedURI: event.blockedURI,
      sample: event.sample,
      source: event.sourceFile,
      line: event.lineNumber,
    });
  });
});

// The CodeMirror instance of the page's editor in `mode` ('graphql' for the query editor,
// 'graphql-results' for the result pane): both tools use CodeMirror 5 with these modes,
// which are steadier hooks than their class names (the Playground's are generated).
async function waitForEditor(page, mode) {
  await page.waitForFunction(
    (wanted) =>
      [...document.querySelectorAll('.CodeMirror')].some(
        (element) =>
          element.CodeMirror &&
          element.CodeMirror.getOption('mode') === wanted &&
          element.getBoundingClientRect().width > 0
      ),
    mode
  );
}

async function setQuery(page, query) {
  await page.evaluate((text) => {
    const editor = [...document.querySelectorAll('.CodeMirror')]
      .map((element) => element.CodeMirror)
      .find((cm) => cm && cm.getOption('mode') === 'graphql');
    editor.setValue(text);
  }, query);
}

// Waits until the result pane holds a JSON response (data or errors) and returns its text.
async function waitForResult(page) {
  const handle = await page.waitForFunction(() => {
    const results = [...document.querySelectorAll('.CodeMirror')]
      .map((element) => element.CodeMirror)
      .find((cm) => cm && cm.getOption('mode') === 'graphql-results');
    const text = results ? results.getValue() : '';
    try {
      const value = JSON.parse(text);
      return value && (value.data || value.errors) ? text : false;
    } catch {
      return false;
    }
  });
  return handle.jsonValue();
}

async function runPage(name, url, steps) {
  const report = {
    name,
    status: null,
    headers: {},
    requests: [],
    blocked: [],
    consoleErrors: [],
    pageErrors: [],
    violations: [],
    steps: {},
    result: null,
    failure: null,
  };
  current = report;
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') {
      const where = message.location();
      report.consoleErrors.push(`${message.text()} (${where.url}:${where.lineNumber})`);
    }
  });
  page.on('pageerror', (error) => report.pageErrors.push(String(error && error.stack ? error.stack : error)));
  let step = 'load';
  try {
    let started = Date.now();
    const response = await page.goto(url, { waitUntil: 'load' });
    report.status = response.status();
    report.headers = response.headers();
    report.steps.load = Date.now() - started;
    for (const [stepName, action] of steps) {
      step = stepName;
      started = Date.now();
      const value = await action(page);
      if (value !== undefined) {
        report.result = value;
      }
      report.steps[stepName] = Date.now() - started;
    }
  } catch (error) {
    report.failure = `${step}: ${error && error.message ? error.message : error}`;
  }
  try {
    report.violations = await page.evaluate(() => window.__gridgateViolations || []);
  } catch (error) {
    report.violations = [{ directive: 'unknown', sample: `could not read: ${error}` }];
  }
  await page.close();
  current = null;
  return report;
}

const pages = [];
try {
  pages.push(
    await runPage('graphiql', `${spec.baseUrl}/graphql`, [
      ['editor', (page) => waitForEditor(page, 'graphql')],
      ['query', (page) => setQuery(page, spec.query)],
      ['run', (page) => page.click('.graphiql-execute-button')],
      ['result', (page) => waitForResult(page)],
      // A dialog makes GraphiQL lock scrolling with a <style> element created at run time:
      // the path that needs the page's style nonce.
      [
        'dialog',
        async (page) => {
          await page.click(`button[aria-label="${spec.graphiqlDialog}"]`);
          await page.waitForSelector('[role="dialog"]', { state: 'visible' });
          await page.keyboard.press('Escape');
          await page.waitForSelector('[role="dialog"]', { state: 'detached' });
        },
      ],
    ])
  );
  pages.push(
    await runPage('playground', `${spec.baseUrl}/playground`, [
      ['editor', (page) => waitForEditor(page, 'graphql')],
      ['query', (page) => setQuery(page, spec.query)],
      ['run', (page) => page.click('[title^="Execute Query"]')],
      ['result', (page) => waitForResult(page)],
    ])
  );
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify({ pages }));
