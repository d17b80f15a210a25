"""`--server-on-cluster`: the server runs on the Dask worker that offers the resource `server`.

That worker holds a `ServerHost` (a Dask actor, so its state — the running server and its
sampler — stays on the server's machine between calls): build, verification, start/stop,
the CPU/memory sampling and the memory limit all happen there, with the same supervisor and
sampler as a local run. The harness gets a `RemoteServer`, which has the parts of a
supervised server the runner reads, each a call to the actor.

Nothing outlives the harness: the actor's server stops when the harness has not renewed its
lease for LEASE_S (a harness killed with SIGKILL cannot say goodbye), and the server process
gets SIGTERM when its worker dies (PR_SET_PDEATHSIG, as for a local server).
The server listens on the worker's own address: loopback for `local:N`, the address the user
started the worker on otherwise (that choice is the user's "listen there").
"""
from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

from ..processes.server import UsageSampler
from ..processes.supervisor import ServerProcess, ServerStartError

LEASE_S = 30.0
RENEW_S = 5.0
CALL_TIMEOUT_S = 120.0


def worker_host() -> str:
    """The host part of this Dask worker's address (where its server listens)."""
    from distributed import get_worker
    host = urlsplit(get_worker().address).hostname
    return host or "127.0.0.1"


def _manifest(m: Any) -> Any:
    """The manifest as this machine has it: the same folder when it exists, else by id."""
    if Path(m.dir).is_dir():
        return m
    from ..catalog import manifests as catalog
    found = [x for x in catalog.load_catalog() if x.id == m.id]
    if not found:
        raise ServerStartError(f"server '{m.id}' is not in the catalog on the server machine; check out the "
                               "same serverbench version there")
    return found[0]


class ServerHost:
    """Dask actor on the server's machine: one server start at a time, its sampler, its lease."""

    def __init__(self, manifest: Any, lease_s: float = LEASE_S) -> None:
        self.m = _manifest(manifest)
        self.lease_s = lease_s
        self.host = worker_host()
        self._stack: contextlib.ExitStack | None = None
        self._srv: ServerProcess | None = None
        self._sampler: UsageSampler | None = None
        self._renewed = time.monotonic()
        self._lock = threading.Lock()
        threading.Thread(target=self._watch_lease, daemon=True, name="server-lease").start()

    # -- the lease: a harness that vanished stops its server -------------------------------
    def renew(self) -> bool:
        self._renewed = time.monotonic()
        return self._srv is not None

    def _watch_lease(self) -> None:
        while True:
            time.sleep(1.0)
            if self._srv is not None and time.monotonic() - self._renewed > self.lease_s:
                self.stop()

    # -- before measuring ------------------------------------------------------------------
    def gate(self) -> dict[str, Any]:
        """Toolchain, then build (here, if needed): {'reason': why it cannot run | None, 'hash': folder hash}."""
        from ..catalog import build, doctor
        a = doctor.check(self.m, "run" if build.is_built(self.m) else "build")
        if not a.available:
            hint = f"; {a.install_hint}" if a.install_hint else ""
            return {"reason": f"unavailable on the server machine: {a.reason or 'missing ' + ', '.join(a.missing)}"
                              f"{hint}", "hash": None}
        if not build.is_built(self.m):
            results = build.build([self.m], progress=False)
            bad = [r for r in results if r.status in ("failed", "unavailable")]
            if bad:
                return {"reason": f"build failed on the server machine: {bad[0].error} (log {bad[0].log_path})",
                        "hash": None}
        return {"reason": None, "hash": build.folder_hash(self.m)}

    def verify(self, server_cpus: list[int] | None) -> dict[str, Any]:
        """Run SPEC.md's checks here; {'passed', 'checks', 'hash'} for the harness's store."""
        from ..catalog import build
        from ..verify.servers import verify_servers

        class _Keep:  # the verdict goes to the harness's store, not this machine's
            def record_verdict(self, *args: Any) -> None:
                self.args = args

        keep = _Keep()
        v = next(verify_servers([self.m], keep, server_cpus=server_cpus, allow_unavailable=False))
        checks = [{"name": c.name, "passed": c.passed, "detail": c.detail, "skipped": c.skipped} for c in v.checks]
        return {"passed": v.passed, "checks": checks, "hash": build.folder_hash(self.m), "problem": v.problem}

    # -- a start ---------------------------------------------------------------------------
    def start(self, cpus: list[int] | None, workers: int | None, ready_timeout: float,
              memory_limit: int | None, log_path: str) -> dict[str, Any]:
        """Start the server (log at `log_path`, relative = under this machine's results/logs)."""
        from .. import paths
        from ..processes import supervisor
        # no CPUs given: this machine's server half (the harness's split is of another machine)
        cpus = cpus or supervisor.default_cpu_split()[0]
        with self._lock:
            if self._srv is not None:
                raise ServerStartError(f"server '{self.m.id}' is already running on {self.host}")
            self._renewed = time.monotonic()
            stack = contextlib.ExitStack()
            srv = stack.enter_context(supervisor.run_server(
                self.m, cpus=cpus, workers=workers, log_path=paths.LOGS / log_path,
                ready_timeout=ready_timeout, memory_limit=memory_limit, host=self.host,
                ready_poll_s=supervisor.STARTUP_POLL_S))
            self._stack, self._srv = stack, srv
            mem = srv.memory
            return {"url": srv.url, "pid": srv.pid, "workers": srv.workers, "cpus": srv.cpus, "host": self.host,
                    "ready_s": srv.ready_s,
                    "memory": None if mem is None else {"limit_bytes": mem.limit_bytes, "method": mem.method,
                                                        "detail": mem.detail}}

    def stop(self) -> dict[str, Any]:
        with self._lock:
            self._stop_sampler()
            stack, srv = self._stack, self._srv
            self._stack = self._srv = None
            if stack is not None:
                stack.close()
            return {"stopped_cleanly": None if srv is None else srv.stopped_cleanly}

    def alive(self) -> bool:
        return self._srv is not None and self._srv.alive()

    def returncode(self) -> int | None:
        return None if self._srv is None else self._srv.returncode()

    def log_tail(self, n: int) -> str:
        return "" if self._srv is None else self._srv.log_tail(n)

    def kill(self) -> None:
        if self._srv is not None:
            self._srv.kill()

    def oom_killed(self) -> bool:
        return self._srv is not None and self._srv.oom_killed()

    # -- sampling the measured run ---------------------------------------------------------
    def sample_start(self, interval: float) -> None:
        """Sample the server here, as a local run samples its own (with the memory watchdog, if any)."""
        srv = self._srv
        if srv is None:
            raise ServerStartError(f"server '{self.m.id}' is not running on {self.host}")
        self._sampler = srv.sampler(interval).start()

    def sample_stop(self) -> dict[str, Any] | None:
        return self._stop_sampler()

    def _stop_sampler(self) -> dict[str, Any] | None:
        s, self._sampler = self._sampler, None
        return None if s is None else s.stop().to_dict()


def _call(actor: Any, name: str, *args: Any) -> Any:
    """One call to the actor; LoadgenError (the cell fails, the run goes on) when its worker is gone."""
    from ..processes.loadgen import LoadgenError
    try:
        return getattr(actor, name)(*args).result(timeout=CALL_TIMEOUT_S)
    except ServerStartError:
        raise
    except Exception as e:  # a dead worker, a lost scheduler: Dask's own exception types
        first = (str(e).splitlines() or [""])[0]
        raise LoadgenError(f"the server's Dask worker did not answer ({name}): {type(e).__name__}: {first}") from None


class RemoteSampler:
    """A UsageSampler (processes/server.py) sampling on the server's machine."""

    def __init__(self, actor: Any, interval: float) -> None:
        self.actor, self.interval = actor, interval
        self.usage: dict[str, Any] | None = None

    def start(self) -> "RemoteSampler":
        _call(self.actor, "sample_start", self.interval)
        return self

    def stop(self) -> "RemoteSampler":
        self.usage = _call(self.actor, "sample_stop")
        return self

    def to_dict(self) -> dict[str, Any] | None:
        return self.usage


class RemoteMemory:
    """srv.memory as the runner reads it (limit, method, detail; no local cgroup)."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.limit_bytes, self.method, self.detail = d["limit_bytes"], d["method"], d["detail"]
        self.cgroup = None


class RemoteServer:
    """A server started by a ServerHost actor, seen from the harness: a `Server` (processes/server.py)."""

    def __init__(self, actor: Any, info: dict[str, Any]) -> None:
        self.actor = actor
        self.url: str = info["url"]
        self.pid: int = info["pid"]
        self.workers: int = info["workers"]
        self.cpus: list[int] | None = info["cpus"]
        self.host: str = info["host"]
        self.ready_s: float | None = info.get("ready_s")  # timed on the server's machine
        self.memory = RemoteMemory(info["memory"]) if info.get("memory") else None
        self.lost: str | None = None  # why the worker stopped answering, once it did

    # What the runner asks between and after points answers even when the worker is gone (then
    # the server is gone with it: PR_SET_PDEATHSIG), so the cell fails and the run goes on.
    def _ask(self, name: str, *args: Any, gone: Any) -> Any:
        from ..processes.loadgen import LoadgenError
        try:
            return _call(self.actor, name, *args)
        except LoadgenError as e:
            self.lost = str(e)
            return gone

    def alive(self) -> bool:
        return bool(self._ask("alive", gone=False))

    def returncode(self) -> int | str | None:
        return self._ask("returncode", gone="unknown: its Dask worker is gone")

    def log_tail(self, n: int = 20) -> str:
        return self._ask("log_tail", n, gone=f"(no log: {self.lost})")

    def kill(self) -> None:
        self._ask("kill", gone=None)

    def oom_killed(self) -> bool:
        return bool(self._ask("oom_killed", gone=False))

    def sampler(self, interval: float) -> RemoteSampler:
        return RemoteSampler(self.actor, interval)


def _renew_until(actor: Any, done: threading.Event) -> None:
    while not done.wait(RENEW_S):
        try:
            actor.renew().result(timeout=RENEW_S * 2)
        except Exception:  # the next renewal, or the lease, settles it
            pass


@contextlib.contextmanager
def run_remote(actor: Any, *, cpus: list[int] | None, workers: int | None, ready_timeout: float,
               memory_limit: int | None, log_path: str) -> Iterator[RemoteServer]:
    """Start the actor's server, keep its lease while the caller measures, stop it afterwards."""
    try:
        info = actor.start(cpus, workers, ready_timeout, memory_limit, log_path).result(
            timeout=ready_timeout + CALL_TIMEOUT_S)
    except ServerStartError:
        raise
    except Exception as e:  # a worker that died, a scheduler that went away
        raise ServerStartError(f"the server worker could not start it: {type(e).__name__}: {e}") from None
    done = threading.Event()
    renewer = threading.Thread(target=_renew_until, args=(actor, done), daemon=True, name="server-lease-renew")
    renewer.start()
    try:
        yield RemoteServer(actor, info)
    finally:
        done.set()
        try:
            actor.stop().result(timeout=CALL_TIMEOUT_S)
        except Exception:  # the lease stops it when the worker outlived this call
            pass


__all__ = ["ServerHost", "RemoteServer", "RemoteSampler", "run_remote", "LEASE_S", "worker_host"]
