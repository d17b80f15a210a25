"""The measuring matrix: servers × workloads × points × repetitions → one stored cell each.

Order: repetitions outermost (rep 1 of every server/workload, then rep 2, ...), so slow drifts
of the machine spread over all servers instead of biasing one.
A server is started fresh for every (repetition, server, workload): repetitions are
independent samples (no state such as the /tenth counter or heap growth carries over), and
its points share that one start. Per point: warm-up (a separate, unrecorded loadgen run of the
size's `warmup`), for `rate = "N%"` a closed-loop calibration (64 connections), then the
measured run with the server's process tree sampled, then the cell is committed on its own.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import stats as st
from .loadgen import LoadgenError, LoadgenResult, run_loadgen
from .store import CellRecord, Store, now_iso
from .workloads import CALIBRATION_CONNECTIONS, Point, Size, Workload, parse_duration

DEFAULT_REPEAT = 3
SAMPLE_INTERVAL = 0.05
LOG_TAIL_LINES = 30


@dataclass
class RunOptions:
    """What `serverbench run` was asked for; stored with the run so --resume can repeat it."""

    servers: list[str] | None = None
    workloads: list[str] = field(default_factory=lambda: ["quick"])
    repeat: int = DEFAULT_REPEAT
    duration: str | None = None
    full: bool = False
    server_cpus: list[int] | None = None
    client_cpus: list[int] | None = None
    allow_unverified: bool = False
    workers: int | None = None
    ready_timeout: float = 30.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RunOptions":
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class SummaryRow:
    server: str
    workload: str
    point: str
    rps: st.Stats | None
    p99_us: st.Stats | None
    failed: int
    skipped: int
    saturated: int
    warnings: list[str]


@dataclass
class MatrixResult:
    run_id: int
    status: str  # finished | interrupted
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    summary: list[SummaryRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _file_tail(path: Path | None, n: int = LOG_TAIL_LINES) -> str | None:
    if path is None:
        return None
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return None


def _with_duration(p: Point, duration: str) -> Point:
    """--duration override: time-bound the point instead of its own duration/request count."""
    if p.mode == "capacity":
        return p.model_copy(update={"step_duration": duration})
    if p.stages is not None:
        return p
    return p.model_copy(update={"duration": duration, "requests": None, "time_limit": None})


def _warmup_point(p: Point, warmup: str) -> Point:
    """Closed points warm up as themselves; other modes with a modest closed load on their path."""
    if p.mode == "closed":
        return p.model_copy(update={"label": "warmup", "duration": warmup, "requests": None,
                                    "time_limit": None})
    return Point(label="warmup", mode="closed", path=p.path, method=p.method, headers=p.headers,
                 body=p.body, connections=min(CALIBRATION_CONNECTIONS, p.users or p.max_connections or 64),
                 keepalive=p.keepalive, duration=warmup, timeout=p.timeout)


def _calibration_point(p: Point) -> Point:
    return Point(label="calibration", mode="closed", path=p.path, method=p.method, headers=p.headers,
                 body=p.body, connections=CALIBRATION_CONNECTIONS, keepalive=p.keepalive,
                 duration=p.calibration, threads=p.threads)


def _step_point(p: Point, rate: float) -> Point:
    return Point(label=f"rate={rate:g}", mode="open", path=p.path, method=p.method, headers=p.headers,
                 body=p.body, rate=rate, poisson=p.poisson, duration=p.step_duration,
                 max_connections=p.max_connections, keepalive=p.keepalive, timeout=p.timeout,
                 threads=p.threads)


def loadgen_metrics(lg: LoadgenResult) -> dict[str, Any]:
    """The flat loadgen figures of a cell (see store.py's docstring)."""
    d = lg.data
    s = d["summary"]
    lat = s.get("latency_us") or {}
    ec = d.get("error_classes") or {}
    cfg = d.get("config") or {}
    return {
        "rps": s.get("rps"), "requests": s.get("requests"), "ok": s.get("ok"), "errors": s.get("errors"),
        "timeouts": ec.get("timeout", 0), "error_classes": ec,
        "p50_us": lat.get("p50"), "p75_us": lat.get("p75"), "p90_us": lat.get("p90"),
        "p99_us": lat.get("p99"), "p999_us": lat.get("p99_9"), "p9999_us": lat.get("p99_99"),
        "max_us": lat.get("max"), "mean_us": lat.get("mean"),
        "duration_s": d.get("duration_s"),
        "missed_sends": s.get("missed_sends", 0),
        # requests waiting ≥ 1 s for a stalled server when the run ended (no timeout yet)
        "unanswered": s.get("unanswered", 0),
        "unanswered_oldest_us": s.get("unanswered_oldest_us", 0),
        "target_rate": cfg.get("rate"),
        "connections": cfg.get("connections"),
        "users": cfg.get("users"),
        "client_cpu_percent": round(lg.client_cpu_percent, 1),
        "client_saturated": lg.client_saturated,
    }


def usage_metrics(usage: dict | None) -> dict[str, Any]:
    if not usage:
        return {}
    keys = ("cpu_user_s", "cpu_sys_s", "rss_peak_bytes", "rss_mean_bytes", "threads_peak",
            "ctx_voluntary", "ctx_involuntary", "processes_peak")
    out = {k: usage.get(k) for k in keys}
    out["cpu_percent"] = usage.get("cpu_percent_mean")
    out["cpu_percent_peak"] = usage.get("cpu_percent_peak")
    return out


class _Gate:
    """Why a server cannot be measured (None = it can)."""

    def __init__(self, store: Store, allow_unverified: bool) -> None:
        self.store = store
        self.allow_unverified = allow_unverified
        self.cache: dict[str, str | None] = {}

    def reason(self, m: Any) -> str | None:
        if m.id not in self.cache:
            self.cache[m.id] = self._reason(m)
        return self.cache[m.id]

    def _reason(self, m: Any) -> str | None:
        from . import build, doctor
        a = doctor.check(m)
        if not a.available:
            hint = f"; {a.install_hint}" if getattr(a, "install_hint", None) else ""
            return f"unavailable: {a.reason or 'missing ' + ', '.join(a.missing)}{hint}"
        if not build.is_built(m):
            return f"not built; run `serverbench build {m.id}`"
        if self.allow_unverified:
            return None
        v = self.store.verdict(m.id)
        if v is None:
            return f"never verified; run `serverbench verify {m.id}` (or pass --allow-unverified)"
        if not v.passed:
            failed = [c.get("name", "?") for c in v.checks if not c.get("passed") and not c.get("skipped")]
            return (f"failed verification ({', '.join(failed) or 'see checks'}); fix it and re-run "
                    f"`serverbench verify {m.id}` (or pass --allow-unverified)")
        if v.folder_hash and v.folder_hash != build.folder_hash(m):
            return f"changed since it was verified; re-run `serverbench verify {m.id}`"
        return None


class Runner:
    """Runs one matrix into `store`; see run_matrix()."""

    def __init__(self, store: Store, opts: RunOptions, manifests: list[Any], workloads: list[Workload],
                 run_id: int, console: Console, log_dir: Path) -> None:
        self.store, self.opts, self.manifests, self.workloads = store, opts, manifests, workloads
        self.run_id, self.console, self.log_dir = run_id, console, log_dir
        self.gate = _Gate(store, opts.allow_unverified)
        self.done = store.done_keys(run_id)
        self.progress: Progress | None = None
        self.task: Any = None

    # -- planning ---------------------------------------------------------------------------
    def size(self, w: Workload) -> Size:
        s = w.size(self.opts.full)
        if self.opts.duration:
            s = s.model_copy(update={"points": [_with_duration(p, self.opts.duration) for p in s.points]})
        return s

    def plan(self) -> list[tuple[int, Any, Workload, Size, list[Point]]]:
        out = []
        for rep in range(1, self.opts.repeat + 1):
            # Repetitions are rounds over all servers, every other round in reverse order, so
            # a machine that drifts during the run (this VM does, by up to 2x over an hour)
            # weighs on every server alike instead of on whichever ran last.
            for m in (self.manifests if rep % 2 else self.manifests[::-1]):
                for w in self.workloads:
                    s = self.size(w)
                    todo = [p for p in s.points if (m.id, w.name, p.label, rep) not in self.done]
                    if todo:
                        out.append((rep, m, w, s, todo))
        return out

    def planned_seconds(self, plan: list) -> float:
        return sum(s.warmup_seconds() + p.planned_seconds()
                   for _, m, _, s, pts in plan if self.gate.reason(m) is None for p in pts)

    # -- running ----------------------------------------------------------------------------
    def _advance(self, seconds: float, what: str | None = None) -> None:
        if self.progress is not None:
            self.progress.update(self.task, advance=seconds, **({"description": what} if what else {}))

    def _say(self, text: str) -> None:
        (self.progress.console if self.progress is not None else self.console).print(text)

    def _record(self, cell: CellRecord) -> None:
        self.store.record_cell(self.run_id, cell)
        tag = f"{cell.server} · {cell.workload} · {cell.point} · r{cell.repetition}"
        if cell.status == "ok":
            m = cell.metrics
            p99 = m.get("p99_us")
            lat = f"p99 {p99 / 1000:.2f} ms" if isinstance(p99, (int, float)) else ""
            rate = (f"capacity {m['capacity_rps']:,.0f} rps" if "capacity_rps" in m
                    else f"{(m.get('rps') or 0):,.0f} rps")
            warn = "  [yellow]client saturated[/]" if m.get("client_saturated") else ""
            errs = f"  [yellow]{m.get('errors')} errors[/]" if m.get("errors") else ""
            self._say(f"[green]✓[/] {tag}: {rate}  {lat}{errs}{warn}")
        elif cell.status == "failed":
            self._say(f"[red]✗[/] {tag}: {cell.error}")
        else:
            self._say(f"[dim]- {tag}: skipped ({cell.error})[/]")

    def run(self, plan: list) -> None:
        from . import supervisor
        server_cpus, client_cpus = self.opts.server_cpus, self.opts.client_cpus
        for rep, m, w, size, todo in plan:
            reason = self.gate.reason(m)
            if reason is not None:
                for p in todo:
                    self._record(CellRecord(m.id, w.name, p.label, rep, "skipped", error=reason,
                                            started_at=now_iso(), finished_at=now_iso()))
                continue
            log_path = self.log_dir / f"{m.id}.{w.name}.r{rep}.log"
            pending = list(todo)
            t_start = time.monotonic()
            self._advance(0, f"{m.id} · {w.name} · r{rep}: starting")
            try:
                with supervisor.run_server(m, cpus=server_cpus, workers=self.opts.workers,
                                           log_path=log_path, ready_timeout=self.opts.ready_timeout) as srv:
                    start_s = time.monotonic() - t_start
                    while pending:
                        p = pending[0]
                        self._advance(0, f"{m.id} · {w.name} · {p.label} · r{rep}")
                        cell = self.run_point(srv, m, w, size, p, rep, client_cpus)
                        if start_s is not None:
                            cell.metrics["server_start_s"] = round(start_s, 3)
                            start_s = None
                        self._record(cell)
                        pending.pop(0)
                        self._advance(size.warmup_seconds() + p.planned_seconds())
            except supervisor.ServerStartError as e:
                tail = _file_tail(log_path) or getattr(e, "log_tail", None)
                for p in pending:
                    self._record(CellRecord(m.id, w.name, p.label, rep, "failed",
                                            error=f"server did not start: {str(e).splitlines()[0]}",
                                            log_tail=tail, started_at=now_iso(), finished_at=now_iso(),
                                            metrics={"ready_timeout_s": self.opts.ready_timeout}))
                    self._advance(size.warmup_seconds() + p.planned_seconds())

    def run_point(self, srv: Any, m: Any, w: Workload, size: Size, p: Point, rep: int,
                  client_cpus: list[int] | None) -> CellRecord:
        """Warm-up, calibration or capacity steps, the measured run; never raises LoadgenError."""
        from .sampler import Sampler
        cell = CellRecord(m.id, w.name, p.label, rep, "ok", started_at=now_iso())
        t0 = time.monotonic()
        loaded = 0.0  # seconds the loadgen actually ran (warm-up included): not overhead
        metrics: dict[str, Any] = {"workers": srv.workers, "bound": m.bound(srv.workers),
                                   "warmup_s": size.warmup_seconds(), "planned_s": p.planned_seconds()}
        usage = None

        def lg_run(point: Point, rate: float | None = None) -> LoadgenResult:
            nonlocal loaded
            r = run_loadgen(srv.url, point, default_path=w.path, client_cpus=client_cpus, rate=rate)
            loaded += float(r.data.get("duration_s") or r.wall_s)
            return r

        try:
            if not srv.alive():
                raise LoadgenError(f"server exited with code {srv.returncode()} before this point")
            if size.warmup:
                try:
                    lg_run(_warmup_point(p, size.warmup))
                except LoadgenError as e:
                    raise LoadgenError(f"warm-up: {e}") from None
                if not srv.alive():
                    raise LoadgenError(f"server exited with code {srv.returncode()} during the warm-up")
            sampler = None
            if p.mode == "capacity":
                sampler = Sampler(srv.pid, interval=SAMPLE_INTERVAL).start()
                try:
                    lg, extra = self._capacity(srv, p, lg_run)
                finally:
                    usage = sampler.stop().to_dict()
                metrics.update(extra)
            else:
                rate = None
                if p.rate_fraction is not None:
                    calib = lg_run(_calibration_point(p))
                    cap = float(calib.summary.get("rps") or 0.0)
                    if cap <= 0:
                        raise LoadgenError(f"calibration measured 0 rps ({calib.summary.get('errors')} errors)")
                    rate = max(1.0, round(cap * p.rate_fraction, 1))
                    metrics["calibration_rps"] = cap
                sampler = Sampler(srv.pid, interval=SAMPLE_INTERVAL).start()
                try:
                    lg = lg_run(p, rate)
                finally:
                    usage = sampler.stop().to_dict()
                if rate is not None:
                    metrics["target_rate"] = rate
            cell.loadgen = lg.data
            metrics = {**loadgen_metrics(lg), **metrics}
            if not srv.alive():
                cell.status = "failed"
                cell.error = f"server exited with code {srv.returncode()} during the measured run"
        except LoadgenError as e:
            cell.status = "failed"
            cell.error = str(e)
        cell.usage = usage
        metrics.update(usage_metrics(usage))
        if cell.status == "failed":
            cell.log_tail = srv.log_tail(LOG_TAIL_LINES)
            if not srv.alive() and "exited" not in (cell.error or ""):
                cell.error = f"{cell.error} (server exited with code {srv.returncode()})"
        cell.finished_at = now_iso()
        metrics["overhead_s"] = round(time.monotonic() - t0 - loaded, 3)
        cell.metrics = metrics
        return cell

    def _capacity(self, srv: Any, p: Point,
                  lg_run: Callable[..., LoadgenResult]) -> tuple[LoadgenResult, dict[str, Any]]:
        """Step open load up by `p.step` until p99 > limit, errors, missed sends or shortfall."""
        limit_us = parse_duration(p.p99_limit) * 1e6
        step_s = parse_duration(p.step_duration)
        rate = float(p.start_rate or 1.0)
        steps: list[dict[str, Any]] = []
        best: LoadgenResult | None = None
        best_rate: float | None = None
        last: LoadgenResult | None = None

        def attempt(rate: float) -> bool:
            nonlocal last
            last = lg_run(_step_point(p, rate), rate)
            s = last.summary
            p99 = (s.get("latency_us") or {}).get("p99") or 0
            achieved = float(s.get("rps") or 0.0)
            missed = int(s.get("missed_sends") or 0)
            errors = int(s.get("errors") or 0)
            held = (p99 <= limit_us and errors == 0 and achieved >= 0.9 * rate
                    and missed <= 0.01 * rate * step_s)
            steps.append({"rate": rate, "achieved": achieved, "p99_us": p99, "errors": errors,
                          "missed_sends": missed, "held": held,
                          "client_cpu_percent": round(last.client_cpu_percent, 1),
                          "client_saturated": last.client_saturated})
            return held

        failed_rate: float | None = None
        for _ in range(p.max_steps):
            if not attempt(rate):
                failed_rate = rate
                break
            if not srv.alive():
                break
            best, best_rate = last, rate
            rate = round(rate * p.step, 1)
        # Narrow the bracket [held, failed] by geometric bisection.
        lo, hi = best_rate, failed_rate
        for _ in range(p.refine if lo is not None and hi is not None else 0):
            if not srv.alive():
                break
            mid = round((lo * hi) ** 0.5, 1)
            if attempt(mid) and srv.alive():
                best, best_rate, lo = last, mid, mid
            else:
                hi = mid
        chosen = best or last
        assert chosen is not None  # max_steps >= 1
        # A capacity is only a lower bound when no step failed (the schedule ran out) or when
        # the step that failed saturated the load generator rather than the server.
        broke = next((s for s in steps if not s["held"]), None)
        extra = {"steps": steps, "capacity_rps": float(best.summary["rps"]) if best else 0.0,
                 "capacity_target_rate": best_rate, "p99_limit_us": limit_us,
                 "capacity_ceiling": broke is None,
                 "capacity_client_bound": bool(broke and broke["client_saturated"])}
        return chosen, extra


def summarize_cells(cells: list[CellRecord]) -> list[SummaryRow]:
    """Statistics across repetitions per (server, workload, point)."""
    groups: dict[tuple[str, str, str], list[CellRecord]] = {}
    for c in cells:
        groups.setdefault((c.server, c.workload, c.point), []).append(c)
    rows = []
    for (server, workload, point), cs in groups.items():
        ok = sorted((c for c in cs if c.status == "ok"), key=lambda c: c.repetition)
        key_rps = "capacity_rps" if ok and "capacity_rps" in ok[0].metrics else "rps"
        rps = [c.metrics.get(key_rps) for c in ok if isinstance(c.metrics.get(key_rps), (int, float))]
        p99 = [c.metrics.get("p99_us") for c in ok if isinstance(c.metrics.get("p99_us"), (int, float))]
        label = f"{server} · {workload} · {point}"
        warns = st.warnings_for(label, rps, key_rps) if rps else []
        sat = sum(1 for c in ok if c.metrics.get("client_saturated"))
        if sat:
            warns.append(f"{label}: the load generator was saturated in {sat} of {len(ok)} runs; "
                         "its figures may be client-bound (give loadgen more --client-cpus)")
        rows.append(SummaryRow(server, workload, point, st.summarize(rps) if rps else None,
                               st.summarize(p99) if p99 else None,
                               sum(c.status == "failed" for c in cs), sum(c.status == "skipped" for c in cs),
                               sat, warns))
    return rows


def summary_table(rows: list[SummaryRow]) -> Table:
    t = Table(title="results across repetitions", header_style="bold")
    for col in ("server", "workload", "point", "n", "rps median", "± CV", "p99 median", "notes"):
        right = col in ("n", "rps median", "± CV", "p99 median")
        t.add_column(col, justify="right" if right else "left", no_wrap=col != "notes")
    for r in rows:
        notes = []
        if r.failed:
            notes.append(f"[red]{r.failed} failed[/]")
        if r.skipped:
            notes.append(f"[dim]{r.skipped} skipped[/]")
        if r.rps and st.noisy(r.rps):
            notes.append("[yellow]noisy[/]")
        if r.saturated:
            notes.append("[yellow]client saturated[/]")
        p99 = f"{r.p99_us.median / 1000:.2f} ms" if r.p99_us else "–"
        if r.rps:
            s = r.rps
            cv = f"{s.cv:.1%}" if s.n > 1 else "–"
            t.add_row(r.server, r.workload, r.point, str(s.n), f"{s.median:,.0f}", cv, p99, " ".join(notes))
        else:
            t.add_row(r.server, r.workload, r.point, "0", "–", "–", "–", " ".join(notes))
    return t


def run_matrix(store: Store, opts: RunOptions, *, manifests: list[Any] | None = None,
               workloads: list[Workload] | None = None, resume: int | None = None,
               console: Console | None = None, progress: bool = True,
               fingerprint: dict | None = None) -> MatrixResult:
    """Run (or resume) a matrix, store every cell, print progress and the summary table.

    With `resume`, the stored run's options are used and its 'ok' cells are skipped.
    Ctrl-C (KeyboardInterrupt) abandons the cell in flight, marks the run 'interrupted' and
    returns; servers are stopped by the supervisor's context manager."""
    from . import catalog, paths, supervisor
    from . import workloads as wl
    console = console or Console()
    if resume is not None:
        row = store.run(resume)
        opts = RunOptions.from_dict(row.options)
        run_id = resume
    if manifests is None:
        manifests = catalog.select(catalog.load_catalog(), opts.servers)
    if workloads is None:
        workloads = wl.select(wl.load_workloads(), opts.workloads)
    if opts.server_cpus is None or opts.client_cpus is None:
        s_cpus, c_cpus = supervisor.default_cpu_split()
        opts.server_cpus = opts.server_cpus if opts.server_cpus is not None else s_cpus
        opts.client_cpus = opts.client_cpus if opts.client_cpus is not None else c_cpus
    if resume is None:
        if fingerprint is None:
            from .fingerprint import fingerprint as fp
            fingerprint = fp(manifests, server_cpus=opts.server_cpus, client_cpus=opts.client_cpus)
        run_id = store.new_run(fingerprint, opts.to_dict())
    else:
        store.reopen_run(run_id)
    log_dir = paths.LOGS / f"run-{run_id}"
    log_dir.mkdir(parents=True, exist_ok=True)
    runner = Runner(store, opts, manifests, workloads, run_id, console, log_dir)
    plan = runner.plan()
    total = runner.planned_seconds(plan)
    verb = "resuming" if resume is not None else "starting"
    console.print(f"{verb} run {run_id}: {len(manifests)} server(s) × {len(workloads)} workload(s) × "
                  f"{opts.repeat} repetition(s), ~{total / 60:.1f} min of load planned "
                  f"(server CPUs {opts.server_cpus}, client CPUs {opts.client_cpus})")
    status = "finished"
    try:
        if progress:
            with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                          TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                          console=console, transient=True) as bar:
                runner.progress, runner.task = bar, bar.add_task("starting", total=max(total, 1e-9))
                runner.run(plan)
        else:
            runner.run(plan)
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        runner.progress = None
        store.finish_run(run_id, status)
    cells = store.cells(run_id)
    res = MatrixResult(run_id, status, sum(c.status == "ok" for c in cells),
                       sum(c.status == "failed" for c in cells), sum(c.status == "skipped" for c in cells))
    res.summary = summarize_cells(cells)
    res.warnings = [w for r in res.summary for w in r.warnings]
    if res.summary:
        console.print(summary_table(res.summary))
    for w_ in res.warnings:
        console.print(f"[yellow]warning:[/] {w_}")
    console.print(f"run {run_id} {status}: {res.ok} ok, {res.failed} failed, {res.skipped} skipped")
    if status == "interrupted":
        db = "" if store.path == paths.DB_PATH else f" --db {store.path}"
        console.print(f"[yellow]interrupted[/]: the cell in flight was abandoned; continue with "
                      f"`serverbench run --resume {run_id}{db}`")
    return res
