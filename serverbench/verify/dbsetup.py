"""The database `verify` gives db rows: one PostgreSQL of the harness's own for the whole run
(database.cluster), or an existing one named by `--db-url`; and why the db checks cannot run when
neither is possible (one line with the fix)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..catalog import doctor
from ..database import cluster, rowenv, schema
from .dbcount import DbTarget, reset_problem
from .suite import is_db_row

# Connections beyond the rows' pools: Postgres' superuser_reserved_connections (3), the checks' own
# connection, and a row's previous pool still closing while the next row starts.
SPARE_CONNECTIONS = 8


@dataclass
class DbSetup:
    target: DbTarget | None = None  # None: no db row selected, or `problem`
    problem: str | None = None  # why a db row's database checks cannot run here
    pid: int | None = None  # the managed PostgreSQL's postmaster


def row_connections(m: Any, server_cpus: list[int]) -> int:
    """The most connections a row opens: $DB_POOL per process (run_server's $WORKERS rule)."""
    workers = m.workers or len(server_cpus)
    return rowenv.db_pool(m, workers) * (workers if m.counter == "per-process" else 1)


def not_installed() -> str:
    return (f"PostgreSQL is not installed, so the db checks are skipped; fix: {doctor.POSTGRES_HINT} "
            "(`make test` installs it)")


@contextmanager
def database_for(manifests: list[Any], server_cpus: list[int], db_url: str | None = None) -> Iterator[DbSetup]:
    """The database for the db rows among `manifests`, kept for the `with` block. `--db-url` is checked
    first (DatabaseError: one line naming what it lacks); a managed cluster is stopped by PID on leaving."""
    rows = [m for m in manifests if is_db_row(m)]
    if not rows:
        yield DbSetup()
        return
    if db_url:
        schema.check(db_url)
        with DbTarget(db_url, db_url).connect() as c:
            problem = reset_problem(c)
        yield DbSetup(DbTarget(db_url, db_url, problem))
        return
    if doctor.postgres_bindir() is None:
        yield DbSetup(problem=not_installed())
        return
    max_conn = max(row_connections(m, server_cpus) for m in rows) + SPARE_CONNECTIONS
    try:
        pg = cluster.start(max_conn)
    except schema.DatabaseError as e:
        yield DbSetup(problem=f"the harness's PostgreSQL did not start: {e}")
        return
    try:
        yield DbSetup(DbTarget(pg.url, pg.admin()), pid=pg.pid)
    finally:
        pg.stop()
