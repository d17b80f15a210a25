"""A stored run's life: the harness on the client CPUs while it measures, then its status.

`finished` only when the plan completed; Ctrl-C / SIGTERM (KeyboardInterrupt) ends it
`interrupted` and is absorbed (the caller returns the result); any other exception ends it
`failed` with the error stored, then propagates. The matrix runner and the cross-check both
measure through `measured_run`, so their runs end by the same rules.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .events import Listener, RunEnded


@dataclass
class MatrixResult:
    run_id: int
    status: str  # finished | interrupted | failed
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    error: str | None = None


@contextmanager
def measured_run(store: Any, run_id: int, client_cpus: list[int], on_event: Listener, *, unfinished: str,
                 cleanup: Callable[[], None] | None = None) -> Iterator[list[MatrixResult]]:
    """Pin the harness to `client_cpus` for the body, then store the run's status and announce it.
    Yields a list that holds the MatrixResult once the body has ended (also after Ctrl-C)."""
    own = os.sched_getaffinity(0)
    # The harness (and the sampler thread it starts) runs on the client CPUs, never on the
    # server's: what it costs is then charged to the side whose saturation is detected.
    os.sched_setaffinity(0, set(client_cpus) or own)
    status, error = "failed", unfinished
    out: list[MatrixResult] = []
    try:
        yield out
        status, error = "finished", None
    except KeyboardInterrupt:
        status, error = "interrupted", None
    except BaseException as e:
        error = f"{type(e).__name__}: {e}"
        raise
    finally:
        try:
            if cleanup is not None:
                cleanup()
        finally:
            os.sched_setaffinity(0, own)
            store.finish_run(run_id, status, error)
            cells = store.cells(run_id)
            res = MatrixResult(run_id, status, sum(c.status == "ok" for c in cells),
                               sum(c.status == "failed" for c in cells), sum(c.status == "skipped" for c in cells),
                               error)
            out.append(res)
            on_event(RunEnded(run_id, status, error, res.ok, res.failed, res.skipped))


__all__ = ["MatrixResult", "measured_run"]
