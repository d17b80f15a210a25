"""Is a contestant's toolchain here? Which version? How to get it if not."""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from serverbench import paths
from serverbench.catalog.environment import server_env
from serverbench.catalog.manifests import Manifest

# What a step needs: "build" = `requires` on PATH and the [install] apt packages (compilers, headers);
# "run" = `run_requires` only (a built native binary needs nothing), so built rows run on a machine
# without their build toolchains (`serverbench bundle`).
Step = Literal["build", "run"]

VERSION_TIMEOUT_S = 20.0
# (version command, PATH, cwd) -> (version, problem); toolchains don't change mid-run
_version_cache: dict[tuple[str, str, str], tuple[str | None, str | None]] = {}
_dpkg_cache: dict[str, bool] = {}  # Debian package -> installed


@dataclass
class Availability:
    id: str
    available: bool
    missing: list[str]
    version: str | None
    install_hint: str | None
    reason: str | None


def clear_cache() -> None:
    """Forget cached versions and package states (after installing something)."""
    _version_cache.clear()
    _dpkg_cache.clear()


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


def apt_installed(pkg: str) -> bool:
    """Is Debian package `pkg` installed? (True where there is no dpkg: nothing to check against.)"""
    if pkg not in _dpkg_cache:
        if shutil.which("dpkg-query") is None:
            return True
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=VERSION_TIMEOUT_S)
        _dpkg_cache[pkg] = out.returncode == 0 and "install ok installed" in out.stdout
    return _dpkg_cache[pkg]


def built_version(m: Manifest) -> str | None:
    """The version line recorded when the row was last built (the build stamp's second line)."""
    try:
        lines = (paths.STAMPS / m.id).read_text().splitlines()
    except OSError:
        return None
    return lines[1].strip() or None if len(lines) > 1 else None


def check(m: Manifest, step: Step = "build") -> Availability:
    """Build: every `requires` executable is on the servers' PATH (.tools/bin first) and every Debian
    package of `[install] apt` is installed (headers and modules have no executable to find).
    Run: every `run_requires` executable is there; the version is the one recorded at build time
    (the toolchain that made the binary), else the version command's."""
    env = server_env(m)
    needs = m.requires if step == "build" else m.run_requires
    missing = [r for r in needs if shutil.which(r, path=env["PATH"]) is None]
    if step == "build":
        missing += [f"apt:{p}" for p in m.install.apt if not apt_installed(p)]
    if missing:
        return Availability(m.id, False, missing, None, install_hint(m),
                            f"missing{' at run time' if step == 'run' else ''}: {', '.join(missing)}")
    recorded = built_version(m) if step == "run" else None
    if recorded:
        return Availability(m.id, True, [], recorded, None, None)
    version, problem = _version(m, env)
    return Availability(m.id, True, [], version, None, problem)


def tls_text(m: Manifest) -> str:
    """A row's TLS (SPEC.md, "TLS"), as `list` and `doctor` show it: the library that serves it, why its stack
    serves none here (`tls_out`: kept out of the TLS workloads), or that it declares neither (kept out too)."""
    c = m.choices
    if c is not None and c.tls_library:
        return c.tls_library
    if c is not None and c.tls_out:
        return f"out: {c.tls_out}"
    return "not declared (out of the TLS workloads)"


def http2_text(m: Manifest) -> str:
    """A row's HTTP/2 (SPEC.md, "HTTP/2"), as `list` and `doctor` show it: the server that speaks it and the
    stream limit it advertises, why its stack has none here (`http2_out`: out of the HTTP/2 workloads), or
    that it declares neither (out too)."""
    c = m.choices
    if c is not None and c.http2_library:
        return f"{c.http2_library}; streams {c.http2_max_streams}"
    if c is not None and c.http2_out:
        return f"out: {c.http2_out}"
    return "not declared (out of the HTTP/2 workloads)"


def db_text(m: Manifest) -> str:
    """A row's database (SPEC.md, "Database endpoints"), as `list` and `doctor` show it: its driver and pool,
    why its stack serves none here (`db_out`: kept out of the database workloads), or that it declares neither."""
    c = m.choices
    if c is not None and c.db_driver:
        return f"{c.db_driver}; {c.db_pool}"
    if c is not None and c.db_out:
        return f"out: {c.db_out}"
    return "not declared (out of the database workloads)"


def compress_text(m: Manifest) -> str:
    """A row's /compress (SPEC.md, "CPU work"): its library and where the work runs, why its stack has none
    here (`compress_out`), or that it declares neither (out of the compress workloads)."""
    c = m.choices
    if c is not None and c.compression:
        return f"{c.compression}; {c.cpu_work}"
    if c is not None and c.compress_out:
        return f"out: {c.compress_out}"
    return "not declared (out of the compress workloads)"


def check_all(ms: list[Manifest], step: Step = "build") -> list[Availability]:
    return [check(m, step) for m in ms]


# The harness's own PostgreSQL (database/): Debian keeps the server binaries off PATH, under
# /usr/lib/postgresql/<major>/bin; SERVERBENCH_PG_BIN names another folder.
POSTGRES_HINT = "apt-get install -y postgresql postgresql-contrib (or: make system)"


def postgres_bindir() -> Path | None:
    """The folder holding `initdb` and `postgres` (the newest Debian major first), or None."""
    override = os.environ.get("SERVERBENCH_PG_BIN")
    found = [Path(override)] if override else []
    on_path = shutil.which("initdb")
    found += [Path(on_path).resolve().parent] if on_path else []  # a symlink to Debian's folder
    found += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True,
                    key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return next((d for d in found if (d / "initdb").is_file() and (d / "postgres").is_file()), None)


def postgres_check() -> tuple[bool, str]:
    """(present, detail) for doctor: the server binaries' folder, or the fix."""
    bindir = postgres_bindir()
    if bindir is None:
        return False, f"initdb/postgres not found; fix: {POSTGRES_HINT}"
    return True, str(bindir)
