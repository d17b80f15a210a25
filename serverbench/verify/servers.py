"""Verifying contestants: start each available, built server, run the suite, store the verdict.

Yields one ServerVerdict per server; printing is the caller's (the CLI's) job.
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalog import build, doctor
from ..database import rowenv
from ..processes import supervisor
from ..tls.certs import make_material
from .base import CheckResult
from .dbsetup import DbSetup
from ..rules.admission import Admission, admission
from .suite import CHECKS, H2_CHECKS, TLS_CHECKS, h2_of, is_db_row, tls_of, verify
from .h2check import H2Start
from .tlscheck import TlsStart

PLAIN_CHECKS = [c for c in CHECKS if c not in TLS_CHECKS + H2_CHECKS]


@dataclass
class ServerVerdict:
    server: str
    passed: bool  # no measurement check failed: the row is admitted (feature and robustness failures shown)
    checks: list[CheckResult] = field(default_factory=list)
    skipped: bool = False  # toolchain unavailable and allow_unavailable: not judged
    problem: str | None = None  # why it could not be verified at all (unavailable, not built)

    @property
    def admission(self) -> Admission:
        return admission([{"name": r.name, "passed": r.passed, "detail": r.detail, "skipped": r.skipped}
                          for r in self.checks], self.passed)


def verify_servers(manifests: Iterable[Any], store: Any, *, server_cpus: list[int] | None,
                   allow_unavailable: bool, db: DbSetup | None = None) -> Iterator[ServerVerdict]:
    """Verify each server in turn and record its verdict in `store` (not for unverifiable ones).
    `db` (dbsetup.database_for): the database a db row is started with ($DATABASE_URL, rowenv.py)
    and its db checks use; without one a db row's db checks are skipped, saying why."""
    db = db or DbSetup(problem="no database given to verify")
    if server_cpus is None:
        server_cpus = supervisor.default_cpu_split()[0]
    with ExitStack() as stack:
        # the tls check's certificates: made once per verify, at the first tls row, removed at the end
        folder = _LazyFolder(stack)
        yield from _each(manifests, store, server_cpus, allow_unavailable, db, folder)


class _LazyFolder:
    """A temporary folder made on first use and removed when `stack` closes; its TLS material made once."""

    def __init__(self, stack: ExitStack) -> None:
        self.stack = stack
        self._material: Any = None

    @property
    def material(self) -> Any:
        if self._material is None:
            path = Path(self.stack.enter_context(tempfile.TemporaryDirectory(prefix="serverbench-verify-tls-")))
            self._material = make_material(path)
        return self._material


def _tls_start(m: Any, folder: _LazyFolder, cpus: list[int], workers: int,
               env: dict[str, str] | None) -> TlsStart:
    material = folder.material

    @contextmanager
    def start(tls_env: dict[str, str]) -> Iterator[str]:
        with supervisor.run_server(m, cpus=cpus, workers=workers, extra_env={**(env or {}), **tls_env},
                                   tls_ca=Path(material.ca)) as srv:
            yield srv.url

    return TlsStart(material, start)


def _h2_start(m: Any, folder: _LazyFolder, cpus: list[int], workers: int,
              env: dict[str, str] | None) -> H2Start:
    material = folder.material

    @contextmanager
    def start(h2_env: dict[str, str], mode: str) -> Iterator[str]:
        with supervisor.run_server(m, cpus=cpus, workers=workers, extra_env={**(env or {}), **h2_env},
                                   tls_ca=Path(material.ca) if mode == "h2" else None, http2=True) as srv:
            yield srv.url

    return H2Start(material, start)


def _each(manifests: Iterable[Any], store: Any, server_cpus: list[int], allow_unavailable: bool, db: DbSetup,
          tls_folder: _LazyFolder) -> Iterator[ServerVerdict]:
    for m in manifests:
        a = doctor.check(m, "run")
        if not a.available:
            msg = f"unavailable ({a.reason or 'missing ' + ', '.join(a.missing)})"
            if a.install_hint:
                msg += f"; install with: {a.install_hint}"
            yield ServerVerdict(m.id, False, skipped=allow_unavailable, problem=msg)
            continue
        if not build.is_built(m):
            yield ServerVerdict(m.id, False, problem=f"not built; run `serverbench build {m.id}`")
            continue
        fh = build.folder_hash(m)
        results: list[CheckResult] = []
        srv = None
        workers = m.workers or len(server_cpus)  # run_server's rule, needed first for $DB_POOL
        env = rowenv.row_env(db.target.url, m, workers) if db.target is not None and is_db_row(m) else None
        # the database only for a db row: the others' db checks are skipped as "not a db row" anyway
        dbkw: dict[str, Any] = {"db": db.target, "db_problem": db.problem} if is_db_row(m) else {}
        try:
            with supervisor.run_server(m, cpus=server_cpus, workers=workers, extra_env=env) as srv:
                results = list(verify(srv.url, m, workers=srv.workers, pid=srv.pid, only=PLAIN_CHECKS, **dbkw))
        except supervisor.ServerStartError as e:
            results.append(CheckResult("starts", False, str(e).splitlines()[0]))
        if srv is not None:
            clean = bool(srv.stopped_cleanly)
            results.append(CheckResult(
                "sigterm", clean,
                "exited within 5 s of SIGTERM" if clean else "did not exit within 5 s of SIGTERM (killed)"))
            # after the plaintext start has stopped: the same row again, serving TLS on a port of its own
            tls = _tls_start(m, tls_folder, server_cpus, workers, env) if tls_of(m)[0] else None
            results += verify(srv.url, m, workers=srv.workers, only=TLS_CHECKS, tls=tls)
            h2 = _h2_start(m, tls_folder, server_cpus, workers, env) if h2_of(m)[0] else None
            results += verify(srv.url, m, workers=srv.workers, only=H2_CHECKS, h2=h2)
        checks = [{"name": r.name, "passed": r.passed, "detail": r.detail, "skipped": r.skipped}
                  for r in results]
        ok = admission(checks).admitted
        store.record_verdict(m.id, ok, checks, fh)
        yield ServerVerdict(m.id, ok, results)
