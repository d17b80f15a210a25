"""The run's database (run/database_run.py): one PostgreSQL of the harness's own for a run whose workloads
need it, a db row told where it is, non-db rows kept out, the database's CPU stored beside the server's
(never in it), one calibrated rate for every row, and nothing left running afterwards.

Real PostgreSQL (skipped where it is not installed), the fake loadgen of tests/fixtures/run."""
import json
from types import SimpleNamespace as NS
import os
import sys
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from serverbench.catalog import doctor, manifests as catalog, workloads as wl  # noqa: E402
from serverbench.catalog.manifests import Choices  # noqa: E402
from serverbench.exporters import to_markdown  # noqa: E402
from serverbench.results import aggregate  # noqa: E402
from serverbench.database import rowenv  # noqa: E402
from serverbench.model import RunOptions  # noqa: E402
from serverbench.run.runner import run_matrix  # noqa: E402
from serverbench.store import Store  # noqa: E402

pytestmark = pytest.mark.skipif(doctor.postgres_bindir() is None, reason="PostgreSQL is not installed")

WORKLOAD = """
name = "dbw"
description = "one open point on /db at a rate calibrated once per run"
origin = "serverbench"
kind = "fixed-load"
path = "/db"
features = ["db"]
[quick]
steady_max = "0s"
[[quick.points]]
label = "rate=50%"
mode = "open"
rate = "50%"
rate_basis = "run"
calibration = "1s"
duration = "1s"
[[quick.points]]
label = "rate=25%"
mode = "open"
rate = "25%"
rate_basis = "run"
calibration = "1s"
duration = "1s"
[full]
[[full.points]]
label = "rate=50%"
mode = "open"
rate = "50%"
rate_basis = "run"
duration = "10s"
"""
DB_CHOICES = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on", "db_driver": "none",
              "db_pool": "none", "db_wait": "blocking", "db_pipelining": "off", "db_prepared": "off"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_LOG", str(tmp_path / "calls.jsonl"))
    # the points' whole second (the fake's default is 0.3 s): on a busy machine a few queries of the
    # fixture row make a rate of 1 req/s, which must still answer one request
    monkeypatch.setenv("FAKE_LOADGEN_MAX_S", "1.0")
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "dbw.toml").write_text(WORKLOAD)
    servers = catalog.load_catalog(runfix.SERVERS).servers
    plain = servers["py-ok"]
    seen = tmp_path / "seen-url"
    # the db row: py-ok told it serves a database, writing down the URL it was given before it starts
    db_row = plain.model_copy(update={"id": "py-db", "name": "py-db", "choices": Choices(**DB_CHOICES),
                                      "run": f'echo "$DATABASE_URL $DB_POOL" > {seen}; '
                                             + plain.run.replace("python3", sys.executable)})
    return {"store": Store(tmp_path / "r.db"), "rows": [db_row, plain], "seen": seen,
            "workload": wl.load_workloads(tmp_path / "w")["dbw"], "calls": tmp_path / "calls.jsonl"}


def test_a_db_run_starts_one_database_tells_db_rows_and_stops_it(env: dict) -> None:
    client = sorted(os.sched_getaffinity(0))[-1]
    opts = RunOptions(servers=["py-db", "py-ok"], workloads=["dbw"], repeat=2, allow_unverified=True,
                      ready_timeout=10, server_cpus=[0], client_cpus=[client])
    from serverbench.run.fingerprint import fingerprint
    fp = fingerprint(env["rows"], server_cpus=[0], client_cpus=[client])
    res = run_matrix(env["store"], opts, manifests=env["rows"], workloads=[env["workload"]], fingerprint=fp)
    assert (res.status, res.ok, res.skipped) == ("finished", 4, 4), res
    cells = env["store"].cells(res.run_id)
    skipped = [c for c in cells if c.server == "py-ok"]
    assert all(c.status == "skipped" and "not a db row" in (c.error or "") for c in skipped)
    ok = [c for c in cells if c.server == "py-db"]
    url, pool = env["seen"].read_text().split()
    assert url.startswith("postgres://benchmarkdbuser:") and url.endswith("/hello_world")
    assert pool == str(rowenv.DB_POOL_TOTAL)
    for c in ok:
        d = c.metrics.database
        assert d.db_pool == rowenv.DB_POOL_TOTAL and d.db_cpus == [client] and d.db_shares_client_cpus
        assert d.db_cpu_user_s is not None and d.db_cpu_percent is not None and d.calibrated_on == "py-db"
        # the fixture row holds one connection (its /db shares one under a lock)
        assert d.db_connections_peak == 1 and d.db_active_mean is not None and 0 <= d.db_active_mean <= 1
        # the server's usage is its own tree: Postgres' processes are not in it
        assert c.metrics.usage.processes_peak is not None and c.metrics.usage.processes_peak <= 2
    # one calibration for the run and the path: the same rate in both repetitions, and 25 % half of 50 %
    rate = {(c.point, c.repetition): c.metrics.offered.target_rate for c in ok}
    assert rate[("rate=50%", 1)] == rate[("rate=50%", 2)] and rate[("rate=25%", 1)] == rate[("rate=25%", 2)]
    assert abs(rate[("rate=25%", 1)] - rate[("rate=50%", 1)] / 2) <= 0.1 or rate[("rate=25%", 1)] == 1.0
    runs = [json.loads(line)["argv"] for line in env["calls"].read_text().splitlines()]
    closed = [a for a in runs if "--rate" not in a]  # the calibration is the one closed load
    assert len(runs) == 5 and len(closed) == 1, runs
    facts = env["store"].run(res.run_id).fingerprint["database"]
    assert facts["where"] == "managed" and facts["settings"]["synchronous_commit"] == "off"
    # stopped by the runner's cleanup: its folder removed, no postmaster of it left
    assert not Path(facts["data_folder"]).exists()
    left = [p for p in psutil.process_iter(["cmdline"]) if facts["data_folder"] in " ".join(p.info["cmdline"] or [])]
    assert left == []
    # the report: the database's CPU in a column of its own, the common rate and where it came from
    run, results = aggregate.load(env["store"], res.run_id)
    md = to_markdown.render(run, results).decode()
    assert "| DB CPU µs/request; connections |" in md and "measured once for the run" in md, md
    assert "Database: PostgreSQL " in md and "the harness's own on CPU" in md
    assert "| py-db | none, pool none; queries blocking |" in md
    [g, _] = [g for w in results.workloads for p in w.points for g in p.groups if g.server == "py-db"]
    assert g.figures.database.db_cpu_us_per_request is not None and g.figures.database.calibrated_on == "py-db"


def test_db_workloads_refuse_a_server_on_the_cluster_in_one_line() -> None:
    from serverbench.database.schema import DatabaseError
    from serverbench.run.database_run import RunDatabase
    with pytest.raises(DatabaseError, match="do not run with --server-on-cluster yet.*fix: run them without"):
        RunDatabase.open(RunOptions(server_on_cluster=True, cluster="tcp://10.0.0.2:8786"), None)


def test_a_db_url_without_the_schema_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    from serverbench.database.schema import DatabaseError
    from serverbench.run.database_run import RunDatabase
    with pytest.raises(DatabaseError, match=r"cannot connect to postgres://u:\*\*\*@127\.0\.0\.1:1/x"):
        RunDatabase.open(RunOptions(), "postgres://u:secret@127.0.0.1:1/x")


def test_a_db_row_whose_db_checks_were_skipped_at_verify_is_kept_out() -> None:
    from serverbench.rules.admission import feature_unchecked
    ran = [{"name": n, "passed": True} for n in ("db", "queries", "fortunes", "db-counts", "updates")]
    assert feature_unchecked(NS(checks=ran), "db") is None
    skipped = [*ran[:3], {"name": "db-counts", "passed": False, "skipped": True,
                          "detail": "PostgreSQL is not installed"}, ran[4]]
    assert feature_unchecked(NS(checks=skipped), "db") == (
        "its db checks did not run at verify (PostgreSQL is not installed); fix: verify it again where they can run")
    # a verdict from before the db checks existed holds none of them
    assert feature_unchecked(NS(checks=[{"name": "root", "passed": True}]), "db").startswith("its db checks did not run")
    assert feature_unchecked(None, "db") is None
