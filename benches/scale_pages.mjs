// Pages a whole project through gridgate's GraphQL endpoint in one order, 100 issues a page,
// as a grid does, and reports each page's cost; then times the first, middle and last page
// again (median of REPEATS reads each). Used by benches/scale.sh.
//
//   node benches/scale_pages.mjs <graphql url> <project id> <IssueOrder JSON>
//
// Prints one JSON object: { pages, rows, seconds, first, middle, last }, each of the last
// three { ms, calls, rcu }.
const [url, project, orderText] = process.argv.slice(2);
const orderBy = JSON.parse(orderText);
const REPEATS = 5;
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

async function timed(after) {
  const samples = [];
  for (let i = 0; i < REPEATS; i++) samples.push(await page(after));
  samples.sort((a, b) => a.ms - b.ms);
  const median = samples[Math.floor(samples.length / 2)];
  return { ms: Number(median.ms.toFixed(2)), calls: median.calls, rcu: median.rcu };
}
const result = {
  pages: cursors.length,
  rows,
  seconds,
  first: await timed(cursors[0]),
  middle: await timed(cursors[Math.floor(cursors.length / 2)]),
  last: await timed(cursors[cursors.length - 1]),
};
console.log(JSON.stringify(result));
