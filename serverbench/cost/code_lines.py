"""Source lines of a contestant, counted by pygount (code lines only, per language).

Counted: every file of the server folder and of the `_shared` folders it declares, except build
outputs and dependency caches (build.SKIP_DIRS, as in the folder hash), lock files, files pygount
finds generated ("do not edit" headers, go.sum, *.lock, ...), prose (Markdown, plain text) and
`server.toml` (the harness's manifest, which every row has). Blank and comment lines never count.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pygount import SourceAnalysis, SourceState
from pygount.analysis import DEFAULT_GENERATED_LINE_PATTERNS_TEXT, DEFAULT_GENERATED_NAME_PATTERNS_TEXT
from pygount.common import regexes_from

from ..catalog.build import SKIP_DIRS
from ..catalog.manifests import MANIFEST_FILE, Manifest

# Lock files pygount's name patterns do not all know; counted as generated, never as code.
LOCK_FILES = frozenset({
    "Cargo.lock", "go.sum", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
    "bun.lockb", "bun.lock", "deno.lock", "poetry.lock", "Pipfile.lock", "uv.lock", "requirements.txt",
    "composer.lock", "Gemfile.lock", "mix.lock", "rebar.lock", "shard.lock", "nimble.lock",
    "gradle.lockfile", "packages.lock.json",
})
# pip-compile writes requirements.txt from requirements.in (hashes of every transitive package):
# generated. A hand-written requirements.txt without a .in beside it is the manifest, counted.
PROSE = frozenset({"Markdown", "Text only", "reStructuredText", "markdown", "Text"})
# pygount's guesses for build manifests are lexer names (go.mod reads as Modula-2): name them.
LANGUAGE_BY_NAME = {"go.mod": "go.mod", "pom.xml": "Maven POM", "Cargo.toml": "Cargo.toml",
                    "package.json": "package.json"}
LANGUAGE_NAMES = {"Nimrod": "Nim"}  # pygments' older names
_GENERATED_LINES = regexes_from(DEFAULT_GENERATED_LINE_PATTERNS_TEXT)
_GENERATED_NAMES = regexes_from(DEFAULT_GENERATED_NAME_PATTERNS_TEXT)


@dataclass
class LineCount:
    """Code lines of one row: its own folder, its shared folders, by language."""

    own: int = 0
    shared: int = 0
    files: int = 0
    by_language: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # "path: why" for files not counted

    @property
    def total(self) -> int:
        return self.own + self.shared


def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        out += [Path(dirpath, n) for n in sorted(filenames) if not n.startswith(".")]
    return out


def _is_lock(p: Path) -> bool:
    if p.name == "requirements.txt":
        return (p.parent / "requirements.in").exists()
    return p.name in LOCK_FILES


def count_tree(root: Path, count: LineCount, shared: bool) -> None:
    """Add the code lines of every countable file under `root` to `count`."""
    for p in _files(root):
        rel = p.relative_to(root.parent).as_posix()
        if p.name == MANIFEST_FILE and p.parent == root:
            continue
        if _is_lock(p):
            count.skipped.append(f"{rel}: lock file")
            continue
        a = SourceAnalysis.from_file(str(p), root.name, generated_regexes=_GENERATED_LINES,
                                     generated_name_regexes=_GENERATED_NAMES)
        if a.state != SourceState.analyzed:
            count.skipped.append(f"{rel}: {a.state.name}")
            continue
        if a.language in PROSE:
            count.skipped.append(f"{rel}: prose ({a.language})")
            continue
        # "JavaScript+Genshi Text": pygments' guess of a template dialect; the language is the first part
        lang = LANGUAGE_BY_NAME.get(p.name) or a.language.split("+")[0]
        lang = LANGUAGE_NAMES.get(lang, lang)
        count.by_language[lang] = count.by_language.get(lang, 0) + a.code_count
        count.files += 1
        if shared:
            count.shared += a.code_count
        else:
            count.own += a.code_count


def count_lines(m: Manifest) -> LineCount:
    """Code lines of `m`'s folder and of the shared folders it declares."""
    count = LineCount()
    count_tree(m.dir, count, shared=False)
    for d in m.shared_dirs():
        count_tree(d, count, shared=True)
    count.by_language = dict(sorted(count.by_language.items(), key=lambda kv: -kv[1]))
    return count


__all__ = ["LineCount", "count_lines", "count_tree", "LOCK_FILES"]
