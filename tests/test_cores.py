"""The cores sweep: the runner expands `server_cores = "sweep"` to 1, 2, 4 … up to the server machine's
CPUs, gives each count its own server start pinned to that many CPUs with $WORKERS = k, flags a count
whose CPUs the load generator shared, and the report ranks the scaling table at the top clean count."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from conftest import write_manifest  # noqa: E402
from serverbench.results import aggregate
from serverbench.catalog import manifests as catalog
from serverbench.rules import cores  # noqa: E402
from serverbench.run import runner  # noqa: E402
from serverbench.catalog import workloads as wl  # noqa: E402
from serverbench.catalog.kinds import RANKED_BY  # noqa: E402
from serverbench.run.events import ignore  # noqa: E402
from serverbench.exporters import to_csv, to_html, to_markdown  # noqa: E402
from serverbench.model import CellRecord, RunOptions  # noqa: E402
from serverbench.store import Store  # noqa: E402

CORES = """name = "cores"
description = "a tiny cores sweep"
origin = "serverbench"
kind = "cores"
path = "/json"
[quick]
steady_max = "0s"  # tests time the brief warm-up; test_runner checks the steady one
[[quick.points]]
label = "cores"
server_cores = "sweep"
connections = 1
duration = "300ms"
[full]
steady_max = "0s"
[[full.points]]
label = "cores"
server_cores = "sweep"
connections = 1
duration = "10s"
"""


def _workload(tmp_path: Path) -> wl.Workload:
    (tmp_path / "w").mkdir(exist_ok=True)
    (tmp_path / "w" / "cores.toml").write_text(CORES)
    return wl.load_workloads(tmp_path / "w")["cores"]


class _Runner(runner.Runner):
    """A runner whose server machine has `n` CPUs (what the remote-server runner overrides too)."""

    n = 2

    def server_cpus_online(self) -> list[int]:
        return list(range(self.n))


def _runner(tmp_path: Path, n: int, **opts) -> runner.Runner:
    r = type("R", (_Runner,), {"n": n})(Store(tmp_path / "r.db"), RunOptions(**opts), [], [], 1, ignore, tmp_path)
    return r


@pytest.mark.parametrize("n, labels", [
    (1, ["cores=1"]), (2, ["cores=1", "cores=2"]), (6, ["cores=1", "cores=2", "cores=4", "cores=6"]),
    (8, ["cores=1", "cores=2", "cores=4", "cores=8"])])
def test_the_sweep_expands_to_powers_of_two_up_to_the_server_machines_cpus(tmp_path: Path, n: int,
                                                                            labels: list[str]) -> None:
    size = _runner(tmp_path, n).size(_workload(tmp_path))
    assert [p.label for p in size.points] == labels
    assert [p.server_cores for p in size.points] == [int(x.split("=")[1]) for x in labels]
    assert all(p.connections == 1 and p.path is None for p in size.points)  # the template's load, unchanged


def test_the_repo_workload_is_a_sweep_and_a_cores_point_needs_server_cores(tmp_path: Path) -> None:
    w = wl.load_workloads()["cores"]
    assert w.kind == "cores" and w.path == "/json" and "flagged" in w.description
    assert [(p.server_cores, p.connections) for p in w.size(False).points] == [("sweep", 256)]
    assert "cores" in RANKED_BY and "speedup" in RANKED_BY["cores"][0]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cores.toml").write_text(CORES.replace('server_cores = "sweep"\n', "", 1))
    with pytest.raises(wl.WorkloadError, match="server_cores"):
        wl.load_workloads(tmp_path / "bad")
    with pytest.raises(ValueError):
        cores.counts(0)


def test_the_sweep_stays_on_the_server_cpus_given(tmp_path: Path) -> None:
    w = _workload(tmp_path)
    # --server-cpus 0-7 --client-cpus 8-15 on 16 CPUs: 1, 2, 4, 8, never the load generator's CPUs
    r = _runner(tmp_path, 16, server_cpus=list(range(8)), client_cpus=list(range(8, 16)), split="manual")
    assert [p.label for p in r.size(w).points] == ["cores=1", "cores=2", "cores=4", "cores=8"]
    assert not any(runner.cpu_overlap(r.opts, r._sweep_cpus()[:k]) for k in (1, 2, 4, 8))
    # --server-cpus 0 --client-cpus 1 on 2 CPUs: cores=1 only
    r = _runner(tmp_path, 2, server_cpus=[0], client_cpus=[1], split="manual")
    assert [p.label for p in r.size(w).points] == ["cores=1"]
    # the harness's own split giving the server 1 CPU of 2: on to the whole machine (cores=2 flagged)
    r = _runner(tmp_path, 2, server_cpus=[0], client_cpus=[1], split="auto")
    r.machine_cpus = [0, 1]
    assert [p.label for p in r.size(w).points] == ["cores=1", "cores=2"]
    # … only on 2 CPUs: an auto split giving the server 1 CPU of 16 keeps the sweep off the client's 15
    r = _runner(tmp_path, 16, server_cpus=[0], client_cpus=list(range(1, 16)), split="auto")
    r.machine_cpus = list(range(16))
    assert [p.label for p in r.size(w).points] == ["cores=1"]
    # an auto split of 16 CPUs giving the server 5: 1, 2, 4, 5 on CPUs 0-4
    r = _runner(tmp_path, 16, server_cpus=list(range(5)), client_cpus=list(range(5, 16)), split="auto")
    assert [p.server_cores for p in r.size(w).points] == [1, 2, 4, 5] and r._sweep_cpus() == [0, 1, 2, 3, 4]


def test_overlap_on_a_two_cpu_split(tmp_path: Path) -> None:
    r = _runner(tmp_path, 2, server_cpus=[0], client_cpus=[1])
    assert [runner.cpu_overlap(r.opts, list(range(k))) for k in (1, 2)] == [False, True]
    # local workers share this machine's client CPUs; a remote load generator does not
    assert runner.cpu_overlap(_runner(tmp_path, 2, client_cpus=[1], cluster="local:2").opts, [0, 1]) is True
    assert runner.cpu_overlap(_runner(tmp_path, 2, client_cpus=[1], cluster="tcp://10.0.0.2:8786").opts, [0, 1]) is False


# -- aggregation and report, from synthetic cells ----------------------------------------------------
FP = {"servers": {"flat": {"model": "event-loop"}, "scales": {"model": "event-loop-per-core"},
                  "fails": {"model": "thread-pool"}}}


def _cell(server: str, k: int, rps: float, rep: int = 1, overlap: bool = False, others: float = 5.0) -> CellRecord:
    return CellRecord(server, "cores", f"cores={k}", rep, "ok", metrics={
        "kind": "cores", "rps": rps, "requests": int(rps * 10), "ok": int(rps * 10), "errors": 0,
        "server_cores": k, "server_cpu_list": list(range(k)), "cpu_overlap": overlap,
        "others_cpu_percent": 60.0 if overlap else others})


def _results(top_overlaps: bool) -> tuple[SimpleNamespace, aggregate.RunResults]:
    cells = [_cell("flat", 1, 1000), _cell("flat", 2, 1100), _cell("flat", 4, 1150, overlap=top_overlaps),
             _cell("scales", 1, 900), _cell("scales", 2, 1700, others=35.0), _cell("scales", 4, 3000, overlap=top_overlaps),
             _cell("fails", 1, 800),
             CellRecord("fails", "cores", "cores=2", 1, "failed", error="server did not start: boom",
                        metrics={"server_cores": 2}),
             _cell("fails", 4, 5000, overlap=top_overlaps)]
    run = SimpleNamespace(id=3, fingerprint=FP, options={}, status="finished", started_at="2026-01-01T00:00:00",
                          finished_at=None)
    return run, aggregate.collect(3, cells, FP, facts={})


def test_overlapped_groups_carry_the_warning_and_the_figures() -> None:
    _, res = _results(top_overlaps=True)
    g4, g2 = res.group("cores", "cores=4", "scales"), res.group("cores", "cores=2", "scales")
    assert [w.kind for w in g4.warnings] == ["cpu-overlap"] and g4.warnings[0].severity == "warning"
    assert "shared CPU(s) at 4 server cores" in g4.warnings[0].text
    assert "mix both sides' work, not a clean 4-core result" in g4.warnings[0].text
    # the load generator on the server's CPUs is told once, as the overlap, not also as shared-cpu
    assert ("(server on CPU 0,1,2,3, where other processes (the load generator among them) used 60 % (100 = one "
            "CPU);") in g4.warnings[0].text
    # without an overlap, other processes on its CPUs are still a shared-cpu warning
    assert [w.kind for w in g2.warnings] == ["shared-cpu"]
    assert (g4.figures.cores.server_cores, g4.figures.cores.cpu_overlap) == (4, True)
    assert (g2.figures.cores.server_cores, g2.figures.cores.cpu_overlap) == (2, False)


def _table(md: str) -> list[list[str]]:
    lines = md.split("### scaling", 1)[1].split("\n\n")[2].splitlines()
    return [[c.strip() for c in x.strip("|").split("|")] for x in lines if not x.startswith("|---")]


def test_scaling_table_ranks_at_the_top_clean_count_and_marks_the_overlapped_one() -> None:
    run, res = _results(top_overlaps=True)
    md = to_markdown.render(run, res).decode()
    head, *rows = _table(md)
    assert head == ["place", "server", "model", "req/s, 1 core", "req/s, 2 cores", "req/s, 4 cores ⚠",
                    "speedup, 2 vs 1 core"]
    # ranked at 2 cores (4 overlapped): "fails" had 5,000 at 4 cores but failed at 2, so it ranks last
    # ⚠ beside a name: a warning other than the overlap (scales: shared-cpu at 2 cores; fails: failed)
    assert [r[:2] for r in rows] == [["1", "scales ⚠"], ["2", "flat"], ["—", "fails ⚠"]]
    assert rows[0][3:] == ["900", "1,700", "3,000 ⚠", "×1.89"]
    assert rows[2][3:] == ["800", "failed", "5,000 ⚠", "—"]
    assert "Ranked by requests/s at 2 cores, the most measured without sharing a CPU" in md
    assert "⚠ = at 4 cores the server shared CPU(s) with the load generator" in md
    assert "Ranked by **successful requests/s at the most server cores measured on CPUs of its own" in md
    # per-point tables are still there, the overlapped point's warning listed under it
    assert "### cores · cores=4" in md and "- ⚠ scales: server and load generator shared CPU(s)" in md


def test_without_overlap_the_top_count_ranks_and_the_csv_and_html_carry_it() -> None:
    run, res = _results(top_overlaps=False)
    md = to_markdown.render(run, res).decode()
    head, *rows = _table(md)
    assert head[-2:] == ["req/s, 4 cores", "speedup, 4 vs 1 core"]
    assert [r[1] for r in rows] == ["fails ⚠", "scales ⚠", "flat"] and rows[1][-1] == "×3.33"
    assert "cpu-overlap" not in md and "shared CPU" not in md
    csv_text = to_csv.render(run, res).decode()
    assert "server_cores" in csv_text.splitlines()[0] and "cpu_overlap" in csv_text.splitlines()[0]
    html = to_html.render(run, res).decode()
    assert "speedup, 4 vs 1 core" in html and "×3.33" in html


def test_per_core_table_scaling_chart_and_model_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    from serverbench.charts.figures import Styles, scaling_chart
    from serverbench.exporters import cores_section
    run, res = _results(top_overlaps=True)
    wl_ = res.workloads[0]
    monkeypatch.setitem(sys.modules, "serverbench.results.model_notes", None)  # a tree without model notes
    pc = cores_section.per_core(wl_)
    assert pc.headers == ["server", "model", "1 core", "2 cores", "4 cores ⚠"]
    assert pc.rows[0] == ["scales", "event-loop-per-core", "900", "850", "750 ⚠"]  # 3,000 ÷ 4, overlapped
    md = to_markdown.render(run, res).decode()
    assert "### requests/s per core" in md and "| flat | event-loop | 1,000 | 550 | 288 ⚠ |" in md
    fig = scaling_chart(cores_section.lines(wl_), Styles(wl_.groups), "t")
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["scales"].x) == [1, 2, 4] and list(by_name["scales"].y) == [900, 1700, 3000]
    assert list(by_name["scales"].marker.symbol) == ["circle", "circle", "x-open"]  # the overlapped count
    ideal = next(t for t in fig.data if t.name.startswith("linear"))
    assert list(ideal.y) == [1000, 2000, 4000]  # ×k from the fastest 1-core figure (flat's 1,000)
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.tickvals) == [1, 2, 4]
    # each model's note, once per model, in table order, under the per-core table
    monkeypatch.setitem(cores_section.__dict__, "note", lambda m: {"event-loop": "one loop: one core"}.get(m, ""))
    assert cores_section.model_notes(wl_) == [("event-loop", "one loop: one core")]
    md = to_markdown.render(run, res).decode()
    assert "- **event-loop**: one loop: one core" in md and "<li><b>event-loop</b>: one loop" in to_html.render(
        run, res).decode()


# -- one real run: a fresh start per count, pinned, $WORKERS = k ----------------------------------
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs a machine with 2 CPUs")
def test_each_count_is_a_fresh_start_pinned_to_k_cpus_with_workers_k(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_MAX_S", "0.3")
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    monkeypatch.setattr(runner.Runner, "server_cpus_online", lambda self: [0, 1])
    # the harness's own split of a 2-CPU machine (one server CPU): the sweep goes on to both, flagged
    monkeypatch.setattr(runner.supervisor, "default_cpu_split", lambda: ([0], [1]))
    monkeypatch.setattr(runner.supervisor, "online_cpus", lambda: [0, 1])  # a 2-CPU machine, whatever CI has
    starts = tmp_path / "starts.jsonl"
    probe = ("import json, os; print(json.dumps({'pid': os.getpid(), 'workers': os.environ['WORKERS'], "
             f"'cpus': sorted(os.sched_getaffinity(0))}}), file=open({str(starts)!r}, 'a'))")
    tiny = runfix.HERE / "tiny_server.py"
    write_manifest(tmp_path / "servers", "py-cores", run=f"'{sys.executable}' -c \"{probe}\" && "
                                                         f"exec '{sys.executable}' '{tiny}'")
    m = catalog.load_catalog(tmp_path / "servers").servers["py-cores"]
    store = Store(tmp_path / "r.db")
    opts = RunOptions(servers=["py-cores"], workloads=["cores"], repeat=1, allow_unverified=True,
                      ready_timeout=10)
    res = runner.run_matrix(store, opts, manifests=[m], workloads=[_workload(tmp_path)], fingerprint={"test": True})
    assert (res.status, res.ok, res.failed) == ("finished", 2, 0)
    seen = [json.loads(x) for x in starts.read_text().splitlines()]
    assert [(s["workers"], s["cpus"]) for s in seen] == [("1", [0]), ("2", [0, 1])]
    assert len({s["pid"] for s in seen}) == 2  # two starts, not one shared
    cells = {c.point: c.metrics for c in store.cells(res.run_id)}
    assert {k: (c.setup.server_cores, c.setup.server_cpu_list, c.setup.cpu_overlap, c.setup.workers)
            for k, c in cells.items()} == {
        "cores=1": (1, [0], False, 1), "cores=2": (2, [0, 1], True, 2)}
    assert all(c.timing.server_start_s is not None and c.counts.rps > 0 for c in cells.values())  # each point opened a start


HOL_SWEEP = """name = "hol-sweep"
description = "head-of-line at each count"
origin = "serverbench"
kind = "head-of-line"
path = "/json"
[quick]
steady_max = "0s"
[[quick.points]]
label = "quiet"
server_cores = "sweep"
mode = "open"
rate = 50
duration = "300ms"
[[quick.points]]
label = "heavy"
server_cores = "sweep"
mode = "open"
rate = 50
duration = "300ms"
heavy_path = "/"
heavy_share = 0.1
twin = "quiet"
[full]
[[full.points]]
label = "quiet"
rate = 50
mode = "open"
duration = "1s"
"""


def test_a_head_of_line_sweep_keeps_each_heavy_point_with_its_twin_in_one_start_per_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "w").mkdir(exist_ok=True)
    (tmp_path / "w" / "hol-sweep.toml").write_text(HOL_SWEEP)
    w = wl.load_workloads(tmp_path / "w")["hol-sweep"]
    labels = [(p.label, p.server_cores, p.twin) for p in cores.expand(w.quick.points, 2)]
    assert labels == [("quiet=1", 1, None), ("quiet=2", 2, None), ("heavy=1", 1, "quiet=1"), ("heavy=2", 2, "quiet=2")]
    assert [[p.label for p in g] for g in cores.by_count(cores.expand(w.quick.points, 2))] == [
        ["quiet=1", "heavy=1"], ["quiet=2", "heavy=2"]]
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_MAX_S", "0.3")
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    monkeypatch.setattr(runner.Runner, "server_cpus_online", lambda self: [0, 1])
    monkeypatch.setattr(runner.supervisor, "default_cpu_split", lambda: ([0], [1]))
    monkeypatch.setattr(runner.supervisor, "online_cpus", lambda: [0, 1])
    starts = tmp_path / "starts.jsonl"
    probe = f"import os; print(os.getpid(), file=open({str(starts)!r}, 'a'))"
    write_manifest(tmp_path / "servers", "py-hol", run=f"'{sys.executable}' -c \"{probe}\" && "
                                                       f"exec '{sys.executable}' '{runfix.HERE / 'tiny_server.py'}'")
    m = catalog.load_catalog(tmp_path / "servers").servers["py-hol"]
    store = Store(tmp_path / "r.db")
    opts = RunOptions(servers=["py-hol"], workloads=["hol-sweep"], repeat=1, allow_unverified=True, ready_timeout=10)
    res = runner.run_matrix(store, opts, manifests=[m], workloads=[w], fingerprint={"test": True})
    assert (res.status, res.ok, res.failed) == ("finished", 4, 0), [(c.point, c.error) for c in store.cells(res.run_id)]
    assert len(starts.read_text().split()) == 2  # one start per count, each holding the twin and the heavy point
    cells = {c.point: c.metrics for c in store.cells(res.run_id)}
    assert {k: (c.setup.server_cores, c.noisy.noise_twin) for k, c in cells.items()} == {
        "quiet=1": (1, None), "heavy=1": (1, "quiet=1"), "quiet=2": (2, None), "heavy=2": (2, "quiet=2")}
    fp = {"cpu_model": "test", "cores": 2, "workloads": {"hol-sweep": w.facts()}}
    results = aggregate.collect(res.run_id, store.cells(res.run_id), fp, facts={})
    heavy = {g.point: g.noise_effect for pt in results.workloads[0].points for g in pt.groups if g.point.startswith("heavy")}
    assert {k: e.twin for k, e in heavy.items() if e is not None} == {"heavy=1": "quiet=1", "heavy=2": "quiet=2"}
    run = SimpleNamespace(id=res.run_id, fingerprint=fp, options={}, status="finished",
                          started_at="2026-01-01T00:00:00", finished_at=None)
    md = to_markdown.render(run, results).decode()
    assert "| server | model | server cores | cpu_work |" in md, md
    assert "heavy at 1 cores" in md and "heavy at 2 cores" in md, md
    assert "light p99 ratio against server cores" in to_html.render(run, results).decode()
