#!/usr/bin/env bash
# A/B comparison of HTTP load clients against the throw-away nginx
# (`return 200 "Hello, World!"`, 1 worker pinned to CPU 0). Every client is
# pinned to CPU 1 in turn, ROUNDS short rounds; the order rotates each round so
# slow drift of the machine (turbo, neighbours) hits every contender alike.
# Prints each round, then per contender the median req/s, the median client
# CPU per request (user+sys of the client process from /usr/bin/time) and the
# median nginx worker CPU per request, and ratios against the first contender.
#
#   bench/loadgen_ab.sh CONTENDER...     CONTENDER = `wrk` or a loadgen binary
#   e.g. bench/loadgen_ab.sh wrk /tmp/loadgen-A loadgen/target/release/loadgen
#
# Env: DURATION (s, default 5), ROUNDS (default 7), CONNECTIONS (50), PORT (18120),
#      LOADGEN_ARGS (extra loadgen options, e.g. "--rate 50000"; then omit wrk),
#      TLS=1: nginx serves TLS 1.3 with a certificate for 127.0.0.1 signed by a
#      throw-away CA (openssl, in a temp dir removed on exit); the clients load
#      https:// (loadgen verifies against that CA with --tls-ca; connections are
#      kept, so this measures the per-request cost of TLS records).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-7}
CONNECTIONS=${CONNECTIONS:-50}
PORT=${PORT:-18120}
LOADGEN_ARGS=${LOADGEN_ARGS:-}
TLS=${TLS:-0}
[ $# -ge 1 ] || { echo "usage: $0 wrk|LOADGEN_BINARY ..." >&2; exit 2; }
for c in "$@"; do
    if [ "$c" = wrk ]; then
        command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
    else
        [ -x "$c" ] || { echo "$c is not an executable" >&2; exit 1; }
    fi
done
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found: apt-get install time" >&2; exit 1; }
source bench/loadgen_nginx.sh
OUT=$(mktemp -d /tmp/loadgen-ab.XXXXXX)
trap 'rm -rf "$OUT"' EXIT INT TERM
if [ "$TLS" = 1 ]; then
    command -v openssl >/dev/null || { echo "openssl not found: apt-get install openssl" >&2; exit 1; }
    # a CA and a leaf for 127.0.0.1 (a self-signed leaf is no CA to a verifying client)
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=loadgen-ab CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
        -keyout "$OUT/ca.key" -out "$OUT/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$OUT/leaf.key" -out "$OUT/leaf.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$OUT/leaf.ext"
    openssl x509 -req -in "$OUT/leaf.csr" -CA "$OUT/ca.pem" -CAkey "$OUT/ca.key" -CAcreateserial -days 1 \
        -extfile "$OUT/leaf.ext" -out "$OUT/leaf.pem" 2>/dev/null
    nginx_start "$PORT" 0 "$OUT/leaf.pem" "$OUT/leaf.key"
    URL="https://127.0.0.1:$PORT/"
    LOADGEN_ARGS="$LOADGEN_ARGS --tls-ca $OUT/ca.pem"
else
    nginx_start "$PORT" 0
    URL="http://127.0.0.1:$PORT/"
fi
trap 'nginx_stop; rm -rf "$OUT"' EXIT INT TERM
# the worker is the master's only child
NGINX_WORKER=$(cat "/proc/$NGINX_PID/task/$NGINX_PID/children" | awk '{print $1}')
nginx_ticks() { awk '{print $14 + $15}' "/proc/$NGINX_WORKER/stat"; }
TCK=$(getconf CLK_TCK)

# prints "requests client_cpu_s nginx_cpu_s client_user_s"
run_one() {
    local c=$1 req t0 t1
    t0=$(nginx_ticks)
    if [ "$c" = wrk ]; then
        /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$URL" >"$OUT/wrk.txt"
        req=$(awk '/requests in/ {print $1}' "$OUT/wrk.txt")
    else
        # shellcheck disable=SC2086
        /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c 1 "$c" "$URL" -t 1 -c "$CONNECTIONS" -d "${DURATION}s" \
            $LOADGEN_ARGS --quiet --json "$OUT/lg.json" >/dev/null
        req=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["responses"])' "$OUT/lg.json")
    fi
    t1=$(nginx_ticks)
    echo "$req $(awk '{print $1 + $2}' "$OUT/time") $(awk -v a="$t0" -v b="$t1" -v t="$TCK" 'BEGIN {print (b - a) / t}') $(awk '{print $1}' "$OUT/time")"
}

n=$#
names=("$@")
for k in $(seq 0 $((n - 1))); do : >"$OUT/rows.$k"; done
for r in $(seq 1 "$ROUNDS"); do
    line="round $r:"
    for j in $(seq 0 $((n - 1))); do
        k=$(( (j + r - 1) % n ))   # rotate the order
        row=$(run_one "${names[$k]}")
        echo "$row" >>"$OUT/rows.$k"
        line+=$(echo "$row" | awk -v d="$DURATION" -v name="$(basename "${names[$k]}")" \
            '{printf "  %s %.0f req/s %.2f µs/req", name, $1/d, $2/$1*1e6}')
    done
    echo "$line"
done

python3 - "$DURATION" "$OUT" "${names[@]}" <<'PY'
import statistics, sys
d = float(sys.argv[1]); out = sys.argv[2]; names = sys.argv[3:]
res = []
for k, name in enumerate(names):
    rows = [tuple(map(float, l.split())) for l in open(f"{out}/rows.{k}") if l.strip()]
    failed = sum(1 for r in rows if r[0] <= 0)
    rows = [r for r in rows if r[0] > 0]
    if failed:
        print(f"{name}: {failed} round(s) without a response left out (the server or port was disturbed)")
    if not rows:
        sys.exit(f"{name}: no round produced responses")
    rps = statistics.median(r[0] / d for r in rows)
    cpu = statistics.median(r[1] / r[0] * 1e6 for r in rows)
    ngx = statistics.median(r[2] / r[0] * 1e6 for r in rows)
    usr = statistics.median(r[3] / r[0] * 1e6 for r in rows)
    res.append((name, rps, cpu, ngx))
    print(f"{name:40s} median {rps:9.0f} req/s   client {cpu:5.2f} µs/request (user {usr:4.2f})   nginx {ngx:5.2f} µs/request")
b = res[0]
for name, rps, cpu, ngx in res[1:]:
    print(f"ratio {name} / {b[0]}:  req/s {rps / b[1]:.3f}   client cpu/request {cpu / b[2]:.3f}")
if names[0] == "wrk" and len(names) == 2:
    _, rps, cpu, _ = res[1]
    print(f"ratio loadgen/wrk  {rps / b[1]:.3f} (target >= 1.0);  cpu per request loadgen/wrk {cpu / b[2]:.3f} (target <= 1.0)")
PY
