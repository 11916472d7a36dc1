#!/usr/bin/env bash
# The web grid's figures in a real browser (issue 23's goals), reported, never asserted:
#   - when the first 50 rows of a 5,000-issue project are on screen after navigation
#     (median of LOADS fresh page loads; loopback, embedded store, release build);
#   - the GraphQL page requests of scrolling a 10,000-issue grid from top to bottom, against
#     the goal of at most 1.1 x ceil(10,000 / 100);
#   - the long tasks (over 50 ms, by PerformanceObserver "longtask") while scrolling;
#   - the page's JS plus CSS, gzipped.
#
#   bash benches/grid_browser.sh
#
# Needs Node.js, npm and Debian's chromium (as the browser tests do). Uses free loopback
# ports only; the server it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LOADS="${LOADS:-7}"
PLAYWRIGHT="${GRIDGATE_PLAYWRIGHT_HOME:-$PWD/target/playwright}/playwright-core-1.65.1"

die() { echo "error: $*" >&2; exit 1; }
[ -x /usr/bin/chromium ] || die "needs Debian's chromium (apt-get install chromium)"
if [ ! -d "$PLAYWRIGHT/node_modules/playwright-core" ]; then
    npm install --prefix "$PLAYWRIGHT" --ignore-scripts --no-audit --no-fund playwright-core@1.65.1 >/dev/null
fi

cargo build --release --quiet
BIN="$PWD/target/release/gridgate"
WORK="$(mktemp -d)"
SERVER=""
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

seed() {
    "$BIN" seed --synthetic --data-dir "$WORK/data" --projects 1 --issues "$1" --fields 8 --seed "$2" |
        sed -n 's/.*"project":"\([^"]*\)".*/\1/p'
}
P5K="$(seed 5000 5)"
P10K="$(seed 10000 10)"

"$BIN" serve --listen 127.0.0.1:0 --data-dir "$WORK/data" --no-demo 2>"$WORK/server.log" &
SERVER=$!
URL=""
for _ in $(seq 1 3000); do
    URL="$(sed -n 's|.*listening on \(http://[^ ]*\)/graphql$|\1|p' "$WORK/server.log" | head -n 1)"
    [ -n "$URL" ] && break
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/server.log" >&2; die "the server exited"; }
    sleep 0.01
done
[ -n "$URL" ] || die "the server did not start"

browse() {
    node tests/support/browser_grid.mjs "$1"
}

urls="$(for _ in $(seq 1 "$LOADS"); do printf '"/p/%s",' "$P5K"; done)"
cat >"$WORK/load.json" <<JSON
{"baseUrl": "$URL", "playwright": "$PLAYWRIGHT", "chromium": "/usr/bin/chromium",
 "stepTimeoutMs": 60000, "scenario": "load", "urls": [${urls%,}]}
JSON
cat >"$WORK/scroll.json" <<JSON
{"baseUrl": "$URL", "playwright": "$PLAYWRIGHT", "chromium": "/usr/bin/chromium",
 "stepTimeoutMs": 60000, "scenario": "scroll", "viewportHeight": 900, "urls": ["/p/$P10K"]}
JSON

browse "$WORK/load.json" >"$WORK/load.out"
browse "$WORK/scroll.json" >"$WORK/scroll.out"
js="$(gzip -9c assets/grid/grid.js | wc -c)"
first="$(gzip -9c assets/grid/first.js | wc -c)"
css="$(gzip -9c assets/grid/grid.css | wc -c)"

node - "$WORK/load.out" "$WORK/scroll.out" "$js" "$first" "$css" <<'NODE'
const fs = require('fs');
const [load, scroll] = [2, 3].map((i) => JSON.parse(fs.readFileSync(process.argv[i], 'utf8')));
for (const r of [load, scroll]) if (r.failure) { console.error(r.failure); process.exit(1); }
const times = load.result.map((r) => r.firstRowsMs).sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
const s = scroll.result[0];
const pages = s.operations.GridIssues ?? 0;
const long = s.longTasks.filter((d) => d > 50);
const [js, first, css] = [4, 5, 6].map((i) => Number(process.argv[i]));
console.log(`first 50 rows on screen (5,000 issues): median ${median.toFixed(0)} ms over ${times.length} loads (min ${times[0].toFixed(0)}, max ${times[times.length - 1].toFixed(0)}); goal <= 300 ms`);
console.log(`scroll 10,000 issues: ${s.rows.length} rows in ${(s.scrollMs / 1000).toFixed(1)} s, ${pages} page requests (goal <= ${Math.ceil(1.1 * Math.ceil(10000 / 100))}), every row once: ${s.duplicates.length === 0 && s.rows.length === 10000}`);
console.log(`long tasks while scrolling: ${s.longTasks.length} in all, ${long.length} over 50 ms${long.length ? ` (max ${Math.max(...long).toFixed(0)} ms)` : ''}`);
console.log(`page weight: grid.js ${js} B + first.js ${first} B + grid.css ${css} B gzipped = ${((js + first + css) / 1024).toFixed(1)} KiB (goal <= 350 KB)`);
NODE
