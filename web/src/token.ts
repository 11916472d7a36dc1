// The bearer token of `--auth jwt`, kept in sessionStorage: the sign-in dialog sets it, and
// both the page's requests and the first paint's (see first.ts) send it.
const TOKEN_KEY = "gridgate.token";

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}
