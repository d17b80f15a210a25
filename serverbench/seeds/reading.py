"""What the published studies' section, its comparisons and its claims read (`Read`): one run's
aggregated results read whole (`OneRun`: a report, `seeds --run N`), or for each workload a study reads
the stored run that measured the most of its rows (`Measured`, chosen by runs.py). Every text that
names a run names the one it read, through `label`. Pure: holds loaded results, reads nothing."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class Read(Protocol):
    """What the section, the comparisons and the claims read: the aggregation's workloads, and for each
    the stored run its figures came from."""

    @property
    def workloads(self) -> list[Any]: ...

    def run_of(self, workload: str) -> Any | None:
        """The stored run (its RunRow: the fingerprint has the rows' versions) the workload came from."""

    def label(self, workload: str) -> str:
        """How a text names that run: "this run" for a single run read whole, else "run 7"."""

    def describe(self) -> str:
        """The opening words of the section's machine line: which run (or runs) were read."""


@dataclass
class OneRun:
    """One run's aggregated results read whole (results.aggregate.RunResults, or anything with its
    `workloads`), with the stored run they came from when known."""
    results: Any
    run: Any = None

    @property
    def workloads(self) -> list[Any]:
        return self.results.workloads

    def run_of(self, workload: str) -> Any | None:
        return self.run

    def label(self, workload: str) -> str:
        return "this run"

    def describe(self) -> str:
        return f"This run ({getattr(self.run, 'id', '?')})"


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

    def label(self, workload: str) -> str:
        rid = self.runs.get(workload)
        return f"run {rid}" if rid is not None else "any stored run"

    def describe(self) -> str:
        return f"{self.sources()} The newest, run {getattr(self.newest, 'id', '?')}"

    def sources(self) -> str:
        """One line: which run each workload came from."""
        if not self.runs:
            return "No stored run measured a study's workload."
        return "Runs read: " + ", ".join(f"{w} from run {r}" for w, r in self.runs.items()) + "."


def reading(results: Any, run: Any = None) -> OneRun | Measured:
    """`results` as a Read: a Measured or OneRun as it is, one run's aggregated results as a OneRun."""
    return results if isinstance(results, (Measured, OneRun)) else OneRun(results, run)


__all__ = ["Read", "OneRun", "Measured", "reading"]
