"""Shared test helpers: fake server catalogs in tmp_path and harness paths kept out of the repo."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil
import pytest

from serverbench import paths

FIXTURES = Path(__file__).parent / "fixtures"
LIFECYCLE = FIXTURES / "lifecycle"
FAKE_SERVER = LIFECYCLE / "fake_server.py"


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} as TOML")


def write_manifest(root: Path, sid: str, **fields: object) -> Path:
    """Write servers/<sid>/server.toml with valid defaults, overridden by `fields`.

    A field set to None is left out; `env`/`install` dicts become tables.
    """
    d = root / sid
    d.mkdir(parents=True, exist_ok=True)
    base: dict[str, object] = {
        "name": sid, "language": "Python", "runtime": "python3", "model": "thread-per-connection",
        "origin": "serverbench", "run": fake_server_cmd(), "version": "python3 --version",
        "requires": [],
    }
    base.update(fields)
    lines, tables = [], []
    for k, v in base.items():
        if v is None:
            continue
        if isinstance(v, dict):
            tables.append(f"[{k}]\n" + "".join(f"{kk} = {toml_value(vv)}\n" for kk, vv in v.items()))
        else:
            lines.append(f"{k} = {toml_value(v)}\n")
    p = d / "server.toml"
    p.write_text("".join(lines) + "".join(tables))
    return p


def fake_server_cmd(*flags: str) -> str:
    """A `run` command that execs the fake server with this interpreter."""
    return " ".join(["exec", f"'{sys.executable}'", f"'{FAKE_SERVER}'", *flags])


@pytest.fixture
def servers_root(tmp_path: Path) -> Path:
    root = tmp_path / "servers"
    root.mkdir()
    return root


@pytest.fixture
def make_server(servers_root: Path) -> Callable[..., Path]:
    """make_server(id, **fields) -> folder; writes a manifest under a tmp servers/ root."""
    def make(sid: str, **fields: object) -> Path:
        return write_manifest(servers_root, sid, **fields).parent
    return make


@pytest.fixture
def sandbox_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point build stamps, logs, results and tools at tmp_path instead of the repo."""
    build = tmp_path / "build"
    results = tmp_path / "results"
    monkeypatch.setattr(paths, "BUILD", build)
    monkeypatch.setattr(paths, "CARGO_TARGET", build / "cargo-target")
    monkeypatch.setattr(paths, "STAMPS", build / "stamps")
    monkeypatch.setattr(paths, "RESULTS", results)
    monkeypatch.setattr(paths, "LOGS", results / "logs")
    monkeypatch.setattr(paths, "DB_PATH", results / "serverbench.db")
    monkeypatch.setattr(paths, "REPORTS", results / "reports")
    monkeypatch.setattr(paths, "TOOLS", tmp_path / "tools")
    monkeypatch.setattr(paths, "TOOLS_BIN", tmp_path / "tools" / "bin")
    return tmp_path


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_all_gone(pids: Iterable[int], timeout: float = 5.0) -> list[int]:
    """Wait for the pids to die; the ones still alive after `timeout`."""
    pids = list(pids)
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
