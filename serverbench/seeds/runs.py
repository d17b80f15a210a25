"""The stored runs the published studies' section reads when no single run is named: for each
workload a study reads (plan.needs), the stored run that measured the most of its rows
(`serverbench seeds --measure` stores one run per workload), as a reading.Measured. Reads stored
results only."""
from __future__ import annotations

from typing import Any

from ..results import aggregate
from .plan import Need
from .reading import Measured


def _coverage(run: Any, need: Need) -> int:
    servers = run.options.get("servers")
    return len(need.rows) if servers is None else len(set(need.rows) & set(servers))


def _measured(w: Any) -> bool:
    return any(getattr(p, "groups", None) for p in getattr(w, "points", []))


def latest(store: Any, needs: list[Need]) -> Measured:
    """For each need, the stored run (any status: an interrupted run's finished cells count) with ok
    cells of its workload and the most of its rows, the newest among equals; a quick look at one
    row after a full seeds run does not replace it."""
    out = Measured()
    stored = store.runs()
    measured = store.measured_workloads()
    loaded: dict[int, Any] = {}
    for need in needs:
        named = [r for r in stored if need.workload in measured.get(r.id, ())]
        for r in sorted(named, key=lambda r: (_coverage(r, need), r.id), reverse=True):
            if r.id not in loaded:
                loaded[r.id] = aggregate.load(store, r.id)[1]
            w = next((w for w in loaded[r.id].workloads if w.name == need.workload and _measured(w)), None)
            if w is not None:
                out.workloads.append(w)
                out.runs[w.name] = r.id
                out.rows[r.id] = r
                out.newest = r if out.newest is None or r.id > out.newest.id else out.newest
                break
    return out


__all__ = ["Measured", "latest"]
