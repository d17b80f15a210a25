#!/usr/bin/env bash
# loadgen vs wrk against nginx (`return 200 "Hello, World!"`, 1 worker pinned
# to CPU 0). Each client is pinned to CPU 1 in turn, same connections,
# duration, keep-alive and 1 thread; ROUNDS alternating rounds (the order
# rotates each round). Prints the median requests/s of both, the ratio
# loadgen/wrk, and the median client CPU per request (user+sys of the client
# process, from /usr/bin/time). Defaults are the loadgen issue's protocol:
# 10 s rounds, 3 of each. Single rounds vary by ±10 % on a shared machine;
# DURATION=5 ROUNDS=7 gives tighter medians (see bench/loadgen_ab.sh).
# Env: DURATION (s, default 10), ROUNDS (default 3), CONNECTIONS (50), PORT (18100).
set -euo pipefail
cd "$(dirname "$0")/.."
LOADGEN=loadgen/target/release/loadgen
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
DURATION=${DURATION:-10} ROUNDS=${ROUNDS:-3} PORT=${PORT:-18100} exec bench/loadgen_ab.sh wrk "$LOADGEN"
