// What the browser drivers (browser_pages.mjs, browser_grid.mjs) share: the headless
// Chromium's flags, which keep everything it does on this machine, and the test of an address
// they let through (everything else is blocked and reported).

/** Whether `url` may be reached: loopback, or data and blob URLs the page makes itself. */
export function isLoopback(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol === 'data:' || parsed.protocol === 'blob:') return true;
  const host = parsed.hostname;
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Chromium's flags: headless, no background traffic, and (belt and braces behind each
 * driver's request interception) names other than localhost do not resolve at all, so nothing
 * the browser itself starts can leave the machine. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
];
