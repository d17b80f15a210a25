"""What a measuring command needs stored (`seeds --measure`, `study`): one run per workload on some
rows (`Need`), which stored run already meets a need, which interrupted one to resume, which one a live
process is measuring now. Pure: decided from the stored runs' options (RunRows), never by measuring.

One run per workload (not one matrix of every row by every workload) so that each need is met, resumed
or skipped on its own, and a second command needing the same workload reuses the stored run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Of the stored run options, these must equal a need's for that run to meet it (the rest, such as
# the CPU split, are the harness's choice on the machine at hand).
_MATCHED = ("full", "duration", "workers", "cluster", "target", "server_on_cluster", "db_url")


@dataclass(frozen=True)
class Need:
    """One run a command needs stored: `workload` on `rows`, `repeat` times, under `memory_limit`."""
    workload: str
    rows: tuple[str, ...]
    repeat: int = 3
    memory_limit: str | None = None
    why: tuple[str, ...] = field(default=(), compare=False)  # what it serves (a study's column, a profile column)

    def options(self) -> dict[str, Any]:
        """The RunOptions fields a run measuring this need has (model.RunOptions.from_dict reads them)."""
        return {"servers": list(self.rows), "workloads": [self.workload], "repeat": self.repeat,
                "server_memory_limit": self.memory_limit, "split": "auto"}


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
    (or `study`) must not start the same run beside it)."""
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


__all__ = ["Need", "meets", "stored_for", "in_flight"]
