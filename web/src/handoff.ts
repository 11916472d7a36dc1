// What the first paint hands to the page. first.js (built from first.ts) sends the grid's
// first two requests as soon as the HTML is read, paints their rows, and only then loads the
// page's script (grid.js); the page's Apollo link (api.ts) takes those answers instead of
// asking again, so the first paint costs the server nothing. Both scripts share this state
// through one global, since they are separate bundles.

/** A request the first paint sent, by operation name, document and variables. */
interface Prefetched {
  operationName: string;
  query: string;
  variables: string;
  /** The body of an HTTP 200 answer (GraphQL errors included: the page handles them as its
   * own), else null (no answer, or another status): the page then asks again and handles the
   * failure itself (a 401 raises the sign-in dialog). */
  result: Promise<Record<string, unknown> | null>;
}

interface Handoff {
  prefetched: Prefetched[];
  /** The first paint put rows on screen; the page keeps them until its own are ready. */
  painted: boolean;
  /** The page's script has started: the first paint must not touch the page any more. */
  started: boolean;
  /** The page has taken what it will take: later requests are the page's own, never these
   * answers (a later request with the same variables must reach the server). */
  closed: boolean;
}

declare global {
  interface Window {
    __gridgate?: Handoff;
  }
}

export function handoff(): Handoff {
  window.__gridgate ??= { prefetched: [], painted: false, started: false, closed: false };
  return window.__gridgate;
}

/** JSON with object keys sorted, so that equal variables compare equal however built. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** Sends a GraphQL request now, for the page to take later (see `takePrefetched`). */
export function prefetch(
  operationName: string,
  query: string,
  variables: Record<string, unknown>,
  bearer: string | null,
): Promise<Record<string, unknown> | null> {
  const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "application/json" };
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  const result = fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ operationName, query, variables }) })
    .then((response) => (response.ok ? (response.json() as Promise<Record<string, unknown>>) : null))
    .catch(() => null);
  handoff().prefetched.push({ operationName, query, variables: canonical(variables), result });
  return result;
}

/** The answer to a request the first paint already sent, taken once; null when it sent no
 * such request. A request of the same name and variables with another document is a bug
 * (the first paint would have cost a request for nothing): it is reported on the console. */
export function takePrefetched(
  operationName: string | undefined,
  query: string,
  variables: Record<string, unknown>,
): Promise<Record<string, unknown> | null> | null {
  if (handoff().closed) return null;
  const list = handoff().prefetched;
  const key = canonical(variables);
  const index = list.findIndex((p) => p.operationName === operationName && p.variables === key);
  if (index < 0) return null;
  const [taken] = list.splice(index, 1);
  if (taken.query !== query) {
    console.error(`The first paint's ${operationName} document is not the page's: the request is sent again.`);
    return null;
  }
  return taken.result;
}

/** Ends the handoff: answers the page did not take are reported on the console (each cost the
 * server a request for nothing, which is a bug) and dropped. */
export function closeHandoff(): void {
  const state = handoff();
  state.closed = true;
  for (const left of state.prefetched) console.error(`The page did not take the first paint's ${left.operationName} answer.`);
  state.prefetched = [];
}
