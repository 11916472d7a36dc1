// Runs the GraphQL-over-HTTP server audits of the npm package `graphql-http` against a URL
// and prints one JSON summary on stdout: `[{id, name, status, reason, httpStatus}]`, one entry
// per audit, `status` being `ok`, `notice`, `warn` or `error`.
//
//   node graphql_http_audit.mjs <graphql url> <directory graphql-http is installed under>
//
// The second argument is the `--prefix` of `npm install graphql-http` (tests/api/http.rs keeps
// it in a cache directory), so the package is resolved from there rather than from this file's
// location. The script always exits 0 once the audits have run: judging them is the test's job.

import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, prefix] = process.argv.slice(2);
if (!url || !prefix) {
  console.error('usage: node graphql_http_audit.mjs <graphql url> <npm prefix>');
  process.exit(2);
}

// `require.resolve` from the prefix finds the package whatever its entry file is called;
// importing its CommonJS entry from ESM works on every Node that runs the package.
const require = createRequire(join(prefix, 'package.json'));
const entry = require.resolve('graphql-http');
const module = await import(pathToFileURL(entry).href);
const serverAudits = module.serverAudits ?? module.default?.serverAudits;
if (typeof serverAudits !== 'function') {
  console.error(`graphql-http at ${entry} exports no serverAudits`);
  process.exit(2);
}

const summary = [];
// One audit at a time, in the package's order: the summary reads like its report.
for (const audit of serverAudits({ url, fetchFn: fetch })) {
  let result;
  try {
    result = await audit.fn();
  } catch (error) {
    // The audits throw only on fatal errors (the server unreachable, say).
    result = { id: audit.id, name: audit.name, status: 'error', reason: `threw: ${error}` };
  }
  const entry = { id: result.id, name: result.name, status: result.status };
  if (result.status !== 'ok') {
    entry.reason = String(result.reason);
    if (result.response) {
      entry.httpStatus = result.response.status;
      entry.contentType = result.response.headers.get('content-type');
    }
  }
  summary.push(entry);
}
process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
