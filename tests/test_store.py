"""store.py: round trips, one transaction per cell (crash safety), migrations, resume keys, verdicts."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from serverbench.store import MIGRATIONS, SCHEMA_VERSION, CellRecord, Store, StoreError

V3_DB = Path(__file__).parent / "fixtures" / "store" / "v3.db"  # written by the schema-3 release
LOADGEN = {"schema": "loadgen/1", "summary": {"requests": 10, "errors": 0, "rps": 5.0, "latency_us": {"p99": 9.0}}}


def cell(point: str, rep: int = 1, status: str = "ok", **metrics) -> CellRecord:
    return CellRecord("srv", "wl", point, rep, status, error=None if status == "ok" else "boom",
                      started_at="t0", finished_at="t1", loadgen=LOADGEN,
                      usage={"cpu_user_s": 1.5}, metrics={"rps": 100.0, **metrics})


def test_round_trip_runs_cells_and_keys(tmp_path: Path) -> None:
    s = Store(tmp_path / "r.db")
    assert s.latest_run_id() is None
    rid = s.new_run({"cpu_model": "x"}, {"repeat": 3})
    s.record_cell(rid, cell("c=1", p99_us=123))
    s.record_cell(rid, cell("c=2", status="failed"))
    s.record_cell(rid, cell("c=3", status="skipped"))
    got = s.cells(rid)
    assert [c.point for c in got] == ["c=1", "c=2", "c=3"]
    assert got[0].metrics.dump() == {"rps": 100.0, "p99_us": 123, "error_classes": {}, "missed_sends": 0,
                                     "unanswered": 0, "unanswered_oldest_us": 0, "client_saturated": False}
    assert got[0].usage == {"cpu_user_s": 1.5}
    assert got[0].loadgen.summary.rps == 5.0 and got[0].loadgen.summary.latency_us.p99 == 9.0
    assert got[0].run_id == rid
    assert s.done_keys(rid) == {("srv", "wl", "c=1", 1)}  # failed/skipped are retried on resume
    s.finish_run(rid, "finished")
    r = s.run(rid)
    assert (r.status, r.cells_ok, r.cells_failed, r.cells_skipped) == ("finished", 1, 1, 1)
    assert r.fingerprint == {"cpu_model": "x"} and r.options == {"repeat": 3} and r.finished_at
    assert s.latest_run_id() == rid and [x.id for x in s.runs()] == [rid]
    with pytest.raises(StoreError, match="no run 99"):
        s.run(99)
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_recording_a_key_again_replaces_the_row(tmp_path: Path) -> None:
    s = Store(tmp_path / "r.db")
    rid = s.new_run({}, {})
    s.record_cell(rid, cell("c=1", status="failed"))
    s.record_cell(rid, cell("c=1", rps=7.0))
    [only] = s.cells(rid)
    assert only.status == "ok" and only.metrics.counts.rps == 7.0


def test_verdicts_latest_wins(tmp_path: Path) -> None:
    s = Store(tmp_path / "r.db")
    assert s.verdict("a") is None
    s.record_verdict("a", False, [{"name": "root", "passed": False}], "h1")
    s.record_verdict("a", True, [{"name": "root", "passed": True}], "h2")
    v = s.verdict("a")
    assert v.passed and v.folder_hash == "h2" and v.checks[0]["passed"] and v.checked_at
    assert set(s.verdicts()) == {"a"}


WRITER = textwrap.dedent("""
    import sys
    from serverbench.store import Store, CellRecord
    s = Store(sys.argv[1])
    rid = s.new_run({}, {})
    for i in range(1, 26):
        s.record_cell(rid, CellRecord("srv", "wl", f"p{i}", 1, "ok", metrics={"rps": float(i)},
                      log_tail="x" * 20000))
        print(i, flush=True)
    # cell 26 in flight: its transaction is open, a row written, not committed
    s.db.execute("BEGIN IMMEDIATE")
    s.db.execute("INSERT INTO cells(run_id, server, workload, point, repetition, status) "
                 "VALUES (?, 'srv', 'wl', 'p26', 1, 'ok')", (rid,))
    print("in-flight", flush=True)
    import time
    time.sleep(60)
""")


def test_crash_between_cells_loses_at_most_the_cell_in_flight(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parent.parent)
    try:
        lines = []
        while not lines or lines[-1] != "in-flight":
            line = proc.stdout.readline()
            assert line, "writer died early"
            lines.append(line.strip())
        proc.send_signal(signal.SIGKILL)  # no chance to clean up
    finally:
        proc.wait(10)
    s = Store(db)
    rid = s.latest_run_id()
    cells = s.cells(rid)
    # every committed cell is there, complete; the one in flight is gone without a trace
    assert [c.point for c in cells] == [f"p{i}" for i in range(1, 26)]
    assert all(c.metrics.counts.rps == float(c.point[1:]) and len(c.log_tail) == 20000 for c in cells)
    row = s.run(rid)
    assert row.status == "running"  # never finished: resume can pick it up
    assert row.owner == f"{proc.pid}@{row.owner.split('@')[1]}"
    assert row.shown_status == "abandoned"  # its process is gone
    s.reopen_run(rid)
    assert s.run(rid).shown_status == "running" and s.run(rid).owner.startswith(f"{os.getpid()}@")
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_migrates_an_older_schema(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    MIGRATIONS[0](con)  # a version-1 database, as the first release wrote it
    con.execute("INSERT INTO schema_version VALUES (1)")
    con.execute("INSERT INTO runs(started_at, status, fingerprint_json, options_json) VALUES ('t','finished','{}','{}')")
    for rps in (1.0, 2.0):  # v1 allowed duplicate keys; the newest must survive the migration
        con.execute("INSERT INTO cells(run_id, server, workload, point, repetition, status, metrics_json) "
                    "VALUES (1,'s','w','p',1,'ok',?)", (json.dumps({"rps": rps}),))
    con.close()
    s = Store(db)
    assert s.schema_version() == SCHEMA_VERSION == 5
    assert s.run(1).owner is None and s.run(1).shown_status == "finished"
    [c] = s.cells(1)
    assert c.metrics.counts.rps == 2.0
    s.record_cell(1, CellRecord("s", "w", "p", 1, "ok", metrics={"rps": 3.0}))
    assert [c.metrics.counts.rps for c in s.cells(1)] == [3.0]


def test_migrates_the_v3_fixture_database(tmp_path: Path) -> None:
    db = tmp_path / "v3.db"
    db.write_bytes(V3_DB.read_bytes())
    s = Store(db)
    assert s.schema_version() == 5
    run = s.run(1)
    assert run.status == "finished" and run.error is None and run.options["repeat"] == 2
    cells = s.cells(1)
    assert [(c.server, c.status) for c in cells] == [("go-tcp", "ok"), ("go-tcp", "ok"), ("java-threads", "failed")]
    assert [c.metrics.counts.rps for c in cells[:2]] == [100000.0, 90000.0]
    assert cells[0].metrics.usage.cpu_sys_s == 2.5 and cells[0].loadgen.summary.latency_us.p99 == 6000
    stored = json.loads(s.db.execute("SELECT metrics_json FROM cells WHERE id=1").fetchone()[0])
    assert "legacy_figure" not in stored and stored["p99_us"] == 6000  # rewritten through CellMetrics
    s.finish_run(1, "failed", "RuntimeError: boom")
    assert (s.run(1).status, s.run(1).error) == ("failed", "RuntimeError: boom")


def test_newer_schema_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    Store(db).close()
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("UPDATE schema_version SET version = 99")
    con.close()
    with pytest.raises(StoreError, match=r"schema version 99 is newer .* upgrade serverbench"):
        Store(db)


def test_not_a_database(tmp_path: Path) -> None:
    bad = tmp_path / "junk.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="junk.db"):
        Store(bad)
