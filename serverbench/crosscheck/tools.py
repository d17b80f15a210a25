"""The load tools a cross-check can drive: executable, version, how the project installs them.

Installs are `make crosscheck-tools` (scripts/install-crosscheck-tools.sh) at the versions pinned
there; executables are looked up in .tools/bin first, then on PATH.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import paths

INSTALL = "make crosscheck-tools"


@dataclass(frozen=True)
class Tool:
    name: str
    exe: str
    version_args: tuple[str, ...]
    source: str  # where the project's script gets it: apt | cargo | go | pip | built here
    package: str  # what it installs from that source, pinned where the source allows
    multi_core: bool  # False: one thread, whatever the CPUs (ab, locust)
    home: str  # what the tool is known for

    def install_hint(self) -> str:
        how = {"apt": f"apt-get install -y {self.package}", "cargo": f"cargo install --locked {self.package}",
               "go": f"go install {self.package} (Go module proxy)", "pip": f"pip install {self.package}",
               "built": "make loadgen"}[self.source]
        return how if self.source == "built" else f"{INSTALL} (runs: {how})"


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("loadgen", "loadgen", ("--version",), "built", "loadgen/", True, "serverbench's own"),
    Tool("wrk", "wrk", ("-v",), "apt", "wrk", True, "closed loop, epoll, per-thread event loops"),
    Tool("ab", "ab", ("-V",), "apt", "apache2-utils", False, "ApacheBench, one thread"),
    Tool("oha", "oha", ("--version",), "cargo", "oha@1.16.0", True, "Rust, tokio"),
    Tool("hey", "hey", (), "go", "github.com/rakyll/hey@v0.1.5", True, "Go, goroutine per worker"),
    Tool("k6", "k6", ("version",), "go", "go.k6.io/k6@v1.8.1", True, "Go with a JavaScript VM per user"),
    Tool("drill", "drill", ("--version",), "cargo", "drill@0.9.1", True, "Rust, YAML plans"),
    Tool("locust", "locust", ("--version",), "pip", "locust==2.47.0 (own venv .tools/locust-venv)", False,
         "Python, gevent, one process"),
)}
DEFAULT_ORDER = ("loadgen", "wrk", "ab", "oha", "hey", "k6", "drill", "locust")


def get(name: str) -> Tool:
    """The tool called `name`; ValueError naming the known ones."""
    if name not in TOOLS:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(DEFAULT_ORDER)}")
    return TOOLS[name]


def find(name: str) -> Path | None:
    """The tool's executable: loadgen's build, else .tools/bin, else PATH; None when absent."""
    if name == "loadgen":
        p = paths.loadgen_binary()
        return p if p.is_file() else None
    exe = get(name).exe
    local = paths.TOOLS_BIN / exe
    if local.is_file():
        return local
    found = shutil.which(exe)
    return Path(found) if found else None


_versions: dict[str, str | None] = {}


def first_version_line(text: str) -> str | None:
    """The line of a tool's version output that names a version (ab prints a banner)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = next((ln for ln in lines if any(ch.isdigit() for ch in ln)), lines[0] if lines else None)
    if line is None:
        return None
    # keep the name and version: drop banners, copyrights and install paths around them
    line = re.sub(r"^This is |\s+<\$Revision.*$|\s+Copyright.*$|\s+from /.*$", "", line)
    return line.strip()


def version(name: str) -> str | None:
    """The tool's version line (cached); hey prints none, so its pinned version is shown."""
    if name in _versions:
        return _versions[name]
    tool, exe = get(name), find(name)
    out: str | None = None
    if exe is not None and not tool.version_args:
        out = tool.package.rpartition("@")[2] + " (pinned; hey prints no version)"
    elif exe is not None:
        try:
            p = subprocess.run([str(exe), *tool.version_args], capture_output=True, text=True,
                               errors="replace", timeout=20)
            out = first_version_line(p.stdout + "\n" + p.stderr)
        except (OSError, subprocess.TimeoutExpired):
            out = None
    _versions[name] = out
    return out
