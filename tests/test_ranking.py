"""Honest rankings: successful responses only, degraded cells after clean ones, fixed-load
workloads ranked by latency with no winner named among equals."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from serverbench.results import aggregate, ranking
from serverbench.catalog import manifests as catalog
from serverbench.run import runner
from serverbench.catalog import workloads as wl
from serverbench.exporters import to_markdown
from serverbench.model import CellRecord, RunOptions
from serverbench.store import Store

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

THROUGHPUT = """name = "tp"
description = "closed load"
origin = "serverbench"
kind = "throughput"
path = "/json"
[quick]
steady_max = "0s"  # tests time the brief warm-up; test_runner checks the steady one
[[quick.points]]
label = "c=2"
connections = 2
duration = "1s"
[full]
steady_max = "0s"
[[full.points]]
label = "c=2"
connections = 2
duration = "1s"
"""


def _md_rows(md: str) -> list[list[str]]:
    """The rows of the ranked tables (those headed "| place"), not of the opening's tables."""
    rows, inside = [], False
    for ln in md.splitlines():
        if ln.startswith("| place"):
            inside = True
        elif not ln.startswith("|"):
            inside = False
        elif inside and ln.startswith("| "):
            rows.append([c.strip() for c in ln.strip("|").split("|")])
    return rows


def test_a_server_answering_500_fast_ranks_below_a_correct_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_MAX_S", "1.0")
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "tp.toml").write_text(THROUGHPUT)
    cat = catalog.load_catalog(runfix.SERVERS)
    store = Store(tmp_path / "r.db")
    cpus = sorted(__import__("os").sched_getaffinity(0))
    opts = RunOptions(servers=["py-500", "py-ok"], workloads=["tp"], repeat=1, allow_unverified=True,
                      server_cpus=[cpus[0]], client_cpus=[cpus[-1]])
    res = runner.run_matrix(store, opts, manifests=[cat.servers["py-500"], cat.servers["py-ok"]],
                            workloads=[wl.load_workloads(tmp_path / "w")["tp"]], fingerprint={})
    bad = next(c for c in store.cells(res.run_id) if c.server == "py-500")
    assert bad.metrics.counts.responses_rps > 0 and bad.metrics.counts.rps == 0 and bad.metrics.counts.error_share == 1.0
    run, results = aggregate.load(store, res.run_id)
    rows = _md_rows(to_markdown.render(run, results).decode())
    assert [r[1].rstrip(" ⚠") for r in rows] == ["py-ok", "py-500"]
    assert rows[0][0] == "1" and "degraded" in rows[1][6]


def _cell(server: str, rep: int, **m) -> CellRecord:
    return CellRecord(server, m.pop("workload", "w"), "p", rep, "ok", metrics=m)


def test_degraded_ranks_after_clean_even_when_faster(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    rid = store.new_run({}, {})
    for rep in (1, 2, 3):  # 'fast' answers more successfully but 5 % of its requests fail
        store.record_cell(rid, _cell("fast", rep, kind="throughput", rps=2000.0, requests=2100, ok=2000, errors=100))
        store.record_cell(rid, _cell("clean", rep, kind="throughput", rps=1000.0, requests=1000, ok=1000, errors=0))
    _, results = aggregate.load(store, rid)
    [pt] = results.workloads[0].points
    assert [g.server for g in pt.groups] == ["clean", "fast"] and pt.groups[1].degraded
    assert "fast had more than 1 % errors" in pt.glance.verdict and pt.glance.decided


def test_fixed_load_ranks_by_p99_and_names_no_winner_within_noise(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    rid = store.new_run({}, {})
    # equal demand served by both (same rps); p99s overlap across repetitions: within noise
    for rep, (a, b) in enumerate([(105_000, 106_000), (107_000, 104_000), (106_000, 105_500)], 1):
        common = dict(kind="fixed-load", rps=1080.0, requests=10_800, ok=10_800, errors=0)
        store.record_cell(rid, _cell("java-threads", rep, p99_us=a, **common))
        store.record_cell(rid, _cell("go-tcp", rep, p99_us=b, **common))
    run, results = aggregate.load(store, rid)
    [pt] = results.workloads[0].points
    gl = pt.glance
    assert gl.metric.startswith("p99 over every due request") and not gl.decided
    assert gl.verdict.startswith("no single leader: go-tcp and java-threads are tied")
    md = to_markdown.render(run, results).decode()
    assert "Ranked by **p99 over every due request" in md and "At a glance: no single leader:" in md
    assert "fastest" not in md.lower()
    # and when one is clearly better, it is named, by latency — not by requests/s
    store2 = Store(tmp_path / "r2.db")
    rid2 = store2.new_run({}, {})
    for rep in (1, 2, 3):
        common = dict(kind="fixed-load", requests=10_800, ok=10_800, errors=0)
        store2.record_cell(rid2, _cell("slow-tail", rep, p99_us=900_000 + rep, rps=1090.0, **common))
        store2.record_cell(rid2, _cell("steady", rep, p99_us=106_000 + rep, rps=1080.0, **common))
    _, results2 = aggregate.load(store2, rid2)
    [pt2] = results2.workloads[0].points
    assert [g.server for g in pt2.groups] == ["steady", "slow-tail"] and pt2.glance.decided


def test_a_rate_not_held_ranks_after_rates_held(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    rid = store.new_run({}, {})
    store.record_cell(rid, _cell("weak", 1, kind="fixed-load", target_rate=25_000, rps=12_000.0, p99_us=900,
                                 requests=60_000, ok=60_000, errors=0))
    store.record_cell(rid, _cell("strong", 1, kind="fixed-load", target_rate=25_000, rps=24_990.0, p99_us=4_000,
                                 requests=125_000, ok=125_000, errors=0))
    run, results = aggregate.load(store, rid)
    [pt] = results.workloads[0].points
    assert [g.server for g in pt.groups] == ["strong", "weak"] and pt.groups[1].held is False
    md = to_markdown.render(run, results).decode()
    assert "did not hold 25,000 (achieved 12,000)" in md


def test_rows_that_did_not_hold_rank_by_the_rate_they_answered_not_by_p99(tmp_path: Path) -> None:
    # both fell behind, so both p99s are the run's length; the one that answered four times more ranks first
    store = Store(tmp_path / "r.db")
    rid = store.new_run({}, {})
    store.record_cell(rid, _cell("answered-little", 1, kind="fixed-load", target_rate=1_188, rps=227.0,
                                 p99_us=3_790_000, requests=900, ok=900, errors=0))
    store.record_cell(rid, _cell("answered-most", 1, kind="fixed-load", target_rate=1_188, rps=957.0,
                                 p99_us=3_890_000, requests=3_800, ok=3_800, errors=0))
    store.record_cell(rid, _cell("held", 1, kind="fixed-load", target_rate=1_188, rps=1_188.0,
                                 p99_us=3_950_000, requests=4_750, ok=4_750, errors=0))
    _, results = aggregate.load(store, rid)
    [pt] = results.workloads[0].points
    assert [g.server for g in pt.groups] == ["held", "answered-most", "answered-little"]


def _throughput_run(tmp_path: Path, rows: dict[str, list[float]], saturated: set[str] = frozenset(),
                    not_steady: set[str] = frozenset()):
    store = Store(tmp_path / "t.db")
    rid = store.new_run({}, {})
    for server, rates in rows.items():
        for rep, rps in enumerate(rates, 1):
            n = int(rps)
            store.record_cell(rid, _cell(server, rep, kind="throughput", rps=rps, requests=n, ok=n, errors=0,
                                         client_saturated=server in saturated,
                                         warmup_steady=server not in not_steady, warmup_max_s=20.0))
    run, results = aggregate.load(store, rid)
    return run, results.workloads[0].points[0]


def test_rows_whose_intervals_overlap_the_leaders_are_named_as_tied(tmp_path: Path) -> None:
    _, pt = _throughput_run(tmp_path, {"a": [100_000, 104_000, 102_000], "b": [101_000, 103_000, 99_000],
                                       "c": [60_000, 61_000, 59_000]})
    assert [g.server for g in pt.groups] == ["a", "b", "c"] and not pt.glance.decided
    assert pt.glance.verdict.startswith("no single leader: a and b are tied")
    fa, fb, fc = (g.figures for g in pt.groups)
    assert (fb.rate.tied_with_leader, fc.rate.tied_with_leader) == (True, False)
    assert (fa.rate.ci_low, fa.rate.ci_high, fa.rate.ci_level) == (100_000, 104_000, 0.75)


def test_a_leader_outside_every_interval_is_named(tmp_path: Path) -> None:
    _, pt = _throughput_run(tmp_path, {"a": [150_000, 152_000, 149_000], "b": [101_000, 103_000, 99_000]})
    assert pt.glance.decided and pt.glance.verdict.startswith("a leads beyond noise")


def test_client_bound_rows_are_one_block_not_ordered_by_the_clients_noise(tmp_path: Path) -> None:
    run, pt = _throughput_run(tmp_path, {"zeta": [140_000, 141_000, 139_000], "alpha": [120_000, 121_000, 119_000],
                                         "slow": [50_000, 51_000, 49_000]}, saturated={"zeta", "alpha"})
    # listed by name, one place for both, the next row after them
    assert [(g.server, g.place) for g in pt.groups] == [("alpha", 1), ("zeta", 1), ("slow", 3)]
    assert not pt.glance.decided and "alpha and zeta each served at least 120,000 req/s" in pt.glance.verdict
    assert [g.figures.rate.client_bound_group for g in pt.groups] == [True, True, False]
    _, results = aggregate.load(Store(tmp_path / "t.db"), 1)
    md = to_markdown.render(run, results).decode()
    assert "≥ 120,000 (load generator's limit)" in md and "≥ 140,000 (load generator's limit)" in md


def test_a_row_not_steady_ranks_after_the_steady_ones_and_is_warned(tmp_path: Path) -> None:
    _, pt = _throughput_run(tmp_path, {"cold": [200_000, 201_000, 199_000], "warm": [100_000, 101_000, 99_000]},
                            not_steady={"cold"})
    assert [g.server for g in pt.groups] == ["warm", "cold"]
    assert pt.glance.decided and "cold was not steady" in pt.glance.verdict
    cold = pt.groups[1]
    assert any(w.kind == "not-steady" for w in cold.warnings) and cold.figures.warmup.not_steady == 3


def test_one_saturated_repetition_does_not_put_a_row_in_the_client_bound_block(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    rid = store.new_run({}, {})
    sat = {"a": [True, True, True], "b": [True, True, False], "noisy": [False, True, False]}
    rates = {"a": 150_000, "b": 140_000, "noisy": 100_000}
    for server, flags in sat.items():
        for rep, flag in enumerate(flags, 1):
            n = rates[server] + rep
            store.record_cell(rid, _cell(server, rep, kind="throughput", rps=float(n), requests=n, ok=n, errors=0,
                                         client_saturated=flag, warmup_steady=True))
    _, results = aggregate.load(store, rid)
    pt = results.workloads[0].points[0]
    assert [(g.server, g.place, g.client_bound_group) for g in pt.groups] == [
        ("a", 1, True), ("b", 1, True), ("noisy", 3, False)]


def test_a_row_within_the_noise_of_the_client_bound_block_joins_its_judgement(tmp_path: Path) -> None:
    """Issue 49: three rows formed the block while a fourth overlapped it (java-undertow 156.8k–161.2k
    req/s) and was placed 4th, left out of the glance and of the fixed-rate step. It now shares the
    block's place range, is named in the glance and measured at the fixed rate with the block."""
    run, pt = _throughput_run(tmp_path, {"zeta": [140_000, 141_000, 139_000], "alpha": [120_000, 121_000, 119_000],
                                         "near": [118_000, 123_000, 116_000], "slow": [50_000, 51_000, 49_000]},
                              saturated={"zeta", "alpha"})
    assert [(g.server, g.place_text) for g in pt.groups] == [("alpha", "1–3"), ("zeta", "1–3"), ("near", "1–3"),
                                                              ("slow", "4")]
    near = pt.groups[2]
    assert near.tied_with_leader and not near.client_bound_group
    assert "and near is within the noise of that block" in pt.glance.verdict
    assert [g.server for g in ranking.unordered_top(pt.groups, "throughput")] == ["alpha", "zeta", "near"]
    [plan] = aggregate.fixed_rate_plans(Store(tmp_path / "t.db").cells(1))
    assert plan.servers == ("alpha", "near", "zeta")


def test_a_first_row_outside_the_block_is_judged_with_the_block_rows_tied_with_it(tmp_path: Path) -> None:
    """The study's prantl-wrk (2026-11-29): the first row saturated the client in too few repetitions to
    be in the block, the block (two rows) was tied with it and the table placed them all 1–3, but the
    fixed-rate step planned nothing: unordered_top was empty whenever the first row was outside the block."""
    _, pt = _throughput_run(tmp_path, {"first": [123_000, 118_000, 126_000], "blk-a": [116_000, 124_000, 110_000],
                                       "blk-b": [115_000, 121_000, 109_000], "slow": [50_000, 51_000, 49_000]},
                            saturated={"blk-a", "blk-b"})
    assert [(g.server, g.place_text) for g in pt.groups] == [("first", "1–3"), ("blk-a", "1–3"), ("blk-b", "1–3"),
                                                              ("slow", "4")]
    assert [g.server for g in ranking.unordered_top(pt.groups, "throughput")] == ["first", "blk-a", "blk-b"]
    [plan] = aggregate.fixed_rate_plans(Store(tmp_path / "t.db").cells(1))
    assert plan.servers == ("blk-a", "blk-b", "first") and plan.rate == round(0.8 * 115_000)


def test_rows_tied_below_the_top_share_a_place_range(tmp_path: Path) -> None:
    _, pt = _throughput_run(tmp_path, {"a": [200_000, 201_000, 199_000], "b": [100_000, 104_000, 102_000],
                                       "c": [101_000, 103_000, 99_000], "d": [50_000, 51_000, 49_000]})
    assert [(g.server, g.place_text, g.place, g.place_to) for g in pt.groups] == [
        ("a", "1", 1, 1), ("b", "2–3", 2, 3), ("c", "2–3", 2, 3), ("d", "4", 4, 4)]
    assert pt.glance.decided and pt.glance.verdict.startswith("a leads beyond noise")
    assert [g.figures.standing.place_to for g in pt.groups] == [1, 3, 3, 4]
