#!/usr/bin/env bash
# Healthy under attack: the grid page's latency and the server's memory, without and with
# hostile clients sending fragment bombs, nested connections, 1,000 aliases and oversized
# documents. Loopback only; embedded store with the demo data.
#
#   bash benches/attack.sh [seconds] [grid workers] [attackers]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SECONDS_PER_RUN="${1:-10}"
WORKERS="${2:-4}"
ATTACKERS="${3:-8}"

cargo build --release --quiet --bin gridgate --example loadgen
DATA="$(mktemp -d)"
PORT_FILE="$(mktemp)"
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$DATA" "$PORT_FILE"' EXIT
RUST_LOG=warn ./target/release/gridgate serve --listen 127.0.0.1:0 --data-dir "$DATA" 2>"$PORT_FILE" &
SERVER=$!
for _ in $(seq 1 100); do
    # The line may arrive in pieces: wait for all of it.
    grep -q "listening on http://.*/graphql$" "$PORT_FILE" && break
    sleep 0.1
done
URL="$(sed -n 's/.*listening on //p' "$PORT_FILE" | head -n 1)"
rss() { awk '/VmRSS/ {print $2 " kB"}' "/proc/$SERVER/status"; }
hwm() { awk '/VmHWM/ {print $2 " kB"}' "/proc/$SERVER/status"; }

load() { ./target/release/examples/loadgen --url "$URL" --order NAME --concurrency "$WORKERS" --seconds "$SECONDS_PER_RUN" "$@"; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
load >/dev/null    # warm-up
echo "RSS before: $(rss)"
echo "grid alone:       $(load)"
echo "RSS after grid alone: $(rss)"
echo "grid under attack: $(load --attack "$ATTACKERS" | tr '\n' ' ')"
echo "RSS right after the attack: $(rss) (peak so far $(hwm))"
load >/dev/null
echo "grid after attack: $(load)"
echo "RSS after: $(rss)"
