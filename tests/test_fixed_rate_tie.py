"""The fixed-rate step also orders a tie at the top: rows whose requests/s are within the repetitions'
noise of the first row (no client-bound block) are measured again at one common rate and told apart
by server CPU per request."""
from __future__ import annotations

from pathlib import Path

from serverbench.model import CellRecord
from serverbench.results import aggregate
from serverbench.store import Store

N = 600_000


def _cell(server: str, rep: int, point: str = "c=400", **m) -> CellRecord:
    return CellRecord(server, "w", point, rep, "ok", metrics=m)


def _closed(server: str, rep: int, rps: float, **extra) -> CellRecord:
    return _cell(server, rep, kind="throughput", rps=rps, requests=N, ok=N, errors=0, client_saturated=False,
                 warmup_steady=True, **extra)


def _store(tmp_path: Path, rates: dict[str, list[float]], cpu: dict[str, list[float]] | None = None) -> tuple:
    store = Store(tmp_path / "t.db")
    rid = store.new_run({}, {})
    for rep in (1, 2, 3):
        for server, rs in rates.items():
            store.record_cell(rid, _closed(server, rep, rs[rep - 1]))
            if cpu and server in cpu:
                us = cpu[server][rep - 1]
                store.record_cell(rid, _cell(server, rep, point="c=400 at a fixed rate", kind="throughput",
                                             fixed_rate_of="c=400", target_rate=80_000.0, rps=79_990.0,
                                             requests=N, ok=N, errors=0, p99_us=900.0,
                                             cpu_user_s=N * us * 0.5e-6, cpu_sys_s=N * us * 0.5e-6))
    return store, rid


TIED = {"a": [100_000.0, 120_000.0, 110_000.0], "b": [105_000.0, 115_000.0, 100_000.0],
        "slow": [50_000.0, 51_000.0, 49_000.0]}


def test_a_tie_at_the_top_is_planned_for_the_fixed_rate_step(tmp_path: Path) -> None:
    store, rid = _store(tmp_path, TIED)
    [plan] = aggregate.fixed_rate_plans(store.cells(rid))
    assert plan.servers == ("a", "b") and plan.point == "c=400"
    assert plan.rate == 0.8 * 105_000.0  # FIXED_RATE_SHARE of the lowest median among the tied rows


def test_the_rate_is_one_a_row_near_the_tie_holds_too(tmp_path: Path) -> None:
    """A clean row up to FIXED_RATE_NEAR (25 %) below the tie's lowest member may join it in a later
    repetition: the rate is chosen for it too, so the cells measured early are not measured again."""
    near = {**TIED, "near": [85_000.0, 84_000.0, 86_000.0]}  # 19 % below b's 105,000: outside the tie
    store, rid = _store(tmp_path, near)
    [plan] = aggregate.fixed_rate_plans(store.cells(rid))
    assert plan.servers == ("a", "b") and plan.rate == 0.8 * 85_000.0
    far = {**TIED, "far": [75_000.0, 76_000.0, 74_000.0]}  # 28 % below: not a candidate
    store, rid = _store(tmp_path / "far", far)
    assert aggregate.fixed_rate_plans(store.cells(rid))[0].rate == 0.8 * 105_000.0


def test_a_first_row_ahead_beyond_noise_plans_nothing(tmp_path: Path) -> None:
    store, rid = _store(tmp_path, {"a": [200_000.0, 201_000.0, 199_000.0], **{k: TIED[k] for k in ("b", "slow")}})
    assert aggregate.fixed_rate_plans(store.cells(rid)) == []


def test_the_tie_verdict_reads_the_fixed_rate_order(tmp_path: Path) -> None:
    store, rid = _store(tmp_path, TIED, cpu={"a": [6.0, 6.1, 5.9], "b": [4.0, 4.1, 3.9]})
    pt = next(p for p in aggregate.load(store, rid)[1].workloads[0].points if p.label == "c=400")
    v = pt.glance.verdict
    assert v.startswith("no single leader: ") and "a and b are tied" in v, v
    assert "at 80,000 req/s each row used" in v and v.index("b 4.00 µs") < v.index("a 6.00"), v
    assert "b leads beyond that figure's noise" in v and pt.glance.decided


def test_a_tie_without_the_step_stays_a_tie(tmp_path: Path) -> None:
    store, rid = _store(tmp_path, TIED)
    pt = aggregate.load(store, rid)[1].workloads[0].points[0]
    assert "are tied" in pt.glance.verdict and "fixed rate" not in pt.glance.verdict and not pt.glance.decided


def _noisy_group(tmp_path: Path, cpu_us: list[float]):
    store = Store(tmp_path / "n.db")
    rid = store.new_run({}, {})
    for rep, (rps, us) in enumerate(zip([100_000.0, 130_000.0, 80_000.0], cpu_us), 1):
        store.record_cell(rid, _closed("row", rep, rps, cpu_user_s=N * us * 0.5e-6, cpu_sys_s=N * us * 0.5e-6))
    [g] = aggregate.load(store, rid)[1].groups
    return next(w for w in g.warnings if w.kind == "noisy").text


def test_a_noisy_row_says_whether_its_cpu_per_request_moved_with_its_rate(tmp_path: Path) -> None:
    """The same requests costing more or less CPU (the machine's speed) vs a steady cost per request."""
    moved = _noisy_group(tmp_path / "a", [10.0, 7.7, 12.5])
    assert "server CPU per request varied as much (CV" in moved and "bench/machine_noise.py" in moved, moved
    steady = _noisy_group(tmp_path / "b", [10.0, 10.1, 9.9])
    assert "server CPU per request was steadier (CV 1.0%)" in steady, steady


def test_in_start_points_keep_the_first_plans_rate_and_follow_their_closed_point() -> None:
    """Issue 49: the step's point is measured right after the closed point in a planned row's own start,
    at one rate per point for the whole run (the first plan's while every member can hold it: at most
    FIXED_RATE_KEPT of each one's median), rows planned later added."""
    from serverbench.catalog.workloads import Point
    from serverbench.model import FixedRatePlan
    from serverbench.run import fixed_rate
    seen: list[list] = [[FixedRatePlan("w", "c=400", ("a", "b"), 100_000.0)],
                        [FixedRatePlan("w", "c=400", ("a", "c"), 90_000.0)]]
    ins = fixed_rate.InStart()
    ins.finder = lambda cells: seen.pop(0)
    ins.predict([])
    ins.predict([])
    plan = ins.plans[("w", "c=400")]
    # c's plan (90,000: 0.8 of a median of 112,500) can still hold 100,000 (under 0.9 of it): kept
    assert (plan.servers, plan.rate) == (("a", "b", "c"), 100_000.0)
    # d serves 100,000 (a plan of 80,000): it cannot hold 100,000, so the rate falls for every member
    assert ins.settle([FixedRatePlan("w", "c=400", ("d",), 80_000.0)])[0] == FixedRatePlan(
        "w", "c=400", ("a", "b", "c", "d"), 80_000.0)
    closed = Point(label="c=400", mode="closed", connections=400, duration="5s")
    other = Point(label="c=64", mode="closed", connections=64, duration="5s")
    got = ins.extend(2, "a", "w", [closed, other], set())
    assert [p.label for p in got] == ["c=400", "c=400 at a fixed rate", "c=64"]
    assert got[1].mode == "open" and got[1].rate == 100_000.0
    assert fixed_rate.of_label(got[1].label) == {"fixed_rate_of": "c=400"} and fixed_rate.of_label("c=64") == {}
    assert [p.label for p in ins.extend(2, "z", "w", [closed], set())] == ["c=400"]  # not planned
    done = {("a", "w", "c=400 at a fixed rate", 2)}
    assert [p.label for p in ins.extend(2, "a", "w", [closed], done)] == ["c=400"]  # measured already


def test_near_rows_measure_in_their_own_starts_and_only_the_final_tie_gets_starts_of_its_own() -> None:
    """A row near the tie (the plan's `near`: the rate was chosen for it too) measures the fixed-rate point
    in its own starts from the repetition after the plan, on the chance that it joins; at the end only the
    final tie's rows are planned for starts of their own, at the rate the stored cells used while every
    member holds it. A row that left the tie, and a point whose tie dissolved, get none."""
    from serverbench.catalog.workloads import Point
    from serverbench.model import FixedRatePlan
    from serverbench.run import fixed_rate
    seen: list[list] = [[FixedRatePlan("w", "c=400", ("a", "b"), 80_000.0, ("n",))],
                        [FixedRatePlan("w", "c=400", ("a", "n"), 60_000.0, ("m",), 95_000.0),
                         FixedRatePlan("w", "c=64", ("c", "d"), 50_000.0)]]
    ins = fixed_rate.InStart()
    ins.finder = lambda cells: seen.pop(0)
    ins.predict([])
    closed = Point(label="c=400", mode="closed", connections=400, duration="5s")
    assert [p.label for p in ins.extend(2, "n", "w", [closed], set())] == ["c=400", "c=400 at a fixed rate"]
    assert [p.label for p in ins.extend(2, "m", "w", [closed], set())] == ["c=400"]  # not near yet
    ins.predict([])
    # merged: b stays planned in-start (it measured already), n joined, m is near now; the rate stays while
    # the members hold it (80,000 under 0.9 of their lowest median, 95,000), whatever a near row's plan says
    assert ins.plans[("w", "c=400")] == FixedRatePlan("w", "c=400", ("a", "b", "n"), 80_000.0, ("m",), 95_000.0)
    assert ins.extend(3, "m", "w", [closed], set())[1].rate == 80_000.0
    # the end: the finder's final tie only, at the rate the in-start cells used; no repetition is left to
    # come, so its members' lowest median (floor) decides whether they hold it, not the near rows' (a plan
    # of 64,000 from a near row at 80,000 would have lowered it)
    final = [FixedRatePlan("w", "c=400", ("a", "n"), 64_000.0, ("b", "m"), 95_000.0)]
    assert ins.final(final, []) == [FixedRatePlan("w", "c=400", ("a", "n"), 80_000.0, ("b", "m"), 95_000.0)]
    # a resumed run has no plan in memory: the stored cells' rate; a final tie that cannot hold it: its own
    fixed = _cell("a", 2, point="c=400 at a fixed rate", fixed_rate_of="c=400", target_rate=80_000.0)
    assert fixed_rate.InStart().final(final, [fixed])[0].rate == 80_000.0
    low = FixedRatePlan("w", "c=400", ("a", "n"), 60_000.0, (), 75_000.0)  # 80,000 > 0.9 of 75,000
    assert ins.final([low], [])[0].rate == 60_000.0
    assert ins.final([], []) == []  # every tie dissolved: no starts of their own


def test_rows_measured_at_the_rate_outside_the_final_tie_are_named_not_ranked(tmp_path: Path) -> None:
    """The fixed-rate point ranks the final tie's rows only; a near row that measured the point in its own
    starts and never joined is named beside it (its cells stay stored)."""
    rates = {**TIED, "near": [85_000.0, 84_000.0, 86_000.0]}
    store, rid = _store(tmp_path, rates, cpu={"a": [6.0, 6.1, 5.9], "b": [4.0, 4.1, 3.9], "near": [1.0, 1.1, 0.9]})
    _, res = aggregate.load(store, rid)
    base, eff = res.workloads[0].points
    assert eff.label == "c=400 at a fixed rate" and base.efficiency is eff
    assert [g.server for g in eff.groups] == ["b", "a"] and eff.outside == ["near"]
    assert "near" not in base.glance.verdict.split(";", 1)[1] and "b leads beyond" in base.glance.verdict
    assert eff.outside_text.endswith("(not ranked here): near")
    assert len([c for c in store.cells(rid) if c.server == "near" and c.metrics.fixed_rate_of]) == 3
    from serverbench.exporters import to_markdown
    assert f"{eff.outside_text}." in to_markdown.render(*aggregate.load(store, rid)).decode()


def test_cells_at_a_rate_since_lowered_are_measured_again() -> None:
    """A row that joined the tie later lowered the rate: the fixed-rate cells measured at the old one are
    not done (fixed_rate.stale), so the step measures them again at the plan's rate; the closed cells and
    those at the plan's rate stay done."""
    from serverbench.model import FixedRatePlan
    from serverbench.run import fixed_rate
    def fixed(server: str, rep: int, rate: float) -> CellRecord:
        return _cell(server, rep, point="c=400 at a fixed rate", kind="efficiency", fixed_rate_of="c=400",
                     target_rate=rate)
    cells = [_closed("a", 2, 150_000.0), fixed("a", 2, 118_383.0), fixed("b", 2, 80_000.0), fixed("a", 3, 80_000.0)]
    plans = [FixedRatePlan("w", "c=400", ("a", "b", "d"), 80_000.0)]
    assert fixed_rate.stale(cells, plans) == {("a", "w", "c=400 at a fixed rate", 2)}
    assert fixed_rate.stale(cells, [FixedRatePlan("w", "c=400", ("a", "b"), 118_383.0)]) == {
        ("b", "w", "c=400 at a fixed rate", 2), ("a", "w", "c=400 at a fixed rate", 3)}
    assert fixed_rate.stale(cells, []) == set()
