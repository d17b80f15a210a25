#!/usr/bin/env bash
# What sharding costs: one loadgen process vs two shards (`--shard 0/2`, `--shard 1/2`, one
# `--start-at` instant), all on CPU 1, against the throw-away nginx (1 worker pinned to CPU 0),
# same total connections and duration. ROUNDS alternating rounds (the order flips each round).
# Prints each round, the median req/s of both, the median client CPU per request (user+sys of
# every loadgen process, from /usr/bin/time) and the ratio two/one (target: <= 1.05), and the
# context switches per 1,000 requests of both (two processes on one CPU switch between them).
# Measures loadgen's shard mode itself: Dask's dispatch (harness side) is not in these figures.
# Then HELD (30,000) keep-alive connections held through two shards, more than one process may
# open here (the hard open-files limit is 20,000), as session users (one connection each, a
# request every THINK) against an nginx with two workers on two ports (one destination has only
# ~28,000 ephemeral ports); prints what each shard held and its peak RSS.
# Env: DURATION (s, default 5), ROUNDS (default 5), CONNECTIONS (50), PORT (18130),
#      HELD (30000, 0 = skip), HOLD_S (15), THINK (5s).
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
switches() { awk '{s += $3 + $4} END {print s}' "$@"; }

# prints "responses client_cpu_s context_switches"
run_one() {
    /usr/bin/time -f "%U %S %c %w" -o "$OUT/t0" taskset -c 1 "$LOADGEN" "$URL" -t 1 -c "$CONNECTIONS" \
        -d "${DURATION}s" --quiet --json "$OUT/one.json" >/dev/null
    echo "$(responses "$OUT/one.json") $(cpu "$OUT/t0") $(switches "$OUT/t0")"
}
run_two() {
    local at pids=()
    at=$(python3 -c 'import time; print(f"{time.time() + 0.5:.6f}")')
    for i in 0 1; do
        /usr/bin/time -f "%U %S %c %w" -o "$OUT/t$i" taskset -c 1 "$LOADGEN" "$URL" -t 1 -c "$CONNECTIONS" \
            -d "${DURATION}s" --shard "$i/2" --start-at "$at" --quiet --json "$OUT/s$i.json" >/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
    echo "$(responses "$OUT/s0.json" "$OUT/s1.json") $(cpu "$OUT/t0" "$OUT/t1") $(switches "$OUT/t0" "$OUT/t1")"
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
    res[k] = (statistics.median(r[0] / d for r in rows), statistics.median(r[1] / r[0] * 1e6 for r in rows),
              statistics.median(r[2] / r[0] * 1e3 for r in rows))
    print(f"{k:>4}: median {res[k][0]:9.0f} req/s   client {res[k][1]:5.2f} µs/request   "
          f"{res[k][2]:6.1f} context switches per 1,000 requests")
print(f"ratio two shards / one process: req/s {res['two'][0] / res['one'][0]:.3f}   "
      f"client cpu/request {res['two'][1] / res['one'][1]:.3f} (target <= 1.05)")
PY

HELD=${HELD:-30000}
[ "$HELD" -gt 0 ] || exit 0
HOLD_S=${HOLD_S:-15}
THINK=${THINK:-5s}
nginx_stop
NGINX_DIR=$(mktemp -d /tmp/distributed-nginx.XXXXXX)
mkdir -p "$NGINX_DIR/logs"
# reuseport spreads connections over the two workers unevenly: room for 60 % each, within the
# 20,000 hard open-files limit of this machine
PER=$(( HELD * 6 / 10 )); [ "$PER" -le 19000 ] || PER=19000
cat >"$NGINX_DIR/nginx.conf" <<CONF
worker_processes 2;
daemon off;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/logs/error.log warn;
worker_rlimit_nofile $(( PER + 500 ));
events { worker_connections $PER; multi_accept on; }
http {
    access_log off;
    keepalive_requests 1000000000;
    keepalive_timeout 600s;
    client_body_temp_path $NGINX_DIR/tmp_body;
    proxy_temp_path $NGINX_DIR/tmp_proxy;
    fastcgi_temp_path $NGINX_DIR/tmp_fcgi;
    uwsgi_temp_path $NGINX_DIR/tmp_uwsgi;
    scgi_temp_path $NGINX_DIR/tmp_scgi;
    server {
        listen 127.0.0.1:$PORT backlog=16384 reuseport;
        listen 127.0.0.1:$((PORT + 1)) backlog=16384 reuseport;
        location / { default_type text/plain; return 200 "Hello, World!"; }
    }
}
CONF
taskset -c 0 nginx -p "$NGINX_DIR" -e "$NGINX_DIR/logs/error.log" -c "$NGINX_DIR/nginx.conf" &
NGINX_PID=$!
sleep 1
at=$(python3 -c 'import time; print(f"{time.time() + 0.5:.6f}")')
pids=()
for i in 0 1; do
    /usr/bin/time -f "%M %U %S" -o "$OUT/h$i" taskset -c 1 "$LOADGEN" "http://127.0.0.1:$((PORT + i))/" -t 1 \
        --users "$HELD" --ramp 5s --think "$THINK" -d "${HOLD_S}s" --timeout 30s --connect-timeout 20s \
        --shard "$i/2" --start-at "$at" --quiet --json "$OUT/h$i.json" >/dev/null &
    pids+=($!)
done
wait "${pids[@]}"
python3 - "$OUT" "$HELD" <<'PY'
import json, sys
out, held = sys.argv[1], int(sys.argv[2])
total = 0
for i in (0, 1):
    d = json.load(open(f"{out}/h{i}.json"))
    rss_kib, usr, sys_ = open(f"{out}/h{i}").read().split()[:3]
    s = d["summary"]
    last = max((t.get("active_connections") or 0) for t in d["timeline"][-3:]) if d["timeline"] else 0
    total += s["connections_opened"]
    print(f"shard {i}/2: {s['connections_opened']} connections established, {last} active at the end "
          f"(established or connecting), {s['ok']} ok, "
          f"{s['errors']} errors {d['error_classes']}, peak RSS {int(rss_kib) / 1024:.1f} MiB "
          f"({int(rss_kib) * 1024 / max(last, 1):.0f} B per connection)")
print(f"established through two shards: {total} of {held} connections")
PY
