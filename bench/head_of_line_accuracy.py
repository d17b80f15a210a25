#!/usr/bin/env python3
"""Is the head-of-line workload's light p99 what a server actually imposes? (issue 48: "against a fixture whose
heavy requests take a known time, the light class's p99 matches what the fixture imposes within 5 %")

The fixture is a single-threaded server started here (by PID, on the server's CPUs): GET /json answers at once;
GET /heavy blocks the whole server for HEAVY_MS (time.sleep on its only thread, so every light request that
arrives meanwhile waits for it) and records how long the block really lasted. The load is the workload's own
machinery, heavy_run.run_both: light /json at RATE req/s, heavy /heavy at 1 % of it, two loadgen processes on
one --start-at, both at constant spacing.

What the fixture imposes: with both schedules at constant spacing and the heavy share 1 %, a heavy request is
due every 100 light periods p, and the light requests due during a block wait for its end: the one due k
periods after the heavy one waits T - k·p. The largest 1 % of light latencies are then, per heavy period, the
light request due with the heavy one (T if the heavy one reaches the server first, ~0 if not) and the next
(T - p): the light p99 lies in [T - p, T] plus the light request's own time, T the block's measured length.
The bench takes T - p/2 as the expected p99 (±p/2, 1 % at the defaults) and prints measured ÷ expected per
round and its median; PASS when the median is within 5 %.

Usage: .venv/bin/python bench/head_of_line_accuracy.py   Env: RATE (1000), HEAVY_MS (50), ROUNDS (5), SECONDS (8)
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench.catalog.workloads import Point  # noqa: E402
from serverbench.processes import supervisor  # noqa: E402
from serverbench.processes.loadgen import run_loadgen  # noqa: E402
from serverbench.run import heavy_run  # noqa: E402

TOLERANCE = 0.05
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


class Fixture(asyncio.Protocol):
    """HTTP/1.1 keep-alive, one request at a time per read (loadgen does not pipeline here)."""

    def __init__(self, heavy_s: float, log) -> None:
        self.heavy_s, self.log, self.buf = heavy_s, log, b""

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while b"\r\n\r\n" in self.buf:
            head, self.buf = self.buf.split(b"\r\n\r\n", 1)
            if head.split(b" ", 2)[1].startswith(b"/heavy"):
                t0 = time.monotonic()
                time.sleep(self.heavy_s)  # blocks the only thread: the head-of-line block being measured
                self.log.write(f"{time.monotonic() - t0:.6f}\n")
                self.log.flush()
            self.transport.write(OK)


def serve(port: int, heavy_ms: float, log_path: str) -> None:
    async def main() -> None:
        with open(log_path, "a") as log:
            loop = asyncio.get_running_loop()
            srv = await loop.create_server(lambda: Fixture(heavy_ms / 1000, log), "127.0.0.1", port, backlog=1024)
            stop = asyncio.Event()
            loop.add_signal_handler(signal.SIGTERM, stop.set)
            async with srv:
                await stop.wait()
    asyncio.run(main())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the fixture exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"the fixture did not listen on 127.0.0.1:{port} within 10 s")


def point(rate: float, seconds: int) -> Point:
    return Point(label="light", mode="open", path="/json", rate=rate, connections=16, max_connections=256,
                 duration=f"{seconds}s", timeout="2s", heavy_path="/heavy", heavy_share=0.01, twin="quiet")


def blocks(log_path: str, skip: int) -> list[float]:
    return [float(x) for x in Path(log_path).read_text().split()[skip:]]


def main() -> None:
    rate, heavy_ms = float(os.environ.get("RATE", "1000")), float(os.environ.get("HEAVY_MS", "50"))
    rounds, seconds = int(os.environ.get("ROUNDS", "5")), int(os.environ.get("SECONDS", "8"))
    period_ms = 1000 / rate
    server_cpus, client = supervisor.default_cpu_split()
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}; light {rate:g} req/s, heavy 1 % "
          f"blocking {heavy_ms:g} ms; {rounds} rounds of {seconds} s; server CPUs {server_cpus}, client {client}")
    port, log_path = free_port(), tempfile.mkstemp(prefix="hol-fixture-", suffix=".log")[1]
    proc = subprocess.Popen(["taskset", "-c", ",".join(map(str, server_cpus)), sys.executable, __file__, "--serve",
                             str(port), str(heavy_ms), log_path])
    ratios: list[float] = []
    try:
        wait_listening(port, proc)
        url = f"http://127.0.0.1:{port}"
        run_loadgen(url, point(rate, 2).model_copy(update={"heavy_path": None}), default_path="/json",
                    client_cpus=client)  # warm the client's path once
        for i in range(rounds):
            seen = len(blocks(log_path, 0))
            light, heavy = heavy_run.run_both(url, point(rate, seconds), "/json", client)
            t_ms = 1000 * statistics.median(blocks(log_path, seen))
            want_ms = t_ms - period_ms / 2
            got_ms = (light.report.summary.latency_us.p99 or 0) / 1000
            ratios.append(got_ms / want_ms)
            print(f"round {i + 1}: light p99 {got_ms:7.2f} ms over {light.report.summary.requests:,} due; blocks "
                  f"{len(blocks(log_path, seen))} of median {t_ms:.2f} ms (heavy ok {heavy.report.summary.ok}); "
                  f"expected {want_ms:.2f} ms (±{period_ms / 2:.2f}): measured ÷ expected {ratios[-1]:.3f}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.unlink(log_path)
    med = statistics.median(ratios)
    verdict = "PASS" if abs(med - 1) <= TOLERANCE else "FAIL"
    print(f"median measured ÷ expected: {med:.3f} ({verdict}: within {TOLERANCE:.0%} required); "
          f"rounds {json.dumps([round(r, 3) for r in ratios])}")
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
    else:
        main()
