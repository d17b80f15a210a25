"""The one measuring core (run/measure.py) and the `Server` protocol (processes/server.py): every kind of
server hands out its own sampler, the core samples it the same way for the runner, the cross-check and
the calibration, and the rules it owns (sampling interval, client-bound rule, gate) live nowhere else."""
from __future__ import annotations

import ast
import inspect
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from serverbench.catalog.workloads import Point, Size
from serverbench.cluster.remote_server import RemoteSampler, RemoteServer
from serverbench.crosscheck.execute import ToolOutput
from serverbench.model import Client
from serverbench.processes import memlimit
from serverbench.processes.sampler import Sampler
from serverbench.processes.server import Server
from serverbench.processes.supervisor import ServerProcess
from serverbench.processes.target import ExternalServer, NoSampler
from serverbench.run import measure
from test_structure import PKG, import_graph, modules


def _local(tmp_path: Path, memory: memlimit.MemoryLimit | None = None) -> ServerProcess:
    return ServerProcess(manifest=None, pid=os.getpid(), host="127.0.0.1", port=1, url="http://127.0.0.1:1",
                         log_path=tmp_path / "log", workers=1, cpus=[0], memory=memory)


def test_every_kind_of_server_is_a_server(tmp_path: Path) -> None:
    remote = RemoteServer(None, {"url": "http://h:1", "pid": 7, "workers": 1, "cpus": None, "host": "h",
                                 "memory": None})
    for srv in (_local(tmp_path), ExternalServer("http://127.0.0.1:1", host="127.0.0.1"), remote):
        assert isinstance(srv, Server), type(srv).__name__
    assert not isinstance(SimpleNamespace(url="u", pid=1, alive=lambda: True), Server)  # the check can fail


def test_each_server_hands_out_its_own_sampler(tmp_path: Path) -> None:
    plain = _local(tmp_path).sampler(measure.SAMPLE_INTERVAL)
    assert isinstance(plain, Sampler) and plain.interval == measure.SAMPLE_INTERVAL and plain.rss_limit is None
    assert plain.cpus == [0]
    watched = _local(tmp_path, memlimit.MemoryLimit(64 << 20, memlimit.WATCHDOG, "no cgroup v2 here"))
    killed: list[int] = []
    watched.kill = lambda: killed.append(1)  # type: ignore[method-assign]  # the watchdog calls the server's kill
    s = watched.sampler(0.5)
    assert s.rss_limit == 64 << 20 and s.on_rss_limit is not None
    s.on_rss_limit(65 << 20)
    assert killed == [1]
    cgroup = _local(tmp_path, memlimit.MemoryLimit(64 << 20, memlimit.CGROUP, "/sys/fs/cgroup/x"))
    assert cgroup.sampler(0.5).rss_limit is None  # the kernel holds a cgroup's limit
    external = ExternalServer("http://127.0.0.1:1").sampler(0.2)
    assert isinstance(external, NoSampler) and external.start().stop().to_dict() is None
    remote = RemoteServer(None, {"url": "u", "pid": 1, "workers": 1, "cpus": None, "host": "h", "memory": None})
    assert isinstance(remote.sampler(0.3), RemoteSampler) and remote.sampler(0.3).interval == 0.3


def test_sampling_keeps_the_usage_when_the_load_fails(tmp_path: Path) -> None:
    srv = _local(tmp_path)
    ok = measure.Sampling(srv)
    assert ok.run(lambda: time.sleep(0.3) or 42) == 42
    assert ok.usage is not None and ok.usage["samples"] >= 2 and ok.harness_cpu_percent is not None
    failed = measure.Sampling(srv)

    def load_dies() -> None:
        time.sleep(0.1)
        raise RuntimeError("load died")
    with pytest.raises(RuntimeError):
        failed.run(load_dies)
    assert failed.usage is not None and "cpu_user_s" in failed.usage
    assert measure.server_cpu_s({"cpu_user_s": 1.5, "cpu_sys_s": 0.25}) == 1.75 and measure.server_cpu_s(None) == 0.0


def test_repetitions_are_rounds_every_other_one_reversed() -> None:
    assert list(measure.rounds(3, ["a", "b"])) == [(1, "a"), (1, "b"), (2, "b"), (2, "a"), (3, "a"), (3, "b")]


def _report(ok_per_s: float) -> SimpleNamespace:
    summary = SimpleNamespace(ok=ok_per_s, duration_s=1.0)
    return SimpleNamespace(report=SimpleNamespace(summary=summary, duration_s=1.0, timeline=[{"ok": ok_per_s}]))


def test_warm_up_steady_before_a_first_point_brief_before_a_later_one() -> None:
    seen: list[Point] = []

    def load(p: Point, rate: float | None = None) -> SimpleNamespace:
        seen.append(p)
        return _report(1000.0)
    closed = Point(label="c=400", connections=400, duration="4s", timeout="2s")
    size = Size(warmup="1s", steady_max="20s", points=[closed])
    w = measure.warm_up(load, "throughput", size, closed, first=True)
    assert w is not None and w.steady and len(seen) == 6 and {p.duration for p in seen} == {"1s"}
    seen.clear()
    w = measure.warm_up(load, "throughput", size, closed, first=False)
    assert w is not None and w.brief and [(p.connections, p.duration, p.timeout) for p in seen] == [(400, "1s", "2s")]
    seen.clear()
    opened = Point(label="r", mode="open", rate=100, duration="1s", max_connections=1000)
    measure.warm_up(load, "soak", size, opened, first=True)  # a soak keeps its own shape: brief, closed, 64
    assert [(p.mode, p.connections) for p in seen] == [("closed", 64)]
    assert measure.warm_up(load, "throughput", Size(points=[closed]), closed, first=False) is None


def test_every_load_is_judged_by_the_one_client_bound_rule() -> None:
    busy = ToolOutput("", "", wall_s=2.0, cpu_s=1.8, cores=1)
    assert measure.client_metrics(busy) == Client(client_cpu_percent=90.0, client_saturated=True)
    two = ToolOutput("", "", wall_s=2.0, cpu_s=1.8, cores=2)
    assert measure.client_metrics(two) == Client(client_cpu_percent=90.0, client_saturated=False)


# -- what only the core may do --------------------------------------------------------------------
MEASURING = ("processes", "cluster", "run", "crosscheck")


def _trees() -> dict[str, ast.AST]:
    return {m: ast.parse(p.read_text()) for m, p in modules().items()}


def test_crosscheck_measures_without_the_runner() -> None:
    graph = import_graph()
    back = sorted(m for m, targets in graph.items() if m.startswith("serverbench.crosscheck")
                  and "serverbench.run.runner" in targets)
    assert back == [], f"crosscheck modules import run/runner.py: {back}"
    assert "serverbench.run.measure" in graph["serverbench.crosscheck.session"]


def test_the_rules_of_measuring_are_written_once() -> None:
    names = {"SATURATION": "serverbench.rules.saturation", "SAMPLE_INTERVAL": "serverbench.run.measure"}
    defined, stray = [], []
    for mod, tree in _trees().items():
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and names.get(t.id, mod) != mod
                                                 for t in n.targets):
                defined.append(mod)
            if isinstance(n, (ast.Name, ast.alias)) and (getattr(n, "id", None) or getattr(n, "name", None)) in (
                    "_Gate", "SATURATION") and mod not in ("serverbench.rules.saturation",):
                stray.append(mod)
    assert defined == [], f"defined outside the measuring core: {defined}"
    assert stray == [], f"use measure.Gate and saturation.saturated(): {stray}"
    assert inspect.signature(Sampler).parameters["interval"].default is inspect.Parameter.empty


def test_measuring_code_passes_no_interval_of_its_own_and_asks_no_server_its_kind() -> None:
    found = []
    for mod, tree in _trees().items():
        if mod.count(".") < 2 or mod.split(".")[1] not in MEASURING:
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Call):
                if any(k.arg == "interval" and isinstance(k.value, ast.Constant) for k in n.keywords):
                    found.append(f"{mod}: interval={ast.unparse(n)}")
                if isinstance(n.func, ast.Name) and n.func.id in ("hasattr", "getattr") and len(n.args) > 1 \
                        and isinstance(n.args[0], ast.Name) and n.args[0].id == "srv":
                    found.append(f"{mod}: {ast.unparse(n)}")
            if isinstance(n, ast.arg) and n.arg == "srv" and isinstance(n.annotation, ast.Name) \
                    and n.annotation.id == "Any":
                found.append(f"{mod}: srv: Any")
    assert found == [], found
    assert (PKG / "run" / "measure.py").is_file()
