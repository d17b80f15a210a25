#!/usr/bin/env bash
# loadgen memory at 10,000 concurrent keep-alive connections: sessions mode,
# users arrive over a ramp, each sends one request and then thinks (idle)
# for longer than the run, holding its connection. Prints peak RSS (target
# < 150 MB) and the connections actually held.
# Env: USERS (10000), RAMP (3s), DURATION (s, default 8), PORT (18120).
set -euo pipefail
cd "$(dirname "$0")/.."
USERS=${USERS:-10000}
RAMP=${RAMP:-3s}
DURATION=${DURATION:-8}
PORT=${PORT:-18120}
LOADGEN=loadgen/target/release/loadgen
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 1; }
source bench/loadgen_nginx.sh
nginx_start "$PORT" 0
OUT=$(mktemp -d /tmp/loadgen-mem.XXXXXX)
trap 'nginx_stop; rm -rf "$OUT"' EXIT INT TERM

/usr/bin/time -f "%M" -o "$OUT/rss" taskset -c 1 "$LOADGEN" "http://127.0.0.1:$PORT/" \
    --users "$USERS" --ramp "$RAMP" --think 600s -d "${DURATION}s" --quiet --json "$OUT/mem.json" >/dev/null
python3 - "$OUT/mem.json" "$OUT/rss" "$USERS" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rss_mb = int(open(sys.argv[2]).read().split()[-1]) / 1024
held = max(b["active_connections"] for b in d["timeline"])
s = d["summary"]
print(f"users {sys.argv[3]}: peak connections held {held}, requests ok {s['ok']}, errors {s['errors']}")
print(f"loadgen peak RSS {rss_mb:.1f} MB (target < 150 MB): {'ok' if rss_mb < 150 else 'OVER'}")
PY
