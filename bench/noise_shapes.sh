#!/usr/bin/env bash
# What each loadgen --noise shape does to a row's legitimate traffic (issue 31):
# for each built row, the row pinned to CPU 0 and loadgen to CPU 1, a fixed
# open load (RATE req/s for DURATION s) alone ("quiet") and beside NOISE
# connections of each shape. Prints, per run, the legitimate p99 (every due
# request, CO-corrected), answered rate and errors, and the noise counters.
# Rows run from their server.toml `run` line with WORKERS from `workers` (else 1).
# Env: SERVERS ("c-epoll rust-threadpool"), RATE (1000), DURATION (5), NOISE (200),
# SHAPES ("quiet slowloris idle garbage slow-reader"), LEGIT (more loadgen flags for
# the legitimate load, e.g. --no-keepalive), PORT (a free one).
set -euo pipefail
cd "$(dirname "$0")/.."
SERVERS=${SERVERS:-c-epoll rust-threadpool}
RATE=${RATE:-1000}
DURATION=${DURATION:-5}
NOISE=${NOISE:-200}
SHAPES=${SHAPES:-quiet slowloris idle garbage slow-reader}
read -r -a LEGIT <<< "${LEGIT:-}"
PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
LOADGEN=loadgen/target/release/loadgen
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
export CARGO_TARGET_DIR=$PWD/build/cargo-target HELLO_FILE=$PWD/assets/hello.html HOST=127.0.0.1 PORT
OUT=$(mktemp -d /tmp/noise-shapes.XXXXXX)
SERVER_PID=
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}
trap 'stop_server; rm -rf "$OUT"' EXIT INT TERM

# "run line<TAB>workers" of row $1
row() {
    python3 - "$1" <<'EOF'
import sys, tomllib
t = tomllib.load(open(f"servers/{sys.argv[1]}/server.toml", "rb"))
print(t["run"] + "\t" + str(t.get("workers", 1)))
EOF
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $RATE req/s ${LEGIT[*]} for ${DURATION}s, $NOISE noise connections"
for id in $SERVERS; do
    IFS=$'\t' read -r run workers < <(row "$id")
    (cd "servers/$id" && WORKERS=$workers exec taskset -c 0 bash -c "$run") >"$OUT/$id.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
    curl -s -o /dev/null "http://127.0.0.1:$PORT/" || { echo "$id did not start:" >&2; cat "$OUT/$id.log" >&2; exit 1; }
    for shape in $SHAPES; do
        noise=()
        [ "$shape" = quiet ] || noise=(--noise "$shape" --noise-connections "$NOISE")
        taskset -c 1 "$LOADGEN" "http://127.0.0.1:$PORT/" --rate "$RATE" -c 16 -d "${DURATION}s" "${LEGIT[@]}" "${noise[@]}" \
            -q --json "$OUT/run.json" >/dev/null
        python3 - "$id" "$shape" "$OUT/run.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[3]))
s = j["summary"]
line = f"{sys.argv[1]:<16} {sys.argv[2]:<12} p99 {s['latency_us']['p99'] / 1000:8.2f} ms  {s['rps']:7.1f} rps  errors {s['errors']}"
n = j.get("noise")
if n:
    answers = ",".join(f"{k}:{v}" for k, v in n["responses"].items() if v)
    ended = ",".join(f"{k}:{v}" for k, v in n["ended"].items() if v)
    line += (f"  | opened {n['opened']} held peak {n['held_peak']} end {n['held_at_end']} connect_errors {n['connect_errors']}"
             f" requests {n['requests_sent']} sent {n['bytes_sent']} B recv {n['bytes_received']} B answers [{answers}] ended [{ended}]")
print(line)
EOF
    done
    stop_server
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
