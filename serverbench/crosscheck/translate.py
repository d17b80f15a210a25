"""A workload point in each tool's own terms: its command line, or the script it needs.

Every cross-check sends `GET /tenth?ms=0` (the server counts it). What a tool cannot express is
returned as `Unsupported` with the reason, never approximated silently; what it expresses only
approximately carries a note that the report shows beside its figures.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from ..catalog.workloads import Point, parse_duration
from ..processes.loadgen import command_line
from ..rules.tools import TOOLS

CROSSCHECK_PATH = "/tenth?ms=0"
DEFAULT_TIMEOUT_S = 10.0  # loadgen's default per-request timeout
AB_CAP_FALLBACK = 1_000_000  # ab allocates a record per request: -n must stay finite
OUTPUT_FILE = "result"  # the file a tool writes its figures to, in the run's directory
# the tools a TLS point is translated for: loadgen (verifying the run's CA) and wrk (https:// URL); the
# others would each need their own certificate flags checked, and wrk is the reference issue 38 names
TLS_TOOLS = ("loadgen", "wrk", "h2load")
# an HTTP/2 point (SPEC.md, "HTTP/2") goes to the tools that speak HTTP/2 with streams; h2load speaks nothing else
H2_TOOLS = ("loadgen", "h2load")


@dataclass
class Invocation:
    """How to run one tool for one point. `{dir}` in args is the run's scratch directory."""

    tool: str
    args: list[str]
    files: dict[str, str] = field(default_factory=dict)  # name -> content, written into {dir}
    cores: int = 1  # cores the tool can use: the saturation denominator
    planned_s: float = 0.0  # load time the tool should take; bounded by limit_s
    limit_s: float = 0.0  # the tool is killed past this (its own start-up included)
    co_corrected: bool = False
    notes: list[str] = field(default_factory=list)
    script: str | None = None  # the script shown with the cell (k6, drill, locust)


@dataclass(frozen=True)
class Unsupported:
    tool: str
    reason: str


Translation = Invocation | Unsupported


def _seconds(text: str | None, default: float) -> float:
    return parse_duration(text) if text else default


def _dur(seconds: float) -> str:
    """A duration every tool parses: whole milliseconds as 'Nms' or whole seconds as 'Ns'."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _common_refusal(tool: str, p: Point) -> str | None:
    """Reasons no tool but loadgen (wrk too, for a TLS point) takes this point."""
    if p.mode == "capacity":
        return "capacity points are stepped by serverbench's runner; cross-check a closed or open workload"
    if p.http2 is not None and tool not in H2_TOOLS:
        return f"{tool}: HTTP/2 points are cross-checked with loadgen and h2load only"
    if p.http2 is None and tool == "h2load":
        return "h2load is cross-checked on HTTP/2 points (h2-json, h2c-json, h2-streams)"
    if p.tls is not None and tool not in TLS_TOOLS:
        return f"{tool}: TLS points are cross-checked with wrk, h2load and loadgen only"
    if p.pipeline and p.pipeline > 1 and tool != "loadgen":
        return f"{tool} does not pipeline requests (wrk only through a Lua script, not translated)"
    if p.stages is not None and tool not in ("loadgen",):
        return f"{tool}: piecewise-linear stages are not translated"
    if isinstance(p.rate, str):
        return f"the rate {p.rate!r} is calibrated per server; cross-check a point with an absolute rate"
    return None


def _https(base_url: str) -> str:
    scheme, sep, rest = base_url.partition("://")
    return "https://" + (rest if sep else scheme)


def translate(tool: str, p: Point, base_url: str, client_cores: int,
              count_hint: int | None = None, tls_ca: str | None = None) -> Translation:
    """The tool's invocation for point `p` against `base_url` (path: CROSSCHECK_PATH).

    `count_hint`: requests loadgen completed on the same point just before; tools that can only
    run a request count (drill) or need a finite cap (ab) size it from that, and say so.
    `tls_ca`: a TLS point's CA file (the run's, tls_run.RunTls); the URL is then https://."""
    why = _common_refusal(tool, p)
    if why:
        return Unsupported(tool, why)
    if p.tls is not None:
        if not tls_ca:
            raise ValueError(f"point {p.label!r}: a TLS point needs the run's CA (tls_ca)")
        base_url = _https(base_url)
    url = base_url.rstrip("/") + CROSSCHECK_PATH
    timeout = _seconds(p.timeout, DEFAULT_TIMEOUT_S)
    notes: list[str] = []
    if p.method not in (None, "GET") or p.body is not None or p.headers:
        notes.append("method, body and headers dropped: the cross-check sends GET /tenth?ms=0")
    if tool == "loadgen":
        out = _loadgen(p, url, timeout, client_cores, tls_ca, notes)
    else:
        out = _TRANSLATORS[tool](p, url, timeout, client_cores, count_hint, notes)
    if isinstance(out, Invocation):
        out.notes = notes + out.notes
        if not TOOLS[tool].multi_core:
            out.cores = 1
    return out


def _bounds(p: Point, timeout: float, startup_s: float) -> tuple[float, float]:
    """(planned load seconds, kill limit) for a point: its duration or time limit, plus slack."""
    planned = p.planned_seconds() if p.mode != "open" else _seconds(p.duration, 0.0)
    if p.requests is not None and p.time_limit is None:
        planned = parse_duration("60s")
    return planned, planned + timeout + startup_s + 10.0


# -- closed-loop tools -----------------------------------------------------------------------------
def _wrk(p: Point, url: str, timeout: float, cores: int, hint: int | None, notes: list[str]) -> Translation:
    if p.mode != "closed":
        return Unsupported("wrk", f"wrk has no {p.mode} load: it keeps C connections busy (closed loop); "
                                  "wrk2's -R is another tool")
    if p.requests is not None:
        return Unsupported("wrk", f"wrk has no request count (-n): it runs for a duration; the point asks "
                                  f"for exactly {p.requests:,} requests")
    conns = p.connections or 10
    threads = max(1, min(p.threads or cores, conns))
    args = ["-t", str(threads), "-c", str(conns), "-d", _dur(parse_duration(p.duration or "10s")),
            "--timeout", _dur(timeout), "--latency"]
    if not p.keepalive:
        args += ["-H", "Connection: close"]
        notes.append("no keep-alive as a 'Connection: close' header (wrk reconnects after each response)")
    if p.tls is not None:
        # wrk has no CA option and does not verify the server's certificate: on loopback, against the
        # certificate the run made itself, there is nobody in between; loadgen verifies the same server's
        notes.append(f"over TLS ({p.tls} certificate), which wrk does not verify")
    planned, limit = _bounds(p, timeout, 2.0)
    return Invocation("wrk", args + [url], cores=threads, planned_s=planned, limit_s=limit)


def _ab(p: Point, url: str, timeout: float, cores: int, hint: int | None, notes: list[str]) -> Translation:
    if p.mode != "closed":
        return Unsupported("ab", f"ab has no {p.mode} load: no rate, no users; it keeps -c requests in flight")
    conns = p.connections or 10
    # -l: /tenth's body is the counter, whose length changes; ab would count those as failures.
    # -r: keep going on socket errors instead of aborting the whole run.
    args = ["-c", str(conns), "-s", str(max(1, math.ceil(timeout))), "-l", "-r", "-q"]
    if p.keepalive:
        args.append("-k")
    if p.requests is not None:
        n = max(p.requests, conns)
        # -t resets -n to 50,000, so it goes first and -n last
        limit = ["-t", str(max(1, math.ceil(parse_duration(p.time_limit))))] if p.time_limit else []
        args = limit + args + ["-n", str(n)]
    else:
        secs = parse_duration(p.duration or "10s")
        cap = max(conns, 2 * hint) if hint else AB_CAP_FALLBACK
        args = ["-t", str(max(1, math.ceil(secs)))] + args + ["-n", str(cap)]
        notes.append(f"ab has no duration-only bound (-t alone caps at 50,000 requests and it allocates a "
                     f"record per request): -t {math.ceil(secs)} with -n {cap:,}"
                     + (" (twice what loadgen completed)" if hint else ""))
    planned, limit = _bounds(p, timeout, 1.0)
    return Invocation("ab", args + [url], cores=1, planned_s=planned, limit_s=limit)


def _hey(p: Point, url: str, timeout: float, cores: int, hint: int | None, notes: list[str]) -> Translation:
    if p.mode == "sessions":
        return Unsupported("hey", "hey has no users with think times: -c workers send back to back")
    conns = (p.max_connections or 1000) if p.mode == "open" else (p.connections or 10)
    args = ["-c", str(conns), "-t", str(max(1, math.ceil(timeout))), "-cpus", str(cores)]
    if p.mode == "open":
        rate = float(p.rate or 0)
        per_worker = rate / conns
        if per_worker < 1:
            conns = max(1, int(rate))
            per_worker = rate / conns
            args[1] = str(conns)
        args += ["-q", f"{per_worker:g}"]
        notes.append(f"hey -q is a per-worker pace ({per_worker:g}/s × {conns} workers), still a closed "
                     "loop: a slow answer delays that worker's next request, latency is not corrected")
    if p.requests is not None:
        args += ["-n", str(max(p.requests, conns))]
        if p.time_limit:
            notes.append("hey has no time limit beside -n; bounded by serverbench's kill deadline")
    else:
        args += ["-z", _dur(parse_duration(p.duration or "10s"))]
    if not p.keepalive:
        args.append("-disable-keepalive")
    planned, limit = _bounds(p, timeout, 1.0)
    return Invocation("hey", args + [url], cores=cores, planned_s=planned, limit_s=limit)


def _oha(p: Point, url: str, timeout: float, cores: int, hint: int | None, notes: list[str]) -> Translation:
    if p.mode == "sessions":
        return Unsupported("oha", "oha has no users with think times")
    args = ["--no-tui", "--output-format", "json", "-t", _dur(timeout)]
    co = False
    if p.mode == "open":
        conns = p.max_connections or 1000
        args += ["-c", str(conns), "-q", f"{float(p.rate or 0):g}", "--latency-correction"]
        co = True
        notes.append(f"oha -q paces request starts over {conns} workers; --latency-correction counts from the "
                     "intended start, but past the workers it sends late rather than opening more connections")
    else:
        args += ["-c", str(p.connections or 10)]
    if p.requests is not None:
        args += ["-n", str(p.requests)]
    else:
        args += ["-z", _dur(parse_duration(p.duration or "10s"))]
    if not p.keepalive:
        args.append("--disable-keepalive")
    planned, limit = _bounds(p, timeout, 1.0)
    return Invocation("oha", args + [url], cores=cores, planned_s=planned, limit_s=limit, co_corrected=co)


def _drill(p: Point, url: str, timeout: float, cores: int, hint: int | None, notes: list[str]) -> Translation:
    if p.mode != "closed":
        return Unsupported("drill", f"drill has no {p.mode} load: no rate, no think times; it runs a fixed "
                                    "number of iterations with N concurrent clients")
    if p.requests is not None:
        iterations = p.requests
    elif hint:
        iterations = hint
        notes.append(f"drill has no duration: it ran {hint:,} iterations, what loadgen completed in "
                     f"{p.duration} on the same server just before")
    else:
        return Unsupported("drill", "drill has no duration (only a number of iterations); run loadgen in the "
                                    "same cross-check to size it")
    base, _, path = url.partition("/tenth")
    plan = {"concurrency": p.connections or 10, "base": base, "iterations": iterations, "rampup": 0,
            "plan": [{"name": "tenth", "request": {"url": "/tenth" + path}}]}
    if not p.keepalive:
        plan["plan"][0]["request"]["headers"] = {"Connection": "close"}
        notes.append("no keep-alive as a 'Connection: close' header")
    text = json.dumps(plan, indent=2) + "\n"  # JSON is YAML
    args = ["--benchmark", "{dir}/plan.yml", "--stats", "--quiet", "--nanosec",
            "--timeout", str(max(1, math.ceil(timeout)))]
    planned, limit = _bounds(p, timeout, 1.0)
    if p.requests is None:
        # drill may be several times slower than loadgen; bound it at five times the point's duration
        limit = 5 * planned + timeout + 10.0
        notes.append(f"killed if it has not finished after {limit:.0f} s")
    return Invocation("drill", args, files={"plan.yml": text}, cores=cores, planned_s=planned, limit_s=limit,
                      script=text)


# -- tools with users: k6 and Locust ---------------------------------------------------------------
K6_SCRIPT = """import http from 'k6/http';
import {{ sleep }} from 'k6';

export const options = {options};
const params = {{ timeout: '{timeout}', headers: {headers} }};

export default function () {{
  http.get('{url}', params);{think}
}}

export function handleSummary(data) {{
  return {{ '{out}': JSON.stringify(data) }};
}}
"""


def _think(p: Point, lang: str) -> str:
    if not p.think:
        return ""
    t = parse_duration(p.think)
    j = (p.think_jitter or 0) / 100.0
    lo, hi = t * (1 - j), t * (1 + j)
    if lang == "js":
        return f"\n  sleep({lo:g} + Math.random() * {hi - lo:g});"
    return f"between({lo:g}, {hi:g})"


def _k6(p: Point, url: str, timeout: float, cores: int, hint: int | None, notes: list[str]) -> Translation:
    co = False
    if p.mode == "open":
        vus = p.max_connections or 1000
        scenario = {"executor": "constant-arrival-rate", "rate": float(p.rate or 0), "timeUnit": "1s",
                    "duration": _dur(parse_duration(p.duration or "10s")), "preAllocatedVUs": min(vus, 100),
                    "maxVUs": vus}
        notes.append("constant-arrival-rate: iterations start on schedule while a VU is free, else are dropped "
                     "(dropped_iterations); latency is measured from the actual send, not corrected")
    elif p.mode == "sessions":
        users = p.users or 1
        total = parse_duration(p.duration or "10s")
        ramp = parse_duration(p.ramp) if p.ramp else (users / p.spawn_rate if p.spawn_rate else 0.0)
        ramp = min(ramp, total)
        stages = [{"duration": _dur(ramp), "target": users}] if ramp else []
        stages.append({"duration": _dur(total - ramp), "target": users})
        scenario = {"executor": "ramping-vus", "startVUs": 0 if ramp else users, "stages": stages,
                    "gracefulRampDown": "0s"}
        if p.session_requests:
            notes.append(f"session_requests={p.session_requests} not translated: k6 users loop until the end")
    elif p.requests is not None:
        scenario = {"executor": "shared-iterations", "vus": p.connections or 10, "iterations": p.requests,
                    "maxDuration": _dur(_seconds(p.time_limit, 60.0))}
    else:
        scenario = {"executor": "constant-vus", "vus": p.connections or 10,
                    "duration": _dur(parse_duration(p.duration or "10s"))}
    scenario["gracefulStop"] = "0s"
    options = {"scenarios": {"crosscheck": scenario}, "discardResponseBodies": True,
               "summaryTrendStats": ["avg", "min", "med", "max", "p(90)", "p(99)"],
               "noConnectionReuse": not p.keepalive}
    headers = json.dumps({} if p.keepalive else {"Connection": "close"})
    script = K6_SCRIPT.format(options=json.dumps(options, indent=2), timeout=_dur(timeout), url=url,
                              headers=headers, think=_think(p, "js"), out="{dir}/" + OUTPUT_FILE)
    args = ["run", "--quiet", "--no-color", "--no-usage-report", "--no-thresholds", "--address", "",
            "{dir}/script.js"]
    planned, limit = _bounds(p, timeout, 5.0)
    return Invocation("k6", args, files={"script.js": script}, cores=cores, planned_s=planned, limit_s=limit,
                      co_corrected=co, script=script)


LOCUSTFILE = """from locust import FastHttpUser, between, constant, task


class CrossCheck(FastHttpUser):
    wait_time = {wait}
    network_timeout = {timeout}
    connection_timeout = {timeout}

    @task
    def tenth(self):
        self.client.get("{path}", name="tenth"{headers})
"""


def _locust(p: Point, url: str, timeout: float, cores: int, hint: int | None, notes: list[str]) -> Translation:
    if p.mode == "open":
        return Unsupported("locust", "Locust has no open load: constant_throughput paces each user, "
                                     "a slow answer still delays that user's next request")
    if p.requests is not None:
        return Unsupported("locust", f"Locust has no request count: the point asks for exactly "
                                     f"{p.requests:,} requests")
    base, _, path = url.partition("/tenth")
    users = p.users if p.mode == "sessions" else (p.connections or 10)
    if p.mode == "sessions" and p.spawn_rate:
        spawn = p.spawn_rate
    elif p.mode == "sessions" and p.ramp:
        spawn = users / max(parse_duration(p.ramp), 0.001)
    else:
        spawn = float(users)  # every user within the first second
        notes.append(f"Locust spawns users at -r {users}/s: all {users} within the first second")
    if p.mode == "sessions" and p.session_requests:
        notes.append(f"session_requests={p.session_requests} not translated: Locust users loop until the end")
    wait = _think(p, "py") or "constant(0)"
    headers = "" if p.keepalive else ', headers={"Connection": "close"}'
    script = LOCUSTFILE.format(wait=wait, timeout=f"{timeout:g}", path="/tenth" + path, headers=headers)
    secs = parse_duration(p.duration or "10s")
    args = ["-f", "{dir}/locustfile.py", "--headless", "-u", str(users), "-r", f"{spawn:g}", "-t", _dur(secs),
            "--host", base, "--only-summary", "--csv", "{dir}/" + OUTPUT_FILE, "--loglevel", "WARNING",
            "--stop-timeout", "0"]
    notes.append("FastHttpUser (geventhttpclient); one process on one core")
    planned, limit = _bounds(p, timeout, 5.0)
    return Invocation("locust", args, files={"locustfile.py": script}, cores=1, planned_s=planned, limit_s=limit,
                      script=script)


def _loadgen(p: Point, url: str, timeout: float, cores: int, tls_ca: str | None, notes: list[str]) -> Translation:
    # the other tools start cold too: no unrecorded warm-up inside the cell (open_warmup=False); a TLS
    # point verifies the server's certificate against the run's CA (--tls-ca), as a run's load does
    args = command_line(p.model_copy(update={"path": CROSSCHECK_PATH, "method": None, "body": None, "headers": []}),
                        url.partition("/tenth")[0], CROSSCHECK_PATH, threads=cores, open_warmup=False,
                        json_path="{dir}/" + OUTPUT_FILE, tls_ca=tls_ca)
    threads = p.threads or cores
    planned, limit = _bounds(p, timeout, 1.0)
    return Invocation("loadgen", args, cores=max(1, min(threads, cores)), planned_s=planned, limit_s=limit,
                      co_corrected=p.mode == "open")


def _h2load(p: Point, url: str, timeout: float, cores: int, hint: int | None, notes: list[str]) -> Translation:
    if p.mode != "closed" or p.requests is not None:
        return Unsupported("h2load", f"h2load keeps C connections x M streams busy for a duration (closed loop); "
                                     f"the point is {p.mode} load" + (" with a request count" if p.requests else ""))
    conns = p.connections or 10
    threads = max(1, min(p.threads or cores, conns))
    args = ["-c", str(conns), "-m", str(p.streams or 1), "-t", str(threads),
            "-D", str(max(1, round(parse_duration(p.duration or "10s"))))]
    # h2load's own windows (1 GiB per stream and connection), not RFC 9113's defaults loadgen keeps
    notes.append("h2load enlarges the flow-control windows to 1 GiB (-w 30 -W 30), loadgen keeps 65,535; "
                 "its latency starts when a stream is sent, not when it was due (closed loop)")
    if p.tls is not None:
        notes.append(f"over TLS ({p.tls} certificate), which h2load does not verify")
    planned, limit = _bounds(p, timeout, 2.0)
    return Invocation("h2load", args + [url], cores=threads, planned_s=planned, limit_s=limit)


_TRANSLATORS = {"h2load": _h2load, "wrk": _wrk, "ab": _ab, "hey": _hey, "oha": _oha, "drill": _drill, "k6": _k6,
                "locust": _locust}  # loadgen: _loadgen, which takes the CA instead of a count hint

__all__ = ["translate", "Invocation", "Unsupported", "Translation", "CROSSCHECK_PATH", "OUTPUT_FILE", "TLS_TOOLS"]
