// The GraphQL client of the grid page: Apollo Client over `/graphql`, the bearer token kept in
// sessionStorage, and the cache's type policies. Pages of issues merge with Apollo's own
// `relayStylePagination`, keyed by the order and the filter, and split into "head" lists
// (read forward from the top with `first`/`after`) and "tail" lists (read backward from the
// end with `last`/`before`), so that jumping to the end of a long grid does not throw away
// what was read from the top, each in chunks of a few pages (`rows.ts` says why). Mutation payloads carry the edited issue, which the cache
// normalises by id: an edit updates every list that shows the issue without a refetch.
import { ApolloClient, ApolloError, ApolloLink, HttpLink, InMemoryCache } from "@apollo/client";
import type { FetchResult } from "@apollo/client";
import { cacheSizes, Observable, print, relayStylePagination } from "@apollo/client/utilities";
import type { ObservableSubscription } from "@apollo/client/utilities";
import { takePrefetched } from "./handoff";
import { CELLS } from "./queries";

// The cache memoises each issue and each edge it reads; its default bounds (50,000 selection
// sets, 10,000 arrays) are smaller than a grid scrolled through 25,000 issues holds, and past
// them every page read the whole list again, evicting and recomputing as it went (seconds per
// page at 10,000 rows, when each issue's cells were memoised too). The bounds only cap what
// was read. (What they hold of rows the grid has released stays until newer reads push it
// out: the page's heap still grows with the rows scrolled through, though more slowly than
// the cache's, which the grid bounds; see rows.ts.)
cacheSizes["inMemoryCache.executeSelectionSet"] = 2_000_000;
cacheSizes["inMemoryCache.executeSubSelectedArray"] = 1_000_000;

import { token } from "./token";

export { setToken, token } from "./token";

/** Fired when the server answers 401: the sign-in dialog listens for it. */
export const SIGN_IN_EVENT = "gridgate:sign-in";

/** Whether a 401 came before anything listened: the page's first requests leave before React
 * renders the sign-in dialog (see `startGridPage`), so their 401 must wait for it. */
let signInPending = false;

/** Whether a 401 is waiting for the sign-in dialog; asking clears it. */
export function takeSignInRequest(): boolean {
  const pending = signInPending;
  signInPending = false;
  return pending;
}

/** `fetch` with the bearer token, raising the sign-in dialog on 401. */
export async function authFetch(input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const bearer = token();
  if (bearer) headers.set("Authorization", `Bearer ${bearer}`);
  const response = await fetch(input, { ...init, headers });
  if (response.status === 401) {
    signInPending = true;
    window.dispatchEvent(new CustomEvent(SIGN_IN_EVENT));
  }
  return response;
}

/** A variable of the page's own, never sent: which chunk of a list a request reads (see
 * `rows.ts`). The cache keys each chunk apart, so a page arriving re-reads its chunk only. */
export const CHUNK = "gridChunk";

/** Which list of a connection a request extends: the head or tail (see the module comment),
 * and its chunk. */
function end(args: Record<string, unknown> | null, variables: Record<string, unknown> | undefined): string {
  return `${args && args.last != null ? "tail" : "head"}:${Number(variables?.[CHUNK] ?? 0)}`;
}

/** The start of the name a list of a project's issues is kept under in the cache: its order
 * and filter (the end and chunk follow). */
function projectListPrefix(args: Record<string, unknown> | null): string {
  return `issues:${JSON.stringify({ orderBy: args?.orderBy ?? null, filter: args?.filter ?? null })}:`;
}

/** The entity holding a grid's lists (a project's issues under an order and a filter, or a
 * view's), and the start of their names in the cache (`<prefix>head:<chunk>`,
 * `<prefix>tail:<chunk>`), from the variables every page of the grid shares. */
export function listsOf(variables: Record<string, unknown>): { id: string | undefined; prefix: string } {
  return variables.view != null
    ? { id: client.cache.identify({ __typename: "View", id: variables.view as string }), prefix: "issues:" }
    : { id: client.cache.identify({ __typename: "Project", id: variables.id as string }), prefix: projectListPrefix(variables) };
}

/** Where the cache keeps the list of the chunk whose first page `variables` ask for: the
 * entity and the field's name, to drop it (see rows.ts). */
export function chunkList(variables: Record<string, unknown>): { id: string | undefined; name: string } {
  const { id, prefix } = listsOf(variables);
  return { id, name: `${prefix}${end(variables, variables)}` };
}

/** Drops the page's own variables before a request leaves. */
const serverVariablesOnly = new ApolloLink((operation, forward) => {
  if (CHUNK in operation.variables) {
    const { [CHUNK]: _chunk, ...rest } = operation.variables;
    operation.variables = rest;
  }
  return forward(operation);
});

/** Answers a request the first paint already sent with its answer (see handoff.ts). */
const firstPaintAnswers = new ApolloLink((operation, forward) => {
  const taken = takePrefetched(operation.operationName, print(operation.query), operation.variables);
  if (!taken) return forward(operation);
  return new Observable<FetchResult>((observer) => {
    let closed = false;
    let asked: ObservableSubscription | null = null;
    void taken.then((result) => {
      if (closed) return;
      if (result) {
        observer.next(result as FetchResult);
        observer.complete();
      } else {
        asked = forward(operation).subscribe(observer);
      }
    });
    return () => {
      closed = true;
      asked?.unsubscribe();
    };
  });
});

export const client = new ApolloClient({
  link: ApolloLink.from([serverVariablesOnly, firstPaintAnswers, new HttpLink({ uri: "/graphql", fetch: authFetch })]),
  cache: new InMemoryCache({
    typePolicies: {
      Project: {
        fields: {
          issues: relayStylePagination((args, { variables }) => `${projectListPrefix(args)}${end(args, variables)}`),
          customFields: { merge: false },
          views: { merge: false },
        },
      },
      View: {
        fields: {
          issues: relayStylePagination((args, { variables }) => `issues:${end(args, variables)}`),
          orderBy: { merge: false },
        },
      },
      // Cells are flat (`fieldValues { value fieldId }`): a page's 800 cells are written and
      // read on every page, and a nested `field { id }` object per cell made each page's
      // cache work about half as long again, past 50 ms (a long task) once a list was long.
      Issue: {
        fields: {
          fieldValues: { merge: false },
          // The rows read the stored cells as one value (see `ROWS_READ` in queries.ts).
          // Missing cells read as missing (undefined), so a partly cached issue is not taken
          // for a whole one.
          [CELLS]: { read: (_, { readField }) => readField("fieldValues") },
        },
      },
      // A field is kept inside what holds it, not as an entity of its own: merging each
      // page's cells into their fields' entities was a third of a page's time in the cache.
      // The page reads fields from `project { customFields }` and reads that again after a
      // change.
      CustomField: { keyFields: false, fields: { options: { merge: false } } },
      Tenant: { fields: { projects: relayStylePagination() } },
      Query: { fields: { tenants: relayStylePagination() } },
    },
  }),
});

/** The `extensions.code` of a GraphQL error, if the failure is one. */
export function errorCode(error: unknown): string | undefined {
  if (error instanceof ApolloError) {
    const first = error.graphQLErrors[0];
    const code = first?.extensions?.code;
    return typeof code === "string" ? code : undefined;
  }
  return undefined;
}

/** A message fit to show: the server's own message for a GraphQL error. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApolloError) {
    if (error.graphQLErrors.length > 0) return error.graphQLErrors.map((e) => e.message).join("; ");
    if (error.networkError) {
      const status = (error.networkError as { statusCode?: number }).statusCode;
      return status === 401 ? "Sign in to continue." : `The server could not be reached (${error.networkError.message}).`;
    }
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

/** The `extensions` of the first GraphQL error, for codes that carry data (VIEW_BUILDING). */
export function errorExtensions(error: unknown): Record<string, unknown> | undefined {
  if (error instanceof ApolloError) return error.graphQLErrors[0]?.extensions as Record<string, unknown> | undefined;
  return undefined;
}
