"""TechEmpower's test data: the World and Fortune tables, loaded from a seed, and the check of an
existing database that a run would be pointed at with `--db-url`.

The driver is psycopg 3 (the PostgreSQL project's own Python driver family, kept up to date, with
binary wheels): the harness needs a driver anyway to reset and read pg_stat_statements while it
measures, and COPY through it loads the 10,000 World rows in one round trip, where `psql` would
need a generated script and a subprocess per step.
"""
from __future__ import annotations

import random
import re
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

# TechEmpower's names (toolset/databases/postgres): the database, and the user rows connect as.
DB_NAME = "hello_world"
DB_USER = "benchmarkdbuser"
DB_PASSWORD = "benchmarkdbpass"
WORLD_ROWS = 10_000
DEFAULT_SEED = 1
CONNECT_TIMEOUT_S = 5

# TechEmpower's 12 fortunes, by id: the standard test data every row's /fortunes page is built from.
FORTUNES: tuple[tuple[int, str], ...] = (
    (1, "fortune: No such file or directory"),
    (2, "A computer scientist is someone who fixes things that aren't broken."),
    (3, "After enough decimal places, nobody gives a damn."),
    (4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"),
    (5, "A computer program does what you tell it to do, not what you want it to do."),
    (6, "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen"),
    (7, "Any program that runs right is obsolete."),
    (8, "A list is only as strong as its weakest link. — Donald Knuth"),
    (9, "Feature: A bug with seniority."),
    (10, "Computers make very fast, very accurate mistakes."),
    (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
    (12, "フレームワークのベンチマーク"),
)

# TechEmpower's script names the tables and columns unquoted (World, randomNumber), so the catalog
# holds them lowercased and a row may write either case unquoted. Its script also makes quoted
# "World"/"Fortune" copies for ORMs that quote; they are left out here so that every row reads and
# updates the one World table the checks diff.
_DDL = (
    "CREATE TABLE World (id integer NOT NULL PRIMARY KEY, randomNumber integer NOT NULL DEFAULT 0)",
    "CREATE TABLE Fortune (id integer NOT NULL PRIMARY KEY, message varchar(2048) NOT NULL)",
)
SCHEMA_FIX = ("load TechEmpower's schema and data (toolset/databases/postgres/create-postgres.sql: "
              f"World with {WORLD_ROWS:,} rows, Fortune with its 12 rows), or leave --db-url out so "
              "the harness runs its own")
PRELOAD_FIX = ("add shared_preload_libraries = 'pg_stat_statements' to postgresql.conf and restart "
               "PostgreSQL")


class DatabaseError(Exception):
    """A database could not be started, reached or used; the message is one line with the fix."""


def world_rows(seed: int = DEFAULT_SEED) -> list[tuple[int, int]]:
    """(id, randomNumber) for ids 1..10,000, randomNumber uniform in 1..10,000 like TechEmpower's;
    Python's seeded generator, not Postgres' random(), so a seed gives the same table on every
    Postgres version."""
    rng = random.Random(seed)
    return [(i, rng.randint(1, WORLD_ROWS)) for i in range(1, WORLD_ROWS + 1)]


def url(host: str, port: int) -> str:
    """The `$DATABASE_URL` a row connects with."""
    return f"postgres://{DB_USER}:{DB_PASSWORD}@{host}:{port}/{DB_NAME}"


def mask_url(text: str) -> str:
    """`text` with its password hidden: a URL's user:password@, or a conninfo's password=."""
    try:
        parts = urlsplit(text)
        if parts.password:
            host = parts.netloc.rpartition("@")[2]
            netloc = f"{parts.username}:***@{host}"
            return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        pass
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", text)


def error_line(e: BaseException, db_url: str) -> str:
    """A driver's error on one line, the URL's password masked should the message quote it."""
    password = urlsplit(db_url).password if "://" in db_url else None
    line = " ".join(str(e).split())
    return line.replace(password, "***") if password else line


def load(admin: dict[str, object], seed: int = DEFAULT_SEED) -> None:
    """Create the rows' user and database, the extension, both tables and their data, as the
    cluster's superuser (`admin`: psycopg connection keywords, its dbname replaced)."""
    with psycopg.connect(**{**admin, "dbname": "postgres"}, autocommit=True) as c:
        c.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(DB_USER), sql.Literal(DB_PASSWORD)))
        c.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8'").format(
            sql.Identifier(DB_NAME)))
    with psycopg.connect(**{**admin, "dbname": DB_NAME}) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        for ddl in _DDL:
            c.execute(ddl)
        with c.cursor() as cur:
            with cur.copy("COPY world (id, randomnumber) FROM STDIN") as copy:
                for row in world_rows(seed):
                    copy.write_row(row)
            cur.executemany("INSERT INTO fortune (id, message) VALUES (%s, %s)", FORTUNES)
        # TechEmpower grants all privileges on both tables; the user is no superuser here (its
        # script makes it one): a row under test has no business changing the cluster it is measured with
        c.execute(sql.SQL("GRANT ALL PRIVILEGES ON world, fortune TO {}").format(sql.Identifier(DB_USER)))
    with psycopg.connect(**{**admin, "dbname": DB_NAME}, autocommit=True) as c:
        # now rather than by autovacuum in the middle of a measurement (10,000 new rows trip its threshold)
        c.execute("VACUUM ANALYZE")
        c.execute("SELECT pg_stat_statements_reset()")


def _problems(c: psycopg.Connection) -> list[str]:
    """What the database lacks of TechEmpower's schema and data and of pg_stat_statements."""
    out: list[str] = []
    cols = c.execute("SELECT table_name, column_name FROM information_schema.columns "
                     "WHERE table_schema = current_schema() AND table_name IN ('world', 'fortune')").fetchall()
    have = {(t, col) for t, col in cols}
    for table, needed in (("world", ("id", "randomnumber")), ("fortune", ("id", "message"))):
        if not any(t == table for t, _ in have):
            out.append(f"table {table} is missing")
            continue
        out += [f"column {table}.{col} is missing" for col in needed if (table, col) not in have]
    if not out:
        n, lo, hi = c.execute("SELECT count(*), min(randomnumber), max(randomnumber) FROM world").fetchone()
        if n != WORLD_ROWS or (n and (lo < 1 or hi > WORLD_ROWS)):
            out.append(f"world has {n} rows with randomNumber in {lo}..{hi}, not {WORLD_ROWS} in 1..{WORLD_ROWS}")
        got = c.execute("SELECT id, message FROM fortune ORDER BY id").fetchall()
        if [tuple(r) for r in got] != list(FORTUNES):
            wrong = next((i for i, m in FORTUNES if (i, m) not in got), None)
            out.append(f"fortune has {len(got)} rows, not TechEmpower's 12"
                       + (f" (id {wrong} differs or is missing)" if wrong else ""))
    missing = stat_statements_problem(c)
    return out + ([missing] if missing else [])


def stat_statements_problem(c: psycopg.Connection) -> str | None:
    """Why pg_stat_statements cannot count this database's queries, or None. Probed by reading the
    view, which any user may (shared_preload_libraries itself is hidden from non-superusers);
    `c` in autocommit, so a failed probe leaves it usable."""
    try:
        c.execute("SELECT count(*) FROM pg_stat_statements").fetchone()
    except psycopg.errors.UndefinedTable:
        return ("extension pg_stat_statements is not created in this database "
                "(fix: CREATE EXTENSION pg_stat_statements, as a superuser)")
    except psycopg.errors.ObjectNotInPrerequisiteState:
        return f"pg_stat_statements is not preloaded (fix: {PRELOAD_FIX})"
    return None


def check(db_url: str) -> None:
    """An existing PostgreSQL (`--db-url`) is reachable and holds TechEmpower's schema and data with
    pg_stat_statements; else DatabaseError, one line naming the masked URL, what lacks, the fix."""
    shown = mask_url(db_url)
    try:
        conn = psycopg.connect(db_url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
    except (psycopg.Error, ValueError) as e:
        raise DatabaseError(f"cannot connect to {shown} ({error_line(e, db_url)}); fix: start that PostgreSQL "
                            "or correct --db-url (or leave it out so the harness runs its own)") from None
    with conn:
        try:
            problems = _problems(conn)
        except psycopg.Error as e:
            raise DatabaseError(f"{shown}: cannot read TechEmpower's tables ({error_line(e, db_url)}); "
                                f"fix: {SCHEMA_FIX}") from None
    if problems:
        schema = "" if all("fix:" in p for p in problems) else f"; fix: {SCHEMA_FIX}"
        raise DatabaseError(f"{shown}: {'; '.join(problems)}{schema}")
