"""The stressgrid-overload workload's shape, checked on the wire: the real loadgen runs the workload's
own point (scaled down in devices and ramp time only) against a server that logs every request,
and the log shows the demand ramping linearly to its target, sessions of exactly 100 requests
on one connection each, the think time between them, and the request itself."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import pytest

from serverbench import paths
from serverbench.processes.loadgen import run_loadgen
from serverbench.catalog.workloads import load_workloads

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

LOADGEN = paths.loadgen_binary()
DEVICES, RAMP_S, HOLD_S = 60, 4.0, 8.0  # sessions last ~10 s: the hold lets the first ones end


def test_the_workload_declares_stressgrids_shape_compressed() -> None:
    w = load_workloads(paths.WORKLOADS)["stressgrid-overload"]
    assert w.kind == "overload" and w.path == "/delay?ms=10&bytes=1024"
    for size in (w.quick, w.full):
        (p,) = size.points
        assert (p.mode, p.users, p.session_requests, p.loop_sessions) == ("sessions", 0, 100, True)
        assert (p.think, p.think_jitter, p.timeout) == ("90ms", 5, "5s")
        ramp, hold = p.stages.split(",")
        assert ramp.endswith(":10000") and hold.endswith(":10000")  # 0 -> 10,000 linearly, then held
        assert p.planned_seconds() > 30
    assert w.full.planned_seconds() > 5 * w.quick.planned_seconds()
    assert "overload" in w.description and "compressed" in w.description.lower()


@pytest.mark.skipif(not LOADGEN.is_file(), reason=f"needs the loadgen binary ({LOADGEN}); `make loadgen`")
def test_demand_ramps_linearly_to_its_target_in_sessions_of_100(tmp_path: Path) -> None:
    quick = load_workloads(paths.WORKLOADS)["stressgrid-overload"].quick.points[0]
    point = quick.model_copy(update={"stages": f"{RAMP_S:g}s:{DEVICES},{HOLD_S:g}s:{DEVICES}"})
    port, log = runfix.free_port(), tmp_path / "wire.jsonl"
    srv = subprocess.Popen([sys.executable, str(runfix.HERE / "logging_server.py"), str(port), str(log)],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().strip() == "ready"
        cpus = sorted(os.sched_getaffinity(0))
        lg = run_loadgen(f"http://127.0.0.1:{port}", point, default_path="/delay?ms=10&bytes=1024",
                         client_cpus=[cpus[-1]])
    finally:
        srv.terminate()
        srv.wait(10)
    events = [json.loads(x) for x in log.read_text().splitlines()]
    t0 = datetime.fromisoformat(lg.report.started_at.replace("Z", "+00:00")).timestamp()
    reqs = [e for e in events if e["ev"] == "req"]
    assert reqs and all(e["path"] == "/delay?ms=10&bytes=1024" for e in reqs)

    # devices arrive linearly: connections whose first request came by time t ≈ DEVICES * t / RAMP_S
    first: dict[int, float] = {}
    for e in reqs:
        first.setdefault(e["conn"], e["t"] - t0)
    arrivals = sorted(first.values())
    for t in (1.0, 2.0, 3.0, 4.0):
        expected = DEVICES * t / RAMP_S
        got = sum(1 for a in arrivals if a <= t + 0.05)  # + a connect and a send
        assert abs(got - expected) <= 3, (t, got, expected)
    assert sum(1 for a in arrivals if a <= RAMP_S + 0.5) == DEVICES  # the target, reached

    # requests per second follow the devices: each asks every ~100 ms (90 ms think + 10 ms delay)
    per_s = defaultdict(int)
    for e in reqs:
        per_s[int(e["t"] - t0)] += 1
    for s in (1, 2, 3):  # devices average 15 * (s + 0.5) over second s
        assert per_s[s] == pytest.approx(DEVICES / RAMP_S * (s + 0.5) * 9.6, rel=0.2), (s, per_s[s])
    hold = [per_s[s] for s in range(5, 9)]
    assert statistics.mean(hold) == pytest.approx(DEVICES * 9.6, rel=0.15), hold

    # sessions: a connection carries 100 requests, then closes; the device comes back on a new one
    closes = {e["conn"]: e["n"] for e in events if e["ev"] == "close"}
    ended = {c: n for c, n in closes.items() if first.get(c, 1e9) < 1.0}  # the earliest devices' sessions
    assert ended and set(ended.values()) == {100}, ended
    assert max(closes.values()) <= 100
    assert len(first) > DEVICES  # devices whose session ended started a new one
    # think time: from a response to the same connection's next request, 90 ms ± 5 %
    resp = {(e["conn"], e["n"]): e["t"] for e in events if e["ev"] == "resp"}
    gaps = [(e["t"] - resp[(e["conn"], e["n"] - 1)]) * 1000 for e in reqs if (e["conn"], e["n"] - 1) in resp]
    assert 87 <= statistics.median(gaps) <= 95, statistics.median(gaps)
    assert sum(85.5 - 1 <= g <= 94.5 + 6 for g in gaps) >= 0.95 * len(gaps)  # + scheduling on a busy machine
    # the loadgen's own timeline says the same demand
    targets = [row["target_users"] for row in lg.report.timeline[:4]]
    assert targets == [pytest.approx(DEVICES / RAMP_S * (t + 0.5), abs=1) for t in range(4)]
