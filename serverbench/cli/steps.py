"""The steps several commands take, written once: measure a run with its progress on the console and
its summary after, profile rows and print their table. Not commands: `run`, `bench`, `seeds --measure`
and `profile` call these; no command module imports another (the build-then-verify step is
verify/prepare.py's).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import typer
from rich.console import Console
from rich.table import Table

from ..rules import needs as needs_rule

from .common import fail, selected
from .console import console, err_console as err


def ready_rows(manifests: list[Any], store: Any, workloads: list[Any] | None = None) -> list[Any]:
    """verify/prepare.py's build-then-verify on the CLI's consoles: the rows that may be measured;
    exits 1 in one line when none passed. `workloads`: what will be measured, whose features' checks
    alone run (every check when None)."""
    from ..rules.admission import workload_features
    from ..verify.prepare import NothingPassed, prepare
    features = None if workloads is None else {f for w in workloads for f in workload_features(w)}
    try:
        return prepare(manifests, store, console, err, features)
    except NothingPassed as e:
        raise fail(str(e), 1) from None


def finish(store: Any, result: Any) -> None:
    """The summary of a run the runner just ended, from the one aggregation."""
    from ..results import aggregate
    from .views import print_summary
    _, results = aggregate.load(store, result.run_id)
    print_summary(console, results, result.status, (result.ok, result.failed, result.skipped))
    if result.status == "interrupted":
        from .. import paths
        db = "" if store.path == paths.DB_PATH else f" --db {store.path}"
        console.print(f"[yellow]interrupted[/]: the cell in flight was abandoned; continue with "
                      f"`serverbench run --resume {result.run_id}{db}`")


def measure(store: Any, opts: Any, **kw: Any) -> Any:
    """run_matrix with the console view; a run that fails is reported in one line, exit 1. Client-bound
    blocks the plan leaves are ordered by the fixed-rate step (run/fixed_rate.py) with the
    aggregation's own rule for what a block is (handed to the runner here: run/ never imports results/)."""
    from .views import RunView
    from ..run.runner import run_matrix
    from ..results.aggregate import fixed_rate_plans
    from ..database.schema import DatabaseError
    from ..run.events import RepetitionEnded
    view = RunView(console)

    def listen(ev: Any) -> None:
        view(ev)
        if isinstance(ev, RepetitionEnded) and ev.repetition == 1 and ev.repeat > 1:
            provisional(store, ev.run_id, ev.repeat)
    try:
        result = run_matrix(store, opts, on_event=listen, order_blocks=fixed_rate_plans, **kw)
    except KeyboardInterrupt:
        raise
    except DatabaseError as e:  # before anything was measured: the database could not be started or used
        raise fail(f"the database workloads need PostgreSQL: {e}", 1) from None
    except Exception as e:
        rid = store.latest_run_id()
        raise fail(f"run {rid} failed: {type(e).__name__}: {e}; its finished cells are kept — "
                   f"continue with `serverbench run --resume {rid}`", 1) from None
    finish(store, result)
    return result


def provisional(store: Any, run_id: int, repeat: int) -> Path:
    """The first answer, after every row's first repetition (`make bench` shows it about halfway): each
    point's first rows and the table, printed and written as run-<id>.provisional.md beside the reports,
    labelled provisional; one repetition is judged against no noise, the final report replaces it."""
    from .. import paths
    from ..exporters import opening, to_markdown
    from ..results import aggregate
    from .views import summary_table
    run, results = aggregate.load(store, run_id)
    label = (f"PROVISIONAL: 1 of {repeat} repetitions measured, judged against no noise; the final answer "
             f"follows when the run ends (run {run_id})")
    console.print(f"[bold yellow]{label}[/]")
    for wl, pt, _ in opening.glances(results):
        console.print(f"  {wl.name} · {pt.label}: " + ", then ".join(_ranked_figure(g) for g in pt.measured[:3]))
    table = summary_table(results)
    table.title = f"provisional: 1 of {repeat} repetitions"
    console.print(table)
    path = paths.REPORTS / f"run-{run_id}.provisional.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f"> **{label}.**\n\n".encode() + to_markdown.render(run, results))
    console.print(f"provisional Markdown: {path}")
    return path


def _ranked_figure(g: Any) -> str:
    """A row and the figure its point ranks by: the p99 for the fixed-demand kinds (noisy, head-of-line …),
    else the successful rate."""
    from ..catalog.kinds import P99_KINDS
    from ..results.formatting import fmt_us
    if g.kind in P99_KINDS:
        return f"{g.server} (p99 {fmt_us(g.median(lambda m: m.latency.p99_us))})"
    return f"{g.server} ({g.throughput.median:,.0f} req/s)" if g.throughput is not None else g.server


def run_profiles(ids: list[str] | None, store: Any, *, cold: bool, warm: bool = True, starts: int = 5,
                 levels: tuple[int, ...] | None = None, server_cpus: list[int] | None = None,
                 client_cpus: list[int] | None = None, workers: int | None = None,
                 only_changed: bool = False, out: Console = console,
                 startups: dict[str, list[float]] | None = None) -> list[Any]:
    """Profile `ids` (all when None), print each step and the table; the profiles (stored). `startups`:
    start-up times a run already measured per row (cost/idle_cost.startups_of), taken instead of new starts."""
    from ..cost.profiler import ProfileOptions, profile_servers
    from .views import profile_table
    opts = ProfileOptions(cold=cold, warm=warm, starts=starts, server_cpus=server_cpus or [], client_cpus=client_cpus or [],
                          workers=workers, only_changed=only_changed, startups=startups or {})
    if levels:
        opts.levels = levels
    profiles = []
    for p in profile_servers(selected(ids), store, opts, on_step=lambda s: err.print(f"[dim]· {s}[/]")):
        profiles.append(p)
        for e in p.errors:
            err.print(f"{p.server}: {e}", style="yellow", markup=False, highlight=False)
    out.print(profile_table(profiles))
    if not cold:
        out.print("[dim]--no-cold: cold builds skipped (an earlier cold figure of the same code is kept)[/]")
    if not warm:
        out.print("[dim]warm rebuilds skipped (an earlier figure of the same code is kept); "
                  "`serverbench profile` measures them[/]")
    out.print("[dim]↓ = dependency download timed apart before the cold build; elsewhere it is included[/]")
    return profiles


def plan_table(store: Any, needs: list[Any], planned: dict[str, float], title: str,
               keep: Callable[[Any], bool] | None = None, full: bool = False) -> Table:
    """The needs (rules/needs.Need) as a table: rows, repetitions, planned load, met / resumed (with the
    share of its planned cells stored) / to measure (by the stored runs `keep` allows, every run when None)."""
    t = Table(title=title, title_justify="left")
    for h in ("workload", "rows", "repetitions", "memory ceiling", "planned load", "stored", "for"):
        t.add_column(h, overflow="fold")
    runs = [r for r in store.runs() if keep is None or keep(r)]
    for n in needs:
        done, stopped = needs_rule.stored_for(runs, n)
        state = (f"met by run {done.id}" if done else "to measure" if not stopped else
                 f"resume run {stopped.id} ({stored_seconds(store, stopped.id, _sized([n], full)[n.workload])[1]:.0%} "
                 "stored)")
        t.add_row(n.workload, ", ".join(n.rows) if len(n.rows) <= 8 else f"{len(n.rows)} rows", str(n.repeat), n.memory_limit or "—",
                  f"{planned[n.workload] / 60:.1f} min", state, "; ".join(n.why))
    return t


def planned_seconds(needs: list[Any], full: bool) -> dict[str, float]:
    """Planned load seconds per need: the workload's warm-up and points × repetitions × the need's rows
    that their manifests do not keep out of it (runner.declared_out: tls_out, http2_out, db_out, ...;
    server starts and warm-up rounds to a steady rate come on top)."""
    return _planned(_sized(needs, full))


def _planned(sized: dict[str, tuple[Any, int, int]]) -> dict[str, float]:
    return {w: size.planned_seconds() * rows * repeat for w, (size, rows, repeat) in sized.items()}


def _sized(needs: list[Any], full: bool) -> dict[str, tuple[Any, int, int]]:
    """Per need: the workload's size, the rows its manifests do not keep out of it, the repetitions."""
    from ..catalog import workloads as wl
    from ..model import RunOptions
    from ..run.runner import declared_out
    ws = wl.load_workloads()
    manifests = {m.id: m for m in selected(list(dict.fromkeys(r for n in needs for r in n.rows)))}
    out = {}
    for n in needs:
        w, opts = ws[n.workload], RunOptions.from_dict(n.options())
        rows = sum(1 for r in n.rows if declared_out(manifests[r], w, opts) is None)
        out[n.workload] = (w.size(full), rows, n.repeat)
    return out


def measure_needs(store: Any, needs: list[Any], again: str, full: bool = False,
                  keep: Callable[[Any], bool] | None = None) -> list[int]:
    """Measure every need (rules/needs.Need) not yet met by a stored run, resuming one interrupted for
    it; the run ids used, in the needs' order. `keep`: which stored runs may meet or be resumed for a
    need (the study's: measured here by the same code), every run when None. Before each run, a line with the runs left and the time
    they are planned to take, scaled by how the runs measured so far compared with their plan (an ETA
    across runs; each run shows its own bar). Ctrl-C stops after storing the finished cells: `again`
    resumes."""
    rows = list(dict.fromkeys(r for n in needs for r in n.rows))
    from ..catalog import workloads as wl
    ready = {m.id: m for m in ready_rows(selected(rows), store,
                                         wl.select(wl.load_workloads(), [n.workload for n in needs]))}
    sized = _sized(needs, full)
    planned = _planned(sized)
    used: list[int] = []
    eta = _Eta(sum(planned.values()))
    for i, n in enumerate(needs):
        have = tuple(r for r in n.rows if r in ready)
        if not have:
            console.print(f"[yellow]{n.workload}: none of {', '.join(n.rows)} passed verify; not measured[/]")
            eta.skip(planned[n.workload])
            continue
        need = needs_rule.Need(n.workload, have, n.repeat, n.memory_limit, n.why)
        if (busy := needs_rule.in_flight(store.runs(), need)) is not None:
            raise fail(f"{n.workload}: run {busy.id} is being measured by process "
                       f"{(busy.owner or '?').split('@')[0]}; wait for it or stop that process, then run this again", 1)
        done, stopped = needs_rule.stored_for([r for r in store.runs() if keep is None or keep(r)], need)
        if done is not None:
            console.print(f"{n.workload}: already measured in run {done.id}")
            used.append(done.id)
            eta.done(planned[n.workload], stored_seconds(store, done.id, sized[n.workload])[0])
            continue
        part = 0.0  # of the plan, what an interrupted run stored before (in an earlier session, perhaps)
        if stopped is not None:
            took_before, share = stored_seconds(store, stopped.id, sized[n.workload])
            part = planned[n.workload] * share
            eta.done(part, took_before)
        console.print(f"[bold]{n.workload}[/] ({i + 1} of {len(needs)}): {eta.line()}")
        t0 = time.monotonic()
        result = _measure_need(store, need, stopped, [ready[r] for r in have], full)
        took = time.monotonic() - t0
        eta.done(planned[n.workload] - part, took)
        console.print(f"{n.workload}: run {result.run_id} {result.status} in {took / 60:.1f} min")
        if result.status == "interrupted":
            console.print(f"[yellow]interrupted[/]: {again} continues it")
            raise typer.Exit(130)
        used.append(result.run_id)
    return used


def _measure_need(store: Any, need: Any, stopped: Any, manifests: list[Any], full: bool) -> Any:
    """One need's run: the stopped one resumed, else a new one with the need's options."""
    from ..catalog import workloads as wl
    from ..model import RunOptions
    if stopped is not None:
        console.print(f"{need.workload}: resuming run {stopped.id}")
        result = measure(store, RunOptions(), resume=stopped.id)
    else:
        opts = RunOptions.from_dict({**need.options(), "full": full})
        result = measure(store, opts, manifests=manifests, workloads=wl.select(wl.load_workloads(), [need.workload]))
    return result


def stored_seconds(store: Any, run_id: int, sized: tuple[Any, int, int]) -> tuple[float, float]:
    """What a stored run measured, for the ETA of a command resumed in another session: (the seconds its
    cells took, each from its start to its end, server start and warm-up included and the time between
    sessions not; the share of the need's planned cells it holds, its workload's own points, not the
    fixed-rate step's). The cells of the study's first runs took 0.93-0.97 of their runs' wall time."""
    from datetime import datetime
    size, rows, repeat = sized
    labels = {p.label for p in size.points}
    took, mine = 0.0, 0
    for c in store.cells(run_id):
        mine += c.point in labels
        if c.started_at and c.finished_at:
            took += (datetime.fromisoformat(c.finished_at) - datetime.fromisoformat(c.started_at)).total_seconds()
    planned_cells = len(size.points) * rows * repeat
    return took, min(1.0, mine / planned_cells) if planned_cells else 1.0


class _Eta:
    """The time the runs left are planned to take, scaled by measured ÷ planned of what was measured
    (server starts and warm-ups to a steady rate come on top of a plan's load seconds): this session's
    runs, and the stored cells of the runs it keeps or resumes."""

    def __init__(self, planned_s: float) -> None:
        self.left, self.planned_done, self.measured = planned_s, 0.0, 0.0

    def skip(self, planned_s: float) -> None:
        self.left -= planned_s

    def done(self, planned_s: float, measured_s: float) -> None:
        """`planned_s` of the plan measured, in `measured_s`; a stored run without cell times (0 s) only
        shortens what is left."""
        self.left -= planned_s
        if measured_s > 0:
            self.planned_done += planned_s
            self.measured += measured_s

    def line(self) -> str:
        if self.planned_done <= 0:
            return f"{self.left / 60:.0f} min of load planned for the runs left (starts and warm-ups on top)"
        factor = self.measured / self.planned_done
        return (f"about {self.left * factor / 60:.0f} min left (what was measured so far took {factor:.1f}× "
                f"its planned load)")

__all__ = ["finish", "measure", "provisional", "measure_needs", "plan_table", "planned_seconds", "ready_rows", "run_profiles", "stored_seconds"]
