"""Direct third-party dependencies of a contestant, read from its language's manifest.

Direct only (what the row's author chose): Cargo.toml [dependencies], go.mod requirements not
marked `// indirect`, pom.xml <dependencies> outside test/provided scope, package.json
"dependencies", requirements.in (else a hand-written requirements.txt), pyproject [project]
dependencies. Local code (Cargo path dependencies, go.mod `replace … => ../path`) is the row's own
shared code, not a third party. Rows without such a manifest get their libraries from Debian
packages: `system_packages` lists the row's `[install].apt` beside the count, unjudged.
"""
from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.manifests import Manifest

# Checked in this order; the first one present is the row's manifest.
MANIFESTS = ("Cargo.toml", "go.mod", "pom.xml", "package.json", "requirements.in", "requirements.txt",
             "pyproject.toml")


class ManifestError(Exception):
    """A dependency manifest that cannot be read (one line naming the file)."""


@dataclass
class Dependencies:
    manifest: str | None  # file name, None when the row has none
    names: list[str] = field(default_factory=list)
    system_packages: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.names)


def cargo(text: str) -> list[str]:
    data = tomllib.loads(text)
    deps = data.get("dependencies") or {}
    return [name for name, spec in deps.items() if not (isinstance(spec, dict) and "path" in spec)]


_REQUIRE_BLOCK = re.compile(r"^require\s*\((.*?)^\)", re.M | re.S)
_REQUIRE_LINE = re.compile(r"^require\s+([^\s(]+)\s+(\S+)(.*)$", re.M)
_REPLACE_LOCAL = re.compile(r"^\s*(?:replace\s+)?(\S+)(?:\s+\S+)?\s*=>\s*(\.{1,2}/\S*|/\S*)", re.M)


def gomod(text: str) -> list[str]:
    lines = [m.group(1) + " " + m.group(2) + m.group(3) for m in _REQUIRE_LINE.finditer(text)]
    for block in _REQUIRE_BLOCK.findall(text):
        lines += [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("//")]
    local = {m.group(1) for m in _REPLACE_LOCAL.finditer(text)}
    out = []
    for ln in lines:
        module = ln.split()[0]
        if "// indirect" in ln or module in local:
            continue
        out.append(module)
    return out


def pom(text: str) -> list[str]:
    root = ET.fromstring(text)
    ns = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
    deps = root.find(f"{ns}dependencies")  # the project's own, not plugins' nor dependencyManagement
    out = []
    for d in (deps if deps is not None else []):
        scope = (d.findtext(f"{ns}scope") or "compile").strip()
        if scope in ("test", "provided", "system"):
            continue
        out.append(f"{(d.findtext(f'{ns}groupId') or '').strip()}:{(d.findtext(f'{ns}artifactId') or '').strip()}")
    return out


def package_json(text: str) -> list[str]:
    return sorted((json.loads(text).get("dependencies") or {}).keys())


def requirements(text: str) -> list[str]:
    out = []
    for ln in text.splitlines():
        ln = ln.split("#", 1)[0].strip().rstrip("\\").strip()
        if not ln or ln.startswith("-"):
            continue
        out.append(re.split(r"[\s\[<>=!~;@]", ln, maxsplit=1)[0])
    return out


def pyproject(text: str) -> list[str]:
    return requirements("\n".join(tomllib.loads(text).get("project", {}).get("dependencies") or []))


PARSERS = {"Cargo.toml": cargo, "go.mod": gomod, "pom.xml": pom, "package.json": package_json,
           "requirements.in": requirements, "requirements.txt": requirements, "pyproject.toml": pyproject}


def direct_dependencies(m: Manifest) -> Dependencies:
    """The row's direct third-party dependencies; ManifestError when its manifest is unreadable."""
    for name in MANIFESTS:
        p = m.dir / name
        if p.is_file():
            try:
                names = PARSERS[name](p.read_text(encoding="utf-8"))
            except (OSError, ValueError, ET.ParseError, tomllib.TOMLDecodeError) as e:
                raise ManifestError(f"{_shown(p)}: cannot read its dependencies ({e}); fix the file") from None
            return Dependencies(name, names, list(m.install.apt))
    return Dependencies(None, [], list(m.install.apt))


def _shown(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


__all__ = ["Dependencies", "ManifestError", "direct_dependencies", "MANIFESTS", "cargo", "gomod", "pom",
           "package_json", "requirements", "pyproject"]
