"""--split auto (split.py): the choice of server and client CPUs from a calibration, and the record a
run stores."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from serverbench.catalog import manifests as catalog
from serverbench import paths
from serverbench.rules.fingerprint import describe_split
from serverbench.run import split
from serverbench.processes import supervisor
from serverbench.model import RunOptions

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from conftest import write_manifest  # noqa: E402


def test_a_client_half_as_fast_per_cpu_gets_more_cpus_than_the_server() -> None:
    s, c = split.choose(16, client_per_cpu=50_000, server_per_cpu=100_000)
    assert s + c == 16 and c > s
    # the client it leaves drives at least HEADROOM × the server's top rate; one more server CPU and it would not
    assert c * 50_000 >= split.HEADROOM * s * 100_000
    assert (c - 1) * 50_000 < split.HEADROOM * (s + 1) * 100_000


def test_a_fast_client_leaves_the_server_most_cpus_and_small_machines_stay_one_and_one() -> None:
    s, c = split.choose(16, client_per_cpu=1_000_000, server_per_cpu=100_000)
    assert (s, c) == (14, 2)
    for ratio in (0.1, 1.0, 10.0):
        assert split.choose(2, ratio, 1.0) == (1, 1)
    assert split.choose(1, 1.0, 1.0) == (1, 1)
    with pytest.raises(ValueError):
        split.choose(8, 0.0, 1.0)


def test_cpus_given_make_the_split_manual_and_half_splits_in_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("serverbench.processes.supervisor.default_cpu_split", lambda: ([0, 1], [2, 3]))
    opts = RunOptions(server_cpus=[0], split="auto")
    assert split.settle(opts, False, fresh=True) == {"mode": "manual", "server_cpus": [0], "client_cpus": [2, 3]}
    opts = RunOptions(split="half")
    assert split.settle(opts, False, fresh=True)["mode"] == "half" and opts.client_cpus == [2, 3]
    # a remote load generator: no calibration here, the halves
    opts = RunOptions(split="auto", cluster="tcp://10.0.0.2:8786")
    assert split.settle(opts, False, fresh=True) == {"mode": "auto", "server_cpus": [0, 1], "client_cpus": [2, 3]}
    # a resume keeps its stored CPUs and records nothing new
    assert split.settle(RunOptions(server_cpus=[0], client_cpus=[1], split="auto"), False, fresh=False) is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_a_real_calibration_measures_both_sides_per_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not paths.loadgen_binary().is_file():
        pytest.skip("loadgen not built (make loadgen)")
    monkeypatch.setattr(split, "CALIBRATION_S", "1s")
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    write_manifest(tmp_path / "servers", "ref", run=f"exec '{sys.executable}' '{runfix.HERE / 'tiny_server.py'}'")
    ref = catalog.load_catalog(tmp_path / "servers").servers["ref"]
    cpus = sorted(os.sched_getaffinity(0))
    server, client, record = split.auto_split(cpus, reference=ref)
    cal = record["calibration"]
    assert cal["reference"] == "ref" and cal["requests"] > 0
    assert cal["client_per_cpu"] > 0 and cal["server_per_cpu"] > 0
    assert server + client == cpus and server and client
    assert (len(server), len(client)) == split.choose(len(cpus), cal["client_per_cpu"], cal["server_per_cpu"])
    assert f"client CPUs {len(client)}" in record["note"] and "× what ref would serve" in record["note"]


def test_an_unbuilt_reference_falls_back_to_halves_and_says_why(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "STAMPS", tmp_path / "stamps")
    write_manifest(tmp_path / "servers", "ref", build="true")
    ref = catalog.load_catalog(tmp_path / "servers").servers["ref"]
    server, client, record = split.auto_split([0, 1, 2, 3], reference=ref)
    assert record["calibration"] is None and "serverbench build ref" in record["note"]
    assert (server, client) == supervisor.default_cpu_split()


def test_the_report_line_says_how_the_cpus_were_split() -> None:
    cal = {"reference": "c-epoll", "seconds": 3.0, "client_per_cpu": 136262.1, "server_per_cpu": 135327.7}
    line = describe_split({"mode": "auto", "calibration": cal, "note": "the top rows may be client-bound"})
    assert line == ("auto: one load-generator CPU drove 136,262 req/s, one server CPU of c-epoll served 135,328 "
                    "(3 s calibration); the top rows may be client-bound")
    assert describe_split({"mode": "manual"}) == "as given (--server-cpus/--client-cpus)"
    assert describe_split(None) is None  # runs stored before the split was recorded


def test_auto_gives_the_database_cpus_of_its_own_from_four_cpus_on_and_says_when_it_shares(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46, item 3: half of the client's CPUs for PostgreSQL on 4 CPUs or more; on 2 it shares the load
    generator's, and the run's record says so."""
    assert split.database_cpus([8, 9, 10, 11, 12, 13], 16) == ([11, 12, 13], "the database on CPUs of its own (3 of the client's 6)")
    assert split.database_cpus([2, 3], 4)[0] == [3]
    for client, n in (([1], 2), ([3], 4)):
        db, why = split.database_cpus(client, n)
        assert db is None and "shares the load generator's CPUs" in why
    for n, chosen in ((16, ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15])), (2, ([0], [1]))):
        cpus = list(range(n))
        monkeypatch.setattr("serverbench.processes.supervisor.online_cpus", lambda cpus=cpus: cpus)
        monkeypatch.setattr(split, "auto_split", lambda _cpus, chosen=chosen: (*chosen, {"mode": "auto"}))
        opts = RunOptions(split="auto")
        record = split.settle(opts, False, fresh=True, needs_db=True)
        if n == 16:
            assert opts.db_cpus == [13, 14, 15] and opts.client_cpus == [10, 11, 12] and record["db_cpus"] == [13, 14, 15]
        else:
            assert opts.db_cpus is None and opts.client_cpus == [1] and record["db_cpus"] is None
            assert "shares the load generator's CPUs" in record["db_note"]
        # a run without a database workload keeps the split as it was
        opts = RunOptions(split="auto")
        assert "db_cpus" not in split.settle(opts, False, fresh=True) and opts.db_cpus is None
