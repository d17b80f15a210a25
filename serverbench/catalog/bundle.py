"""`serverbench bundle OUT.tar.zst`: the tree that runs built rows on another machine of the same
architecture, without their build toolchains.

What goes in: the harness (serverbench/, pyproject.toml, workloads/, assets/, the docs), the loadgen
binary, and for each built row its folder (sources, so its build stamp still matches, and the outputs
it runs: bin/, out/, target/classes and target/lib, node_modules), the `_shared` folders it declares,
its build stamp (with the toolchain version recorded at build), and for cargo rows the one binary
`run` names under $CARGO_TARGET_DIR/release. What stays out: caches (cargo's deps and incremental
dirs, the Go build cache, ~/.m2, __pycache__), results, .venv of the harness, .git.
On the bench machine: `doctor` shows what each row needs to run there (`run_requires`).
"""
from __future__ import annotations

import os
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import zstandard

from . import build
from .. import paths
from .manifests import Manifest

HARNESS = ("pyproject.toml", "README.md", "SPEC.md", "Makefile", "serverbench", "workloads", "assets", "docs")
# never shipped from a row folder: caches and tool state, not what a run reads
CACHE_DIRS = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".gradle", ".zig-cache", "zig-cache",
                        "nimcache", ".git", "incremental", ".fingerprint"})
# a Maven row's target/: only what `java -cp target/classes:target/lib/*` reads
MAVEN_KEEP = frozenset({"classes", "lib"})
CARGO_BINARY = re.compile(r"CARGO_TARGET_DIR[}\"]*/release/([A-Za-z0-9_.-]+)")
LEVEL = 10


class BundleError(Exception):
    """The bundle cannot be written (one line: what and the fix)."""


@dataclass
class BundleSummary:
    path: Path
    rows: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # row -> why
    files: int = 0
    bytes_in: int = 0


def _walk(root: Path, row_folder: bool) -> Iterator[Path]:
    """The files under `root`, caches skipped; in a row folder a target/ keeps only classes/ and lib/."""
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        keep = [d for d in dirnames if d not in CACHE_DIRS]
        if row_folder and here.name == "target" and here.parent == root:
            keep = [d for d in keep if d in MAVEN_KEEP]
            filenames = []
        elif not row_folder:
            keep = [d for d in keep if d not in build.SKIP_DIRS]
        dirnames[:] = sorted(keep)
        for name in sorted(filenames):
            yield here / name


def row_files(m: Manifest) -> list[Path]:
    """Every file the built row `m` needs to run elsewhere (absolute paths under paths.REPO)."""
    out = list(_walk(m.dir, row_folder=True))
    for shared in m.shared_dirs():
        out += _walk(shared, row_folder=False)
    stamp = paths.STAMPS / m.id
    if stamp.is_file():
        out.append(stamp)
    for name in CARGO_BINARY.findall(m.run):
        exe = paths.CARGO_TARGET / "release" / name
        if not exe.is_file():
            raise BundleError(f"{m.id}: {exe} is missing although the row is built; fix: "
                              f"`serverbench build --force {m.id}`")
        out.append(exe)
    return out


def harness_files() -> list[Path]:
    out: list[Path] = []
    for name in HARNESS:
        p = paths.REPO / name
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out += _walk(p, row_folder=False)
    out += sorted(p for p in paths.SERVERS.glob("*.toml") if p.is_file())  # e.g. _left_out.toml
    lg = paths.REPO / "loadgen" / "target" / "release" / "loadgen"
    if not lg.is_file():
        raise BundleError(f"the loadgen binary {lg} is missing; fix: `make loadgen`")
    return out + [lg]


def write_bundle(out: Path, manifests: list[Manifest]) -> BundleSummary:
    """Write `out` (.tar.zst): the harness, the loadgen, and every built one of `manifests`; unbuilt
    rows are left out with the reason."""
    if not out.name.endswith(".tar.zst"):
        raise BundleError(f"{out}: the bundle is a .tar.zst; fix: name it like bench.tar.zst")
    summary = BundleSummary(out)
    files = harness_files()
    for m in manifests:
        if not build.is_built(m):
            summary.left_out[m.id] = f"not built; run `serverbench build {m.id}`"
            continue
        files += row_files(m)
        summary.rows.append(m.id)
    if not summary.rows:
        raise BundleError("no built row to bundle; fix: `serverbench build` the rows first")
    files = list(dict.fromkeys(files))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with open(tmp, "wb") as raw, zstandard.ZstdCompressor(level=LEVEL).stream_writer(raw) as zw, \
            tarfile.open(fileobj=zw, mode="w|") as tar:
        for f in files:
            arc = f.relative_to(paths.REPO).as_posix()
            tar.add(f, arcname=arc, recursive=False)
            summary.files += 1
            summary.bytes_in += f.lstat().st_size
    tmp.replace(out)
    return summary


def extract(archive: Path, dest: Path) -> None:
    """Unpack a bundle into `dest` (where `tar --zstd` is missing)."""
    dest.mkdir(parents=True, exist_ok=True)
    with open(archive, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zr, \
            tarfile.open(fileobj=zr, mode="r|") as tar:
        tar.extractall(dest, filter="tar")


__all__ = ["BundleError", "BundleSummary", "write_bundle", "extract", "row_files", "harness_files"]
