"""Building contestants: environment, folder-hash cache, logs, progress.

A build is skipped when `build/stamps/<id>` holds the hash of the server folder
(sources + build command) from the last successful build, so a no-op build of
the whole catalog costs only hashing.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.console import Console

from serverbench.catalog import doctor
from serverbench import paths
from serverbench.catalog.manifests import Manifest
from serverbench.catalog.environment import server_env

# Build outputs and dependency caches: never part of the folder hash.
SKIP_DIRS = frozenset({
    "target", "bin", "out", "node_modules", "__pycache__", "dist", ".venv", "zig-out",
    ".zig-cache", "zig-cache", "_build", ".gradle", ".mypy_cache", ".pytest_cache",
})
BUILD_TIMEOUT_S = 30 * 60


@dataclass
class BuildResult:
    id: str
    status: Literal["built", "cached", "failed", "unavailable"]
    seconds: float
    log_path: Path | None
    error: str | None


def folder_hash(m: Manifest) -> str:
    """sha256 over the server folder's files (paths, modes, bytes), those of the folders it
    `shares`, and its build command."""
    h = hashlib.sha256()
    h.update(b"build\0" + m.build.encode() + b"\0")
    for root in (m.dir, *m.shared_dirs()):
        h.update(f"dir\0{root.name}\0".encode())
        _hash_tree(h, root)
    return h.hexdigest()


def _hash_tree(h: "hashlib._Hash", root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            try:
                st = p.lstat()
                if p.is_symlink():
                    data = os.readlink(p).encode()
                else:
                    data = p.read_bytes()
            except OSError:
                continue  # vanished while walking
            h.update(f"{rel}\0{st.st_mode & 0o111:o}\0{len(data)}\0".encode())
            h.update(data)


def _stamp(m: Manifest) -> Path:
    return paths.STAMPS / m.id


def is_built(m: Manifest) -> bool:
    """True when nothing needs building: no build command, or the stamp matches the folder."""
    if not m.build.strip():
        return True
    try:
        lines = _stamp(m).read_text().splitlines()
        return bool(lines) and lines[0].strip() == folder_hash(m)
    except OSError:
        return False


def _tail(path: Path, n: int = 15) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


# Builds run this many at a time. Most build commands use one core for long stretches (javac and
# Maven's JVM, Crystal's and Nim's code generation, Go's link, a single-file gcc), so on the 2-core
# machine two at a time keep both cores busy where one left a core idle (a fresh clone's 22 builds
# took 353 s one at a time; `build` prints the wall time beside their sum). Cargo rows share
# build/cargo-target, whose lock cargo holds while one of them builds.
def default_jobs() -> int:
    return min(8, max(2, len(os.sched_getaffinity(0)) // 2))


_RUNNING: dict[int, subprocess.Popen[bytes]] = {}
_RUNNING_LOCK = threading.Lock()
_STOPPED = threading.Event()  # set by stop_builds: a queued build does not start
# Builds that share a tool's writable cache run one at a time (one lane each, `_lanes`): Maven's local
# repository (~/.m2) is written by a first build's downloads, and cargo rows share build/cargo-target
# (cargo would wait on its own lock anyway). Other builds write only into their own folder.
SHARED_CACHE_TOOLS = ("cargo", "mvn")
_TOOL_LOCKS = {tool: threading.Lock() for tool in SHARED_CACHE_TOOLS}


def _tool(m: Manifest) -> str | None:
    words = m.build.replace("&&", " ").replace(";", " ").split()
    return next((t for t in SHARED_CACHE_TOOLS if t in words), None)


def _lanes(todo: list[tuple[Manifest, str | None]]) -> list[list[tuple[Manifest, str | None]]]:
    """`todo` as lanes, each built one after another on one slot: a lane per shared-cache tool (its lock
    would make its builds wait for each other anyway), in SHARED_CACHE_TOOLS' order, then a lane per other
    build. cargo's lane first: on the 2-core VM its four rows take 5.5 min one after another, longer than
    all the others together (3.5 min), so it starts at once and the other slots take everything else; when
    its builds were spread among the others (round robin), each waited behind the queue and the last cargo
    row ended 7.3 min in."""
    groups: dict[str, list[tuple[Manifest, str | None]]] = {}
    for item in todo:
        groups.setdefault(_tool(item[0]) or "", []).append(item)
    return [*(groups[t] for t in SHARED_CACHE_TOOLS if t in groups), *([x] for x in groups.get("", []))]


def _build_lane(lane: list[tuple[Manifest, str | None]], nice: int, out: "queue.Queue[BuildResult]") -> None:
    for m, version in lane:
        out.put(_build_and_stamp(m, version, nice))


def _build_one(m: Manifest, log_path: Path, nice: int = 0) -> tuple[bool, str | None]:
    """Run the build command in a process group of its own, `nice` added to its priority; (ok, error line)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        log.write(f"$ cd {m.dir} && {m.build}\n".encode())
        log.flush()
        # coreutils' nice rather than a preexec_fn, which is unsafe in the threads builds run on
        prefix = ["nice", "-n", str(nice)] if nice else []
        proc = subprocess.Popen([*prefix, "/bin/sh", "-c", m.build], cwd=m.dir, env=server_env(m), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        with _RUNNING_LOCK:
            _RUNNING[proc.pid] = proc
            # stop_builds sets the flag before it lists _RUNNING: a build registered after that
            # listing sees the flag here, so none escapes a stop
            stopped = _STOPPED.is_set()
        if stopped:
            _kill_group(proc)
            with _RUNNING_LOCK:
                _RUNNING.pop(proc.pid, None)
            return False, f"build of '{m.id}' stopped: the builds were stopped"
        try:
            rc = proc.wait(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return False, f"build of '{m.id}' timed out after {BUILD_TIMEOUT_S} s; see {log_path}"
        finally:
            with _RUNNING_LOCK:
                _RUNNING.pop(proc.pid, None)
    if rc != 0:
        return False, f"build of '{m.id}' failed with exit code {rc}; see {log_path}"
    return True, None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a build's whole process group (cargo, mvn and their children), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def stop_builds() -> None:
    """Kill every build still running and start no queued one (Ctrl-C, SIGTERM, or verify failing
    beside the builds): builds run in process groups of their own, which a terminal's Ctrl-C does
    not reach."""
    _STOPPED.set()
    with _RUNNING_LOCK:
        running = list(_RUNNING.values())
    for proc in running:
        _kill_group(proc)


def _build_and_stamp(m: Manifest, version: str | None, nice: int = 0) -> BuildResult:
    tool = _tool(m)
    with _TOOL_LOCKS[tool] if tool else contextlib.nullcontext():
        t0 = time.monotonic()
        log_path = paths.LOGS / f"build-{m.id}.log"
        if _STOPPED.is_set():
            return BuildResult(m.id, "failed", 0.0, None, f"build of '{m.id}' not started: the builds were stopped")
        ok, err = _build_one(m, log_path, nice)
        secs = time.monotonic() - t0
    if not ok:
        _stamp(m).unlink(missing_ok=True)
        return BuildResult(m.id, "failed", secs, log_path, err)
    paths.STAMPS.mkdir(parents=True, exist_ok=True)
    # hash after the build: builds may legitimately touch the folder (lock files); the toolchain's
    # version beside it, for runs on a machine without that toolchain
    _stamp(m).write_text(folder_hash(m) + "\n" + (version or "") + "\n")
    return BuildResult(m.id, "built", secs, log_path, None)


def _show(r: BuildResult, console: Console) -> None:
    if r.status == "built":
        console.print(f"[green]✓[/] {r.id}: built in {r.seconds:.1f} s")
        return
    console.print(f"[red]✗[/] {r.id}: {r.error}")
    tail = _tail(r.log_path) if r.log_path else ""
    if tail:
        console.print(tail, markup=False, highlight=False, style="dim")


def build(ms: list[Manifest], *, force: bool = False, progress: bool = True,
          console: Console | None = None, jobs: int | None = None, nice: int = 0,
          on_result: Callable[[BuildResult], None] | None = None) -> list[BuildResult]:
    """Build the servers, `jobs` at a time (default_jobs()), each cached by its stamp; failures are
    recorded and skipped past. Results in the order of `ms`; `on_result` is called with each one as
    it is known (cached ones first, built ones as they end), for work that follows a row's build.
    `nice`: added to the build commands' priority (work beside them goes first)."""
    console = console or Console(stderr=True)
    _STOPPED.clear()
    report = on_result or (lambda r: None)
    done: dict[str, BuildResult] = {}
    todo: list[tuple[Manifest, str | None]] = []
    for m in ms:
        avail = doctor.check(m)
        if not avail.available:
            hint = f"; fix: {avail.install_hint}" if avail.install_hint else ""
            done[m.id] = BuildResult(m.id, "unavailable", 0.0, None, f"{avail.reason}{hint}")
            report(done[m.id])
            if progress:
                console.print(f"[yellow]–[/] {m.id}: unavailable ({avail.reason})")
        elif not force and is_built(m):
            done[m.id] = BuildResult(m.id, "cached", 0.0, None, None)
            report(done[m.id])
            if progress:
                console.print(f"[dim]·[/] {m.id}: up to date")
        else:
            todo.append((m, avail.version))
    if todo:
        t0 = time.monotonic()
        for r in _build_all(todo, jobs or default_jobs(), console if progress else None, nice,
                            spinner=on_result is None):
            done[r.id] = r
            report(r)
        if progress and len(todo) > 1:
            total = sum(done[m.id].seconds for m, _ in todo)
            console.print(f"[dim]{len(todo)} builds in {time.monotonic() - t0:.0f} s of wall time "
                          f"(their own times add up to {total:.0f} s; {jobs or default_jobs()} at a time)[/]")
    return [done[m.id] for m in ms]


def _next_result(results: "queue.Queue[BuildResult]", futures: list[Future[None]]) -> BuildResult:
    """The next build to end; a lane's own error (not a failed build: those are results) raised here."""
    while True:
        try:
            return results.get(timeout=0.2)
        except queue.Empty:
            for f in futures:
                if f.done() and f.exception() is not None:
                    raise f.exception()  # type: ignore[misc]


def _build_all(todo: list[tuple[Manifest, str | None]], jobs: int, console: Console | None, nice: int = 0,
               spinner: bool = True) -> Iterator[BuildResult]:
    """Build `todo` on `jobs` threads, yielding each result as it ends; Ctrl-C kills the builds.
    No spinner when other output runs beside the builds (it would redraw over it)."""
    names = [m.id for m, _ in todo]
    status = (console.status(f"building {len(names)} servers, {jobs} at a time … logs in {paths.LOGS}")
              if console and spinner else contextlib.nullcontext())
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="build")
    results: queue.Queue[BuildResult] = queue.Queue()
    try:
        with status:
            futures = [pool.submit(_build_lane, lane, nice, results) for lane in _lanes(todo)]
            for _ in todo:
                r = _next_result(results, futures)
                if console:
                    _show(r, console)
                yield r
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        stop_builds()
        raise
    finally:
        pool.shutdown(wait=True)
