"""python-stdlib's database endpoints: psycopg 3 (blocking) and psycopg_pool's ConnectionPool.

Each request borrows one connection for its queries; its thread blocks in libpq (the GIL is
released there), the other connections' threads go on. Connections are in autocommit mode, so
every statement is its own transaction: SPEC.md lets a transaction cover at most one read and one
write, and psycopg would otherwise hold one transaction open for all the queries of a checkout.
"""
import json
import os
import random
import re
import sys
from html import escape

from psycopg_pool import ConnectionPool

SELECT_WORLD = "SELECT id, randomNumber FROM World WHERE id = %s"
UPDATE_WORLD = "UPDATE World SET randomNumber = %s WHERE id = %s"
SELECT_FORTUNES = "SELECT id, message FROM Fortune"
EXTRA_FORTUNE = (0, "Additional fortune added at request time.")
INTEGER = re.compile(r"-?[0-9]+")
PATHS = ("/db", "/queries", "/fortunes", "/updates")

FORTUNES_HEAD = ("<!DOCTYPE html><html><head><title>Fortunes</title></head><body>"
                 "<table><tr><th>id</th><th>message</th></tr>")
FORTUNE_ROW = "<tr><td>{}</td><td>{}</td></tr>"
FORTUNES_TAIL = "</table></body></html>"


def open_pool() -> ConnectionPool | None:
    """The pool for $DATABASE_URL, $DB_POOL connections; None without $DATABASE_URL (503s)."""
    url = os.environ.get("DATABASE_URL")
    if not url:
        return None
    size = os.environ.get("DB_POOL") or "16"
    if not size.isdigit() or int(size) < 1:
        sys.exit(f"python-stdlib: DB_POOL={size!r} is not a positive integer; set it to the most connections to open")
    # A fixed size (min = max): the connections are made at start, in the pool's background workers.
    return ConnectionPool(url, min_size=int(size), max_size=int(size), open=True,
                          kwargs={"autocommit": True})


def query_count(params: dict[str, list[str]]) -> int:
    """queries=N clamped to 1..500; missing, empty or not an integer → 1."""
    values = params.get("queries")
    if not values or not INTEGER.fullmatch(values[-1]):
        return 1
    return min(max(int(values[-1]), 1), 500)


def random_world(conn) -> dict:
    row = conn.execute(SELECT_WORLD, (random.randint(1, 10000),)).fetchone()
    return {"id": row[0], "randomNumber": row[1]}


def fortunes_page(conn) -> str:
    fortunes = conn.execute(SELECT_FORTUNES).fetchall()
    fortunes.append(EXTRA_FORTUNE)
    fortunes.sort(key=lambda fortune: fortune[1])
    rows = "".join(FORTUNE_ROW.format(id, escape(message)) for id, message in fortunes)
    return FORTUNES_HEAD + rows + FORTUNES_TAIL


def respond(pool: ConnectionPool, path: str, params: dict[str, list[str]]) -> tuple[str, bytes]:
    """Content type and body for one of PATHS; psycopg.Error when the database fails."""
    with pool.connection() as conn:
        if path == "/db":
            return "application/json", json.dumps(random_world(conn)).encode()
        if path == "/fortunes":
            return "text/html; charset=utf-8", fortunes_page(conn).encode()
        n = query_count(params)
        if path == "/queries":
            return "application/json", json.dumps([random_world(conn) for _ in range(n)]).encode()
        worlds = []  # /updates: each row read, then written back, before the response
        for _ in range(n):
            world = random_world(conn)
            world["randomNumber"] = random.randint(1, 10000)
            conn.execute(UPDATE_WORLD, (world["randomNumber"], world["id"]))
            worlds.append(world)
        return "application/json", json.dumps(worlds).encode()
