"""The cores sweep (workload kind `cores`): one point per server CPU count 1, 2, 4 … up to the
server's CPUs (on one machine the run's server CPUs, e.g. --server-cpus 0-7 → 1, 2, 4, 8; with
--server-on-cluster the server machine's), each on a fresh server start pinned to that many CPUs.
Runner._sweep_cpus decides which CPUs those are.

The runner expands a `server_cores = "sweep"` point here (`expand`); aggregate.Group reads a group's
core count, the overlap flag and its warning from here. A count at which the server's CPUs are also
the load generator's (one machine too small to give each side its own) is stored with
`cpu_overlap` and flagged: its figure mixes both sides' work, so it is shown, marked, never ranked.
"""
from __future__ import annotations

from typing import Any, Protocol, TypeVar

from ..model import CellRecord, FigureGroup

SWEEP = "sweep"


def counts(n_cpus: int) -> list[int]:
    """The core counts a sweep measures on a server machine with `n_cpus` CPUs: the powers of two
    below it, then the count itself (6 CPUs: 1, 2, 4, 6)."""
    if n_cpus < 1:
        raise ValueError(f"a server machine has at least 1 CPU, got {n_cpus}")
    out, k = [], 1
    while k < n_cpus:
        out.append(k)
        k *= 2
    return out + [n_cpus]


class _Point(Protocol):
    """What the sweep reads of a workload point (catalog/workloads.Point; rules/ imports no catalog)."""

    label: str
    server_cores: Any

    def model_copy(self, *, update: dict[str, Any]) -> Any: ...


P = TypeVar("P", bound=_Point)


def expand(points: list[P], n_cpus: int) -> list[P]:
    """Each `server_cores = "sweep"` point replaced by one point per count, labelled `<label>=<k>`
    (a template labelled "cores" gives cores=1, cores=2, …); a point that names a quiet twin (head-of-line)
    names its twin at the same count; other points unchanged."""
    out: list[P] = []
    for p in points:
        if p.server_cores != SWEEP:
            out.append(p)
            continue
        twin = getattr(p, "twin", None)
        out += [p.model_copy(update={"label": f"{p.label}={k}", "server_cores": k,
                                     **({"twin": f"{twin}={k}"} if twin else {})}) for k in counts(n_cpus)]
    return out


def by_count(points: list[P]) -> list[list[P]]:
    """The points with a core count grouped by it, in order of first appearance: the points at one count share
    one server start (a head-of-line point and its quiet twin are compared within one start)."""
    groups: dict[Any, list[P]] = {}
    for p in points:
        if p.server_cores is not None:
            groups.setdefault(p.server_cores, []).append(p)
    return list(groups.values())


class GroupCores(FigureGroup):
    """A group's cores-sweep figures (GroupFigures.cores)."""

    server_cores: int | None = None  # the point's server CPU count
    cpu_overlap: bool = False  # whether the load generator shared those CPUs (a flagged figure)


def figures(cells: list[CellRecord]) -> GroupCores:
    """A group's core count and whether any repetition shared CPUs with the load generator."""
    ks = sorted({c.metrics.setup.server_cores for c in cells if c.metrics.setup.server_cores is not None})
    return GroupCores(server_cores=ks[-1] if ks else None, cpu_overlap=any(c.metrics.setup.cpu_overlap for c in cells))


def warnings(cells: list[CellRecord], over_time: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(kind, severity, text): the group's over-time warnings, plus cpu-overlap when the server shared CPUs
    with the load generator; that group's shared-cpu warning is folded into it (the same cause, told once)."""
    shared = [c for c in cells if c.metrics.setup.cpu_overlap]
    if not shared:
        return over_time
    m = shared[0].metrics
    on = ",".join(str(x) for x in m.setup.server_cpu_list or []) or "?"
    others = sorted(o for c in shared if (o := c.metrics.over_time.others_cpu_percent) is not None)
    busy = (f", where other processes (the load generator among them) used {others[len(others) // 2]:.0f} % "
            "(100 = one CPU)") if others else ""
    return [w for w in over_time if w[0] != "shared-cpu"] + [(
        "cpu-overlap", "warning",
        f"server and load generator shared CPU(s) at {m.setup.server_cores} server cores (server on CPU {on}{busy}; "
        "the machine has too few CPUs to give each side its own): the figures mix both sides' work, not "
        f"a clean {m.setup.server_cores}-core result, so the scaling table does not rank by it")]


__all__ = ["GroupCores", "SWEEP", "by_count", "counts", "expand", "figures", "warnings"]
