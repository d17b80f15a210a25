"""`serverbench seeds` (and `make seeds`): the published studies beside stored runs, and with --measure
the runs they need, one per workload through the one runner (steps.measure, as `serverbench run`),
resumable; the needs come from seeds/plan.py, the runs read from seeds/runs.py."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from . import steps
from .common import fail, open_store, run_row, selected
from .console import console

BUDGET_MIN = 90  # what `make seeds` is meant to take on the 2-core machine (issue 39)


def _plan_table(store: Any, needs: list[Any], planned: dict[str, float]) -> Table:
    from ..seeds import plan
    t = Table(title="what the published studies need", title_justify="left")
    for h in ("workload", "rows", "repetitions", "memory ceiling", "planned load", "stored", "for"):
        t.add_column(h, overflow="fold")
    runs = store.runs()
    for n in needs:
        done, stopped = plan.stored_for(runs, n)
        state = (f"met by run {done.id}" if done else f"resume run {stopped.id}" if stopped else "to measure")
        t.add_row(n.workload, ", ".join(n.rows), str(n.repeat), n.memory_limit or "—",
                  f"{planned[n.workload] / 60:.1f} min", state, "; ".join(n.why))
    return t


def _planned(needs: list[Any], full: bool) -> dict[str, float]:
    """Planned load seconds per need: the workload's warm-up and points × rows × repetitions (server
    starts and warm-up rounds to a steady rate come on top)."""
    from ..catalog import workloads as wl
    ws = wl.load_workloads()
    return {n.workload: ws[n.workload].size(full).planned_seconds() * len(n.rows) * n.repeat for n in needs}


def measure(store: Any, needs: list[Any]) -> list[int]:
    """Measure every need not yet met by a stored run (resuming one interrupted for it); the run ids
    used, in the needs' order. Ctrl-C stops after storing the finished cells: the same command resumes."""
    from ..catalog import workloads as wl
    from ..model import RunOptions
    from ..seeds import plan
    rows = list(dict.fromkeys(r for n in needs for r in n.rows))
    ready = {m.id: m for m in steps.ready_rows(selected(rows), store)}
    used = []
    for n in needs:
        have = tuple(r for r in n.rows if r in ready)
        if not have:
            console.print(f"[yellow]{n.workload}: none of {', '.join(n.rows)} passed verify; not measured[/]")
            continue
        need = plan.Need(n.workload, have, n.repeat, n.memory_limit, n.why)
        if (busy := plan.in_flight(store.runs(), need)) is not None:
            raise fail(f"{n.workload}: run {busy.id} is being measured by process "
                       f"{(busy.owner or '?').split('@')[0]}; wait for it or stop that process, then run this again", 1)
        done, stopped = plan.stored_for(store.runs(), need)
        if done is not None:
            console.print(f"{n.workload}: already measured in run {done.id}")
            used.append(done.id)
            continue
        t0 = time.monotonic()
        if stopped is not None:
            console.print(f"{n.workload}: resuming run {stopped.id}")
            result = steps.measure(store, RunOptions(), resume=stopped.id)
        else:
            opts = RunOptions.from_dict(need.options())
            result = steps.measure(store, opts, manifests=[ready[r] for r in have],
                              workloads=wl.select(wl.load_workloads(), [n.workload]))
        console.print(f"{n.workload}: run {result.run_id} {result.status} in {(time.monotonic() - t0) / 60:.1f} min")
        if result.status == "interrupted":
            console.print("[yellow]interrupted[/]: `serverbench seeds --measure` (or `make seeds`) continues it")
            raise typer.Exit(130)
        used.append(result.run_id)
    return used


def seeds_cmd(run: Optional[int] = typer.Option(None, "--run", help="one run id (default: for each workload "
                                                "a study reads, the run that measured the most of its rows)"),
              do_measure: bool = typer.Option(False, "--measure", help="first measure what the studies need "
                                              "and no stored run has (build, verify, one run per workload, "
                                              "3 repetitions; resumable: run it again after an interruption)"),
              plan_only: bool = typer.Option(False, "--plan", help="print what --measure would measure, and its "
                                             "planned load time, and stop"),
              repeat: int = typer.Option(3, "--repeat", min=1, help="repetitions per row for --measure"),
              db: Optional[Path] = typer.Option(None, "--db", help="results database")) -> None:
    """The published studies' tables (seeds/*.toml) beside stored runs: pairs kept and flipped, Kendall's
    tau, each flip's measured cause or "unexplained", each claim answered from the measurements."""
    from ..results import aggregate
    from ..seeds import plan, runs, section, studies
    try:
        loaded = studies.load_all()
    except studies.SeedsError as e:
        raise fail(str(e)) from None
    if do_measure or plan_only:
        store = open_store(db)
        needs = plan.needs(loaded, repeat)
        planned = _planned(needs, False)
        console.print(_plan_table(store, needs, planned))
        total = sum(planned.values()) / 60
        console.print(f"planned load {total:.0f} min (server starts and warm-ups to a steady rate come on top); "
                      f"the budget on the 2-core machine is {BUDGET_MIN} min")
        if plan_only:
            return
        t0 = time.monotonic()
        measure(store, needs)
        console.print(f"measured in {(time.monotonic() - t0) / 60:.1f} min")
    store = open_store(db, must_exist=True)
    if run is not None:
        row, results = aggregate.load(store, run_row(store, run).id)
        print("\n".join(section.markdown(row, results, loaded, everything=True)))
        return
    found = runs.latest(store, plan.needs(loaded, repeat))
    if found.newest is None:
        raise fail(f"no run in {store.path} measured a study's workload; run `serverbench seeds --measure` "
                   "(or `make seeds`) first")
    print("\n".join(section.markdown(found.newest, found, loaded, everything=True)))


def register(app: typer.Typer) -> None:
    """Add `seeds` to the main app."""
    app.command("seeds")(seeds_cmd)
