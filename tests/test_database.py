"""The harness's own PostgreSQL (serverbench/database/): a cluster with TechEmpower's schema and data
from a seed, on loopback only, counting queries with pg_stat_statements, stopped by PID with its
folder removed, dead with a harness killed by SIGKILL; `--db-url`'s check in one line.

One cluster is shared by the module (a start is ~2 s: initdb and the data); two tests start their
own, each in a process of its own."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from typer.testing import CliRunner

from serverbench.catalog import doctor
from serverbench.cli import app
from serverbench.database import cluster, facts, schema
from serverbench.database.schema import DatabaseError

pytestmark = pytest.mark.skipif(doctor.postgres_bindir() is None,
                                reason="PostgreSQL's server binaries are not installed "
                                       "(make system installs postgresql and postgresql-contrib)")
REPO = Path(__file__).resolve().parent.parent
GONE_WITHIN_S = 5.0


@pytest.fixture(scope="module")
def pg() -> Iterator[cluster.ManagedPostgres]:
    with cluster.managed(20) as started:
        yield started


def _family(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _all_gone(procs: list[psutil.Process], within_s: float = GONE_WITHIN_S) -> list[psutil.Process]:
    """The processes still running (not zombies) after `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        alive = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def _world(url_or_admin: str | dict[str, object]) -> list[tuple[int, int]]:
    kw = {"conninfo": url_or_admin} if isinstance(url_or_admin, str) else url_or_admin
    with psycopg.connect(**kw) as c:
        return [tuple(r) for r in c.execute("SELECT id, randomNumber FROM World ORDER BY id")]


def test_the_schema_has_techempowers_names_and_exact_rows(pg: cluster.ManagedPostgres) -> None:
    with psycopg.connect(pg.url) as c:  # as the rows connect: benchmarkdbuser over loopback TCP
        tables = {r[0] for r in c.execute("SELECT table_name FROM information_schema.tables "
                                          "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'")}
        world_cols = {r[0] for r in c.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_name = 'world'")}
        n, lo, hi = c.execute("SELECT count(*), min(randomNumber), max(randomNumber) FROM World").fetchone()
        fortunes = [tuple(r) for r in c.execute("SELECT id, message FROM Fortune ORDER BY id")]
    assert tables == {"world", "fortune"}  # unquoted in TechEmpower's script: lowercase in the catalog
    assert world_cols == {"id", "randomnumber"}
    assert (n, lo >= 1, hi <= 10_000) == (10_000, True, True)
    assert fortunes == list(schema.FORTUNES) and len(fortunes) == 12
    assert (11, '<script>alert("This should not be displayed in a browser alert box.");</script>') in fortunes
    assert (12, "フレームワークのベンチマーク") in fortunes


def test_the_world_table_is_the_seeds(pg: cluster.ManagedPostgres) -> None:
    assert _world(pg.url) == schema.world_rows(1)
    assert schema.world_rows(1) != schema.world_rows(2)


def test_it_listens_on_loopback_only(pg: cluster.ManagedPostgres) -> None:
    postmaster = psutil.Process(pg.pid)
    conns = (getattr(postmaster, "net_connections", None) or postmaster.connections)("all")
    listening = [c for c in conns if c.status == psutil.CONN_LISTEN or c.family == socket.AF_UNIX]
    inet = sorted((c.laddr.ip, c.laddr.port) for c in listening if c.family in (socket.AF_INET, socket.AF_INET6))
    unix = [c.laddr for c in listening if c.family == socket.AF_UNIX]
    assert inet == [("127.0.0.1", pg.port)]
    assert unix == [str(pg.folder / f".s.PGSQL.{pg.port}")]


def test_pg_stat_statements_counts_each_query(pg: cluster.ManagedPostgres) -> None:
    with psycopg.connect(**pg.admin(), autocommit=True) as admin:
        admin.execute("SELECT pg_stat_statements_reset()")
        with psycopg.connect(pg.url, autocommit=True) as c:
            for i in range(1, 8):
                c.execute("SELECT id, randomNumber FROM World WHERE id = %s", (i,)).fetchone()
        calls = admin.execute("SELECT sum(calls) FROM pg_stat_statements "
                              "WHERE query = 'SELECT id, randomNumber FROM World WHERE id = $1'").fetchone()[0]
    assert calls == 7


def test_the_facts_name_version_settings_and_place(pg: cluster.ManagedPostgres) -> None:
    got = facts.managed_facts(pg)
    # the binary's own version line, an independent source: "postgres (PostgreSQL) 15.18 (Debian ...)"
    binary = subprocess.run([str(pg.bindir / "postgres"), "--version"], capture_output=True, text=True).stdout
    assert got["version"].split()[0] == binary.split()[2]
    assert got["settings"]["synchronous_commit"] == "off"
    assert got["settings"]["max_connections"] == "20"
    assert got["settings"]["fsync"] == "on"
    assert got["settings"]["shared_preload_libraries"] == "pg_stat_statements"
    assert got["pg_stat_statements"] is True
    assert (got["where"], got["data_folder"]) == ("managed", str(pg.data))
    assert got["cpus"] == sorted(os.sched_getaffinity(0))
    external = facts.external_facts(pg.url)
    assert external["where"] == "external" and "benchmarkdbpass" not in json.dumps(external)
    assert external["settings"]["shared_preload_libraries"] is None  # hidden from a non-superuser
    assert external["pg_stat_statements"] is True


def test_the_db_url_check_passes_a_ready_database(pg: cluster.ManagedPostgres) -> None:
    schema.check(pg.url)
    r = CliRunner().invoke(app, ["database", "--check", pg.url])
    assert r.exit_code == 0, r.output
    assert "ready" in r.output and "benchmarkdbpass" not in r.output


def test_the_db_url_check_names_a_missing_table_in_one_line(pg: cluster.ManagedPostgres) -> None:
    with psycopg.connect(**pg.admin("postgres"), autocommit=True) as admin:
        admin.execute("CREATE DATABASE partial TEMPLATE hello_world")
    with psycopg.connect(**pg.admin("partial"), autocommit=True) as c:
        c.execute("DROP TABLE fortune")
    with pytest.raises(DatabaseError) as e:
        schema.check(pg.url.rsplit("/", 1)[0] + "/partial")
    msg = str(e.value)
    assert "\n" not in msg and "benchmarkdbpass" not in msg
    assert msg.startswith(f"postgres://benchmarkdbuser:***@127.0.0.1:{pg.port}/partial: table fortune is missing;")
    assert "world" not in msg.split("; fix:")[0] and "fix: load TechEmpower's schema" in msg
    r = CliRunner().invoke(app, ["database", "--check", pg.url.rsplit("/", 1)[0] + "/partial"])
    assert r.exit_code == 1 and "error: " in r.output and "table fortune is missing" in r.output


def test_the_db_url_check_names_an_unreachable_url_in_one_line() -> None:
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = schema.url("127.0.0.1", port)
    with pytest.raises(DatabaseError) as e:
        schema.check(url)
    msg = str(e.value)
    assert "\n" not in msg and "benchmarkdbpass" not in msg
    assert msg.startswith(f"cannot connect to postgres://benchmarkdbuser:***@127.0.0.1:{port}/hello_world (")
    assert "fix: start that PostgreSQL" in msg


def test_the_command_serves_until_sigterm_then_leaves_no_process_nor_folder(pg: cluster.ManagedPostgres) -> None:
    """`serverbench database` in its own process: a second cluster from the same seed has the same World
    table; SIGTERM stops its postmaster (by PID, with every child) and removes its folder."""
    cmd = [str(Path(sys.executable).parent / "serverbench"), "database", "--pg-max-connections", "5"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    procs: list[psutil.Process] = []
    try:
        url = proc.stdout.readline().strip().removeprefix("DATABASE_URL=")  # type: ignore[union-attr]
        said = proc.stderr.readline()  # type: ignore[union-attr]
        found = re.search(r"PostgreSQL pid (\d+), .* removes (\S+)$", said.strip())
        assert url.startswith("postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:") and found, said
        procs = _family(int(found[1]))
        assert len(procs) > 1  # the postmaster and its background processes
        assert _world(url) == _world(pg.url)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert _all_gone(procs, within_s=0) == []
        assert not Path(found[2]).exists()
        assert "stopped PostgreSQL" in proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in _all_gone(procs, within_s=0):
            p.kill()


_CHILD = """
import json, sys, time
import psutil
from serverbench.database import cluster
pg = cluster.start(5)
kids = [p.pid for p in psutil.Process(pg.pid).children(recursive=True)]
print(json.dumps({"pid": pg.pid, "kids": kids, "folder": str(pg.folder)}), flush=True)
time.sleep(120)
"""


def test_a_harness_killed_with_sigkill_leaves_no_postgres() -> None:
    child = subprocess.Popen([sys.executable, "-c", _CHILD], cwd=REPO, stdout=subprocess.PIPE, text=True)
    procs: list[psutil.Process] = []
    folder = None
    try:
        line = child.stdout.readline()  # type: ignore[union-attr]
        assert line, "the child did not start its cluster"
        started = json.loads(line)
        folder = Path(started["folder"])
        procs = [psutil.Process(started["pid"])]
        for pid in started["kids"]:  # a short-lived child (an autovacuum worker) may be gone already
            try:
                procs.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass
        assert len(procs) > 1
        assert procs[0].ppid() == child.pid
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert _all_gone(procs) == [], "postgres outlived the harness killed with SIGKILL"
        assert folder.exists()  # nobody was left to remove it ...
        assert folder in cluster.sweep_stale()  # ... so the next start does
        assert not folder.exists()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for p in _all_gone(procs, within_s=0):
            p.kill()
        if folder is not None and folder.exists():
            shutil.rmtree(folder, ignore_errors=True)


def test_bad_cpus_is_one_line() -> None:
    r = CliRunner().invoke(app, ["database", "--cpus", "x"])
    assert r.exit_code == 2 and "invalid CPU list 'x'" in r.output


def test_doctor_finds_the_server_binaries_and_honours_the_override(tmp_path: Path, monkeypatch) -> None:
    present, detail = doctor.postgres_check()
    assert present and (Path(detail) / "initdb").is_file() and (Path(detail) / "postgres").is_file()
    for name in ("initdb", "postgres"):
        (tmp_path / name).write_text("#!/bin/sh\n")
    monkeypatch.setenv("SERVERBENCH_PG_BIN", str(tmp_path))
    assert doctor.postgres_bindir() == tmp_path


def test_the_sampler_sees_connections_that_hold_statements_open(pg: cluster.ManagedPostgres) -> None:
    """Issue 46, item 7: three connections each running a 1.5 s statement inside the window are seen busy
    (PostgreSQL's own active_time), and a window of idle connections is not."""
    import threading

    from serverbench.processes.sampler import Sampler
    from serverbench.run.database_run import DatabaseSampler

    conns = [psycopg.connect(pg.url, autocommit=True) for _ in range(3)]
    try:
        idle = DatabaseSampler(Sampler(pg.pid, interval=0.2), pg.admin()).start()
        time.sleep(1.5)
        quiet = idle.stop().to_dict()
        busy = DatabaseSampler(Sampler(pg.pid, interval=0.2), pg.admin()).start()
        sleepers = [threading.Thread(target=c.execute, args=("SELECT pg_sleep(1.5)",)) for c in conns]
        for t in sleepers:
            t.start()
        for t in sleepers:
            t.join()
        # a statement's time reaches the counter at the backend's report after its next statement, at most
        # once a second (PostgreSQL 15): under load, a second later
        time.sleep(1.1)
        for c in conns:
            c.execute("SELECT 1")
        time.sleep(0.2)
        seen = busy.stop().to_dict()
    finally:
        for c in conns:
            c.close()
    assert quiet["active_mean"] is not None and quiet["active_mean"] < 0.3, quiet
    assert seen["connections_peak"] >= 3, seen
    # 3 × 1.5 s of statements over a window of about 2.9 s: about 1.5 on average, never near 0
    assert seen["active_mean"] is not None and 1.0 <= seen["active_mean"] <= 3.0, seen
