"""Start one server pinned to CPUs, wait until it answers, and always stop all of it.

Every server runs in its own session (process group), so stopping signals the
whole group; descendants that left the group (daemonized workers) are found
with psutil and killed too. Servers are registered while running so that
`stop_all()` (atexit, and the CLI's signal handlers via KeyboardInterrupt)
never leaves one behind.

Orphan safety in the CLI path: `install_signal_handlers()` turns SIGTERM/SIGHUP
into KeyboardInterrupt, so `run_server`'s `finally` stops the server exactly as
on Ctrl-C; an `atexit` hook stops anything still registered; and each server's
top process gets SIGTERM from the kernel if the harness dies without cleanup
(PR_SET_PDEATHSIG, e.g. on SIGKILL).
"""
from __future__ import annotations

import atexit
import ctypes
import http.client
import os
import resource
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from serverbench.processes import memlimit
from serverbench.processes.sampler import Sampler
from serverbench import paths
from serverbench.catalog.environment import server_env
from serverbench.catalog.manifests import Manifest

STOP_GRACE_S = 5.0
PORT_RELEASE_S = 5.0
POLL_S = 0.05
# How often a start-up is probed when its time is a figure (the run's starts, the profile's): 2 ms, so a
# 40 ms start is not read as 50 ms.
STARTUP_POLL_S = 0.002
_PR_SET_PDEATHSIG = 1
try:  # loaded here, not in the forked child, where dlopen could deadlock on another thread's lock
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:
    _LIBC = None


class ServerStartError(Exception):
    """The server exited or never answered `GET /` with 200; the message has its log tail."""

    def __init__(self, message: str, server: "ServerProcess | None" = None, headline: str | None = None) -> None:
        super().__init__(message)
        self.server = server  # the (stopped) process, when one was started
        # what happened, in one line without the log tail the message goes on with (verify's details)
        self.headline = headline or (message.splitlines() or [""])[0]


@dataclass
class ServerProcess:
    """A server started here (run_server): the `Server` of processes/server.py."""

    manifest: Manifest
    pid: int
    host: str
    port: int
    url: str  # "http://127.0.0.1:PORT" (no trailing slash); https:// for a TLS start
    log_path: Path
    workers: int
    cpus: list[int] | None = None
    # seconds from starting the process to its first 200 on GET / (to within the poll interval)
    ready_s: float | None = None
    # set when stopped: did the whole tree exit within STOP_GRACE_S of SIGTERM?
    stopped_cleanly: bool | None = None
    port_released: bool | None = None
    memory: memlimit.MemoryLimit | None = None  # the memory ceiling of this start, when one was asked for
    _proc: subprocess.Popen | None = field(default=None, repr=False)

    def log_tail(self, n: int = 20) -> str:
        """The last `n` lines of the server's stdout+stderr."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 64 * 1024))
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer acted in this start's memory cgroup."""
        return bool(self.memory is not None and memlimit.oom_kills(self.memory.cgroup))

    def kill(self) -> None:
        """SIGKILL the whole tree now, as the kernel's OOM killer would (the memory watchdog).
        Safe from another thread; the context manager's stop still reaps and checks the port."""
        if self._proc is None:
            return
        _signal_all(self._proc.pid, _descendants(self._proc.pid), signal.SIGKILL)

    def sampler(self, interval: float) -> Sampler:
        """The server's process tree sampled every `interval` s; with a watchdog memory limit the
        sampler also SIGKILLs the tree the first time its RSS passes the limit."""
        mem = self.memory
        if mem is None or mem.method != memlimit.WATCHDOG:
            return Sampler(self.pid, interval=interval, cpus=self.cpus)
        return Sampler(self.pid, interval=interval, cpus=self.cpus, rss_limit=mem.limit_bytes,
                       on_rss_limit=lambda _rss: self.kill())


# pid -> server, for stop_all()
_LIVE: dict[int, ServerProcess] = {}
_LIVE_LOCK = threading.Lock()
_atexit_registered = False


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now on `host` (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port (TIME_WAIT leftovers don't count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def online_cpus() -> list[int]:
    """The CPUs this process may run on."""
    return sorted(os.sched_getaffinity(0))


def default_cpu_split() -> tuple[list[int], list[int]]:
    """(server CPUs, load-generator CPUs): two halves; on one CPU both share it."""
    cpus = online_cpus()
    if len(cpus) == 1:
        return [cpus[0]], [cpus[0]]
    half = len(cpus) // 2
    return cpus[:half], cpus[half:]


def parse_cpus(spec: str, *, check_online: bool = True) -> list[int]:
    """Parse a taskset-style CPU list ("0", "0-3", "0,2", "0-1,4")."""
    bad = ValueError(f"invalid CPU list {spec!r}; fix: write it like '0', '0-3' or '0,2'")
    out: set[int] = set()
    if not spec.strip():
        raise bad
    for part in spec.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise bad
        a, b = int(lo), int(hi) if sep else int(lo)
        if a > b:
            raise bad
        out.update(range(a, b + 1))
    if check_online:
        online = online_cpus()
        extra = sorted(out - set(online))
        if extra:
            raise ValueError(f"CPU {','.join(map(str, extra))} in {spec!r} is not available to "
                             f"this process; fix: use CPUs from {','.join(map(str, online))}")
    return sorted(out)


def pinned(cmd: list[str], cpus: list[int] | None) -> list[str]:
    """`cmd` run under `taskset -c CPUS` (unchanged without cpus or without taskset)."""
    if not cpus or shutil.which("taskset") is None:
        return list(cmd)
    return ["taskset", "-c", ",".join(map(str, cpus)), *cmd]


def raise_nofile() -> int:
    """Raise the soft open-files limit to the hard one; the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


def die_with_parent(parent_pid: int, sig: int = signal.SIGTERM) -> None:
    """In a forked child before exec: have the kernel send `sig` when the parent thread dies.
    No exceptions may escape (preexec_fn)."""
    if _LIBC is None:
        return
    try:
        _LIBC.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except Exception:
        return
    if os.getppid() != parent_pid:  # the harness died before prctl took effect
        os._exit(1)


def _child_setup(parent_pid: int, cgroup: Path | None = None) -> None:
    """Runs in the forked server child before exec: no exceptions may escape."""
    try:
        raise_nofile()
    except Exception:
        pass
    if cgroup is not None:  # before exec, so every process the server forks is inside
        memlimit.join(cgroup)
    die_with_parent(parent_pid, signal.SIGTERM)


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _group_members(pgid: int) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and _alive(p):
                out.append(p)
        except (OSError, psutil.Error):
            continue
    return out


def _signal_all(pgid: int, procs: list[psutil.Process], sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for p in procs:
        try:
            p.send_signal(sig)  # psutil checks the pid was not reused
        except psutil.Error:
            pass


def _wait_gone(proc: subprocess.Popen, procs: list[psutil.Process], pgid: int,
               timeout: float) -> bool:
    """Wait until the top process, the known descendants and the group are gone."""
    deadline = time.monotonic() + timeout
    while True:
        proc.poll()  # reaps our direct child
        if (proc.returncode is not None and not any(_alive(p) for p in procs)
                and not _group_members(pgid)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def _stop(srv: ServerProcess, grace: float | None = None) -> None:
    """SIGTERM the group and its descendants, SIGKILL after `grace`, wait for the port."""
    grace = STOP_GRACE_S if grace is None else grace
    proc = srv._proc
    assert proc is not None
    pgid = proc.pid  # start_new_session: the shell/server leads its own group
    tree = _descendants(proc.pid)
    _signal_all(pgid, tree, signal.SIGTERM)
    srv.stopped_cleanly = _wait_gone(proc, tree, pgid, grace)
    if not srv.stopped_cleanly:
        tree = list({p.pid: p for p in tree + _descendants(proc.pid)}.values())
        _signal_all(pgid, tree, signal.SIGKILL)
        if not _wait_gone(proc, tree, pgid, STOP_GRACE_S):
            survivors = [p.pid for p in tree if _alive(p)] + [p.pid for p in _group_members(pgid)]
            raise RuntimeError(f"server '{srv.manifest.id}' left processes {survivors} alive "
                               f"after SIGKILL; fix: kill them by pid")
    deadline = time.monotonic() + PORT_RELEASE_S
    while not (released := port_is_free(srv.host, srv.port)) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    srv.port_released = released


def tls_context(ca: Path) -> ssl.SSLContext:
    """A client context that trusts only the run's CA (its certificate names 127.0.0.1, ::1, localhost)."""
    return ssl.create_default_context(cafile=str(ca))


def _probe(host: str, port: int, tls: ssl.SSLContext | None = None, http2: bool = False) -> str | None:
    """None when `GET /` answers 200 (over TLS with `tls`, the certificate verified; over HTTP/2 with
    `http2`, which a row may serve alone on its port), else what happened."""
    if http2:
        from ..h2 import H2Error, get
        try:
            status = get(host, port, "/", tls=tls, timeout=1.0).status
            return None if status == 200 else f"GET / over HTTP/2 answered {status}"
        except (OSError, H2Error) as e:
            return f"HTTP/2: {type(e).__name__}: {e}"
    conn = (http.client.HTTPSConnection(host, port, timeout=1.0, context=tls) if tls is not None
            else http.client.HTTPConnection(host, port, timeout=1.0))
    try:
        conn.request("GET", "/", headers={"Connection": "close"})
        resp = conn.getresponse()
        resp.read()
        return None if resp.status == 200 else f"GET / answered {resp.status}"
    except ssl.SSLError as e:  # a TLS answer that is wrong (not a port still closed): worth naming
        return f"TLS: {e.reason or e}"
    except (OSError, http.client.HTTPException) as e:
        return f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def _indent(text: str) -> str:
    return "\n".join("    " + ln for ln in text.splitlines()) if text.strip() else "    (empty log)"


def _wait_ready(srv: ServerProcess, timeout: float, started: float, poll_s: float = POLL_S,
                tls: ssl.SSLContext | None = None, http2: bool = False) -> None:
    assert srv._proc is not None
    deadline = started + timeout
    over = (" over HTTP/2" if http2 else "") + (" over TLS" if tls is not None else "")
    while True:
        rc = srv._proc.poll()
        if rc is not None:
            head = (f"server '{srv.manifest.id}' exited with code {rc} before becoming ready on "
                    f"{srv.host}:{srv.port}; log {srv.log_path}")
            raise ServerStartError(f"{head}, last log lines:\n{_indent(srv.log_tail())}", srv, head)
        problem = _probe(srv.host, srv.port, tls, http2)
        if problem is None:
            srv.ready_s = time.monotonic() - started
            return
        if time.monotonic() >= deadline:
            last = f" (last probe: {problem})" if tls is not None or http2 else ""
            head = (f"server '{srv.manifest.id}' did not become ready on {srv.host}:{srv.port}{over} "
                    f"within {timeout:g} s{last}; log {srv.log_path}")
            raise ServerStartError(f"{head}, last log lines:\n{_indent(srv.log_tail())}", srv, head)
        time.sleep(poll_s)


def _register(srv: ServerProcess) -> None:
    global _atexit_registered
    with _LIVE_LOCK:
        _LIVE[srv.pid] = srv
        if not _atexit_registered:
            atexit.register(stop_all)
            _atexit_registered = True


def _unregister(srv: ServerProcess) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(srv.pid, None)


def effective_workers(m: Manifest, workers: int | None, cpus: list[int] | None) -> int:
    """The `$WORKERS` a start gets: asked for, the row's own, else the CPUs it is pinned to (not the
    harness's own affinity)."""
    return workers or m.workers or len(cpus or online_cpus())


@contextmanager
def run_server(m: Manifest, *, cpus: list[int] | None = None, port: int | None = None,
               workers: int | None = None, log_path: Path | None = None,
               ready_timeout: float = 30.0, ready_poll_s: float = POLL_S,
               memory_limit: int | None = None, host: str = "127.0.0.1",
               extra_env: dict[str, str] | None = None, tls_ca: Path | None = None,
               http2: bool = False) -> Iterator[ServerProcess]:
    """Start `m` listening on `host`, wait for `GET /` → 200 (probing every `ready_poll_s`), yield
    it, and stop its whole process tree. `host` is loopback unless the caller was asked for
    another address (a server on a Dask worker listens where that worker does).

    `memory_limit` (bytes): a cgroup v2 memory ceiling for the tree where the machine allows it;
    otherwise `srv.memory.method` is memlimit.WATCHDOG and the caller watches RSS.
    `extra_env`: variables set on top of the row's own (a db row's `$DATABASE_URL`, `$DB_POOL`, a TLS
    start's `$TLS_*`). `tls_ca`: the start serves TLS (SPEC.md, "TLS"): readiness is `GET /` over TLS with
    the certificate verified against this CA, and the server's URL is https://. `http2`: the start serves
    HTTP/2 (`$HTTP2` in `extra_env`, SPEC.md "HTTP/2"): readiness is `GET /` over HTTP/2."""
    port = port or free_port(host)
    if not port_is_free(host, port):
        raise ServerStartError(f"port {port} on {host} is already in use, so server '{m.id}' "
                               f"cannot start there; fix: stop whatever listens on it or pick "
                               f"another port")
    n_workers = effective_workers(m, workers, cpus)
    log_path = log_path or paths.LOGS / f"{m.id}-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = server_env(m, host=host, port=port, workers=n_workers, extra=extra_env)
    parent = os.getpid()
    memory = memlimit.prepare(memory_limit) if memory_limit else None
    cgroup = memory.cgroup if memory else None
    try:
        with open(log_path, "wb") as log:
            started = time.monotonic()
            proc = subprocess.Popen(
                pinned(["/bin/sh", "-c", m.run], cpus), cwd=m.dir, env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=lambda: _child_setup(parent, cgroup),
            )
    except BaseException:
        memlimit.release(cgroup)
        raise
    srv = ServerProcess(manifest=m, pid=proc.pid, host=host, port=port,
                        url=f"{'https' if tls_ca else 'http'}://{host}:{port}", log_path=log_path, workers=n_workers,
                        cpus=list(cpus) if cpus else None, memory=memory, _proc=proc)
    _register(srv)
    try:
        _wait_ready(srv, ready_timeout, started, ready_poll_s, tls_context(tls_ca) if tls_ca else None, http2)
        yield srv
    finally:
        # if a second Ctrl-C interrupts this, the server stays registered for stop_all()
        try:
            _stop(srv)
        finally:
            memlimit.release(cgroup)
        _unregister(srv)


def stop_all() -> None:
    """Stop every server still running (atexit / signal paths); never raises."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    for srv in live:
        try:
            _stop(srv, grace=2.0)
        except Exception:
            pass
        _unregister(srv)


def _raise_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"received {signal.Signals(signum).name}")


def install_signal_handlers() -> None:
    """Make SIGTERM/SIGHUP behave like Ctrl-C so every `finally` stops its server.

    Call from the main thread of the CLI process. SIGINT is set explicitly too: a process
    started with SIGINT ignored (a background job, or a parent that ignores it — seen under
    pytest once Dask had run) would otherwise not stop on it.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)
