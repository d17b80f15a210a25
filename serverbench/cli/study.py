"""`serverbench study` (and `make study`): every row on every kind of work the profile table shows
(results/profile_columns.py), quick sizes, 3 repetitions: build and verify first, one run per workload
through the one runner (steps.measure_needs: met runs kept, an interrupted one resumed, an ETA before
each run and a bar during it), then the report, which opens with the profile table.

One run per workload, as `seeds --measure` does: a run stopped by Ctrl-C or a crash is resumed by the
same command, and a workload a stored run already measured on these rows, here and by the same
measuring code, is not measured again.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from . import steps
from .common import fail, open_store, selected
from .console import console

REPEAT = 3


def study_workloads() -> list[str]:
    """The workload of each profile column (its first source: the one a study measures), in the
    columns' order, each once."""
    from ..results.profile_columns import COLUMNS
    return list(dict.fromkeys(w.sources[0].workload for w in COLUMNS))


def needs(rows: list[str], repeat: int) -> list[Any]:
    """One need per study workload, on every row given (rules/needs.Need)."""
    from ..rules.needs import Need
    return [Need(w, tuple(rows), repeat, None, ("profile",)) for w in study_workloads()]


def comparable_here() -> Callable[[Any], bool]:
    """Which stored runs the study may keep: those its report's profile table will set beside a run
    measured now (the same machine and measuring code, rules/fingerprint.differs), so a workload
    "already measured" is never one the report then leaves out. A study spread over several sessions
    keeps its runs across commits that touch only words, tests or the report's side."""
    from ..rules.fingerprint import differs, normalize
    from ..run.fingerprint import here
    now = here()
    return lambda run: differs(normalize(run.fingerprint), now) is None


def left_out_here(runs: list[Any]) -> list[str]:
    """One line per reason stored runs are not kept (rules/fingerprint.differs), naming them, so a plan of
    "to measure" over a store full of runs says why rather than starting over in silence."""
    from ..rules.fingerprint import differs, normalize
    from ..run.fingerprint import here
    now = here()
    by: dict[str, list[int]] = {}
    for run in runs:
        fp = normalize(run.fingerprint)
        why = differs(fp, now)
        if why is None:
            continue
        # only the code differs (this machine): the run's own commit can go on with it
        code_only = differs(fp, {**now, "measuring_code": fp.get("measuring_code"),
                                 "git_commit": fp.get("git_commit")}) is None
        if code_only:
            why += "; a study measured by other code goes on from the commit that measured it (studies/README.md)"
        by.setdefault(why, []).append(run.id)
    return [f"stored run{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} not kept: {why}"
            for why, ids in by.items()]


def study_cmd(servers: Optional[list[str]] = typer.Option(None, "--servers", "-s",
                                                          help="Server ids (repeatable or comma-separated); "
                                                               "default: every row."),
              repeat: int = typer.Option(REPEAT, "--repeat", min=1, help="Repetitions per row and workload."),
              plan_only: bool = typer.Option(False, "--plan", help="Print the plan and its planned load time, "
                                             "and stop."),
              db: Optional[Path] = typer.Option(None, "--db", help="Results database.")) -> None:
    """Measure every row on every kind of work of the profile table (plaintext, JSON, the database
    workloads, TLS, noisy neighbours, overload, CPU work, the database taken away): build, verify, one
    resumable run per workload, then the report opening with the profile table. Run it again after an
    interruption: it resumes."""
    from .. import paths
    from ..exporters.report import write_report
    store = open_store(db)
    ids = [x for s in servers or [] for x in s.split(",") if x] or None
    rows = [m.id for m in selected(ids)]
    wanted = needs(rows, repeat)
    planned = steps.planned_seconds(wanted, False)
    keep = comparable_here()
    console.print(steps.plan_table(store, wanted, planned, f"the profile: {len(rows)} rows × "
                                   f"{len(wanted)} workloads × {repeat} repetitions", keep))
    for line in left_out_here(store.runs()):
        console.print(line)
    console.print(f"planned load {sum(planned.values()) / 60:.0f} min (server starts, warm-ups to a steady rate, "
                  "builds and verify come on top)")
    if plan_only:
        return
    t0 = time.monotonic()
    used = steps.measure_needs(store, wanted, again="`serverbench study` (or `make study`)", keep=keep)
    console.print(f"study measured in {(time.monotonic() - t0) / 60:.1f} min")
    if not used:
        raise fail("the study measured nothing: no row passed verify for any of its workloads", 1)
    rp = write_report(store, max(used), paths.REPORTS)
    console.print(f"HTML:     {rp.html}\nMarkdown: {rp.markdown}\nCSV:      {rp.csv}")


def register(app: typer.Typer) -> None:
    """Add `study` to the main app."""
    app.command("study")(study_cmd)
