"""Which stored run stands for a workload when a reader asks about it without naming one: the run
with ok cells of that workload that measured the most of the rows asked about, the newest among
equals (a quick look at one row after a full run does not replace it). The published studies'
section (seeds/runs.py) and the profile table (profile.py) both choose this way. Reads stored
results only, through the one aggregation (each run loaded once)."""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from . import aggregate


@dataclass(frozen=True)
class Chosen:
    """The stored run chosen for a workload and that workload's aggregated results in it."""

    run: Any  # store.RunRow: its fingerprint names the machine, the commit and the rows' versions
    workload: aggregate.WorkloadData


def coverage(run: Any, rows: Collection[str]) -> int:
    """How many of `rows` the run was asked to measure (its options' servers; none named: all)."""
    servers = run.options.get("servers")
    return len(rows) if servers is None else len(set(rows) & set(servers))


def _measured(w: Any) -> bool:
    return any(getattr(p, "groups", None) for p in getattr(w, "points", []))


@dataclass
class StoredRuns:
    """The store's runs that `keep` admits (default: all, any status: an interrupted run's finished
    cells count), each aggregated at most once however many workloads read it."""

    store: Any
    keep: Callable[[Any], bool] = lambda run: True
    loaded: dict[int, Any] = field(default_factory=dict)  # run id -> its RunResults

    def __post_init__(self) -> None:
        self.runs = [r for r in self.store.runs() if self.keep(r)]
        self.measured = self.store.measured_workloads()

    def results(self, run: Any) -> Any:
        if run.id not in self.loaded:
            self.loaded[run.id] = aggregate.load(self.store, run.id)[1]
        return self.loaded[run.id]

    def latest(self, workload: str, rows: Collection[str]) -> Chosen | None:
        """The kept run with ok cells of `workload` and the most of `rows`, the newest among equals
        (one whose aggregation has no group of it is passed over); None when no kept run has it."""
        named = [r for r in self.runs if workload in self.measured.get(r.id, ())]
        for r in sorted(named, key=lambda r: (coverage(r, rows), r.id), reverse=True):
            w = next((w for w in self.results(r).workloads if w.name == workload and _measured(w)), None)
            if w is not None:
                return Chosen(r, w)
        return None


__all__ = ["Chosen", "StoredRuns", "coverage"]
