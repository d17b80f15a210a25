#!/usr/bin/env bash
# loadgen memory over a long open-load run: does the per-second timeline (and
# anything else) grow with the run's length? Open load at RATE req/s against
# nginx (1 worker on CPU 0, loadgen on CPU 1) for T2 seconds; loadgen's RSS is
# read from /proc at T1 and just before T2. Prints both, the growth per
# minute, and that growth extrapolated to one hour (target ≤ 100 MB). The
# issue's protocol is T1=60 T2=600; shorter runs extrapolate further.
# On a machine that cannot sustain RATE the open-load backlog grows too (up
# to --max-backlog, 16 MB at the default); LOADGEN_ARGS="--max-backlog 50000"
# keeps that out of the figure. RATE=0 runs closed load (50 connections).
# Env: RATE (50000), T1 (s, 60), T2 (s, 600), PORT (18130), LOADGEN_ARGS (extra options),
#      LOADGEN (binary, default loadgen/target/release/loadgen).
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-50000}
T1=${T1:-60}
T2=${T2:-600}
PORT=${PORT:-18130}
LOADGEN=${LOADGEN:-loadgen/target/release/loadgen}
LOADGEN_ARGS=${LOADGEN_ARGS:-}
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
[ "$T1" -lt "$T2" ] || { echo "T1 must be less than T2" >&2; exit 2; }
source bench/loadgen_nginx.sh
nginx_start "$PORT" 0
OUT=$(mktemp -d /tmp/loadgen-tlmem.XXXXXX)
LG_PID=
cleanup() { [ -n "$LG_PID" ] && kill "$LG_PID" 2>/dev/null; nginx_stop; rm -rf "$OUT"; }
trap cleanup EXIT INT TERM

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
if [ "$RATE" = 0 ]; then LOAD="-c 50"; else LOAD="--rate $RATE"; fi
# shellcheck disable=SC2086
taskset -c 1 "$LOADGEN" "http://127.0.0.1:$PORT/" $LOAD $LOADGEN_ARGS -d "${T2}s" --quiet --json "$OUT/run.json" >/dev/null &
LG_PID=$!
sleep "$T1"
R1=$(rss_kb "$LG_PID")
sleep $((T2 - T1 - 2))
R2=$(rss_kb "$LG_PID")
T2S=$((T2 - 2))
wait "$LG_PID"
LG_PID=
python3 - "$OUT/run.json" "$R1" "$R2" "$T1" "$T2S" "$RATE" "$LOADGEN" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r1, r2, t1, t2 = int(sys.argv[2]) / 1024, int(sys.argv[3]) / 1024, int(sys.argv[4]), int(sys.argv[5])
s = d["summary"]
per_min = (r2 - r1) / (t2 - t1) * 60
hour = per_min * 60
load = f"open load {sys.argv[6]} req/s" if sys.argv[6] != "0" else "closed load, 50 connections"
print(f"{sys.argv[7]}: {load} for {d['duration_s']:.0f} s: achieved {s['rps']:.0f} req/s, "
      f"missed {s['missed_sends']}, never sent {s.get('never_sent', '-')}, errors {s['errors']}")
print(f"RSS {r1:.1f} MB at {t1} s, {r2:.1f} MB at {t2} s: {per_min:+.3f} MB/min, "
      f"one hour's growth extrapolated {hour:+.1f} MB (target <= 100 MB): {'ok' if hour <= 100 else 'OVER'}")
PY
