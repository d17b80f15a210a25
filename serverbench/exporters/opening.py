"""How every report opens, shared by Markdown and HTML: the answer first (one verdict per workload
point, and which point the summary chart shows), then what the user chose, as a table of options
in words (defaults marked), instead of a raw dump."""
from __future__ import annotations

from typing import Any

from ..results.aggregate import PointData, RunResults, WorkloadData
from ..model import RunOptions
from ..results.ranking import Glance

# What each stored run option means, in the reader's words (RunOptions' fields, in this order).
OPTION_WORDS: dict[str, str] = {
    "servers": "rows measured (none named: every verified row)",
    "workloads": "workloads",
    "repeat": "repetitions (fresh server start each; alternating order)",
    "full": "full sizes (else quick)",
    "duration": "measured duration override per point",
    "server_cpus": "server CPUs",
    "client_cpus": "load generator CPUs",
    "split": "how the CPUs were split",
    "workers": "$WORKERS override",
    "allow_unverified": "rows that failed verify measured anyway",
    "ready_timeout": "seconds a server may take to answer its first request",
    "server_memory_limit": "memory limit per server start",
    "cluster": "load generator shards on a Dask cluster",
    "cluster_tls": "TLS for the Dask scheduler",
    "server_on_cluster": "server started on the cluster's server worker",
    "target": "an external server measured as is",
    "db_url": "db workloads: an existing PostgreSQL (password masked)",
    "db_cpus": "db workloads: the harness's PostgreSQL's CPUs (— = the load generator's)",
}


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) or "—"
    if isinstance(v, dict):
        return "set" if v else "—"
    return str(v)


def options_rows(options: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """(option, value, 'default' or 'chosen') for every option the run stored, known ones first."""
    opts = dict(options or {})
    defaults = RunOptions().to_dict()
    names = [k for k in OPTION_WORDS if k in opts] + sorted(k for k in opts if k not in OPTION_WORDS)
    out = []
    for k in names:
        v = opts[k]
        chosen = "default" if k in defaults and defaults[k] == v else "chosen"
        out.append((OPTION_WORDS.get(k, k), _fmt(v), chosen))
    return out


def glances(results: RunResults) -> list[tuple[WorkloadData, PointData, Glance]]:
    """Each workload point's verdict (sweeps with many points: their heaviest point only)."""
    out = []
    for wl in results.workloads:
        for pt in (wl.points if len(wl.load_points) <= 3 else wl.load_points[-1:]):
            if pt.measured:
                out.append((wl, pt, pt.glance))
    return out


def summary_point(results: RunResults) -> tuple[WorkloadData, PointData] | None:
    """The point the opening chart shows: the first throughput point measured, else the first point."""
    candidates = [(wl, pt) for wl in results.workloads for pt in wl.points if pt.measured]
    for wl, pt in candidates:
        if wl.kind in ("throughput", "sweep", "cores", "capacity"):
            return wl, pt
    return candidates[0] if candidates else None


def judged_line(results: RunResults) -> str:
    """One sentence on how the verdicts were reached (repetitions, intervals, ties)."""
    reps = sorted({g.throughput.n for g in results.groups if g.throughput is not None})
    if not reps:
        return "No row produced a result."
    if reps[-1] < 2:
        return ("1 repetition: no verdict is judged against noise; run with --repeat 3 (make bench does) for "
                "intervals, leaders and ties.")
    return (f"{'–'.join(map(str, (reps[0], reps[-1]))) if len(reps) > 1 else reps[0]} repetitions per row, each "
            "a fresh start warmed to a steady rate. A leader is named only when no other row's median interval "
            "(order statistics; with up to 5 repetitions the min–max range, covering the median with 75 % at 3 "
            "and 94 % at 5) overlaps it and the gap exceeds the noise; otherwise the tied rows are named.")


__all__ = ["OPTION_WORDS", "options_rows", "glances", "summary_point", "judged_line"]
