#!/usr/bin/env python3
"""Does the machine's own speed explain the spread between repetitions? (issue 49 item 5)

Every cell stores a CPU probe on the server's CPUs before and after its measured run (SHA-256 MiB per
CPU-second, processes/speed.py; model.MachineSpeed). If the same requests cost more CPU when the
machine is slower, server CPU per request × the cell's probe speed (work units per request) should
spread less across a row's repetitions than CPU per request itself. This script reads a stored run
and, for each group (workload, point, server) with at least 3 probed repetitions, prints the CV of
server CPU per request with and without that normalisation; then the median CV over the groups,
how many groups improved, and whether normalising lowers the CV. It changes nothing: the rankings
adopt a normalisation only if this shows it helps.

Usage: .venv/bin/python bench/speed_normalised_cv.py [--db results/serverbench.db] [--run N]
(default: the newest run of the database).
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench.model import CellRecord  # noqa: E402
from serverbench.results.stats import summarize  # noqa: E402
from serverbench.rules.machine_speed import cell_speed, judge  # noqa: E402
from serverbench.store import Store  # noqa: E402

MIN_REPETITIONS = 3


def cpu_per_request_us(c: CellRecord) -> float | None:
    """Server CPU (user + system) per request that ended, µs; None without usage or requests."""
    u, n = c.metrics.usage, c.metrics.counts.requests
    if u.cpu_user_s is None or u.cpu_sys_s is None or not n:
        return None
    return (u.cpu_user_s + u.cpu_sys_s) / n * 1e6


def groups(cells: list[CellRecord]) -> dict[tuple[str, str, str], list[tuple[float, float]]]:
    """(workload, point, server) → [(CPU µs per request, probe speed)] of its ok, probed repetitions."""
    out: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for c in cells:
        if not c.ok or c.metrics.tool is not None:
            continue
        cpu, speed = cpu_per_request_us(c), cell_speed(c.metrics.speed)
        if cpu is not None and speed is not None:
            out.setdefault((c.workload, c.point, c.server), []).append((cpu, speed))
    return {k: v for k, v in out.items() if len(v) >= MIN_REPETITIONS}


def pooled_r(rows: dict[tuple[str, str, str], list[tuple[float, float]]]) -> float | None:
    """Pearson r of log CPU per request against log probe speed, each centred on its group's mean, over
    every group: -1 = a faster machine costs proportionally less CPU per request (what normalising
    assumes), 0 = the probe says nothing of the cost."""
    xs, ys = [], []
    for reps in rows.values():
        lc, ls = [math.log(c) for c, _ in reps], [math.log(v) for _, v in reps]
        xs += [v - statistics.fmean(ls) for v in ls]
        ys += [c - statistics.fmean(lc) for c in lc]
    den = math.sqrt(sum(x * x for x in xs) * sum(y * y for y in ys))
    return sum(x * y for x, y in zip(xs, ys)) / den if den else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=ROOT / "results" / "serverbench.db")
    ap.add_argument("--run", type=int, default=None)
    a = ap.parse_args()
    store = Store(a.db)
    run = a.run or max(r.id for r in store.runs())
    cells = store.cells(run)
    load = os.getloadavg()
    speeds = [s for c in cells if (s := cell_speed(c.metrics.speed)) is not None]
    steal = [s for c in cells if (s := c.metrics.speed.steal_percent) is not None]
    print(f"run {run} of {a.db}: {len(cells)} cells, {len(speeds)} probed; load average now "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if speeds:
        print(f"probe speed over the run: median {statistics.median(speeds):,.0f} MiB/CPU-s, range "
              f"{min(speeds):,.0f}-{max(speeds):,.0f} ({1 - min(speeds) / max(speeds):.1%} apart); steal median "
              f"{statistics.median(steal) if steal else 0:.2f} %, max {max(steal) if steal else 0:.2f} %")
        moved = judge(cells)
        print("report note: " + (moved.text() if moved else "none (the speed held within the rule)"))
    rows = groups(cells)
    if not rows:
        print(f"no group with {MIN_REPETITIONS} or more probed repetitions: nothing to compare")
        return
    raw_cvs, norm_cvs = [], []
    print(f"{'workload':14s} {'point':22s} {'server':12s} {'n':>2s} {'CPU µs/req':>10s} {'CV raw':>7s} "
          f"{'CV × speed':>10s}  probe spread")
    for (w, p, s), reps in sorted(rows.items()):
        raw = summarize([cpu for cpu, _ in reps])
        norm = summarize([cpu * speed for cpu, speed in reps])
        spd = [speed for _, speed in reps]
        raw_cvs.append(raw.cv)
        norm_cvs.append(norm.cv)
        print(f"{w:14s} {p:22s} {s:12s} {raw.n:2d} {raw.median:10.2f} {raw.cv:7.1%} {norm.cv:10.1%}  "
              f"{1 - min(spd) / max(spd):.1%}")
    better = sum(n < r for r, n in zip(raw_cvs, norm_cvs))
    med_raw, med_norm = statistics.median(raw_cvs), statistics.median(norm_cvs)
    print(f"{len(rows)} groups: median CV of server CPU per request {med_raw:.1%} raw, {med_norm:.1%} "
          f"normalised by the probe; {better} of {len(rows)} groups lower when normalised")
    r = pooled_r(rows)
    print("within groups, log CPU per request against log probe speed: r = "
          + (f"{r:+.2f}" if r is not None else "— (no spread)") + " (-1 would mean the probe explains the cost)")
    lowers = med_norm < med_raw and better > len(rows) / 2
    print("normalising by the probe's speed " + ("LOWERS the CV" if lowers else "does NOT lower the CV")
          + (" (median lower and most groups lower)" if lowers else
             " (the median did not fall, or most groups did not improve): the rankings keep raw CPU per request"))


if __name__ == "__main__":
    main()
