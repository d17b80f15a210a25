"""The head-of-line workload (issue 48, item 3): light /json at a fixed rate with heavy /compress?kb=1024
mixed in on a second loadgen process on the same clock, against the quiet twin. The reference server
compresses inline on its one asyncio loop, so every light request behind a 1 MiB gzip waits: slowed."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from serverbench import paths
from serverbench.catalog import workloads as wl
from serverbench.catalog.manifests import Choices, load_catalog
from serverbench.catalog.workloads import Point
from serverbench.exporters import to_markdown
from serverbench.model import RunOptions
from serverbench.results import aggregate
from serverbench.run import heavy_run
from serverbench.run.runner import run_matrix
from serverbench.store import Store

HERE = Path(__file__).parent
REFSERVER = HERE / "fixtures" / "refserver.py"
FIXTURES = HERE / "fixtures" / "run" / "servers"
LOADGEN = paths.loadgen_binary()
WORKLOAD = """name = "hol-test"
description = "light /json beside 1 MiB gzips"
origin = "serverbench"
kind = "head-of-line"
path = "/json"
features = ["compress"]
[quick]
warmup = "300ms"
[[quick.points]]
label = "quiet"
mode = "open"
rate = 400
connections = 8
max_connections = 64
duration = "3s"
timeout = "2s"
[[quick.points]]
label = "heavy"
mode = "open"
rate = 400
connections = 8
max_connections = 64
duration = "3s"
timeout = "2s"
heavy_path = "/compress?kb=1024"
heavy_share = 0.02
twin = "quiet"
[full]
[[full.points]]
label = "quiet"
mode = "open"
rate = 400
duration = "3s"
"""
CHOICES = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on",
           "compression": "zlib (Python gzip module)", "cpu_work": "inline"}


def test_the_heavy_class_is_the_points_rate_share_on_connections_of_its_own() -> None:
    p = Point(label="heavy", mode="open", rate=1000, duration="4s", timeout="2s", heavy_path="/compress?kb=1024",
              heavy_share=0.01, twin="quiet")
    h = heavy_run.heavy_point(p, 1000.0)
    assert (h.path, h.rate, h.duration, h.max_connections) == ("/compress?kb=1024", 10.0, "4s",
                                                               heavy_run.HEAVY_CONNECTIONS)
    for bad, words in (({"heavy_share": None}, "go together"), ({"heavy_share": 1.5}, "above 0 and below 1"),
                       ({"rate": "50%"}, "fixed rate")):
        with pytest.raises(ValueError, match=words):
            Point(**{**p.model_dump(exclude_none=True), **bad})


@pytest.mark.skipif(not LOADGEN.is_file(), reason="needs the loadgen binary (make loadgen)")
def test_a_loop_that_compresses_inline_slows_its_light_requests(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "hol-test.toml").write_text(WORKLOAD)
    w = wl.load_workloads(tmp_path / "w")["hol-test"]
    plain = load_catalog(FIXTURES).servers["py-ok"]
    row = plain.model_copy(update={"id": "ref", "name": "ref", "choices": Choices(**CHOICES),
                                   "run": f"exec {sys.executable} {REFSERVER}"})
    cpus = sorted(os.sched_getaffinity(0))
    opts = RunOptions(servers=["ref"], workloads=["hol-test"], repeat=1, allow_unverified=True, ready_timeout=10,
                      server_cpus=[cpus[0]], client_cpus=[cpus[-1]])
    store = Store(tmp_path / "r.db")
    res = run_matrix(store, opts, manifests=[row], workloads=[w], fingerprint={})
    cells = {c.point: c for c in store.cells(res.run_id)}
    assert {p: c.status for p, c in cells.items()} == {"quiet": "ok", "heavy": "ok"}, cells
    heavy = cells["heavy"].metrics.noisy.noise
    assert heavy["shape"] == "heavy" and heavy["ok"] >= 10 and heavy["p99_us"] > 10_000, heavy  # 1 MiB gzips
    assert cells["heavy"].metrics.noisy.noise_twin == "quiet"
    fp = {"cpu_model": "test", "cores": 2, "workloads": {"hol-test": w.facts()},
          "servers": {"ref": {"model": "event-loop", "choices": CHOICES}}}
    results = aggregate.collect(res.run_id, store.cells(res.run_id), fp, facts={})
    g = next(g for pt in results.workloads[0].points for g in pt.groups if g.point == "heavy")
    assert g.noise_effect is not None and g.noise_effect.verdict == "slowed", g.noise_effect
    assert g.noise_effect.p99_ratio is not None and g.noise_effect.p99_ratio > 2
    run = SimpleNamespace(id=res.run_id, fingerprint=fp, options={}, status="finished",
                          started_at="2026-01-01T00:00:00", finished_at=None)
    md = to_markdown.render(run, results).decode()
    assert "Verdicts: heavy: 1 slowed." in md, md
    # the head-of-line table: the declared cpu_work beside the light p99s, and what a 1 MiB gzip cost the server
    row = next(line for line in md.splitlines() if line.startswith("| ref | event-loop | inline |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[6] == "slowed" and float(cells[5]) > 2, row
    assert g.noise_effect.heavy_cpu_ms is not None and g.noise_effect.heavy_cpu_ms > 5, g.noise_effect  # ms of zlib
    assert cells[7] == f"{g.noise_effect.heavy_cpu_ms:.1f} ms", row
    assert "| event-loop | 1 |" in md, md  # the per-model table
