#!/usr/bin/env python3
"""How steady is this machine's own CPU? The noise floor under every repetition (issue 35 item 3).

make bench's rows spread by a median CV of ~12 % between repetitions, and the server's CPU per
request spreads exactly as much as its rate (the server is at 90-98 % of its CPU in every cell), so
the same work costs a different amount of CPU from one 4-second window to the next. This script
asks whether the machine itself does that, with no server and no network: a fixed amount of work,
pinned to the server's CPU, timed chunk by chunk, for two working sets:

* L1-BOUND (32 KiB): arithmetic on data that stays in the core's own cache. If its speed varies,
  the CPU is being taken away (time slicing, steal, frequency).
* CACHE-BOUND (WORKING_SET, 8 MiB by default): the same arithmetic on data that spills into the
  last-level cache, which a VM shares with its host's other tenants; the loopback TCP stack of 400
  connections (socket buffers, skbs, connection state) lives there too.

The two run alternately, round by round, so a drift of the machine weighs on both. Printed per working
set: the CV of its speed over 1 s and over WINDOW_S windows (a prantl-wrk quick cell measures 4 s),
the slowest and fastest window as a share of the mean, and the longest stall (slowest chunk ÷ median
chunk); and the steal time the kernel reports for that CPU meanwhile. With `--db PATH` it also prints
a stored run's per-row CV of requests/s and of server CPU per request beside it.

A probe is compiled from C here (gcc, which the C rows need anyway): Python's interpreter would add
its own timing noise to what is measured.

Usage: .venv/bin/python bench/machine_noise.py [--db results/serverbench.db [--run N]]
Env: CPU (0), SECONDS (20 per round), ROUNDS (2), WINDOW_S (4), WORKING_SET (8192 KiB).
"""
from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* argv: working set KiB, seconds. Prints one line per chunk: its wall seconds. The same chunk of
   work every time: 4M pseudo-random read-modify-writes over the working set. */
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    size_t words = (size_t)atol(argv[1]) * 256; double secs = atof(argv[2]);
    uint32_t *buf = calloc(words, 4); uint64_t x = 88172645463325252ULL; double end = now() + secs;
    while (now() < end) {
        double t = now();
        for (long i = 0; i < 4000000; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; buf[x % words] += (uint32_t)x; }
        printf("%.6f\n", now() - t);
    }
    fprintf(stderr, "%u\n", buf[x % words]);  /* keep the work observable */
    return 0;
}
"""


def steal_ticks(cpu: int) -> int:
    """The steal column of /proc/stat for one CPU (clock ticks)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{cpu} "):
            return int(line.split()[8])
    return 0


def windows(chunks: list[float], seconds: float) -> list[float]:
    """Speed (chunks per second) over consecutive windows of about `seconds` of wall time."""
    out, acc, n = [], 0.0, 0
    for c in chunks:
        acc, n = acc + c, n + 1
        if acc >= seconds:
            out.append(n / acc)
            acc, n = 0.0, 0
    return out


def spread(speeds: list[float]) -> str:
    if len(speeds) < 2:
        return "too few windows"
    mean = statistics.fmean(speeds)
    return (f"CV {statistics.pstdev(speeds) / mean * 100:5.1f} %  "
            f"range {min(speeds) / mean:.2f}-{max(speeds) / mean:.2f}× ({len(speeds)} windows)")


def stored_run(db: Path, run: int | None) -> None:
    """Per-row CV of requests/s and of server CPU per request in a stored run."""
    con = sqlite3.connect(db)
    run = run or con.execute("select max(id) from runs").fetchone()[0]
    by: dict[str, list[dict]] = {}
    for server, metrics in con.execute("select server, metrics_json from cells where run_id=? and status='ok'",
                                       (run,)):
        by.setdefault(server, []).append(json.loads(metrics))
    rate_cvs, cpu_cvs = [], []
    for ms in by.values():
        rates = [m["rps"] for m in ms if m.get("rps")]
        per = [(m["cpu_user_s"] + m["cpu_sys_s"]) / m["requests"] for m in ms
               if m.get("requests") and m.get("cpu_user_s") is not None]
        if len(rates) > 1 and len(per) > 1:
            rate_cvs.append(statistics.stdev(rates) / statistics.fmean(rates))
            cpu_cvs.append(statistics.stdev(per) / statistics.fmean(per))
    if not rate_cvs:
        print(f"run {run} of {db}: no row with two repetitions")
        return
    print(f"run {run} of {db}: {len(rate_cvs)} rows; median CV of requests/s {statistics.median(rate_cvs) * 100:.1f} %, "
          f"of server CPU per request {statistics.median(cpu_cvs) * 100:.1f} %")


def main() -> None:
    cpu = int(os.environ.get("CPU", "0"))
    seconds, rounds = float(os.environ.get("SECONDS", "20")), int(os.environ.get("ROUNDS", "2"))
    window, big = float(os.environ.get("WINDOW_S", "4")), int(os.environ.get("WORKING_SET", "8192"))
    sets = {"L1-bound (32 KiB)": 32, f"cache-bound ({big // 1024} MiB)": big}
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text(PROBE_C)
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
        chunks: dict[str, list[float]] = {k: [] for k in sets}
        steal: dict[str, int] = {k: 0 for k in sets}
        for r in range(rounds):
            for name, kib in sets.items():
                before = steal_ticks(cpu)
                out = subprocess.run(["taskset", "-c", str(cpu), str(exe), str(kib), str(seconds)],
                                     check=True, capture_output=True, text=True).stdout
                steal[name] += steal_ticks(cpu) - before
                chunks[name] += [float(x) for x in out.split()]
                print(f"round {r + 1}/{rounds}: {name} done", file=sys.stderr)
    load = os.getloadavg()
    print(f"CPU {cpu}, {rounds} rounds of {seconds:.0f} s per working set, alternating; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")
    for name, cs in chunks.items():
        med = statistics.median(cs)
        print(f"{name:22s} 1 s: {spread(windows(cs, 1.0))}")
        print(f"{'':22s} {window:.0f} s: {spread(windows(cs, window))}")
        print(f"{'':22s} longest stall {max(cs) / med:.1f}× the median chunk; steal {steal[name]} ticks")
    if "--db" in sys.argv:
        args = sys.argv[sys.argv.index("--db") + 1:]
        run = int(args[args.index("--run") + 1]) if "--run" in args else None
        stored_run(Path(args[0]), run)


if __name__ == "__main__":
    main()
