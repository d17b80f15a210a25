"""Noise that can be explained (issue 49 item 5): the CPU probe runs pinned where asked and gives a
rate; the measuring core stores it and the steal of the server's CPUs with every cell; a report says
when the machine's speed moved during a run (and not when it held), and a group whose repetition lost
CPU time to steal carries a warning."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from serverbench.exporters import speed_section, to_html, to_markdown
from serverbench.model import CellRecord, MachineSpeed
from serverbench.processes import speed
from serverbench.processes.supervisor import ServerProcess
from serverbench.processes.target import ExternalServer
from serverbench.results import aggregate
from serverbench.rules import machine_speed
from serverbench.run import measure
from serverbench.store import Store
from test_runner import env, go  # noqa: F401  (the runner's fixture: a fake loadgen, fixture servers)

LAST_CPU = max(os.sched_getaffinity(0))


def test_the_probe_gives_a_positive_rate_on_the_cpus_asked_and_leaves_the_caller_where_it_was() -> None:
    mine = os.sched_getaffinity(0)
    p = speed.probe([LAST_CPU], seconds=0.02)
    assert p.ran_on == (LAST_CPU,)
    assert p.mib_per_cpu_s > 0 and p.mib_per_wall_s > 0 and p.wall_s >= 0.02
    assert os.sched_getaffinity(0) == mine  # only the probe's own thread was pinned
    assert speed.probe(None, seconds=0.01).ran_on == tuple(sorted(mine))
    with pytest.raises(OSError):
        speed.probe([4096], seconds=0.01)  # a CPU this machine does not have


def test_steal_is_a_share_of_the_cpus_time_between_two_readings() -> None:
    assert speed.steal_percent(speed.CpuTimes(1.0, 100.0), speed.CpuTimes(3.0, 140.0)) == 5.0
    assert speed.steal_percent(speed.CpuTimes(1.0, 100.0), speed.CpuTimes(1.0, 100.0)) is None
    now = speed.cpu_times([LAST_CPU])
    assert now.total_s > 0 and 0 <= now.steal_s <= now.total_s
    assert speed.cpu_times(None).total_s > now.total_s  # every CPU holds more time than one


def test_the_measuring_core_probes_a_server_here_and_not_one_elsewhere(tmp_path: Path) -> None:
    here = ServerProcess(manifest=None, pid=os.getpid(), host="127.0.0.1", port=1, url="http://127.0.0.1:1",
                         log_path=tmp_path / "log", workers=1, cpus=[LAST_CPU])
    s = measure.Sampling(here)
    assert s.run(lambda: time.sleep(0.1) or 7) == 7  # /proc/stat counts in ticks: let some pass
    assert s.speed.speed_before_mib_s and s.speed.speed_before_mib_s > 0
    assert s.speed.speed_after_mib_s and s.speed.speed_after_mib_s > 0
    assert s.speed.steal_percent is not None and 0 <= s.speed.steal_percent <= 100
    away = measure.Sampling(ExternalServer("http://127.0.0.1:1", host="127.0.0.1"))
    away.run(lambda: None)
    assert away.speed == MachineSpeed()  # --target: no CPUs of it here to probe


def test_the_runner_stores_the_probes_with_every_cell(env) -> None:  # noqa: F811
    res = go(env, ["py-ok"], ["mini"])
    cells = env["store"].cells(res.run_id)
    assert cells and all(c.ok for c in cells)
    for c in cells:
        sp = c.metrics.speed
        assert sp.speed_before_mib_s > 0 and sp.speed_after_mib_s > 0 and sp.steal_percent is not None


def _store(tmp_path: Path, speeds: list[float], steal: float = 0.0) -> tuple[object, aggregate.RunResults]:
    """A stored run: two rows × the repetitions, each cell's probes at the next of `speeds`."""
    store = Store(tmp_path / "r.db")
    rid = store.new_run({}, {})
    it = iter(speeds)
    for rep in (1, 2, 3):
        for server in ("c-epoll", "go-nethttp"):
            v = next(it)
            store.record_cell(rid, CellRecord(server, "w", "c=400", rep, "ok", started_at=f"2025-01-01T10:0{rep}:00",
                                              metrics={"kind": "throughput", "rps": 1000.0 + rep, "requests": 4000,
                                                       "ok": 4000, "speed": MachineSpeed(
                                                           speed_before_mib_s=v, speed_after_mib_s=v,
                                                           steal_percent=steal if rep == 2 else 0.0)}))
    return store.run(rid), aggregate.load(store, rid)[1]


def test_a_cells_probes_are_stored_and_read_back(tmp_path: Path) -> None:
    _, results = _store(tmp_path, [1600.0, 1590.0, 1610.0, 1605.0, 1595.0, 1600.0], steal=1.5)
    g = results.group("w", "c=400", "c-epoll")
    assert [c.metrics.speed for c in g.ok] == [
        MachineSpeed(speed_before_mib_s=v, speed_after_mib_s=v, steal_percent=s)
        for v, s in ((1600.0, 0.0), (1610.0, 1.5), (1595.0, 0.0))]


def test_the_report_says_when_the_machines_speed_moved_and_by_how_much(tmp_path: Path) -> None:
    run, results = _store(tmp_path, [1600.0, 1590.0, 1500.0, 1480.0, 1300.0, 1290.0])
    assert results.speed is not None and results.speed.drop == pytest.approx(1 - 1290 / 1600)
    md = to_markdown.render(run, results).decode()
    assert "the slowest cell's CPU probe ran 19% below the fastest's (1,290 vs 1,600" in md
    assert "slowest at 10:03:00, go-nethttp w c=400 repetition 3" in md
    assert "fastest at 10:01:00, c-epoll w c=400 repetition 1" in md
    page = to_html.render(run, results).decode()
    assert speed_section.LABEL in page and "ran 19% below the fastest" in page


def test_no_note_when_the_speed_held_within_the_rule(tmp_path: Path) -> None:
    # 1600 → 1450: 9.4 % apart, under SPEED_MOVED
    run, results = _store(tmp_path, [1600.0, 1590.0, 1500.0, 1480.0, 1460.0, 1450.0])
    assert 1 - 1450 / 1600 < machine_speed.SPEED_MOVED
    assert results.speed is None and speed_section.note(results) is None
    assert "speed moved" not in to_markdown.render(run, results).decode()
    assert speed_section.LABEL not in to_html.render(run, results).decode()


def test_steal_above_the_threshold_is_a_group_warning_and_below_it_is_not(tmp_path: Path) -> None:
    run, results = _store(tmp_path / "a", [1600.0] * 6, steal=7.2)
    for g in results.groups:
        [w] = [w for w in g.warnings if w.kind == "steal"]
        assert "repetition 2: 7.2 %" in w.text
    assert "steal — the hypervisor took the server's CPUs" in to_markdown.render(run, results).decode()
    _, calm = _store(tmp_path / "b", [1600.0] * 6, steal=machine_speed.STEAL_WARN_PERCENT - 0.1)
    assert not [w for g in calm.groups for w in g.warnings if w.kind == "steal"]
