"""A cross-check: servers × workload points × tools → one stored cell each, with the server's count.

Per (repetition, server): the server starts fresh, pinned like a run (a TLS workload's points: one
start per key type, plaintext or TLS with the run's certificate, as run/tls_run.py cuts them; rows that
serve no TLS skipped with the reason); an unrecorded loadgen warm-up on /tenth?ms=0 (the runner's brief
warm-up); then per point each tool in turn — loadgen first (its count sizes drill and ab on duration
points), the others in the order asked (reversed on even repetitions) — each between two reads of the
server's /tenth counter (over TLS on a TLS start), with the server's process tree sampled. The gate,
the repetition order, the warm-up, the sampling and the client-bound rule are the measuring core's
(run/measure.py), as a run's are. Cells go into a run of their own under
the workload `crosscheck:<name>`, point `<label> · <tool>`; the figures that only a cross-check has
are the cell's `CellMetrics.tool` (model.ToolRun). Nothing here judges: aggregate_tools.py does.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .. import paths
from ..processes import supervisor
from ..processes.server import Server
from ..run import h2_run, measure, tls_run
from ..run.events import CellFinished, CellStarted, Listener, RunStarted, ignore
from ..run.lifecycle import MatrixResult, measured_run
from ..run.fingerprint import fingerprint as take_fingerprint
from ..processes.loadgen import LoadgenError, LoadgenResult, client_cores, run_loadgen
from ..model import CellMetrics, CellRecord, RunOptions, ToolRun
from ..store import Store, now_iso
from ..catalog.workloads import Point, Workload
from . import tools as tool_table
from ..rules.tools import get as get_tool
from .execute import run_tool
from .parsers import ToolFigures, ToolOutputError, parse
from .servercount import CounterError, answered, read_counter
from .translate import CROSSCHECK_PATH, Invocation, Unsupported, translate

PREFIX = "crosscheck:"
SETTLE_S = 0.5  # between two tools: let the previous one's connections close


class CrosscheckError(Exception):
    """The cross-check cannot start (one line naming the thing and the fix)."""


@dataclass
class CrosscheckOptions:
    servers: list[str]
    workload: str
    tools: list[str]
    repeat: int = 1
    full: bool = False
    duration: str | None = None
    server_cpus: list[int] | None = None
    client_cpus: list[int] | None = None
    allow_unverified: bool = False


def workload_name(source: str) -> str:
    return PREFIX + source


def check_servers(manifests: list[Any]) -> None:
    """Refuse rows whose /tenth counter is per process: the count would miss the other processes."""
    for m in manifests:
        if m.counter == "per-process":
            raise CrosscheckError(f"server {m.id!r} counts /tenth per process (counter = \"per-process\"), so its "
                                  "counter cannot tell what the whole server answered; cross-check a row with a "
                                  "shared counter")


def check_workload(w: Workload, full: bool) -> None:
    pts = w.size(full).points
    if all(p.mode == "capacity" for p in pts):
        raise CrosscheckError(f"workload {w.name!r} is a capacity search stepped by serverbench's runner; "
                              "cross-check a closed or open workload such as prantl-wrk")


def ordered_tools(chosen: list[str], rep: int) -> list[str]:
    """loadgen first (its count sizes count-only tools), the rest as asked, reversed on even reps."""
    rest = [t for t in chosen if t != "loadgen"]
    if rep % 2 == 0:
        rest.reverse()
    return (["loadgen"] if "loadgen" in chosen else []) + rest


def _point(p: Point, duration: str | None) -> Point:
    if duration and p.mode != "capacity":
        return p.model_copy(update={"duration": duration, "requests": None, "time_limit": None})
    return p


class Session:
    def __init__(self, store: Store, opts: CrosscheckOptions, manifests: list[Any], workload: Workload,
                 run_id: int, emit: Listener, run_opts: RunOptions) -> None:
        self.store, self.opts, self.manifests, self.w = store, opts, manifests, workload
        self.run_id, self.emit, self.run_opts = run_id, emit, run_opts
        self.gate = measure.Gate(store, opts.allow_unverified)
        self.size = workload.size(opts.full)
        self.points = [_point(p, opts.duration) for p in self.size.points]
        self.log_dir = paths.run_logs(run_id, store.path)
        # a TLS workload's certificates, made at its first TLS start, and a start per key type, as a run's
        self.tls = tls_run.RunTls(self.log_dir)

    def planned_seconds(self) -> float:
        per = sum(p.planned_seconds() + 2.0 for p in self.points) * len(self.opts.tools)
        warm = self.size.warmup_seconds() * len(tls_run.starts(self.points))
        return (per + warm) * len(self.manifests) * self.opts.repeat

    def _record(self, cell: CellRecord, advance: float) -> None:
        self.store.record_cell(self.run_id, cell)
        self.emit(CellFinished(cell, advance))

    def run(self) -> None:
        for rep, m in measure.rounds(self.opts.repeat, self.manifests):
            # a row that serves no TLS (tls_out, no tls_library) is left out of a TLS workload, as in a run;
            # a tool whose load the row failed a feature check for (ab: HTTP/1.0) is skipped alone
            row = tls_run.row_reason(m, self.w, self.run_opts) or h2_run.row_reason(m, self.w, self.run_opts)
            why = {t: row or self.gate.reason(m, self.w, t) for t in self.opts.tools}
            for t in [t for t, r in why.items() if r is not None]:
                for p in self.points:
                    self._record(self._cell(m.id, p, t, rep, "skipped", why[t]), 0.0)
            tools = [t for t, r in why.items() if r is None]
            if tools:
                for start in tls_run.starts(self.points):
                    self._server(m, rep, tools, start)

    def _cell(self, server: str, p: Point, tool: str, rep: int, status: str, error: str | None = None,
              run: ToolRun | None = None) -> CellRecord:
        run = run or ToolRun(tool=tool, source_workload=self.w.name, source_point=p.label, mode=p.mode)
        return CellRecord(server, workload_name(self.w.name), f"{p.label} · {tool}", rep, status, error=error,
                          started_at=now_iso(), finished_at=now_iso(),
                          metrics=CellMetrics(kind=self.w.kind, tool=run))

    def _server(self, m: Any, rep: int, tools: list[str], points: list[Point]) -> None:
        """One server start for `points` (of one key type: plaintext, or TLS with the run's certificate; and one
        HTTP/2 mode, `$HTTP2`, run/h2_run.py)."""
        log = self.log_dir / tls_run.log_name(m.id, "crosscheck", points, rep)
        log.parent.mkdir(parents=True, exist_ok=True)
        kind, h2 = points[0].tls, points[0].http2
        self.emit(CellStarted(f"{m.id} · crosscheck {self.w.name} · r{rep}: starting"
                              + (f" with TLS ({kind})" if kind else "") + (f" serving {h2}" if h2 else "")))
        try:
            with supervisor.run_server(m, cpus=self.opts.server_cpus, log_path=log,
                                       extra_env=h2_run.env(h2, self.tls.env(kind)), tls_ca=self.tls.ca(kind),
                                       http2=h2 is not None) as srv:
                self._warmup(srv, points[0])
                for p in points:
                    hint: int | None = None
                    for tool in ordered_tools(tools, rep):
                        self.emit(CellStarted(f"{m.id} · {self.w.name} · {p.label} · {tool} · r{rep}"))
                        cell, figures = self._measure(srv, m, p, tool, rep, hint)
                        if tool == "loadgen" and figures is not None:
                            hint = figures.requests
                        self._record(cell, p.planned_seconds() + 2.0)
                        time.sleep(SETTLE_S)
        except supervisor.ServerStartError as e:
            for p in points:
                for t in tools:
                    self._record(self._cell(m.id, p, t, rep, "failed",
                                            f"server did not start: {str(e).splitlines()[0]}"), 0.0)

    def _warmup(self, srv: Server, first: Point) -> None:
        """The size's brief warm-up (the runner's before a later point) with the start's first point's load
        on the cross-check's path (over TLS for a TLS start); unrecorded, and every tool then runs cold of
        its own warm-up."""
        p0 = first.model_copy(update={"path": CROSSCHECK_PATH, "method": None, "body": None, "headers": []})

        def load(point: Point, rate: float | None = None) -> LoadgenResult:
            return run_loadgen(srv.url, point, default_path=CROSSCHECK_PATH, client_cpus=self.opts.client_cpus,
                               rate=rate, tls_ca=self.tls.ca_arg(point))
        try:
            measure.warm_up(load, self.w.kind, self.size, p0, first=False)
        except LoadgenError:
            pass  # a failing server shows in the measured cells, with their own errors

    def _measure(self, srv: Server, m: Any, p: Point, tool: str, rep: int,
                 hint: int | None) -> tuple[CellRecord, ToolFigures | None]:
        ca = self.tls.ca(p.tls)
        inv = translate(tool, p, srv.url, client_cores(self.opts.client_cpus), count_hint=hint,
                        tls_ca=str(ca) if ca is not None else None)
        version = tool_table.version(tool)
        base = ToolRun(tool=tool, tool_version=version, source_workload=self.w.name, source_point=p.label,
                       mode=p.mode)
        if isinstance(inv, Unsupported):
            base.reason = inv.reason
            return self._cell(m.id, p, tool, rep, "skipped", f"cannot express: {inv.reason}", base), None
        base.command, base.script, base.notes = [tool, *inv.args], inv.script, list(inv.notes)
        base.co_corrected, base.cores = inv.co_corrected, inv.cores
        exe = tool_table.find(tool)
        if exe is None:
            return self._cell(m.id, p, tool, rep, "skipped", f"{tool} is not installed; "
                              f"{get_tool(tool).install_hint()}", base), None
        cell = self._cell(m.id, p, tool, rep, "ok", run=base)
        sampling = measure.Sampling(srv)
        try:
            if not srv.alive():
                raise CounterError(f"server exited with code {srv.returncode()} before this tool")
            before = read_counter(srv.url, ca=ca, http2=p.http2 is not None)
            out = sampling.run(lambda: run_tool(exe, inv, self.opts.client_cpus))
            after = read_counter(srv.url, ca=ca, http2=p.http2 is not None)
            base.server_counted = answered(before, after)
        except CounterError as e:
            cell.status, cell.error = "failed", str(e)
            cell.log_tail = srv.log_tail(30)
            cell.metrics = CellMetrics.model_validate({"usage": measure.usage_metrics(sampling.usage),
                                                       "speed": sampling.speed, "kind": self.w.kind, "tool": base})
            return cell, None
        base.command, base.wall_s, base.exit_code = out.argv, round(out.wall_s, 3), out.exit_code
        base.client_cpu_peak_percent = out.cpu_peak_percent
        if out.killed:
            base.notes.append(f"killed at its {inv.limit_s:.0f} s deadline: its own figures are what it had printed "
                              "(none, for tools that print at the end); the server's count covers its wall time")
        figures: ToolFigures | None = None
        try:
            figures = parse(tool, out.stdout, out.stderr, out.files)
        except (ToolOutputError, ValueError, KeyError) as e:
            # a tool killed at its deadline still drove the server: its count is kept, the cell stays ok
            if not (out.killed and base.server_counted):
                cell.status = "failed"
                cell.error = f"{tool} exited with code {out.exit_code}: {e}"
            cell.log_tail = "\n".join((out.stdout + "\n" + out.stderr).strip().splitlines()[-30:])
        fig = figures or ToolFigures()
        base.reported_rps, base.reported_requests = fig.reported_rps, fig.requests
        base.reported_duration_s = fig.duration_s
        base.notes += fig.notes
        base.latency_reported = fig.p50_us is not None or fig.p99_us is not None
        base.server_basis_s = fig.duration_s or (inv.planned_s if p.duration and not out.killed else out.wall_s)
        if not fig.duration_s:
            what = "planned duration" if p.duration and not out.killed else "wall time"
            base.notes.append(f"{tool} prints no run time: the server's count is divided by its {what} "
                              f"({base.server_basis_s:.2f} s)")
        cell.loadgen = fig.loadgen
        cell.metrics = CellMetrics.model_validate({
            "usage": measure.usage_metrics(sampling.usage), "speed": sampling.speed, "kind": self.w.kind, "tool": base,
            "requests": fig.requests, "ok": fig.ok, "errors": fig.errors, "timeouts": fig.timeouts,
            "error_classes": fig.error_classes, "p50_us": fig.p50_us, "p90_us": fig.p90_us, "p99_us": fig.p99_us,
            "max_us": fig.max_us, "duration_s": fig.duration_s,
            "rps": fig.ok / fig.duration_s if fig.ok is not None and fig.duration_s else None,
            "connections": p.connections if p.mode == "closed" else None, "users": p.users,
            "target_rate": float(p.rate) if isinstance(p.rate, (int, float)) else None,
            "client": measure.client_metrics(out),
        })
        cell.finished_at = now_iso()
        return cell, figures


def run_crosscheck(store: Store, opts: CrosscheckOptions, manifests: list[Any], workload: Workload,
                   on_event: Listener = ignore) -> MatrixResult:
    """Measure every (server, point, tool) into a new run; the run ends finished, interrupted or failed."""
    check_servers(manifests)
    check_workload(workload, opts.full)
    if opts.server_cpus is None or opts.client_cpus is None:
        s_cpus, c_cpus = supervisor.default_cpu_split()
        opts.server_cpus = opts.server_cpus if opts.server_cpus is not None else s_cpus
        opts.client_cpus = opts.client_cpus if opts.client_cpus is not None else c_cpus
    fp = take_fingerprint(manifests, server_cpus=opts.server_cpus, client_cpus=opts.client_cpus)
    fp["crosscheck_tools"] = {t: tool_table.version(t) for t in opts.tools}
    run_opts = RunOptions(servers=[m.id for m in manifests], workloads=[workload_name(workload.name)],
                          repeat=opts.repeat, duration=opts.duration, full=opts.full,
                          server_cpus=opts.server_cpus, client_cpus=opts.client_cpus,
                          allow_unverified=opts.allow_unverified)
    run_id = store.new_run(fp, {**run_opts.to_dict(), "crosscheck": {"workload": workload.name,
                                                                      "tools": opts.tools}})
    session = Session(store, opts, manifests, workload, run_id, on_event, run_opts)
    with measured_run(store, run_id, list(opts.client_cpus), on_event,
                      unfinished="the cross-check ended before its plan completed") as result:
        on_event(RunStarted(run_id, False, len(manifests), 1, opts.repeat, session.planned_seconds(),
                            list(opts.server_cpus), list(opts.client_cpus)))
        session.run()
    return result[0]


__all__ = ["run_crosscheck", "CrosscheckOptions", "CrosscheckError", "ordered_tools", "workload_name", "PREFIX",
           "check_servers", "check_workload"]
