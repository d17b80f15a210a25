"""Rows a published benchmark compared that are not measured here (servers/_left_out.toml): they
cannot be built on this machine, or their own HTTP stack fails verify.

`serverbench doctor` lists them with the reason, so a missing row is explained, never faked.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ValidationError

from .. import paths

FILE_NAME = "_left_out.toml"


class LeftOut(BaseModel):
    id: str
    what: str
    seed: str
    reason: str


def load(root: Path | None = None) -> tuple[list[LeftOut], str | None]:
    """(rows, one-line problem or None); a missing file means none."""
    path = (paths.SERVERS if root is None else root) / FILE_NAME
    if not path.is_file():
        return [], None
    try:
        data = tomllib.loads(path.read_text())
        return [LeftOut.model_validate(r) for r in data.get("row", [])], None
    except (tomllib.TOMLDecodeError, ValidationError) as e:
        return [], f"{path}: {str(e).splitlines()[0]}; fix the file (fields: id, what, seed, reason)"
