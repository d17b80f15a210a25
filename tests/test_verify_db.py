"""The db checks (serverbench/verify/dbchecks.py): the reference server with its database endpoints
passes them all, each database defect fails exactly its check with a line naming the rule, a row
without the db choices has them skipped, and `verify` gives db rows one PostgreSQL of its own.

One cluster serves the module (a start is ~2 s); the end-to-end test starts the harness's own, as
`serverbench verify` does. Tests that need no database run without PostgreSQL."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from serverbench.catalog import doctor
from serverbench.catalog import manifests as catalog
from serverbench.verify import CHECKS, CheckResult, verify, verify_servers
from serverbench.rules import admission as kinds
from serverbench.verify import dbchecks, dbcount, dbsetup
from serverbench.verify.dbcount import Counts, DbTarget, Statement
from serverbench.verify.suite import DB_CHECKS

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"
needs_pg = pytest.mark.skipif(doctor.postgres_bindir() is None,
                              reason="PostgreSQL's server binaries are not installed "
                                     f"({doctor.POSTGRES_HINT}; `make test` installs them)")
DB_ROW = SimpleNamespace(id="ref-db", counter="shared", bound=None, choices=SimpleNamespace(db=True))
PLAIN_ROW = SimpleNamespace(id="ref-plain", counter="shared", bound=None, choices=SimpleNamespace(db=False))

# refserver defect → the one db check that must fail, and words of the rule its line must name
DEFECTS = [
    ("fortunes-unescaped", "fortunes", "not HTML-escaped"),
    ("queries-unclamped", "queries", "clamped to 1..500"),
    ("updates-unwritten", "updates", "≥ 90% of the"),
    ("db-cached", "db", "(never cached), pg_stat_statements counted 1"),
    ("queries-in-list", "db-counts", "(IN (...) / = ANY)"),
]


@pytest.fixture(scope="module")
def target() -> Iterator[DbTarget]:
    if doctor.postgres_bindir() is None:
        pytest.skip("PostgreSQL is not installed")
    from serverbench.database import cluster
    with cluster.managed(40) as pg:
        yield DbTarget(pg.url, pg.admin())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def refserver(target: DbTarget) -> Iterator[Callable[..., str]]:
    """Factory: refserver(**env) → its URL, told the module's database; each stopped by PID."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> str:
        port = _free_port()
        log = tempfile.TemporaryFile()
        p = subprocess.Popen([sys.executable, str(REFSERVER)], stdout=subprocess.DEVNULL, stderr=log,
                             env={"PORT": str(port), "PATH": "/usr/bin:/bin", "DATABASE_URL": target.url, **env})
        procs.append(p)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if p.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"refserver exited: {log.read().decode(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return f"http://127.0.0.1:{port}"
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("refserver did not start listening")

    yield start
    for p in procs:
        p.terminate()  # this PID only
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def _by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


@needs_pg
@pytest.mark.parametrize("env", [{}, {"UPDATES_BATCHED": "1"}], ids=["single-row-updates", "batched-updates"])
def test_the_reference_server_passes_every_db_check(refserver: Callable[..., str], target: DbTarget,
                                                    env: dict[str, str]) -> None:
    res = _by_name(verify(refserver(**env), DB_ROW, db=target, only=DB_CHECKS))
    assert list(res) == DB_CHECKS
    bad = [f"{r.name}: {r.detail}" for r in res.values() if not r.passed or r.skipped]
    assert not bad, bad
    # a batch writes an id named twice in one request once: its rows are the distinct ids answered
    writes = r"10 batched UPDATEs \((19[0-9]|200) rows\)" if env else r"200 single-row UPDATEs \(200 rows\)"
    assert re.search(f"→ 200 SELECTs \\+ {writes}$", res["db-counts"].detail), res["db-counts"].detail
    assert res["db"].detail.endswith("16 SELECTs counted"), res["db"].detail


@needs_pg
@pytest.mark.parametrize("brk,check,rule", DEFECTS, ids=[f"{b}->{c}" for b, c, _ in DEFECTS])
def test_each_database_defect_fails_exactly_its_check(refserver: Callable[..., str], target: DbTarget,
                                                      brk: str, check: str, rule: str) -> None:
    res = _by_name(verify(refserver(BREAK=brk), DB_ROW, db=target, only=DB_CHECKS))
    failed = {n: r.detail for n, r in res.items() if not r.passed}
    assert list(failed) == [check], failed
    assert rule in failed[check] and "\n" not in failed[check], failed[check]


@needs_pg
def test_an_existing_database_without_reset_rights_skips_the_counts_saying_so(
        refserver: Callable[..., str], target: DbTarget) -> None:
    # --db-url as the rows' own user (no superuser): the schema is there, resetting the counts is not allowed
    with dbsetup.database_for([DB_ROW], [0], db_url=target.url) as setup:
        assert setup.problem is None and setup.target is not None
        why = setup.target.counts_problem
        assert why and "may not call pg_stat_statements_reset()" in why and "GRANT EXECUTE" in why, why
        res = _by_name(verify(refserver(), DB_ROW, db=setup.target, only=DB_CHECKS))
    assert res["db-counts"].skipped and res["db-counts"].detail == why
    assert all(r.passed and not r.skipped for n, r in res.items() if n != "db-counts"), res
    assert res["db"].detail.endswith(f"not counted: {why}")


def test_a_row_without_the_db_choices_has_its_db_checks_skipped() -> None:
    unreachable = f"http://127.0.0.1:{_free_port()}"  # skipped before any request is sent
    for manifest in (PLAIN_ROW, None):
        res = verify(unreachable, manifest, db=DbTarget("postgres://x@127.0.0.1:1/hello_world", {}),
                     only=DB_CHECKS)
        assert [(r.name, r.passed, r.skipped, r.detail) for r in res] == [
            (n, True, True, "not a db row") for n in DB_CHECKS]


def test_a_row_that_declares_db_out_has_its_db_checks_skipped_with_its_reason() -> None:
    why = "no PostgreSQL driver reachable here (its registry is not) [upstream]"
    row = SimpleNamespace(id="out", counter="shared", bound=None, choices=SimpleNamespace(db=False, db_out=why))
    res = verify(f"http://127.0.0.1:{_free_port()}", row, db=DbTarget("postgres://x@127.0.0.1:1/hello_world", {}),
                 only=DB_CHECKS)
    assert [(r.skipped, r.detail) for r in res] == [(True, f"serves no database here (db_out): {why}")] * len(res)


def test_without_postgresql_a_db_rows_checks_are_skipped_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "postgres_bindir", lambda: None)
    with dbsetup.database_for([DB_ROW, PLAIN_ROW], [0]) as setup:
        assert setup.target is None and setup.problem == dbsetup.not_installed()
    assert doctor.POSTGRES_HINT in setup.problem and "make test" in setup.problem
    res = verify(f"http://127.0.0.1:{_free_port()}", DB_ROW, db=None, db_problem=setup.problem, only=DB_CHECKS)
    assert all(r.skipped and r.detail == setup.problem for r in res), res
    with dbsetup.database_for([PLAIN_ROW], [0]) as none:  # no db row: nothing started, nothing to say
        assert none.target is None and none.problem is None


def test_db_checks_are_a_feature_gate_in_suite_order() -> None:
    assert CHECKS[-len(DB_CHECKS) - 4:] == DB_CHECKS + ["compress", "tls", "h2c", "h2"]  # the feature checks close the list
    a = kinds.admission([{"name": n, "passed": False, "detail": f"{n} wrong"} for n in DB_CHECKS])
    assert a.admitted and list(a.features) == ["db"] and a.features["db"].check == "db"
    assert a.not_run_reason(["db"]) == "not run — db wrong (db)" and a.not_run_reason(["pipelining"]) is None
    assert kinds.gates("db", []) == 'workloads with features = ["db"] (none yet)'


def test_a_db_url_that_cannot_be_used_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    from typer.testing import CliRunner
    from serverbench.cli import app
    from serverbench.verify.suite import is_db_row
    row = next((m.id for m in catalog.load_catalog().servers.values() if is_db_row(m)), None)
    if row is None:
        pytest.skip("no db row in the catalog")
    url = f"postgres://benchmarkdbuser:secret@127.0.0.1:{_free_port()}/hello_world"
    res = CliRunner().invoke(app, ["verify", row, "--db-url", url, "--db", str(tmp_path / "r.db")])
    assert res.exit_code == 2, res.output
    [line] = [ln for ln in res.output.splitlines() if ln.strip()]
    assert line.startswith("error: cannot connect to postgres://benchmarkdbuser:***@") and "fix:" in line, line


def test_statements_are_sorted_into_reads_and_writes_of_world() -> None:
    c = Counts([Statement("SELECT id, randomNumber FROM World WHERE id = $1", 40, 40),
                Statement('SELECT "world"."id" FROM "world" WHERE "world"."id" = $1', 5, 5),
                Statement("select id, randomnumber from public.world where id in ($1, $2)", 1, 2),
                Statement("UPDATE World SET randomNumber = $1 WHERE id = $2", 20, 20),
                Statement("UPDATE world SET randomnumber = v.r FROM (SELECT unnest($1::int[]) id) v", 1, 7),
                Statement("SELECT id, message FROM Fortune", 3, 36),
                Statement("SELECT * FROM worldwide", 9, 9), Statement("BEGIN", 20, 0)])
    assert (c.select_calls, c.update_calls, c.update_rows) == (46, 21, 27)
    assert c.in_list == ["select id, randomnumber from public.world where id in ($1, $2)"]
    [line] = dbcount.judge_reads(c, "x", 23, 2)  # the count is right, the IN list is not
    assert line.startswith("x: expected one SELECT per row") and "(IN (...) / = ANY)" in line, line
    assert dbcount.judge_reads(c, "x", 20, 2)[0] == ("x: expected exactly 40 SELECTs reading World (one per row: "
                                                     "2 requests × 20), pg_stat_statements counted 46")


def test_writes_may_be_single_row_or_batched_with_a_repeated_id_written_once() -> None:
    single = Counts([Statement("UPDATE world SET randomnumber = $1 WHERE id = $2", 40, 40)])
    batched = Counts([Statement("UPDATE world SET randomnumber = v.r FROM (VALUES ($1, $2)) v", 2, 39)])
    assert dbcount.judge_writes(single, "u", 20, 2, distinct=39) == []
    assert dbcount.judge_writes(batched, "u", 20, 2, distinct=39) == []
    [line] = dbcount.judge_writes(batched, "u", 20, 2, distinct=40)
    assert line == ("u: expected 40 single-row UPDATEs of World, or 2 batched UPDATEs writing 40 rows, "
                    "pg_stat_statements counted 2 UPDATEs writing 39 rows")
    assert dbcount.judge_writes(Counts(), "u", 20, 2, distinct=40)  # nothing written


def test_fortunes_accept_any_escaping_spelling_and_free_whitespace_only() -> None:
    page = dbchecks.expected_fortunes_page()
    assert dbchecks.compare_fortunes(page) is None
    spelled = page.replace("&quot;", "&#34;").replace("&#x27;", "&#39;").replace("<!DOCTYPE", "<!doctype")
    assert dbchecks.compare_fortunes(spelled.replace("<tr>", "\n  <tr>").replace("<td>", "<td> ")) is None
    unescaped = page.replace("&lt;script&gt;", "<script>")
    assert "not HTML-escaped" in (dbchecks.compare_fortunes(unescaped) or "")
    bare_amp = page.replace("&lt;script&gt;", "&script&gt;")
    assert "not HTML-escaped" in (dbchecks.compare_fortunes(bare_amp) or "")
    unsorted = page.replace("<tr><td>0</td>", "<tr><td>00</td>")
    assert "expected '0', got '00'" in (dbchecks.compare_fortunes(unsorted) or "")
    short = page.replace("<tr><td>7</td><td>Any program that runs right is obsolete.</td></tr>", "")
    assert dbchecks.compare_fortunes(short) is not None


_DB_TOML = """name = "ref-db"
language = "Python"
runtime = "python3"
model = "event-loop"
framework = "asyncio, hand-written HTTP"
origin = "serverbench"
description = "test fixture: refserver.py with its database endpoints"
build = ""
run = "exec {python} {refserver}"
version = "python3 --version"
requires = ["python3"]
[choices]
pipelined_writes = "per-response"
file_read = "blocking"
nodelay = "off"
db_driver = "psycopg 3"
db_pool = "one connection"
db_wait = "async"
db_pipelining = "off"
db_prepared = "on"
"""


@needs_pg
def test_verify_starts_one_postgresql_tells_the_row_and_stops_it(tmp_path: Path) -> None:
    from serverbench.store import Store
    (tmp_path / "servers" / "ref-db").mkdir(parents=True)
    (tmp_path / "servers" / "ref-db" / "server.toml").write_text(
        _DB_TOML.format(python=sys.executable, refserver=REFSERVER))
    cat = catalog.load_catalog(tmp_path / "servers")
    assert cat.errors == []
    m = cat.servers["ref-db"]
    store = Store(tmp_path / "r.db")
    with dbsetup.database_for([m], [0]) as setup:
        assert setup.problem is None and setup.pid is not None and psutil.pid_exists(setup.pid)
        [v] = verify_servers([m], store, server_cpus=[0], allow_unavailable=False, db=setup)
    assert not psutil.pid_exists(setup.pid) or psutil.Process(setup.pid).status() == psutil.STATUS_ZOMBIE
    res = _by_name(v.checks)
    bad = [f"{n}: {r.detail}" for n, r in res.items() if n in DB_CHECKS and (not r.passed or r.skipped)]
    assert not bad and v.passed, bad
    stored = {c["name"]: c for c in store.verdict("ref-db").checks}
    assert all(stored[n]["passed"] and not stored[n]["skipped"] for n in DB_CHECKS), stored
