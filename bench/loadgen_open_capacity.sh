#!/usr/bin/env bash
# Open-load capacity of loadgen binaries against nginx (1 worker on CPU 0,
# loadgen on CPU 1): for each target rate, each binary in turn runs --rate R
# for DURATION s. Prints achieved rate (and its deviation), client CPU per
# request (user+sys from /usr/bin/time), corrected p50/p99 and missed sends,
# then per binary the highest rate held within 1 % of target.
#   bench/loadgen_open_capacity.sh /tmp/loadgen-A loadgen/target/release/loadgen
# Each run has a 1 s warm-up: from cold, every early request opens a connection
# and the connection storm stalls the first ~100 ms (p99 tens of ms).
# Env: RATES ("20000 40000 50000 60000 70000 80000 90000"), DURATION (s, 5),
#      PORT (18130), LOADGEN_ARGS (extra loadgen options, e.g. "--send-quantum 0").
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=${RATES:-"20000 40000 50000 60000 70000 80000 90000"}
DURATION=${DURATION:-5}
PORT=${PORT:-18130}
LOADGEN_ARGS=${LOADGEN_ARGS:-}
[ $# -ge 1 ] || { echo "usage: $0 LOADGEN_BINARY ..." >&2; exit 2; }
source bench/loadgen_nginx.sh
nginx_start "$PORT" 0
URL="http://127.0.0.1:$PORT/"
OUT=$(mktemp -d /tmp/loadgen-opencap.XXXXXX)
trap 'nginx_stop; rm -rf "$OUT"' EXIT INT TERM
: >"$OUT/rows"
for rate in $RATES; do
    for b in "$@"; do
        # shellcheck disable=SC2086
        /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c 1 "$b" "$URL" --rate "$rate" -d "${DURATION}s" --warmup 1s \
            $LOADGEN_ARGS --quiet --json "$OUT/o.json" >/dev/null
        python3 - "$OUT/o.json" "$OUT/time" "$rate" "$b" "$DURATION" <<'PY' | tee -a "$OUT/rows"
import json, sys
d = json.load(open(sys.argv[1])); s = d["summary"]
# CPU of warm-up + measured time, per measured second's worth of requests
dur = float(sys.argv[5])
cpu = sum(map(float, open(sys.argv[2]).read().split())) * dur / (dur + 1)
rate = float(sys.argv[3]); ach = s["rps"]
print(f"{sys.argv[4]:40s} target {rate:8.0f}  achieved {ach:9.1f} ({(ach - rate) / rate * 100:+6.2f}%)  "
      f"client {cpu / max(s['responses'], 1) * 1e6:5.2f} µs/req  p50 {s['latency_us']['p50']} µs  "
      f"p99 {s['latency_us']['p99']} µs  missed {s['missed_sends']}  errors {s['errors']}")
PY
    done
done
python3 - "$OUT/rows" "$@" <<'PY'
import re, sys
rows = open(sys.argv[1]).read().splitlines()
for b in sys.argv[2:]:
    held = [float(re.search(r"target\s+(\d+)", l).group(1)) for l in rows
            if l.split()[0] == b and abs(float(re.search(r"\(\s*([+-]?[\d.]+)%\)", l).group(1))) <= 1.0]
    print(f"{b}: highest rate held within 1 %: {max(held) if held else 'none':>8}")
PY
