"""The conformance suite of SPEC.md: the named checks in order, and `verify()` running them."""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import paths
from .base import CheckFailed, CheckResult, CheckSkipped, Ctx
from .compresscheck import check_compress
from .dbchecks import check_db, check_db_counts, check_fortunes, check_queries, check_updates
from .dbcount import DbTarget
from .endpoints import check_delay, check_delay_cpu, check_echo, check_file, check_json, check_root, check_tenth
from .httpcheck import HTTPCheckError
from .protocol import (check_bad_request, check_close_case, check_connection_close, check_date, check_http10,
                       check_http10_no_host, check_idle_connections, check_keepalive, check_method, check_not_found,
                       check_pipeline, check_split)
from .smuggling import check_smuggling
from .h2check import H2Start, check_h2, check_h2c
from .tlscheck import TlsStart, check_tls

CHECK_FUNCS: dict[str, Callable[[Ctx], str]] = {
    "root": check_root,
    "json": check_json,
    "file": check_file,
    "delay": check_delay,
    "delay-cpu": check_delay_cpu,
    "tenth": check_tenth,
    "echo": check_echo,
    "date": check_date,
    "not-found": check_not_found,
    "method": check_method,
    "bad-request": check_bad_request,
    "smuggling": check_smuggling,
    "keepalive": check_keepalive,
    "connection-close": check_connection_close,
    "connection-close-case": check_close_case,
    "http10": check_http10,
    "http10-no-host": check_http10_no_host,
    "pipeline": check_pipeline,
    "split": check_split,
    "idle-connections": check_idle_connections,
    # the db feature (dbchecks.py): skipped for a row that declares no db_* choices
    "db": check_db,
    "queries": check_queries,
    "fortunes": check_fortunes,
    "db-counts": check_db_counts,
    "updates": check_updates,
    # the compress feature (compresscheck.py): skipped for a row that declares no compression
    "compress": check_compress,
    # the tls feature (tlscheck.py): the row started again with $TLS_*; skipped for a row without tls_library
    "tls": check_tls,
    # the h2c and h2 features (h2check.py): the row started again with $HTTP2; skipped for a row without
    # http2_library
    "h2c": check_h2c,
    "h2": check_h2,
}
CHECKS: list[str] = list(CHECK_FUNCS)
DB_CHECKS: list[str] = ["db", "queries", "fortunes", "db-counts", "updates"]
TLS_CHECKS: list[str] = ["tls"]
H2_CHECKS: list[str] = ["h2c", "h2"]


def _default_hello_file() -> Path:
    env = os.environ.get("HELLO_FILE")
    if env:
        return Path(env)
    return Path(paths.HELLO_FILE)


def is_db_row(manifest: Any | None) -> bool:
    """Whether a manifest declares the db_* choices (catalog.manifests.Choices.db)."""
    choices = getattr(manifest, "choices", None)
    return bool(choices is not None and getattr(choices, "db", False))


def tls_of(manifest: Any | None) -> tuple[bool, str | None]:
    """Whether a manifest declares tls_library (catalog.manifests.Choices.tls), and its tls_out."""
    choices = getattr(manifest, "choices", None)
    return bool(choices is not None and getattr(choices, "tls", False)), getattr(choices, "tls_out", None)


def h2_of(manifest: Any | None) -> tuple[bool, str | None]:
    """Whether a manifest declares http2_library (catalog.manifests.Choices.h2), and its http2_out."""
    choices = getattr(manifest, "choices", None)
    return bool(choices is not None and getattr(choices, "h2", False)), getattr(choices, "http2_out", None)


def _bound(manifest: Any, workers: int) -> int | None:
    b = getattr(manifest, "bound", None)
    if b is None:
        return None
    val = b(workers) if callable(b) else b
    return None if val is None else int(val)


def verify(
    base_url: str,
    manifest: Any | None = None,
    *,
    workers: int = 1,
    pid: int | None = None,
    only: list[str] | None = None,
    hello_file: str | Path | None = None,
    timeout: float = 5.0,
    db: DbTarget | None = None,
    db_problem: str | None = None,
    tls: TlsStart | None = None,
    h2: H2Start | None = None,
) -> list[CheckResult]:
    """Run the SPEC.md conformance checks against the server at base_url (http://host:port).

    manifest (serverbench.catalog.manifests.Manifest or None) supplies `counter` and `bound(workers)`;
    pid enables the CPU check; only restricts to the named checks (kept in CHECKS order).
    The db checks run when the manifest declares the db_* choices and `db` (the database the server
    was started with) is given; else they are skipped with the reason (`db_problem` when given).
    The tls check starts the row again through `tls` (the certificates and a start with `$TLS_*`) when the
    manifest declares tls_library; without `tls` it is skipped, saying why. The h2c and h2 checks likewise
    start it through `h2` when it declares http2_library.
    """
    u = urlsplit(base_url if "//" in base_url else f"http://{base_url}")
    if u.scheme != "http" or not u.hostname:
        raise ValueError(f"expected http://host:port, got {base_url!r}")
    if only is not None:
        unknown = [n for n in only if n not in CHECK_FUNCS]
        if unknown:
            raise ValueError(f"unknown check(s) {unknown}; known: {CHECKS}")
    ctx = Ctx(
        host=u.hostname,
        port=u.port or 80,
        timeout=timeout,
        counter=str(getattr(manifest, "counter", None) or "shared"),
        bound=_bound(manifest, workers),
        pid=pid,
        hello_file=Path(hello_file) if hello_file else _default_hello_file(),
        db_row=is_db_row(manifest),
        db_out=getattr(getattr(manifest, "choices", None), "db_out", None),
        db=db,
        db_problem=db_problem,
        compress_row=bool(getattr(getattr(manifest, "choices", None), "compress", False)),
        compress_out=getattr(getattr(manifest, "choices", None), "compress_out", None),
        tls_row=tls_of(manifest)[0],
        tls_out=tls_of(manifest)[1],
        tls_start=tls,
        h2_row=h2_of(manifest)[0],
        h2_out=h2_of(manifest)[1],
        h2_start=h2,
    )
    results: list[CheckResult] = []
    for name in CHECKS:
        if only is not None and name not in only:
            continue
        t0 = time.monotonic()
        try:
            detail = CHECK_FUNCS[name](ctx)
            res = CheckResult(name, True, detail)
        except CheckSkipped as e:
            res = CheckResult(name, True, str(e), skipped=True)
        except CheckFailed as e:
            res = CheckResult(name, False, str(e))
        except HTTPCheckError as e:
            res = CheckResult(name, False, f"{type(e).__name__}: {e}")
        except Exception as e:  # a bug or an OS error must not abort the other checks
            res = CheckResult(name, False, f"unexpected {type(e).__name__}: {e}")
        res.seconds = round(time.monotonic() - t0, 3)
        results.append(res)
    return results
