"""Run the loadgen binary for one point and parse its `loadgen/1` JSON.

loadgen's command line is built here and nowhere else (`command_line`): a point's load, the
threads, a warm-up, a shard's share and start, the result file. tests/test_loadgen_flags.py holds
every flag it can write against the built binary's `--help`.

The loadgen runs pinned to the client CPUs. Its own CPU time comes from `os.wait4` on
its pid (exact rusage of that child, unaffected by other children of the harness). It can use at
most `min(threads, client CPUs)` cores; rules/saturation.py's rule says whether it was the bottleneck.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..model import REBUILD, LoadgenFormatError, LoadgenReport
from ..rules import tlsfigures
from ..rules.saturation import saturated
from .supervisor import die_with_parent, pinned
from ..catalog.workloads import OPEN_LOOP_WARMUP, Point, parse_duration


class LoadgenError(Exception):
    """The loadgen could not run or gave no valid result (one-line message)."""


@dataclass
class LoadgenResult:
    report: LoadgenReport  # the validated loadgen/1 JSON
    args: list[str]  # the loadgen arguments used (after the binary; command_line)
    wall_s: float
    client_cpu_s: float
    client_cpu_percent: float  # 100 = one core
    client_saturated: bool
    client_cores: int  # cores the loadgen could use (the saturation denominator)
    stderr_tail: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def measured_s(self) -> float:
        """Seconds the loadgen measured (its own figure, else the wall time)."""
        return float(self.report.duration_s or self.wall_s)


def binary() -> Path:
    from .. import paths
    return paths.loadgen_binary()


def _missing(path: Path) -> LoadgenError:
    return LoadgenError(f"loadgen binary not found at {path}; build it with `make loadgen`")


def version(path: Path | None = None) -> str | None:
    """`loadgen --version` (first line), or None when the binary is missing or fails."""
    path = path or binary()
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return (out.stdout.strip() or out.stderr.strip()).splitlines()[0] if (out.stdout or out.stderr) else None


def validate(data: object, source: str) -> LoadgenReport:
    """The loadgen/1 result in `data` as a model; LoadgenError names `source` and the bad field."""
    try:
        return LoadgenReport.parse(data, source)
    except LoadgenFormatError as e:
        raise LoadgenError(str(e)) from None


def tls_figures(report: LoadgenReport, key_type: str | None) -> dict | None:
    """A TLS point's stored figures (rules/tlsfigures.py) from the report's `tls` object and the point's key
    type; None for plaintext. LoadgenError naming the field when loadgen wrote something else."""
    try:
        t = tlsfigures.from_loadgen((report.model_extra or {}).get("tls"), key_type)
    except ValueError as e:
        raise LoadgenError(f"loadgen result: {e}; {REBUILD}") from None
    if t is None and key_type is not None:
        raise LoadgenError(f"loadgen result: no `tls` object for a tls point; {REBUILD}")
    return t.model_dump(mode="json") if t is not None else None


def deadline_for(point: Point, extra_s: float = 0.0) -> float:
    """Seconds a loadgen run of `point` may take before it counts as overrunning (without grace)."""
    if point.duration is not None:
        base = parse_duration(point.duration)
    elif point.stages is not None:
        base = sum(parse_duration(p.split(":")[0]) for p in point.stages.split(","))
    else:
        from ..catalog.workloads import DEFAULT_TIME_LIMIT
        base = parse_duration(point.time_limit or DEFAULT_TIME_LIMIT)
    return base + extra_s


def _pin(cmd: list[str], cpus: list[int] | None) -> list[str]:
    return pinned(cmd, cpus) if cpus else cmd


def _stop(pid: int) -> None:
    """SIGTERM, then SIGKILL after 2 s; bounded. Reaps the child."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        end = time.monotonic() + wait
        while time.monotonic() < end:
            try:
                done, _, _ = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                return
            if done:
                return
            time.sleep(0.02)


def client_cores(client_cpus: list[int] | None) -> int:
    """CPUs a client may use: those it is pinned to, else the machine's."""
    return len(client_cpus) if client_cpus else (os.cpu_count() or 1)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _load_args(p: Point, rate: float | None, open_warmup: bool) -> list[str]:
    """The flags of a point's load (docs/DESIGN.md's table): one per field the point sets."""
    args: list[str] = []
    if p.method:
        args += ["--method", p.method]
    for h in p.headers:
        args += ["--header", h]
    if p.body is not None:
        args += ["--body", p.body]
    if p.connections is not None:
        args += ["--connections", str(p.connections)]
    if p.threads is not None:
        args += ["--threads", str(p.threads)]
    if p.requests is not None:
        args += ["--requests", str(p.requests)]
        if p.time_limit is not None:  # loadgen stops at whichever comes first
            args += ["--duration", p.time_limit]
    elif p.duration is not None:
        args += ["--duration", p.duration]
    if p.mode == "open":
        r = rate if rate is not None else p.rate
        if r is None or isinstance(r, str):
            raise ValueError(f"point {p.label!r}: rate {p.rate!r} needs a calibrated rate")
        args += ["--rate", _num(float(r))]
        if p.poisson:
            args.append("--poisson")
        # Open load on a cold client opens a connection per early request and stalls for tens of
        # ms (measured); warm the pool up at the target rate, unrecorded.
        if open_warmup:
            args += ["--warmup", OPEN_LOOP_WARMUP]
    if p.max_connections is not None:
        args += ["--max-connections", str(p.max_connections)]
    return args + _session_args(p) + _connection_args(p) + _noise_args(p)


def _session_args(p: Point) -> list[str]:
    args: list[str] = []
    if p.mode == "sessions":
        args += ["--users", str(p.users)]
        if p.ramp is not None:
            args += ["--ramp", p.ramp]
        if p.spawn_rate is not None:
            args += ["--spawn-rate", _num(p.spawn_rate)]
        if p.session_requests is not None:
            args += ["--session-requests", str(p.session_requests)]
        if p.loop_sessions:
            args.append("--loop-sessions")
    if p.think is not None:
        args += ["--think", p.think]
    if p.think_jitter is not None:
        args += ["--think-jitter", _num(p.think_jitter)]
    if p.stages is not None:
        args += ["--stages", p.stages]
    return args


def _connection_args(p: Point) -> list[str]:
    args: list[str] = []
    if not p.keepalive:
        args.append("--no-keepalive")
    if p.pipeline is not None:
        args += ["--pipeline", str(p.pipeline)]
    if p.http2 is not None:  # h2 over TLS or h2c by the URL's scheme (_tls_url)
        args += ["--http2", "--streams", str(p.streams or 1)]
    if p.timeout is not None:
        args += ["--timeout", p.timeout]
    if p.connect_timeout is not None:
        args += ["--connect-timeout", p.connect_timeout]
    if p.seed is not None:
        args += ["--seed", str(p.seed)]
    return args


def _noise_args(p: Point) -> list[str]:
    if p.noise is None:
        return []
    args = ["--noise", p.noise]
    for flag, v in (("--noise-connections", p.noise_connections), ("--noise-interval", p.noise_interval),
                    ("--noise-read-rate", p.noise_read_rate), ("--noise-path", p.noise_path),
                    ("--noise-lead", p.noise_lead)):
        if v is not None:
            args += [flag, str(v)]
    return args


def _tls_url(point: Point, base_url: str, tls_ca: str | None) -> tuple[str, list[str]]:
    """A tls point's base URL as https:// and its `--tls-ca`; a plaintext point's as given."""
    if point.tls is None:
        return base_url, []
    if not tls_ca:
        raise ValueError(f"point {point.label!r}: a tls point needs the run's CA (tls_ca, loadgen's --tls-ca)")
    scheme, sep, rest = base_url.partition("://")
    return "https://" + (rest if sep else scheme), ["--tls-ca", tls_ca]


def command_line(point: Point, base_url: str, default_path: str, *, threads: int, json_path: str,
                 rate: float | None = None, open_warmup: bool = True, warmup: str | None = None,
                 shard: tuple[int, int] | None = None, start_at: float | None = None,
                 tls_ca: str | None = None) -> list[str]:
    """loadgen's arguments (after the program) for `point` against `base_url`, its result to `json_path`.

    `rate` overrides the point's (a calibrated "N%" rate); `threads` when the point sets none (the
    client's CPUs, or a peer tool's cores); `open_warmup`: open load's unrecorded pool warm-up (the
    cross-check runs every tool cold); `warmup`: a warm-up before the measured window; `shard`
    (i, N) and `start_at` (Unix seconds): one shard of a load split over the cluster's workers;
    `tls_ca`: a tls point's CA file (PEM), the URL's scheme then https://."""
    if point.mode == "capacity":
        raise ValueError(f"point {point.label!r}: capacity points are stepped by the runner")
    path = point.path or default_path
    if not path.startswith("/"):
        path = "/" + path
    base_url, tls_args = _tls_url(point, base_url, tls_ca)
    args = [base_url.rstrip("/") + path, *_load_args(point, rate, open_warmup), *tls_args]
    if point.threads is None:
        args += ["--threads", str(threads)]
    if warmup:
        args += ["--warmup", warmup]
    if shard is not None:
        args += ["--shard", f"{shard[0]}/{shard[1]}"]
    if start_at is not None:
        args += ["--start-at", f"{start_at:.6f}"]
    return args + ["--json", json_path, "--quiet"]


def run_loadgen(url: str, point: Point, *, default_path: str, client_cpus: list[int] | None,
                rate: float | None = None, timeout_grace: float = 15.0,
                warmup: str | None = None, time_limit: float | None = None,
                shard: tuple[int, int] | None = None, start_at: float | None = None,
                tls_ca: str | None = None) -> LoadgenResult:
    """Run loadgen for `point` against `url` and return its parsed result and client usage.

    `rate`, `warmup`, `shard`, `start_at` and `tls_ca` as for `command_line`; the process is killed when it
    overruns its planned time (`time_limit`, else the point's) + `timeout_grace`. Threads default to
    the number of client CPUs when the point leaves them unset."""
    exe = binary()
    if not exe.is_file():
        raise _missing(exe)
    ncpu = client_cores(client_cpus)
    cores = max(1, min(point.threads or ncpu, ncpu))
    extra = parse_duration(warmup) if warmup else 0.0
    limit = (time_limit if time_limit is not None else deadline_for(point)) + extra
    fd, name = tempfile.mkstemp(prefix="serverbench-loadgen-", suffix=".json")
    os.close(fd)
    out = Path(name)
    keep = False  # an invalid result is kept on disk so the error can name it
    try:
        args = command_line(point, url, default_path, threads=ncpu, json_path=str(out), rate=rate, warmup=warmup,
                            shard=shard, start_at=start_at, tls_ca=tls_ca)
        try:
            data, wall, ru, stderr_tail = _execute(_pin([str(exe), *args], client_cpus), exe, out, limit,
                                                   timeout_grace)
            report = validate(data, str(out))
        except LoadgenError as e:
            keep = str(e).startswith(str(out))
            raise
    finally:
        if not keep:
            out.unlink(missing_ok=True)
    cpu = ru.ru_utime + ru.ru_stime
    pct = 100.0 * cpu / wall if wall > 0 else 0.0
    return LoadgenResult(report=report, args=args, wall_s=wall, client_cpu_s=cpu, client_cpu_percent=pct,
                         client_saturated=saturated(pct, cores), client_cores=cores, stderr_tail=stderr_tail)


def _execute(cmd: list[str], exe: Path, out: Path, limit: float, grace: float):
    """Run the loadgen, bounded by limit + grace; return (json, wall, rusage, stderr tail)."""
    with tempfile.TemporaryFile() as ferr:
        t0 = time.monotonic()
        try:
            # PDEATHSIG: the kernel kills the loadgen if the harness dies without cleaning up
            # (SIGKILL, a crash); taskset execs the loadgen in the same process, which keeps it.
            parent = os.getpid()
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=ferr,
                                    preexec_fn=lambda: die_with_parent(parent, signal.SIGKILL))
        except OSError as e:
            raise LoadgenError(f"cannot start loadgen {exe}: {e}; build it with `make loadgen`") from None
        reaped = False
        try:
            hard = t0 + limit + grace
            while True:
                # WNOHANG returns (0, 0, rusage) while the child runs: only a pid means it ended
                pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    reaped = True
                    break
                if time.monotonic() > hard:
                    _stop(proc.pid)
                    reaped = True
                    raise LoadgenError(f"loadgen overran its {limit:g}s plan by {grace:g}s and was "
                                       "killed; the server may be stalled")
                time.sleep(0.1)  # 10 Hz: ending a cell 0.1 s late costs nothing; polling costs CPU
        finally:
            if not reaped:
                _stop(proc.pid)  # Ctrl-C / SIGTERM / any error: never leave the loadgen behind
            proc.returncode = 0  # reaped by wait4; keep Popen from touching the pid again
        wall = time.monotonic() - t0
        ferr.seek(0)
        stderr_tail = "\n".join(ferr.read().decode(errors="replace").splitlines()[-20:])
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        last = stderr_tail.splitlines()[-1] if stderr_tail else "no message"
        raise LoadgenError(f"loadgen exited with code {code}: {last}")
    try:
        text = out.read_text()
    except FileNotFoundError:
        raise LoadgenError(f"loadgen wrote no JSON to {out}; check that it supports --json") from None
    if not text.strip():
        raise LoadgenError(f"{out}: loadgen wrote an empty result; rebuild loadgen (`make loadgen`)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise LoadgenError(f"{out}: invalid JSON from loadgen ({e}); rebuild loadgen (`make loadgen`)") from None
    return data, wall, ru, stderr_tail

