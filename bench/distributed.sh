#!/usr/bin/env bash
# What sharding costs: one loadgen process vs two shards (`--shard 0/2`, `--shard 1/2`, one
# `--start-at` instant), all on CPU 1, against the throw-away nginx (1 worker pinned to CPU 0),
# same total connections and duration. ROUNDS alternating rounds (the order flips each round).
# Prints each round, the median req/s of both, the median client CPU per request (user+sys of
# every loadgen process, from /usr/bin/time) and the ratio two/one (target: <= 1.05).
# Measures loadgen's shard mode itself: Dask's dispatch (harness side) is not in these figures.
# The 30,000-connection part of the issue is not here yet.
# Env: DURATION (s, default 5), ROUNDS (default 5), CONNECTIONS (50), PORT (18130).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-5}
CONNECTIONS=${CONNECTIONS:-50}
PORT=${PORT:-18130}
LOADGEN=${LOADGEN:-loadgen/target/release/loadgen}
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 1; }
source bench/loadgen_nginx.sh
nginx_start "$PORT" 0
URL="http://127.0.0.1:$PORT/"
OUT=$(mktemp -d /tmp/distributed-bench.XXXXXX)
trap 'nginx_stop; rm -rf "$OUT"' EXIT INT TERM

responses() { python3 -c 'import json,sys; print(sum(json.load(open(f))["summary"]["responses"] for f in sys.argv[1:]))' "$@"; }
cpu() { awk '{s += $1 + $2} END {print s}' "$@"; }

# prints "responses client_cpu_s"
run_one() {
    /usr/bin/time -f "%U %S" -o "$OUT/t0" taskset -c 1 "$LOADGEN" "$URL" -t 1 -c "$CONNECTIONS" -d "${DURATION}s" \
        --quiet --json "$OUT/one.json" >/dev/null
    echo "$(responses "$OUT/one.json") $(cpu "$OUT/t0")"
}
run_two() {
    local at pids=()
    at=$(python3 -c 'import time; print(f"{time.time() + 0.5:.6f}")')
    for i in 0 1; do
        /usr/bin/time -f "%U %S" -o "$OUT/t$i" taskset -c 1 "$LOADGEN" "$URL" -t 1 -c "$CONNECTIONS" \
            -d "${DURATION}s" --shard "$i/2" --start-at "$at" --quiet --json "$OUT/s$i.json" >/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
    echo "$(responses "$OUT/s0.json" "$OUT/s1.json") $(cpu "$OUT/t0" "$OUT/t1")"
}

: >"$OUT/one"; : >"$OUT/two"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then a=$(run_one); b=$(run_two); else b=$(run_two); a=$(run_one); fi
    echo "$a" >>"$OUT/one"; echo "$b" >>"$OUT/two"
    echo "round $r: one $(echo "$a" | awk -v d="$DURATION" '{printf "%.0f req/s %.2f µs/req", $1/d, $2/$1*1e6}')" \
         "  two shards $(echo "$b" | awk -v d="$DURATION" '{printf "%.0f req/s %.2f µs/req", $1/d, $2/$1*1e6}')"
done
python3 - "$DURATION" "$OUT" <<'PY'
import statistics, sys
d, out = float(sys.argv[1]), sys.argv[2]
res = {}
for k in ("one", "two"):
    rows = [tuple(map(float, l.split())) for l in open(f"{out}/{k}") if l.strip()]
    rows = [r for r in rows if r[0] > 0]
    res[k] = (statistics.median(r[0] / d for r in rows), statistics.median(r[1] / r[0] * 1e6 for r in rows))
    print(f"{k:>4}: median {res[k][0]:9.0f} req/s   client {res[k][1]:5.2f} µs/request")
print(f"ratio two shards / one process: req/s {res['two'][0] / res['one'][0]:.3f}   "
      f"client cpu/request {res['two'][1] / res['one'][1]:.3f} (target <= 1.05)")
PY
