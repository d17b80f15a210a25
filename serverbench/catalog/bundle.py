"""`serverbench bundle OUT.tar.zst`: the tree that runs built rows on another machine of the same
architecture, without their build toolchains.

What goes in: the harness (serverbench/, pyproject.toml, workloads/, assets/, the docs), the loadgen
binary, and for each built row its folder (sources, so its build stamp still matches, and the outputs
it runs: bin/, out/, target/classes and target/lib, node_modules), the `_shared` folders it declares,
its build stamp (with the toolchain version recorded at build), and for cargo rows the one binary
`run` names under $CARGO_TARGET_DIR/release. What stays out: caches (cargo's deps and incremental
dirs, the Go build cache, ~/.m2, __pycache__), results, .venv of the harness, .git.
With a WheelTarget (the CLI's default) the harness's Python packages go in too, as wheels/ (wheels.py),
so the bench machine needs no package index; BUNDLE.md at the top says how to install and run there.
On the bench machine: `doctor` shows what each row needs to run there (`run_requires`).
"""
from __future__ import annotations

import io
import os
import re
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import zstandard

from . import build, wheels
from .. import paths
from .manifests import Manifest
from .wheels import Progress, WheelError, WheelTarget

HARNESS = ("pyproject.toml", "README.md", "SPEC.md", "Makefile", "serverbench", "workloads", "assets", "docs")
# never shipped from a row folder: caches and tool state, not what a run reads
CACHE_DIRS = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".gradle", ".zig-cache", "zig-cache",
                        "nimcache", ".git", "incremental", ".fingerprint"})
# a Maven row's target/: only what `java -cp target/classes:target/lib/*` reads
MAVEN_KEEP = frozenset({"classes", "lib"})
CARGO_BINARY = re.compile(r"CARGO_TARGET_DIR[}\"]*/release/([A-Za-z0-9_.-]+)")
LEVEL = 10
WHEELS = "wheels"  # the folder of wheels inside the bundle, for pip's --find-links
INSTRUCTIONS = "BUNDLE.md"
REPORT_BYTES = 100_000_000  # a progress line per this much written into the archive


class BundleError(Exception):
    """The bundle cannot be written (one line: what and the fix)."""


@dataclass
class BundleSummary:
    path: Path
    rows: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # row -> why
    files: int = 0
    bytes_in: int = 0
    wheels: int = 0
    target: WheelTarget | None = None


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


def instructions(rows: list[Manifest], tgt: WheelTarget | None, archive: str = "bench.tar.zst") -> str:
    """BUNDLE.md: how this bundle installs and runs on the bench machine."""
    needs = sorted({r for m in rows for r in m.run_requires})
    if tgt is not None:
        py = need = f"python{tgt.python}"
        where = (f"Its `{WHEELS}/` folder holds the harness's Python packages as wheels for {tgt.describe()}, "
                 "so no package index is needed there.")
        install = f".venv/bin/pip install --no-index --find-links {WHEELS} -e .".ljust(66) + f"# only {WHEELS}/"
    else:
        py, need = "python3", "Python ≥ 3.11 (python3)"
        where = "It holds no wheels: the harness's Python packages come from a package index there."
        install = ".venv/bin/pip install -e .".ljust(66) + "# from the package index"
    return "\n".join([
        "# serverbench bundle", "",
        f"Rows: {', '.join(m.id for m in rows)}. Built for this CPU architecture and a glibc at least as new as "
        "the build machine's. " + where, "",
        f"The bench machine needs {need}" + (f" and, for the rows, {', '.join(needs)}" if needs else "") + ".", "",
        "```sh",
        f"mkdir bench && tar --zstd -xf {archive} -C bench && cd bench".ljust(66) + "# or: zstd -d, then tar -xf",
        f"{py} -m venv .venv", install,
        ".venv/bin/serverbench doctor".ljust(66) + '# "runs here" per row',
        ".venv/bin/serverbench verify && .venv/bin/serverbench run -w cores",
        "```", ""])


def _archive(tmp: Path, members: list[tuple[Path, str]], extra: dict[str, bytes], summary: BundleSummary,
             progress: Progress) -> None:
    """Write the members (file, name in the archive) and the generated `extra` files to `tmp`."""
    total = sum(f.lstat().st_size for f, _ in members)
    progress(f"writing {len(members) + len(extra)} files ({total / 1e6:.1f} MB) with zstd level {LEVEL}")
    reported = 0
    with open(tmp, "wb") as raw, zstandard.ZstdCompressor(level=LEVEL).stream_writer(raw) as zw, \
            tarfile.open(fileobj=zw, mode="w|") as tar:
        for name, data in extra.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for f, arc in members:
            tar.add(f, arcname=arc, recursive=False)
            summary.files += 1
            summary.bytes_in += f.lstat().st_size
            if summary.bytes_in - reported >= REPORT_BYTES:
                reported = summary.bytes_in
                progress(f"  {summary.bytes_in / 1e6:.0f} of {total / 1e6:.0f} MB")
    summary.files += len(extra)


def write_bundle(out: Path, manifests: list[Manifest], wheel_target: WheelTarget | None = None,
                 progress: Progress | None = None) -> BundleSummary:
    """Write `out` (.tar.zst): the harness, the loadgen, every built one of `manifests` (unbuilt rows are
    left out with the reason) and, with `wheel_target`, the wheels of the harness's Python packages for
    it. Nothing is left at `out` when it fails; `progress` gets a line per long step."""
    say = progress or (lambda _line: None)
    if not out.name.endswith(".tar.zst"):
        raise BundleError(f"{out}: the bundle is a .tar.zst; fix: name it like bench.tar.zst")
    summary = BundleSummary(out, target=wheel_target)
    files = harness_files()
    built: list[Manifest] = []
    for m in manifests:
        if not build.is_built(m):
            summary.left_out[m.id] = f"not built; run `serverbench build {m.id}`"
            continue
        files += row_files(m)
        built.append(m)
    summary.rows = [m.id for m in built]
    if not built:
        raise BundleError("no built row to bundle; fix: `serverbench build` the rows first")
    members = [(f, f.relative_to(paths.REPO).as_posix()) for f in dict.fromkeys(files)]
    extra = {INSTRUCTIONS: instructions(built, wheel_target, out.name).encode()}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    try:
        with tempfile.TemporaryDirectory(prefix="serverbench-wheels-") as work:
            if wheel_target is not None:
                got = wheels.fetch(Path(work) / WHEELS, wheel_target, Path(work) / "sdists", say)
                members += [(w, f"{WHEELS}/{w.name}") for w in got]
                summary.wheels = len(got)
            _archive(tmp, members, extra, summary, say)
    except WheelError as e:
        tmp.unlink(missing_ok=True)
        raise BundleError(str(e)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(out)
    return summary


def extract(archive: Path, dest: Path) -> None:
    """Unpack a bundle into `dest` (where `tar --zstd` is missing)."""
    dest.mkdir(parents=True, exist_ok=True)
    with open(archive, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zr, \
            tarfile.open(fileobj=zr, mode="r|") as tar:
        tar.extractall(dest, filter="tar")


__all__ = ["BundleError", "BundleSummary", "WheelTarget", "write_bundle", "instructions", "extract", "row_files",
           "harness_files"]
