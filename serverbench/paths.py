"""Where things live in the repository; every module takes its paths from here."""
from __future__ import annotations

import os
from pathlib import Path

REPO: Path = Path(__file__).resolve().parent.parent
SERVERS: Path = REPO / "servers"
WORKLOADS: Path = REPO / "workloads"
ASSETS: Path = REPO / "assets"
HELLO_FILE: Path = ASSETS / "hello.html"
# /compress's document (catalog/assets.py writes it on first use; not committed)
COMPRESS_FILE: Path = ASSETS / "compress.json"

BUILD: Path = REPO / "build"
CARGO_TARGET: Path = BUILD / "cargo-target"
STAMPS: Path = BUILD / "stamps"

RESULTS: Path = REPO / "results"
LOGS: Path = RESULTS / "logs"
DB_PATH: Path = RESULTS / "serverbench.db"
REPORTS: Path = RESULTS / "reports"

# npm-installed runtimes (deno, bun, ...) live here; TOOLS_BIN goes first on servers' PATH.
TOOLS: Path = REPO / ".tools"
TOOLS_BIN: Path = TOOLS / "bin"


def loadgen_binary() -> Path:
    """The load generator binary; `SERVERBENCH_LOADGEN` overrides the built one."""
    override = os.environ.get("SERVERBENCH_LOADGEN")
    if override:
        return Path(override)
    return REPO / "loadgen" / "target" / "release" / "loadgen"
