"""What must be shipped to run a contestant, in bytes, and the runtime it needs.

Read from the row's `run` command after a build: the paths it names (the executable, `-cp`/
`-classpath` entries with their `*` jars, `-pa` folders), with $VARIABLES expanded as the
harness sets them. When they are build outputs (under bin/, out/, target/ or the cargo target
dir) those are the artifact: a native ELF binary needs only the shared libraries it links
(listed from `ldd`, libc's own family left out); classes, jars or bytecode need the row's
runtime. Otherwise the row runs from source: the artifact is its folder and its shared folders
with the packages installed into them (node_modules, .venv), build outputs and caches excluded.
Libraries from Debian packages (the row's [install].apt) are part of the runtime, not counted.
"""
from __future__ import annotations

import glob
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.build import SKIP_DIRS
from ..catalog.manifests import Manifest
from ..catalog.environment import server_env

OUTPUT_DIRS = frozenset({"bin", "out", "target", "_build", "zig-out", "dist"})
# Packages installed into a from-source row's folder: shipped with it.
PACKAGE_DIRS = frozenset({"node_modules", ".venv"})
# libc and the loader: present wherever anything runs.
BASE_LIBS = ("linux-vdso", "libc.so", "libm.so", "ld-linux", "libpthread", "libdl.so", "librt.so",
             "libgcc_s", "libresolv")
CLASSPATH_FLAGS = ("-cp", "-classpath", "--class-path")


@dataclass
class Artifact:
    bytes: int
    kind: str
    paths: list[str] = field(default_factory=list)  # relative to the row's folder (or absolute)
    runtime: str = ""


def _size(p: Path) -> int:
    if p.is_file():
        return p.stat().st_size
    total = 0
    for dirpath, _, files in os.walk(p):
        for f in files:
            fp = os.path.join(dirpath, f)
            if not os.path.islink(fp):
                total += os.path.getsize(fp)
    return total


def _tokens(m: Manifest) -> list[str]:
    env = server_env(m, port=8080)
    try:
        words = shlex.split(m.run)
    except ValueError:
        words = m.run.split()
    out: list[str] = []
    for w in words:
        for k in sorted(env, key=len, reverse=True):  # $CARGO_TARGET_DIR and ${CARGO_TARGET_DIR}
            w = w.replace("${" + k + "}", env[k]).replace("$" + k, env[k])
        out.append(w)
    return out


def referenced_paths(m: Manifest) -> list[Path]:
    """Existing files/folders the run command names (classpath entries split, `*` expanded)."""
    toks = _tokens(m)
    found: list[Path] = []
    for i, t in enumerate(toks):
        parts = t.split(os.pathsep) if i > 0 and toks[i - 1] in CLASSPATH_FLAGS else [t]
        for part in parts:
            if not part or part.startswith("-") or "=" in part:
                continue
            p = Path(part) if os.path.isabs(part) else m.dir / part
            hits = [Path(h) for h in glob.glob(str(p))] if "*" in part else [p]
            found += [h for h in hits if h.exists() and h.resolve() != m.dir.resolve()]
    return list(dict.fromkeys(found))


def _is_output(p: Path, m: Manifest) -> bool:
    target = server_env(m).get("CARGO_TARGET_DIR")
    if target and str(p.resolve()).startswith(str(Path(target).resolve()) + os.sep):
        return True
    try:
        rel = p.resolve().relative_to(m.dir.resolve())
    except ValueError:
        return False
    return bool(rel.parts) and rel.parts[0] in OUTPUT_DIRS


def _is_elf(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def linked_libraries(binary: Path) -> list[str]:
    """Shared libraries a binary loads beyond libc's family (from ldd); [] = static or only libc."""
    try:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    libs = []
    for ln in out.splitlines():
        parts = ln.split()
        if parts and ("=>" in parts or parts[0].startswith("/")):
            libs.append(Path(parts[0]).name)
    return sorted({x for x in libs if not any(b in x for b in BASE_LIBS)})


def _shown(p: Path, m: Manifest) -> str:
    """Relative to the row's folder when near it (../_shared/x), else absolute (the cargo target)."""
    rel = os.path.relpath(p.resolve(), m.dir.resolve())
    return rel if not rel.startswith("../../") else str(p)


def _summary(shown: list[str]) -> list[str]:
    """Many files in one folder (a classpath's jars) as 'folder/ (N files)'."""
    by_dir: dict[str, list[str]] = {}
    for s in shown:
        by_dir.setdefault(os.path.dirname(s), []).append(s)
    out: list[str] = []
    for d, items in by_dir.items():
        out += [f"{d}/ ({len(items)} files)"] if len(items) > 3 else items
    return out


def _source_tree(root: Path) -> int:
    total = 0
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if d in PACKAGE_DIRS or (d not in SKIP_DIRS and not d.startswith("."))]
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files
                     if not os.path.islink(os.path.join(dirpath, f)))
    return total


def measure_artifact(m: Manifest) -> Artifact:
    """The bytes to ship to run a built `m`, and what runtime must be there."""
    outputs = [p for p in referenced_paths(m) if _is_output(p, m)]
    if outputs:
        shown = _summary([_shown(p, m) for p in outputs])
        size = sum(_size(p) for p in outputs)
        elf = [p for p in outputs if p.is_file() and _is_elf(p)]
        if elf and len(outputs) == 1:
            libs = linked_libraries(elf[0])
            return Artifact(size, "native binary", shown, ", ".join(libs) if libs else "none beyond libc")
        jvm = any(t in CLASSPATH_FLAGS or t == "-jar" for t in _tokens(m))
        kind = "JVM classes + jars" if jvm else "bytecode"
        return Artifact(size, kind, shown, m.runtime)
    roots = [m.dir, *m.shared_dirs()]
    size = sum(_source_tree(r) for r in roots)
    shown = ["."] + [_shown(r, m) for r in roots[1:]]
    return Artifact(size, "source + installed packages", shown, m.runtime)


__all__ = ["Artifact", "measure_artifact", "referenced_paths", "linked_libraries"]
