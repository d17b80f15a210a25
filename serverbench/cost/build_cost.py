"""Build time of a contestant: cold (empty caches) and warm (no-op), wall seconds.

Cold never touches the caches other rows use (build/cargo-target, ~/.m2, Go's caches) nor the
row's folder: the row and its shared folders are copied (sources only) into a temporary tree that
keeps their relative layout, and every cache the toolchains know is pointed into that tree
(CARGO_HOME, CARGO_TARGET_DIR, GOCACHE, GOMODCACHE, maven.repo.local, XDG_CACHE_HOME, ...). Where
the tool has a download step of its own (`cargo fetch`, `go mod download`,
`mvn dependency:go-offline`) it runs first and is timed apart; elsewhere downloads are inside the
cold figure (`includes_download`). The tree is deleted afterwards.

Warm is the row's build command run again in its own folder right after a build
(`build.build(force=True)`): what a developer's rebuild with nothing changed costs. Commands that
clean first (`rm -rf out && javac ...`) rebuild everything here, and the figure says so.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..catalog import build
from .. import paths
from ..catalog.manifests import Manifest
from ..catalog.environment import server_env

COLD_TIMEOUT_S = 30 * 60
# (file that shows the toolchain, its download command): run before the cold build, timed apart
DOWNLOAD_STEPS = (
    ("Cargo.toml", "cargo fetch --locked"),
    ("go.mod", "go mod download"),
    ("pom.xml", "mvn -B -q dependency:go-offline"),
)


@dataclass
class ColdBuild:
    seconds: float | None  # the build command (after the download step, when there is one)
    download_s: float | None  # the download step; None when the tool has none
    includes_download: bool  # downloads happened inside `seconds`
    error: str | None = None


@dataclass
class WarmBuild:
    seconds: float | None
    error: str | None = None


def cold_env(m: Manifest, tree: Path) -> dict[str, str]:
    """server_env with every toolchain cache inside `tree` (empty at first)."""
    env = server_env(m)
    c = tree / "caches"
    env.update({
        "CARGO_HOME": str(c / "cargo-home"), "CARGO_TARGET_DIR": str(c / "cargo-target"),
        "GOCACHE": str(c / "go-build"), "GOMODCACHE": str(c / "go-mod"), "GOPATH": str(c / "gopath"),
        "GOFLAGS": "-modcacherw",  # so the module cache can be deleted
        "MAVEN_OPTS": f"{env.get('MAVEN_OPTS', '')} -Dmaven.repo.local={c / 'm2'}".strip(),
        "XDG_CACHE_HOME": str(c / "xdg"),  # nim, pip, go's defaults
        "CRYSTAL_CACHE_DIR": str(c / "crystal"), "DENO_DIR": str(c / "deno"),
        "PIP_CACHE_DIR": str(c / "pip"), "npm_config_cache": str(c / "npm"),
        "BUN_INSTALL_CACHE_DIR": str(c / "bun"),
    })
    return env


def copy_sources(m: Manifest, tree: Path) -> Path:
    """Copy the row and its shared folders (no build outputs) under `tree`; the row's copy."""
    ignore = shutil.ignore_patterns(*build.SKIP_DIRS)
    servers = m.dir.parent
    for d in (m.dir, *m.shared_dirs()):
        try:
            rel = d.relative_to(servers)
        except ValueError:  # a shared folder outside servers/: keep it beside the row
            rel = Path("_outside") / d.name
        shutil.copytree(d, tree / "servers" / rel, symlinks=True, ignore=ignore)
    return tree / "servers" / m.dir.name


def _timed(cmd: str, cwd: Path, env: dict[str, str], log: Path, timeout: float) -> tuple[float, int | None]:
    with open(log, "ab") as f:
        f.write(f"\n$ cd {cwd} && {cmd}\n".encode())
        f.flush()
        t0 = time.monotonic()
        try:
            rc: int | None = subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                            stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                                            start_new_session=True).returncode
        except subprocess.TimeoutExpired:
            rc = None
        return time.monotonic() - t0, rc


def cold_build(m: Manifest, *, work: Path | None = None, timeout: float = COLD_TIMEOUT_S) -> ColdBuild:
    """Build `m` from a copy of its sources with empty caches; its folder is left untouched."""
    if not m.build.strip():
        return ColdBuild(None, None, False, None)
    work = work or paths.BUILD / "profile"
    work.mkdir(parents=True, exist_ok=True)
    tree = work / f"cold-{m.id}"
    shutil.rmtree(tree, ignore_errors=True)
    log = paths.LOGS / f"profile-cold-{m.id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    try:
        row = copy_sources(m, tree)
        env = cold_env(m, tree)
        download_s = None
        for marker, cmd in DOWNLOAD_STEPS:
            if (row / marker).is_file():
                secs, rc = _timed(cmd, row, env, log, timeout)
                if rc != 0:
                    return ColdBuild(None, None, True, f"cold build of '{m.id}': `{cmd}` "
                                     f"{'timed out' if rc is None else f'exited {rc}'}; see {log}")
                download_s = secs
                break
        secs, rc = _timed(m.build, row, env, log, timeout)
        if rc != 0:
            return ColdBuild(None, download_s, download_s is None,
                             f"cold build of '{m.id}' {'timed out' if rc is None else f'exited {rc}'}; see {log}")
        return ColdBuild(secs, download_s, download_s is None)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def warm_build(m: Manifest) -> WarmBuild:
    """The build command again in the row's folder, after making sure it is built."""
    if not m.build.strip():
        return WarmBuild(None)
    first = build.build([m], progress=False)[0]
    if first.status not in ("built", "cached"):
        return WarmBuild(None, first.error or f"build of '{m.id}': {first.status}")
    again = build.build([m], force=True, progress=False)[0]
    if again.status != "built":
        return WarmBuild(None, again.error or f"warm build of '{m.id}': {again.status}")
    return WarmBuild(again.seconds)


__all__ = ["ColdBuild", "WarmBuild", "cold_build", "warm_build", "cold_env", "copy_sources", "DOWNLOAD_STEPS"]
