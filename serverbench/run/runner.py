"""The measuring matrix: servers × workloads × points × repetitions → one stored cell each.

Order: repetitions outermost (rep 1 of every server/workload, then rep 2, ...), so slow drifts
of the machine spread over all servers instead of biasing one.
A server is started fresh for every (repetition, server, workload): repetitions are
independent samples (no state such as the /tenth counter or heap growth carries over), and
its points share that one start, except a cores sweep's points (`server_cores`, cores.py): the points
at one count (one per count in the cores workload; a head-of-line point and its twin) get a start of their
own pinned to that many of the server machine's CPUs; and a TLS workload's points get a
start per key type, plaintext or TLS with the run's certificate (`tls`, tls_run.py). Per point: warm-up (a
separate, unrecorded loadgen run of the size's `warmup`), for `rate = "N%"` a closed-loop
calibration (64 connections), then the measured run with the server's process tree sampled,
then the cell is committed on its own. The gate, the warm-up, the sampling and the figures are the
measuring core's (measure.py), which the cross-check and the `--split auto` calibration share.
"""
from __future__ import annotations

import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..catalog import manifests as catalog
from . import fixed_rate, h2_run, heavy_run, measure, outage_run, split, tls_run
from ..rules import cores
from ..processes import memlimit, supervisor
from .. import paths
from ..catalog import workloads as wl
from .capacity import find_capacity
from .database_run import RunDatabase
from .events import CellFinished, CellStarted, Listener, RepetitionEnded, RunStarted, ignore
from .lifecycle import MatrixResult, measured_run
from .fingerprint import fingerprint as take_fingerprint
from ..processes.loadgen import LoadgenError, LoadgenResult, run_loadgen
from ..processes.server import Server
from ..model import DEFAULT_REPEAT, CellMetrics, CellRecord, RunOptions
from ..store import Store, now_iso
from ..catalog.kinds import KINDS, OVER_TIME
from ..catalog.workloads import Point, Size, Workload

LOG_TAIL_LINES = 30
# Kinds whose result is the behaviour over time: a server that dies mid-run is a finding (the
# verdict "crashes"), so its cell is kept as measured instead of failed.


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


def _planned_s(size: Size, p: Point, first: bool) -> float:
    """A cell's share of the planned time: its warm-up (a start's first point: up to steady_max) and load."""
    steady = size.steady_max_seconds()
    return (steady if first and steady > 0 else size.warmup_seconds()) + p.planned_seconds()


def stored_capacities(store: Store, run_id: int, workloads: list[Workload]) -> dict[tuple[str, str], tuple[float, str]]:
    """--resume: the run's calibrations as its cells stored them, so every row keeps the same rate."""
    path_of = {(w.name, p.label): p.path or w.path for w in workloads
               for s in (w.quick, w.full) if s is not None for p in s.points}
    return {(c.workload, path_of[(c.workload, c.point)]): (c.metrics.setup.calibration_rps,
                                                         c.metrics.database.calibrated_on)
            for c in store.cells(run_id)
            if c.metrics.database.calibrated_on and c.metrics.setup.calibration_rps
            and (c.workload, c.point) in path_of}


def _cell_facts(opts: RunOptions, srv: Server, m: Any, w: Workload, size: Size, p: Point) -> dict[str, Any]:
    """What a cell records before it is measured: its kind, the server's workers and bound, the plan."""
    return {"kind": w.kind, "workers": srv.workers, "bound": m.bound(srv.workers),
            "warmup_s": size.warmup_seconds(), "planned_s": p.planned_seconds(), "noise_twin": p.twin,
            "target_url": opts.target, "server_host": srv.host if opts.server_on_cluster else None}


def cpu_overlap(opts: RunOptions, server_cpus: list[int]) -> bool:
    """Whether the server's CPUs are also the load generator's: only when the load generator runs on
    this machine (no --cluster, or local:N, whose workers share the client CPUs)."""
    if opts.cluster and not opts.cluster.startswith("local:"):
        return False
    return bool(set(server_cpus) & set(opts.client_cpus or []))


def _protocol_reason(m: Any, w: Workload, opts: RunOptions) -> str | None:
    """Why row `m` cannot run `w` for the protocol it speaks: TLS (tls_run.py) or HTTP/2 (h2_run.py)."""
    return tls_run.row_reason(m, w, opts) or h2_run.row_reason(m, w, opts)


def declared_out(m: Any, w: Workload, opts: RunOptions) -> str | None:
    """Why row `m`'s manifest alone keeps it out of `w` in a run with `opts` (the protocol it speaks, a
    database or CPU work it declares out): what a plan can know before building and verifying."""
    return _protocol_reason(m, w, opts) or measure.declared_reason(m, w)


def _kind_reason(w: Workload, db: RunDatabase | None, opts: RunOptions) -> str | None:
    """Why a workload of this kind cannot run in this run (None: it can)."""
    if w.kind == "db-outage":
        return outage_run.row_reason(db)
    if w.kind == "head-of-line" and (opts.cluster or opts.target):
        return "head-of-line runs its two request classes from this machine: run it without --cluster/--target"
    return None


def planned_seconds(plan: list, opts: RunOptions, gate: measure.Gate) -> float:
    """A plan's seconds of load, an upper bound: every start's warm-up to steady state counted at its maximum."""
    total = 0.0
    for _, m, w, s, pts in plan:
        if (_protocol_reason(m, w, opts) or gate.reason(m, w)) is None:
            starts = len(cores.by_count(pts)) + len(
                tls_run.starts([p for p in pts if p.server_cores is None]))
            steady = s.steady_max_seconds()
            total += (starts * (steady - s.warmup_seconds()) if steady > 0 else 0.0) + sum(
                _planned_s(s, p, first=False) for p in pts)
    return total

# -- running ----------------------------------------------------------------------------


class Runner:
    """Runs one matrix into `store`; see run_matrix()."""

    def __init__(self, store: Store, opts: RunOptions, manifests: list[Any], workloads: list[Workload],
                 run_id: int, emit: Listener, log_dir: Path) -> None:
        self.store, self.opts, self.manifests, self.workloads = store, opts, manifests, workloads
        self.run_id, self.emit, self.log_dir = run_id, emit, log_dir
        self.gate = measure.Gate(store, opts.allow_unverified, external=bool(opts.target))
        self.done = store.done_keys(run_id)
        self.memory_limit = memlimit.parse_size(opts.server_memory_limit) if opts.server_memory_limit else None
        self.cluster: Any = None  # cluster.LoadCluster, started at the first point that needs it
        self.db: RunDatabase | None = None  # the run's database, when a workload has the db feature
        self.tls = tls_run.RunTls(log_dir)  # the run's certificates, made at the first TLS start
        self.in_start = fixed_rate.InStart()  # the fixed-rate step's points measured in the rows' own starts
        # rate_basis = "run": (workload, path) -> (the calibration's rps, the row it was measured on); one
        # calibration serves every point of a workload on the same path (rate=20% and rate=80% share it)
        self.capacities: dict[tuple[str, str], tuple[float, str]] = stored_capacities(store, run_id, workloads)
        # this machine's CPUs, taken before run_matrix pins the harness to the client CPUs
        self.machine_cpus = supervisor.online_cpus()
        self._online: list[int] | None = None  # the server machine's CPUs, for cores sweeps
        if opts.server_on_cluster:
            self.gate.remote = (lambda m: self.load_cluster().server_host(m), opts.server_cpus)

    def load_cluster(self) -> Any:
        """The --cluster's client (and local workers), started on first use."""
        if self.cluster is None:
            from ..cluster.load_cluster import LoadCluster, security
            self.cluster = LoadCluster(self.opts.cluster, security=security(self.opts.cluster_tls),
                                       server=self.opts.server_on_cluster).start()
        return self.cluster

    def load(self, url: str, point: Point, *, default_path: str, client_cpus: list[int] | None,
             rate: float | None = None, warmup: str | None = None) -> LoadgenResult:
        """One loadgen run of `point`: a single process, or shards on the --cluster's workers.
        `warmup`: loadgen's own unrecorded warm-up first (measure.keeps_connections: TLS points only)."""
        if not self.opts.cluster:  # a TLS workload never gets here with a cluster (tls_run.row_reason)
            return run_loadgen(url, point, default_path=default_path, client_cpus=client_cpus, rate=rate,
                               tls_ca=self.tls.ca_arg(point), warmup=warmup)
        assert warmup is None, "loadgen --warmup is not sharded (TLS points, not run with --cluster)"
        return self.load_cluster().run(url, point, default_path=default_path, client_cpus=client_cpus, rate=rate)

    def close(self) -> None:
        try:
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None
        finally:
            if self.db is not None:
                self.db.close()

    # -- planning ---------------------------------------------------------------------------
    def size(self, w: Workload) -> Size:
        s = w.size(self.opts.full)
        if self.opts.duration:
            s = s.model_copy(update={"points": [_with_duration(p, self.opts.duration) for p in s.points]})
        if any(p.server_cores == cores.SWEEP for p in s.points):
            s = s.model_copy(update={"points": cores.expand(s.points, len(self._sweep_cpus()))})
        return s

    def _sweep_cpus(self) -> list[int]:
        """The CPUs a sweep's counts go up to and are pinned from, asked once per run: the server
        machine's with --server-on-cluster; on one machine the run's server CPUs, except on a 2-CPU machine
        whose split the harness chose (server CPU 0), where the sweep goes on to both CPUs so that it still
        shows a second count, flagged cpu-overlap."""
        if self._online is None:
            remote = self.opts.server_on_cluster and not (self.opts.cluster or "").startswith("local:")
            own = self.opts.server_cpus
            two = own is not None and len(own) == 1 and self.opts.split != "manual" and len(self.machine_cpus) == 2
            self._online = (self.server_cpus_online() if remote or own is None or two else list(own))
        return self._online

    def plan(self) -> list[tuple[int, Any, Workload, Size, list[Point]]]:
        out = []
        for rep, m in measure.rounds(self.opts.repeat, self.manifests):
            for w in self.workloads:
                s = self.size(w)
                todo = [p for p in s.points if (m.id, w.name, p.label, rep) not in self.done]
                if todo:
                    out.append((rep, m, w, s, todo))
        return out

    def _record(self, cell: CellRecord, advance_s: float) -> None:
        self.store.record_cell(self.run_id, cell)
        self.emit(CellFinished(cell, advance_s))

    def run(self, plan: list) -> None:
        """Measure the plan in its order (repetitions outermost); RepetitionEnded after each repetition's
        last cell, so that a first answer is shown while the other repetitions run."""
        for i, (rep, m, w, size, todo) in enumerate(plan):
            if i and plan[i - 1][0] != rep:
                self.emit(RepetitionEnded(self.run_id, plan[i - 1][0], self.opts.repeat))
                self.in_start.predict(self.store.cells(self.run_id))
            self._run_one(rep, m, w, size, todo)
        if plan:
            self.emit(RepetitionEnded(self.run_id, plan[-1][0], self.opts.repeat))

    def _run_one(self, rep: int, m: Any, w: Workload, size: Size, todo: list[Point]) -> None:
        """One (repetition, row, workload): its points on one start per key type, a cores point on its own."""
        reason = _protocol_reason(m, w, self.opts) or self.gate.reason(m, w) or _kind_reason(w, self.db, self.opts)
        if reason is not None:
            for p in todo:
                self._record(CellRecord(m.id, w.name, p.label, rep, "skipped", error=reason,
                                        started_at=now_iso(), finished_at=now_iso()), 0.0)
            return
        # the points that take the run's server CPUs share one start per key type (tls_run.py: TLS
        # replaces plaintext on $PORT); a cores point gets its own
        starts = tls_run.starts([p for p in todo if p.server_cores is None])
        per_point = KINDS[w.kind or "throughput"].start_per_point
        if per_point:  # what one point did to the row must not carry over
            starts = [[p] for shared in starts for p in shared]
        for shared in [self.in_start.extend(rep, m.id, w.name, shared, self.done) for shared in starts]:
            name = tls_run.log_name(m.id, w.name, shared, rep, per_point)  # a start per point: a log per point
            self.run_start(rep, m, w, size, shared, None, self.log_dir / name)
        for at_k in cores.by_count(todo):
            self._run_cores_points(rep, m, w, size, at_k)

    def _run_cores_points(self, rep: int, m: Any, w: Workload, size: Size, pts: list[Point]) -> None:
        """The points with `server_cores = k` (one per count in a cores sweep; a head-of-line point with its
        twin): a fresh start pinned to the first k of the server machine's CPUs."""
        online = self._sweep_cpus()
        k = int(pts[0].server_cores or 0)
        why = ("a --target server is not started here, so its CPUs cannot be set" if self.opts.target else
               f"needs {k} server CPUs; the server machine has {len(online)}" if k > len(online) else None)
        if why is not None:
            for p in pts:
                self._record(CellRecord(m.id, w.name, p.label, rep, "skipped", error=why, started_at=now_iso(),
                                        finished_at=now_iso()), 0.0)
            return
        cpus = online[:k]
        self.run_start(rep, m, w, size, pts, cpus, self.log_dir / tls_run.log_name(m.id, w.name, pts, rep, True),
                        {"server_cores": k, "server_cpu_list": cpus, "cpu_overlap": cpu_overlap(self.opts, cpus)})

    def run_start(self, rep: int, m: Any, w: Workload, size: Size, todo: list[Point], cpus: list[int] | None,
                   log_path: Path, extra: dict[str, Any] | None = None) -> None:
        """One server start (on `cpus`, None = the run's server CPUs) and its points, each cell recorded
        with `extra` metrics; a start that fails records them all failed."""
        client_cpus = self.opts.client_cpus
        extra = extra or {}
        pending = list(todo)
        t_start = time.monotonic()
        on = f" on CPU {','.join(map(str, cpus))}" if cpus else ""
        self.emit(CellStarted(f"{m.id} · {w.name} · r{rep}: starting{on}"))
        try:
            with self._server(m, log_path, cpus=cpus, db="db" in w.features, tls=todo[0].tls,
                              http2=todo[0].http2) as srv:
                # process start → first 200 on GET / where the server says (the profile's start-up), else
                # the harness's wait for it
                start_s = srv.ready_s or time.monotonic() - t_start
                while pending:
                    p = pending[0]
                    self.emit(CellStarted(f"{m.id} · {w.name} · {p.label} · r{rep}"))
                    cell = self.run_point(srv, m, w, size, p, rep, client_cpus, first=len(pending) == len(todo))
                    cell.metrics = cell.metrics.updated({**extra, **fixed_rate.of_label(p.label)})
                    if start_s is not None:
                        cell.metrics.timing.server_start_s = round(start_s, 3)
                        start_s = None
                    self._record(cell, _planned_s(size, p, first=p is todo[0]))
                    pending.pop(0)
        except supervisor.ServerStartError as e:
            tail = _file_tail(log_path)
            for p in pending:
                self._record(CellRecord(m.id, w.name, p.label, rep, "failed",
                                        error=f"server did not start: {str(e).splitlines()[0]}",
                                        log_tail=tail, started_at=now_iso(), finished_at=now_iso(),
                                        metrics={"ready_timeout_s": self.opts.ready_timeout, **extra}),
                             _planned_s(size, p, first=p is todo[0]))

    def server_cpus_online(self) -> list[int]:
        """The CPUs of the machine the server runs on (a cores sweep goes up to their count)."""
        if self.opts.server_on_cluster and not (self.opts.cluster or "").startswith("local:"):
            return self.load_cluster().server_cpus_online()
        return list(self.machine_cpus)

    def _server(self, m: Any, log_path: Path, cpus: list[int] | None = None, db: bool = False,
                tls: str | None = None, http2: str | None = None) -> AbstractContextManager[Server]:
        """The server for a round of points: started and supervised here, or the --target.
        `cpus` overrides the run's server CPUs (a cores sweep's point); `db`: it is told the run's database;
        `tls`: it serves TLS with the run's certificate of that key type (tls_run.py); `http2`: HTTP/2 of that
        mode (h2_run.py)."""
        if self.opts.target:
            from ..processes.target import external
            return external(self.opts.target)
        if self.opts.server_on_cluster:
            from ..cluster.remote_server import run_remote
            return run_remote(self.load_cluster().server_host(m), cpus=cpus or self.opts.server_cpus,
                              workers=self.opts.workers, ready_timeout=self.opts.ready_timeout,
                              memory_limit=self.memory_limit,
                              # on this machine the run's log folder; elsewhere results/logs/ there
                              log_path=str(log_path) if (self.opts.cluster or "").startswith("local:")
                              else f"cluster/run-{self.run_id}-{log_path.name}")
        cpus = cpus or self.opts.server_cpus
        env = (self.db.env(m, supervisor.effective_workers(m, self.opts.workers, cpus))
               if db and self.db is not None else None)
        # probed as finely as the profile's start-up, which `make bench` takes from these starts
        return supervisor.run_server(m, cpus=cpus, workers=self.opts.workers, ready_poll_s=supervisor.STARTUP_POLL_S,
                                     log_path=log_path, ready_timeout=self.opts.ready_timeout,
                                     memory_limit=self.memory_limit,
                                     extra_env=h2_run.env(http2, self.tls.env(tls, env)),
                                     tls_ca=self.tls.ca(tls), http2=http2 is not None)

    def run_point(self, srv: Server, m: Any, w: Workload, size: Size, p: Point, rep: int,
                  client_cpus: list[int] | None, first: bool = True) -> CellRecord:
        """Warm-up, calibration or capacity steps, the measured run; never raises LoadgenError.
        `first`: the start's first point, warmed to steady state."""
        cell = CellRecord(m.id, w.name, p.label, rep, "ok", started_at=now_iso())
        t0 = time.monotonic()
        loaded = 0.0  # seconds the loadgen actually ran (warm-up included): not overhead
        metrics = _cell_facts(self.opts, srv, m, w, size, p)
        db = self.db if "db" in w.features else None
        sampling = measure.Sampling(srv, beside=db.sampler if db is not None else None)
        lg: LoadgenResult | None = None
        outage: outage_run.OutageRun | None = None

        def lg_run(point: Point, rate: float | None = None, warmup_s: float = 0.0) -> LoadgenResult:
            nonlocal loaded
            r = self.load(srv.url, point, default_path=w.path, client_cpus=client_cpus, rate=rate,
                          warmup=f"{warmup_s:g}s" if warmup_s > 0 else None)
            loaded += r.measured_s + warmup_s
            return r

        try:
            if not srv.alive():
                raise LoadgenError(f"server exited with code {srv.returncode()} before this point")
            try:
                warmed, in_run = measure.warm_up_point(lg_run, w.kind, size, p, first, measure.cpu_counter(srv))
            except LoadgenError as e:
                raise LoadgenError(f"warm-up: {e}") from None
            if warmed is not None:
                metrics["warmup"] = warmed.cell_figures()
            if not srv.alive():
                raise LoadgenError(f"server exited with code {srv.returncode()} during the warm-up")
            if p.mode == "capacity":
                lg, metrics["capacity"] = sampling.run(lambda: find_capacity(srv, p, lg_run))
            else:
                rate = self._rate(m, w, p, lg_run, metrics) if p.rate_fraction is not None else None
                if p.outage is not None:  # the database taken away during the measured run (outage_run.py)
                    outage = outage_run.OutageRun(self.db, p, in_run, srv.url)
                measured = ((lambda: heavy_run.measure(srv.url, p, w.path, client_cpus, metrics))
                            if p.heavy_path is not None  # head-of-line: the heavy class beside it, one clock
                            else (lambda: lg_run(p, rate, in_run)) if outage is None
                            else (lambda: outage.alongside(lambda: lg_run(p, rate, in_run))))
                metrics.update(measure.quiet_before_window(srv, p, db.pg.pid if db is not None and db.pg else None))
                lg = sampling.run(measured, measure_after=heavy_run.LEAD_S if p.heavy_path else in_run)
                loaded += lg.measured_s if p.heavy_path is not None else 0.0
                metrics["harness_cpu_percent"] = sampling.harness_cpu_percent
                if rate is not None:
                    metrics["target_rate"] = rate
                if (warmed := measure.judge_in_run(lg.report, w.kind, size, first, in_run)) is not None:
                    metrics["warmup"] = warmed.cell_figures()
            cell.loadgen = lg.report
            metrics = {**measure.loadgen_metrics(lg, p.tls), **metrics}
            if not srv.alive():
                cell.error = f"server exited with code {srv.returncode()} during the measured run"
                if w.kind in OVER_TIME:  # a finding: the verdict says "crashes"
                    cell.log_tail = srv.log_tail(LOG_TAIL_LINES)
                else:
                    cell.status = "failed"
        except LoadgenError as e:
            cell.status = "failed"
            cell.error = str(e)
        usage = cell.usage = sampling.usage
        metrics["usage"], metrics["speed"] = measure.usage_metrics(usage), sampling.speed
        if db is not None:
            db.add_figures(metrics, sampling.beside_usage, m, srv.workers, len(self.opts.client_cpus or []) or 1)
        if usage is not None:
            metrics.update(measure.over_time_metrics(w.kind, lg, usage, srv))
        if outage is not None:
            metrics["outage"] = outage.figures(lg, getattr(metrics.get("over_time"), "server_died_at_s", None))
        if cell.status == "failed":
            cell.log_tail = srv.log_tail(LOG_TAIL_LINES)
            if not srv.alive() and "exited" not in (cell.error or ""):
                cell.error = f"{cell.error} (server exited with code {srv.returncode()})"
        cell.finished_at = now_iso()
        metrics["overhead_s"] = round(time.monotonic() - t0 - loaded, 3)
        cell.metrics = CellMetrics.model_validate(metrics)
        return cell


    def _rate(self, m: Any, w: Workload, p: Point, lg_run: Any, metrics: dict[str, Any]) -> float:
        """An "N%" point's rate: N % of the closed-loop capacity a calibration measures on this row, or,
        with rate_basis = "run", on the run's first row to reach the workload's path, then the same
        capacity (and so the same rate for a point) for every row."""
        key = (w.name, p.path or w.path)
        if p.rate_basis == "run" and key in self.capacities:
            cap, on = self.capacities[key]
        else:
            calib = self.load_calibration(lg_run, p)
            cap, on = float(calib.report.summary.rps or 0.0), m.id
            if cap <= 0:
                raise LoadgenError(f"calibration measured 0 rps ({calib.report.summary.errors} errors)")
            if p.rate_basis == "run":
                self.capacities[key] = (cap, on)
        metrics["calibration_rps"] = cap
        if p.rate_basis == "run":
            metrics["calibrated_on"] = on
        return max(1.0, round(cap * float(p.rate_fraction or 1.0), 1))

    @staticmethod
    def load_calibration(lg_run: Any, p: Point) -> LoadgenResult:
        return lg_run(measure.calibration_point(p))


def run_matrix(store: Store, opts: RunOptions, *, manifests: list[Any] | None = None,
               workloads: list[Workload] | None = None, resume: int | None = None,
               on_event: Listener = ignore, fingerprint: dict | None = None,
               order_blocks: fixed_rate.BlockFinder | None = None, db_url: str | None = None) -> MatrixResult:
    """Run (or resume) a matrix and store every cell, reporting progress through `on_event`.

    With `resume`, the stored run's options are used and its 'ok' cells are skipped.
    The run ends 'finished' only when the plan completed; Ctrl-C (KeyboardInterrupt) abandons
    the cell in flight and ends it 'interrupted'; any other exception ends it 'failed' with the
    error stored, then propagates. `order_blocks` (the aggregation's rule, handed in by the CLI) names
    the client-bound blocks and top ties the plan left; each is measured again at one fixed rate (fixed_rate.py).
    Cells already stored are kept in every case; servers are
    stopped by the supervisor's context manager. A workload with the db feature gets one PostgreSQL for
    the run (database_run.py): the harness's own, or `db_url`'s (its password never stored)."""
    if resume is not None:
        opts = RunOptions.from_dict(store.run(resume).options)
        run_id = resume
    if manifests is None and opts.target and not opts.servers:
        from ..processes.target import ExternalManifest
        manifests = [ExternalManifest()]
    if manifests is None:
        manifests = catalog.select(catalog.load_catalog(), opts.servers)
    if workloads is None:
        workloads = wl.select(wl.load_workloads(), opts.workloads)
    # a server on another machine gets that machine's default split there (remote_server.py)
    remote_server = opts.server_on_cluster and not (opts.cluster or "").startswith("local:")
    # the run's database, when a workload needs one (a --target brings its own): refused before the split's
    # calibration if it cannot be had; started after it (its default CPUs are the client's) and before the
    # run is stored so that its facts are; stopped by the runner's cleanup, or here if storing fails
    needs_db = not opts.target and any("db" in w.features for w in workloads)
    if needs_db:
        RunDatabase.preflight(opts, db_url)
    cpu_split = split.settle(opts, remote_server, fresh=resume is None, needs_db=needs_db)  # --split auto calibrates here
    database = RunDatabase.open(opts, db_url) if needs_db else None
    try:
        if resume is None:
            if fingerprint is None:
                fingerprint = take_fingerprint(manifests, server_cpus=opts.server_cpus, client_cpus=opts.client_cpus)
            # what the report needs of each workload, stored so that it never re-reads workloads/*.toml
            facts = {w.name: w.facts() for w in workloads}
            db_facts = {"database": database.facts} if database is not None else {}
            run_id = store.new_run({**fingerprint, "cpu_split": cpu_split, "workloads": facts, **db_facts},
                                   opts.to_dict())
        else:
            store.reopen_run(run_id)
        log_dir = paths.run_logs(run_id, store.path)
        log_dir.mkdir(parents=True, exist_ok=True)
        runner = Runner(store, opts, manifests, workloads, run_id, on_event, log_dir)
        runner.db = database
    except BaseException:
        if database is not None:
            database.close()
        raise
    plan = runner.plan()
    with measured_run(store, run_id, list(opts.client_cpus), on_event, cleanup=runner.close,
                      unfinished="the run ended before its plan completed") as result:
        on_event(RunStarted(run_id, resume is not None, len(manifests), len(workloads), opts.repeat,
                            planned_seconds(plan, opts, runner.gate), list(opts.server_cpus or []), list(opts.client_cpus)))
        runner.in_start.finder = order_blocks
        runner.run(plan)
        if order_blocks is not None:
            cells = store.cells(run_id)
            plans = runner.in_start.final(order_blocks(cells), cells)
            # what the plan measured, the step's in-start points too, less those at a rate since lowered
            runner.done = store.done_keys(run_id) - fixed_rate.stale(cells, plans)
            fixed_rate.run_step(runner, plans)
    return result[0]


__all__ = ["run_matrix", "MatrixResult", "Runner", "RunOptions", "DEFAULT_REPEAT"]
