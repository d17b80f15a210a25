"""The run's database (issue 37): one PostgreSQL for the whole run, what a db row is told about it, its
CPU sampled beside the server's, and the figures a cell records of it.

Started once, when the plan holds a workload with the `db` feature, before the run is stored (so its
facts go into the run's fingerprint), and stopped by the runner's cleanup: `database/cluster.py` ties the
postmaster to the harness (a SIGKILL of serverbench kills it too), so nothing outlives a run. With
`--db-url` the rows use an existing PostgreSQL, checked for TechEmpower's schema first; its CPU is not
sampled (it may be on another machine), and the cells say so by leaving the database's CPU out.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from ..catalog import doctor
from ..catalog.manifests import Manifest
from ..database import cluster, facts as db_facts, rowenv, schema
from ..model import RunOptions
from ..processes.sampler import Sampler
from ..rules.saturation import saturated

# Postgres' max_connections: every row's pool (rowenv.DB_POOL_TOTAL, more for a per-process row whose
# processes each get one at least) and the harness's own connections, with room to spare.
MAX_CONNECTIONS = 100


def per_request_us(cpu_s: float, ok: int) -> float | None:
    """CPU seconds spread over successful requests, µs; None without one."""
    return round(cpu_s / ok * 1e6, 2) if ok > 0 else None


class RunDatabase:
    """A started (or checked) database and what the runner asks of it."""

    def __init__(self, url: str, facts: dict[str, Any], pg: cluster.ManagedPostgres | None,
                 client_cpus: list[int]) -> None:
        self.url, self.facts, self.pg = url, facts, pg
        self.cpus = list(pg.cpus) if pg is not None else None
        self.shared = sorted(set(self.cpus or []) & set(client_cpus))

    @staticmethod
    def preflight(opts: RunOptions, db_url: str | None) -> None:
        """What can be refused before anything runs (the CPU split's calibration included): a server on
        another machine, an existing database without the schema, no PostgreSQL installed."""
        if opts.server_on_cluster:
            raise schema.DatabaseError(
                "the db workloads do not run with --server-on-cluster yet (the server machine's row is not told "
                "a database, and the harness's own listens on this machine's loopback only); fix: run them "
                "without --server-on-cluster")
        if db_url:
            schema.check(db_url)
        elif doctor.postgres_bindir() is None:
            raise schema.DatabaseError(f"PostgreSQL's server binaries (initdb, postgres) were not found; fix: "
                                       f"{doctor.POSTGRES_HINT}")

    @classmethod
    def open(cls, opts: RunOptions, db_url: str | None) -> "RunDatabase":
        """The harness's own PostgreSQL on `opts.db_cpus` (default: the load generator's CPUs, so the
        server's stay its own), or the one `db_url` names. DatabaseError: one line with the fix."""
        client = list(opts.client_cpus or [])
        cls.preflight(opts, db_url)
        if db_url:
            return cls(db_url, db_facts.external_facts(db_url), None, client)
        pg = cluster.start(MAX_CONNECTIONS, cpus=opts.db_cpus or client or None)
        try:
            return cls(pg.url, db_facts.managed_facts(pg), pg, client)
        except BaseException:
            pg.stop()
            raise

    def env(self, m: Manifest, workers: int) -> dict[str, str]:
        return rowenv.row_env(self.url, m, workers)

    def sampler(self, interval: float) -> "DatabaseSampler | None":
        """The postmaster's tree (it forks a backend per connection) sampled like a server, and the rows'
        connections counted once a second; None for an existing database, whose processes are not this
        machine's to read."""
        if self.pg is None:
            return None
        return DatabaseSampler(Sampler(self.pg.pid, interval=interval), self.pg.admin())

    def figures(self, usage: dict[str, Any] | None, ok: int, m: Manifest, workers: int) -> dict[str, Any]:
        """The cell's `DatabaseFigures`: the database's CPU over the measured run and per request."""
        pool = self.env(m, workers).get("DB_POOL")
        out: dict[str, Any] = {"db_pool": int(pool) if pool else None, "db_cpus": self.cpus,
                               "db_shares_client_cpus": bool(self.shared) if self.pg is not None else None}
        if usage:
            out.update(db_connections_peak=usage.get("connections_peak"), db_active_mean=usage.get("active_mean"))
            user, sys_ = float(usage.get("cpu_user_s") or 0.0), float(usage.get("cpu_sys_s") or 0.0)
            out.update(db_cpu_user_s=round(user, 3), db_cpu_sys_s=round(sys_, 3),
                       db_cpu_percent=usage.get("cpu_percent_mean"),
                       db_cpu_us_per_req=per_request_us(user + sys_, ok))
        return out

    def add_figures(self, metrics: dict[str, Any], usage: dict[str, Any] | None, m: Manifest, workers: int,
                    client_cores: int) -> None:
        """The database's figures for a cell into `metrics`, and the client's headroom with its CPU counted."""
        figures = self.figures(usage, int(metrics.get("ok") or 0), m, workers)
        metrics.update(figures)
        client = metrics.get("client")
        if client is not None and self.client_saturated(client.client_cpu_percent, figures.get("db_cpu_percent"),
                                                         client_cores):
            client.client_saturated = True

    def client_saturated(self, client_cpu_percent: float | None, db_cpu_percent: float | None,
                         client_cores: int) -> bool:
        """The load generator's headroom with what the database took from its CPUs counted: on a shared
        CPU the two together are what the saturation rule sees (its share of the database's CPU in
        proportion to the CPUs they share)."""
        if not self.shared or self.cpus is None or client_cpu_percent is None or db_cpu_percent is None:
            return False
        taken = db_cpu_percent * len(self.shared) / len(self.cpus)
        return saturated(client_cpu_percent + taken, client_cores)

    def close(self) -> None:
        if self.pg is not None:
            self.pg.stop()
            self.pg = None


# pg_stat_activity once a second: cheap next to the load (one catalog read), often enough to see a pool
# that opens all its connections or keeps them idle.
CONNECTIONS_EVERY_S = 1.0
_CONNECTIONS = ("SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND pid <> pg_backend_pid()")
# How busy those connections were is PostgreSQL's own count, not a look: `active_time` (ms a backend spent
# running statements, PostgreSQL >= 14). A look at pg_stat_activity's `state` saw 0 active in every cell of
# a run on 2026-11-28, 38k queries/s included: with the database on one CPU, the look's own backend runs
# only while the others are off the CPU, between their queries. A backend adds its time to the counter at
# most once a second, and a statement's time only at the report after its next statement (PostgreSQL 15
# reports before it marks the backend idle; seen on 15.18), so under load a reading lags by about a second
# at each end of the window and the two lags cancel; an idle pool's last statement waits for its next.
_ACTIVE_MS = "SELECT coalesce(sum(active_time), 0) FROM pg_stat_database WHERE datname = %s"


class DatabaseSampler:
    """The database's process tree (a Sampler) and its rows' connections: the most open at any of the
    once-a-second looks, and how many ran a statement on average over the window (PostgreSQL's count)."""

    def __init__(self, tree: Sampler, admin: dict[str, object]) -> None:
        self.tree, self.admin = tree, admin
        self.peak = 0
        self._active: list[tuple[float, float]] = []  # (monotonic s, active_time ms) at start and at stop
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="db-connections", daemon=True)

    def start(self) -> "DatabaseSampler":
        self.tree.start()
        self._read_active()
        self._thread.start()
        return self

    def _read_active(self) -> None:
        try:
            with psycopg.connect(**self.admin, autocommit=True) as c:
                row = c.execute(_ACTIVE_MS, (schema.DB_NAME,)).fetchone()
            self._active.append((time.monotonic(), float(row[0] if row else 0.0)))
        except psycopg.Error:
            return  # the database went away: no mean for this window

    def _loop(self) -> None:
        try:
            with psycopg.connect(**self.admin, autocommit=True) as c:
                while True:
                    row = c.execute(_CONNECTIONS, (schema.DB_USER,)).fetchone() or (0,)
                    self.peak = max(self.peak, int(row[0]))
                    if self._stop.wait(CONNECTIONS_EVERY_S):
                        return
        except psycopg.Error:
            return  # the database went away: the tree's figures still say what it did

    def stop(self) -> "DatabaseSampler":
        self._stop.set()
        self._read_active()
        self._usage = self.tree.stop().to_dict()
        self._thread.join(timeout=5)
        return self

    @property
    def active_mean(self) -> float | None:
        """Connections running a statement, on average over the window (None: a reading failed)."""
        if len(self._active) != 2 or self._active[1][0] <= self._active[0][0]:
            return None
        (t0, ms0), (t1, ms1) = self._active
        return round(max(0.0, ms1 - ms0) / 1000.0 / (t1 - t0), 2)

    def to_dict(self) -> dict[str, Any]:
        return {**self._usage, "connections_peak": self.peak, "active_mean": self.active_mean}
