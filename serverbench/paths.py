"""Where things live in the repository; every module takes its paths from here."""
from __future__ import annotations

import hashlib
import os
import re
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


def run_logs(run_id: int, db: Path | str) -> Path:
    """A run's server logs: results/logs/run-<id> for the default store, and for a run stored in another
    database (`--db`) a folder named by that store too: run ids count per store, so another store's run 3
    would otherwise write into (and replace logs of) the default store's run 3."""
    db = Path(db).resolve()
    if db == DB_PATH.resolve():
        return LOGS / f"run-{run_id}"
    # the name a reader recognises, and the path's digest for two stores of one name in different folders
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", db.stem)
    return LOGS / f"{name}-{hashlib.sha1(str(db).encode()).hexdigest()[:6]}" / f"run-{run_id}"


def loadgen_binary() -> Path:
    """The load generator binary; `SERVERBENCH_LOADGEN` overrides the built one."""
    override = os.environ.get("SERVERBENCH_LOADGEN")
    if override:
        return Path(override)
    return REPO / "loadgen" / "target" / "release" / "loadgen"
