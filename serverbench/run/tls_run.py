"""The TLS workloads in a run (issue 38, SPEC.md "TLS"): which rows may run them, the run's certificates,
and the server starts their points need.

A workload with the `tls` feature mixes points: a plaintext twin (`tls` unset) and points whose `tls`
names a key type ("rsa", "ecdsa"). A row serves TLS *instead of* plaintext on `$PORT` when started with
`$TLS_CERT`/`$TLS_KEY`, so the points of one (repetition, row, workload) are cut into runs of the same
key type (`starts`), each a server start of its own: plaintext without any `$TLS_*`, a key type with
that certificate's variables (`RunTls.env`). The certificates (a CA and one leaf per key type,
serverbench/tls/certs.py) are made once per run, into the run's log folder, at the first TLS start;
the readiness probe and loadgen (`--tls-ca`) verify the server's certificate against that CA.

A row whose stack serves no TLS (`tls_out`) or that declares no `tls_library` is left out of the TLS
workloads with the reason, its cells stored as skipped; so are runs whose server or load is not started
on this machine (--target, --cluster, --server-on-cluster), which the run's certificates do not reach.
"""
from __future__ import annotations

import re

from itertools import groupby
from pathlib import Path
from typing import Any

from ..catalog.workloads import Point, Workload
from ..model import RunOptions

FEATURE = "tls"
FOLDER = "tls"  # the certificates' folder under the run's log folder


def _make_material(folder: Path) -> Any:
    """The run's CA and leaf certificates (serverbench/tls/certs.py's TlsMaterial)."""
    from ..tls.certs import make_material
    return make_material(folder)


def row_reason(m: Any, w: Workload, opts: RunOptions) -> str | None:
    """Why row `m` cannot run TLS workload `w` (None: it can, or `w` is not a TLS workload)."""
    if FEATURE not in w.features:
        return None
    where = ("--target" if opts.target else "--server-on-cluster" if opts.server_on_cluster
             else "--cluster" if opts.cluster else None)
    if where is not None:
        return (f"the TLS workloads run on one machine: the run's certificates are made here and do not "
                f"reach a {where} run; run {w.name} without {where}")
    choices = getattr(m, "choices", None)
    out = getattr(choices, "tls_out", None)
    if out:
        return f"serves no TLS here (tls_out): {out}"
    if not getattr(choices, "tls_library", None):
        return "not a tls row: it declares no tls_library in [choices] (SPEC.md, TLS)"
    return None


def starts(points: list[Point]) -> list[list[Point]]:
    """`points` (in order) cut into runs of the same key type and HTTP/2 mode (h2_run.py): one server start each."""
    return [list(run) for _, run in groupby(points, key=lambda p: (p.tls, p.http2))]


def log_name(server: str, workload: str, points: list[Point], rep: int, per_point: bool = False) -> str:
    """A start's log file: the plaintext start's as before, a TLS start's named by its key type, an HTTP/2
    start's by its mode; `per_point`: each point of the workload gets a start of its own, named by its
    label so that each keeps its log (a db outage's freeze start would replace its restart start's)."""
    kind = points[0].tls if points else None
    h2 = points[0].http2 if points else None
    tag = f".{re.sub(r'[^A-Za-z0-9_.=-]+', '_', points[0].label)}" if per_point and points else ""
    return f"{server}.{workload}{tag}{f'.tls-{kind}' if kind else ''}{f'.{h2}' if h2 else ''}.r{rep}.log"


class RunTls:
    """The run's certificates, made on first use into `log_dir`/tls, and what a start or a load needs of them."""

    def __init__(self, log_dir: Path) -> None:
        self.folder = log_dir / FOLDER
        self._material: Any = None

    @property
    def material(self) -> Any:
        if self._material is None:
            self._material = _make_material(self.folder)
        return self._material

    def env(self, kind: str | None, base: dict[str, str] | None = None) -> dict[str, str] | None:
        """A start's extra environment: `base` (the database's), plus the key type's `$TLS_*` for a TLS start."""
        if kind is None:
            return base
        return {**(base or {}), **self.material.env(kind)}

    def ca(self, kind: str | None) -> Path | None:
        """The CA a TLS start's certificate is verified against; None for plaintext."""
        return Path(self.material.ca) if kind is not None else None

    def ca_arg(self, point: Point) -> str | None:
        """loadgen's `--tls-ca` for `point` (None for a plaintext point)."""
        ca = self.ca(point.tls)
        return str(ca) if ca is not None else None


__all__ = ["FEATURE", "RunTls", "row_reason", "starts", "log_name"]
