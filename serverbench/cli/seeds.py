"""`serverbench seeds` (and `make seeds`): the published studies beside stored runs, and with --measure
the runs they need, one per workload through the one runner (steps.measure, as `serverbench run`),
resumable; the needs come from seeds/plan.py, the runs read from seeds/runs.py."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import typer

from . import steps
from .common import fail, open_store, run_row
from .console import console

BUDGET_MIN = 90  # what `make seeds` is meant to take on the 2-core machine (issue 39)


def measure(store: Any, needs: list[Any]) -> list[int]:
    """Measure every need not yet met by a stored run (steps.measure_needs); the run ids used."""
    return steps.measure_needs(store, needs, again="`serverbench seeds --measure` (or `make seeds`)")


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
        planned = steps.planned_seconds(needs, False)
        console.print(steps.plan_table(store, needs, planned, "what the published studies need"))
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
