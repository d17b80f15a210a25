#!/usr/bin/env python3
"""Is the order the fixed-rate step gives the top of prantl-wrk the same from run to run? (issue 35)

Runs prantl-wrk on ROWS (default: rows at the top of `make bench` on the 2-core machine) with 3
repetitions, RUNS times (each a fresh results database, as a fresh `make bench` would be), through the
harness (`serverbench run`: the fixed-rate step runs when two or more rows are client-bound, or tied
with the first row within the repetitions' noise).
Prints, per run: the block, the common rate, each row's server CPU per request (median) and the
verdict line; then how many runs gave the most common order (of the rows every run measured) and
whether the leader named beyond noise was the same.

Usage: .venv/bin/python bench/fixed_rate_order.py      Env: ROWS ("c-epoll cpp-asio rust-tokio"), RUNS (3)
"""
from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench.results import aggregate, ranking  # noqa: E402
from serverbench.store import Store  # noqa: E402


def judged_top(groups: list) -> frozenset[str]:
    """What the step's verdict stands on: the first row and every row tied with it by the CPU figure's
    noise (ranking.tied, the rule the glance uses): one name when it leads beyond noise."""
    if not groups:
        return frozenset()
    first = groups[0]
    return frozenset([first.server, *(g.server for g in groups[1:] if ranking.tied(first, g, ranking.EFFICIENCY))])


def one_run(rows: list[str], db: Path) -> tuple[list[str], str, dict[str, float], frozenset[str]]:
    subprocess.run([str(ROOT / ".venv/bin/serverbench"), "run", "-s", ",".join(rows), "-w", "prantl-wrk",
                    "--repeat", "3", "--db", str(db), "--allow-unverified"], check=True, stdout=subprocess.DEVNULL,
                   cwd=ROOT)
    store = Store(db)
    _, res = aggregate.load(store, store.latest_run_id())
    [wl] = res.workloads
    pt = wl.load_points[0]
    eff = pt.efficiency
    cpu = {g.server: g.cpu_us_per_request for g in (eff.groups if eff else []) if g.cpu_us_per_request}
    groups = eff.groups if eff else []
    return [g.server for g in groups], pt.glance.verdict, cpu, judged_top(groups)


def main() -> None:
    rows = os.environ.get("ROWS", "c-epoll cpp-asio rust-tokio").split()
    runs = int(os.environ.get("RUNS", "3"))
    tmp = Path(tempfile.mkdtemp(prefix="fixed-rate-order-"))
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}; rows {', '.join(rows)}")
    orders, leaders, tops = [], [], []
    for i in range(runs):
        order, verdict, cpu, top = one_run(rows, tmp / f"run{i}.db")
        orders.append(tuple(order))
        tops.append(top)
        leaders.append(verdict.split(" leads beyond")[0].split(" — ")[-1] if " leads beyond that" in verdict else None)
        print(f"run {i + 1}: order {' < '.join(order) or '(no block or tie at the top: the step did not run)'}; CPU µs/request "
              + ", ".join(f"{s} {v:.2f}" for s, v in cpu.items()))
        print(f"        at a glance: {verdict}")
        print(f"        judged top (the leader, or the rows tied with the first): {', '.join(sorted(top)) or '—'}")
        print(f"        load average: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    common, n = collections.Counter(o for o in orders if o).most_common(1)[0] if any(orders) else ((), 0)
    print(f"the most common order ({' < '.join(common) or '—'}) in {n} of {runs} runs; "
          f"leaders named beyond noise: {', '.join(str(x) for x in leaders)}")
    top, k = collections.Counter(t for t in tops if t).most_common(1)[0] if any(tops) else (frozenset(), 0)
    print(f"the most common judged top ({', '.join(sorted(top)) or '—'}) in {k} of {runs} runs")


if __name__ == "__main__":
    main()
