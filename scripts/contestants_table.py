#!/usr/bin/env python3
"""Print the README's contestant table from servers/*/server.toml (tests/test_readme.py keeps them equal).

usage: .venv/bin/python scripts/contestants_table.py
"""
from __future__ import annotations

from serverbench.catalog.manifests import load_catalog


def table() -> str:
    cat = load_catalog()
    lines = ["| id | language | model | framework (what a user would call it) | origin |",
             "|---|---|---|---|---|"]
    for m in sorted(cat.servers.values(), key=lambda m: (m.language.lower(), m.id)):
        bound = f", bounded: {m.max_connections}" if m.max_connections else ""
        lines.append(f"| {m.id} | {m.language} | {m.model}{bound} | {m.framework} | {m.origin} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
