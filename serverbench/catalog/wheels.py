"""The harness's Python packages as wheels, so that `serverbench bundle` can ship them to a bench machine
that has no package index: `pip install --no-index --find-links wheels -e .` there.

What is fetched: pyproject's [project].dependencies (not the test extras: a bench machine runs, it does
not test) and its [build-system].requires, because the editable install of the bundle's own tree builds
serverbench with them (setuptools, wheel) in pip's isolated build environment. serverbench itself is
not shipped as a wheel: paths.REPO is the folder above the package, so an installed copy in
site-packages would look for servers/ and workloads/ there; the editable install points at the tree.

Wheels are picked by `pip download --only-binary=:all:` for the target CPython and platforms, whatever
this interpreter is. A requirement that has no such wheel is fetched as an sdist and built here with
`pip wheel --no-deps`; the result is kept only when it is pure Python (any Python, any platform).
"""
from __future__ import annotations

import platform
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .. import paths

Progress = Callable[[str], None]

NOT_FOUND = re.compile(r"No matching distribution found for (\S+)")
# pip's retries print these when no index answers (DNS, refused, proxy, TLS, timeouts)
UNREACHABLE = re.compile(r"NewConnectionError|Failed to establish a new connection|ConnectTimeout|ReadTimeout"
                         r"|ProxyError|SSLError|Name or service not known|Temporary failure in name resolution"
                         r"|Network is unreachable|Connection refused|No route to host|connection broken by"
                         r"|: connection error:|problem confirming the ssl certificate")
PURE = re.compile(r"-py[0-9.]+(?:\.py[0-9.]+)*-none-any\.whl$")
PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
PYTHON = re.compile(r"3\.(\d+)")
OLDEST_GLIBC_MINOR = 5  # manylinux_2_5, the oldest manylinux tag (PEP 600)
REPORT_EVERY = 10  # one progress line per this many packages pip collects
MAX_SDIST_BUILDS = 20  # each round finds one sdist-only requirement; a bound against a loop


class WheelError(Exception):
    """The wheels cannot be gathered (one line: what, and the fix)."""


@dataclass(frozen=True)
class WheelTarget:
    """The interpreter and platforms of the bench machine the wheels are for."""
    python: str  # "3.12"
    platforms: tuple[str, ...]

    def describe(self) -> str:
        span = self.platforms[0] if len(self.platforms) == 1 else f"{self.platforms[0]} … {self.platforms[-1]}"
        return f"CPython {self.python} on {span}"


def _requires_python_minor() -> int:
    """The oldest Python 3 minor version pyproject's requires-python (">=3.N") admits."""
    spec = tomllib.loads((paths.REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    m = re.fullmatch(r">=\s*3\.(\d+)", spec.strip())
    return int(m.group(1)) if m else 0


def default_platforms() -> tuple[str, ...]:
    """The manylinux tags a machine with this one's glibc and architecture runs, newest first: the rows
    built here already need a glibc at least as new on the bench machine."""
    libc, version = platform.libc_ver()
    machine = platform.machine()
    m = re.match(r"2\.(\d+)", version)
    if sys.platform != "linux" or libc != "glibc" or m is None:
        raise WheelError(f"this machine is not Linux with glibc ({sys.platform}, {libc or 'no libc'} {version}), so "
                         "the bench machine's wheel platform cannot be assumed; fix: name it, e.g. "
                         "--platform manylinux2014_x86_64")
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(int(m.group(1)), OLDEST_GLIBC_MINOR - 1, -1)]
    # older wheels carry only the legacy names; pip widens manylinux2014 to 2010 and 1 on x86
    return tuple(tags + [f"manylinux2014_{machine}"])


def target(python: str | None, platforms: Sequence[str] | None) -> WheelTarget:
    """The target from `--python` (default: this interpreter's version) and `--platform` (default: this
    machine's manylinux tags); a version the harness does not support is refused with the fix."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    py = (python or here).strip()
    m = PYTHON.fullmatch(py)
    oldest = _requires_python_minor()
    if m is None:
        raise WheelError(f"--python {py}: name a CPython 3 version as MAJOR.MINOR; fix: e.g. --python {here}")
    if int(m.group(1)) < oldest:
        raise WheelError(f"--python {py}: the harness needs Python ≥ 3.{oldest}; fix: --python 3.{oldest} or newer")
    return WheelTarget(py, tuple(platforms) if platforms else default_platforms())


def requirements() -> list[str]:
    """What the bench machine installs: the harness's dependencies and its build backend's requirements."""
    meta = tomllib.loads((paths.REPO / "pyproject.toml").read_text())
    return list(dict.fromkeys(meta["project"]["dependencies"] + meta["build-system"]["requires"]))


def _pip(args: list[str], progress: Progress | None = None) -> tuple[int, str, str]:
    """Run `python -m pip ARGS`: its exit status, console output and debug log, with a progress line per
    REPORT_EVERY packages collected. The log is read because with PIP_RETRIES=0 pip says that an index
    is out of reach ("Could not fetch URL …: connection error") only at debug level."""
    lines: list[str] = []
    collected = 0
    with tempfile.TemporaryDirectory(prefix="serverbench-pip-") as tmp:
        log = Path(tmp) / "pip.log"
        cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--log", str(log), *args]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("Collecting "):
                    collected += 1
                    if progress is not None and collected % REPORT_EVERY == 0:
                        progress(f"  {collected} packages resolved …")
        debug = log.read_text(errors="replace") if log.is_file() else ""
    return proc.returncode, "".join(lines), debug


def _failure(output: str, log: str, requirement: str, tgt: WheelTarget) -> WheelError:
    """The one line for a pip run that failed: the index out of reach, or what pip said last."""
    if UNREACHABLE.search(output) or UNREACHABLE.search(log):
        return WheelError(f"pip could not reach the package index while fetching {requirement} for {tgt.describe()}; "
                          "fix: run `serverbench bundle` where PyPI (or the mirror in PIP_INDEX_URL) answers, or "
                          "pass --no-wheels and install the harness's packages on the bench machine from an index")
    said = [ln.strip() for ln in output.splitlines()]
    last = [ln for ln in said if ln.startswith("ERROR:")] or [ln for ln in said if ln] or ["no output"]
    return WheelError(f"pip failed while fetching {requirement} for {tgt.describe()} ({last[-1]}); fix: run the "
                      f"pip command by hand to see why, or choose another --python/--platform")


def _wheel_from_sdist(requirement: str, tgt: WheelTarget, dest: Path, work: Path, progress: Progress) -> Path:
    """Build `requirement`, which has no wheel for the target, from its sdist; only a pure-Python wheel runs
    on the bench machine whatever this interpreter is, so any other result is refused with the fix."""
    name = (PROJECT_NAME.match(requirement) or [requirement])[0]
    sdists = work / f"sdist-{name}"
    progress(f"{name}: no wheel for {tgt.describe()}; building one from its sdist here")
    rc, out, log = _pip(["download", "--no-binary=:all:", "--no-deps", "--dest", str(sdists), requirement])
    if rc != 0:
        if UNREACHABLE.search(out) or UNREACHABLE.search(log):
            raise _failure(out, log, requirement, tgt)
        raise WheelError(f"{requirement} has neither a wheel for {tgt.describe()} nor an sdist; fix: choose a --python "
                         f"(and --platform) that {name} publishes wheels for")
    built = work / f"built-{name}"
    rc, _, _ = _pip(["wheel", "--no-deps", "--wheel-dir", str(built), *map(str, sorted(sdists.iterdir()))])
    wheels = sorted(built.glob("*.whl")) if built.is_dir() else []
    if rc != 0 or len(wheels) != 1:
        raise WheelError(f"{name} has no wheel for {tgt.describe()} and its sdist did not build here; fix: build its "
                         f"wheel on a machine like the bench machine, or choose a --python that {name} has wheels for")
    if not PURE.search(wheels[0].name):
        raise WheelError(f"{name} has no wheel for {tgt.describe()} and is not pure Python ({wheels[0].name}); fix: "
                         f"choose a --python that {name} publishes wheels for, or build the wheel on the bench machine")
    return wheels[0].replace(dest / wheels[0].name)


def fetch(dest: Path, tgt: WheelTarget, work: Path, progress: Progress,
          reqs: Sequence[str] | None = None) -> list[Path]:
    """Download into `dest` the wheels of `reqs` (default: requirements()) and of all they depend on, for
    `tgt`; `work` holds sdists being built. Returns the wheels; raises WheelError with one line."""
    reqs = list(reqs) if reqs is not None else requirements()
    dest.mkdir(parents=True, exist_ok=True)
    platform_args = [a for p in tgt.platforms for a in ("--platform", p)]
    cmd = ["download", "--only-binary=:all:", "--implementation", "cp", "--python-version", tgt.python,
           *platform_args, "--dest", str(dest), "--find-links", str(dest), "--progress-bar", "off", *reqs]
    progress(f"fetching wheels for {tgt.describe()}: {len(reqs)} requirements and their dependencies (pip download)")
    built: set[str] = set()
    for _ in range(MAX_SDIST_BUILDS):
        rc, out, log = _pip(cmd, progress)
        if rc == 0:
            wheels = sorted(dest.glob("*.whl"))
            progress(f"  {len(wheels)} wheels, {sum(w.stat().st_size for w in wheels) / 1e6:.1f} MB")
            return wheels
        missing = NOT_FOUND.search(out)
        if missing is None or UNREACHABLE.search(out) or UNREACHABLE.search(log):
            raise _failure(out, log, missing.group(1) if missing else ", ".join(reqs), tgt)
        if missing.group(1) in built:  # its wheel was built, yet pip still finds nothing (e.g. Requires-Python)
            raise WheelError(f"{missing.group(1)}: the wheel built from its sdist does not suit {tgt.describe()}; "
                             f"fix: choose another --python, or install that package on the bench machine")
        built.add(missing.group(1))
        # the built wheel sits in dest, which the next round's --find-links offers to pip's resolver
        _wheel_from_sdist(missing.group(1), tgt, dest, work, progress)
    raise WheelError(f"more than {MAX_SDIST_BUILDS} requirements had no wheel for {tgt.describe()}; fix: choose a "
                     "--python that these packages publish wheels for")


__all__ = ["WheelError", "WheelTarget", "target", "default_platforms", "requirements", "fetch"]
