"""The noisy workload (issue 31): its points and twins are validated, loadgen gets the noise flags,
the verdict rules, the aggregation against the quiet twin, the report's section — and the hidden
truth, with the real loadgen: a server bounded to a few connections is starved by slowloris while an
event-loop server is not."""
from __future__ import annotations

import csv
import io
import os
import sys
from pathlib import Path

import pytest

from conftest import write_manifest
from serverbench import paths
from serverbench.catalog import manifests as catalog
from serverbench.catalog import workloads as wl
from serverbench.exporters import to_csv, to_html, to_markdown
from serverbench.model import CellRecord
from serverbench.processes.loadgen import command_line
from serverbench.results import aggregate, noisy
from serverbench.run.runner import RunOptions, run_matrix
from serverbench.store import Store

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"


def workload(points: str, kind: str = "noisy") -> str:
    body = f'name = "nz"\ndescription = "d"\norigin = "o"\nkind = "{kind}"\n'
    return body + f"[quick]\nsteady_max = \"0s\"\nwarmup = \"200ms\"\n{points}[full]\n{points.replace('quick.', 'full.')}"


QUIET = '[[quick.points]]\nlabel = "quiet"\nmode = "open"\nrate = 100\nconnections = 2\nmax_connections = 4\nduration = "2s"\n'


def noise_point(shape: str = "slowloris", twin: str = "quiet", rate: int = 100, n: int = 16) -> str:
    return (f'[[quick.points]]\nlabel = "{shape}"\nmode = "open"\nrate = {rate}\nconnections = 2\n'
            f'max_connections = 4\nduration = "2s"\nnoise = "{shape}"\nnoise_connections = {n}\ntwin = "{twin}"\n'
            'noise_lead = "500ms"\n')


def load(tmp_path: Path, text: str) -> wl.Workload:
    f = tmp_path / "nz.toml"
    f.write_text(text)
    return wl.load_workload(f)


def test_a_noise_point_gives_loadgen_its_noise_flags(tmp_path: Path) -> None:
    w = load(tmp_path, workload(QUIET + noise_point()))
    quiet, loud = w.quick.points
    assert "--noise" not in command_line(quiet, "http://h", "/", threads=1, json_path="o")
    args = command_line(loud, "http://h", "/", threads=1, json_path="o")[:-5]  # the threads and result follow
    assert args[args.index("--noise"):] == ["--noise", "slowloris", "--noise-connections", "16", "--noise-lead", "500ms"]
    assert loud.planned_seconds() == pytest.approx(quiet.planned_seconds() + 0.5)


@pytest.mark.parametrize("points, says", [
    (QUIET + noise_point(twin="nowhere"), "twin must name"),
    (noise_point() + QUIET, "must be a quiet point before it"),
    (QUIET + noise_point(rate=200), "same legitimate load"),
    (QUIET.replace('mode = "open"\nrate = 100', 'mode = "closed"'), "open load at a fixed rate"),
])
def test_twins_are_checked(tmp_path: Path, points: str, says: str) -> None:
    with pytest.raises(wl.WorkloadError, match=says):
        load(tmp_path, workload(points))


def test_noise_belongs_to_noisy_workloads_and_needs_a_shape(tmp_path: Path) -> None:
    with pytest.raises(wl.WorkloadError, match="kind = \\\\?\"noisy\\\\?\""):
        load(tmp_path, workload(QUIET + noise_point(), kind="fixed-load"))
    with pytest.raises(wl.WorkloadError, match="belong to a point with noise"):
        load(tmp_path, workload(QUIET.replace('duration = "2s"\n', 'duration = "2s"\nnoise_connections = 3\n')))


def test_the_shipped_noisy_workload_has_every_shape_beside_one_quiet_twin() -> None:
    w = wl.load_workloads()["noisy"]
    for size in (w.quick, w.full):
        assert [p.noise for p in size.points] == [None, "slowloris", "idle", "garbage", "slow-reader"]
        assert {p.twin for p in size.points[1:]} == {"quiet"}


@pytest.mark.parametrize("p99_ratio, rate_ratio, added_us, verdict", [
    (1.0, 1.0, 0.0, "unaffected"),
    (2.5, 1.0, 1_500.0, "slowed"),
    (3.0, 1.0, 200.0, "unaffected"),  # 3× a 100 µs p99 is only +200 µs
    (9_000.0, 0.85, 9e6, "starved"),
    (9_000.0, 0.05, 9e6, "down"),
])
def test_the_verdict_rules(p99_ratio: float, rate_ratio: float, added_us: float, verdict: str) -> None:
    assert noisy.verdict(p99_ratio, rate_ratio, added_us) == verdict
    assert noisy.verdict(p99_ratio, None, added_us) is None


def test_each_repetition_is_paired_with_the_twin_of_its_own_start() -> None:
    def cells(p99s: list[float]) -> list[CellRecord]:
        return [CellRecord("s", "nz", "p", r + 1, "ok", metrics={"rps": 100.0, "p99_us": v}) for r, v in enumerate(p99s)]
    # repetition 1 was disturbed on both sides: one vote, not the merged histogram's tail
    p99_ratio, rate_ratio, added = noisy.paired(cells([60_000.0, 200.0, 440.0]), cells([3_000.0, 470.0, 270.0]))
    assert p99_ratio == pytest.approx(440 / 270) and rate_ratio == 1.0 and added == pytest.approx(170.0)
    assert noisy.verdict(p99_ratio, rate_ratio, added) == "unaffected"


def _cell(server: str, point: str, rep: int, rps: float, p99: float, shape: str | None) -> CellRecord:
    noise = None if shape is None else {
        "shape": shape, "connections": 16, "opened": 20, "held_peak": 16, "held_at_end": 16,
        "responses": {"2xx": 0, "3xx": 0, "4xx": 3, "5xx": 0, "other": 0},
        "ended": {"closed": 4, "reset": 0, "timeout": 0, "open_at_end": 16}}
    return CellRecord(server, "nz", point, rep, "ok", metrics={
        "kind": "noisy", "rps": rps, "p99_us": p99, "requests": int(rps * 2), "ok": int(rps * 2), "errors": 0,
        "target_rate": 100.0, "noise": noise, "noise_twin": "quiet" if shape else None})


def _results() -> aggregate.RunResults:
    cells = []
    for rep in (1, 2, 3):
        cells += [_cell("pool", "quiet", rep, 100.0, 2_000.0, None), _cell("pool", "slowloris", rep, 3.0, 4e6, "slowloris"),
                  _cell("loop", "quiet", rep, 100.0, 1_000.0, None), _cell("loop", "slowloris", rep, 100.0, 1_100.0,
                                                                            "slowloris")]
    fp = {"servers": {"pool": {"model": "thread-pool", "language": "X"}, "loop": {"model": "event-loop", "language": "X"}}}
    return aggregate.collect(1, cells, fp, facts={})


def test_each_noise_point_is_judged_against_its_quiet_twin() -> None:
    res = _results()
    by = {(g.server, g.point): g.figures.noise for g in res.groups}
    pool, loop = by[("pool", "slowloris")], by[("loop", "slowloris")]
    assert (pool.noise_shape, pool.noise_twin, pool.noise_verdict) == ("slowloris", "quiet", "down")
    assert pool.noise_rate_ratio == pytest.approx(0.03) and pool.noise_p99_ratio == pytest.approx(2_000)
    assert loop.noise_verdict == "unaffected" and loop.noise_p99_ratio == pytest.approx(1.1)
    assert (loop.noise_held_peak, loop.noise_4xx, loop.noise_closed, loop.noise_open_at_end) == (16, 3, 4, 16)
    assert by[("loop", "quiet")].noise_verdict is None and by[("loop", "quiet")].noise_shape is None
    # ranked by the legitimate p99 (fixed demand), the slow rows after the rows that held the rate
    pt = next(p for p in res.workloads[0].points if p.label == "slowloris")
    assert [g.server for g in pt.groups] == ["loop", "pool"]


def test_the_report_shows_the_ratios_verdicts_and_rules() -> None:
    res = _results()
    run = type("Run", (), {"id": 1, "fingerprint": {}, "options": {}, "started_at": "", "finished_at": "",
                           "status": "finished"})()
    md = to_markdown.render(run, res).decode()
    assert "### what the noise cost the legitimate traffic" in md
    assert "| loop | event-loop | 1 ms | 100 | 1.10, 1.00 → unaffected |" in md
    assert "→ down |" in md and "- down: successful legitimate requests/s under 10%" in md
    assert "Verdicts: slowloris: 1 down, 1 unaffected." in md
    assert "held 16 · 4xx 3 · closed 4 · open at end 16" in md
    rows = list(csv.DictReader(io.StringIO(to_csv.render(run, res).decode())))
    assert {r["noise_verdict"] for r in rows if r["point"] == "slowloris"} == {"down", "unaffected"}
    html = to_html.render(run, res).decode()
    assert "what the noise cost the legitimate traffic" in html and "p99 under noise" in html


@pytest.mark.skipif(not paths.loadgen_binary().is_file(), reason="loadgen not built (make loadgen)")
def test_slowloris_starves_a_bounded_server_and_not_an_event_loop(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    servers = tmp_path / "servers"
    run = f"exec '{sys.executable}' '{REFSERVER}'"
    write_manifest(servers, "bounded", run=run, model="thread-pool", env={"MAX_CONNECTIONS": "4"})
    write_manifest(servers, "loop", run=run, model="event-loop")
    cat = catalog.load_catalog(servers)
    w = load(tmp_path, workload(QUIET + noise_point()))
    cpus = sorted(os.sched_getaffinity(0))
    store = Store(tmp_path / "r.db")
    opts = RunOptions(servers=["bounded", "loop"], workloads=["nz"], repeat=1, allow_unverified=True,
                      server_cpus=[cpus[0]], client_cpus=[cpus[-1]])
    res = run_matrix(store, opts, manifests=[cat.servers["bounded"], cat.servers["loop"]], workloads=[w],
                     fingerprint={})
    _, results = aggregate.load(store, res.run_id)
    f = {(g.server, g.point): g.figures for g in results.groups}
    assert f[("bounded", "quiet")].rate.rps_median == pytest.approx(100, rel=0.1), "the quiet twin is served"
    assert f[("bounded", "slowloris")].noise.noise_verdict in ("starved", "down"), f[("bounded", "slowloris")]
    # the claim: the event loop is not starved (a p99 "slowed" by another process on a busy
    # machine is a timing, which belongs in bench/, not in this test)
    loop = f[("loop", "slowloris")].noise
    assert loop.noise_verdict in ("unaffected", "slowed") and loop.noise_rate_ratio >= noisy.STARVED_RATE, loop
    assert f[("loop", "slowloris")].noise.noise_held_peak == 16


def test_shards_noise_counters_add_up() -> None:
    from serverbench.rules.shards import merge_noise
    a = {"shape": "idle", "connections": 128, "held_peak": 120, "responses": {"4xx": 1}, "ended": {"closed": 2}}
    b = {"shape": "idle", "connections": 128, "held_peak": 128, "responses": {"4xx": 2}, "ended": {"closed": 0}}
    assert merge_noise([a, b]) == {"shape": "idle", "connections": 256, "held_peak": 248,
                                   "responses": {"4xx": 3}, "ended": {"closed": 2}}


def test_repetitions_that_disagree_give_a_split_noise_verdict_and_agreeing_ones_theirs() -> None:
    cells = []
    for rep in (1, 2, 3):
        # loop: slowed in repetition 1 only (5 ms against a 1 ms twin), unaffected in the others
        loud = 5_000.0 if rep == 1 else 1_100.0
        cells += [_cell("pool", "quiet", rep, 100.0, 2_000.0, None), _cell("pool", "slowloris", rep, 3.0, 4e6, "slowloris"),
                  _cell("loop", "quiet", rep, 100.0, 1_000.0, None), _cell("loop", "slowloris", rep, 100.0, loud,
                                                                            "slowloris")]
    assert noisy.repetition_verdicts([c for c in cells if c.server == "loop" and c.point == "slowloris"],
                                     [c for c in cells if c.server == "loop" and c.point == "quiet"]) == [
        "slowed", "unaffected", "unaffected"]
    fp = {"servers": {"pool": {"model": "thread-pool", "language": "X"}, "loop": {"model": "event-loop", "language": "X"}}}
    res = aggregate.collect(1, cells, fp, facts={})
    by = {(g.server, g.point): g.figures.noise for g in res.groups}
    loop, pool = by[("loop", "slowloris")], by[("pool", "slowloris")]
    # the medians alone would say "unaffected" (p99 ×1.1): one repetition of three is not outvoted
    assert (loop.noise_verdict, loop.noise_verdict_counts) == ("split", "unaffected 2 of 3, slowed 1")
    assert loop.noise_p99_ratio == pytest.approx(1.1)
    assert (pool.noise_verdict, pool.noise_verdict_counts) == ("down", "down 3 of 3")
    run = type("Run", (), {"id": 1, "fingerprint": {}, "options": {}, "started_at": "", "finished_at": "",
                           "status": "finished"})()
    md = to_markdown.render(run, res).decode()
    assert "| loop | event-loop | 1 ms | 100 | 1.10, 1.00 → split (unaffected 2 of 3, slowed 1) |" in md
    assert "Verdicts: slowloris: 1 down, 1 split." in md and "never the most common one" in md
    rows = list(csv.DictReader(io.StringIO(to_csv.render(run, res).decode())))
    assert {r["server"]: r["noise_verdict"] for r in rows if r["point"] == "slowloris"} == {"loop": "split",
                                                                                           "pool": "down"}
