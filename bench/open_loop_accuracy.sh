#!/usr/bin/env bash
# Open-load accuracy: measure the closed-loop maximum against nginx (CPU 0,
# loadgen on CPU 1), then run open load at 20 %, 50 % and 80 % of it and
# print target vs achieved rate (target: within 1 %). Open runs warm up 1 s:
# from cold every early request opens a connection, and that storm would
# otherwise dominate the p99.
# Env: DURATION (s per run, default 10), CONNECTIONS (closed-loop probe, 50), PORT (18110),
#      LOADGEN (binary, default loadgen/target/release/loadgen),
#      MAX (req/s: skip the closed-loop probe, e.g. to give two builds the same targets).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-50}
PORT=${PORT:-18110}
LOADGEN=${LOADGEN:-loadgen/target/release/loadgen}
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
source bench/loadgen_nginx.sh
nginx_start "$PORT" 0
URL="http://127.0.0.1:$PORT/"
OUT=$(mktemp -d /tmp/loadgen-open.XXXXXX)
trap 'nginx_stop; rm -rf "$OUT"' EXIT INT TERM

field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$1" "$2"; }

if [ -z "${MAX:-}" ]; then
    taskset -c 1 "$LOADGEN" "$URL" -c "$CONNECTIONS" -d "${DURATION}s" --quiet --json "$OUT/max.json" >/dev/null
    MAX=$(field "$OUT/max.json" 'd["summary"]["rps"]')
    echo "closed-loop maximum: $MAX req/s ($CONNECTIONS connections, ${DURATION}s)"
else
    echo "given maximum: $MAX req/s (MAX)"
fi
fail=0
for pct in 20 50 80; do
    rate=$(python3 -c "print(round($MAX * $pct / 100, 1))")
    taskset -c 1 "$LOADGEN" "$URL" --rate "$rate" -d "${DURATION}s" --warmup 1s --quiet --json "$OUT/open.json" >/dev/null
    read -r achieved p99 missed errors < <(field "$OUT/open.json" \
        '"%s %s %s %s" % (d["summary"]["rps"], d["summary"]["latency_us"]["p99"], d["summary"]["missed_sends"], d["summary"]["errors"])')
    dev=$(python3 -c "print(f'{($achieved - $rate) / $rate * 100:+.2f}')")
    verdict=$(python3 -c "print('ok' if abs($achieved - $rate) <= 0.01 * $rate else 'OFF')")
    [ "$verdict" = ok ] || fail=1
    printf '%3d%%  target %10.1f req/s  achieved %10.1f req/s  (%s%%, %s)  corrected p99 %s µs, missed %s, errors %s\n' \
        "$pct" "$rate" "$achieved" "$dev" "$verdict" "$p99" "$missed" "$errors"
done
exit $fail
