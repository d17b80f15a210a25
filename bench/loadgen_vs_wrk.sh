#!/usr/bin/env bash
# loadgen vs wrk against nginx (`return 200 "Hello, World!"`, 1 worker pinned
# to CPU 0). Each client is pinned to CPU 1 in turn, same connections,
# duration, keep-alive and 1 thread; ROUNDS alternating rounds (the order
# rotates each round). Prints the median requests/s of both, the ratio
# loadgen/wrk, and the median client CPU per request (user+sys of the client
# process, from /usr/bin/time). Single rounds vary by ±10 % on a shared
# machine, so many short rounds and medians (see bench/loadgen_ab.sh).
# Env: DURATION (s, default 5), ROUNDS (default 7), CONNECTIONS (50), PORT (18100).
set -euo pipefail
cd "$(dirname "$0")/.."
LOADGEN=loadgen/target/release/loadgen
[ -x "$LOADGEN" ] || (cd loadgen && cargo build --release --locked -q)
PORT=${PORT:-18100} exec bench/loadgen_ab.sh wrk "$LOADGEN"
