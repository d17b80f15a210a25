"""What a db row asks its database, counted by pg_stat_statements (SPEC.md, "Database endpoints"):
where the checks connect, a counting window (reset, send, read), and the rules the counts must meet.

Shared by the `db`, `db-counts` and `updates` checks and bench/db_query_counts.py, so the bench
counts exactly what the check judges. Counts are read for the database the connection is in
(hello_world), whoever ran the statements; the checks' own reads of World happen outside a window.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

# Table names as pg_stat_statements shows them (normalized text, constants as $n): World unquoted,
# "world" quoted by an ORM, or schema-qualified.
_WORLD = r'(?:"?\w+"?\.)?"?world"?(?![\w"])'
_READS_WORLD = re.compile(rf"\b(?:from|join)\s+{_WORLD}", re.I)
_UPDATES_WORLD = re.compile(rf"\bupdate\s+{_WORLD}", re.I)
_SELECT = re.compile(r"^[\s(]*(?:/\*.*?\*/\s*)*(?:select|with)\b", re.I | re.S)
# Several rows in one read: SPEC wants one SELECT per row (TechEmpower's rule for /queries, /updates).
_IN_LIST = re.compile(r"\bin\s*\(|=\s*any\s*\(", re.I)
SETTLE_S = 1.0  # how long a count may lag the response (a driver that answers before ReadyForQuery)
RESET_FIX = ("GRANT EXECUTE ON FUNCTION pg_stat_statements_reset TO that user (as a superuser), "
             "or leave --db-url out so the harness runs its own PostgreSQL")


@dataclass
class DbTarget:
    """The database the db checks use: `url` is what rows are told ($DATABASE_URL); `admin` is how the
    checks connect (the managed cluster's superuser keywords, or the --db-url); `counts_problem`
    says why pg_stat_statements cannot be reset there (None: counts can be taken)."""
    url: str
    admin: dict[str, object] | str
    counts_problem: str | None = None

    def connect(self) -> Any:
        """A psycopg connection in autocommit (no transaction left open between reads)."""
        import psycopg  # here, so importing the suite does not load the driver
        kw = self.admin if isinstance(self.admin, dict) else {"conninfo": self.admin}
        return psycopg.connect(**kw, autocommit=True)  # type: ignore[arg-type]


@dataclass
class Statement:
    query: str
    calls: int
    rows: int


@dataclass
class Counts:
    """The statements of one window that touch World, sorted into reads and writes."""
    statements: list[Statement] = field(default_factory=list)

    @property
    def reads(self) -> list[Statement]:
        return [s for s in self.statements if _SELECT.search(s.query) and _READS_WORLD.search(s.query)
                and not _UPDATES_WORLD.search(s.query)]

    @property
    def writes(self) -> list[Statement]:
        return [s for s in self.statements if _UPDATES_WORLD.search(s.query)]

    @property
    def select_calls(self) -> int:
        return sum(s.calls for s in self.reads)

    @property
    def update_calls(self) -> int:
        return sum(s.calls for s in self.writes)

    @property
    def update_rows(self) -> int:
        return sum(s.rows for s in self.writes)

    @property
    def in_list(self) -> list[str]:
        """Reads of World that fetch several rows at once (IN (...), = ANY (...))."""
        return [s.query for s in self.reads if _IN_LIST.search(s.query)]


_DB_OID = "(SELECT oid FROM pg_database WHERE datname = current_database())"


def reset_problem(c: Any) -> str | None:
    """Why this connection's user cannot reset pg_stat_statements for its database, or None."""
    from serverbench.database import schema
    missing = schema.stat_statements_problem(c)
    if missing:
        return missing
    ok = c.execute("SELECT coalesce(bool_or(has_function_privilege(p.oid, 'EXECUTE')), false) FROM pg_proc p "
                   "WHERE p.proname = 'pg_stat_statements_reset'").fetchone()[0]
    if ok:
        return None
    user = c.execute("SELECT current_user").fetchone()[0]
    return f"user {user} may not call pg_stat_statements_reset(), so queries cannot be counted; fix: {RESET_FIX}"


def reset(c: Any) -> None:
    """Forget this database's statement counts (other databases' are left alone)."""
    c.execute(f"SELECT pg_stat_statements_reset(0, {_DB_OID}, 0)")


def read(c: Any) -> Counts:
    rows = c.execute(f"SELECT query, calls, rows FROM pg_stat_statements WHERE dbid = {_DB_OID}").fetchall()
    return Counts([Statement(str(q), int(n), int(r)) for q, n, r in rows if q is not None])


def window(c: Any, action: Callable[[], T], want_reads: int) -> tuple[T, Counts]:
    """Reset, run `action` (the requests), read the counts. A count below `want_reads` is read again
    for up to SETTLE_S, until two reads agree: statistics are stored when a statement ends, which a
    driver may report to the row a moment before the server has."""
    reset(c)
    out = action()
    counts = read(c)
    deadline = time.monotonic() + SETTLE_S
    while counts.select_calls < want_reads and time.monotonic() < deadline:
        time.sleep(0.05)
        again = read(c)
        if again.select_calls == counts.select_calls and again.update_rows == counts.update_rows:
            break
        counts = again
    return out, counts


def judge_reads(counts: Counts, what: str, n: int, k: int) -> list[str]:
    """`k` requests of `n` rows: exactly n*k SELECTs reading World, none reading several rows at once."""
    problems = []
    if counts.select_calls != n * k:
        problems.append(f"{what}: expected exactly {n * k} SELECTs reading World (one per row: {k} requests × "
                        f"{n}), pg_stat_statements counted {counts.select_calls}")
    if counts.in_list:
        problems.append(f"{what}: expected one SELECT per row, seen a read of several rows at once "
                        f"(IN (...) / = ANY): {' '.join(counts.in_list[0].split())[:90]}")
    return problems


def judge_writes(counts: Counts, what: str, n: int, k: int, distinct: int) -> list[str]:
    """`k` requests of `n` rows written: n*k single-row UPDATEs, or k batched UPDATEs whose rows total
    `distinct` (the distinct ids of each response summed: a batch writes a repeated id once)."""
    calls, rows = counts.update_calls, counts.update_rows
    if calls == n * k and rows == n * k:
        return []
    if calls == k and rows == distinct:
        return []
    return [f"{what}: expected {n * k} single-row UPDATEs of World, or {k} batched UPDATEs writing {distinct} rows, "
            f"pg_stat_statements counted {calls} UPDATEs writing {rows} rows"]


def describe_writes(counts: Counts, n: int, k: int) -> str:
    return "single-row" if counts.update_calls == n * k else "batched"


def world(c: Any) -> dict[int, int]:
    """The World table now: id → randomNumber."""
    return {int(i): int(r) for i, r in c.execute("SELECT id, randomnumber FROM world").fetchall()}
