"""JSON exporter: the run, its aggregated groups (GroupFigures) and every stored cell."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ..results.aggregate import RunResults
from . import profile_section


def _cell(c: Any) -> dict[str, Any]:
    d = {k: v for k, v in asdict(c).items() if k not in ("loadgen", "metrics")}
    d["metrics"] = c.metrics.dump()
    lg = c.loadgen.dump() if c.loadgen is not None else None
    d["loadgen"] = lg
    # --cluster: each shard (host, pid, started_at, its loadgen JSON) beside the merged figures
    d["shards"] = lg.pop("shards", None) if lg else None
    return d


def render(run: Any, results: RunResults) -> bytes:
    doc = {
        "run": asdict(run),
        "groups": [g.figures.model_dump(mode="json") for g in results.groups],
        "warnings": [asdict(w) for g in results.groups for w in g.warnings],
        "tools": [{"workload": tc.workload, "point": tc.point, "finding": tc.finding,
                   "rows": [r.model_dump(mode="json") for r in tc.rows]} for tc in results.tools],
        "profiles": {s: p.dump() for s, p in results.profiles.items()},
        # the profile table across kinds of work (profile_section.py), one record per row and kind; [] without one
        "profile": profile_section.records(results),
        "cells": [_cell(c) for g in results.groups for c in g.ok + g.bad],
    }
    return (json.dumps(doc, indent=1, default=str) + "\n").encode("utf-8")


__all__ = ["render"]
