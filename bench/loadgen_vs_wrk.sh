#!/usr/bin/env bash
# Client CPU per request: loadgen --io uring, loadgen --io epoll and wrk
# against nginx (`return 200 "Hello, World!"`, 1 worker pinned to CPU 0), each
# client pinned to CPU 1 with 1 thread, keep-alive. Requests are counted by
# nginx (stub_status), so a client cannot flatter itself; CPU is the client
# process's user+sys (/usr/bin/time). Scenarios: closed load at each of CONNS
# connections, and open load at RATE req/s over up to 50 connections — loadgen
# only: wrk has no open load (its -R is wrk2's). ROUNDS alternating rounds (the
# order rotates each round, so drift hits every client alike); medians.
# Prints each round, then per scenario the median req/s and µs of client CPU
# per request of each client, and the ratios uring/wrk, uring/epoll, epoll/wrk,
# with the load average (figures from a busy machine are not comparable): over
# every round, and again over the quiet rounds, those in which other work (the
# machine's busy CPU less the client's and nginx's) took under 10 % of a CPU
# during each client's run.
# Env: DURATION (s, default 5), ROUNDS (5), CONNS ("50 400"), RATE (50000), PORT (a free one),
#      LOADGEN (loadgen/target/release/loadgen),
#      TLS=1: the same closed-load scenarios over TLS 1.3 (nginx `ssl` with TLS_CERTS/rsa.pem and
#      rsa.key, RSA-2048, copied into a temp dir; loadgen https:// with --tls-ca TLS_CERTS/ca.pem,
#      wrk https://; keep-alive, so this is the record cost, not handshakes); no open load.
#      TLS_CERTS: a directory with ca.pem, rsa.pem and rsa.key (default: made for this run by the
#      harness's serverbench/tls/certs.py, as `serverbench run` makes them).
# Closing note (issue 29 item 2; 2026-11-25 21:08 UTC, 5 rounds of 5 s, load average 0.87
# before, 3.92 after; other engineers' servers and builds took 1.0-3.0 s of CPU during every
# run, so no round was quiet): 50 connections uring 6.23, epoll 6.42, wrk 7.44 µs/request
# (uring/wrk 0.837, uring/epoll 0.971); 400 connections 6.61, 7.64, 8.12 (0.815, 0.866); open
# load at 50k req/s uring 12.92, epoll 12.64 (1.022). Earlier runs: uring/wrk 0.82-0.86 at 50.
# The goal, uring <= 0.70x wrk at 50 connections, is missed by ~0.14x (~1.0 µs a request),
# and for a reason io_uring cannot remove: most of a request's client CPU is the loopback
# TCP path, which every client pays. perf record (cpu-clock, 4 s, 50 connections) put
# uring's 6.42 µs/request at 4.23 in TCP/IP, skbs and their memory (the request's send runs
# nginx's receive in softirq on the client's CPU; the response's receive and ACKs), 0.58 in
# io_uring, 0.55 in user space (parser, httparse, clock reads), 0.41 in scheduler, timers
# and clock, 0.09 in syscall entry, 0.56 other kernel; wrk's 8.50 at 5.23, 1.13, 0.87 in
# TCP, syscalls/epoll and user space. Syscalls per request (perf stat tracepoints): uring
# 0.79 (io_uring_enter), epoll 2.51 (send, recv, 0.51 epoll_wait), wrk 4.09 (write, read
# and two epoll_ctl). 0.70x wrk needs ~5.2 µs: all of the 4.2 µs of TCP plus 1 µs for
# everything else, which takes 2.2 µs today. Registered files (fget/fput, 0.05 µs) and
# fewer clock reads (vdso, 0.05 µs) would save ~2 %, under this shared machine's
# round-to-round spread, so they were not built; waiting for several completions per
# io_uring_enter would save wake-ups only by holding responses, which inflates latency.
# TLS=1 note (issue 38 item 1; 2026-11-26 22:45 UTC, 5 rounds of 5 s, RSA-2048 leaf, loadgen
# negotiated TLSv1_3 TLS13_AES_256_GCM_SHA384 with ALPN http/1.1 on rustls/ring; load average
# 1.78 before, 2.75 after; other work took 0.2-6.3 s of CPU during the runs, so no round was
# quiet and req/s swung 3x between rounds): 50 connections uring 19.44, epoll 21.78, wrk 28.12
# µs/request (uring/wrk 0.691, epoll/wrk 0.775); 400 connections 26.03, 25.80, 45.44 (0.573,
# 0.568). The issue's bound (<= 1.0x wrk, target 0.9x) holds at both.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-5}
CONNS=${CONNS:-50 400}
RATE=${RATE:-50000}
PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
LOADGEN=${LOADGEN:-loadgen/target/release/loadgen}
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
command -v nginx >/dev/null || { echo "nginx not found: apt-get install nginx" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 1; }
# a kernel without io_uring: loadgen says why in one line
if ! err=$("$LOADGEN" "http://127.0.0.1:1/" --io uring -n 1 2>&1 >/dev/null); then
    case "$err" in *"--io uring"*) echo "$err" >&2; exit 1 ;; esac
fi

TLS=${TLS:-0}
TLS_CERTS=${TLS_CERTS:-}
if [ "$TLS" = 1 ] && [ -n "$TLS_CERTS" ]; then
    for f in ca.pem rsa.pem rsa.key; do
        [ -r "$TLS_CERTS/$f" ] || { echo "TLS=1 needs $TLS_CERTS/$f: set TLS_CERTS to a directory with ca.pem, rsa.pem and rsa.key" >&2; exit 1; }
    done
fi
OUT=$(mktemp -d /tmp/loadgen-vs-wrk.XXXXXX)
if [ "$TLS" = 1 ] && [ -z "$TLS_CERTS" ]; then
    # this run's own certificates, made the way `serverbench run` makes them; removed with $OUT
    TLS_CERTS="$OUT/certs"
    .venv/bin/python -c 'import sys, pathlib; from serverbench.tls.certs import make_material; make_material(pathlib.Path(sys.argv[1]))' "$TLS_CERTS" \
        || { rm -rf "$OUT"; echo "TLS=1: could not make certificates with .venv's serverbench (run make venv), or set TLS_CERTS" >&2; exit 1; }
fi
source bench/loadgen_nginx.sh
SCHEME=http
TLS_ARGS=()
if [ "$TLS" = 1 ]; then
    cp "$TLS_CERTS/ca.pem" "$TLS_CERTS/rsa.pem" "$TLS_CERTS/rsa.key" "$OUT/"
    nginx_start "$PORT" 0 "$OUT/rsa.pem" "$OUT/rsa.key"
    SCHEME=https
    TLS_ARGS=(--tls-ca "$OUT/ca.pem")
    CURL_TLS=(--cacert "$OUT/ca.pem")
else
    nginx_start "$PORT" 0
    CURL_TLS=()
fi
trap 'nginx_stop; rm -rf "$OUT"' EXIT INT TERM
URL="$SCHEME://127.0.0.1:$PORT/"
served() { curl -s ${CURL_TLS[@]+"${CURL_TLS[@]}"} "${URL}nginx-status" | awk 'NR == 3 {print $3}'; }
for _ in $(seq 1 50); do served >/dev/null 2>&1 && [ -n "$(served)" ] && break; sleep 0.1; done
[ -n "$(served)" ] || { echo "nginx on port $PORT has no stub_status:" >&2; cat "$NGINX_DIR/logs/error.log" >&2; exit 1; }

# one run: prints "requests_nginx_counted client_cpu_s others_cpu_s"
run_one() {
    local client=$1 scenario=$2 before after b n cpu o
    before=$(served)
    b=$(busy_s); n=$(nginx_ticks)
    if [ "$client" = wrk ]; then
        /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c 1 wrk -t1 -c"$scenario" -d"${DURATION}s" "$URL" >/dev/null
    else
        local load=(-c "$scenario")
        [ "$scenario" = open ] && load=(--rate "$RATE" --max-connections 50)
        /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c 1 "$LOADGEN" "$URL" --io "$client" -t 1 "${load[@]}" \
            ${TLS_ARGS[@]+"${TLS_ARGS[@]}"} -d "${DURATION}s" --quiet >/dev/null
    fi
    cpu=$(awk '{print $1 + $2}' "$OUT/time")
    o=$(others_s "$b" "$n" "$cpu")
    after=$(served)
    # the second status request is counted in `after`
    echo "$((after - before - 1)) $cpu $o"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
SCENARIOS=($CONNS open)
if [ "$TLS" = 1 ]; then
    SCENARIOS=($CONNS)
    echo "over TLS: $URL ($("$LOADGEN" "$URL" "${TLS_ARGS[@]}" -n 1 --json - --quiet 2>/dev/null |
        python3 -c 'import json, sys; t = json.load(sys.stdin)["tls"]; print(t["version"], t["suite"], "ALPN", t["alpn"], "provider", t["provider"])'))"
fi
for r in $(seq 1 "$ROUNDS"); do
    for s in "${SCENARIOS[@]}"; do
        clients=(uring epoll wrk)
        [ "$s" = open ] && clients=(uring epoll)
        n=${#clients[@]}
        line="round $r, $s:"
        for j in $(seq 0 $((n - 1))); do
            c=${clients[$(( (j + r - 1) % n ))]}
            row=$(run_one "$c" "$s")
            echo "$r $s $c $row" >>"$OUT/rows"
            line+=$(echo "$row" | awk -v d="$DURATION" -v c="$c" \
                '{printf "  %s %.0f req/s %.2f µs/req (others %.2f s)", c, $1/d, ($1 > 0 ? $2/$1*1e6 : 0), $3}')
        done
        echo "$line"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$DURATION" "$OUT/rows" "$RATE" <<'PY'
import collections, statistics, sys
d, rate = float(sys.argv[1]), sys.argv[3]
QUIET = 0.10  # a round is quiet when other work took under 10 % of one CPU during each client (kernel workers and softirqs on idle CPUs count too)
rows = collections.defaultdict(list)  # (scenario, client) -> [(round, requests, cpu)]
noisy = set()  # (round, scenario)
for line in open(sys.argv[2]):
    r, s, c, req, cpu, others = line.split()
    if float(others) >= QUIET * d:
        noisy.add((r, s))
    if int(req) > 0:
        rows[s, c].append((r, int(req), float(cpu)))
scenarios = list(dict.fromkeys(s for s, _ in rows))

def report(s, keep, label):
    med = {}
    for c in ("uring", "epoll", "wrk"):
        r = [x for x in rows.get((s, c), []) if keep(x[0])]
        if not r:
            continue
        med[c] = statistics.median(cpu / req * 1e6 for _, req, cpu in r)
        name = "wrk" if c == "wrk" else f"loadgen --io {c}"
        print(f"  {name:20s} {statistics.median(req / d for _, req, _ in r):9.0f} req/s   {med[c]:5.2f} µs/request   ({len(r)} {label})")
    for a, b in (("uring", "wrk"), ("uring", "epoll"), ("epoll", "wrk")):
        if a in med and b in med:
            print(f"  ratio {a}/{b}: {med[a] / med[b]:.3f}")

for s in scenarios:
    name = f"open load at {rate} req/s" if s == "open" else f"{s} connections"
    print(f"\n{name} (medians; client CPU per request nginx counted)")
    report(s, lambda r: True, "rounds")
    if "wrk" not in {c for t, c in rows if t == s}:
        print("  wrk: no open load (wrk keeps a fixed number of connections busy)")
    quiet = sorted({r for r, *_ in rows[s, "uring"]} - {r for r, t in noisy if t == s}, key=int)
    print(f"  quiet rounds {[int(r) for r in quiet]} (other work under {QUIET:.0%} of a CPU during each client):")
    report(s, lambda r: r in quiet, "quiet rounds")
PY
