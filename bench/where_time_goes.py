#!/usr/bin/env python3
"""Where a stored run's time went (issue 35 item 6: `make bench` within 30 minutes).

Reads one run from a results database (default: the latest in results/serverbench.db) and prints its
wall time, then the cells' time split into: server start-up (until ready), warm-up to steady (the
one-second rounds), the measured load, and the rest of each cell (sampler, loadgen start and stop,
the harness's own work), for the workload's own points and for the fixed-rate step apart; then the
rows whose warm-up took longest and the noise figure the issue targets: the median CV of the rows'
requests/s over their repetitions.

Usage: .venv/bin/python bench/where_time_goes.py [DB] [RUN_ID]
"""
from __future__ import annotations

import statistics
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench.results import aggregate  # noqa: E402
from serverbench.store import Store  # noqa: E402


def _t(iso: str | None) -> datetime | None:
    return datetime.fromisoformat(iso) if iso else None


def main() -> None:
    db = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "serverbench.db"
    store = Store(db)
    rid = int(sys.argv[2]) if len(sys.argv) > 2 else store.latest_run_id()
    run = store.run(rid)
    cells = store.cells(rid)
    t0, t1 = _t(run.started_at), _t(run.finished_at)
    wall = (t1 - t0).total_seconds() if t0 and t1 else None
    print(f"run {rid}: {run.status}, {len(cells)} cells, wall {wall / 60:.1f} min" if wall else f"run {rid}")
    for name, part in (("workload points", [c for c in cells if not c.metrics.fixed_rate_of]),
                       ("fixed-rate step", [c for c in cells if c.metrics.fixed_rate_of])):
        if not part:
            continue
        spans = [(_t(c.finished_at) - _t(c.started_at)).total_seconds() for c in part if c.started_at and c.finished_at]
        start = sum(c.metrics.timing.server_start_s or 0 for c in part)
        warm = sum(len(c.metrics.warmup.warmup_rates or []) for c in part)
        load = sum(c.metrics.offered.duration_s or 0 for c in part)
        cell = sum(spans)
        print(f"  {name}: {len(part)} cells, {cell / 60:.1f} min in cells (+ start-ups {start / 60:.1f} min): "
              f"warm-up rounds {warm / 60:.1f} min, measured {load / 60:.1f} min, "
              f"rest {(cell - warm - load) / 60:.1f} min")
        if part[0].metrics.fixed_rate_of:
            # a start of its own records the start-up on its first point; a point in a warm start does not
            own = [c for c in part if c.metrics.timing.server_start_s is not None]
            print(f"    in starts of their own: {len(own)}; in the rows' warm starts: {len(part) - len(own)}")
    if wall:
        inside = sum((_t(c.finished_at) - _t(c.started_at)).total_seconds() for c in cells
                     if c.started_at and c.finished_at) + sum(c.metrics.timing.server_start_s or 0 for c in cells)
        print(f"  between cells (server stops, verdict gate, store): {(wall - inside) / 60:.1f} min")
    slow = sorted(((len(c.metrics.warmup.warmup_rates or []), c.server, c.repetition) for c in cells), reverse=True)[:8]
    print("  longest warm-ups (s, row, repetition): " + ", ".join(f"{s} {r} r{k}" for s, r, k in slow))
    _, res = aggregate.load(store, rid)
    cvs = [g.rps.cv for g in res.groups if g.rps and g.rps.n > 1 and g.kind == "throughput"]
    if cvs:
        print(f"  median CV of requests/s over the rows: {statistics.median(cvs):.1%} "
              f"({sum(cv > 0.05 for cv in cvs)} of {len(cvs)} rows above 5 %)")


if __name__ == "__main__":
    main()
