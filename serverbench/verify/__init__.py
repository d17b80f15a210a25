"""The conformance suite of SPEC.md (every contestant is judged by this same code).

base.py      result type, context, session, expectation helpers
endpoints.py checks of /, /json, /file, /delay, /tenth, /echo
protocol.py  checks of errors, keep-alive, close, HTTP/1.0, pipelining, splits, idle connections
smuggling.py the request-smuggling check (conflicting Transfer-Encoding / Content-Length)
kinds.py     what each check protects (measurement, feature, robustness) and what a verdict lets a row run
suite.py     the ordered check list and verify()
servers.py   verifying contestants: start, check, store the verdict
httpcheck.py the raw HTTP/1.1 client the checks use

May import: paths, model, store, catalog, processes. Hands out the names below to the CLI, run
(the verdict gates) and results (the deviations a report shows).
"""
from .base import CheckResult
from .servers import ServerVerdict, verify_servers
from .suite import CHECKS, verify

__all__ = ["CHECKS", "CheckResult", "ServerVerdict", "verify", "verify_servers"]
