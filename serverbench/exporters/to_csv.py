"""CSV exporter: one row per group; the columns are GroupFigures' figures (flat), in their order."""
from __future__ import annotations

import csv
import io
from typing import Any

from ..results.aggregate import GroupFigures, RunResults

COLUMNS: list[str] = GroupFigures.flat_keys()


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, list):
        return " | ".join(str(x) for x in v)
    if isinstance(v, float):
        return round(v, 4)
    return v


def render(run: Any, results: RunResults) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for g in results.groups:
        w.writerow({k: _cell(v) for k, v in g.figures.model_dump().items()})
    return buf.getvalue().encode("utf-8")


__all__ = ["render", "COLUMNS"]
