"""A memory ceiling for a server's process tree (`run --server-memory-limit`), so "ran out of memory"
is reproducible without exhausting the machine.

Two ways, chosen per server start, and recorded with every cell:
- `cgroup-v2`: a cgroup of its own under the root of the cgroup v2 hierarchy, with `memory.max`
  = the limit, no swap, and `memory.oom.group` = 1, so the kernel's OOM killer ends the whole tree
  at once (like a watchdog, unlike a lone worker dying). The server joins it before it execs
  (`join`), so every process it forks is inside. Needs a cgroup v2 hierarchy whose root offers the
  memory controller and that this process may write to (root, no container restriction).
- `rss-watchdog`: otherwise. The sampler sums the tree's RSS 5 times a second while a measured run
  is sampled and the runner SIGKILLs the tree the first time it passes the limit. It sees the tree
  only at its samples (a fast allocator can pass the limit by what it allocates in 0.2 s) and
  does not watch warm-ups or calibrations.
The cgroup's files are plain text; every path is passed in, so tests use a directory that looks
like one.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from itertools import count
from pathlib import Path

CGROUP = "cgroup-v2"
WATCHDOG = "rss-watchdog"
CGROUP_ROOT = Path("/sys/fs/cgroup")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B?)?\s*$", re.I)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_serial = count(1)


class MemoryLimitError(Exception):
    """A limit that cannot be parsed (one line naming the value and the fix)."""


def parse_size(text: str | int) -> int:
    """'512M' | '1G' | '1.5GiB' | '300MB' | 1048576 -> bytes (binary units: M = MiB)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = _SIZE.match(str(text))
        if not m:
            raise MemoryLimitError(f"memory limit {text!r} is not a size; write it like '512M' or '2G'")
        value = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if value < 16 * 2**20:
        raise MemoryLimitError(f"memory limit {text!r} is below 16 MiB, too small for any server; raise it")
    return value


@dataclass
class MemoryLimit:
    """How one server start is held under `limit_bytes`."""

    limit_bytes: int
    method: str  # CGROUP | WATCHDOG
    detail: str  # the cgroup's path, or why cgroup v2 could not be used
    cgroup: Path | None = None

    def describe(self) -> str:
        size = f"{self.limit_bytes / 2**20:,.0f} MiB"
        if self.method == CGROUP:
            return f"{size}, enforced by cgroup v2 memory.max (the kernel OOM-kills the whole tree)"
        return (f"{size}, enforced by the RSS watchdog (tree RSS checked 5×/s during measured runs, "
                f"SIGKILL past it) — {self.detail}")


def cgroup2_root(mounts: str | None = None) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (from /proc/self/mounts), or None."""
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None


def cgroup_unavailable(root: Path | None) -> str | None:
    """Why a memory cgroup cannot be made under `root` (None: it can)."""
    if root is None:
        return "no cgroup v2 hierarchy is mounted"
    try:
        controllers = (root / "cgroup.controllers").read_text().split()
    except OSError:
        return f"{root} is not a cgroup v2 hierarchy"
    if "memory" not in controllers:
        return (f"the cgroup v2 hierarchy at {root} has no memory controller "
                f"(it offers {' '.join(controllers) or 'none'}; memory is bound to cgroup v1 here)")
    if not os.access(root, os.W_OK):
        return f"{root} is not writable by this process (run as root, outside a restricted container)"
    try:
        enabled = (root / "cgroup.subtree_control").read_text().split()
        if "memory" not in enabled:
            (root / "cgroup.subtree_control").write_text("+memory")
    except OSError as e:
        return f"cannot enable the memory controller for {root}'s children ({e.strerror or e})"
    return None


def prepare(limit_bytes: int, root: Path | None = None, name: str | None = None) -> MemoryLimit:
    """A fresh cgroup limited to `limit_bytes` when possible, else the watchdog with the reason.

    `root` defaults to the mounted cgroup v2 hierarchy."""
    root = root if root is not None else cgroup2_root()
    why = cgroup_unavailable(root)
    if why is None:
        assert root is not None
        cg = root / (name or f"serverbench-{os.getpid()}-{next(_serial)}")
        try:
            cg.mkdir()
            (cg / "memory.max").write_text(str(limit_bytes))
            for f, v in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                if (cg / f).exists():
                    (cg / f).write_text(v)
            return MemoryLimit(limit_bytes, CGROUP, str(cg), cg)
        except OSError as e:
            release(cg)
            why = f"cannot create the cgroup {cg} ({e.strerror or e})"
    return MemoryLimit(limit_bytes, WATCHDOG, f"cgroup v2 not used: {why}")


def join(cg: Path) -> None:
    """Move the calling process into `cg` (in a forked child before exec: never raises)."""
    try:
        with open(cg / "cgroup.procs", "w") as f:
            f.write("0")  # "0" = the writing process itself
    except OSError:
        pass


def oom_kills(cg: Path | None) -> int:
    """Processes the kernel OOM-killed in `cg` so far (memory.events), 0 when unknown."""
    if cg is None:
        return 0
    try:
        events = dict(line.split() for line in (cg / "memory.events").read_text().splitlines() if line.strip())
    except (OSError, ValueError):
        return 0
    return int(events.get("oom_kill", 0))


def release(cg: Path | None) -> None:
    """Remove an emptied cgroup (its processes gone); errors are ignored (it may be in use)."""
    if cg is None:
        return
    try:
        cg.rmdir()
    except OSError:
        pass


__all__ = ["MemoryLimit", "MemoryLimitError", "parse_size", "prepare", "join", "oom_kills", "release",
           "cgroup2_root", "cgroup_unavailable", "CGROUP", "WATCHDOG"]
