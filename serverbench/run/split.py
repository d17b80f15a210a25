"""`--split auto`: how many of this machine's CPUs the server gets and how many the load generator.

A symmetric split measures the client at the top of a many-core sweep: on 16 CPUs the load generator
on 8 saturated near 0.95 M req/s while c-epoll on 8 could serve more (issue 28). So before the matrix
the harness measures, for a few seconds, what one load-generator CPU drives and what one server CPU
serves (the reference row, c-epoll, the fastest row here, on one CPU each; CPU seconds per request on
both sides, whichever side was the bottleneck), and `choose` gives the server as many CPUs as the
client can still drive at `HEADROOM` × that server's rate per CPU times its CPUs.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

HEADROOM = 1.3  # the client must be able to drive this multiple of what the server serves at the top count
REFERENCE = "c-epoll"  # hand-written C, one epoll loop per core: the fastest row in every run so far
CALIBRATION_S = "3s"
CONNECTIONS = 256  # the cores workload's load
PATH = "/json"


def choose(n_cpus: int, client_per_cpu: float, server_per_cpu: float, headroom: float = HEADROOM) -> tuple[int, int]:
    """(server CPUs, client CPUs) for a machine of `n_cpus`: the most server CPUs s such that the
    client CPUs left, n − s, drive ≥ headroom × s × server_per_cpu (scaling taken as linear, the best
    a row can do); at least one each. One CPU: (1, 1), both on it."""
    if n_cpus < 1:
        raise ValueError(f"a machine has at least 1 CPU, got {n_cpus}")
    if client_per_cpu <= 0 or server_per_cpu <= 0:
        raise ValueError(f"rates per CPU must be positive, got client {client_per_cpu}, server {server_per_cpu}")
    if n_cpus == 1:
        return 1, 1
    # s × headroom × server ≤ (n − s) × client  ⇔  s ≤ n × client / (client + headroom × server)
    s = math.floor(n_cpus * client_per_cpu / (client_per_cpu + headroom * server_per_cpu) + 1e-9)
    s = min(max(s, 1), n_cpus - 1)
    return s, n_cpus - s


@dataclass
class Calibration:
    """What one client CPU drives and one server CPU serves, measured against the reference row."""

    reference: str
    seconds: float
    requests: int
    rps: float
    client_cpu_s: float
    server_cpu_s: float
    client_per_cpu: float  # req/s one fully busy load-generator CPU drives
    server_per_cpu: float  # req/s one fully busy server CPU serves

    def as_dict(self) -> dict[str, Any]:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}


class CalibrationError(Exception):
    """The calibration could not run (one line: why, and the fix)."""


def calibrate(server_cpu: int, client_cpu: int, reference: Any | None = None) -> Calibration:
    """Start the reference row on `server_cpu` ($WORKERS = 1), drive it from one loadgen thread on
    `client_cpu` for CALIBRATION_S, and divide the requests by each side's CPU seconds (the server's
    tree sampled by the measuring core, as a measured cell's is)."""
    from ..catalog import build, manifests as catalog, doctor
    from .. import paths
    from ..processes import supervisor
    from ..processes.loadgen import LoadgenError, run_loadgen
    from ..catalog.workloads import Point
    from . import measure
    m = reference
    if m is None:
        cat = catalog.load_catalog()
        if REFERENCE not in cat.servers:
            raise CalibrationError(f"the reference row {REFERENCE} is not in {paths.SERVERS}")
        m = cat.servers[REFERENCE]
    if not doctor.check(m, "run").available or not build.is_built(m):
        raise CalibrationError(f"the reference row {m.id} is not built; fix: `serverbench build {m.id}`")
    point = Point(label="split-calibration", mode="closed", connections=CONNECTIONS, threads=1,
                  duration=CALIBRATION_S, timeout="2s")
    log = paths.LOGS / f"split-calibration-{m.id}.log"
    try:
        with supervisor.run_server(m, cpus=[server_cpu], workers=1, log_path=log, ready_timeout=15) as srv:
            sampling, t0 = measure.Sampling(srv), time.monotonic()
            lg = sampling.run(lambda: run_loadgen(srv.url, point, default_path=PATH, client_cpus=[client_cpu],
                                                  timeout_grace=5))
            server_cpu_s = measure.server_cpu_s(sampling.usage)
            wall = time.monotonic() - t0
    except (supervisor.ServerStartError, LoadgenError) as e:
        raise CalibrationError(f"calibration against {m.id} failed: {str(e).splitlines()[0]}") from None
    ok = int(lg.report.summary.ok or 0)
    if ok <= 0 or lg.client_cpu_s <= 0 or server_cpu_s <= 0:
        raise CalibrationError(f"calibration against {m.id} measured no load ({ok} requests answered)")
    secs = lg.measured_s or wall
    return Calibration(m.id, round(secs, 3), ok, ok / secs, lg.client_cpu_s, server_cpu_s,
                       ok / lg.client_cpu_s, ok / server_cpu_s)


def auto_split(cpus: list[int], reference: Any | None = None) -> tuple[list[int], list[int], dict[str, Any]]:
    """(server CPUs, client CPUs, the record stored in the run's fingerprint) for `cpus`, this machine's:
    calibrated and chosen, or the two halves with the reason when the calibration cannot run."""
    from ..processes.supervisor import default_cpu_split
    half_s, half_c = default_cpu_split()
    if len(cpus) < 2:
        return half_s, half_c, {"mode": "auto", "server_cpus": half_s, "client_cpus": half_c,
                                "calibration": None, "note": "one CPU: the server and the load generator share it"}
    try:
        cal = calibrate(cpus[0], cpus[-1], reference)
    except CalibrationError as e:
        return half_s, half_c, {"mode": "auto", "server_cpus": half_s, "client_cpus": half_c, "calibration": None,
                                "note": f"{e}; the CPUs were split in two halves"}
    s, _ = choose(len(cpus), cal.client_per_cpu, cal.server_per_cpu)
    server, client = cpus[:s], cpus[s:]
    top = s * cal.server_per_cpu
    drive = len(client) * cal.client_per_cpu
    note = (f"server CPUs {len(server)}, client CPUs {len(client)}: the client can drive {drive / top:.2f}× what "
            f"{cal.reference} would serve on the server's CPUs")
    if drive < HEADROOM * top:
        note += f" (less than {HEADROOM}×: the top rows may be client-bound)"
    return server, client, {"mode": "auto", "server_cpus": server, "client_cpus": client,
                            "calibration": cal.as_dict(), "headroom": HEADROOM, "note": note}


DB_MIN_CPUS = 4  # below this a CPU of its own for PostgreSQL would leave the client or the server none to spare


def database_cpus(client: list[int], n_cpus: int) -> tuple[list[int] | None, str]:
    """PostgreSQL's CPUs under `--split auto` (issue 46, item 3), taken from the client's side: half of the
    client's CPUs (at least one, the client keeping one) on a machine of DB_MIN_CPUS or more; else None
    (it shares the load generator's) with the reason, which the run records."""
    if n_cpus < DB_MIN_CPUS or len(client) < 2:
        return None, (f"the database shares the load generator's CPUs ({n_cpus} CPUs: fewer than {DB_MIN_CPUS}, or "
                      "one client CPU); its CPU counts in the client's headroom")
    k = max(1, len(client) // 2)
    return client[-k:], f"the database on CPUs of its own ({k} of the client's {len(client)})"


def settle(opts: Any, remote_server: bool, fresh: bool, needs_db: bool = False) -> dict[str, Any] | None:
    """Fill in the run's server and client CPUs where the user left them out (in `opts`, a RunOptions)
    and say how they were chosen: the record stored as the fingerprint's `cpu_split` (None on a resume,
    whose stored options already hold them). CPUs given on the command line make the split "manual";
    "auto" calibrates only when both sides are left to the harness and both run on this machine."""
    from ..processes.supervisor import default_cpu_split, online_cpus
    if fresh and (opts.server_cpus is not None or opts.client_cpus is not None):
        opts.split = "manual"
    record: dict[str, Any] = {"mode": opts.split}
    if opts.server_cpus is None and opts.client_cpus is None and opts.split == "auto" and not remote_server \
            and not opts.target and not (opts.cluster and not opts.cluster.startswith("local:")):
        opts.server_cpus, opts.client_cpus, record = auto_split(online_cpus())
    elif opts.server_cpus is None or opts.client_cpus is None:
        s_cpus, c_cpus = default_cpu_split()
        # a server on another machine gets that machine's default split there (remote_server.py)
        opts.server_cpus = opts.server_cpus if opts.server_cpus is not None or remote_server else s_cpus
        opts.client_cpus = opts.client_cpus if opts.client_cpus is not None else c_cpus
    if needs_db and opts.split == "auto" and opts.db_cpus is None and record.get("mode") == "auto":
        db, why = database_cpus(list(opts.client_cpus), len(online_cpus()))
        if db is not None:
            opts.db_cpus, opts.client_cpus = db, [c for c in opts.client_cpus if c not in db]
        record = {**record, "db_cpus": db, "db_note": why}
    if not fresh:
        return None
    return {**record, "server_cpus": opts.server_cpus, "client_cpus": opts.client_cpus}


__all__ = ["HEADROOM", "REFERENCE", "Calibration", "CalibrationError", "auto_split", "calibrate", "choose", "settle",
           "database_cpus", "DB_MIN_CPUS"]
