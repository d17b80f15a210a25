#!/usr/bin/env bash
# loadgen vs wrk against nginx (`return 200 "Hello, World!"`, 1 worker pinned
# to CPU 0). Each client is pinned to CPU 1 in turn, same connections,
# duration, keep-alive and 1 thread; ROUNDS rounds each. Prints the median
# requests/s of both, the ratio loadgen/wrk, and client CPU-seconds per 100k
# requests (user+sys of the client process, from /usr/bin/time).
# Env: DURATION (s, default 10), ROUNDS (default 3), CONNECTIONS (50), PORT (18100).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-50}
PORT=${PORT:-18100}
LOADGEN=loadgen/target/release/loadgen
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 1; }
source bench/loadgen_nginx.sh
nginx_start "$PORT" 0
URL="http://127.0.0.1:$PORT/"
OUT=$(mktemp -d /tmp/loadgen-vs-wrk.XXXXXX)
trap 'nginx_stop; rm -rf "$OUT"' EXIT INT TERM

# prints "requests cpu_seconds"
run_wrk() {
    /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$URL" >"$OUT/wrk.txt"
    local req cpu
    req=$(awk '/requests in/ {print $1}' "$OUT/wrk.txt")
    cpu=$(awk '{print $1 + $2}' "$OUT/time")
    echo "$req $cpu"
}
run_loadgen() {
    /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c 1 "$LOADGEN" "$URL" -t 1 -c "$CONNECTIONS" -d "${DURATION}s" \
        --quiet --json "$OUT/lg.json" >/dev/null
    local req cpu
    req=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["responses"])' "$OUT/lg.json")
    cpu=$(awk '{print $1 + $2}' "$OUT/time")
    echo "$req $cpu"
}

: >"$OUT/wrk.rows"; : >"$OUT/lg.rows"
for r in $(seq 1 "$ROUNDS"); do
    w=$(run_wrk); echo "$w" >>"$OUT/wrk.rows"
    l=$(run_loadgen); echo "$l" >>"$OUT/lg.rows"
    echo "round $r: wrk $(echo "$w" | awk -v d="$DURATION" '{printf "%.0f req/s, %.2f cpu-s", $1/d, $2}')  loadgen $(echo "$l" | awk -v d="$DURATION" '{printf "%.0f req/s, %.2f cpu-s", $1/d, $2}')"
done

python3 - "$OUT/wrk.rows" "$OUT/lg.rows" "$DURATION" <<'PY'
import statistics, sys
d = float(sys.argv[3])
def load(p):
    rows = [tuple(map(float, l.split())) for l in open(p) if l.strip()]
    rps = statistics.median(r[0] / d for r in rows)
    cpu = statistics.median(r[1] / r[0] * 1e5 for r in rows)
    return rps, cpu
w_rps, w_cpu = load(sys.argv[1]); l_rps, l_cpu = load(sys.argv[2])
print(f"wrk      median {w_rps:10.0f} req/s   {w_cpu:.3f} client cpu-s per 100k requests ({w_cpu*10:.2f} µs/request)")
print(f"loadgen  median {l_rps:10.0f} req/s   {l_cpu:.3f} client cpu-s per 100k requests ({l_cpu*10:.2f} µs/request)")
print(f"ratio loadgen/wrk  {l_rps / w_rps:.3f} (target >= 1.0);  cpu per request loadgen/wrk {l_cpu / w_cpu:.3f} (target <= 1.0)")
PY
