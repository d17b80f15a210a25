"""Results store: SQLite (WAL), versioned schema, one transaction per cell.

Tables (docs/DESIGN.md):
  runs(id, started_at, finished_at, status, fingerprint_json, options_json, owner)
      status: 'running' | 'finished' | 'interrupted' | 'failed'
      owner: "<pid>@<boot id>" of the process measuring it, so a 'running' run whose
      process died (power loss, SIGKILL) is shown as 'abandoned' and can be resumed
  cells(id, run_id, server, workload, point, repetition, status, error, log_tail,
        started_at, finished_at, loadgen_json, usage_json, metrics_json)
      status: 'ok' | 'failed' | 'skipped'; one row per (run_id, server, workload, point,
      repetition) — recording the same key again (a resumed run retrying a failed cell)
      replaces the row.
  verdicts(id, server, checked_at, passed, checks_json, folder_hash)  (history; latest wins)
  profiles(id, server, measured_at, folder_hash, profile_json)  (history; latest wins)
      profile_json holds a `ServerProfile` (defined here) (`serverbench profile`; version 5)
  schema_version(version)

`metrics_json` holds a `model.CellMetrics` (every figure, with its unit, is documented there);
`loadgen_json` a `model.LoadgenReport`. Cells are read and written only through those types.
Version 4 added `runs.error` (why a run 'failed') and rewrote every cell's metrics through
CellMetrics (`rps` became successful responses/s; the old figure moved to `responses_rps`).
"""
from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from .model import CellKey, CellMetrics, CellRecord, LoadgenFormatError, LoadgenReport

class StoreError(Exception):
    """The results database cannot be used (one-line message naming the file and the fix)."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class RunRow:
    id: int
    started_at: str
    finished_at: str | None
    status: str
    fingerprint: dict
    options: dict
    cells_ok: int = 0
    cells_failed: int = 0
    cells_skipped: int = 0
    owner: str | None = None
    error: str | None = None  # why the run failed (status 'failed')

    @property
    def shown_status(self) -> str:
        """The status, with 'running' runs whose process is gone shown as 'abandoned'."""
        if self.status == "running" and not owner_alive(self.owner):
            return "abandoned"
        return self.status


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def this_owner() -> str:
    return f"{os.getpid()}@{_boot_id()}"


def owner_alive(owner: str | None) -> bool:
    """Is the process that wrote `owner` still alive (same boot, pid exists)?"""
    if not owner or "@" not in owner:
        return False
    pid, boot = owner.split("@", 1)
    if boot != _boot_id():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return pid.isdigit()
    return True


@dataclass
class Verdict:
    server: str
    passed: bool
    checked_at: str
    checks: list[dict]
    folder_hash: str | None


# -- what a contestant costs to build, ship and run idle (`serverbench profile`) ----------------
class RssLevel(BaseModel):
    """The server's process-tree RSS with `held` idle keep-alive connections open."""

    model_config = ConfigDict(extra="ignore")
    requested: int = Field(description="idle connections the profiler tried to open")
    held: int = Field(description="of those, answered GET / with 200 and still open when RSS was read")
    rss_bytes: int = Field(description="RSS summed over the server's process tree (mean of 1 s of samples)")


class ServerProfile(BaseModel):
    """One `serverbench profile` of a contestant; None = not measured (see `errors`)."""

    model_config = ConfigDict(extra="ignore")
    server: str
    measured_at: str
    folder_hash: str | None = Field(None, description="build.folder_hash of the code profiled")
    # source (pygount: code lines only; blanks, comments, lock and generated files excluded)
    source_lines: int | None = Field(None, description="code lines of the row and the _shared code it declares")
    own_source_lines: int | None = None
    shared_source_lines: int | None = None
    source_files: int | None = None
    source_lines_by_language: dict[str, int] = Field(default_factory=dict)
    dependencies: int | None = Field(None, description="direct third-party dependencies in its manifest")
    dependency_names: list[str] = Field(default_factory=list)
    dependency_manifest: str | None = Field(None, description="the file they come from; None = no manifest")
    system_packages: list[str] = Field(default_factory=list, description="[install].apt: Debian packages it needs")
    # build (wall seconds)
    build_cold_s: float | None = Field(None, description="build with empty caches (after the download step "
                                                         "when the tool has one)")
    build_download_s: float | None = Field(None, description="dependency download timed before the cold build "
                                                             "(cargo fetch, go mod download, mvn dependency:go-offline)")
    build_cold_includes_download: bool | None = Field(None, description="True: downloads happened inside the cold build")
    build_cold_at: str | None = Field(None, description="when the cold figure was measured (an earlier profile of "
                                                        "the same code when this one skipped it)")
    build_warm_s: float | None = Field(None, description="the build command again, everything built (no-op)")
    # what must be shipped to run it
    artifact_bytes: int | None = None
    artifact_kind: str | None = Field(None, description="native binary | JVM classes + jars | bytecode | "
                                                        "source + installed packages")
    artifact_paths: list[str] = Field(default_factory=list, description="relative to the server folder")
    runtime_needed: str | None = Field(None, description="what must be installed to run the artifact")
    # start-up and idle memory
    startup_ms: float | None = Field(None, description="median of process start → first 200 on GET /")
    startup_runs_ms: list[float] = Field(default_factory=list)
    idle_rss_bytes: int | None = Field(None, description="process-tree RSS 2 s after ready, no connection open")
    rss_levels: list[RssLevel] = Field(default_factory=list)
    rss_per_connection_bytes: float | None = Field(None, description="slope of RSS between the two connection levels")
    rss_slope_points: list[int] = Field(default_factory=list, description="the connection counts the slope is "
                                                                         "between (0 = idle)")
    bound: int | None = Field(None, description="max_connections for the workers it ran with (None = unbounded)")
    workers: int | None = None
    errors: list[str] = Field(default_factory=list, description="steps that could not be measured, one line each")

    @property
    def rss_per_1000_connections_bytes(self) -> float | None:
        r = self.rss_per_connection_bytes
        return None if r is None else 1000 * r

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _script(db: sqlite3.Connection, sql: str) -> None:
    # executescript() would COMMIT first; run statements one by one inside our transaction.
    for stmt in sql.split(";"):
        if stmt.strip():
            db.execute(stmt)


def _v1(db: sqlite3.Connection) -> None:
    _script(db, """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
            fingerprint_json TEXT NOT NULL, options_json TEXT NOT NULL);
        CREATE TABLE cells (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            server TEXT NOT NULL, workload TEXT NOT NULL, point TEXT NOT NULL,
            repetition INTEGER NOT NULL, status TEXT NOT NULL, error TEXT, log_tail TEXT,
            started_at TEXT, finished_at TEXT,
            loadgen_json TEXT, usage_json TEXT, metrics_json TEXT NOT NULL DEFAULT '{}');
        CREATE TABLE verdicts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            server TEXT NOT NULL, checked_at TEXT NOT NULL, passed INTEGER NOT NULL,
            checks_json TEXT NOT NULL, folder_hash TEXT);
    """)


def _v2(db: sqlite3.Connection) -> None:
    # One row per cell key (resume replaces a retried cell); keep the newest duplicate.
    _script(db, """
        DELETE FROM cells WHERE id NOT IN (
            SELECT MAX(id) FROM cells GROUP BY run_id, server, workload, point, repetition);
        CREATE UNIQUE INDEX cells_key ON cells(run_id, server, workload, point, repetition);
        CREATE INDEX verdicts_server ON verdicts(server, id);
    """)


def _v3(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE runs ADD COLUMN owner TEXT")


def _v4(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE runs ADD COLUMN error TEXT")
    # Every cell's figures through the model: types checked, keys this version no longer
    # knows dropped, so later readers can rely on CellMetrics alone.
    rows = db.execute("SELECT id, metrics_json FROM cells").fetchall()
    for cell_id, text in rows:
        old = _loads(text) or {}
        # schema 3 stored responses of any status as rps; now rps counts successful ones only
        if isinstance(old.get("rps"), (int, float)) and "responses_rps" not in old:
            old["responses_rps"] = old["rps"]
            if isinstance(old.get("ok"), int) and old.get("duration_s"):
                old["rps"] = old["ok"] / old["duration_s"]
        metrics = CellMetrics.load(old).dump()
        db.execute("UPDATE cells SET metrics_json=? WHERE id=?", (json.dumps(metrics), cell_id))


def _v5(db: sqlite3.Connection) -> None:
    # What each contestant costs to build, ship and run idle (`serverbench profile`).
    _script(db, """
        CREATE TABLE profiles (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            server TEXT NOT NULL, measured_at TEXT NOT NULL, folder_hash TEXT,
            profile_json TEXT NOT NULL);
        CREATE INDEX profiles_server ON profiles(server, id);
    """)


# Append only: MIGRATIONS[i] brings a database from version i to i + 1.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1, _v2, _v3, _v4, _v5]
SCHEMA_VERSION = len(MIGRATIONS)


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None


class Store:
    """The results database. Every write is its own committed transaction."""

    def __init__(self, path: Path | str | None = None) -> None:
        if path is None:
            from . import paths
            path = paths.DB_PATH
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a usable SQLite database ({e}); move it aside") from None
        self._migrate()

    # -- schema ---------------------------------------------------------------
    def schema_version(self) -> int:
        has = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'").fetchone()
        if not has:
            return 0
        row = self.db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(row[0] or 0)

    def _migrate(self) -> None:
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {current} is newer than this serverbench "
                             f"understands ({SCHEMA_VERSION}); upgrade serverbench or use another --db")
        for version in range(current, SCHEMA_VERSION):
            with self._tx():
                if version == 0:
                    self.db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                MIGRATIONS[version](self.db)
                self.db.execute("DELETE FROM schema_version")
                self.db.execute("INSERT INTO schema_version(version) VALUES (?)", (version + 1,))

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, exc_type, exc, tb) -> None:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")

    def _tx(self) -> "Store._Tx":
        return Store._Tx(self.db)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs -----------------------------------------------------------------
    def new_run(self, fingerprint: dict, options: dict) -> int:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO runs(started_at, status, fingerprint_json, options_json, owner) VALUES (?,?,?,?,?)",
                (now_iso(), "running", json.dumps(fingerprint, default=str),
                 json.dumps(options, default=str), this_owner()))
            return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        """status: 'finished' (the plan completed) | 'interrupted' | 'failed' (with `error`)."""
        with self._tx() as db:
            db.execute("UPDATE runs SET status=?, finished_at=?, error=? WHERE id=?",
                       (status, now_iso(), error, run_id))

    def reopen_run(self, run_id: int) -> None:
        """Mark a run 'running' again, owned by this process (resume)."""
        with self._tx() as db:
            db.execute("UPDATE runs SET status='running', finished_at=NULL, error=NULL, owner=? WHERE id=?",
                       (this_owner(), run_id))

    def _run_rows(self, where: str = "", args: tuple = ()) -> list[RunRow]:
        rows = self.db.execute(f"""
            SELECT r.id, r.started_at, r.finished_at, r.status, r.fingerprint_json, r.options_json,
                   SUM(c.status='ok'), SUM(c.status='failed'), SUM(c.status='skipped'), r.owner, r.error
            FROM runs r LEFT JOIN cells c ON c.run_id = r.id {where}
            GROUP BY r.id ORDER BY r.id""", args).fetchall()
        return [RunRow(r[0], r[1], r[2], r[3], _loads(r[4]) or {}, _loads(r[5]) or {},
                       r[6] or 0, r[7] or 0, r[8] or 0, r[9], r[10]) for r in rows]

    def runs(self) -> list[RunRow]:
        return self._run_rows()

    def run(self, run_id: int) -> RunRow:
        rows = self._run_rows("WHERE r.id = ?", (run_id,))
        if not rows:
            known = ", ".join(str(r.id) for r in self.runs()[-10:]) or "none"
            raise StoreError(f"no run {run_id} in {self.path}; recent runs: {known} (see `serverbench results`)")
        return rows[0]

    def measured_workloads(self) -> dict[int, set[str]]:
        """Per run, the workloads it stored an 'ok' cell of (a set such as `quick` expanded)."""
        out: dict[int, set[str]] = {}
        for rid, w in self.db.execute("SELECT DISTINCT run_id, workload FROM cells WHERE status = 'ok'"):
            out.setdefault(rid, set()).add(w)
        return out

    def latest_run_id(self) -> int | None:
        row = self.db.execute("SELECT MAX(id) FROM runs").fetchone()
        return row[0]

    # -- cells ----------------------------------------------------------------
    def record_cell(self, run_id: int, cell: CellRecord) -> int:
        """Write one cell in its own transaction (replacing an earlier row with the same key)."""
        with self._tx() as db:
            cur = db.execute("""
                INSERT INTO cells(run_id, server, workload, point, repetition, status, error,
                                  log_tail, started_at, finished_at, loadgen_json, usage_json, metrics_json)
                VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)
                ON CONFLICT(run_id, server, workload, point, repetition) DO UPDATE SET
                    status=excluded.status, error=excluded.error, log_tail=excluded.log_tail,
                    started_at=excluded.started_at, finished_at=excluded.finished_at,
                    loadgen_json=excluded.loadgen_json, usage_json=excluded.usage_json,
                    metrics_json=excluded.metrics_json
                RETURNING id""",
                (run_id, cell.server, cell.workload, cell.point, cell.repetition, cell.status,
                 cell.error, cell.log_tail, cell.started_at, cell.finished_at,
                 json.dumps(cell.loadgen.dump()) if cell.loadgen is not None else None,
                 json.dumps(cell.usage) if cell.usage is not None else None,
                 json.dumps(cell.metrics.dump())))
            cell_id = int(cur.fetchone()[0])
        cell.id, cell.run_id = cell_id, run_id
        return cell_id

    def cells(self, run_id: int) -> list[CellRecord]:
        rows = self.db.execute("""
            SELECT id, run_id, server, workload, point, repetition, status, error, log_tail,
                   started_at, finished_at, loadgen_json, usage_json, metrics_json
            FROM cells WHERE run_id=? ORDER BY id""", (run_id,)).fetchall()
        return [CellRecord(server=r[2], workload=r[3], point=r[4], repetition=r[5], status=r[6],
                           error=r[7], log_tail=r[8], started_at=r[9], finished_at=r[10],
                           loadgen=self._loadgen(r[11], r[0]), usage=_loads(r[12]),
                           metrics=CellMetrics.load(_loads(r[13])), id=r[0], run_id=r[1]) for r in rows]

    def _loadgen(self, text: str | None, cell_id: int) -> LoadgenReport | None:
        if not text:
            return None
        try:
            return LoadgenReport.parse(json.loads(text), f"{self.path} cell {cell_id}")
        except (LoadgenFormatError, json.JSONDecodeError) as e:
            raise StoreError(f"{str(e).split('; ')[0]}; the stored loadgen result is unreadable, "
                             "re-run that cell (`serverbench run --resume`)") from None

    def done_keys(self, run_id: int) -> set[CellKey]:
        """Keys of cells that completed ('ok'); resume skips these and retries the rest."""
        rows = self.db.execute(
            "SELECT server, workload, point, repetition FROM cells WHERE run_id=? AND status='ok'",
            (run_id,)).fetchall()
        return {(r[0], r[1], r[2], int(r[3])) for r in rows}

    # -- verdicts -------------------------------------------------------------
    def record_verdict(self, server: str, passed: bool, checks: list[dict], folder_hash: str | None) -> None:
        with self._tx() as db:
            db.execute("INSERT INTO verdicts(server, checked_at, passed, checks_json, folder_hash) "
                       "VALUES (?,?,?,?,?)",
                       (server, now_iso(), int(bool(passed)), json.dumps(checks, default=str), folder_hash))

    def verdict(self, server: str) -> Verdict | None:
        r = self.db.execute("SELECT server, passed, checked_at, checks_json, folder_hash FROM verdicts "
                            "WHERE server=? ORDER BY id DESC LIMIT 1", (server,)).fetchone()
        if r is None:
            return None
        return Verdict(r[0], bool(r[1]), r[2], _loads(r[3]) or [], r[4])

    def verdict_before(self, server: str, until: str | None) -> Verdict | None:
        """The latest verdict checked at or before `until` (ISO time; None: the latest): what a run used."""
        if until is None:
            return self.verdict(server)
        r = self.db.execute("SELECT server, passed, checked_at, checks_json, folder_hash FROM verdicts "
                            "WHERE server=? AND checked_at<=? ORDER BY id DESC LIMIT 1", (server, until)).fetchone()
        return None if r is None else Verdict(r[0], bool(r[1]), r[2], _loads(r[3]) or [], r[4])

    def verdicts(self) -> dict[str, Verdict]:
        """The latest verdict of every server that has one."""
        out: dict[str, Verdict] = {}
        for (server,) in self.db.execute("SELECT DISTINCT server FROM verdicts ORDER BY server"):
            v = self.verdict(server)
            if v is not None:
                out[server] = v
        return out

    # -- profiles -------------------------------------------------------------
    def record_profile(self, profile: ServerProfile) -> None:
        with self._tx() as db:
            db.execute("INSERT INTO profiles(server, measured_at, folder_hash, profile_json) VALUES (?,?,?,?)",
                       (profile.server, profile.measured_at, profile.folder_hash, json.dumps(profile.dump())))

    def latest_profile(self, server: str) -> ServerProfile | None:
        r = self.db.execute("SELECT profile_json FROM profiles WHERE server=? ORDER BY id DESC LIMIT 1",
                            (server,)).fetchone()
        return ServerProfile.model_validate(json.loads(r[0])) if r else None

    def latest_profiles(self, servers: list[str] | None = None) -> dict[str, ServerProfile]:
        """The latest profile of each of `servers` that has one (all servers when None)."""
        if servers is None:
            servers = [r[0] for r in self.db.execute("SELECT DISTINCT server FROM profiles ORDER BY server")]
        out = {s: p for s in servers if (p := self.latest_profile(s)) is not None}
        return out


__all__ = ["Store", "StoreError", "CellRecord", "RunRow", "Verdict", "RssLevel", "ServerProfile", "SCHEMA_VERSION", "MIGRATIONS",
           "now_iso"]

