"""Every client counts: a bounded pool that serves 64 of 400 connections ranks after the fair rows,
never in the client-bound block, and the report says how many it served; the fixed-rate step's
point orders a client-bound block by server CPU per request."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from serverbench.rules import fairness
from serverbench.exporters import to_csv, to_markdown
from serverbench.model import CellRecord
from serverbench.results import aggregate
from serverbench.store import Store


def _fair(slots: int, served: int, per_slot: int, waited: int, seconds: int = 4) -> dict:
    return {"slots": slots, "served": served, "completed_sum": served * per_slot,
            "completed_sum_sq": float(served * per_slot * per_slot),
            "jain": fairness.jain(served * per_slot, served * per_slot * per_slot, slots),
            "longest_wait_us": 4_000_000.0 if waited else 3_000.0, "waited_over_timeout": waited,
            "served_per_s": [served] * seconds}


def _cell(server: str, rep: int, point: str = "c=400", **m) -> CellRecord:
    return CellRecord(server, "w", point, rep, "ok", metrics=m)


def test_jain_is_one_for_even_slots_and_one_over_n_for_one_slot() -> None:
    assert fairness.jain(400 * 10, 400 * 100, 400) == pytest.approx(1.0)
    assert fairness.jain(1000, 1000 * 1000, 400) == pytest.approx(1 / 400)
    assert fairness.jain(0, 0, 400) is None


def test_shards_merge_exactly() -> None:
    a, b = _fair(200, 32, 1000, 168), _fair(200, 200, 10, 0, seconds=3)
    m = fairness.merge([a, b])
    assert m is not None
    assert (m["slots"], m["served"], m["waited_over_timeout"]) == (400, 232, 168)
    assert m["served_per_s"] == [232, 232, 232]  # the seconds both shards cover
    total, sq = 32 * 1000 + 200 * 10, 32 * 1000 * 1000 + 200 * 100
    assert m["jain"] == pytest.approx(total * total / (400 * sq))
    assert m["longest_wait_us"] == 4_000_000.0
    assert fairness.merge([]) is None


def test_the_unfair_rule_is_more_than_five_percent_waiting() -> None:
    assert fairness.Fairness.model_validate(_fair(400, 336, 10, 64)).unfair  # 16 %
    assert not fairness.Fairness.model_validate(_fair(400, 380, 10, 20)).unfair  # exactly 5 %: fair
    assert fairness.Fairness.model_validate(_fair(400, 379, 10, 21)).unfair


def _run(tmp_path: Path) -> tuple[object, aggregate.RunResults]:
    store = Store(tmp_path / "r.db")
    rid = store.new_run({}, {})
    for rep in (1, 2, 3):
        # two fair rows and one bounded pool, all three saturating the client; the pool's timeouts
        # are 0.06 % of its requests: clean by the error rule, unfair by the fairness rule
        for server, rps in (("c-epoll", 150_000.0 + rep), ("rust-tokio", 149_000.0 + rep),
                            ("java-threadpool", 151_000.0 + rep)):
            n = int(rps * 5)
            pool = server == "java-threadpool"
            store.record_cell(rid, _cell(server, rep, kind="throughput", rps=rps, requests=n, ok=n - (336 if pool else 0),
                                         errors=336 if pool else 0, timeouts=336 if pool else 0,
                                         client_saturated=True, warmup_steady=True,
                                         fairness=_fair(400, 64, n // 64, 336) if pool else _fair(400, 400, n // 400, 0)))
    return store.run(rid), aggregate.load(store, rid)[1]


def test_an_unfair_pool_ranks_after_the_fair_rows_and_says_how_many_it_served(tmp_path: Path) -> None:
    run, results = _run(tmp_path)
    [pt] = results.workloads[0].points
    assert [g.server for g in pt.groups][-1] == "java-threadpool"
    pool = pt.groups[-1]
    assert pool.unfair and not pool.degraded and not pool.client_bound_group and not pool.tied_with_leader
    assert {g.server for g in pt.groups if g.client_bound_group} == {"c-epoll", "rust-tokio"}
    assert "java-threadpool" not in pt.glance.verdict
    md = to_markdown.render(run, results).decode()
    assert "64 of 400, Jain 0.16 — unfair" in md
    assert "unfair — served 64 of 400 connections" in md
    csv = to_csv.render(run, results).decode().splitlines()
    head = csv[0].split(",")
    row = dict(zip(head, next(r for r in csv if ",java-threadpool," in r).split(",")))
    assert (row["slots"], row["slots_served"], row["unfair"]) == ("400", "64", "True")


def test_the_first_two_rows_differing_in_fairness_name_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    rid = store.new_run({}, {})
    for rep in (1, 2, 3):
        store.record_cell(rid, _cell("fair", rep, kind="throughput", rps=1000.0, requests=5000, ok=5000, errors=0,
                                     fairness=_fair(400, 400, 12, 0)))
        store.record_cell(rid, _cell("pool", rep, kind="throughput", rps=9000.0, requests=45000, ok=44990, errors=10,
                                     fairness=_fair(400, 64, 700, 336)))
    [pt] = aggregate.load(store, rid)[1].workloads[0].points
    assert [g.server for g in pt.groups] == ["fair", "pool"]
    assert pt.glance.verdict == "fair first: pool served 64 of 400 connections" and pt.glance.decided


def _with_fixed_rate(tmp_path: Path, cpu: dict[str, list[float]]) -> aggregate.PointData:
    store = Store(tmp_path / "f.db")
    rid = store.new_run({}, {})
    for rep in (1, 2, 3):
        for server in cpu:
            n = 750_000
            store.record_cell(rid, _cell(server, rep, kind="throughput", rps=150_000.0 + rep, requests=n, ok=n,
                                         errors=0, client_saturated=True, warmup_steady=True,
                                         fairness=_fair(400, 400, n // 400, 0)))
            ok = 600_000
            store.record_cell(rid, _cell(server, rep, point="c=400 at a fixed rate", kind="throughput",
                                         fixed_rate_of="c=400", target_rate=120_000.0, rps=119_990.0, requests=ok,
                                         ok=ok, errors=0, p99_us=800.0, cpu_user_s=ok * cpu[server][rep - 1] * 0.4e-6,
                                         cpu_sys_s=ok * cpu[server][rep - 1] * 0.6e-6))
    results = aggregate.load(store, rid)[1]
    return next(p for p in results.workloads[0].points if p.label == "c=400")


def test_the_fixed_rate_step_orders_the_client_bound_block_by_cpu_per_request(tmp_path: Path) -> None:
    pt = _with_fixed_rate(tmp_path, {"c-epoll": [4.0, 4.1, 3.9], "rust-tokio": [5.0, 5.1, 4.9]})
    assert pt.efficiency is not None and pt.efficiency.kind == "efficiency"
    assert [g.server for g in pt.efficiency.groups] == ["c-epoll", "rust-tokio"]
    v = pt.glance.verdict
    assert "limited by the load generator" in v and "at 120,000 req/s" in v
    assert v.index("c-epoll 4.00 µs") < v.index("rust-tokio 5.00")
    assert "c-epoll leads beyond that figure's noise" in v and pt.glance.decided
    assert pt.efficiency.groups[0].figures.projected_rps == pytest.approx(250_000.0)


def test_the_fixed_rate_step_names_no_leader_within_its_noise(tmp_path: Path) -> None:
    pt = _with_fixed_rate(tmp_path, {"c-epoll": [4.0, 4.6, 3.8], "rust-tokio": [4.2, 3.9, 4.5]})
    assert "are tied within that figure's noise" in pt.glance.verdict and not pt.glance.decided


def _fake_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repeat: int) -> tuple[Store, Any, dict]:
    """py-ok on the fake loadgen with workload tp: (store, options of `repeat` repetitions, run_matrix's
    keywords but order_blocks)."""
    import os
    import sys
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
    import runfix
    from serverbench.catalog import manifests as catalog, workloads as wl
    from serverbench.model import RunOptions
    from test_ranking import THROUGHPUT
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_MAX_S", "0.5")
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "tp.toml").write_text(THROUGHPUT)
    cat = catalog.load_catalog(runfix.SERVERS)
    cpus = sorted(os.sched_getaffinity(0))
    opts = RunOptions(servers=["py-ok"], workloads=["tp"], repeat=repeat, allow_unverified=True,
                      server_cpus=[cpus[0]], client_cpus=[cpus[-1]])
    kw = dict(manifests=[cat.servers["py-ok"]], workloads=[wl.load_workloads(tmp_path / "w")["tp"]], fingerprint={})
    return Store(tmp_path / "r.db"), opts, kw


def test_the_runner_measures_each_block_again_at_one_fixed_rate_and_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from serverbench.run import fixed_rate, runner
    store, opts, base = _fake_run(tmp_path, monkeypatch, repeat=2)
    asked: list[int] = []

    def finder(cells: list[CellRecord]) -> list[fixed_rate.FixedRatePlan]:
        asked.append(len(cells))  # the step reads the plan's stored cells
        return [fixed_rate.FixedRatePlan("tp", "c=2", ("py-ok",), 500.0)]
    kw = dict(base, order_blocks=finder)
    res = runner.run_matrix(store, opts, **kw)
    fixed = [c for c in store.cells(res.run_id) if c.metrics.fixed_rate_of]
    # the step reads the cells after the first repetition (then plans rep 2's point into the row's own
    # start) and after the plan (the rest: the first repetition's, in a start of its own)
    assert asked == [1, 3]
    assert sorted(c.repetition for c in fixed) == [1, 2]
    by_rep = {c.repetition: c for c in fixed}
    assert by_rep[1].metrics.timing.server_start_s is not None  # a start of its own: its first point
    assert by_rep[2].metrics.timing.server_start_s is None  # after c=2 in the row's own start
    assert by_rep[2].metrics.warmup.warmup_steady is None  # not warmed to steady again: the start is warm
    assert {c.point for c in fixed} == {"c=2 at a fixed rate"} and all(c.status == "ok" for c in fixed)
    assert all(c.metrics.offered.target_rate == 500.0 and c.metrics.fixed_rate_of == "c=2" for c in fixed)
    assert all(c.loadgen.config.get("mode") == "open" for c in fixed)
    # a resumed run measures nothing twice
    store.reopen_run(res.run_id)
    again = runner.run_matrix(store, opts, resume=res.run_id, **kw)
    assert len([c for c in store.cells(again.run_id) if c.metrics.fixed_rate_of]) == 2


def test_a_rate_lowered_by_a_later_plan_measures_the_earlier_cells_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After repetition 2 the plan needs a lower rate (a slower row joined): repetition 2's in-start cell,
    measured at the first rate, is measured again at the new one; every stored fixed-rate cell ends at it."""
    from serverbench.run import fixed_rate, runner
    store, opts, kw = _fake_run(tmp_path, monkeypatch, repeat=3)
    rates = [500.0, 300.0, 300.0]  # after rep 1, after rep 2, at the end

    def finder(cells: list[CellRecord]) -> list[fixed_rate.FixedRatePlan]:
        return [fixed_rate.FixedRatePlan("tp", "c=2", ("py-ok",), rates.pop(0))]
    res = runner.run_matrix(store, opts, order_blocks=finder, **kw)
    fixed = {c.repetition: c for c in store.cells(res.run_id) if c.metrics.fixed_rate_of}
    assert sorted(fixed) == [1, 2, 3] and rates == []
    assert {r: c.metrics.offered.target_rate for r, c in fixed.items()} == {1: 300.0, 2: 300.0, 3: 300.0}
    assert fixed[3].metrics.timing.server_start_s is None  # rep 3: in its own start, at the new rate
    assert fixed[2].metrics.timing.server_start_s is not None  # rep 2: measured again, a start of its own


def test_a_near_row_measures_in_its_own_starts_and_gets_no_start_of_its_own_outside_the_final_tie(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After repetition 1 the row is near the tie (plan.near): repetitions 2 and 3 measure the fixed-rate
    point in its own starts; at the end it is not in the tie, so repetition 1's is not measured in a start
    of its own, and the stored cells stay (the aggregation names them, tests/test_fixed_rate_tie.py)."""
    from serverbench.run import fixed_rate, runner
    store, opts, kw = _fake_run(tmp_path, monkeypatch, repeat=3)
    plans = [[fixed_rate.FixedRatePlan("tp", "c=2", (), 400.0, ("py-ok",), 900.0)]] * 2 + [[]]

    def finder(cells: list[CellRecord]) -> list[fixed_rate.FixedRatePlan]:
        return plans.pop(0)
    res = runner.run_matrix(store, opts, order_blocks=finder, **kw)
    fixed = {c.repetition: c for c in store.cells(res.run_id) if c.metrics.fixed_rate_of}
    assert plans == [] and sorted(fixed) == [2, 3]
    assert all(c.metrics.timing.server_start_s is None and c.metrics.offered.target_rate == 400.0
               for c in fixed.values())


def test_sessions_are_not_judged_for_fairness() -> None:
    """A ramp's users that have not arrived yet count as waiting in loadgen's figures: not a finding."""
    from serverbench.model import LoadgenReport
    report = LoadgenReport.model_validate({"schema": "loadgen/1", "config": {"mode": "sessions"},
                                           "summary": {"requests": 1, "responses": 1, "ok": 1, "errors": 0,
                                                       "rps": 1.0, "latency_us": {}}})
    cell = _cell("ramped", 1, kind="fixed-load", fairness=_fair(400, 100, 10, 300))
    cell.loadgen = report
    assert fairness.of([cell]) == [] and not fairness.unfair([cell])
    closed = _cell("closed", 1, kind="throughput", fairness=_fair(400, 100, 10, 300))
    assert fairness.unfair([closed])
