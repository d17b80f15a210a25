"""The published studies as data (seeds/*.toml) and their tables beside a stored run
(serverbench/seeds): the loader's one-line refusals, the pairs' arithmetic, Kendall's tau-b, and
each flip's cause only where a published or stored figure shows it."""
import math
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from serverbench import paths
from serverbench.seeds import compare as sc
from serverbench.seeds import section
from serverbench.seeds.studies import SeedsError, Study, load_all, load_file

ROOT = Path(__file__).resolve().parent.parent


def _g(server: str, rps: float | None, p50: float | None = None, share: float | None = None,
       steady: float | None = None) -> NS:
    return NS(server=server, throughput=NS(median=rps) if rps is not None else None, latency={"p50": p50},
              figures=NS(warmup=NS(first_second_share=share, steady_s=steady)))


def _results(workload: str, point: str, groups: list) -> NS:
    return NS(workloads=[NS(name=workload, points=[NS(label=point, groups=groups)])])


def _study(**over) -> Study:
    data = {
        "id": "toy", "title": "Toy study", "hardware": "a laptop", "method": "wrk, 30 s", "versions": {"x": "1"},
        "caveats": [], "columns": ["requests/s", "errors"],
        "errors": {"column": "errors", "rate_column": "requests/s", "duration_s": 30},
        "compare": [{"column": "requests/s", "ours": "requests/s", "better": "higher", "workload": "w",
                     "points": ["full", "quick"]}],
        "row": [{"name": "A", "figures": {"requests/s": 100, "errors": 0}, "maps_to": ["a"]},
                {"name": "B", "figures": {"requests/s": 50, "errors": 1}, "maps_to": ["b"]},
                {"name": "C", "figures": {"requests/s": 10, "errors": 400}, "maps_to": ["c"]},
                {"name": "D", "figures": {"requests/s": [5, 6]}, "maps_to": ["d1", "d2"]},
                {"name": "E", "figures": {"requests/s": 1}, "maps_to": [], "note": "no row here"}]}
    return Study.model_validate({**data, **over})


def test_every_seeds_file_loads_and_maps_only_to_rows_that_exist() -> None:
    studies = load_all()
    assert sorted(s.id for s in studies) == ["deepu", "locust", "prantl", "stressgrid"]
    for s in studies:
        for r in s.row:
            for sid in r.maps_to:
                assert (paths.SERVERS / sid / "server.toml").is_file(), f"{s.id}: {r.name} → {sid}"
            assert r.maps_to or r.note or r.left_out, f"{s.id}: {r.name} maps to none without saying why"
        for c in s.compare:
            assert (ROOT / "workloads" / f"{c.workload}.toml").is_file(), c.workload


def test_a_broken_file_is_refused_with_one_line_naming_file_field_and_fix(tmp_path: Path) -> None:
    good = (ROOT / "seeds" / "locust.toml").read_text()
    cases = {
        "no_hardware": (good.replace('hardware = "', 'old_hardware = "'), "hardware"),
        "bad_id": (good, "id"),
        "ghost_row": (good.replace('maps_to = ["go-nethttp"]', 'maps_to = ["go-ghost"]'), "row.0.maps_to"),
        "silent_none": (good.replace('maps_to = ["go-nethttp"]', "maps_to = []"), "note"),
        "not_toml": ("id = ", "not TOML"),
    }
    for name, (text, field) in cases.items():
        (tmp_path / name).mkdir()
        p = tmp_path / name / ("bad_id.toml" if name == "bad_id" else "locust.toml")
        p.write_text(text)
        with pytest.raises(SeedsError) as e:
            load_file(p)
        msg = str(e.value)
        assert "\n" not in msg and str(p) in msg and field in msg and "; fix: " in msg, msg


def test_pairs_kept_flipped_unordered_and_kendall_tau_b_exactly() -> None:
    groups = [_g("a", 90), _g("b", 95), _g("c", 200), _g("d1", 1), _g("d2", 2), _g("unmapped", 1e9)]
    [c] = sc.comparisons([_study()], _results("w", "quick", groups))
    assert c.point == "quick"
    assert [e.server for e in c.entries] == ["a", "b", "c", "d1", "d2"]
    assert sorted((b.server, w.server) for b, w in c.kept) == [
        ("a", "d1"), ("a", "d2"), ("b", "d1"), ("b", "d2"), ("c", "d1"), ("c", "d2")]
    assert sorted((f.study_better.server, f.study_worse.server) for f in c.flips) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert [(a.server, b.server, side) for a, b, side in c.unordered] == [("d1", "d2", "the study")]
    # 10 pairs, 1 tied in the study, none here: (6 - 3) / sqrt(9 × 10)
    assert c.tau == pytest.approx(3 / math.sqrt(90), abs=1e-12)
    assert section.agreement(c) == ("Of 10 pairs, 6 keep their order, 3 flip, 1 are not ordered by the study and "
                                    "0 not by this run; Kendall's tau-b +0.32.")


def test_a_flip_gets_a_cause_only_with_its_figure_else_unexplained() -> None:
    groups = [_g("a", 90), _g("b", 95), _g("c", 200), _g("d1", 1), _g("d2", 2)]
    [c] = sc.comparisons([_study()], _results("w", "full", groups))
    causes = {(f.study_better.server, f.study_worse.server): f.causes for f in c.flips}
    keepalive = ("broken keep-alive in the study: its C row had 400 socket errors against about 300 requests "
                 "(10 req/s × 30 s)")
    assert causes[("a", "c")] == causes[("b", "c")] == [keepalive]
    # B's single error is nowhere near its 1,500 requests, and no warm-up was stored: no cause
    assert causes[("a", "b")] == [sc.UNEXPLAINED]


def test_cold_only_from_a_stored_ramp_and_a_method_without_warm_up() -> None:
    ramp = [_g("a", 90), _g("b", 95, share=0.2, steady=9)]
    [c] = sc.comparisons([_study()], _results("w", "full", ramp))
    assert c.flips[0].causes == ["measured cold: here b reached a steady rate after 9 s of load, its first second "
                                 "at 20% of it, and the published method names no warm-up"]
    [warm] = sc.comparisons([_study(warmup="a 60 s ramp")], _results("w", "full", ramp))
    assert warm.flips[0].causes == [sc.UNEXPLAINED]
    flat = [_g("a", 90), _g("b", 95, share=0.8, steady=6)]
    assert sc.comparisons([_study()], _results("w", "full", flat))[0].flips[0].causes == [sc.UNEXPLAINED]


def test_client_bound_only_for_the_row_at_the_stated_ceiling() -> None:
    study = _study(client_ceiling={"column": "requests/s", "value": 52})
    [c] = sc.comparisons([study], _results("w", "full", [_g("a", 90), _g("b", 95)]))
    assert c.flips[0].causes == ["client-bound study: its B row's 50 requests/s is at the ceiling the study gives "
                                 "its client (near 52)"]
    far = _study(client_ceiling={"column": "requests/s", "value": 1000})
    assert sc.comparisons([far], _results("w", "full", [_g("a", 90), _g("b", 95)]))[0].flips[0].causes == [
        sc.UNEXPLAINED]


def test_the_real_prantl_table_beside_a_run() -> None:
    prantl = next(s for s in load_all() if s.id == "prantl")
    groups = [_g("c-epoll", 50_000), _g("crystal", 30_000), _g("nginx-lua", 40_000), _g("cpp-asio", 60_000),
              _g("go-tcp", 70_000)]
    [c] = sc.comparisons([prantl], _results("prantl-wrk", "c=400", groups))
    # go-tcp is no counterpart of the study's go row: left out
    assert sorted(e.server for e in c.entries) == ["c-epoll", "cpp-asio", "crystal", "nginx-lua"]
    # study: cpp 93,477 > crystal 83,469 > openresty 55,108 > c 381; here cpp > c > openresty > crystal
    assert (len(c.kept), len(c.flips), len(c.unordered)) == (3, 3, 0)
    assert c.tau == pytest.approx(0.0)
    causes = {(f.study_better.server, f.study_worse.server): f.causes for f in c.flips}
    assert causes[("crystal", "c-epoll")] == [
        "broken keep-alive in the study: its c row had 17,720 socket errors against about 11,430 requests "
        "(381 req/s × 30 s)"]
    assert causes[("crystal", "nginx-lua")] == [sc.UNEXPLAINED]


def test_the_report_section_only_when_the_run_measured_a_study_workload() -> None:
    run = NS(id=7, fingerprint={"cpu_model": "Test CPU", "cores": 2, "kernel": "6.1",
                                "servers": {"c-epoll": {"version": "gcc 12"}}})
    studies = load_all()
    assert section.markdown(run, _results("tfb-json", "c=64", [_g("c-epoll", 1)]), studies) == []
    text = "\n".join(section.markdown(run, _results("prantl-wrk", "c=400", [_g("c-epoll", 5), _g("crystal", 4)]),
                                      studies))
    assert "## The published studies, re-measured" in text and "#### requests/s beside prantl-wrk · c=400" in text
    assert "| c | 13 | 381 | c-epoll | gcc 12 | 5 |" in text
    assert "Stressgrid" not in text  # not measured in this run: left out of the report
    everything = "\n".join(section.markdown(run, _results("tfb-json", "c=64", []), studies, everything=True))
    assert "Published as charts only" in everything and "stressgrid-overload (not measured in this run)" in everything


def test_two_rates_within_this_runs_noise_are_not_ordered_by_this_run() -> None:
    from serverbench.results.stats import summarize
    a = NS(server="a", throughput=summarize([773, 760, 790]), latency={}, figures=NS(warmup=None))
    b = NS(server="b", throughput=summarize([774, 765, 780]), latency={}, figures=NS(warmup=None))
    [c] = sc.comparisons([_study()], _results("w", "full", [a, b]))
    # published A 100 > B 50; here B's median is higher, but within the noise: not a flip
    assert (len(c.kept), len(c.flips), [side for *_, side in c.unordered]) == (0, 0, ["this run"])
    far = NS(server="b", throughput=summarize([1500, 1490, 1510]), latency={}, figures=NS(warmup=None))
    [c2] = sc.comparisons([_study()], _results("w", "full", [a, far]))
    assert len(c2.flips) == 1 and not c2.unordered
