// Makes EDITS random cell edits to a project through gridgate's GraphQL endpoint, as grid users
// do: each sets (or, one time in seven, clears) one cell of a random issue, in a random custom
// field of type INT, NUMBER or TEXT, CONCURRENCY at a time. Used by benches/scale.sh to see
// what edits do to the embedded store's file.
//
//   node benches/scale_edits.mjs <graphql url> <project id> <edits> [concurrency]
//
// Prints one JSON object: { edits, seconds, perSecond, failed }.
const [url, project, editsText, concurrencyText] = process.argv.slice(2);
const EDITS = Number(editsText);
const CONCURRENCY = Number(concurrencyText ?? 8);

async function graphql(query, variables) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}

// A deterministic generator (mulberry32), so runs edit the same cells.
let state = 24;
function random() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (list) => list[Math.floor(random() * list.length)];

const head = await graphql(`query ($p: ID!) { project(id: $p) { customFields { id type } } }`, { p: project });
const fields = head.data.project.customFields.filter((f) => ['INT', 'NUMBER', 'TEXT'].includes(f.type));

// Every issue's id, 100 a page.
const ids = [];
for (let after = null; ;) {
  const body = await graphql(
    `query ($p: ID!, $a: String) { project(id: $p) { issues(first: 100, after: $a) {
       nodes { id } pageInfo { hasNextPage endCursor } } } }`,
    { p: project, a: after },
  );
  const issues = body.data.project.issues;
  ids.push(...issues.nodes.map((n) => n.id));
  if (!issues.pageInfo.hasNextPage) break;
  after = issues.pageInfo.endCursor;
}

function value(type) {
  if (random() < 1 / 7) return null;
  switch (type) {
    case 'INT': return String(Math.floor(random() * 2000001) - 1000000);
    case 'NUMBER': return (random() * 10000 - 5000).toFixed(2);
    default: return `edit ${Math.floor(random() * 1e9).toString(36)}`;
  }
}

const SET = `mutation ($i: SetIssueFieldValuesInput!) { setIssueFieldValues(input: $i) { issue { version } } }`;
let next = 0;
let failed = 0;
const started = Date.now();
async function worker() {
  while (next < EDITS) {
    next += 1;
    const field = pick(fields);
    const body = await graphql(SET, {
      i: { issueId: pick(ids), values: [{ fieldId: field.id, value: value(field.type) }] },
    });
    if (body.errors) failed += 1;
  }
}
await Promise.all(Array.from({ length: CONCURRENCY }, worker));
const seconds = (Date.now() - started) / 1000;
console.log(JSON.stringify({ edits: EDITS, seconds, perSecond: EDITS / seconds, failed }));
