"""Is a contestant's toolchain here? Which version? How to get it if not."""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from serverbench.environment import server_env
from serverbench.catalog import Manifest

VERSION_TIMEOUT_S = 20.0
# (version command, PATH, cwd) -> (version, problem); toolchains don't change mid-run
_version_cache: dict[tuple[str, str, str], tuple[str | None, str | None]] = {}


@dataclass
class Availability:
    id: str
    available: bool
    missing: list[str]
    version: str | None
    install_hint: str | None
    reason: str | None


def clear_cache() -> None:
    """Forget cached versions (after installing something)."""
    _version_cache.clear()


def is_root() -> bool:
    return os.geteuid() == 0


def install_hint(m: Manifest) -> str | None:
    """The commands that would provide this server's toolchain."""
    cmds: list[str] = []
    if m.install.apt:
        sudo = "" if is_root() else "sudo "
        cmds.append(f"{sudo}apt-get install -y {' '.join(m.install.apt)}")
    if m.install.npm:
        cmds.append(f"npm install --prefix .tools {' '.join(m.install.npm)}")
    if cmds:
        return " && ".join(cmds) + f"  (or: serverbench install {m.id})"
    return None


def _version(m: Manifest, env: dict[str, str]) -> tuple[str | None, str | None]:
    key = (m.version, env["PATH"], str(m.dir))
    if key in _version_cache:
        return _version_cache[key]
    try:
        p = subprocess.run(["/bin/sh", "-c", m.version], cwd=m.dir, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=VERSION_TIMEOUT_S)
        # some toolchains (java -version) print to stderr
        lines = [ln.strip() for ln in (p.stdout or p.stderr).splitlines() if ln.strip()]
        first = lines[0] if lines else None
        if p.returncode != 0:
            result = (None, f"version command `{m.version}` failed with exit code "
                            f"{p.returncode}: {first or 'no output'}")
        else:
            result = (first, None if first else f"version command `{m.version}` printed nothing")
    except subprocess.TimeoutExpired:
        result = (None, f"version command `{m.version}` timed out after {VERSION_TIMEOUT_S:.0f} s")
    except OSError as e:
        result = (None, f"version command `{m.version}` could not run: {e}")
    _version_cache[key] = result
    return result


def check(m: Manifest) -> Availability:
    """Available = every `requires` executable is on the servers' PATH (.tools/bin first)."""
    env = server_env(m)
    missing = [r for r in m.requires if shutil.which(r, path=env["PATH"]) is None]
    if missing:
        return Availability(m.id, False, missing, None, install_hint(m),
                            f"missing executables: {', '.join(missing)}")
    version, problem = _version(m, env)
    return Availability(m.id, True, [], version, None, problem)


def check_all(ms: list[Manifest]) -> list[Availability]:
    return [check(m) for m in ms]
