"""Checks of the database endpoints (SPEC.md, "Database endpoints"): /db, /queries, /fortunes, /updates,
and what each sends to PostgreSQL (pg_stat_statements). Run only for a db row (one declaring the
`db_*` choices) given a database; skipped otherwise, with the reason."""
from __future__ import annotations

import html
import json
import re
from typing import Any

from ..database.schema import FORTUNES, WORLD_ROWS
from . import dbcount
from .base import CheckFailed, CheckSkipped, Ctx, Session, show
from .dbcount import DbTarget
from .httpcheck import Response

NOT_DB_ROW = "not a db row"
ADDED_FORTUNE = (0, "Additional fortune added at request time.")
DB_REQUESTS = 16  # /db requests: 16 uniform ids all equal has odds of 10,000^-15
COUNT_REQUESTS, COUNT_ROWS = 10, 20  # db-counts: 10 requests of 20 rows each, per path
UPDATE_REQUESTS = 5
CHANGED_SHARE = 0.9  # TechEmpower's bar: a new random number equals the old one 1 time in 10,000
# queries=VALUE → rows expected (SPEC: an integer clamped to 1..500; missing or not a number → 1)
CLAMPS: tuple[tuple[str | None, int], ...] = (
    ("1", 1), ("5", 5), ("20", 20), ("500", 500), (None, 1), ("", 1), ("0", 1), ("-1", 1), ("foo", 1),
    ("501", 500), ("1000", 500))
UPDATE_CLAMPS: tuple[tuple[str | None, int], ...] = ((None, 1), ("foo", 1), ("0", 1), ("501", 500))


def _target(ctx: Ctx) -> DbTarget:
    """The database, or CheckSkipped saying why these checks do not apply or cannot run."""
    if not ctx.db_row:
        raise CheckSkipped(f"serves no database here (db_out): {ctx.db_out}" if ctx.db_out else NOT_DB_ROW)
    if ctx.db is None:
        raise CheckSkipped(ctx.db_problem or "no database given to verify")
    return ctx.db


def _path(path: str, value: str | None) -> str:
    return path if value is None else f"{path}?queries={value}"


def _db_response(s: Session, ctx: Ctx, target: str, media: str) -> Response:
    """GET `target` on the session: 200, the media type, and the Server header database paths send."""
    resp = s.request(ctx.req("GET", target))
    if resp.status != 200:
        raise CheckFailed(f"GET {target}: expected status 200, got {resp.brief()}")
    if resp.media_type != media:
        raise CheckFailed(f"GET {target}: expected Content-Type {media}, got {resp.header('content-type') or '(none)'}")
    if not resp.header("server"):
        raise CheckFailed(f"GET {target}: expected a Server header (SPEC: database paths send one), got none")
    return resp


def _json(resp: Response, target: str) -> Any:
    try:
        return json.loads(resp.body)
    except ValueError:
        raise CheckFailed(f"GET {target}: body is not JSON: {show(resp.body)}") from None


def _world_row(doc: Any, target: str) -> tuple[int, int]:
    """(id, randomNumber) of one World object, exactly {"id", "randomNumber"}, both in 1..10000."""
    if not isinstance(doc, dict) or set(doc) != {"id", "randomNumber"}:
        raise CheckFailed(f'GET {target}: expected an object {{"id":…,"randomNumber":…}}, got {str(doc)[:60]}')
    for key in ("id", "randomNumber"):
        v = doc[key]
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= WORLD_ROWS:
            raise CheckFailed(f"GET {target}: expected {key} an integer in 1..{WORLD_ROWS}, got {v!r}")
    return doc["id"], doc["randomNumber"]


def _world_rows(s: Session, ctx: Ctx, target: str, n: int) -> list[tuple[int, int]]:
    doc = _json(_db_response(s, ctx, target, "application/json"), target)
    if not isinstance(doc, list) or len(doc) != n:
        got = f"an array of {len(doc)}" if isinstance(doc, list) else type(doc).__name__
        raise CheckFailed(f"GET {target}: expected a JSON array of {n} row{'s' if n > 1 else ''} (queries is "
                          f"clamped to 1..500; missing or not a number → 1), got {got}")
    return [_world_row(d, target) for d in doc]


def _stored(rows: list[tuple[int, int]], world: dict[int, int], target: str) -> None:
    for i, rn in rows:
        if world.get(i) != rn:
            raise CheckFailed(f"GET {target}: id {i} answered with randomNumber {rn}, World holds {world.get(i)}")


def check_db(ctx: Ctx) -> str:
    db = _target(ctx)
    s = Session(ctx)
    try:
        with db.connect() as c:
            def send() -> list[tuple[int, int]]:
                return [_world_row(_json(_db_response(s, ctx, "/db", "application/json"), "/db"), "/db")
                        for _ in range(DB_REQUESTS)]
            if db.counts_problem is None:
                rows, counts = dbcount.window(c, send, DB_REQUESTS)
            else:
                rows, counts = send(), None
            ids = {i for i, _ in rows}
            if len(ids) < 2:
                raise CheckFailed(f"GET /db: expected a random id per request, {DB_REQUESTS} requests all answered "
                                  f"id {rows[0][0]} (a cached row?)")
            if counts is not None and counts.select_calls != DB_REQUESTS:
                raise CheckFailed(f"GET /db: expected {DB_REQUESTS} SELECTs reading World for {DB_REQUESTS} requests "
                                  f"(never cached), pg_stat_statements counted {counts.select_calls}")
            _stored(rows, dbcount.world(c), "/db")
    finally:
        s.close()
    counted = (f", {DB_REQUESTS} SELECTs counted" if counts is not None else f"; not counted: {db.counts_problem}")
    return f"{DB_REQUESTS} requests: {len(ids)} ids, values as stored{counted}"


def check_queries(ctx: Ctx) -> str:
    db = _target(ctx)
    s = Session(ctx)
    seen: list[tuple[str, list[tuple[int, int]]]] = []
    try:
        for value, n in CLAMPS:
            target = _path("/queries", value)
            seen.append((target, _world_rows(s, ctx, target, n)))
    finally:
        s.close()
    with db.connect() as c:
        world = dbcount.world(c)
    for target, rows in seen:
        _stored(rows, world, target)
    return "N = 1, 5, 20, 500; missing, '', 0, -1, foo → 1; 501, 1000 → 500; values as stored"


# -- /fortunes --------------------------------------------------------------------------------

_TAG = re.compile(r"(<[^>]*>)")
_BARE_AMP = re.compile(r"&(?!#[0-9]+;|#[xX][0-9a-fA-F]+;|[A-Za-z][A-Za-z0-9]*;)")


def expected_fortunes_page() -> str:
    rows = sorted([*FORTUNES, ADDED_FORTUNE], key=lambda r: r[1])
    cells = "".join(f"<tr><td>{i}</td><td>{html.escape(m)}</td></tr>" for i, m in rows)
    return ("<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
            f"<tr><th>id</th><th>message</th></tr>{cells}</table></body></html>")


def _tokens(page: str) -> list[tuple[str, str]]:
    """("tag", normalized tag) and ("text", the text as written) in order; whitespace between tags dropped."""
    out = []
    for part in _TAG.split(page):
        if part.startswith("<") and part.endswith(">"):
            out.append(("tag", " ".join(part.lower().split())))
        elif part.strip():
            out.append(("text", part.strip()))
    return out


def _text_problem(got: str, want: str) -> str | None:
    """Why text `got` is not the escaped form of `want` (either spelling of an entity is fine)."""
    if ">" in got or _BARE_AMP.search(got):
        return "not HTML-escaped"
    if html.unescape(got) != html.unescape(want):
        return "different text"
    return None


def compare_fortunes(page: str) -> str | None:
    """The first difference between `page` and the expected page, in one line; None when equal."""
    got, want = _tokens(page), _tokens(expected_fortunes_page())
    for i, (g, w) in enumerate(zip(got, want)):
        if g[0] == w[0] == "text":
            why = _text_problem(g[1], w[1])
        elif g == w:
            why = None
        else:
            why = "markup where text belongs: not HTML-escaped" if w[0] == "text" else "different markup"
        if why is not None:
            return f"at item {i + 1}: expected {w[1][:60]!r}, got {g[1][:60]!r} ({why})"
    if len(got) != len(want):
        return (f"expected {len(want)} tags and texts, got {len(got)}"
                + (f" (first extra: {got[len(want)][1][:60]!r})" if len(got) > len(want) else ""))
    return None


def check_fortunes(ctx: Ctx) -> str:
    _target(ctx)
    s = Session(ctx)
    try:
        resp = _db_response(s, ctx, "/fortunes", "text/html")
    finally:
        s.close()
    ctype = resp.header("content-type") or ""
    params = {k.strip().lower(): v.strip().strip('"').lower()
              for k, _, v in (p.partition("=") for p in ctype.split(";")[1:])}
    if params.get("charset") != "utf-8":
        raise CheckFailed(f"GET /fortunes: expected Content-Type text/html; charset=utf-8, got {ctype}")
    try:
        page = resp.body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckFailed(f"GET /fortunes: body is not UTF-8 ({e.reason} at byte {e.start})") from None
    why = compare_fortunes(page)
    if why is not None:
        raise CheckFailed(f"GET /fortunes: {why}")
    return f"the {len(FORTUNES) + 1} fortunes sorted and escaped, text/html; charset=utf-8"


# -- /updates and the counts --------------------------------------------------------------------

def _distinct(responses: list[list[tuple[int, int]]]) -> int:
    return sum(len({i for i, _ in rows}) for rows in responses)


def check_db_counts(ctx: Ctx) -> str:
    db = _target(ctx)
    if db.counts_problem is not None:
        raise CheckSkipped(db.counts_problem)
    n, k = COUNT_ROWS, COUNT_REQUESTS
    s = Session(ctx)
    try:
        with db.connect() as c:
            def send(path: str) -> list[list[tuple[int, int]]]:
                return [_world_rows(s, ctx, f"{path}?queries={n}", n) for _ in range(k)]
            _, reads = dbcount.window(c, lambda: send("/queries"), n * k)
            answered, writes = dbcount.window(c, lambda: send("/updates"), n * k)
    finally:
        s.close()
    problems = dbcount.judge_reads(reads, f"{k} × /queries?queries={n}", n, k)
    problems += dbcount.judge_reads(writes, f"{k} × /updates?queries={n}", n, k)
    problems += dbcount.judge_writes(writes, f"{k} × /updates?queries={n}", n, k, _distinct(answered))
    if reads.writes:
        problems.append(f"{k} × /queries?queries={n}: expected no UPDATE, pg_stat_statements counted "
                        f"{reads.update_calls}")
    if problems:
        raise CheckFailed("; ".join(problems))
    return (f"{k} × /queries?queries={n} → {n * k} SELECTs; {k} × /updates?queries={n} → {n * k} SELECTs + "
            f"{writes.update_calls} {dbcount.describe_writes(writes, n, k)} UPDATEs ({writes.update_rows} rows)")


def check_updates(ctx: Ctx) -> str:
    db = _target(ctx)
    s = Session(ctx)
    answered: list[tuple[str, list[tuple[int, int]]]] = []
    try:
        with db.connect() as c:
            before = dbcount.world(c)
            for value, n in (("20", 20),) * UPDATE_REQUESTS + UPDATE_CLAMPS:
                target = _path("/updates", value)
                answered.append((target, _world_rows(s, ctx, target, n)))
            after = dbcount.world(c)
    finally:
        s.close()
    # the values a row may hold now: its last response's (either of two, should it name an id twice)
    last: dict[int, tuple[str, set[int]]] = {}
    for target, rows in answered:
        named = {i for i, _ in rows}
        for i in named:
            last[i] = (target, {rn for j, rn in rows if j == i})
    changed = {i for i in after if after[i] != before.get(i)}
    share = len(changed & set(last)) / len(last)
    if share < CHANGED_SHARE:
        raise CheckFailed(f"GET /updates: expected ≥ {CHANGED_SHARE:.0%} of the {len(last)} rows answered to change "
                          f"in World, {share:.0%} did (not written?)")
    for i, (target, values) in sorted(last.items()):
        if after.get(i) not in values:
            raise CheckFailed(f"GET {target}: id {i} answered with randomNumber {sorted(values)[0]}, "
                              f"World holds {after.get(i)}")
    stray = sorted(changed - set(last))
    if stray:
        raise CheckFailed(f"GET /updates: {len(stray)} row(s) changed that no response named (id {stray[0]}, …)")
    return (f"{len(answered)} requests: {len(changed)} of {len(last)} rows changed, as answered; "
            "missing, foo, 0 → 1 and 501 → 500 rows")
