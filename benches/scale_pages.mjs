// Pages a whole project through gridgate's GraphQL endpoint in one order, 100 issues a page,
// as a grid does, and reports each page's cost; then times the first, middle and last page
// again: a round reads each of the three once, a first round is not counted, and each page's
// time is its median over ROUNDS rounds, so that the machine's drift between reads (a
// millisecond on a page of 3 ms) falls on the three alike. Used by benches/scale.sh.
//
//   node benches/scale_pages.mjs <graphql url> <project id> <IssueOrder JSON>
//
// Prints one JSON object: { pages, rows, seconds, first, middle, last }, each of the last
// three { ms, calls, rcu }.
const [url, project, orderText] = process.argv.slice(2);
const orderBy = JSON.parse(orderText);
const ROUNDS = 15;
const QUERY = `query Page($p: ID!, $after: String, $o: IssueOrder) {
  project(id: $p) { issues(first: 100, after: $after, orderBy: $o) {
    edges { cursor node { id num name state version fieldValues { value fieldId } } }
    pageInfo { hasNextPage endCursor } } } }`;

async function page(after) {
  const started = process.hrtime.bigint();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: QUERY, variables: { p: project, after, o: orderBy } }),
  });
  const body = await response.json();
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  const issues = body.data.project.issues;
  const cost = body.extensions?.cost ?? {};
  return { ms, calls: cost.dynamodbCalls, rcu: cost.readCapacityUnits, issues };
}

const cursors = [null];
let rows = 0;
const started = Date.now();
for (;;) {
  const { issues } = await page(cursors[cursors.length - 1]);
  rows += issues.edges.length;
  if (!issues.pageInfo.hasNextPage) break;
  cursors.push(issues.pageInfo.endCursor);
}
const seconds = (Date.now() - started) / 1000;

const timedCursors = {
  first: cursors[0],
  middle: cursors[Math.floor(cursors.length / 2)],
  last: cursors[cursors.length - 1],
};
const samples = { first: [], middle: [], last: [] };
for (let round = 0; round <= ROUNDS; round++) {
  for (const [which, after] of Object.entries(timedCursors)) {
    const sample = await page(after);
    if (round > 0) samples[which].push(sample);
  }
}
function median(taken) {
  taken.sort((a, b) => a.ms - b.ms);
  const middle = taken[Math.floor(taken.length / 2)];
  return { ms: Number(middle.ms.toFixed(2)), calls: middle.calls, rcu: middle.rcu };
}
const result = {
  pages: cursors.length,
  rows,
  seconds,
  first: median(samples.first),
  middle: median(samples.middle),
  last: median(samples.last),
};
console.log(JSON.stringify(result));
