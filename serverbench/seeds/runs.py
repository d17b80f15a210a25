"""The stored runs the published studies' section reads when no single run is named: for each
workload a study reads (plan.needs), the stored run that measured the most of its rows
(`serverbench seeds --measure` stores one run per workload), as a reading.Measured. The choice
itself is results/pick_runs.py's (the profile table chooses the same way). Reads stored results only."""
from __future__ import annotations

from typing import Any

from ..results.pick_runs import StoredRuns
from .plan import Need
from .reading import Measured


def latest(store: Any, needs: list[Need]) -> Measured:
    """For each need, the stored run (any status: an interrupted run's finished cells count) with ok
    cells of its workload and the most of its rows, the newest among equals; a quick look at one
    row after a full seeds run does not replace it."""
    out = Measured()
    stored = StoredRuns(store)
    for need in needs:
        chosen = stored.latest(need.workload, need.rows)
        if chosen is None:
            continue
        r, w = chosen.run, chosen.workload
        out.workloads.append(w)
        out.runs[w.name] = r.id
        out.rows[r.id] = r
        out.newest = r if out.newest is None or r.id > out.newest.id else out.newest
    return out


__all__ = ["Measured", "latest"]
