// Benchmark fixture: the grid page of gridgate served by a conventional Node gateway, the
// comparison point of issue 7's CPU and memory goals (P4). It is not part of gridgate.
//
// Written the way a competent team would write it with the usual stack: Apollo Server 4,
// DataLoader 2 (new loaders per request, so batching and caching never cross requests),
// AWS SDK v3 with the document client, over gridgate's own table (ARCHITECTURE.md, "The
// table"): a project and its custom fields are one Query of the project's partition, a page
// by num is one keyset Query of GSI1 (the issue items themselves), a page by a custom field
// is a keyset Query of the field's GSI1 partition plus one BatchGetItem of the issue items,
// then (like gridgate) the issues without a value, by num, through a filtered Query.
//
// What it leaves out, on purpose: authentication, cost metering, request limits and cursor
// signatures (cursors carry their list's scope and are checked, but are not HMAC-signed).
// That is less work per request than gridgate does, so the comparison is conservative.
//
//   NODE_ENV=production node server.mjs --endpoint http://127.0.0.1:8000 --table gridgate --port 0
//
// Prints `node gateway listening on http://127.0.0.1:<port>/graphql` once listening;
// GET /readyz answers 200. Environment variables PORT, TABLE, DYNAMODB_ENDPOINT work too.

import http from 'node:http';
import { parseArgs } from 'node:util';
import { ApolloServer, HeaderMap } from '@apollo/server';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand, BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import DataLoader from 'dataloader';
import { GraphQLError } from 'graphql';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PORT ?? '0' },
    host: { type: 'string', default: '127.0.0.1' },
    table: { type: 'string', default: process.env.TABLE ?? 'gridgate' },
    endpoint: { type: 'string', default: process.env.DYNAMODB_ENDPOINT },
  },
});

const TABLE = args.table;
const GSI1 = 'GSI1';

const ddb = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    region: process.env.AWS_REGION ?? 'us-east-1',
    ...(args.endpoint
      ? {
          endpoint: args.endpoint,
          // DynamoDB Local takes any alphanumeric key.
          credentials: { accessKeyId: 'nodegateway', secretAccessKey: 'nodegateway' },
        }
      : {}),
  }),
  // Numbers stay strings: cell values are decimals of any precision, shown as text.
  { unmarshallOptions: { wrapNumbers: true } },
);

const typeDefs = `#graphql
  type Query { project(id: ID!): Project }

  type Project {
    id: ID!
    name: String!
    customFields: [CustomField!]!
    issues(first: Int, after: String, orderBy: IssueOrder): IssueConnection!
  }

  enum CustomFieldType { TEXT INT NUMBER DATE CHECKBOX SELECT }
  type CustomField { id: ID! name: String! type: CustomFieldType! position: Int! }

  enum IssueState { OPEN CLOSED }
  type Issue { id: ID! num: Int! name: String! state: IssueState! fieldValues: [CustomFieldValue!]! }
  type CustomFieldValue { value: String! field: CustomField! }

  type IssueConnection { edges: [IssueEdge!]! pageInfo: PageInfo! }
  type IssueEdge { cursor: String! node: Issue! }
  type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! startCursor: String endCursor: String }

  enum IssueOrderField { NUM NAME STATE CUSTOM_FIELD }
  enum OrderDirection { ASC DESC }
  input IssueOrder { field: IssueOrderField! customFieldId: ID direction: OrderDirection! = ASC }
`;

const badInput = (message) =>
  new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });

const numberText = (n) => (n === undefined || n === null ? undefined : n.toString());

// ---- data access ----------------------------------------------------------------------

/** Every item of a Query, following LastEvaluatedKey. */
async function queryAll(input) {
  const items = [];
  let ExclusiveStartKey;
  do {
    const out = await ddb.send(new QueryCommand({ ...input, ExclusiveStartKey }));
    items.push(...(out.Items ?? []));
    ExclusiveStartKey = out.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
}

/** A project and its live custom fields (position order), or null: one Query. */
async function loadProject(id) {
  const items = await queryAll({
    TableName: TABLE,
    KeyConditionExpression: 'PK = :pk',
    ExpressionAttributeValues: { ':pk': id },
  });
  const projectItem = items.find((item) => item.Type === 'Project');
  if (!projectItem || projectItem.Deleted) return null;
  const fields = items
    .filter((item) => item.Type === 'CustomField' && !item.Deleted)
    .map((item) => ({
      id: item.SK,
      name: item.Name,
      type: item.FieldType.toUpperCase(),
      position: Number(item.Position),
    }))
    .sort((a, b) => a.position - b.position || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { id, name: projectItem.Name, fields };
}

function toIssue(item) {
  const values = {};
  for (const [field, value] of Object.entries(item.Values ?? {})) {
    values[field] = numberText(value);
  }
  return {
    id: item.PK,
    project: item.SK,
    num: Number(item.Num),
    name: item.Name,
    state: item.State.toUpperCase(),
    values,
  };
}

/** Issue items by "issueId|projectId": BatchGetItem calls of up to 100 keys, in parallel,
 *  unprocessed keys retried with a short backoff. */
async function loadIssues(keys) {
  const found = new Map();
  const chunks = [];
  for (let i = 0; i < keys.length; i += 100) chunks.push(keys.slice(i, i + 100));
  await Promise.all(
    chunks.map(async (chunk) => {
      let request = chunk.map((key) => {
        const [PK, SK] = key.split('|');
        return { PK, SK };
      });
      for (let attempt = 0; request.length > 0; attempt++) {
        if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(100, 2 ** attempt)));
        const out = await ddb.send(
          new BatchGetCommand({ RequestItems: { [TABLE]: { Keys: request } } }),
        );
        for (const item of out.Responses?.[TABLE] ?? []) {
          found.set(`${item.PK}|${item.SK}`, toIssue(item));
        }
        request = out.UnprocessedKeys?.[TABLE]?.Keys ?? [];
      }
    }),
  );
  return keys.map((key) => found.get(key) ?? null);
}

function createLoaders() {
  return {
    // Queries cannot be batched: one per project, run concurrently.
    project: new DataLoader((ids) => Promise.all(ids.map(loadProject))),
    issue: new DataLoader(loadIssues, { maxBatchSize: 100 }),
  };
}

// ---- paging ---------------------------------------------------------------------------

const encodeCursor = (scope, segment, pk, sk) =>
  Buffer.from(JSON.stringify({ v: 1, scope, s: segment, pk, sk })).toString('base64url');

function decodeCursor(cursor, scope) {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (c.v === 1 && c.scope === scope && Number.isInteger(c.s)) return c;
  } catch {
    // fall through
  }
  throw badInput('`after` is not a cursor of this list and ordering');
}

/** One page of a project's issues: keyset Queries of GSI1 segment by segment, size+1 rows
 *  to know hasNextPage. Each edge carries the issue item or its key. */
async function issuesPage(project, { first, after, orderBy }) {
  const size = first ?? 20;
  if (!Number.isInteger(size) || size < 1 || size > 100) throw badInput('`first` must be 1 to 100');
  const field = orderBy?.field ?? 'NUM';
  const forward = (orderBy?.direction ?? 'ASC') === 'ASC';
  const byNum = { partition: project.id, filterField: null };
  let segments;
  if (field === 'NUM') segments = [byNum];
  else if (field === 'NAME') segments = [{ partition: `${project.id}#name` }];
  else if (field === 'STATE') segments = [{ partition: `${project.id}#state` }];
  else {
    const id = orderBy.customFieldId;
    if (!id || !project.fields.some((f) => f.id === id)) {
      throw badInput('`customFieldId` is not a field of this project');
    }
    // Rows with a value, then the issues without one, by num.
    segments = [
      { partition: `xvalue-${id.slice('xattrib-'.length)}` },
      { ...byNum, filterField: id },
    ];
  }
  const scope = `${project.id}|${field}|${orderBy?.customFieldId ?? ''}|${forward ? 'ASC' : 'DESC'}`;
  const from = after ? decodeCursor(after, scope) : null;
  const want = size + 1;
  const rows = [];
  for (let s = from?.s ?? 0; s < segments.length && rows.length < want; s++) {
    const seg = segments[s];
    let start =
      from && from.s === s ? { PK: from.pk, SK: seg.partition, GSI1SK: from.sk } : undefined;
    let ask = 0;
    do {
      const needed = want - rows.length;
      // DynamoDB applies Limit before the filter: grow the reads of the filtered segment.
      ask = seg.filterField ? Math.max(ask * 4, needed * 4) : needed;
      const out = await ddb.send(
        new QueryCommand({
          TableName: TABLE,
          IndexName: GSI1,
          KeyConditionExpression: 'SK = :p',
          ExpressionAttributeValues: { ':p': seg.partition },
          ...(seg.filterField
            ? {
                FilterExpression: 'attribute_not_exists(#v.#f)',
                ExpressionAttributeNames: { '#v': 'Values', '#f': seg.filterField },
              }
            : {}),
          ScanIndexForward: forward,
          Limit: ask,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of out.Items ?? []) {
        if (rows.length === want) break;
        rows.push({
          cursor: encodeCursor(scope, s, item.PK, item.GSI1SK),
          issue: item.Type === 'Issue' ? toIssue(item) : null,
          key: `${item.PK}|${project.id}`,
        });
      }
      start = out.LastEvaluatedKey;
    } while (start && rows.length < want);
  }
  const hasNextPage = rows.length > size;
  const edges = rows.slice(0, size);
  return {
    edges,
    pageInfo: {
      hasNextPage,
      hasPreviousPage: Boolean(after),
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

// ---- resolvers --------------------------------------------------------------------------

const resolvers = {
  Query: {
    project: (_, { id }, { loaders }) =>
      id.startsWith('project-') ? loaders.project.load(id) : null,
  },
  Project: {
    customFields: (project) => project.fields,
    issues: async (project, args, { loaders }) => {
      const page = await issuesPage(project, args);
      // Rows read as issue items need no further call; let the loader know them.
      for (const edge of page.edges) {
        if (edge.issue) loaders.issue.prime(edge.key, edge.issue);
      }
      return page;
    },
  },
  IssueEdge: {
    node: (edge, _, { loaders }) => edge.issue ?? loaders.issue.load(edge.key),
  },
  Issue: {
    fieldValues: async (issue, _, { loaders }) => {
      const project = await loaders.project.load(issue.project);
      const out = [];
      for (const field of project?.fields ?? []) {
        const value = issue.values[field.id];
        if (value !== undefined) out.push({ value, field });
      }
      return out;
    },
  },
};

// ---- HTTP ---------------------------------------------------------------------------------

const apollo = new ApolloServer({ typeDefs, resolvers });
await apollo.start();

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

// A minimal integration (what `expressMiddleware` does, without Express): Apollo parses,
// validates and executes; this only moves bytes.
const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname === '/readyz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ready"}');
      return;
    }
    if (url.pathname !== '/graphql') {
      res.writeHead(404).end();
      return;
    }
    const headers = new HeaderMap();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const text = await readBody(req);
    let body;
    if (req.method === 'POST' && (headers.get('content-type') ?? '').includes('json')) {
      try {
        body = JSON.parse(text);
      } catch {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('body is not JSON');
        return;
      }
    }
    const response = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method, headers, search: url.search, body },
      context: async () => ({ loaders: createLoaders() }),
    });
    for (const [name, value] of response.headers) res.setHeader(name, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
    } else {
      for await (const chunk of response.body.asyncIterator) res.write(chunk);
      res.end();
    }
  } catch (e) {
    console.error(e);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});

server.listen(Number(args.port), args.host, () => {
  const { address, port } = server.address();
  console.error(`node gateway listening on http://${address}:${port}/graphql`);
});

const stop = () => {
  server.close();
  apollo.stop().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
