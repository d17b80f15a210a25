"""What re-measuring the published studies needs (`serverbench seeds --measure`, `make seeds`): per
workload, the rows its comparisons and claims read, the repetitions and, where a claim is about
running out of memory, the memory ceiling. Pure: studies in, needs out; which stored run already
meets a need is rules/needs.py's (from the runs' stored options, never by measuring).

One run per workload (not one matrix of every row by every workload): each study names a handful
of rows, and a matrix of their union would measure every row on every study's workload, several
times the work the comparisons read.
"""
from __future__ import annotations

from typing import Iterable

from ..rules.needs import Need, in_flight, meets, stored_for
from .studies import OUT_OF_MEMORY, Study

REPEAT = 3
# Stressgrid's server had 32 GiB for a ramp to 300k devices; stressgrid-overload ramps to 10,000
# devices, 1/30 of them, so the same memory per device is 32 GiB / 30 ≈ 1.07 GiB. Only a workload
# with an "out of memory" claim gets it: a ceiling changes what a run measures.
MEMORY_LIMIT = "1G"


def _compared_rows(study: Study, column: str) -> list[str]:
    """The rows standing for the published rows with a figure (not words) in `column`."""
    return [sid for r in study.row if isinstance(r.figures.get(column), (int, float, tuple))
            for sid in r.maps_to]


def needs(studies: Iterable[Study], repeat: int = REPEAT) -> list[Need]:
    """Every workload a study's comparison or claim reads, with the union of the rows they read there,
    in the order they first appear."""
    rows: dict[str, list[str]] = {}
    why: dict[str, list[str]] = {}
    memory: set[str] = set()

    def add(workload: str, ids: Iterable[str], reason: str) -> None:
        have = rows.setdefault(workload, [])
        have += [i for i in ids if i not in have]
        why.setdefault(workload, []).append(reason)

    for s in studies:
        for c in s.compare:
            add(c.workload, _compared_rows(s, c.column), f"{s.id}: {c.column}")
        for cl in s.claim:
            add(cl.workload, [*cl.rows, *cl.than], f"{s.id}: “{cl.text}”")
            if OUT_OF_MEMORY in cl.expect:
                memory.add(cl.workload)
    return [Need(w, tuple(r), repeat, MEMORY_LIMIT if w in memory else None, tuple(why[w]))
            for w, r in rows.items() if r]


# Need, meets, stored_for and in_flight are rules/needs.py's, handed on: seeds --measure reads them here
__all__ = ["Need", "needs", "meets", "stored_for", "in_flight", "REPEAT", "MEMORY_LIMIT", "OUT_OF_MEMORY"]
