"""workloads.py: parsing, validation messages, sizes, includes, loadgen argument mapping."""
from pathlib import Path

import pytest

from serverbench import paths
from serverbench.catalog.workloads import Point, WorkloadError, load_workload, load_workloads, parse_duration, select

GOOD = """
name = "{name}"
description = "test"
origin = "serverbench"
kind = "throughput"
path = "/json"
[quick]
warmup = "1s"
[[quick.points]]
label = "c=4"
connections = 4
duration = "2s"
[full]
[[full.points]]
label = "c=4"
connections = 4
duration = "30s"
"""


def write(tmp: Path, name: str, text: str) -> Path:
    f = tmp / f"{name}.toml"
    f.write_text(text)
    return f


def test_parse_duration() -> None:
    assert parse_duration("10s") == 10.0
    assert parse_duration("500ms") == 0.5
    assert parse_duration("2m") == 120.0
    assert parse_duration("1.5s") == 1.5
    assert parse_duration(3) == 3.0
    for bad in ("10", "ten s", "5 sec", "-1s", ""):
        with pytest.raises(ValueError, match="bad duration"):
            parse_duration(bad)


def test_repo_workloads_are_valid_and_quick_set_is_small() -> None:
    errors: list[str] = []
    ws = load_workloads(paths.WORKLOADS, errors=errors)
    assert errors == []
    expected = {"deepu-ab", "deepu-ab-nosleep", "deepu-wrk", "deepu-drill", "prantl-wrk", "stressgrid",
                "locust-users", "tfb-plaintext", "tfb-json", "sweep", "capacity", "latency-at-rate", "quick"}
    assert expected <= set(ws)
    for w in ws.values():
        if w.includes:
            continue
        # behaviour over time, and noise beside a quiet twin, need time: run only when asked (-w)
        if w.kind in ("overload", "soak", "noisy", "db-outage"):
            assert w.size(False).planned_seconds() <= 75, w.name
        else:
            assert w.size(False).planned_seconds() <= 15, w.name  # ~10 s per server
        assert w.size(True).planned_seconds() >= w.size(False).planned_seconds(), w.name
        for p in w.size(True).points + w.size(False).points:
            assert (p.users or 0) < 20000 and (p.connections or 0) < 20000  # open-files limit
            assert (p.max_connections or p.connections or 0) + (p.noise_connections or 0) < 20000
    quick = select(ws, ["quick"])
    assert [w.name for w in quick] == ["prantl-wrk", "latency-at-rate", "stressgrid"]
    assert {"stressgrid-overload", "soak", "noisy"} <= set(ws)
    assert not {w.kind for w in quick} & {"overload", "soak", "noisy"}
    assert sum(w.size(False).planned_seconds() for w in quick) <= 35
    assert [p.connections for p in ws["sweep"].size(False).points] == [1, 4, 16, 64, 256, 1024]
    assert ws["deepu-ab"].size(True).points[0].requests == 10000
    assert ws["deepu-drill"].size(True).points[1].connections == 2000


def test_size_picks_quick_or_full(tmp_path: Path) -> None:
    w = load_workload(write(tmp_path, "a", GOOD.format(name="a")))
    assert w.size(False).points[0].duration == "2s"
    assert w.size(True).points[0].duration == "30s"
    assert w.size(False).planned_seconds() == 3.0


@pytest.mark.parametrize("patch, field, fix", [
    (('duration = "2s"', 'duration = "2 sec"'), "quick.points.0.duration", "bad duration"),
    (('connections = 4\nduration = "2s"', 'connections = 4'), "quick.points.0", "needs duration or requests"),
    (('label = "c=4"\nconnections = 4\nduration = "2s"', 'label = "c=4"\nmode = "turbo"\nduration = "2s"'),
     "quick.points.0.mode", "closed"),
    (('origin = "serverbench"', 'origin = "serverbench"\ncolour = "red"'), "colour", "Extra inputs"),
    (('[full]\n[[full.points]]\nlabel = "c=4"\nconnections = 4\nduration = "30s"\n', ''), "(top level)",
     "needs both"),
])
def test_validation_errors_are_one_line_naming_file_and_field(tmp_path: Path, patch, field, fix) -> None:
    text = GOOD.format(name="bad").replace(*patch)
    assert text != GOOD.format(name="bad")
    f = write(tmp_path, "bad", text)
    with pytest.raises(WorkloadError) as e:
        load_workload(f)
    msg = str(e.value)
    assert "\n" not in msg and str(f) in msg and field in msg and fix in msg


def test_name_must_match_file_and_errors_collected(tmp_path: Path) -> None:
    write(tmp_path, "good", GOOD.format(name="good"))
    write(tmp_path, "other", GOOD.format(name="renamed"))
    write(tmp_path, "broken", "name = [")
    errors: list[str] = []
    ws = load_workloads(tmp_path, errors=errors)
    assert set(ws) == {"good"}
    assert any("must equal the file name" in e for e in errors)
    assert any("invalid TOML" in e for e in errors)
    with pytest.raises(WorkloadError):
        load_workloads(tmp_path)


def test_includes(tmp_path: Path) -> None:
    write(tmp_path, "a", GOOD.format(name="a"))
    write(tmp_path, "b", GOOD.format(name="b"))
    write(tmp_path, "set", 'name = "set"\ndescription = "x"\norigin = "o"\nincludes = ["b", "a"]\n')
    ws = load_workloads(tmp_path)
    assert [w.name for w in select(ws, ["set", "a"])] == ["b", "a"]
    with pytest.raises(WorkloadError, match="only includes"):
        ws["set"].size(False)
    write(tmp_path, "set", 'name = "set"\ndescription = "x"\norigin = "o"\nincludes = ["nope"]\n')
    errors: list[str] = []
    assert "set" not in load_workloads(tmp_path, errors=errors)
    assert "includes unknown workload 'nope'" in errors[0]


def test_unknown_workload_names_known_ones(tmp_path: Path) -> None:
    write(tmp_path, "a", GOOD.format(name="a"))
    with pytest.raises(WorkloadError, match=r"unknown workload 'x'; known: a"):
        select(load_workloads(tmp_path), ["x"])


def test_points_check_their_modes_and_plan_their_time() -> None:
    capped = Point(label="x", connections=100, requests=2000, time_limit="12s")
    assert capped.planned_seconds() == 12.0
    o = Point(label="o", mode="open", rate="50%", duration="5s", path="/json", poisson=True)
    assert o.rate_fraction == 0.5
    with pytest.raises(ValueError):
        Point(label="c", mode="capacity", start_rate=10, step=1.0)
    with pytest.raises(ValueError, match="percentage"):
        Point(label="o", mode="open", rate="fifty", duration="1s")


def test_one_table_names_every_kind_a_workload_may_declare() -> None:
    """The kinds a workload file may declare are exactly the table's, and every kind set comes from it."""
    from typing import get_args
    from serverbench.catalog import kinds
    assert get_args(kinds.Kind) == tuple(kinds.KINDS)
    assert set(kinds.RANKED_BY) == set(kinds.KINDS) | {"efficiency"}  # efficiency: the fixed-rate step's points
    assert kinds.OVER_TIME == ("overload", "soak", "db-outage")
    assert set(kinds.P99_KINDS) == {"fixed-load", "noisy", "soak", "head-of-line"}
    assert kinds.TWINNED == ("noisy", "head-of-line") and kinds.FAILURES_MEASURED == ("db-outage",)
