"""The command line: every command, thin over the capability folders (docs/DESIGN.md, "Where things go").

app.py        the Typer app, the command modules registering theirs, `main` (SIGTERM → a clean stop)
lifecycle.py  doctor, list, install, build, version
verify.py     verify
run.py        run (and --resume), workloads, results, bench
report.py     report, export, compare
seeds.py      seeds (and --measure): the published studies re-measured
study.py      study: every row on every kind of work of the profile table, resumable, then the report
profile.py    profile: the cost of ownership
crosscheck.py crosscheck: one workload through the peer load tools
bundle.py     bundle: the harness and built rows for a bench machine
database.py   database: the harness's own PostgreSQL, alone
steps.py      steps several commands take (measure with progress, profile and print); not a command
views.py      what the commands print (a run's progress and summary, cost and tool tables); not a command
common.py     one-line failures, the store, the catalog, CPU options
console.py    the Rich consoles every command prints through

May import: every capability folder and the top-level modules; nothing imports cli/ but __main__ and the
`serverbench` entry point. A command module never imports another command module.
"""
from .app import app, main

__all__ = ["app", "main"]
