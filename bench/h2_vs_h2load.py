#!/usr/bin/env python3
"""loadgen's client CPU per request over HTTP/2 against h2load's (nghttp2's C client) on the same load (issue 47:
"target <= 1.0x h2load's").

nginx-lua (nginx's own HTTP/2, one worker pinned to the server CPU) started by the harness's supervisor with
$HTTP2=h2c, then again with $HTTP2=h2 and the harness's RSA certificate. Against each, alternating rounds (the
first tool alternates) of the same closed load on GET /tenth?ms=0 (nginx-lua's shared counter: the server counts
what it answered): CONNS connections x STREAMS streams, SECONDS each, one client thread pinned to the other CPU.
Each round's client CPU (user + system of the tool's process, from wait4) over the server-counted requests
(the counter read over HTTP/2 before and after). Prints per round both tools' figures; then per mode the medians
and loadgen / h2load. The windows differ on purpose: h2load enlarges them to 1 GiB (-w 30 -W 30 by default),
loadgen keeps RFC 9113's 65,535 and gives them back (its WINDOW_UPDATE frames are part of its CPU).
Usage: .venv/bin/python bench/h2_vs_h2load.py   Env: ROUNDS (5), SECONDS (5), CONNS (16), STREAMS (10)
"""
from __future__ import annotations

import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench import paths  # noqa: E402
from serverbench.catalog.manifests import load_catalog  # noqa: E402
from serverbench.h2 import get  # noqa: E402
from serverbench.processes import supervisor  # noqa: E402
from serverbench.tls.certs import make_material  # noqa: E402

ROW = "nginx-lua"
PATH = "/tenth?ms=0"


def counter(host: str, port: int, tls: ssl.SSLContext | None) -> int:
    """The row's shared request counter (this read is one more request: the caller subtracts it)."""
    return int(bytes(get(host, port, PATH, tls=tls, timeout=5.0).body))


def timed(cmd: list[str]) -> tuple[float, str]:
    """Run `cmd`; (its CPU seconds, its output)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read().decode(errors="replace") if p.stdout else ""
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} failed ({status}): {out[-400:]}")
    return ru.ru_utime + ru.ru_stime, out


def commands(url: str, ca: str | None, seconds: int, conns: int, streams: int, cpu: int) -> dict[str, list[str]]:
    pin = ["taskset", "-c", str(cpu)]
    lg = [*pin, str(paths.loadgen_binary()), url, "--http2", "--streams", str(streams), "-c", str(conns),
          "-t", "1", "-d", f"{seconds}s", "-q", "--json", os.devnull, *(["--tls-ca", ca] if ca else [])]
    h2 = [*pin, "h2load", "-c", str(conns), "-m", str(streams), "-t", "1", "-D", str(seconds), url]
    return {"loadgen": lg, "h2load": h2}


def rounds(mode: str, url: str, host: str, port: int, tls: ssl.SSLContext | None, ca: str | None,
           n: int, seconds: int, conns: int, streams: int, cpu: int) -> dict[str, list[float]]:
    cmds = commands(url, ca, seconds, conns, streams, cpu)
    per: dict[str, list[float]] = {"loadgen": [], "h2load": []}
    for r in range(n):
        order = ["loadgen", "h2load"] if r % 2 == 0 else ["h2load", "loadgen"]
        line = []
        for tool in order:
            before = counter(host, port, tls)
            cpu_s, _ = timed(cmds[tool])
            served = counter(host, port, tls) - before - 1
            us = cpu_s * 1e6 / served if served > 0 else float("nan")
            per[tool].append(us)
            line.append(f"{tool} {served:,} served, {us:.2f} µs CPU/request")
        print(f"{mode} round {r + 1}: " + "; ".join(line), flush=True)
    return per


def main() -> None:
    if shutil.which("h2load") is None:
        raise SystemExit("h2load is missing; fix: apt-get install -y nghttp2-client")
    n, seconds = int(os.environ.get("ROUNDS", 5)), int(os.environ.get("SECONDS", 5))
    conns, streams = int(os.environ.get("CONNS", 16)), int(os.environ.get("STREAMS", 10))
    m = load_catalog().servers[ROW]
    online = supervisor.online_cpus()
    server_cpu, client_cpu = online[0], online[-1]
    print(f"load average before: {os.getloadavg()[0]:.2f}; {ROW} on CPU {server_cpu}, clients on CPU {client_cpu}; "
          f"{conns} connections x {streams} streams, {seconds} s rounds", flush=True)
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        material = make_material(Path(tmp))
        for mode in ("h2c", "h2"):
            env = {"HTTP2": mode, **(material.env("rsa") if mode == "h2" else {})}
            ca = Path(material.ca) if mode == "h2" else None
            with supervisor.run_server(m, cpus=[server_cpu], workers=1, extra_env=env, tls_ca=ca, http2=True) as srv:
                tls = ssl.create_default_context(cafile=str(ca)) if ca else None
                url = f"{'https' if ca else 'http'}://{srv.host}:{srv.port}{PATH}"
                per = rounds(mode, url, srv.host, srv.port, tls, str(ca) if ca else None, n, seconds, conns,
                             streams, client_cpu)
            a, b = statistics.median(per["loadgen"]), statistics.median(per["h2load"])
            summary.append(f"{mode}: loadgen {a:.2f} µs, h2load {b:.2f} µs of client CPU per server-counted "
                           f"request (medians of {n}); loadgen / h2load = {a / b:.3f} "
                           f"({'PASS' if a / b <= 1.0 else 'FAIL'}: target <= 1.0)")
    for line in summary:
        print(line)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
