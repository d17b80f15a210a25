"""What re-measuring the published studies needs (`serverbench seeds --measure`, `make seeds`): per
workload, the rows its comparisons and claims read, the repetitions and, where a claim is about
running out of memory, the memory ceiling. Pure: studies in, needs out; which stored run already
meets a need is decided from the runs' stored options, never by measuring.

One run per workload (not one matrix of every row by every workload): each study names a handful
of rows, and a matrix of their union would measure every row on every study's workload, several
times the work the comparisons read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .studies import OUT_OF_MEMORY, Study

REPEAT = 3
# Stressgrid's server had 32 GiB for a ramp to 300k devices; stressgrid-overload ramps to 10,000
# devices, 1/30 of them, so the same memory per device is 32 GiB / 30 ≈ 1.07 GiB. Only a workload
# with an "out of memory" claim gets it: a ceiling changes what a run measures.
MEMORY_LIMIT = "1G"
# Of the stored run options, these must equal a need's for that run to meet it (the rest, such as
# the CPU split, are the harness's choice on the machine at hand).
_MATCHED = ("full", "duration", "workers", "cluster", "target", "server_on_cluster", "db_url")


@dataclass(frozen=True)
class Need:
    """One run the studies need: `workload` on `rows`, `repeat` times, under `memory_limit`."""
    workload: str
    rows: tuple[str, ...]
    repeat: int = REPEAT
    memory_limit: str | None = None
    why: tuple[str, ...] = field(default=(), compare=False)  # the studies' columns and claims it serves

    def options(self) -> dict[str, Any]:
        """The RunOptions fields a run measuring this need has (model.RunOptions.from_dict reads them)."""
        return {"servers": list(self.rows), "workloads": [self.workload], "repeat": self.repeat,
                "server_memory_limit": self.memory_limit, "split": "auto"}


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


def meets(options: dict[str, Any], need: Need) -> bool:
    """Whether a run stored with `options` measured what `need` asks (or more): its workloads include
    the need's, its servers all of the need's rows (None: every row), at least as many repetitions,
    the same memory ceiling and none of the options that change what is measured."""
    servers = options.get("servers")
    return (need.workload in (options.get("workloads") or [])
            and (servers is None or set(need.rows) <= set(servers))
            and int(options.get("repeat") or 0) >= need.repeat
            and options.get("server_memory_limit") == need.memory_limit
            and not any(options.get(k) for k in _MATCHED))


def _same(run: Any, need: Need) -> bool:
    """Whether `run` was started for exactly this need (its stored options say so)."""
    return all(run.options.get(k) == v for k, v in need.options().items() if k != "split")


def in_flight(runs: list[Any], need: Need) -> Any | None:
    """A run for exactly this need that a live process is measuring now (a second `seeds --measure`
    must not start the same run beside it)."""
    return next((r for r in reversed(runs) if r.shown_status == "running" and _same(r, need)), None)


def stored_for(runs: list[Any], need: Need) -> tuple[Any | None, Any | None]:
    """(a finished run that meets `need`, else None; the newest interrupted or failed run that was
    started for exactly this need, to resume, else None). `runs`: the store's RunRows."""
    done = next((r for r in reversed(runs) if r.status == "finished" and meets(r.options, need)), None)
    if done is not None:
        return done, None
    stopped = next((r for r in reversed(runs) if r.shown_status in ("interrupted", "failed", "abandoned")
                    and _same(r, need)), None)
    return None, stopped


__all__ = ["Need", "needs", "meets", "stored_for", "in_flight", "REPEAT", "MEMORY_LIMIT", "OUT_OF_MEMORY"]
