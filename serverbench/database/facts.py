"""What a result records about its database: the Postgres version, the settings that shape a
measurement, whether pg_stat_statements counts queries, and where it ran (a cluster the harness ran,
with its folder and CPUs, or an existing one, by its masked URL)."""
from __future__ import annotations

from typing import Any

import psycopg

from serverbench.database import schema
from serverbench.database.cluster import ManagedPostgres
from serverbench.database.schema import DatabaseError

# Read with SHOW, so sizes keep their units (shared_buffers = 256MB).
SETTINGS = ("synchronous_commit", "max_connections", "shared_buffers", "work_mem", "fsync", "jit",
            "wal_level", "shared_preload_libraries")


def _read(c: psycopg.Connection) -> dict[str, Any]:
    """`c` in autocommit: a setting this user may not read (shared_preload_libraries, for a
    non-superuser) is recorded as None and the rest still read."""
    settings: dict[str, str | None] = {}
    for name in SETTINGS:
        try:
            settings[name] = c.execute(f"SHOW {name}").fetchone()[0]
        except psycopg.errors.InsufficientPrivilege:
            settings[name] = None
    return {"version": c.execute("SHOW server_version").fetchone()[0],
            "settings": settings,
            "pg_stat_statements": schema.stat_statements_problem(c) is None}


def managed_facts(pg: ManagedPostgres) -> dict[str, Any]:
    """The facts of a cluster the harness runs: read over its socket, with its folder and CPUs."""
    try:
        with psycopg.connect(**pg.admin(), autocommit=True) as c:
            facts = _read(c)
    except psycopg.Error as e:
        raise DatabaseError(f"cannot read the settings of PostgreSQL (pid {pg.pid}): "
                            f"{' '.join(str(e).split())}") from None
    return {**facts, "where": "managed", "data_folder": str(pg.data), "cpus": list(pg.cpus), "port": pg.port}


def external_facts(db_url: str) -> dict[str, Any]:
    """The facts of an existing PostgreSQL (`--db-url`); its URL stored with the password masked."""
    try:
        with psycopg.connect(db_url, connect_timeout=schema.CONNECT_TIMEOUT_S, autocommit=True) as c:
            facts = _read(c)
    except psycopg.Error as e:
        raise DatabaseError(f"cannot read the settings of {schema.mask_url(db_url)}: "
                            f"{schema.error_line(e, db_url)}") from None
    return {**facts, "where": "external", "url": schema.mask_url(db_url)}
