#!/usr/bin/env python3
"""Does each db row send PostgreSQL exactly the statements SPEC.md asks for? Counted, not timed.

    .venv/bin/python bench/db_query_counts.py [ROW ...] [-k 50] [-n 20] [--catalog DIR]

Starts one PostgreSQL of the harness's own (verify's: serverbench/verify/dbsetup.py) and each row
in turn, told it like `verify` tells it ($DATABASE_URL, $DB_POOL), sends K requests of
/queries?queries=N and K of /updates?queries=N on one keep-alive connection, and prints per path:
the requests answered (200 with N rows), the SELECTs of World and UPDATEs pg_stat_statements
counted, what was expected, and whether it matched exactly. The counting and the rules are the
`db-counts` check's own (serverbench/verify/dbcount.py). Default rows: every db row that is built.
"""
from __future__ import annotations

import argparse
import http.client
import json
import sys
from pathlib import Path

from serverbench import paths
from serverbench.catalog import build, manifests as catalog
from serverbench.catalog.manifests import Manifest
from serverbench.database import rowenv
from serverbench.processes import supervisor
from serverbench.verify import dbcount
from serverbench.verify.dbsetup import database_for
from serverbench.verify.suite import is_db_row


def send(host: str, port: int, target: str, k: int, n: int) -> tuple[int, list[list[tuple[int, int]]]]:
    """K GETs on one keep-alive connection: (answered with N rows, the rows of each answer)."""
    answered, rows = 0, []
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        for _ in range(k):
            conn.request("GET", target)
            resp = conn.getresponse()
            body = resp.read()
            try:
                doc = json.loads(body) if resp.status == 200 else None
            except ValueError:
                doc = None
            if isinstance(doc, list) and len(doc) == n and all(isinstance(d, dict) for d in doc):
                answered += 1
                rows.append([(d.get("id"), d.get("randomNumber")) for d in doc])
            if resp.will_close:
                conn.close()
    finally:
        conn.close()
    return answered, rows


def measure(m: Manifest, db: dbcount.DbTarget, cpus: list[int], k: int, n: int) -> list[list[str]]:
    """Table lines of one row: per path, answered, counted, expected, exact."""
    workers = m.workers or len(cpus)
    out = []
    with supervisor.run_server(m, cpus=cpus, workers=workers,
                               extra_env=rowenv.row_env(db.url, m, workers)) as srv, db.connect() as c:
        for path in ("/queries", "/updates"):
            target = f"{path}?queries={n}"
            (answered, rows), counts = dbcount.window(c, lambda: send(srv.host, srv.port, target, k, n), n * k)
            problems = dbcount.judge_reads(counts, target, n, k)
            expected = f"{n * k} SELECTs"
            counted = f"{counts.select_calls} SELECTs"
            if path == "/updates":
                distinct = sum(len({i for i, _ in r}) for r in rows)
                problems += dbcount.judge_writes(counts, target, n, k, distinct)
                expected += f" + {n * k} UPDATEs (or {k} batched, {distinct} rows)"
                counted += f" + {counts.update_calls} UPDATEs ({counts.update_rows} rows)"
            exact = "yes" if not problems and answered == k else "no"
            out.append([m.id, target, f"{answered}/{k}", counted, expected, exact])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", nargs="*", help="row ids (default: every db row that is built)")
    ap.add_argument("-k", type=int, default=50, help="requests per path (default 50)")
    ap.add_argument("-n", type=int, default=20, help="queries=N per request (default 20; 1..500)")
    ap.add_argument("--catalog", type=Path, default=paths.SERVERS, help="the servers folder")
    args = ap.parse_args()
    if not 1 <= args.n <= 500 or args.k < 1:
        ap.error("-n must be in 1..500 (SPEC clamps above) and -k at least 1")
    servers = catalog.load_catalog(args.catalog).servers
    unknown = [r for r in args.rows if r not in servers]
    if unknown:
        ap.error(f"unknown row(s) {', '.join(unknown)}; rows are the folders of {args.catalog}")
    rows = [servers[r] for r in args.rows] or [m for m in servers.values() if is_db_row(m) and build.is_built(m)]
    not_db = [m.id for m in rows if not is_db_row(m)]
    not_built = [m.id for m in rows if not build.is_built(m)]
    if not_db or not_built:
        print("; ".join([f"not db rows (no db_* choices): {', '.join(not_db)}"] * bool(not_db)
                        + [f"not built: {', '.join(not_built)} (fix: serverbench build ID)"] * bool(not_built)),
              file=sys.stderr)
        return 2
    if not rows:
        print("no db row is built; fix: serverbench build ID for a row declaring the db_* choices", file=sys.stderr)
        return 2
    cpus = supervisor.default_cpu_split()[0]
    table = [["row", "request", "answered", "counted", "expected", "exact"]]
    with database_for(rows, cpus) as setup:
        if setup.target is None:
            print(setup.problem, file=sys.stderr)
            return 2
        for m in rows:
            try:
                table += measure(m, setup.target, cpus, args.k, args.n)
            except supervisor.ServerStartError as e:
                table.append([m.id, "-", "did not start", str(e).splitlines()[0][:60], "-", "no"])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return 0 if all(r[-1] == "yes" for r in table[1:]) else 1


if __name__ == "__main__":
    sys.exit(main())
