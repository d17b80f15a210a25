"""`workloads/*.toml`: load profiles, validated with pydantic; a point's fields map 1:1 to loadgen
options (processes/loadgen.py's `command_line` writes them).

A workload has a `quick` size (default, ~10 s per server on 2 cores) and a `full` size
(the published benchmark's original parameters). A workload may instead list
`includes = [...]`: running it runs those workloads' sizes (used by the `quick` set).
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from .kinds import OVER_TIME, TWINNED, Kind

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}

# Used for ETA and kill deadlines of request-count points that give no time_limit.
DEFAULT_TIME_LIMIT = "60s"
CALIBRATION_CONNECTIONS = 64


class WorkloadError(Exception):
    """A workload file is invalid or a workload name is unknown (one-line message)."""


def parse_duration(text: str | int | float) -> float:
    """'10s' | '500ms' | '2m' | '1h' -> seconds. Bare numbers are seconds."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"duration must be >= 0, got {text}")
        return float(text)
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"bad duration {text!r}; use e.g. '10s', '500ms', '2m'")
    return float(m.group(1)) * _UNITS[m.group(2)]


class Point(BaseModel):
    """One measured load level; fields map 1:1 to loadgen options (processes/loadgen.command_line)."""

    model_config = ConfigDict(extra="forbid")

    label: str
    mode: Literal["closed", "open", "sessions", "capacity"] = "closed"
    path: str | None = None
    method: str | None = None
    headers: list[str] = []
    body: str | None = None
    connections: int | None = None
    threads: int | None = None
    duration: str | None = None
    requests: int | None = None
    time_limit: str | None = None  # request-count points: passed as --duration (a cap)
    rate: float | str | None = None  # number, or "50%" of calibrated closed-loop capacity
    # an "N%" rate's capacity: each row's own ("row"), or the first row's in the run, then the same
    # rate for every row ("run": the database workloads, where a race would only measure Postgres)
    rate_basis: Literal["row", "run"] = "row"
    poisson: bool = False
    max_connections: int | None = None
    users: int | None = None
    ramp: str | None = None
    spawn_rate: float | None = None
    session_requests: int | None = None
    think: str | None = None
    think_jitter: float | None = None
    loop_sessions: bool = False
    stages: str | None = None
    keepalive: bool = True
    pipeline: int | None = None
    timeout: str | None = None
    connect_timeout: str | None = None
    seed: int | None = None
    # calibration for rate = "N%"
    calibration: str = "3s"
    # mode = "capacity"
    start_rate: float | None = None
    step: float = 1.5
    max_steps: int = 10
    step_duration: str = "5s"
    p99_limit: str = "10ms"
    # after the first step that fails, bisect (geometrically) between it and the last that
    # held this many times: coarse steps find the range quickly, refinement narrows it
    refine: int = 0
    # the server's CPU count for this point: a fresh start pinned to that many CPUs ($WORKERS follows);
    # "sweep" (kind cores) = one point per count 1, 2, 4 … up to the server machine's CPUs (cores.py)
    server_cores: int | Literal["sweep"] | None = None
    # kind noisy: bad clients on connections of their own beside this point's load (loadgen --noise)
    # rapid-reset: HTTP/2 streams opened and reset at once in bursts (CVE-2023-44487), beside h2c load only
    noise: Literal["slowloris", "idle", "garbage", "slow-reader", "rapid-reset"] | None = None
    noise_connections: int | None = None
    noise_interval: str | None = None  # slowloris: the gap between header bytes
    noise_read_rate: int | None = None  # slow-reader: bytes/s read per connection
    noise_path: str | None = None  # slow-reader: what it requests; rapid-reset: what each stream asks
    noise_lead: str | None = None  # the noise starts this long before the legitimate load
    twin: str | None = None  # a noise point's quiet twin: the label of the same load without noise
    # kind db-outage: what the harness does to the run's PostgreSQL during this point's measured load
    # (run/outage_run.py): "restart" (a fast shutdown, then started again: connections reset) or
    # "freeze" (SIGSTOP of every process for outage_for, then SIGCONT: connections stay, nothing answers),
    # outage_at after the measurement starts
    outage: Literal["restart", "freeze"] | None = None
    outage_at: str | None = None
    outage_for: str | None = None
    # kind head-of-line: heavy requests mixed into this point's light open load at heavy_share of its rate,
    # on connections of their own (a second loadgen process on the same clock, run/heavy_run.py), each
    # class in its own histogram
    heavy_path: str | None = None
    heavy_share: float | None = None
    # the `tls` feature (SPEC.md, "TLS"): the server started with the run's certificate of this key type
    # serves TLS instead of plaintext; loadgen speaks https:// and verifies it against the run's CA
    # (--tls-ca, run/tls_run.py). None: plaintext, as every other point
    tls: Literal["rsa", "ecdsa"] | None = None
    # the `h2`/`h2c` features (SPEC.md, "HTTP/2"): the server started with `$HTTP2` of this mode serves HTTP/2
    # (h2: over TLS, so `tls` names the key type; h2c: cleartext with prior knowledge); loadgen speaks it
    # (--http2) with `streams` concurrent streams on each connection (run/h2_run.py). None: HTTP/1.1
    http2: Literal["h2", "h2c"] | None = None
    streams: int | None = None

    @field_validator("duration", "ramp", "think", "timeout", "connect_timeout", "time_limit",
                     "calibration", "step_duration", "p99_limit", "noise_interval", "noise_lead", "outage_at",
                     "outage_for")
    @classmethod
    def _check_duration(cls, v: str | None) -> str | None:
        if v is not None:
            parse_duration(v)
        return v

    @field_validator("rate")
    @classmethod
    def _check_rate(cls, v: float | str | None) -> float | str | None:
        if isinstance(v, str):
            m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*", v)
            if not m or not 0 < float(m.group(1)) <= 100:
                raise ValueError(f"rate {v!r} must be a number or a percentage like '50%'")
        elif v is not None and v <= 0:
            raise ValueError("rate must be > 0")
        return v

    @field_validator("server_cores")
    @classmethod
    def _check_server_cores(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, int) and v < 1:
            raise ValueError('server_cores must be >= 1 (or "sweep")')
        return v

    @field_validator("stages")
    @classmethod
    def _check_stages(cls, v: str | None) -> str | None:
        if v is not None:
            for part in v.split(","):
                d, sep, val = part.partition(":")
                if not sep:
                    raise ValueError(f"stage {part!r} must be 'DURATION:VALUE'")
                parse_duration(d)
                float(val)
        return v

    @model_validator(mode="after")
    def _check_mode(self) -> "Point":
        if self.duration is not None and self.requests is not None:
            raise ValueError("give either duration or requests, not both")
        if self.rate_basis == "run" and not isinstance(self.rate, str):
            raise ValueError('rate_basis = "run" shares a calibrated rate: give rate = "N%"')
        if self.mode == "closed":
            if self.duration is None and self.requests is None:
                raise ValueError("closed point needs duration or requests")
        elif self.mode == "open":
            if self.rate is None:
                raise ValueError("open point needs rate (number or '50%')")
            if self.duration is None and self.stages is None:
                raise ValueError("open point needs duration or stages")
        elif self.mode == "sessions":
            if self.users is None:
                raise ValueError("sessions point needs users")
            if self.duration is None and self.stages is None:
                raise ValueError("sessions point needs duration or stages")
        elif self.mode == "capacity":
            if self.start_rate is None or self.start_rate <= 0:
                raise ValueError("capacity point needs start_rate > 0")
            if self.step <= 1.0:
                raise ValueError("capacity step is a growth factor and must be > 1")
            if self.max_steps < 1:
                raise ValueError("capacity max_steps must be >= 1")
            if self.refine < 0:
                raise ValueError("capacity refine must be >= 0")
        if (self.heavy_path is None) != (self.heavy_share is None):
            raise ValueError("heavy_path and heavy_share go together: the heavy requests and their share of the rate")
        if self.heavy_share is not None and not 0 < self.heavy_share < 1:
            raise ValueError("heavy_share is a share of the point's rate, above 0 and below 1 (0.01 = 1 %)")
        if self.heavy_path is not None and (self.mode != "open" or not isinstance(self.rate, (int, float))):
            raise ValueError("heavy requests are mixed into open load at a fixed rate (a number)")
        if self.noise is None and self.heavy_path is None and self.twin is not None:
            raise ValueError("twin belongs to a point with noise or heavy requests")
        if self.noise is None and any(
                v is not None for v in (self.noise_connections, self.noise_interval, self.noise_read_rate,
                                        self.noise_path, self.noise_lead)):
            raise ValueError("noise_* belong to a point with noise; set noise = one of slowloris, "
                             "idle, garbage, slow-reader, rapid-reset")
        if self.noise_connections is not None and self.noise_connections < 1:
            raise ValueError("noise_connections must be >= 1")
        if self.tls is not None and self.noise is not None:
            raise ValueError("noise speaks plain HTTP: a point with noise has no tls")
        self._check_http2()
        self._check_outage()
        return self

    def _check_http2(self) -> None:
        if self.http2 == "h2" and self.tls is None:
            raise ValueError('http2 = "h2" is HTTP/2 over TLS: give tls = "rsa" or "ecdsa" (h2c is cleartext)')
        if self.http2 == "h2c" and self.tls is not None:
            raise ValueError('http2 = "h2c" is cleartext HTTP/2: a point with tls speaks http2 = "h2"')
        if self.streams is not None and (self.http2 is None or self.streams < 1):
            raise ValueError("streams (HTTP/2 streams per connection, >= 1) belong to a point with http2")
        if self.noise == "rapid-reset" and self.http2 != "h2c":
            raise ValueError('noise = "rapid-reset" speaks cleartext HTTP/2 beside h2c load: give http2 = "h2c"')
        if self.http2 is not None and (self.pipeline or self.noise not in (None, "rapid-reset") or self.heavy_path
                                       or not self.keepalive or self.mode in ("sessions", "capacity")):
            raise ValueError("an http2 point is closed or open keep-alive load without pipeline, heavy requests or "
                             "HTTP/1.1 noise (HTTP/2 multiplexes with streams; its noise is rapid-reset)")

    def _check_outage(self) -> None:
        if self.outage is None:
            if self.outage_at is not None or self.outage_for is not None:
                raise ValueError('outage_at and outage_for belong to a point with outage = "restart" or "freeze"')
            return
        if self.mode != "open" or self.duration is None or isinstance(self.rate, str):
            raise ValueError("an outage point is open load at a fixed rate (a number) for a duration")
        if self.outage_at is None:
            raise ValueError("an outage point says when the database goes away: outage_at = \"5s\"")
        if (self.outage_for is None) != (self.outage == "restart"):
            raise ValueError('outage_for is how long a "freeze" lasts (a restart takes what it takes): give it '
                             'with outage = "freeze" only')
        if parse_duration(self.outage_at) + parse_duration(self.outage_for or "0s") >= parse_duration(self.duration):
            raise ValueError("the outage must end inside the point's duration (outage_at + outage_for < duration)")

    @property
    def rate_fraction(self) -> float | None:
        """0.5 for rate = "50%", else None."""
        if isinstance(self.rate, str):
            return float(self.rate.strip().rstrip("%")) / 100.0
        return None

    def planned_seconds(self) -> float:
        """Planned load time (for ETA): duration, stages, time limit, or all capacity steps."""
        warm = parse_duration(OPEN_LOOP_WARMUP)
        if self.mode == "capacity":
            return (self.max_steps + self.refine) * (parse_duration(self.step_duration) + warm)
        extra = parse_duration(self.calibration) if self.rate_fraction is not None else 0.0
        extra += warm if self.mode == "open" else 0.0
        extra += parse_duration(self.noise_lead) if self.noise_lead else 0.0
        if self.duration is not None:
            return parse_duration(self.duration) + extra
        if self.stages is not None:
            return sum(parse_duration(p.split(":")[0]) for p in self.stages.split(",")) + extra
        return parse_duration(self.time_limit or DEFAULT_TIME_LIMIT) + extra


# Open load's unrecorded pool warm-up (processes/loadgen.py puts it on the command line): planned time.
OPEN_LOOP_WARMUP = "500ms"


class Size(BaseModel):
    """One size of a workload: an optional warm-up before each point, and the points."""

    model_config = ConfigDict(extra="forbid")

    warmup: str | None = None
    # the longest warm-up to steady state before a start's first point (warmup.py); the brief
    # `warmup` above comes before each later point. Default: DEFAULT_STEADY_MAX by size.
    steady_max: str | None = None
    points: list[Point]

    @field_validator("warmup", "steady_max")
    @classmethod
    def _check_warmup(cls, v: str | None) -> str | None:
        if v is not None:
            parse_duration(v)
        return v

    @model_validator(mode="after")
    def _unique_labels(self) -> "Size":
        if not self.points:
            raise ValueError("needs at least one [[points]] entry")
        labels = [p.label for p in self.points]
        dup = {x for x in labels if labels.count(x) > 1}
        if dup:
            raise ValueError(f"duplicate point labels {sorted(dup)}")
        return self

    def warmup_seconds(self) -> float:
        return parse_duration(self.warmup) if self.warmup else 0.0

    def steady_max_seconds(self) -> float:
        return parse_duration(self.steady_max) if self.steady_max else 0.0

    def planned_seconds(self) -> float:
        """Warm-up before each point plus each point's planned load time."""
        return sum(self.warmup_seconds() + p.planned_seconds() for p in self.points)


DEFAULT_STEADY_MAX = {"quick": "20s", "full": "60s"}

# What a workload uses of a server beyond plain HTTP/1.1 keep-alive: a row that failed the check
# protecting a feature (rules/admission.py) is left out of the workloads that declare it.
Feature = Literal["pipelining", "new-connection-per-request", "db", "tls", "compress", "h2", "h2c"]
# SPEC.md, "Database endpoints": a load on these paths needs a db row and the database.
DB_PATHS = ("/db", "/queries", "/fortunes", "/updates")
# SPEC.md, "CPU work": a load on it needs a row that declares `compression`.
COMPRESS_PATH = "/compress"


def point_features(p: Point, default_path: str = "/") -> set[str]:
    """The features a point's options imply (declared features must be exactly these); `default_path`
    is the workload's, for a point without a path of its own."""
    out: set[str] = set()
    if (p.path or default_path).split("?")[0] in DB_PATHS:
        out.add("db")
    if p.pipeline is not None and p.pipeline > 1:
        out.add("pipelining")
    if not p.keepalive:
        out.add("new-connection-per-request")
    if p.tls is not None:
        out.add("tls")
    if p.http2 is not None:
        out.add(p.http2)
    if COMPRESS_PATH in ((p.path or default_path).split("?")[0], (p.heavy_path or "").split("?")[0]):
        out.add("compress")
    return out



class Workload(BaseModel):
    """A load profile from `workloads/<name>.toml`."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    origin: str
    kind: Kind | None = None  # required unless the workload only includes others
    path: str = "/"
    quick: Size | None = None
    full: Size | None = None
    includes: list[str] = []
    features: list[Feature] = []
    file: Path | None = None

    @model_validator(mode="after")
    def _sizes(self) -> "Workload":
        if self.includes:
            if self.quick or self.full:
                raise ValueError("a workload with includes has no [quick]/[full] of its own")
            if self.features:
                raise ValueError("a workload with includes has no features of its own (its workloads declare theirs)")
        elif self.quick is None or self.full is None:
            raise ValueError("needs both [quick] and [full] sizes (or an includes list)")
        elif self.kind is None:
            raise ValueError(f"needs kind = one of {', '.join(get_args(Kind))} (what it is ranked by)")
        elif self.kind == "cores" and any(p.server_cores is None for p in self.quick.points + self.full.points):
            raise ValueError('a cores workload gives every point server_cores (a count, or "sweep")')
        elif self.kind in TWINNED:
            _check_twins(self.quick.points)
            _check_twins(self.full.points)
        elif any(p.noise or p.heavy_path for p in self.quick.points + self.full.points):
            raise ValueError("noise and heavy requests belong to kind = \"noisy\" and \"head-of-line\" workloads "
                             "(ranked against their quiet twins)")
        if self.kind == "noisy" and any(p.heavy_path for p in self.quick.points + self.full.points) or \
                self.kind == "head-of-line" and any(p.noise for p in self.quick.points + self.full.points):
            raise ValueError("a noisy workload's disturbance is noise, a head-of-line workload's heavy requests")
        outages = [p.outage is not None for p in self.quick.points + self.full.points] if self.quick and self.full else []
        if outages and (any(outages) or self.kind == "db-outage") and not (all(outages) and self.kind == "db-outage"):
            raise ValueError('kind = "db-outage" workloads give every point an outage, and only they do')
        if not self.includes:
            self._check_features()
        return self

    def _check_features(self) -> None:
        assert self.quick is not None and self.full is not None
        used = set().union(*(point_features(p, self.path) for p in self.quick.points + self.full.points))
        declared = set(self.features)
        if used - declared:
            raise ValueError(f"its points use {', '.join(sorted(used - declared))} but features does not "
                             f"say so; set features = {sorted(used | declared)}")
        if declared - used:
            raise ValueError(f"features lists {', '.join(sorted(declared - used))}, which no point uses; "
                             f"set features = {sorted(used)}")

    def facts(self) -> dict[str, Any]:
        """What a report needs of this workload, stored with the run (the fingerprint's `workloads`) so
        that a report reads the run, not today's workload file: its description, its kind, the p99
        limit its capacity points declare (µs; None without one) and whether its load ramps (sessions
        of users started over time, drawn over time in the report)."""
        points = [p for s in (self.quick, self.full) if s for p in s.points]
        limit = next((parse_duration(p.p99_limit) * 1e6 for p in points if p.mode == "capacity" and p.p99_limit), None)
        return {"description": self.description or "", "kind": self.kind, "p99_limit_us": limit,
                "ramp": any(p.mode == "sessions" for p in points)}

    def size(self, full: bool) -> Size:
        """The size to run: `full` when asked, else `quick`."""
        s = self.full if full else self.quick
        if s is None:
            raise WorkloadError(f"workload {self.name!r} only includes others; expand it first")
        if s.steady_max is None and self.kind not in OVER_TIME:
            s = s.model_copy(update={"steady_max": DEFAULT_STEADY_MAX["full" if full else "quick"]})
        return s


def _check_twins(points: list[Point]) -> None:
    """A noisy or head-of-line size: open load at a fixed rate; each disturbed point (noise, heavy requests)
    names an earlier quiet point with the same legitimate load as its twin (so the ratio compares the
    disturbance alone, in the same server start)."""
    by_label = {p.label: i for i, p in enumerate(points)}
    for i, p in enumerate(points):
        if p.mode != "open" or p.rate_fraction is not None or p.stages is not None:
            raise ValueError(f"point {p.label!r}: a twinned workload's points are open load at a fixed rate")
        if p.noise is None and p.heavy_path is None:
            continue
        quiet = [q.label for q in points if q.noise is None and q.heavy_path is None]
        if p.twin is None or p.twin not in by_label:
            raise ValueError(f"point {p.label!r}: twin must name this size's quiet point (one of "
                             f"{', '.join(quiet) or 'none yet: add one'})")
        q = points[by_label[p.twin]]
        if q.noise is not None or q.heavy_path is not None or by_label[p.twin] > i:
            raise ValueError(f"point {p.label!r}: its twin {p.twin!r} must be a quiet point before it")
        same = ("rate", "connections", "max_connections", "path", "duration", "poisson")
        if any(getattr(p, f) != getattr(q, f) for f in same):
            raise ValueError(f"point {p.label!r}: its twin {p.twin!r} must offer the same legitimate load "
                             f"({', '.join(same)})")


def _one_line(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
    msg = err["msg"].removeprefix("Value error, ")
    more = f" (+{len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return f"field {loc}: {msg}{more}"


def load_workload(path: Path) -> Workload:
    """Parse and validate one workload file; WorkloadError names file, field and fix."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise WorkloadError(f"{path}: invalid TOML ({e}); fix the syntax") from None
    try:
        w = Workload.model_validate({**data, "file": path})
    except ValidationError as e:
        raise WorkloadError(f"{path}: {_one_line(e)}; fix the field") from None
    if w.name != path.stem:
        raise WorkloadError(f"{path}: name {w.name!r} must equal the file name {path.stem!r}; rename one")
    return w


def load_workloads(root: Path | None = None, errors: list[str] | None = None) -> dict[str, Workload]:
    """All workloads under `root` (default: paths.WORKLOADS), by name.

    Invalid files are left out; their one-line errors are appended to `errors` when given,
    else the first one is raised as WorkloadError."""
    if root is None:
        from .. import paths
        root = paths.WORKLOADS
    found: dict[str, Workload] = {}
    errs: list[str] = []
    for f in sorted(Path(root).glob("*.toml")):
        try:
            w = load_workload(f)
        except WorkloadError as e:
            errs.append(str(e))
            continue
        found[w.name] = w
    for w in found.values():
        for inc in w.includes:
            if inc not in found:
                errs.append(f"{w.file}: includes unknown workload {inc!r}; known: {', '.join(sorted(found))}")
            elif found[inc].includes:
                errs.append(f"{w.file}: includes {inc!r}, which itself has includes; list plain workloads")
    if errs:
        if errors is None:
            raise WorkloadError(errs[0])
        errors.extend(errs)
        bad = {e.split(":", 1)[0] for e in errs}
        found = {k: v for k, v in found.items() if str(v.file) not in bad}
    return found


def select(workloads: dict[str, Workload], names: list[str]) -> list[Workload]:
    """Resolve names (expanding `includes`), keep order, drop duplicates."""
    out: list[Workload] = []
    for n in names:
        if n not in workloads:
            raise WorkloadError(f"unknown workload {n!r}; known: {', '.join(sorted(workloads))}")
        w = workloads[n]
        for sub in ([workloads[i] for i in w.includes] if w.includes else [w]):
            if sub.name not in {x.name for x in out}:
                out.append(sub)
    return out
