"""The conformance suite of SPEC.md (every contestant is judged by this same code).

base.py      result type, context, session, expectation helpers
endpoints.py checks of /, /json, /file, /delay, /tenth, /echo
protocol.py  checks of errors, keep-alive, close, HTTP/1.0, pipelining, splits, idle connections
smuggling.py the request-smuggling check (conflicting Transfer-Encoding / Content-Length)
dbchecks.py  checks of /db, /queries, /fortunes, /updates (the db feature; skipped for other rows)
dbcount.py   pg_stat_statements: the counting window and the exact-count rules (bench/db_query_counts.py too)
dbsetup.py   the database verify gives db rows: the harness's own PostgreSQL, or --db-url's
tlscheck.py  the tls check: the row started again with $TLS_*, judged as a TLS client (the tls feature)
suite.py     the ordered check list and verify()
servers.py   verifying contestants: start, check, store the verdict
httpcheck.py the raw HTTP/1.1 client the checks use
show.py      a verdict on a console; `verify_and_show`: rows verified as they come, each verdict printed
prepare.py   build-then-verify, the step before every measuring command (rows verified as their builds end)
(what each check protects and what a verdict lets a row run is rules/admission.py)

May import: paths, model, store, tls, catalog, rules, processes, database. Hands out the names below to the
CLI and run (the verdict gates); `show` and `prepare` to the CLI.
"""
from .base import CheckResult
from .servers import ServerVerdict, verify_servers
from .suite import CHECKS, verify

__all__ = ["CHECKS", "CheckResult", "ServerVerdict", "verify", "verify_servers"]
