"""The HTTP/2 workloads in a run (issue 47, SPEC.md "HTTP/2"): which rows may run them, and what an HTTP/2
start adds to the server's environment.

A point with `http2` ("h2": over TLS with the run's certificate of its `tls` key type; "h2c": cleartext with
prior knowledge) runs on a server started with `$HTTP2` of that mode (tls_run.starts cuts a workload's points
into starts by key type and mode); loadgen speaks HTTP/2 to it (`--http2 --streams N`). A row whose stack
serves no HTTP/2 (`http2_out`) or that declares no `http2_library` is left out of those workloads with the
reason, its cells stored as skipped; a row that failed the mode's check (`h2c`, `h2`) is left out by the
verdict gate (rules/admission.py). A server not started here (--target, --server-on-cluster) cannot be given
`$HTTP2`, so those runs leave the HTTP/2 workloads out too.
"""
from __future__ import annotations

from typing import Any

from ..catalog.workloads import Workload
from ..model import RunOptions

FEATURES = ("h2", "h2c")
VAR = "HTTP2"  # catalog/environment.HTTP2_VAR


def row_reason(m: Any, w: Workload, opts: RunOptions) -> str | None:
    """Why row `m` cannot run HTTP/2 workload `w` (None: it can, or `w` is not an HTTP/2 workload)."""
    if not any(f in w.features for f in FEATURES):
        return None
    where = "--target" if opts.target else "--server-on-cluster" if opts.server_on_cluster else None
    if where is not None:
        return (f"an HTTP/2 start sets $HTTP2 on a server started here; a {where} server is not; "
                f"run {w.name} without {where}")
    choices = getattr(m, "choices", None)
    out = getattr(choices, "http2_out", None)
    if out:
        return f"serves no HTTP/2 here (http2_out): {out}"
    if not getattr(choices, "http2_library", None):
        return "not an h2 row: it declares no http2_library in [choices] (SPEC.md, HTTP/2)"
    return None


def env(mode: str | None, base: dict[str, str] | None) -> dict[str, str] | None:
    """A start's environment with `$HTTP2` of `mode` added (None: as it was)."""
    return base if mode is None else {**(base or {}), VAR: mode}


__all__ = ["FEATURES", "env", "row_reason"]
