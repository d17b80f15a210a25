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
from ..rules.admission import Admission, admission, checks_for
from .suite import CHECKS, H2_CHECKS, TLS_CHECKS, h2_of, is_db_row, tls_of, verify
from .h2check import H2Start
from .tlscheck import TlsStart

PLAIN_CHECKS = [c for c in CHECKS if c not in TLS_CHECKS + H2_CHECKS]
LOG_LINES = 8  # of the server's log kept with a verdict whose plaintext checks failed


@dataclass
class ServerVerdict:
    server: str
    passed: bool  # no measurement check failed: the row is admitted (feature and robustness failures shown)
    checks: list[CheckResult] = field(default_factory=list)
    skipped: bool = False  # toolchain unavailable and allow_unavailable: not judged
    problem: str | None = None  # why it could not be verified at all (unavailable, not built)
    # the server's last log lines when a check of its plaintext start failed: what a crash or an exception
    # printed, shown under the verdict (a CI log may keep nothing else of a failure)
    log_tail: str = ""

    @property
    def admission(self) -> Admission:
        return admission([{"name": r.name, "passed": r.passed, "detail": r.detail, "skipped": r.skipped}
                          for r in self.checks], self.passed)


def verify_servers(manifests: Iterable[Any], store: Any, *, server_cpus: list[int] | None,
                   allow_unavailable: bool, db: DbSetup | None = None,
                   features: Iterable[str] | None = None, recheck: bool = False) -> Iterator[ServerVerdict]:
    """Verify each server in turn and record its verdict in `store` (not for unverifiable ones).
    `db` (dbsetup.database_for): the database a db row is started with ($DATABASE_URL, rowenv.py)
    and its db checks use; without one a db row's db checks are skipped, saying why. `features`: only
    the feature checks of these (admission.checks_for; every check when None); the others are absent
    from the verdict, so a workload using one keeps the row out until a verify runs it. `recheck`: run
    only the checks the row's stored verdict failed, the others kept from it (prepare.py's second pass,
    after a check may have missed its time limit under the builds' load)."""
    db = db or DbSetup(problem="no database given to verify")
    if server_cpus is None:
        server_cpus = supervisor.default_cpu_split()[0]
    with ExitStack() as stack:
        # the tls check's certificates: made once per verify, at the first tls row, removed at the end
        folder = _LazyFolder(stack)
        yield from _each(manifests, store, server_cpus, allow_unavailable, db, folder,
                         checks_for(features, CHECKS), recheck)


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


def _failed_of(store: Any, server: str, checks: list[str]) -> tuple[list[str], list[dict]]:
    """(the checks of `checks` the row's stored verdict failed, that verdict's checks); every check and
    none kept when there is no verdict or the row did not start (its checks never ran)."""
    v = store.verdict(server)
    failed = {str(c.get("name")) for c in (v.checks if v is not None else []) if not c.get("passed") and not c.get("skipped")}
    if v is None or "starts" in failed:
        return checks, []
    return [c for c in checks if c in failed or (c == "sigterm" and "sigterm" in failed)], list(v.checks)


def _each(manifests: Iterable[Any], store: Any, server_cpus: list[int], allow_unavailable: bool, db: DbSetup,
          tls_folder: _LazyFolder, all_checks: list[str], recheck: bool) -> Iterator[ServerVerdict]:
    for m in manifests:
        checks, kept = _failed_of(store, m.id, all_checks) if recheck else (all_checks, [])
        plain, tls_checks, h2_checks = ([c for c in group if c in checks]
                                        for group in (PLAIN_CHECKS, TLS_CHECKS, H2_CHECKS))
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
        log_tail = ""
        workers = m.workers or len(server_cpus)  # run_server's rule, needed first for $DB_POOL
        # the database only for a db row whose db checks run: the others' are skipped ("not a db row") or absent
        db_row = is_db_row(m) and "db" in checks
        env = rowenv.row_env(db.target.url, m, workers) if db.target is not None and db_row else None
        dbkw: dict[str, Any] = {"db": db.target, "db_problem": db.problem} if db_row else {}
        try:
            with supervisor.run_server(m, cpus=server_cpus, workers=workers, extra_env=env) as srv:
                results = list(verify(srv.url, m, workers=srv.workers, pid=srv.pid, only=plain, **dbkw))
                if any(not r.passed for r in results):
                    log_tail = srv.log_tail(LOG_LINES)
        except supervisor.ServerStartError as e:
            results.append(CheckResult("starts", False, str(e).splitlines()[0]))
        if srv is not None:
            clean = bool(srv.stopped_cleanly)
            results.append(CheckResult(
                "sigterm", clean,
                "exited within 5 s of SIGTERM" if clean else "did not exit within 5 s of SIGTERM (killed)"))
            # after the plaintext start has stopped: the same row again, serving TLS on a port of its own
            tls = _tls_start(m, tls_folder, server_cpus, workers, env) if tls_of(m)[0] and tls_checks else None
            results += verify(srv.url, m, workers=srv.workers, only=tls_checks, tls=tls)
            h2 = _h2_start(m, tls_folder, server_cpus, workers, env) if h2_of(m)[0] and h2_checks else None
            results += verify(srv.url, m, workers=srv.workers, only=h2_checks, h2=h2)
        if kept:
            results = _merged(kept, results)
        stored = [{"name": r.name, "passed": r.passed, "detail": r.detail, "skipped": r.skipped}
                  for r in results]
        ok = admission(stored).admitted
        store.record_verdict(m.id, ok, stored, fh)
        yield ServerVerdict(m.id, ok, results, log_tail=log_tail)


def _merged(kept: list[dict], results: list[CheckResult]) -> list[CheckResult]:
    """A recheck's verdict: the checks run again replace theirs, the rest stand as they were. A check that
    failed before and passes now keeps its first failure in its detail: a row that fails now and then says
    so in its verdict rather than looking as steady as one that never failed."""
    again = {r.name: r for r in results}
    out: list[CheckResult] = []
    for c in kept:
        name = str(c.get("name"))
        before = CheckResult(name, bool(c.get("passed")), str(c.get("detail") or ""), bool(c.get("skipped")))
        now = again.get(name)
        if now is not None and now.passed and not now.skipped and not before.passed:
            now = CheckResult(name, True, f"{now.detail} (passed when verified again in a fresh start; the first "
                                          f"time: {before.detail})", seconds=now.seconds)
        out.append(now or before)
    names = {r.name for r in out}
    return out + [r for r in results if r.name not in names]  # e.g. "starts" failing now
