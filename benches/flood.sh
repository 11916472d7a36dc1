#!/usr/bin/env bash
# Issue 20's flood: one tenant floods the server with its most expensive admitted query on
# many connections while another tenant sends cheap requests at a modest, steady rate. Reports
# the other tenant's latency (p50, p99) and refusals with and without the flood, and how the
# flood itself was answered. The goal: the other tenant gets no 429 and no 503.
#
#   bash benches/flood.sh                       # 20 s without, 20 s with the flood
#   FLOOD_SECONDS=5 SKIP_BUILD=1 bash benches/flood.sh
#
# Knobs (environment): FLOOD_SECONDS, FLOOD_CONNECTIONS (400), VICTIM_CONNECTIONS (2),
# VICTIM_DELAY_MS (20: each victim connection waits this long between requests), ISSUES,
# FIELDS, SERVE_FLAGS (extra `gridgate serve` flags, e.g. "--tenant-max-in-flight 16"),
# SKIP_BUILD=1 (use target/release as it is).
#
# The server runs on the embedded store, where every request is CPU work on the same 2 cores
# as wrk: the strictest case for sharing, since nothing waits on a network. Needs cargo; installs
# wrk and jq with apt-get when missing. Loopback only, free ports only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

FLOOD_SECONDS="${FLOOD_SECONDS:-20}"
FLOOD_CONNECTIONS="${FLOOD_CONNECTIONS:-400}"
VICTIM_CONNECTIONS="${VICTIM_CONNECTIONS:-2}"
VICTIM_DELAY_MS="${VICTIM_DELAY_MS:-20}"
ISSUES="${ISSUES:-5000}"
FIELDS="${FIELDS:-8}"
SECRET="flood-benchmark-secret-flood-benchmark-secret"
OUT_DIR="$ROOT/target/bench-flood"

log() { printf '[flood %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_apt=()
for tool in wrk jq curl; do command -v "$tool" >/dev/null || need_apt+=("$tool"); done
if [ "${#need_apt[@]}" -gt 0 ]; then
    log "installing ${need_apt[*]} (apt-get)"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null 2>&1 \
        || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null; }
fi

GRIDGATE="$ROOT/target/release/gridgate"
if [ "${SKIP_BUILD:-0}" = 1 ]; then
    [ -x "$GRIDGATE" ] || die "SKIP_BUILD=1 but there is no target/release/gridgate"
else
    log "building gridgate (release)"
    cargo build --release --quiet --bin gridgate
fi
cp "$GRIDGATE" "$WORK/gridgate"
GRIDGATE="$WORK/gridgate"

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
CLK_TCK="$(getconf CLK_TCK)"

# ---- two tenants, one project each ----------------------------------------------------------

DATA="$WORK/data"
STORE=(--store embedded --data-dir "$DATA")
mkdir -p "$DATA"
RUST_LOG=warn "$GRIDGATE" table create "${STORE[@]}" >/dev/null
seed() { RUST_LOG=warn "$GRIDGATE" seed --synthetic --projects 1 --issues "$ISSUES" --fields "$FIELDS" --seed "$1" "${STORE[@]}"; }
FLOODER="$(seed 1)"
VICTIM="$(seed 2)"
FLOODER_TENANT="$(jq -r .tenant <<<"$FLOODER")"; FLOODER_PROJECT="$(jq -r .project <<<"$FLOODER")"
VICTIM_TENANT="$(jq -r .tenant <<<"$VICTIM")"; VICTIM_PROJECT="$(jq -r .project <<<"$VICTIM")"
log "seeded $FLOODER_TENANT/$FLOODER_PROJECT (flooder) and $VICTIM_TENANT/$VICTIM_PROJECT (victim), $ISSUES issues × $FIELDS fields each"

token() { GRIDGATE_JWT_SECRET="$SECRET" "$GRIDGATE" token --tenant "$1" --scope "grid:read" --ttl 3600; }
FLOODER_AUTH="Bearer $(token "$FLOODER_TENANT")"
VICTIM_AUTH="Bearer $(token "$VICTIM_TENANT")"

# ---- the server -------------------------------------------------------------------------------

# shellcheck disable=SC2086
RUST_LOG=warn GRIDGATE_JWT_SECRET="$SECRET" "$GRIDGATE" serve --listen 127.0.0.1:0 --no-demo --auth jwt \
    "${STORE[@]}" ${SERVE_FLAGS:-} 2>"$WORK/server.log" >/dev/null </dev/null &
SERVER_PID=$!; PIDS+=("$SERVER_PID")
URL=""
for _ in $(seq 1 3000); do
    URL="$(sed -n 's|.*listening on \(http://[^ ]*/graphql\)$|\1|p' "$WORK/server.log" | head -n 1)"
    [ -n "$URL" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "the server exited"; }
    sleep 0.01
done
[ -n "$URL" ] || die "the server did not print its address"
log "serving $URL ($(tr '\n' ' ' <<<"${SERVE_FLAGS:-default shares}"))"

ask() { curl -s -H 'content-type: application/json' -H "authorization: $1" -d "$2" "$URL"; }
FIELD="$(ask "$FLOODER_AUTH" "{\"query\":\"{ project(id: \\\"$FLOODER_PROJECT\\\") { customFields { id type } } }\"}" \
    | jq -r '[.data.project.customFields[] | select(.type == "INT")][0].id')"

# The flooder's most expensive admitted query: two 100-row pages (by a custom field and by
# name) with every cell, the columns and the cursors.
PAGE='edges { cursor node { id num name state version fieldValues { field { id } value } } } pageInfo { hasNextPage endCursor }'
FLOOD_QUERY="query Flood(\$p: ID!, \$f: ID!) { project(id: \$p) { name customFields { id name type position } a: issues(first: 100, orderBy: {field: CUSTOM_FIELD, customFieldId: \$f}) { $PAGE } b: issues(first: 100, orderBy: {field: NAME, direction: DESC}) { $PAGE } } }"
jq -n --arg q "$FLOOD_QUERY" --arg p "$FLOODER_PROJECT" --arg f "$FIELD" \
    '{query: $q, variables: {p: $p, f: $f}}' >"$WORK/flood.json"
check="$(curl -s -H 'content-type: application/json' -H "authorization: $FLOODER_AUTH" --data-binary @"$WORK/flood.json" "$URL")"
[ "$(jq '.errors == null and (.data.project.a.edges | length) == 100' <<<"$check")" = true ] \
    || die "the flood query is not admitted: $(head -c 400 <<<"$check")"
log "flood query: $(jq -c '.extensions.cost' <<<"$check"), $(wc -c <<<"$check") bytes per answer"
# The victim's cheap request: its project's name and a 20-row page by num.
jq -n --arg p "$VICTIM_PROJECT" \
    '{query: "query Cheap($p: ID!) { project(id: $p) { name issues(first: 20) { nodes { num name } } } }", variables: {p: $p}}' \
    >"$WORK/victim.json"

run_wrk() {  # connections seconds body authorization delay_ms
    WRK_BODY_FILE="$3" WRK_AUTHORIZATION="$4" WRK_DELAY_MS="$5" \
        wrk -t1 -c"$1" -d"$2s" --timeout 10s -s "$ROOT/benches/wrk_flood.lua" "$URL" | tail -n 1
}

log "victim alone: $VICTIM_CONNECTIONS connections, ${VICTIM_DELAY_MS} ms apart, ${FLOOD_SECONDS} s"
ALONE="$(run_wrk "$VICTIM_CONNECTIONS" "$FLOOD_SECONDS" "$WORK/victim.json" "$VICTIM_AUTH" "$VICTIM_DELAY_MS")"

log "victim under the flood: $FLOOD_CONNECTIONS flooding connections"
cpu_before="$(cpu_ticks "$SERVER_PID")"
run_wrk "$FLOOD_CONNECTIONS" "$((FLOOD_SECONDS + 2))" "$WORK/flood.json" "$FLOODER_AUTH" 0 >"$WORK/flood.out" &
FLOOD_PID=$!
sleep 1   # the flood's connections are up before the victim starts
FLOODED="$(run_wrk "$VICTIM_CONNECTIONS" "$FLOOD_SECONDS" "$WORK/victim.json" "$VICTIM_AUTH" "$VICTIM_DELAY_MS")"
wait "$FLOOD_PID"
FLOOD="$(cat "$WORK/flood.out")"
cpu_used=$(( $(cpu_ticks "$SERVER_PID") - cpu_before ))

ms() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000 }'; }
row() {  # label json
    local j="$2"
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" \
        "$(jq '.requests' <<<"$j")" \
        "$(ms "$(jq '.p50_us' <<<"$j")")" "$(ms "$(jq '.p99_us' <<<"$j")")" \
        "$(jq '.statuses["200"] // 0' <<<"$j")" "$(jq '.statuses["429"] // 0' <<<"$j")" \
        "$(jq '.statuses["503"] // 0' <<<"$j")"
}
mkdir -p "$OUT_DIR"
REPORT="$OUT_DIR/$(date -u +%Y%m%dT%H%M%SZ).md"
{
    echo "Flood of issue 20, $(date -u '+%Y-%m-%d %H:%M UTC'), gridgate $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), embedded store, ${FLOOD_SECONDS} s per phase; server flags: ${SERVE_FLAGS:-defaults}"
    echo
    echo "| requests | sent | p50 ms | p99 ms | 200 | 429 | 503 |"
    echo "|---|---|---|---|---|---|---|"
    row "victim alone" "$ALONE"
    row "victim under the flood" "$FLOODED"
    row "flooder ($FLOOD_CONNECTIONS connections)" "$FLOOD"
    echo
    echo "Server CPU during the flood: $(awk -v t="$cpu_used" -v hz="$CLK_TCK" -v s="$((FLOOD_SECONDS + 2))" 'BEGIN { printf "%.2f cores", t / hz / s }')."
} | tee "$REPORT"
log "saved $REPORT"
victim_refused="$(jq '(.statuses["429"] // 0) + (.statuses["503"] // 0)' <<<"$FLOODED")"
[ "$victim_refused" = 0 ] || die "the victim was refused $victim_refused times under the flood"
