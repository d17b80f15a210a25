"""The stored runs the published studies' section reads when no single run is named: for each
workload a study reads (plan.needs), the stored run that measured the most of its rows
(`serverbench seeds --measure` stores one run per workload). Reads stored results only."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..results import aggregate
from .plan import Need


@dataclass
class Measured:
    """What the section reads, as the aggregation's results read: `workloads`, each from the run
    chosen for it (`runs`: workload → run id; `rows`: those runs); `newest`: the newest of them (its
    machine is stated)."""
    workloads: list[Any] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)
    newest: Any = None
    rows: dict[int, Any] = field(default_factory=dict)  # run id → its RunRow (fingerprint: versions)

    def run_of(self, workload: str) -> Any | None:
        """The stored run the workload's figures came from (its fingerprint has the rows' versions)."""
        rid = self.runs.get(workload)
        return self.rows.get(rid) if rid is not None else None

    def sources(self) -> str:
        """One line: which run each workload came from."""
        if not self.runs:
            return "No stored run measured a study's workload."
        return "Runs read: " + ", ".join(f"{w} from run {r}" for w, r in self.runs.items()) + "."


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
