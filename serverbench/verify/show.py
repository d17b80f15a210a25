"""A verify verdict on a console: one table per row, or (make bench) one line per row and the checks that
did not pass; `verify_and_show` verifies rows and prints each verdict as it comes.

The printing half of verification, shared by `serverbench verify` and the build-then-verify step
(prepare.py); the consoles are the caller's.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..catalog.workloads import load_workloads
from ..processes import supervisor
from ..rules.admission import gates, kind_of
from .dbsetup import database_for
from .servers import ServerVerdict, verify_servers


def _result(name: str, passed: bool, skipped: bool) -> str:
    """pass / skip, or what a failure does: FAIL (no workload), feature (some workloads), deviation."""
    if skipped:
        return "[dim]skip[/]"
    if passed:
        return "[green]pass[/]"
    k = kind_of(name)
    if k.kind == "feature":
        return f"[yellow]fail: not run in {gates(name, load_workloads(errors=[]).values())}[/]"
    if k.kind == "robustness":
        return "[yellow]security deviation[/]" if k.security else "[yellow]deviation[/]"
    return "[red]FAIL[/]"


def show_verdict(v: ServerVerdict, out: Console | None = None, *, compact: bool = False,
                 err: Console | None = None) -> None:
    """The verdict and a table of its checks; `compact` (make bench): one line per row, plus the
    checks that did not pass, so 32 rows take a screen rather than 1,300 lines. A row that could not be
    checked goes to `err` (stderr by default)."""
    out = out or Console()
    if v.problem is not None:
        if v.skipped:
            out.print(f"[dim]skip {v.server}: {v.problem}[/]")
        else:
            (err or Console(stderr=True)).print(f"[red]✗[/] {v.server}: {v.problem}")
        return
    a = v.admission
    notes = ([f"{len(a.deviations)} deviation(s)"] if a.deviations else []) + \
        ([f"not run with {', '.join(sorted(a.features))}"] if a.features else [])
    verdict = ("[green]PASS[/]" if v.passed else "[red]FAIL[/]") + (f" ({'; '.join(notes)})" if notes else "")
    if compact:
        shown = [r for r in v.checks if not r.passed and not r.skipped]
        out.print(f"{v.server}: {verdict}, {sum(r.passed for r in v.checks)} of {len(v.checks)} checks passed")
        for r in shown:
            out.print(f"  {r.name}: {_result(r.name, r.passed, r.skipped)} — {escape(r.detail)}", highlight=False)
        _show_log(v, out)
        return
    t = Table(title=f"{v.server}: {verdict}", title_justify="left")
    t.add_column("check")
    t.add_column("kind")
    t.add_column("result")
    t.add_column("detail", overflow="fold")
    for r in v.checks:
        k = kind_of(r.name)
        t.add_row(r.name, k.kind + (", security" if k.security else ""), _result(r.name, r.passed, r.skipped),
                  r.detail)
    out.print(t)
    _show_log(v, out)


def _show_log(v: ServerVerdict, out: Console) -> None:
    # only under a refused verdict: an admitted row with a declared deviation was rechecked too, and its
    # log there is noise on a row that passed
    if v.log_tail and not v.passed:
        out.print(f"[dim]{v.server}'s last log lines:[/]")
        out.print(escape(v.log_tail), highlight=False, markup=True)


def _first_failure(v: ServerVerdict, refused: list[str]) -> str:
    """The refused checks, and the first one's detail (cut short): what a CI log's last line should say."""
    detail = next((r.detail for r in v.checks if r.name in refused[:1]), "")
    cut = detail if len(detail) <= FAILURE_CHARS else detail[:FAILURE_CHARS] + "…"
    if not cut:
        return ", ".join(refused)
    return f"{refused[0]}: {cut}" if len(refused) == 1 else f"{', '.join(refused)}; {refused[0]}: {cut}"


FAILURE_CHARS = 200


def verify_and_show(manifests: list[Any], store: Any, *, server_cpus: list[int] | None,
                    allow_unavailable: bool, compact: bool = False,
                    why: dict[str, str] | None = None, db_url: str | None = None,
                    stream: Iterable[Any] | None = None,
                    held: list[str] | None = None, out: Console | None = None,
                    err: Console | None = None,
                    features: Iterable[str] | None = None, recheck: bool = False) -> tuple[list[str], list[str]]:
    """Verify, print each verdict as it comes; (passed ids, failed ids) — skipped ones in neither.
    `why`, when given, receives each failed id's failed checks (or its problem), for a summary line.
    When a db row is among them, one PostgreSQL serves them all: the harness's own, or `db_url`'s
    (a DatabaseError names what that one lacks). `stream`: `manifests` (or some of them) in the
    order they become ready to verify (each as its build ends); `held`: a verdict with a failed check
    is not shown or counted but its id appended there, to be verified again (prepare.py). `out`, `err`:
    where the verdicts and the database's problems are printed (the CLI's consoles). `features`: only
    those features' checks run (verify_servers; all when None): without db among them, no PostgreSQL.
    `recheck`: only the checks each row's stored verdict failed run again (verify_servers)."""
    out, err = out or Console(), err or Console(stderr=True)
    passed: list[str] = []
    failed: list[str] = []
    cpus = server_cpus if server_cpus is not None else supervisor.default_cpu_split()[0]
    db_rows = manifests if features is None or "db" in features else []
    with database_for(db_rows, cpus, db_url) as db:
        for line in filter(None, (db.problem, db.target and db.target.counts_problem)):
            err.print(f"db checks: {line}", markup=False, highlight=False, soft_wrap=True)
        for v in verify_servers(manifests if stream is None else stream, store, server_cpus=cpus,
                                allow_unavailable=allow_unavailable, db=db, features=features,
                                recheck=recheck):
            if held is not None and not v.skipped and any(not r.passed and not r.skipped for r in v.checks):
                held.append(v.server)
                continue
            show_verdict(v, out, compact=compact, err=err)
            if not v.skipped:
                (passed if v.passed else failed).append(v.server)
            if why is not None and not v.skipped and not v.passed:
                # a verdict without checks (not built, no toolchain) is named by its problem, not by "?"
                refused = [f.check for f in v.admission.refused] if v.checks else []
                why[v.server] = _first_failure(v, refused) if refused else (v.problem or "failed")
    return passed, failed


def verify_twice(manifests: list[Any], store: Any, *, note: str, out: Console | None = None,
                 stream: Iterable[Any] | None = None, **kw: Any) -> tuple[list[str], list[str]]:
    """verify_and_show, then once more in a fresh start for each row a check of which failed, running only
    those checks: a start that missed a time limit in a moment of load (builds still running, a VM's stolen
    time) is not a verdict on the row. A check that passes the second time says in its detail how it failed
    the first (servers._merged); one that fails again stands. `note` is printed before the second pass,
    with the rows' ids."""
    out = out or Console()
    held: list[str] = []
    passed, failed = verify_and_show(manifests, store, stream=stream, held=held, out=out, **kw)
    if held:
        out.print(f"[dim]{note}: {', '.join(held)}[/]")
        p2, f2 = verify_and_show([m for m in manifests if m.id in held], store, out=out, recheck=True, **kw)
        passed, failed = passed + p2, failed + f2
    return passed, failed


__all__ = ["show_verdict", "verify_and_show", "verify_twice"]
