"""Building contestants: environment, folder-hash cache, logs, progress.

A build is skipped when `build/stamps/<id>` holds the hash of the server folder
(sources + build command) from the last successful build, so a no-op build of
the whole catalog costs only hashing.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time
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


def _build_one(m: Manifest, log_path: Path) -> tuple[bool, str | None]:
    """Run the build command; (ok, error line)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        log.write(f"$ cd {m.dir} && {m.build}\n".encode())
        log.flush()
        try:
            rc = subprocess.run(
                ["/bin/sh", "-c", m.build], cwd=m.dir, env=server_env(m),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT_S, start_new_session=True,
            ).returncode
        except subprocess.TimeoutExpired:
            return False, (f"build of '{m.id}' timed out after {BUILD_TIMEOUT_S} s; "
                           f"see {log_path}")
    if rc != 0:
        return False, f"build of '{m.id}' failed with exit code {rc}; see {log_path}"
    return True, None


def build(ms: list[Manifest], *, force: bool = False, progress: bool = True,
          console: Console | None = None) -> list[BuildResult]:
    """Build each server in turn (cached by stamp); failures are recorded and skipped past."""
    console = console or Console(stderr=True)
    results: list[BuildResult] = []
    for i, m in enumerate(ms, 1):
        t0 = time.monotonic()
        avail = doctor.check(m)
        if not avail.available:
            hint = f"; fix: {avail.install_hint}" if avail.install_hint else ""
            results.append(BuildResult(m.id, "unavailable", 0.0, None,
                                       f"{avail.reason}{hint}"))
            if progress:
                console.print(f"[yellow]–[/] {m.id}: unavailable ({avail.reason})")
            continue
        if not force and is_built(m):
            results.append(BuildResult(m.id, "cached", time.monotonic() - t0, None, None))
            if progress:
                console.print(f"[dim]·[/] {m.id}: up to date")
            continue
        log_path = paths.LOGS / f"build-{m.id}.log"
        spinner = (console.status(f"building {m.id} ({i}/{len(ms)}) … log: {log_path}")
                   if progress else contextlib.nullcontext())
        with spinner:
            ok, err = _build_one(m, log_path)
        secs = time.monotonic() - t0
        if ok:
            paths.STAMPS.mkdir(parents=True, exist_ok=True)
            # hash after the build: builds may legitimately touch the folder (lock files); the
            # toolchain's version beside it, for runs on a machine without that toolchain
            _stamp(m).write_text(folder_hash(m) + "\n" + (avail.version or "") + "\n")
            results.append(BuildResult(m.id, "built", secs, log_path, None))
            if progress:
                console.print(f"[green]✓[/] {m.id}: built in {secs:.1f} s")
        else:
            _stamp(m).unlink(missing_ok=True)
            results.append(BuildResult(m.id, "failed", secs, log_path, err))
            if progress:
                console.print(f"[red]✗[/] {m.id}: {err}")
                tail = _tail(log_path)
                if tail:
                    console.print(tail, markup=False, highlight=False, style="dim")
    return results
