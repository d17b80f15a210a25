"""The environment a run was measured in, stored with the run so results stay interpretable.

Flat keys (cores, server_cpus, client_cpus, loadgen_version, git_commit, git_dirty, ...) as
docs/DESIGN.md lists them; readers take a stored one through rules/fingerprint.normalize."""
from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def git_state(repo: Path) -> dict[str, Any]:
    """Commit and dirty flag of the project checkout (read-only git commands)."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    from ..rules.fingerprint import REPORT_SIDE, measuring_code
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    tree = git("ls-tree", "-r", "HEAD")
    # uncommitted edits to measuring paths are part of what measured (report-side edits are not)
    diff = git("diff", "HEAD", "--no-color", "--", ".", *(f":(exclude){p}" for p in REPORT_SIDE))
    code = measuring_code(tree.splitlines(), diff) if tree is not None and diff is not None else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None, "measuring_code": code}


def here() -> dict[str, Any]:
    """This checkout on this machine, in the fingerprint's comparable keys (rules/fingerprint.differs):
    which stored runs a new one would stand beside."""
    from .. import paths
    git = git_state(paths.REPO)
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "git_commit": git["commit"],
            "measuring_code": git["measuring_code"]}


def _server_info(m: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"language": m.language, "runtime": m.runtime, "model": m.model,
                            "framework": m.framework, "origin": m.origin, "description": m.description,
                            "max_connections": m.max_connections, "workers": m.workers,
                            "choices": m.choices.model_dump() if m.choices else None,
                            "explanation": getattr(m, "explanation", ""),  # quoted by outliers.py
                            "version": None}
    try:
        from ..catalog import doctor
        info["version"] = doctor.check(m, "run").version
    except Exception as e:  # a broken toolchain must not stop the fingerprint
        info["version_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    return info


def fingerprint(manifests: Iterable[Any], *, server_cpus: list[int] | None,
                client_cpus: list[int] | None) -> dict[str, Any]:
    """CPU, kernel, OS, Python, pinning, servers' toolchains, loadgen version, git, host, time."""
    from ..processes import loadgen
    from .. import paths
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    git = git_state(paths.REPO)
    return {
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "affinity": affinity,
        "kernel": platform.release(),
        "os": os_name(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "server_cpus": server_cpus, "client_cpus": client_cpus,
        "loadgen_path": str(paths.loadgen_binary()), "loadgen_version": loadgen.version(),
        "git_commit": git["commit"], "git_dirty": git["dirty"], "measuring_code": git["measuring_code"],
        "servers": {m.id: _server_info(m) for m in manifests},
    }
