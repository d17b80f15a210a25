"""What the commands print, rendered once: a run's progress from the runner's events and its summary
table, the line a run that measured nothing ends with, the cost-of-ownership table, the load tools found here.

The summary reads aggregate.Group, so its p99 and requests/s are the report's.
"""
from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ..results.aggregate import RunResults
from ..run.events import CellFinished, CellStarted, Event, RunEnded, RunStarted
from ..results.formatting import fmt_num, fmt_us


class RunView:
    """A listener for run_matrix: a progress bar with ETA and one line per finished cell."""

    def __init__(self, console: Console, progress: bool = True) -> None:
        self.console = console
        self.show_bar = progress
        self.bar: Progress | None = None
        self.task: Any = None

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, RunStarted):
            verb = "resuming" if ev.resumed else "starting"
            self.console.print(f"{verb} run {ev.run_id}: {ev.servers} server(s) × {ev.workloads} workload(s) × "
                               f"{ev.repeat} repetition(s), at most ~{ev.planned_s / 60:.1f} min of load (each warm-up "
                               f"to a steady rate at its longest; server CPUs {ev.server_cpus or 'on the server machine'}, "
                               f"client CPUs {ev.client_cpus})")
            if self.show_bar:
                self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                    TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(), TextColumn("ETA"),
                                    TimeRemainingColumn(), console=self.console, transient=True,
                                    refresh_per_second=2)  # redraws run in the harness, beside the load
                self.bar.start()
                self.task = self.bar.add_task("starting", total=max(ev.planned_s, 1e-9))
        elif isinstance(ev, CellStarted):
            if self.bar is not None:
                self.bar.update(self.task, description=ev.what)
        elif isinstance(ev, CellFinished):
            self._say(cell_line(ev.cell))
            if self.bar is not None:
                self.bar.update(self.task, advance=ev.advance_s)
        elif isinstance(ev, RunEnded):
            if self.bar is not None:
                self.bar.stop()
                self.bar = None

    def _say(self, text: str) -> None:
        (self.bar.console if self.bar is not None else self.console).print(text)


def cell_line(cell: Any) -> str:
    """One line per stored cell (a single repetition's own figures)."""
    tag = f"{cell.server} · {cell.workload} · {cell.point} · r{cell.repetition}"
    if cell.status == "ok":
        m = cell.metrics
        lat = f"p99 {m.latency.p99_us / 1000:.2f} ms" if m.latency.p99_us is not None else ""
        rate = (f"capacity {m.capacity.capacity_rps:,.0f} rps" if m.capacity.capacity_rps is not None
                else f"{(m.counts.rps or 0):,.0f} rps")
        warn = "  [yellow]client saturated[/]" if m.client.client_saturated else ""
        errs = f"  [yellow]{m.counts.errors} errors[/]" if m.counts.errors else ""
        return f"[green]✓[/] {tag}: {rate}  {lat}{errs}{warn}{warmup_note(m)}"
    if cell.status == "failed":
        return f"[red]✗[/] {tag}: {cell.error}"
    return f"[dim]- {tag}: skipped ({cell.error})[/]"


def warmup_note(m: Any) -> str:
    """How the cell's warm-up went: steady after N s, or not steady at its maximum."""
    if m.warmup.warmup_steady is True:
        return f"  [dim]steady after {m.warmup.warmup_steady_s:g} s[/]"
    if m.warmup.warmup_steady is False:
        return f"  [yellow]not steady after {m.warmup.warmup_max_s or 0:g} s[/]"
    return ""


def summary_table(results: RunResults) -> Table:
    """Results across repetitions per group: the same figures as the report."""
    t = Table(title="results across repetitions", header_style="bold")
    for col in ("place", "server", "workload", "point", "n", "req/s median", "± CV", "p99", "notes"):
        right = col in ("place", "n", "req/s median", "± CV", "p99")
        t.add_column(col, justify="right" if right else "left", no_wrap=col != "notes")
    for g in results.groups:
        f = g.figures
        notes = []
        if f.standing.reps_failed:
            notes.append(f"[red]{f.standing.reps_failed} failed/skipped[/]")
        notes += sorted({w.kind for w in g.warnings} - {"failed"})
        tput = g.throughput
        if tput is None:
            t.add_row("–", g.server, g.workload, g.point, "0", "–", "–", "–", " ".join(notes))
            continue
        cv = f"{tput.cv:.1%}" if tput.n > 1 else "–"
        t.add_row(g.place_text, g.server, g.workload, g.point, str(tput.n), f"{tput.median:,.0f}", cv,
                  fmt_us(f.latency.p99_us), " ".join(notes))
    return t


def print_summary(console: Console, results: RunResults, status: str, counts: tuple[int, int, int]) -> None:
    if results.groups:
        console.print(summary_table(results))
    for g in results.groups:
        for w in g.warnings:
            console.print(f"[yellow]warning:[/] {w.text}", highlight=False)
    ok, failed, skipped = counts
    console.print(f"run {results.run_id} {status}: {ok} ok, {failed} failed, {skipped} skipped")


# A run that measured nothing names at most this many of its skipped cells' distinct reasons.
REASONS_SHOWN = 3
_ROWS = "\0rows\0"  # where a reason named its row: the rows that share the reason go there


def nothing_measured(result: Any, cells: list[Any]) -> str | None:
    """The one line a finished run whose cells were all skipped ends with (exit 1), from the skipped cells'
    stored reasons (their `error`, which names the fix), rows sharing a reason together; None when the run
    measured or failed a cell, or did not finish."""
    if result.status != "finished" or result.ok or result.failed or not result.skipped:
        return None
    by_reason: dict[str, list[str]] = {}
    for c in cells:
        if c.status != "skipped":
            continue
        key = re.sub(rf"(?<![\w-]){re.escape(c.server)}(?![\w-])", _ROWS, c.error or "no reason stored")
        rows = by_reason.setdefault(key, [])
        if c.server not in rows:
            rows.append(c.server)
    shown = [f"{', '.join(rows)}: {key.replace(_ROWS, ' '.join(rows))}"
             for key, rows in list(by_reason.items())[:REASONS_SHOWN]]
    more = len(by_reason) - REASONS_SHOWN
    rest = f"; {more} more reason{'s' if more > 1 else ''} in `serverbench report {result.run_id}`" if more > 0 else ""
    return (f"run {result.run_id} measured nothing: all {result.skipped} cells were skipped "
            f"({'; '.join(shown)}{rest})")


def tools_table() -> Table:
    """Which load tools `crosscheck` can drive here, their versions and how the project installs them."""
    from ..crosscheck import tools
    from ..rules.tools import DEFAULT_ORDER, get
    t = Table(title="load tools (serverbench crosscheck)")
    for col in ("tool", "found", "version", "source", "install"):
        t.add_column(col, overflow="fold")
    for name in DEFAULT_ORDER:
        tool, exe = get(name), tools.find(name)
        t.add_row(name, "[green]yes[/]" if exe else "[red]no[/]", (tools.version(name) or "") if exe else "",
                  tool.source, "" if exe else tool.install_hint())
    return t


# The figures `--json` writes per contestant id (the whole profile follows them).
JSON_KEYS = ("source_lines", "dependencies", "build_cold_s", "build_warm_s", "artifact_bytes", "startup_ms",
             "idle_rss_bytes", "rss_per_connection_bytes")


def _mib(b: float | None) -> str:
    return "—" if b is None else f"{b / 2**20:,.1f}"


def profile_table(profiles: list[Any]) -> Table:
    t = Table(title="cost of ownership", header_style="bold")
    for c in ("server", "lines", "deps", "cold build s", "warm build s", "artifact MiB", "start-up ms",
              "idle RSS MiB", "RSS KiB/conn", "problems"):
        t.add_column(c, justify="left" if c in ("server", "problems") else "right",
                     overflow="fold" if c == "problems" else "ellipsis")
    for p in profiles:
        per_conn = p.rss_per_connection_bytes
        cold = fmt_num(p.build_cold_s, 1) + (" ↓" if p.build_download_s is not None else "")
        t.add_row(p.server, fmt_num(p.source_lines), fmt_num(p.dependencies), cold, fmt_num(p.build_warm_s, 1),
                  _mib(p.artifact_bytes), fmt_num(p.startup_ms, 1), _mib(p.idle_rss_bytes),
                  fmt_num(per_conn / 1024 if per_conn is not None else None, 1), "; ".join(p.errors))
    return t


def profiles_json(profiles: list[Any]) -> dict[str, Any]:
    """An object per contestant id: the headline figures first, then the whole profile."""
    out: dict[str, Any] = {}
    for p in profiles:
        d = p.dump()
        out[p.server] = {**{k: d[k] for k in JSON_KEYS}, **d}
    return out
