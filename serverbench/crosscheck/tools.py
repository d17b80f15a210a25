"""Where a cross-check's load tool is and which version it is (the table of tools: rules/tools.py).

Installs are `make crosscheck-tools` (scripts/install-crosscheck-tools.sh) at the versions pinned
there; executables are looked up in .tools/bin first, then on PATH.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from .. import paths
from ..rules.tools import get


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
