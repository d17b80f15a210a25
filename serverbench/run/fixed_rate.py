"""The fixed-rate step: an order for the top rows that requests/s cannot order, independent of the client.

On a 1:1 split the load generator costs about what the best servers cost per request (both are mostly
the kernel's loopback path), so several rows of a throughput point saturate the client and their
requests/s is the client's figure: the report groups them as one block ("limited by the load
generator"). After the plan, each such block (two or more clean, fair, steady rows that saturated the
client in most repetitions; results/ranking.client_block decides, read from the stored cells) is
measured again at ONE common offered rate below the client's ceiling: `model.FIXED_RATE_SHARE` of the lowest
member's median, the same for every member, open load on the point's own path with its connections as
the pool, each start warmed to a steady rate as usual. Its cells are a point of kind `efficiency`
(labelled "<point> at a fixed rate", `fixed_rate_of` = the point's label), ranked by server CPU per
successful request; the block's verdict reads that order (HttpArena ranks efficiency the same way:
a fixed rate, server CPU per request). Where no block forms but rows are tied with the first within
the repetitions' noise, those rows are measured and ordered the same way (ranking.unordered_top): a
tie by requests/s can still differ by the CPU each request costs.

The step runs inside the run (resumable like every cell: stored cells are skipped), so `make bench`
and `serverbench run` give the same answer. From the second repetition on, a row the cells so far plan
for measures its fixed-rate point in its own start, right after the closed point (`InStart`), and so
does a row near the tie (the plan's `near`: the rate was chosen for it too) on the chance that it joins:
a start of its own costs a fresh start and a warm-up to steady (16 s a cell in the study's prantl-wrk),
the point in a warm start 6 s. At the end the step plans the rows of the final tie only (`InStart.final`);
what they still lack (the first repetition, rows that joined later) gets starts of their own at the
same rate (lowered, and its earlier cells measured again, when a row that joined later needs a lower
one). A row measured in its own starts that is not in the final tie gets no more: the aggregation
leaves its cells out of the step's ranking and names it (results/aggregate.py).
Which rows form a block is the aggregation's rule, so the
CLI hands the runner a `BlockFinder` (results/aggregate.fixed_rate_plans); run/ imports nothing
from results/.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable, Protocol

from ..catalog.workloads import Point, Size, Workload
from ..model import FIXED_RATE_KEPT, FIXED_RATE_SHARE, CellRecord, FixedRatePlan, RunOptions
from . import measure
from .events import CellStarted, Listener

SUFFIX = " at a fixed rate"  # the step's point: "<point> at a fixed rate"

BlockFinder = Callable[[list[CellRecord]], list[FixedRatePlan]]


class Runner(Protocol):
    """What the step uses of runner.Runner (which calls this module, so it is not imported here)."""

    opts: RunOptions
    manifests: list[Any]
    workloads: list[Workload]
    done: set[tuple[str, str, str, int]]
    emit: Listener
    log_dir: Path

    def size(self, w: Workload) -> Size: ...

    def run_start(self, rep: int, m: Any, w: Workload, size: Size, todo: list[Point], cpus: list[int] | None,
                  log_path: Path, extra: dict[str, Any] | None = None) -> None: ...


def label(point_label: str) -> str:
    return f"{point_label}{SUFFIX}"


def fixed_point(p: Point, rate: float) -> Point:
    """`p`'s request as an open load at `rate`, its connections the pool, its duration and timeout."""
    return Point(label=label(p.label), mode="open", path=p.path, method=p.method, headers=p.headers, body=p.body,
                 rate=float(round(rate)), max_connections=p.connections, keepalive=p.keepalive,
                 duration=p.duration, requests=None, timeout=p.timeout, threads=p.threads, tls=p.tls,
                 http2=p.http2, streams=p.streams)


def of_label(point_label: str) -> dict[str, str]:
    """The `fixed_rate_of` a cell of this point carries: the ordered point's label (none for other points)."""
    return {"fixed_rate_of": point_label[:-len(SUFFIX)]} if point_label.endswith(SUFFIX) else {}


class InStart:
    """The step's points measured in the rows' own starts (issue 49): after each repetition the plans the
    stored cells give so far (`finder`: a client-bound block forms from one repetition, a tie from two),
    and in the later repetitions each planned row's start, and each near row's (`FixedRatePlan.near`),
    measures its fixed-rate point right after the closed point it orders, with the brief warm-up (the
    start is warm), instead of a start of its own.
    One rate per point for the whole run, below every member's median: a later plan whose rows need a
    lower rate (a row that joined the tie serves less than the first members) lowers it, and the cells
    measured at the higher rate are measured again at the end (`stale`), never mixed with the others."""

    def __init__(self) -> None:
        self.finder: BlockFinder | None = None
        self.plans: dict[tuple[str, str], FixedRatePlan] = {}

    def predict(self, cells: list[CellRecord]) -> None:
        """The plans so far, merged into the ones made before (rows added, the lower rate kept)."""
        if self.finder is None:
            return
        for plan in self.settle(self.finder(cells)):
            self.plans[(plan.workload, plan.point)] = plan

    def final(self, plans: list[FixedRatePlan], cells: list[CellRecord]) -> list[FixedRatePlan]:
        """The step's plans after the last repetition: the final ties' rows (`plans`, the finder's) at the
        rate their stored fixed-rate cells were measured at (this process's plan, or on a resumed run the
        cells' own) while every member can hold it, else at their own lower rate. Rows planned before that
        left the tie, near rows that never joined it, and points whose tie dissolved get no start of their
        own: their cells stay stored, out of the step's ranking."""
        used: dict[tuple[str, str], Counter[float]] = {}
        for c in cells:
            if c.metrics.fixed_rate_of and c.metrics.offered.target_rate:
                used.setdefault((c.workload, c.metrics.fixed_rate_of), Counter())[c.metrics.offered.target_rate] += 1
        out = []
        for plan in plans:
            before = self.plans.get((plan.workload, plan.point))
            rates = used.get((plan.workload, plan.point))
            rate = before.rate if before is not None else rates.most_common(1)[0][0] if rates else None
            # no repetition is left to come, so the rate need only be one the final tie's rows hold
            if rate is not None and _holds(rate, plan, members=True):
                plan = FixedRatePlan(plan.workload, plan.point, plan.servers, rate, plan.near, plan.floor)
            out.append(plan)
        return out

    def settle(self, plans: list[FixedRatePlan]) -> list[FixedRatePlan]:
        """`plans` merged into the ones made before, for the next repetition's starts: rows and near rows
        added, at the rate chosen before while the tie's members hold it (FIXED_RATE_KEPT of their lowest
        median), else at the new lower rate; a point planned before that `plans` no longer names (its tie
        dissolved) stays, so a tie that forms again keeps its one rate. What gets starts of its own after
        the last repetition is `final`'s: the final tie only."""
        now = {(p.workload, p.point) for p in plans}
        out = [before for key, before in self.plans.items() if key not in now]
        for plan in plans:
            before = self.plans.get((plan.workload, plan.point))
            if before is not None:
                rows = tuple(sorted(set(before.servers) | set(plan.servers)))
                near = tuple(sorted((set(before.near) | set(plan.near)) - set(rows)))
                plan = FixedRatePlan(plan.workload, plan.point, rows,
                                     before.rate if _holds(before.rate, plan, members=True) else plan.rate, near, plan.floor)
            out.append(plan)
        return out

    def extend(self, rep: int, server: str, workload: str, points: list[Point],
               done: set[tuple[str, str, str, int]]) -> list[Point]:
        """One start's points, each closed point this row is planned for followed by its fixed-rate point."""
        out = []
        for p in points:
            out.append(p)
            plan = self.plans.get((workload, p.label))
            if plan is not None and server in (*plan.servers, *plan.near) and p.mode == "closed" and \
                    (server, workload, label(p.label), rep) not in done:
                out.append(fixed_point(p, plan.rate))
        return out


def _holds(rate: float, plan: FixedRatePlan, members: bool = False) -> bool:
    """Whether `plan`'s rows can hold `rate`: at most FIXED_RATE_KEPT of the lowest median among its members
    (`members`, its `floor`), else among its members and near rows (plan.rate is FIXED_RATE_SHARE of that),
    so medians moving a little with more repetitions do not send the cells measured at it back."""
    if members and plan.floor:
        return rate <= FIXED_RATE_KEPT * plan.floor
    return rate <= plan.rate / FIXED_RATE_SHARE * FIXED_RATE_KEPT


def stale(cells: list[CellRecord], plans: list[FixedRatePlan]) -> set[tuple[str, str, str, int]]:
    """The keys of fixed-rate cells measured at another rate than their point's plan has now (the rate
    fell when a slower row joined): not done, so the step measures them again at the plan's rate, and
    the new cell replaces the old one (store.record_cell)."""
    rate = {(p.workload, p.point): float(round(p.rate)) for p in plans}
    out = set()
    for c in cells:
        of = c.metrics.fixed_rate_of
        want = rate.get((c.workload, of)) if of else None
        if want is not None and c.metrics.offered.target_rate not in (None, want):
            out.add((c.server, c.workload, c.point, c.repetition))
    return out


def run_step(runner: Runner, plans: list[FixedRatePlan]) -> None:
    """Measure every plan's rows at its rate, each repetition a fresh start, in the matrix's order
    (measure.rounds: repetitions outermost, every other one reversed); cells already stored are skipped."""
    workloads = {w.name: w for w in runner.workloads}
    manifests = {m.id: m for m in runner.manifests}
    cells = []
    for plan in plans:
        w = workloads.get(plan.workload)
        base = next((p for p in runner.size(w).points if p.label == plan.point), None) if w else None
        if w is not None and base is not None and base.mode == "closed":
            cells += [(plan, w, fixed_point(base, plan.rate), sid) for sid in plan.servers if sid in manifests]
    for rep, (plan, w, fp, sid) in measure.rounds(runner.opts.repeat, cells):
        if (sid, w.name, fp.label, rep) in runner.done:
            continue
        runner.emit(CellStarted(f"{sid} · {w.name} · {fp.label} ({plan.rate:,.0f} req/s, ordering the "
                                f"client-bound block of {plan.point}) · r{rep}"))
        log = runner.log_dir / f"{sid}.{w.name}.fixed-rate.r{rep}.log"
        runner.run_start(rep, manifests[sid], w, runner.size(w), [fp], None, log, {"fixed_rate_of": plan.point})


__all__ = ["SUFFIX", "BlockFinder", "Runner", "InStart", "label", "of_label", "fixed_point", "run_step", "stale"]
